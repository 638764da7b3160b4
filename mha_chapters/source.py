"""The library's own code, printed on the page: a function's source with the helpers it calls.

A public function often checks its arguments and hands the work to helpers of the same module
(``transpose_qkv`` calls ``split_heads`` and ``fold_heads``). :func:`source_with_helpers` returns them all, read
from the installed source, so a chapter that prints it always shows the code that really runs.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable

from mha_lib._validation import wrong_type

from .i18n import _

__all__ = ["source_with_helpers"]


def source_with_helpers(function: Callable) -> str:
    """The source of ``function``, then that of every function of its own module that it calls, depth first.

    Functions imported from other modules (argument checks, for one) are named in the code but not printed.
    """
    if not isinstance(function, types.FunctionType):
        raise wrong_type("function", _("a Python function"), function)
    seen: list[types.FunctionType] = []

    def visit(fn: types.FunctionType) -> None:
        if fn in seen:
            return
        seen.append(fn)
        for name in fn.__code__.co_names:
            called = fn.__globals__.get(name)
            if isinstance(called, types.FunctionType) and called.__module__ == function.__module__:
                visit(called)

    visit(function)
    return "\n\n\n".join(inspect.getsource(fn).rstrip() for fn in seen)
