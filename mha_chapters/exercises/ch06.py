"""The exercises of chapter 06, what heads learn.

``check_task_targets``, ``check_ablate_head``
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..i18n import _
from ..toy import IGNORE
from ._engine import _plain, check_answer, check_function

__all__ = ['check_ablate_head', 'check_task_targets']


def _one_row(answer: Any) -> Any:
    """The row of a one-sequence batch, as ``task.targets(torch.tensor([[...]]))`` prints it; anything else as is.

    Tensors and numpy arrays become tuples of numbers first, so a ``(1, 5)`` array passes as well as its row.
    """
    rows = _plain(answer)
    if isinstance(rows, tuple) and len(rows) == 1 and isinstance(rows[0], tuple):
        return rows[0]
    return rows


def check_task_targets(answer: Any) -> None:
    """Exercise: targets of ``TwoLookupTask(vocab_size=10, seq_len=5)`` for the tokens ``[3, 1, 4, 1, 5]``.

    The answer may be one row of five numbers or the ``(1, 5)`` tensor that ``task.targets`` returns.
    """
    ignore = f"IGNORE ({IGNORE})"
    check_answer(_one_row(answer), (IGNORE, 33, 13, 43, 13), name=_("the targets"), hints={
        (IGNORE, 13, 43, 13, 53): _("the local part is the token one step BACK, x[t-1], not the token at t itself."),
        (IGNORE, 33, 31, 34, 31): _("the class is local * vocab_size + first, so the local token is the tens digit "
                                    "here: position 1 has local 3 and first 3, class 33; position 2 has local 1, "
                                    "class 1 * 10 + 3."),
        (-1, 33, 13, 43, 13): _("IGNORE is {ignore_value}, not -1 (the same number as the default ignore_index of "
                                "F.cross_entropy). The other four targets are right.").format(ignore_value=IGNORE),
        (33, 13, 43, 13, 53): _("position 0 has no token one step back, so its target is {ignore}.").format(
            ignore=ignore),
        (3, 33, 13, 43, 13): _("position 0 has no token one step back, so its target is {ignore}, not a "
                               "class.").format(ignore=ignore),
    }, success=_("{ignore} at position 0, then x[t-1] * 10 + x[0] at every position t.").format(ignore=ignore))


def _ablate_right(concatenated: Tensor, head: int, num_heads: int) -> Tensor:
    head_dim = concatenated.shape[-1] // num_heads
    keep = torch.ones(concatenated.shape[-1], dtype=concatenated.dtype)
    keep[head * head_dim:(head + 1) * head_dim] = 0
    return concatenated * keep


def _ablate_tokens(concatenated: Tensor, head: int, num_heads: int) -> Tensor:
    head_dim = concatenated.shape[-1] // num_heads
    result = concatenated.clone()
    result[:, head * head_dim:(head + 1) * head_dim] = 0
    return result


def _ablate_width_num_heads(concatenated: Tensor, head: int, num_heads: int) -> Tensor:
    result = concatenated.clone()
    result[..., head * num_heads:(head + 1) * num_heads] = 0
    return result


def _ablate_interleaved(concatenated: Tensor, head: int, num_heads: int) -> Tensor:
    result = concatenated.clone()
    result[..., head::num_heads] = 0
    return result


def _ablate_all_but(concatenated: Tensor, head: int, num_heads: int) -> Tensor:
    return concatenated - _ablate_right(concatenated, head, num_heads)


def check_ablate_head(fn: Any) -> None:
    """Exercise: ``my_ablate_head(concatenated, head, num_heads)`` zeroes one head's features before ``W_o``."""
    cases = [(torch.arange(1.0, 1 + 2 * 3 * 4).reshape(2, 3, 4), 1, 2),
             (torch.arange(1.0, 1 + 1 * 4 * 12).reshape(1, 4, 12), 0, 3),
             (torch.arange(1.0, 1 + 3 * 8 * 16).reshape(3, 8, 16), 2, 4),
             (torch.arange(1.0, 1 + 2 * 5 * 6).reshape(2, 5, 6), 5, 6)]
    check_function(fn, _ablate_right, cases, name="my_ablate_head", arg_names=["concatenated", "head", "num_heads"],
                   hints={
        _ablate_tokens: _("you zeroed positions (axis 1); a head owns FEATURES (the last axis): "
                          "concatenated[..., head * head_dim:(head + 1) * head_dim]."),
        _ablate_width_num_heads: _("each head owns head_dim = num_hiddens // num_heads features, not num_heads."),
        _ablate_all_but: _("you kept only that head; the exercise zeroes that head and keeps all the others."),
        _ablate_interleaved: _("you zeroed every num_heads-th feature (head, head + num_heads, ...), as if the heads "
                               "took turns; the concatenation puts each head's head_dim features next to each other, "
                               "so a head owns one block: concatenated[..., head * head_dim:(head + 1) * head_dim]."),
    }, mutation_hint=_("your function changed its input in place; the model still needs the original. Work on a "
                       "copy (concatenated.clone()) or multiply by a mask."),
       success=_("head h owns features h * head_dim .. (h + 1) * head_dim - 1 of the concatenation, on every "
                 "position."))
