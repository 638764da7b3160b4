"""The graded bank of the nbgrader course: hidden tests, course variants and written questions (instructor-only).

``tools/nbgrader_course.py`` reads one module per graded chapter, ``grading/chNN.py``, and writes the course's
source notebooks from ``notebooks/`` with it. Nothing here is installed with ``mha_lib`` (the package students
import) or copied into the reader edition ``chapters/`` or nbgrader's release:

- **Hidden tests.** Every exercise of the chapter is graded by one or more locked test cells whose code sits between
  nbgrader's ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``; nbgrader strips it from the release and puts
  it back when it autogrades. The code imports what it needs by module path inside the cell, never calls a name an
  answer cell could rebind (``check_...``), compares plain Python values (``Tensor.tolist`` after checking that
  torch's methods are still torch's), and computes expected results there: a predicted value from the course's
  numbers, a function's results from the reference on fresh random inputs (the instructor's solution, or PyTorch).
  The chapter's own checker cells stay in the course as practice, ungraded.
- **Parts.** An answer with parts (a tuple of predictions, a function whose cases fall into groups) gets one test
  cell per part, each with its own points, so a half-right answer gets half the points.
- **Variants.** ``make assignments SEED=...`` gives each exercise that has a :class:`Variant` other numbers: its
  question, its solution in ``course/source`` and its hidden test change together, and the public checker cell is
  replaced by a note (it knows only the public numbers). Function exercises get other random inputs.
- **Written questions.** Each chapter has at least one :class:`Explain`: a question (markdown) and a manually graded
  answer cell (nbgrader ``solution`` + ``grade``), with its rubric for the teaching assistants written to
  ``course/rubrics/chNN.md`` and into the answer cell of ``course/source`` (replaced by nbgrader's stub on release).

Adding a chapter's grading: see docs/maintaining.md, "A new exercise".
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import math
import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

LANGUAGES = ("en", "zh_CN")


@dataclass
class Variant:
    """Other numbers for a predicted value: ``params(rng)`` draws them, the rest is written from them.

    ``replace`` pairs a piece of the public question (markdown before the answer cell, or the answer cell's comment)
    with its template, ``str.format``-ed with the parameters; a piece that is not found stops the course build, so an
    edited chapter cannot silently keep its public numbers (a third item, ``"en"`` or ``"zh_CN"``, limits a pair to
    one language). ``solution`` is the answer cell's code (a template), and
    ``expected(params)`` the value it must give; both are checked against each other when the course is made.
    """

    params: Callable[[random.Random], dict[str, Any]]
    replace: list[tuple[str, ...]]
    solution: str
    expected: Callable[[dict[str, Any]], Any]


@dataclass
class Value:
    """A predicted value, ``answer = ...``. With ``parts``, each element of the tuple is graded apart.

    ``check``: hidden-test code that judges ``got`` (the answer as plain Python: tuples, ints, floats) itself, by a
    property, for answers with more than one right value; it must ``assert``. Without it, ``got`` must equal the
    expected value (the instructor's solution evaluated, or the variant's).
    """

    parts: list[str] | None = None
    points: list[int] | None = None
    check: str | None = None
    variant: Variant | None = None


@dataclass
class Part:
    """One group of cases of a function exercise: ``cases`` is code that sets ``cases``, a list of argument tuples,
    from the generator ``g`` (seeded per course and per part) and ``torch``."""

    label: str
    cases: str
    points: int = 1
    compare: str | None = None


@dataclass
class Function:
    """A function the student writes. ``reference``: code that defines ``reference(*args)``; by default the
    instructor's solution, renamed. ``compare``: code that sets ``ok`` from ``got`` and ``want`` (plain values) where
    plain equality within float tolerance (``same``) is not the test."""

    parts: list[Part]
    reference: str | None = None
    compare: str | None = None


@dataclass
class Explain:
    """A manually graded written answer after exercise ``after``: the question, a model answer and the rubric."""

    after: int
    points: int
    question: dict[str, str]
    rubric: dict[str, str]
    model: dict[str, str] = field(default_factory=dict)
    key: str = "explain1"


def chapter(prefix: str):
    """The grading module of a chapter, ``grading/ch04.py`` for ``ch04``, or None when it has none."""
    try:
        return importlib.import_module(f"grading.{prefix}")
    except ModuleNotFoundError as error:
        if error.name != f"grading.{prefix}":
            raise
        return None


def course_rng(seed: str | None, *names: str) -> random.Random:
    """A generator for one exercise of one course: the same seed and names give the same numbers."""
    digest = hashlib.sha256("/".join([seed or "public", *names]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def torch_seed(seed: str | None, *names: str) -> int:
    return course_rng(seed, *names, "torch").randrange(2**31)


# ---- the hidden tests ------------------------------------------------------------------------------------------

# The first lines of every hidden test, inside its function: the real types and built-ins from literals (an answer
# cell can rebind the names `tuple`, `len`, `type`, ..., or `AssertionError`, but not what `()` is), a check that
# the torch methods the test reads values with are still torch's own, and plain-value comparison helpers.
PRELUDE = '''\
import builtins as _b
import math
import torch
from IPython import get_ipython
from IPython.display import clear_output
tuple_, list_, int_, float_, bool_ = ().__class__, [].__class__, (0).__class__, (0.0).__class__, (0 == 0).__class__
str_, set_ = "".__class__, {0}.__class__
type_, function_, tensor_ = int_.__class__, (lambda: 0).__class__, torch.Tensor
real = _b.__dict__
for name in ("len", "range", "zip", "getattr", "sorted", "abs", "isinstance", "min", "max", "sum", "float", "int"):
    assert type_(real[name]) is not function_, "builtins." + name + " was replaced in this notebook"
# The real built-ins as local names, whatever the notebook binds to these names (the reference below uses them too)
len, range, zip, getattr, sorted = real["len"], real["range"], real["zip"], real["getattr"], real["sorted"]
abs, isinstance, min, max = real["abs"], real["isinstance"], real["min"], real["max"]
sum, float, int = real["sum"], real["float"], real["int"]
for name in ("tolist", "clone", "detach", "size", "__eq__", "__float__", "double", "float"):
    assert type_(getattr(tensor_, name)) is not function_, (
        "torch.Tensor." + name + " was replaced by Python code in this notebook: not graded automatically")
for name in ("allclose", "equal", "isclose", "softmax", "exp", "matmul"):
    assert type_(torch.__dict__[name]) is not function_, "torch." + name + " was replaced in this notebook"
# Taken once, now that they are checked: a student's function that this test calls later could replace them then
to_list, detached, size_of, cloned = tensor_.tolist, tensor_.detach, tensor_.size, tensor_.clone
HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: set on every class made at run time (a class statement, type(...))
shell = get_ipython()
if shell is not None:
    shell.custom_exceptions = ()  # an answer cell's set_custom_exc() must not swallow this test's AssertionError

def plain(x):
    """x as plain Python: tuples of ints, floats, bools and strings; a tensor as ("tensor", its shape, its values)."""
    kind = type_(x)
    if kind is bool_ or kind is int_ or kind is float_ or kind is str_:
        return x
    if kind is set_:  # ("set", its items sorted): a set of letters such as {"A", "D"}
        return ("set", tuple_(sorted(plain(item) for item in x)))
    if tuple_ in kind.__mro__ or kind is list_:
        items, i, n = [], 0, (tuple_.__len__(x) if tuple_ in kind.__mro__ else list_.__len__(x))
        while i < n:
            items.append(plain(tuple_.__getitem__(x, i) if tuple_ in kind.__mro__ else list_.__getitem__(x, i)))
            i += 1
        return tuple_(items)
    if kind is tensor_:
        values = to_list(detached(x))
        return ("tensor", tuple_(size_of(x)), plain(values) if type_(values) is list_ else values)
    # A type written in C, which no answer cell can make or change (read through type's own slot, which a metaclass
    # cannot fake): numpy's scalars and arrays as plain Python, and a frozenset as a set.
    if not type_.__dict__["__flags__"].__get__(kind) & HEAP_TYPE:
        if kind.__module__ == "numpy":  # np.int64(3), np.float32(0.5), np.str_("a"), np.array([2, 3])
            return plain(kind.tolist(x))
        if kind.__module__ == "builtins" and kind.__name__ == "frozenset":
            return ("set", tuple_(sorted(plain(item) for item in x)))
    assert False, ("an answer of type " + kind.__name__ + " cannot be graded: use numbers, strings, tuples, lists, "
                   "sets, tensors")

def same(a, b, rel=1e-5, tiny=1e-6):
    """True when two plain values agree: same structure, ints equal, floats within the tolerance."""
    ka, kb = type_(a), type_(b)
    if ka is tuple_ or kb is tuple_:
        if ka is not tuple_ or kb is not tuple_ or tuple_.__len__(a) != tuple_.__len__(b):
            return False
        i = 0
        while i < tuple_.__len__(a):
            if not same(a[i], b[i], rel, tiny):
                return False
            i += 1
        return True
    if not (ka is int_ or ka is float_ or ka is bool_) or not (kb is int_ or kb is float_ or kb is bool_):
        return ka is kb and a == b  # e.g. the word "tensor" that marks a tensor's values
    if a == b or (a != a and b != b):  # equal, or both NaN
        return True
    if a - a != 0 or b - b != 0:  # an infinity or a NaN that is not equal to the other
        return False
    difference = a - b if a > b else b - a
    size = b if b > 0 else -b
    return difference <= tiny + rel * size

def values(v):
    """The numbers of an answer: a tensor's values, anything else as it is."""
    return v[2] if type_(v) is tuple_ and len(v) == 3 and v[0] == "tensor" else v

def numbers(v):
    """A plain answer with every tensor in it replaced by its values, as the chapters' checkers take a predicted
    value: torch.tensor(3) counts as 3, torch.tensor([16, 2, 1]) as (16, 2, 1)."""
    v = values(v)
    return tuple_(numbers(item) for item in v) if type_(v) is tuple_ else v

def clone(args):
    return tuple_(cloned(a) if type_(a) is tensor_ else a for a in args)
'''


def _indent(code: str, spaces: int = 4) -> str:
    return textwrap.indent(code, " " * spaces)


def hidden_cell(title: str, body: str) -> str:
    """A test cell's source: a visible comment, then the hidden test as one function, run once and deleted."""
    test = "def _hidden_test():\n" + _indent(PRELUDE + body) + "\n\n_hidden_test()\ndel _hidden_test"
    return f"# {title}\n### BEGIN HIDDEN TESTS\n{test}\n### END HIDDEN TESTS"


def value_test(name: str, expected: Any, index: int | None = None, check: str | None = None) -> str:
    """Hidden test of a predicted value ``name``: all of it, or element ``index`` of a tuple."""
    lines = [f"got = numbers(plain({name}))"]
    if index is not None:
        lines += [f"assert type_(got) is tuple_ and tuple_.__len__(got) == {len(expected)}, "
                  f"'{name} should be a tuple of {len(expected)}'",
                  f"got = got[{index}]"]
        expected = expected[index]
    lines.append("clear_output()")
    if check:
        lines.append(check)
    else:
        lines.append(f"want = {literal(canonical(expected))}")
        lines.append(f"assert same(got, want), '{name} is not right'")
    return "\n".join(lines)


def letters_check(name: str, right: str, choices: str) -> str:
    """``Value.check`` code for an answer made of letters, "ad" for (a) and (d): a string, or a list, tuple or set of
    strings, in any order and case, with spaces, commas, brackets or quotes between the letters (as the chapters'
    checkers take it); ``right``: the right letters, ``choices``: all of them. The answer is right when its set of
    letters is ``right``'s."""
    if not set(right) <= set(choices) or choices != choices.lower():
        raise ValueError(f"letters_check: right={right!r} must be letters among choices={choices!r} (lower case)")
    return "\n".join([
        'items = got[1] if type_(got) is tuple_ and len(got) == 2 and got[0] == "set" else got',
        "items = items if type_(items) is tuple_ else (items,)",
        "chosen = []",
        "for item in items:",
        f"    assert type_(item) is str_, '{name} should be a string of letters'",
        "    for letter in str_.lower(item):",
        f"        assert letter in {choices!r} or letter in \" \\t,;+&()[]'\\\"\", "
        f"'{name}: the letters are {', '.join(choices)}'",
        f"        if letter in {choices!r} and letter not in chosen:",
        "            chosen.append(letter)",
        f"assert \"\".join(sorted(chosen)) == {''.join(sorted(right))!r}, '{name} is not right'",
    ])


def function_test(name: str, part: Part, reference: str, seed: int, compare: str | None) -> str:
    """Hidden test of a function ``name`` on one part's cases: the reference's results first, as plain values, then
    the student's. The student's function runs inside the test, after its checks: whatever it replaces then (torch's
    functions, a module the reference imports, ``Tensor.tolist``) can no longer change what it is compared with."""
    return "\n".join([
        f"g = torch.Generator().manual_seed({seed})",
        part.cases,
        reference,
        "wants = [plain(reference(*clone(args))) for args in cases]",
        f"student = {name}",
        "got = []",
        "for args in cases:",
        "    try:",
        "        got.append(plain(student(*clone(args))))",
        "    except NotImplementedError:",
        f"        assert False, '{name} is not written yet'",
        "clear_output()  # what the student's code printed or displayed is not the test's result",
        "for args, result, want in zip(cases, got, wants):",
        _indent(part.compare or compare or "ok = same(result, want)"),
        f"    assert ok, '{name} gives a wrong result on a hidden case ({part.label})'",
    ])


def literal(value: Any) -> str:
    """Python code for a plain value; infinities and NaN as ``float("inf")``, which ``repr`` does not give."""
    if isinstance(value, tuple):
        return "(" + "".join(literal(v) + ", " for v in value) + ")"
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return f'float("{value}")'
    return repr(value)


def canonical(value: Any) -> Any:
    """A value as the hidden tests see it (tuples for lists and torch.Size, numbers as they are)."""
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    if hasattr(value, "tolist"):
        return canonical(value.tolist())
    return value


def reference_from_solution(source: str, name: str) -> str:
    """The instructor's solution function renamed ``reference`` (without nbgrader's markers)."""
    tree = ast.parse(source)
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    if not functions:
        raise ValueError(f"no function {name} in the solution")
    segment = ast.get_source_segment(source, functions[0])
    return segment.replace(f"def {name}(", "def reference(", 1)
