"""The exercise of chapter 00, start here.

``check_parameters_by_heads``
"""

from __future__ import annotations

from typing import Any

from ..i18n import _
from ._engine import check_answer

__all__ = ["check_parameters_by_heads"]


def check_parameters_by_heads(answer: Any) -> None:
    """Exercise: the parameters of ``MultiHeadAttention(64, 64, 64, 64, num_heads)`` for 1 and for 8 heads."""
    check_answer(answer, (16_384, 16_384), name=_("the two parameter counts"), hints={
        (16_384, 131_072): _("the heads do not multiply the weights: 8 heads of 8 features cut the same 64 x 64 "
                             "matrices into 8 slices, they do not add 8 matrices."),
        (16_384, 2_048): _("8 heads do not divide the count either: each head is 8 times narrower, but there are 8 "
                           "of them, 8 * (64 * 8) = 64 * 64 per projection."),
        (12_288, 12_288): _("that is three projections, W_q, W_k and W_v; the output projection W_o is a fourth "
                            "64 x 64 matrix."),
        (4_096, 4_096): _("that is one 64 x 64 matrix; the layer has four: W_q, W_k, W_v and W_o."),
        (16_640, 16_640): _("bias is False by default (d2l's choice), so there are no biases to add."),
    }, success=_("4 * 64^2 = 16384 either way: the heads are another way to slice the same four matrices."))
