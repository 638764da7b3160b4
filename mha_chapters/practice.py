"""The practice check of a graded assignment: is each answer well-formed? Never whether it is right.

The course's notebook ends with a locked cell (tools/nbgrader_course.py writes it) that calls::

    from mha_chapters.practice import well_formed
    well_formed(FORMS, globals())

``FORMS`` holds, per exercise, only the *form* of an answer: for a predicted value, its structure with every
number replaced by its kind (``["number", "number"]``, ``{"tensor": [2, 3]}``, ``"text"``); for a function, the
code that draws a sample input (from a public seed, not the hidden cases) and the form of the reference's result
on it, or None where only "it runs" is checked. No expected value, seed of the course or reference is in it, so the
check can tell a student "a tuple of 2 numbers is expected" but never "right" or "wrong".
"""

from __future__ import annotations

from mha_chapters.i18n import _

__all__ = ["form_of", "well_formed"]

PUBLIC_SEED = 0  # the sample inputs' seed: the same for every student, unlike the hidden cases


def form_of(value, tensors: bool = True):
    """The form of an answer: its structure, numbers as "number", strings as "text", a tensor as its shape (with
    ``tensors=False``, as the nested lists of its values' forms: a predicted value may be a tensor or a list)."""
    import torch

    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, torch.Tensor):
        if not value.dim():
            return "number"
        return {"tensor": list(value.shape)} if tensors else form_of(value.tolist(), tensors)
    if isinstance(value, (list, tuple)):  # torch.Size too
        return [form_of(item, tensors) for item in value]
    if isinstance(value, (set, frozenset)):
        return "set"
    if hasattr(value, "tolist"):  # numpy
        return form_of(value.tolist(), tensors)
    return type(value).__name__


def _describe(form) -> str:
    if isinstance(form, list):
        return "(" + ", ".join(_describe(item) for item in form) + ")"
    if isinstance(form, dict):
        return _("a tensor of shape {shape}").format(shape=tuple(form["tensor"]))
    return {"number": _("a number"), "text": _("text"), "bool": _("True or False"),
            "set": _("a set")}.get(form, str(form))


def _sample(cases_code: str):
    """The first of the cases that ``cases_code`` draws from the public seed."""
    import math

    import torch
    names = {"torch": torch, "math": math, "g": torch.Generator().manual_seed(PUBLIC_SEED), "type_": type,
             "tuple_": tuple, "list_": list, "int_": int, "float_": float, "bool_": bool, "str_": str, "set_": set}
    exec(cases_code, names)  # noqa: S102 - the course's own public code, in the student's own notebook
    return tuple(names["cases"][0])


def check_one(entry: dict, namespace: dict) -> tuple[bool, str]:
    """(well-formed, what to tell the student) for one exercise's answer."""
    name = entry["name"]
    if name not in namespace:
        return False, _("{name} is not defined yet: run its answer cell").format(name=name)
    answer = namespace[name]
    if entry["kind"] == "value":
        if entry.get("form") is None:  # several right forms (letters, a set...): any plain value
            return True, _("{name} is well-formed").format(name=name)
        got = form_of(answer, tensors=False)
        if got != entry["form"] and not (entry["form"] == "number" and got == "bool"):
            return False, _("{name} should be {form}, it is {got}").format(
                name=name, form=_describe(entry["form"]), got=_describe(got))
        return True, _("{name} is well-formed").format(name=name)
    if not callable(answer):
        return False, _("{name} should be a function").format(name=name)
    try:
        result = answer(*_sample(entry["sample"]))
    except NotImplementedError:
        return False, _("{name} is not written yet").format(name=name)
    except Exception as error:  # noqa: BLE001 - the student's function failing is what the check reports
        return False, _("{name} raised {error} on a sample input").format(name=name, error=type(error).__name__)
    if entry.get("form") is not None and form_of(result) != entry["form"]:
        return False, _("{name} returns {got} on a sample input, expected {form}").format(
            name=name, got=_describe(form_of(result)), form=_describe(entry["form"]))
    return True, _("{name} runs on a sample input and returns the expected form").format(name=name)


def well_formed(forms: list[dict], namespace: dict) -> list[bool]:
    """Print, for each exercise, whether its answer is well-formed (never whether it is right); returns the flags."""
    flags = []
    for entry in forms:
        ok, message = check_one(entry, namespace)
        flags.append(ok)
        print(("🟢 " if ok else "🟠 ") + _("Exercise {number}: {message}").format(number=entry["exercise"],
                                                                               message=message))
    print(_("Well-formed is not right: your answers are graded after you submit."))
    return flags
