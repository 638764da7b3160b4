"""The exercises of chapter 11, masks as functions.

``check_recent_plus_first``, ``check_alibi_slopes``, ``check_document_ids``
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from mha_lib.flex import _alibi_slopes, _index_grids, dense_mask, document_mask_mod

from ..i18n import _
from ._engine import check_function

__all__ = ["check_alibi_slopes", "check_document_ids", "check_recent_plus_first"]

RECENT = 3  # "the previous 3 tokens": query i sees keys i-3 .. i, and key 0


def _grid_cases() -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    return [_index_grids(1, 1, n, n, None) for n in (8, 13)]


SINGLE_NUMBER_BUILTINS = ("max", "min", "any", "all")  # Python's builtins that ask a tensor for one True or False


def _builtins_used(fn: Any) -> list[str]:
    """The single-number builtins (max, min, any, all) that ``fn``'s own code calls by name, in that order."""
    names = set(getattr(getattr(fn, "__code__", None), "co_names", ()))
    return [name for name in SINGLE_NUMBER_BUILTINS if name in names]


def _as_mask(mask_mod: Any) -> Any:
    """Run a reader's mask_mod on whole grids of indices; explain a builtin max/min or `and`/`or` on tensors."""

    def run(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Any:
        try:
            out = mask_mod(b, h, q_idx, kv_idx)
        except RuntimeError as error:
            if "ambiguous" in str(error):
                builtins = _builtins_used(mask_mod)
                if builtins:
                    raise RuntimeError(_("Python's builtin {names} compares single numbers, and q_idx and kv_idx are "
                                         "whole tensors of indices: use torch.maximum(a, b) / torch.minimum(a, b), "
                                         "element by element, or write the condition as comparisons joined with & "
                                         "and |").format(names=" / ".join(builtins))) from None
                message = _("Python's and / or / not (and if) cannot combine tensors: use &, | and ~, with brackets "
                            "around each comparison, e.g. (kv_idx <= q_idx) & (kv_idx >= 0)")
                raise RuntimeError(message) from None
            raise
        if out is None or isinstance(out, str):
            return out  # the checker says what came back
        size = (b.shape[0], h.shape[1], q_idx.shape[2], kv_idx.shape[3])
        return torch.broadcast_to(torch.as_tensor(out), size).to(torch.bool)  # -> (batch, heads, queries, kvpairs)

    return run


def _recent_plus_first(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
    return ((kv_idx <= q_idx) & (q_idx - kv_idx <= RECENT)) | (kv_idx == 0)


def check_recent_plus_first(mask_mod: Any) -> None:
    """Exercise: ``my_mask_mod(b, h, q_idx, kv_idx)``: itself, the previous 3 tokens and the first token."""
    if not callable(mask_mod):
        check_function(mask_mod, _recent_plus_first, [], name="my_mask_mod", arg_names=["b", "h", "q_idx", "kv_idx"])
        return
    wrong = {
        lambda b, h, q, kv: (kv <= q) & (q - kv < RECENT) | (kv == 0):
            _("off by one: 'the previous 3 tokens' are q_idx-1, q_idx-2 and q_idx-3, so q_idx - kv_idx may be 3 "
              "(use <= 3, not < 3)."),
        lambda b, h, q, kv: ((q - kv).abs() <= RECENT) | (kv == 0):
            _("your window looks both ways: a query also sees up to 3 LATER tokens. Add the causal condition "
              "kv_idx <= q_idx."),
        lambda b, h, q, kv: (kv <= q) & (q - kv <= RECENT):
            _("the first token is missing: keys far back are hidden, but key 0 must stay visible. Combine with "
              "| (kv_idx == 0)."),
        lambda b, h, q, kv: (kv <= q) & ((q - kv <= RECENT) | (kv == 0)) | (q == 0):
            _("the first token is key 0 (kv_idx == 0), not query 0."),
        lambda b, h, q, kv: (kv <= q) & (q - kv <= RECENT) & (kv == 0):
            _("& keeps a key only if BOTH hold: the first token must be added with |, 'or'."),
        lambda b, h, q, kv: ((kv <= q) & (q - kv <= RECENT)) | (q == 0):
            _("the first token is key 0 (kv_idx == 0), not query 0."),
    }
    check_function(_as_mask(mask_mod), _as_mask(_recent_plus_first), _grid_cases(), name="my_mask_mod",
                   arg_names=["b", "h", "q_idx", "kv_idx"],
                   hints={_as_mask(fn): hint for fn, hint in wrong.items()},
                   success=_("((kv_idx <= q_idx) & (q_idx - kv_idx <= 3)) | (kv_idx == 0): a sliding window with a "
                             "sink, the pattern of StreamingLLM."))


def check_alibi_slopes(fn: Any) -> None:
    """Exercise: ``my_alibi_slopes(num_heads)`` for a power of two -> the slopes of the heads, a float tensor."""
    def as_tensor(f: Any) -> Any:
        def run(num_heads: int) -> Tensor:
            out = f(num_heads)
            array_like = isinstance(out, (list, tuple, Tensor, np.ndarray))
            return torch.as_tensor(out, dtype=torch.float32) if array_like else out
        return run

    def reference(num_heads: int) -> Tensor:
        return torch.tensor(_alibi_slopes(num_heads), dtype=torch.float32)

    wrong = {
        lambda n: [2 ** (-8 * h / n) for h in range(n)]:
            _("your first slope is 1: the sequence starts at 2^(-8/n), so use the exponent -8 * (h + 1) / n for "
              "h = 0 .. n-1."),
        lambda n: [2 ** (-(h + 1)) for h in range(n)]:
            _("those are the slopes for 8 heads only (1/2, 1/4, ...). The ratio depends on the number of heads: "
              "2^(-8 * (h + 1) / num_heads)."),
        lambda n: [2 ** (-8 * (h + 1) / n) for h in reversed(range(n))]:
            _("the order is reversed: head 0 gets the LARGEST slope, 2^(-8/n), and the slopes shrink from there."),
        lambda n: [2 ** (8 * (h + 1) / n) for h in range(n)]:
            _("the exponent must be negative: every slope lies between 0 and 1."),
        lambda n: [(h + 1) / n for h in range(n)]:
            _("the slopes form a geometric sequence (each head's slope is a fixed multiple of the previous "
              "one), not an arithmetic one: 2^(-8 * (h + 1) / num_heads)."),
    }
    check_function(as_tensor(fn) if callable(fn) else fn, reference, [(8,), (4,), (16,), (1,)],
                   name="my_alibi_slopes", arg_names=["num_heads"],
                   hints={as_tensor(f): hint for f, hint in wrong.items()},
                   success=_("slope of head h = 2^(-8 * (h + 1) / num_heads), as in Press et al. (2022)."))


def _document_mask(ids_fn: Any) -> Any:
    """The bidirectional document mask that a reader's ids give, as a (sequence, sequence) boolean tensor."""
    def run(lengths: list[int]) -> Any:
        ids = ids_fn(list(lengths))
        if ids is None or isinstance(ids, str):
            return ids  # the checker says what came back
        ids = torch.as_tensor(ids)
        if ids.shape != (sum(lengths),):
            raise ValueError(_("my_document_ids({lengths}) should have shape ({total},), one id per token, "
                               "got {shape}").format(lengths=lengths, total=sum(lengths), shape=tuple(ids.shape)))
        return dense_mask(document_mask_mod(ids.long().view(1, -1), causal=False), 1, 1, len(ids), len(ids))[0, 0]
    return run


def _reference_ids(lengths: list[int]) -> Tensor:
    return torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))


