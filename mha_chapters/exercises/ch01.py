"""The exercises of chapter 01, tensor shapes.

``check_strides``, ``check_permute_position``, ``check_split_heads``, ``check_merge_heads``
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from ..i18n import _
from ._engine import check_answer, check_function, int_cases

__all__ = ['check_merge_heads', 'check_permute_position', 'check_split_heads', 'check_strides']


def check_strides(answer: Any) -> None:
    """Exercise: the strides of ``torch.arange(24).reshape(4, 6)`` and of its transpose ``.T``."""
    check_answer(answer, ((6, 1), (1, 6)), name=_("the strides"), hints={
        ((6, 1), (6, 1)): _("transpose copies nothing and so cannot keep row-major strides: it swaps the two "
                            "strides of A. What are they after the swap?"),
        ((1, 6), (6, 1)): _("the two pairs are swapped. A is the fresh, row-major tensor: one step right is 1 "
                            "element, one step down is a whole row of 6."),
        ((4, 1), (1, 4)): _("a stride counts elements to skip in memory. One row of A holds 6 elements (A has 6 "
                            "columns), so one step down skips 6, not 4."),
        ((1, 4), (4, 1)): _("A = arange(24).reshape(4, 6) is row-major: its last axis has stride 1."),
    }, success=_("A has row-major strides (6, 1); A.T swaps them to (1, 6), so A.T is not contiguous."))


def check_permute_position(answer: Any) -> None:
    """Exercise: the index of 13 in ``X.permute(2, 0, 1)`` and ``X.transpose(0, 2)``, X = arange(24).view(2, 3, 4)."""
    check_answer(answer, ((1, 1, 0), (1, 0, 1)), name=_("the positions of 13"), hints={
        ((1, 0, 1), (1, 0, 1)): _("(1, 0, 1) is right for transpose(0, 2), which swaps the first and last index "
                                  "(both 1 here). permute(2, 0, 1) moves old axis 2 to the front: (k, i, j)."),
        ((0, 1, 1), (1, 0, 1)): _("for permute(2, 0, 1) the new axis 0 is the old axis 2, the new axis 1 is the "
                                  "old axis 0, the new axis 2 the old axis 1: new index = (k, i, j)."),
        ((1, 1, 0), (1, 1, 0)): _("permute(2, 0, 1) and transpose(0, 2) are different moves: transpose(0, 2) "
                                  "swaps the first and last index and keeps the middle one."),
    }, success=_("13 is X[1, 0, 1]; permute(2, 0, 1) reads (k, i, j) and transpose(0, 2) reads (k, j, i)."))


def _split_heads_right(T: Tensor, num_heads: int) -> Tensor:
    b, n, hd = T.shape
    return T.reshape(b, n, num_heads, hd // num_heads).transpose(1, 2)  # (b, n, h*d) -> (b, h, n, d)


def _split_heads_no_transpose(T: Tensor, num_heads: int) -> Tensor:
    b, n, hd = T.shape
    return T.reshape(b, num_heads, n, hd // num_heads)  # same shape, tokens and heads mixed


def _split_heads_4d_only(T: Tensor, num_heads: int) -> Tensor:
    b, n, hd = T.shape
    return T.reshape(b, n, num_heads, hd // num_heads)  # heads still after tokens


def _split_heads_wrong_swap(T: Tensor, num_heads: int) -> Tensor:
    b, n, hd = T.shape
    return T.reshape(b, n, num_heads, hd // num_heads).transpose(2, 3)


def check_split_heads(fn: Any) -> None:
    """Exercise: ``my_split_heads(T, num_heads)``: ``(b, n, h*d) -> (b, h, n, d)``."""
    check_function(fn, _split_heads_right, int_cases([(2, 3, 4, 2), (1, 5, 6, 3), (3, 2, 8, 4), (2, 4, 6, 1)]),
                   name="my_split_heads", arg_names=["T", "num_heads"], hints={
        _split_heads_no_transpose: _("your output has the right shape {shape}, but a head-row now mixes the "
                                     "features of several tokens: view/reshape straight to (b, h, n, d) regroups "
                                     "memory in order. Reshape to (b, n, h, d) first, then transpose(1, 2)."),
        _split_heads_4d_only: _("your output has shape {shape}: the heads axis is still behind the tokens axis. "
                                "Finish with transpose(1, 2) to get (b, h, n, d)."),
        _split_heads_wrong_swap: _("your output has shape {shape}: you swapped the heads axis with the features "
                                   "axis. Swap it with the tokens axis instead: transpose(1, 2)."),
    }, success=_("every head holds one row per token, in order, with its own head_dim features."))


def _merge_heads_right(H: Tensor) -> Tensor:
    b, h, n, d = H.shape
    return H.transpose(1, 2).reshape(b, n, h * d)  # (b, h, n, d) -> (b, n, h, d) -> (b, n, h*d)


def _merge_heads_no_transpose(H: Tensor) -> Tensor:
    b, h, n, d = H.shape
    return H.reshape(b, n, h * d)


def _merge_heads_wrong_order(H: Tensor) -> Tensor:
    b, h, n, d = H.shape
    return H.permute(0, 2, 3, 1).reshape(b, n, h * d)  # features before heads


def check_merge_heads(fn: Any) -> None:
    """Exercise: ``my_merge_heads(H)``: ``(b, h, n, d) -> (b, n, h*d)``, undoing ``my_split_heads``."""
    # Contiguous inputs, as the output of attention is: a non-contiguous one would forgive view after transpose.
    specs = [(2, 3, 4, 2), (1, 5, 6, 3), (3, 2, 8, 4)]
    cases = [(_split_heads_right(T, h).contiguous(),) for (T, h) in int_cases(specs)]
    check_function(fn, _merge_heads_right, cases, name="my_merge_heads", arg_names=["H"], hints={
        _merge_heads_no_transpose: _("your output has the right shape {shape}, but a reshape alone reads the "
                                     "heads in memory order, head by head. Move the heads behind the tokens "
                                     "first: transpose(1, 2), then reshape."),
        _merge_heads_wrong_order: _("your output has the right shape {shape}, but the features of the heads are "
                                    "interleaved: you moved the features axis in front of the heads. After "
                                    "transpose(1, 2) the order (b, n, h, d) is already right."),
    }, success=_("transpose(1, 2) then reshape puts each token's heads side by side again."))
