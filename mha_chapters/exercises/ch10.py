"""The exercises of chapter 10, attention without the n x n matrix.

``check_running_update``, ``check_tiled_bytes``, ``check_tile_counts``
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..i18n import _
from ..tiled import num_tiles, tiled_state_bytes
from ._engine import check_answer, check_formula, check_function

__all__ = ["check_running_update", "check_tile_counts", "check_tiled_bytes"]


def _running_update(running_max: Tensor, running_sum: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    new_max = torch.maximum(running_max, x)
    return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(x - new_max)


def _update_cases() -> list[tuple[Tensor, Tensor, Tensor]]:
    def row(*values: float) -> Tensor:
        return torch.tensor(values, dtype=torch.float64)

    return [
        (row(2.0, 5.0, 0.0), row(1.5, 1.0, 3.0), row(4.0, 1.0, 0.5)),  # the maximum grows in rows 0 and 2 only
        (row(-torch.inf, -torch.inf), row(0.0, 0.0), row(3.0, -1.0)),  # the very first score
        (row(1000.0), row(2.0), row(1003.0)),  # large scores: exp(1003) overflows
    ]


def check_running_update(fn: Any) -> None:
    """Exercise: ``my_update(running_max, running_sum, x)`` -> the new running maximum and running sum."""
    check_function(fn, _running_update, _update_cases(), name="my_update",
                   arg_names=["running_max", "running_sum", "x"], hints={
        lambda m, s, x: (torch.maximum(m, x), s + torch.exp(x - torch.maximum(m, x))):
            _("the old running_sum was summed relative to the OLD maximum: when the maximum grows, multiply it by "
              "exp(running_max - new_max) before you add the new term."),
        lambda m, s, x: (torch.maximum(m, x),
                         s * torch.exp(torch.maximum(m, x) - m) + torch.exp(x - torch.maximum(m, x))):
            _("the rescale factor is upside down: it is exp(running_max - new_max), at most 1, since the old terms "
              "shrink when the maximum grows."),
        lambda m, s, x: (torch.maximum(m, x), s * torch.exp(m - torch.maximum(m, x)) + torch.exp(x)):
            _("the new term must be taken relative to the new maximum too: exp(x - new_max), not exp(x)."),
        lambda m, s, x: (m, s * torch.exp(m - torch.maximum(m, x)) + torch.exp(x - torch.maximum(m, x))):
            _("return the NEW maximum, torch.maximum(running_max, x), as the first result."),
        lambda m, s, x: (torch.maximum(m, x), s + torch.exp(x)):
            _("subtract the running maximum before exp (exp(1000) overflows), and rescale the old sum by "
              "exp(running_max - new_max) when the maximum grows."),
    }, success=_("new_max = max(m, x); l = l * exp(m - new_max) + exp(x - new_max), the online softmax update."),
        mutation_hint=_("return new tensors; do not change running_max or running_sum in place."))


def check_tiled_bytes(fn: Any) -> None:
    """Exercise: ``my_tiled_bytes(batch_size, num_queries, num_kvpairs, value_dim, tile_size)`` in float32."""
    cases = [
        {"batch_size": 16, "num_queries": 128, "num_kvpairs": 1024, "value_dim": 64, "tile_size": 64},
        {"batch_size": 1, "num_queries": 3, "num_kvpairs": 10, "value_dim": 2, "tile_size": 4},
        {"batch_size": 2, "num_queries": 5, "num_kvpairs": 6, "value_dim": 3, "tile_size": 100},
    ]
    check_formula(fn, tiled_state_bytes, cases, name="my_tiled_bytes", hints={
        lambda b, nq, nkv, dv, t: b * nq * nkv * 4:
            _("that is the whole score matrix, which tiled attention never holds: count one tile of scores "
              "(num_queries x tile_size) and the running state instead."),
        lambda b, nq, nkv, dv, t: b * nq * min(t, nkv) * 4:
            _("one tile of scores is not all: the running maximum and sum (one number per query each) and the output "
              "accumulator (num_queries x value_dim) stay in memory across the steps."),
        lambda b, nq, nkv, dv, t: b * nq * (min(t, nkv) + dv) * 4:
            _("add the running maximum and the running sum: one number per query row each."),
        lambda b, nq, nkv, dv, t: b * nq * (min(t, nkv) + 2 + dv):
            _("that counts entries; each float32 entry takes 4 bytes."),
        lambda b, nq, nkv, dv, t: b * nq * (t + 2 + dv) * 4:
            _("a tile cannot hold more keys than there are: use min(tile_size, num_kvpairs)."),
        lambda b, nq, nkv, dv, t: b * nq * (2 * min(t, nkv) + 2 + dv) * 4:
            _("you counted two tiles, the scores and their weights exp(S - m'). The algorithm can overwrite the "
              "scores with the weights, so it needs one tile (eager PyTorch keeps both, which is why section 5 "
              "measured more than it counted)."),
        lambda b, nq, nkv, dv, t: b * nq * (2 * min(t, nkv) + dv) * 4:
            _("you counted two tiles (scores and weights) but no running maximum and sum: the algorithm needs one "
              "tile, plus one maximum and one sum per query row."),
        lambda b, nq, nkv, dv, t: (b * nq * (min(t, nkv) + 2 + dv) + b * min(t, nkv) * dv) * 4:
            _("you added the value tile (tile_size x value_dim): it is a slice of V, which is in memory already; "
              "count only what tiled attention creates, one tile of scores and the running state."),
        lambda b, nq, nkv, dv, t: (b * nq * (min(t, nkv) + 2 + dv) + 2 * b * min(t, nkv) * dv) * 4:
            _("you added a key tile and a value tile: they are slices of K and V, in memory already; count only what "
              "tiled attention creates, one tile of scores and the running state."),
    }, success=_("batch_size * num_queries * (min(tile_size, num_kvpairs) + 2 + value_dim) * 4 bytes."))


def check_tile_counts(answer: Any) -> None:
    """Exercise: tiles computed for 1000 keys in tiles of 128, without a mask and causal with 256 queries."""
    expected = (num_tiles(1000, 128), num_tiles(1000, 128, num_queries=256, causal=True))
    check_answer(answer, expected, name=_("the numbers of tiles"), hints={
        (7, 2): _("1000 / 128 = 7.8: the last, shorter tile (104 keys) counts too, so round up: 8."),
        (7, 1): _("round up: a shorter last tile still has to be computed."),
        (8, 8): _("with causal=True query 255 sees keys 0..255 only: the tiles that start at key 256 or later are "
                  "hidden from every query and are skipped."),
        (8, 3): _("keys 0..255 fill exactly two tiles of 128; the third tile starts at key 256, which no query sees."),
        (7, 8): _("the order is (without a mask, causal); and round up."),
        (8, 6): _("6 counts the tiles that causal attention SKIPPED; the question asks for the tiles it computes."),
    }, success=_("ceil(1000 / 128) = 8 tiles; causally only keys 0..255 are visible: 2 tiles, 6 skipped."))