def _buggy_ids(lengths: list[int]) -> Tensor:
    starts = torch.tensor(lengths).cumsum(0)[:-1]  # where documents 1, 2, ... begin
    positions = torch.arange(sum(lengths))
    return (positions.view(-1, 1) > starts).sum(-1)


def check_document_ids(fn: Any) -> None:
    """Exercise: ``my_document_ids(lengths)`` -> the document id of every token; no token may see another document."""
    wrong = {
        _buggy_ids:
            _("still the bug: with >, the first token of each document gets the id of the document BEFORE it, so "
              "that document sees it. A position equal to a start already belongs to the new document: use >=."),
        lambda lengths: torch.arange(len(lengths)).repeat(max(lengths))[:sum(lengths)]:
            _("repeat tiles the whole list (0, 1, 2, 0, 1, 2, ...); each id must be repeated in place, its "
              "document's length times: torch.repeat_interleave."),
        lambda lengths: (torch.arange(sum(lengths)).view(-1, 1) >= torch.tensor(lengths)).sum(-1):
            _("compare with the START of each document (the running sum of the lengths), not with the lengths "
              "themselves."),
    }
    check_function(_document_mask(fn) if callable(fn) else fn, _document_mask(_reference_ids),
                   [([3, 4, 2],), ([1, 1, 1],), ([5],), ([2, 6],)], name="my_document_ids", arg_names=["lengths"],
                   hints={_document_mask(f): hint for f, hint in wrong.items()},
                   success=_("every token now sees exactly its own document; only equality of ids matters, so any "
                             "numbering that changes at each start is right."))
