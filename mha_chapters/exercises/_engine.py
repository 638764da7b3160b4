"""The grading engine of the exercises: run a reader's answer against mha_lib and say what went wrong, kindly.

Every checker prints ONE line and returns None, so a wrong answer never ends in a traceback:

    ✅ Correct: <a short confirmation>
    ❌ Not yet: <a hint that names the likely mistake>

Exceptions raised by your own code are caught and explained in the same way.

Under an autograder the same line is also a test result: when the environment variable ``NBGRADER_EXECUTION`` is
set (nbgrader sets it to ``'autograde'`` or ``'validate'`` while it executes a notebook; see nbgrader's FAQ,
"Can I modify the notebook behavior during autograding or validation?"), a checker prints its line as always and
then, for a wrong answer, raises ``AssertionError(<the same line>)``, which nbgrader counts as a failed test cell.
A right answer never raises. One function does both, ``report(line)``; every checker prints through it, so the
checker cells of the instructor notebooks are nbgrader's graded test cells without any change to their code.

Coding exercises pass your function, e.g. ``check_transpose_qkv(my_transpose_qkv)``: it is called on
seeded inputs of several shapes (copies, so your function cannot spoil them) and its result is
compared with the reference in mha_lib. When it differs, the checker tries the typical wrong
solutions of that exercise (view without permute, ``repeat`` for ``repeat_interleave``, a missing
``1/sqrt(d)``, ...) on the same input; if one of them gives exactly your result, the hint names it.
"Predict" exercises pass a value: the reader writes ``answer = ((9, 2, 2), 7)`` and runs
``check_folded_sample(answer)``; known wrong answers get their own hint. (The expected answers are in
the chapter's module: reading it is allowed, but predicting first teaches more.)

Building blocks for new exercises (each prints and returns None as above):

- ``check_answer(answer, expected, *, name, hints={wrong_answer: hint})``: a predicted value or shape.
  Tuples, lists, ``torch.Size``, small tensors and numpy arrays compare by value; a float that is a whole number
  counts as an int (96.0 for 96, up to the rounding of float arithmetic), other floats with a relative tolerance.
- ``check_function(fn, reference, cases, *, name, arg_names, hints={wrong_fn: hint}, mutation_hint=None)``:
  a reader's function against a reference on each case (a tuple of arguments); results may be tensors,
  numbers or tuples of them. A hint is chosen when ``wrong_fn`` gives exactly the reader's result (and
  the reference does not); ``mutation_hint`` is given when the function changes its tensor arguments.
- ``check_formula(fn, reference, cases, *, name, hints={wrong_fn: hint})``: a reader's formula
  (FLOPs, parameters, bytes of score memory, ...) as a function; each case is a dict of its arguments,
  e.g. ``{"num_hiddens": 512, "bias": True}``, passed by position in that order.

Hints may use ``{shape}`` (the shape of the reader's result) and ``{expected_shape}``. Every name, hint and
success line is written as ``_("English text")`` (``from ..i18n import _``), inside the checker, so that it prints in
the reader's language; other values go in through named placeholders, ``_("got {shape}").format(shape=...)``, never
an f-string (``python -m tools.translate update-lib`` then adds the message to the Chinese catalogue).
For a new exercise, add a small wrapper to the chapter's module (``mha_chapters/exercises/chNN.py``) rather than
calling a building block in the notebook: the checker cell stays in the reader edition, so an expected value written
there would give the answer away. In the notebook, the reader's cell is tagged ``solution`` (``python -m
tools.editions`` turns it into a stub in the reader edition, ``chapters/``) and the next code cell calls the checker.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..i18n import N_, _

__all__ = ["CORRECT", "GRADING_VARIABLE", "NOT_YET", "check_answer", "check_formula",
           "check_function", "contains_ellipsis", "int_cases", "report"]

# English message ids; print them as _(CORRECT), _(NOT_YET), in the language of mha_chapters.set_language.
CORRECT = N_("✅ Correct: ")
NOT_YET = N_("❌ Not yet: ")
GRADING_VARIABLE = "NBGRADER_EXECUTION"  # set by nbgrader to 'autograde' or 'validate' while it runs a notebook


def report(line: str) -> None:
    """Print a checker's one line; under an autograder (``NBGRADER_EXECUTION`` set) a wrong answer also raises.

    Raises:
        AssertionError: with the same line, when the line is not a "✅ Correct" one (in the language that was set)
            and ``NBGRADER_EXECUTION`` is set.
    """
    print(line)
    if os.environ.get(GRADING_VARIABLE) and not line.startswith(_(CORRECT)):
        raise AssertionError(line)


def check_answer(answer: Any, expected: Any, *, name: str, hints: Mapping[Any, str] | None = None,
                 success: str = "") -> None:
    """Compare a predicted value or shape with the expected one; print a confirmation or a hint."""
    report(_answer_message(answer, expected, name=name, hints=hints, success=success))


def check_function(fn: Any, reference: Callable, cases: Sequence[tuple], *, name: str,
                   arg_names: Sequence[str], hints: Mapping[Callable, str] | None = None,
                   success: str = "", mutation_hint: str | None = None) -> None:
    """Run ``fn`` and ``reference`` on every case (a tuple of arguments); print a confirmation or a hint.

    With ``mutation_hint``, a function that changes its tensor arguments in place gets that hint.
    """
    report(_function_message(fn, reference, cases, name=name, arg_names=arg_names, hints=hints, success=success,
                             mutation_hint=mutation_hint))


def check_formula(fn: Any, reference: Callable[..., Any], cases: Sequence[Mapping[str, Any]], *, name: str,
                  hints: Mapping[Callable, str] | None = None, success: str = "") -> None:
    """Check a formula written as a function, e.g. ``fn(num_hiddens, bias)``; each case is a dict of its arguments.

    The arguments are passed by position, in the order of the dict, so the reader may name them freely.
    """
    def call(f: Callable) -> Callable:
        return lambda case: f(*case.values())

    wrapped = {call(wrong): hint for wrong, hint in (hints or {}).items()}
    if not callable(fn):
        report(_not_callable(fn, name))
        return
    report(_function_message(call(fn), call(reference), [(dict(case),) for case in cases], name=name,
                             arg_names=["arguments"], hints=wrapped, success=success, keywords=True))




def int_cases(specs: Sequence[tuple[int, int, int, int]]) -> list[tuple]:
    """Inputs ``torch.arange(b*n*hd).reshape(b, n, hd)`` (every number different) with ``num_heads``."""
    return [(torch.arange(b * n * hd).reshape(b, n, hd), h) for b, n, hd, h in specs]


def _answer_message(answer: Any, expected: Any, *, name: str, hints: Mapping[Any, str] | None,
                    success: str) -> str:
    if contains_ellipsis(answer):
        return _(NOT_YET) + _("replace each ... in your answer with your prediction of {name}, then run this cell "
                              "again.").format(name=name)
    given = _plain(answer)
    if _same(given, expected):
        return _(CORRECT) + (success or _("{name} is {value}.").format(name=name, value=_show(expected)))
    for wrong, hint in (hints or {}).items():
        if _same(given, _plain(wrong)):
            return _(NOT_YET) + hint
    if _form(given) != _form(expected):
        return _(NOT_YET) + _("write {name} in the form {form}, with a number in place of each ...; your answer "
                              "{answer} has another form.").format(name=name, form=_form(expected), answer=_show(given))
    broken = _not_whole(given, expected)
    if broken is not None:
        return _(NOT_YET) + _("{value} is not a whole number, but the answer here is made of whole numbers ({name}): "
                              "look for a division that does not come out even.").format(value=_show(broken), name=name)
    if _reordered(given, expected):
        return _(NOT_YET) + _("{answer} has the right numbers in another order: read again in which order the "
                              "question asks for {name}.").format(answer=_show(given), name=name)
    return _(NOT_YET) + _("{answer} is not {name}. Check your reasoning step by step, then try again.").format(
        answer=_show(given), name=name)


def _not_whole(given: Any, expected: Any) -> float | None:
    """The first number of the answer that is not whole where the expected answer has an int, or None."""
    if isinstance(given, tuple) and isinstance(expected, tuple):
        found = (_not_whole(g, e) for g, e in zip(given, expected, strict=True))
        return next((number for number in found if number is not None), None)
    if isinstance(expected, int) and isinstance(given, float) and math.isfinite(given) and not given.is_integer():
        return given
    return None


def _reordered(given: Any, expected: Any) -> bool:
    """True when the answer holds the expected numbers, each as often, in another order: (8, 1, 64) for (64, 8, 1)."""
    if not (isinstance(given, tuple) and isinstance(expected, tuple)) or len(given) != len(expected) \
            or len(given) < 2:
        return False
    flat = [number for number in given + expected if isinstance(number, (int, float)) and not isinstance(number, bool)]
    if len(flat) != 2 * len(given):
        return False
    return sorted(given) == sorted(expected) and not _same(given, expected)


def _function_message(fn: Any, reference: Callable, cases: Sequence[tuple], *, name: str, arg_names: Sequence[str],
                      hints: Mapping[Callable, str] | None, success: str, mutation_hint: str | None = None,
                      keywords: bool = False) -> str:
    if not callable(fn):
        return _not_callable(fn, name)
    for args in cases:
        where = _describe_case(arg_names, args, keywords)
        expected = reference(*_copy(args))
        given_args = _copy(args)
        try:
            got = fn(*given_args)
        except NotImplementedError:
            return _(NOT_YET) + _("{name} still raises NotImplementedError. Write its body in the cell above "
                                  "(delete the raise line), run that cell, then run this one again.").format(name=name)
        except Exception as error:  # noqa: BLE001 - any error in the reader's code becomes a hint
            return _(NOT_YET) + _explain_error(error, name, where, arg_names if not keywords else list(args[0]))
        if mutation_hint and not all(_same(a, b) for a, b in zip(given_args, args, strict=True)):
            return _(NOT_YET) + mutation_hint
        if _same(got, expected):
            continue
        for wrong, hint in (hints or {}).items():
            try:
                candidate = wrong(*_copy(args))
            except Exception:  # noqa: BLE001 - a wrong variant that cannot run on this case cannot match
                continue
            if not _same(candidate, expected) and _same(got, candidate) and _agrees_everywhere(fn, wrong, cases):
                return _(NOT_YET) + hint.format(shape=_shape(got), expected_shape=_shape(expected))
        return _(NOT_YET) + _difference(got, expected, name, where)
    return _(CORRECT) + (success or _("{name} agrees with the reference on {count} inputs.").format(
        name=name, count=len(cases)))


def _agrees_everywhere(fn: Callable, wrong: Callable, cases: Sequence[tuple]) -> bool:
    """True when the reader's function and a typical wrong one give the same result on EVERY case.

    Two mistakes can coincide on one small case (at sizes (1, 2, 3, 4) two FLOP formulas give the same number),
    so a hint is named only when its mistake explains all of the reader's results.
    """
    def outcome(f: Callable, args: tuple) -> tuple[bool, Any]:
        try:
            return True, f(*_copy(args))
        except Exception:  # noqa: BLE001 - failing on a case is an outcome too (e.g. -1e9 in float16)
            return False, None

    for args in cases:
        (ran_fn, got), (ran_wrong, candidate) = outcome(fn, args), outcome(wrong, args)
        if ran_fn != ran_wrong or (ran_fn and not _same(got, candidate)):
            return False
    return True


def _not_callable(fn: Any, name: str) -> str:
    if fn is ... or fn is None:
        return _(NOT_YET) + _("pass your function {name} itself (no brackets), e.g. check_...({name}).").format(
            name=name)
    return _(NOT_YET) + _("pass a function (e.g. {name}, without brackets), got {kind}.").format(
        name=name, kind=type(fn).__name__)


def _explain_error(error: Exception, name: str, where: str, arg_names: Sequence[str]) -> str:
    message = str(error).split("\n")[0].rstrip(".")
    kind = type(error).__name__
    if isinstance(error, TypeError) and ("positional argument" in message or "unexpected keyword" in message):
        return _("{name} could not be called with {count} arguments ({kind}: {message}). It should take "
                 "({arguments}), in this order.").format(name=name, count=len(arg_names), kind=kind, message=message,
                                                         arguments=", ".join(arg_names))
    if "without overflow" in message:
        return _("a fill value in {name} does not fit in the dtype of the scores ({where}): {message}. A number "
                 "like -1e9 is outside the float16 range; use torch.finfo(X.dtype).min, the dtype's own "
                 "minimum.").format(name=name, where=where, message=message)
    if "view size is not compatible" in message:
        return _("view(...) failed in {name} ({where}) because it merges axes that are not adjacent in memory: "
                 "after a transpose or permute they are out of memory order. Use reshape(...) (it copies when it "
                 "must), or .contiguous() before view.").format(name=name, where=where)
    if "is invalid for input of size" in message:
        return _("a view/reshape in {name} asked for a shape that does not hold the same number of elements "
                 "({where}): {message}. Compute the sizes from the input, e.g. head_dim = num_hiddens // "
                 "num_heads.").format(name=name, where=where, message=message)
    if "cannot be multiplied" in message or "Expected size for first two dimensions" in message \
            or "must match the size of tensor" in message or "Expected batch2_sizes" in message:
        return _("the shapes did not fit in {name} ({where}): {message}. In queries @ keys^T the keys must be "
                 "transposed over their last two axes: keys.transpose(-2, -1).").format(name=name, where=where,
                                                                                       message=message)
    if "Boolean value of Tensor" in message and "ambiguous" in message:
        return _("{name} asked Python for one True or False about a whole tensor ({where}): Python's max, min, if, "
                 "and, or compare single numbers. On tensors use torch.maximum(a, b) and torch.minimum(a, b), element "
                 "by element, torch.where(condition, a, b) for if, and &, | for and, or.").format(name=name,
                                                                                                 where=where)
    if isinstance(error, NameError):
        return _("{name} uses a name that does not exist ({kind}: {message}). Use only its arguments and names "
                 "defined in the notebook.").format(name=name, kind=kind, message=message)
    return _("{name} raised {kind}: {message} ({where}). Fix the cell above, run it, then run this cell "
             "again.").format(name=name, kind=kind, message=message, where=where)


def _difference(got: Any, expected: Any, name: str, where: str) -> str:
    if isinstance(expected, tuple) and not isinstance(got, (tuple, list)):
        return _("{name} should return {count} results as a tuple, ({dots}), got a {kind} ({where}).").format(
            name=name, count=len(expected), dots=", ".join(["..."] * len(expected)), kind=type(got).__name__,
            where=where)
    if isinstance(expected, tuple):
        if len(got) != len(expected):
            return _("{name} should return {count} results, got {got} ({where}).").format(
                name=name, count=len(expected), got=len(got), where=where)
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            if not _same(g, e):
                return _difference(g, e, _("result {index} of {name}").format(index=i, name=name), where)
    if got is None:
        return _("{name} returned None ({where}). Did you forget the return statement?").format(name=name, where=where)
    if isinstance(expected, Tensor):
        if not isinstance(got, Tensor):
            return _("{name} should return a tensor, got {kind} ({where}).").format(
                name=name, kind=type(got).__name__, where=where)
        if got.shape != expected.shape:
            return _("your output has shape {shape} but should have {expected_shape} ({where}).").format(
                shape=_shape(got), expected_shape=_shape(expected), where=where)
        if torch.isnan(got.double()).any() and not torch.isnan(expected.double()).any():
            return _("your output contains NaN ({where}); the reference has none.").format(where=where)
        differs = ~torch.isclose(got.double(), expected.double(), equal_nan=True)  # inf - inf would be NaN below
        diff = torch.where(differs, (got.double() - expected.double()).abs().nan_to_num(nan=math.inf), 0.0)
        index = tuple(int(i) for i in (diff == diff.max()).nonzero()[0])
        return _("your output has the right shape {shape} but different values ({where}): at index {index} it is "
                 "{got}, expected {expected}.").format(shape=_shape(got), where=where, index=index,
                                                       got=_number(got[index]), expected=_number(expected[index]))
    return _("{name} gave {got}, expected {expected} ({where}).").format(
        name=name, got=_show(_plain(got)), expected=_show(expected), where=where)


def _describe_case(arg_names: Sequence[str], args: tuple, keywords: bool) -> str:
    if keywords:
        return _("for {arguments}").format(arguments=", ".join(f"{k}={v!r}" for k, v in args[0].items()))
    parts = []
    for arg_name, value in zip(arg_names, args, strict=True):
        if isinstance(value, Tensor):
            unusual = "" if value.dtype in (torch.float32, torch.int64) else _(" in {dtype}").format(
                dtype=str(value.dtype)[6:])
            parts.append(_("{argument} of shape {shape}").format(argument=arg_name, shape=_shape(value)) + unusual
                         if value.dim() != 1 or value.numel() > 8 else f"{arg_name} = {value.tolist()}")
        elif isinstance(value, torch.nn.Module):
            continue
        else:
            parts.append(f"{arg_name}={value!r}")
    return _("for {arguments}").format(arguments=", ".join(parts))


def _copy(args: tuple) -> tuple:
    return tuple(a.clone() if isinstance(a, Tensor) else a for a in args)


def _same(a: Any, b: Any) -> bool:
    """Equal values: tensors of equal shape (close for floats), numbers, sequences element by element.

    A numpy value counts as the Python value it holds, a 0-d tensor as a number where a number is expected. Two ints
    are equal only when they are equal; an int and a float when the float is that int up to its rounding (a count
    written 8 * 16 * 1024 * 1024 * 4.0 is right, one off by half is not); two floats within a relative 1e-6.
    """
    a, b = _from_numpy(a), _from_numpy(b)
    if isinstance(a, Tensor) and a.dim() == 0 and isinstance(b, (int, float)):
        a = a.item()
    if isinstance(b, Tensor) and b.dim() == 0 and isinstance(a, (int, float)):
        b = b.item()
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a.shape != b.shape:
            return False
        low_precision = {a.dtype, b.dtype} & {torch.float16, torch.bfloat16}
        tolerance = 2e-3 if low_precision else 1e-5
        a, b = a.detach().double(), b.detach().double()
        return bool(torch.allclose(a, b, rtol=10 * tolerance, atol=tolerance, equal_nan=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        whole = isinstance(a, int) or isinstance(b, int)
        return math.isclose(a, b, rel_tol=1e-12 if whole else 1e-6, abs_tol=1e-9)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values that cannot say whether they are equal are not the same
        return False


def _from_numpy(x: Any) -> Any:
    """A numpy array or scalar as the Python value it holds (nested tuples for an array); anything else as is."""
    if isinstance(x, np.ndarray) and x.dtype != object:
        x = x.tolist()
        return _plain(x) if isinstance(x, list) else x
    if isinstance(x, np.generic):
        return x.item()
    return x


def _plain(x: Any) -> Any:
    """An answer in plain Python: torch.Size and lists become tuples, small tensors and numpy arrays nested tuples."""
    x = _from_numpy(x)
    if isinstance(x, Tensor):
        return x.item() if x.dim() == 0 else tuple(_plain(row) for row in x)
    if isinstance(x, (tuple, list)):  # torch.Size is a tuple
        return tuple(_plain(item) for item in x)
    return x


def contains_ellipsis(x: Any) -> bool:
    return x is ... or (isinstance(x, (tuple, list)) and any(contains_ellipsis(item) for item in x))


def _form(x: Any) -> str:
    """The form of an answer with ... for each number: ((6, 1), 2) -> '((..., ...), ...)'."""
    if isinstance(x, tuple):
        return "(" + ", ".join(_form(item) for item in x) + ("," if len(x) == 1 else "") + ")"
    return "..." if isinstance(x, (int, float)) and not isinstance(x, bool) else type(x).__name__


def _show(x: Any) -> str:
    return repr(x)


def _shape(x: Any) -> str:
    return str(tuple(x.shape)) if isinstance(x, Tensor) else type(x).__name__


def _number(x: Tensor) -> str:
    value = x.item()
    return str(value) if isinstance(value, int) else f"{value:.4g}"
