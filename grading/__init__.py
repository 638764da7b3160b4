"""The graded bank of the nbgrader course: hidden tests, course variants and written questions (instructor-only).

``tools/nbgrader_course.py`` reads one module per graded chapter, ``grading/chNN.py``, and writes the course's
source notebooks from ``notebooks/`` with it. Nothing here is installed with ``mha_lib`` (the package students
import) or copied into the reader edition ``chapters/`` or nbgrader's release:

- **Hidden tests.** Every exercise of the chapter is graded by one or more locked test cells whose hidden part
  (between nbgrader's ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``, stripped from the release) is data,
  ``GRADED = {...}``: what to read from the answers and how to judge it. Autograde never runs the student's notebook:
  ``tools/autograde.py`` runs the chapter's set-up cells and the student's answer cells in a sandboxed ``python -I``,
  which hands back plain data (a predicted value; a function's results on hidden cases drawn by the grader), and the
  grade is computed in the grader's own process: a predicted value against the course's numbers, a function's
  results against the reference (the instructor's solution, or PyTorch) on the same inputs.
  The chapter's own checker cells stay in the course as practice, ungraded.
- **Parts.** An answer with parts (a tuple of predictions, a function whose cases fall into groups) gets one test
  cell per part, each with its own points, so a half-right answer gets half the points.
- **Variants.** ``make assignments SEED=...`` gives each exercise that has a :class:`Variant` other numbers: its
  question, its solution in ``course/source`` and its hidden test change together, and the public checker cell is
  replaced by a note (it knows only the public numbers). Function exercises get other random inputs, and with a
  :class:`FunctionVariant` another name, signature or unit. The variants' solutions come from the instructor pack.
  Per student: :func:`student_seed`.
- **Written questions.** Each chapter has at least one :class:`Explain`: a question (markdown) and a manually graded
  answer cell (nbgrader ``solution`` + ``grade``), with its model answer and rubric (from the instructor pack,
  :mod:`grading.pack`, never from this repository) for the teaching assistants written to
  ``course/rubrics/chNN.md`` and into the answer cell of ``course/source`` (replaced by nbgrader's stub on release).

- **Set-up cells not run when grading.** ``NOT_RUN_WHEN_GRADING``: pieces of the chapter's code cells (timings,
  benchmarks) that no answer depends on; the grader leaves the cells that contain one out of a submission's run.
  A piece that no cell contains stops the course build; the right submission's full marks in ``make test-course``
  show that nothing an answer needs was left out.

Adding a chapter's grading: see docs/maintaining.md, "A new exercise".
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import importlib
import math
import random
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
    one language). ``solution``, the answer cell's code (a template whose value is the expected answer), is not
    public: it comes from the instructor pack (:mod:`grading.pack`), which :func:`chapter` applies.
    """

    params: Callable[[random.Random], dict[str, Any]]
    replace: list[tuple[str, ...]]
    solution: str | None = None  # from the instructor pack (grading/pack.py)


