"""What runs inside the grading sandbox (tools/autograde.py starts it): a submission's answers, as plain data.

    python -I -c "$(cat tools/grade_runner.py)" < program.json > results.jsonl

The program (JSON on standard input) lists steps in the notebook's order: the chapter's own set-up cells and the
student's answer cells to run (``{"run": source, "answer": grade_id or null}``), and the probes of the graded test
cells (``{"probe": grade_id, "kind": "value", "name": "answer"}``, or ``"kind": "function"`` with the hidden cases,
encoded, and the library functions that would answer the exercise). Each probe writes one JSON line as soon as it is
taken: a value as plain JSON (numbers, strings, lists; ``{"tensor": shape, "values": ...}``, ``{"set": [...]}``), a
function's outputs on the cases, and whether the function is, wraps or calls one of the named library functions.

Nothing here judges: the grade is computed by the grader in its own process, against its own reference. Whatever
the student's code does to this process (it may replace anything in it, this file's functions too) can only change
the data it hands back, which the grader reads as the student's claims about the answers. Only the standard library
and torch are used; numpy's values are read through their own ``tolist``.
"""

import builtins
import functools
import json
import os
import sys

_type, _tuple, _list, _dict, _int, _float, _bool, _str = type, tuple, list, dict, int, float, bool, str
_set, _frozenset, _len, _isinstance, _repr = set, frozenset, len, isinstance, repr
HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: set on every class made at run time (a class statement, type(...))


class Ungradable(Exception):
    pass


def _tensor_tools():
    import torch
    return torch, torch.Tensor, torch.Tensor.tolist, torch.Tensor.detach, torch.Tensor.size


def encode(x, tools=None):
    """An answer as JSON data: what the grader can compare. Raises Ungradable for any other type."""
    kind = _type(x)
    if kind is _bool or kind is _int or kind is _float or kind is _str:
        return x
    if kind is _set or kind is _frozenset:
        return {"set": [encode(item, tools) for item in x]}
    if _tuple in kind.__mro__ or kind is _list:
        get, n = (_tuple.__getitem__, _tuple.__len__(x)) if _tuple in kind.__mro__ else (_list.__getitem__,
                                                                                         _list.__len__(x))
        return [encode(get(x, i), tools) for i in range(n)]
    torch, tensor, tolist, detach, size = tools or _tensor_tools()
    if kind is tensor:
        return {"tensor": [int(n) for n in size(x)], "values": tolist(detach(x))}
    # A type written in C, which no answer cell can make or change: numpy's scalars and arrays as plain Python.
    if not _type.__dict__["__flags__"].__get__(kind) & HEAP_TYPE and kind.__module__ == "numpy":
        return encode(kind.tolist(x), tools)
    raise Ungradable(f"an answer of type {kind.__name__} cannot be graded: use numbers, strings, tuples, lists, "
                     "sets, tensors")


def decode_args(data, torch):
    """The hidden cases as the grader encoded them (tools/autograde.py, encode_args)."""
    if _type(data) is _dict:
        if "tensor" in data:
            return torch.tensor(data["values"], dtype=getattr(torch, data["dtype"])).reshape(data["tensor"])
        if "tuple" in data:
            return _tuple(decode_args(item, torch) for item in data["tuple"])
    if _type(data) is _list:
        return [decode_args(item, torch) for item in data]
    return data


def _named(path):
    """The library function ``module:qualified.name``, imported here, or None."""
    import importlib
    module, _, name = path.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


def _unwrapped(fn):
    seen = 0
    while seen < 20:
        seen += 1
        if _isinstance(fn, functools.partial):
            fn = fn.func
        elif getattr(fn, "__wrapped__", None) is not None:
            fn = fn.__wrapped__
        elif _type(fn).__name__ == "method":
            fn = fn.__func__
        else:
            break
    return fn


def call_function(fn, cases, library, torch):
    """The function's outputs on the cases, and whether it is or reaches one of the library functions."""
    named = [f for f in (_named(path) for path in library) if f is not None]
    codes = [getattr(f, "__code__", None) for f in named]
    codes = [c for c in codes if c is not None]
    alias = any(_unwrapped(fn) is f or fn is f for f in named)
    reached = []

    def watch(frame, event, arg):  # every Python call the function makes: one of the library's code objects?
        if event == "call":
            code = frame.f_code
            for c in codes:
                if code is c or (code.co_code == c.co_code and code.co_names == c.co_names):
                    reached.append(c.co_name)
        return None

    outputs = []
    tools = _tensor_tools()
    for args in cases:
        args = decode_args(args, torch)
        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            result = fn(*args)
            if sys.getprofile() is not watch:  # the function took the watch away
                reached.append("(the watch)")
            sys.setprofile(previous)
            outputs.append({"value": encode(result, tools)})
        except NotImplementedError:
            sys.setprofile(previous)
            outputs.append({"error": "NotImplementedError"})
        except BaseException as error:  # noqa: BLE001 - whatever the student's code raises is the student's
            sys.setprofile(previous)
            outputs.append({"error": _error_text(error)})
    return {"outputs": outputs, "alias": alias or bool(reached)}


def _error_text(error):
    try:
        return (_type(error).__name__ + ": " + _str(error))[:300]
    except BaseException:  # noqa: BLE001 - an exception whose str() raises
        return "an error"


def run(program, emit, namespace=None):
    """Run the program's steps in one namespace (a fresh ``__main__``), emitting each probe's data."""
    namespace = {"__name__": "__main__", "__builtins__": builtins} if namespace is None else namespace
    last_error = None
    torch = None
    for number, step in enumerate(program["steps"]):
        if "run" in step:
            try:
                exec(compile(step["run"], f"<cell {number}>", "exec"), namespace)  # noqa: S102
                if step.get("answer"):
                    last_error = None
            except BaseException as error:  # noqa: BLE001 - a cell's error is the notebook's, as in Jupyter
                if step.get("answer"):
                    last_error = _error_text(error)
            if "matplotlib.pyplot" in sys.modules:
                sys.modules["matplotlib.pyplot"].close("all")
            continue
        result = {"probe": step["probe"]}
        try:
            if last_error is not None:
                result["cell_error"] = last_error
            if step["name"] not in namespace:
                result["error"] = f"NameError: {step['name']} is not defined"
            elif step["kind"] == "value":
                result["value"] = encode(namespace[step["name"]])
            else:
                if torch is None:
                    import torch
                result.update(call_function(namespace[step["name"]], step["cases"], step["library"], torch))
        except BaseException as error:  # noqa: BLE001 - an ungradable answer, or the student's code failing
            result["error"] = _error_text(error)
        emit(result)


def main():
    results = os.fdopen(os.dup(1), "w")  # the results' own copy of standard output
    program = json.loads(sys.stdin.read())
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - what the cells print goes nowhere
    sys.path[:0] = program["path"]

    def emit(result):
        results.write(json.dumps(result) + "\n")
        results.flush()

    run(program, emit)
    emit({"done": True})


if __name__ == "__main__":
    main()
