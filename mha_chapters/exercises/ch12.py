"""The exercises of chapter 12, rotary position embedding.

``check_rotate_half``, ``check_interleaved_to_halves``, ``check_shift_answer``
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from mha_lib.rope import _permute_rows, _rotate_half, _rotate_pairs

from ..i18n import _
from ._engine import CORRECT, NOT_YET, check_function, contains_ellipsis, report

__all__ = ["check_interleaved_to_halves", "check_rotate_half", "check_shift_answer"]


def _rotate_half_cases() -> list[tuple[Tensor]]:
    gen = torch.Generator().manual_seed(12)
    return [(torch.arange(1.0, 9.0),), (torch.randn(2, 3, 6, generator=gen),),
            (torch.randn(1, 2, 4, 16, generator=gen),)]


def check_rotate_half(fn: Any) -> None:
    """Exercise: ``my_rotate_half(x)``, ``(x1, x2) -> (-x2, x1)`` for the two halves of the last axis."""
    def halves(x: Tensor) -> tuple[Tensor, Tensor]:
        return x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]

    wrong = {
        _rotate_pairs:
            _("you paired neighbours, features 2i and 2i+1: that is the interleaved convention (RoFormer, Meta's "
              "Llama code). rotate_half pairs feature i with feature i + head_dim/2: cut the last axis into two "
              "halves, x1, x2 = x.chunk(2, dim=-1)."),
        lambda x: torch.cat([halves(x)[1], -halves(x)[0]], dim=-1):
            _("the minus sign is on the wrong half: that turns every pair by -90 degrees. A quarter turn takes "
              "(a, b) to (-b, a), so the result starts with -x2: torch.cat([-x2, x1], dim=-1)."),
        lambda x: torch.cat([halves(x)[1], halves(x)[0]], dim=-1):
            _("you swapped the halves but negated nothing: a swap is a reflection, not a turn. The result starts "
              "with -x2: torch.cat([-x2, x1], dim=-1)."),
        lambda x: torch.cat([-halves(x)[0], halves(x)[1]], dim=-1):
            _("each half stays in its place: the two halves must change places, -x2 first, then x1."),
        lambda x: -x.flip(-1):
            _("flip reverses the order of all features: feature 0 then meets the last one. Keep each half in its "
              "order and exchange the halves: torch.cat([-x2, x1], dim=-1)."),
    }
    check_function(fn, _rotate_half, _rotate_half_cases(), name="my_rotate_half", arg_names=["x"], hints=wrong,
                   success=_("(x1, x2) -> (-x2, x1) turns every pair (i, i + head_dim/2) by a quarter turn, as in "
                             "GPT-NeoX and Hugging Face's Llama."),
                   mutation_hint=_("your function changed its argument x in place; build a new tensor instead "
                                   "(torch.cat)."))


def _weight_cases() -> list[tuple[Tensor, int]]:
    cases = []
    for num_heads, head_dim, in_features in ((2, 8, 3), (4, 4, 5), (1, 6, 2), (3, 8, 1)):
        rows = num_heads * head_dim
        cases.append((torch.arange(float(rows * in_features)).reshape(rows, in_features), num_heads))
    return cases


def _reference_conversion(weight: Tensor, num_heads: int) -> Tensor:
    return _permute_rows(weight, num_heads, to_halves=True)


def check_interleaved_to_halves(fn: Any) -> None:
    """Exercise: ``my_interleaved_to_halves(W_q, num_heads)``: the rows of an interleaved checkpoint's ``W_q``, in
    the order that the halves convention needs."""
    def whole_matrix(W: Tensor, num_heads: int) -> Tensor:
        return W.reshape(W.shape[0] // 2, 2, -1).transpose(0, 1).reshape(W.shape)

    def inverse(W: Tensor, num_heads: int) -> Tensor:
        return _permute_rows(W, num_heads, to_halves=False)

    def no_transpose(W: Tensor, num_heads: int) -> Tensor:
        return W.reshape(num_heads, -1, 2, W.shape[1]).reshape(W.shape)

    wrong = {
        whole_matrix:
            _("you reordered the rows of the whole matrix as if it were one head: the pairs of head 1 then move into "
              "head 0. Pairs live inside a head, as RoPE acts after the head split: reshape to (num_heads, "
              "head_dim // 2, 2, in_features) first."),
        inverse:
            _("that is the inverse permutation, from halves to interleaved: row i of a head went to row 2i. Here pair "
              "i sits in rows 2i and 2i+1 and must move to rows i and i + head_dim/2: reshape (num_heads, "
              "head_dim // 2, 2, in_features), then transpose(1, 2), that is permute(0, 2, 1, 3)."),
        no_transpose:
            _("the rows are unchanged: reshape alone never moves an element. Exchange the pair axis and the member "
              "axis with permute(0, 2, 1, 3) between the two reshapes (chapter 03's reshape -> permute -> reshape)."),
    }
    check_function(fn, _reference_conversion, _weight_cases(), name="my_interleaved_to_halves",
                   arg_names=["W_q", "num_heads"], hints=wrong,
                   success=_("inside each head row 2i + j moved to row j * head_dim/2 + i: Hugging Face's Llama "
                             "conversion script does exactly this to W_q and W_k (never to W_v)."),
                   mutation_hint=_("your function changed W_q in place; return a new tensor instead."))


CHOICES = "abcd"  # (a) rotated queries and keys, (b) scores, (c) attention weights, (d) output


def _letters(answer: Any) -> str | None:
    """The answer as a sorted string of distinct letters, or None when it is not made of letters."""
    if isinstance(answer, np.ndarray):
        answer = answer.tolist()
    if isinstance(answer, str):
        items = [ch for ch in answer.lower() if not ch.isspace() and ch not in ",;()[]'\""]
    elif isinstance(answer, (list, tuple, set, frozenset)) and all(isinstance(item, str) for item in answer):
        items = [ch for item in answer for ch in item.lower().strip("() ")]
    else:
        return None
    return "".join(sorted(set(items)))


def check_shift_answer(answer: Any) -> None:
    """Exercise (predict): every position moves by 100. Which of (a) rotated queries and keys, (b) scores,
    (c) attention weights, (d) output change? Answer with the letters, e.g. "bd"."""
    if contains_ellipsis(answer):
        report(_(NOT_YET) + _("replace ... with the letters of what changes, e.g. answer = \"bd\", then run this cell "
                              "again."))
        return
    letters = _letters(answer)
    if letters is None or any(ch not in CHOICES for ch in letters):
        shown = answer if letters is None else letters
        report(_(NOT_YET) + _("answer with letters among a, b, c, d, e.g. answer = \"bd\" (an empty string \"\" if "
                              "nothing changes); got {answer!r}.").format(answer=shown))
        return
    if letters == "a":
        report(_(CORRECT) + _("each query and key turns by 100 more steps of theta_i, but a score sees only the "
                              "difference of the two angles, m - n: scores, weights and output stay the same."))
        return
    if "d" in letters and "b" not in letters:
        hint = _("the scores, and so the weights, stay the same, and the values are never rotated (RoPE turns "
                 "queries and keys only): the output cannot change either.")
    elif "b" in letters or "c" in letters:
        hint = _("a score q_m . k_n sees only the difference of the two angles, (m - n) theta_i, and the shift "
                 "leaves m - n alone: the scores do not change, and neither do the weights made from them.")
    else:
        hint = _("the rotated queries and keys do change: each is turned by its own position, now 100 more steps "
                 "of theta_i. Only their dot products keep.")
    report(_(NOT_YET) + hint)