@dataclass
class FunctionVariant:
    """A graded variant of a function exercise: another name, signature or unit, so that the chapter's public
    solution does not answer it. ``params(rng)`` draws its numbers; ``replace`` as for :class:`Variant` (the
    question, and the answer cell's ``def`` line and docstring); ``cases``: per part label, the code of the hidden
    cases for the new signature (a ``str.format`` template; a part not named keeps its cases). ``solution``, the
    code between the answer cell's solution markers (a template, indented as in the cell), comes from the instructor
    pack; renamed ``reference``, it is the reference the hidden tests compare with."""

    params: Callable[[random.Random], dict[str, Any]]
    replace: list[tuple[str, ...]]
    cases: dict[str, str] = field(default_factory=dict)
    solution: str | None = None  # from the instructor pack (grading/pack.py)


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
    plain equality within float tolerance (``same``) is not the test. ``library``: the library functions
    (``"mha_lib.grouped:repeat_kv_heads"``) that would answer the exercise: an alias or wrapper of one scores 0."""

    parts: list[Part]
    reference: str | None = None
    compare: str | None = None
    library: list[str] = field(default_factory=list)
    variant: FunctionVariant | None = None


@dataclass
class Explain:
    """A manually graded written answer after exercise ``after``: the question (public), and its model answer and
    rubric, which come from the instructor pack (:mod:`grading.pack`), never from this repository."""

    after: int
    points: int
    question: dict[str, str]
    key: str = "explain1"
    rubric: dict[str, str] = field(default_factory=dict)
    model: dict[str, str] = field(default_factory=dict)


def chapter(prefix: str):
    """The grading module of a chapter, ``grading/ch04.py`` for ``ch04``, with the instructor pack's private parts
    filled in (:func:`grading.pack.current`), or None when it has none."""
    try:
        module = importlib.import_module(f"grading.{prefix}")
    except ModuleNotFoundError as error:
        if error.name != f"grading.{prefix}":
            raise
        return None
    from grading import pack
    pack.apply(module, prefix, pack.current())
    return module


def student_seed(secret: bytes, prefix: str, student: str) -> str:
    """The seed of one student's numbers in one chapter: HMAC-SHA256 of the course's secret over the chapter and the
    student id. Without the secret it cannot be computed; one student's (or one chapter's) seed says nothing of
    another's, as HMAC is a pseudo-random function of its message."""
    if type(secret) is not bytes or len(secret) < 16:
        raise ValueError(f"student_seed: secret must be at least 16 bytes, got {type(secret).__name__} "
                         f"of length {len(secret) if isinstance(secret, (bytes, str)) else '?'}")
    for argument, value in (("prefix", prefix), ("student", student)):
        if type(value) is not str or not value or "\0" in value:
            raise ValueError(f"student_seed: {argument} must be a non-empty string without NUL, got {value!r}")
    message = "\0".join(["mha-notebooks/student-seed/1", prefix, student]).encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def course_rng(seed: str | None, *names: str) -> random.Random:
    """A generator for one exercise of one course: the same seed and names give the same numbers."""
    digest = hashlib.sha256("/".join([seed or "public", *names]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def torch_seed(seed: str | None, *names: str) -> int:
    return course_rng(seed, *names, "torch").randrange(2**31)


# ---- the hidden tests ------------------------------------------------------------------------------------------

# A hidden test is data, ``GRADED = {...}`` (a Python literal): what to read from the student's answers (a value's
# name, or a function's name and the code that draws its hidden cases) and how to judge it (the expected value, a
# check, a reference and a comparison). Autograde reads it from the course's source notebook, runs the answers in a
# sandbox and judges them in its own process (tools/autograde.py); nothing of it runs in the student's notebook.
# The code in it (``cases``, ``reference``, ``compare``, ``check``) runs in the grader with these names, all real:
# ``torch``, ``math``, ``type_``, ``tuple_``, ``list_``, ``int_``, ``float_``, ``bool_``, ``str_``, ``set_``,
# ``tensor_``, ``to_list``, ``plain``, ``same``, ``values``, ``numbers``, ``clone`` (tools/autograde.py, _names).
# ``plain`` values: tuples of ints, floats, bools and strings; a tensor as ("tensor", its shape, its values); a set
# as ("set", its items sorted).


def hidden_cell(title: str, spec: dict) -> str:
    """A test cell's source: a visible comment, then the hidden test's data (and, for ``nbgrader validate``, the
    same judgement in place)."""
    test = "\n".join([
        '# Graded outside the notebook by tools/autograde.py (docs/teaching.md, "How grading works").',
        *([f"# want = {spec['want']}"] if spec.get("want") else []),  # for the lecturer who reads the source
        f"GRADED = {spec!r}",
        "from tools.autograde import judge_here",
        "judge_here(GRADED, globals())",
        "del GRADED, judge_here"])
    return f"# {title}\n### BEGIN HIDDEN TESTS\n{test}\n### END HIDDEN TESTS"


def value_test(name: str, expected: Any, index: int | None = None, check: str | None = None) -> dict:
    """Hidden test of a predicted value ``name``: all of it, or element ``index`` of a tuple."""
    spec = {"kind": "value", "name": name, "index": index, "length": None, "want": None, "check": check}
    if index is not None:
        spec["length"] = len(expected)
        expected = expected[index]
    if not check:
        spec["want"] = literal(canonical(expected))
    return spec


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


def function_test(name: str, part: Part, reference: str, seed: int, compare: str | None,
                  library: list[str] | None = None) -> dict:
    """Hidden test of a function ``name`` on one part's cases: the grader draws the cases (``g``, seeded) and computes
    the reference's results; the student's function runs on them in the sandbox; ``compare`` (code that sets ``ok``
    from ``args``, ``result`` and ``want``) judges each. ``library``: the functions (``module:name``) that would answer
    the exercise; a function that is, wraps or calls one of them gets no points."""
    return {"kind": "function", "name": name, "label": part.label, "seed": seed, "cases": part.cases,
            "reference": reference, "compare": part.compare or compare or "ok = same(result, want)",
            "library": list(library or [])}


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
