"""The exercises of chapter 09, sharing keys and values.

``check_kv_head_answer``, ``check_repeat_kv_heads``, ``check_cache_bytes_answer``, ``check_kv_cache_formula``
"""

from __future__ import annotations

from typing import Any

import torch

from mha_lib.grouped import repeat_kv_heads

from ..i18n import _
from ..kv_cache import kv_cache_bytes
from ._engine import check_answer, check_formula, check_function

__all__ = ["check_cache_bytes_answer", "check_kv_cache_formula", "check_kv_head_answer", "check_repeat_kv_heads"]


def check_kv_head_answer(answer: Any) -> None:
    """Exercise: which key-value head each of 8 query heads reads when there are 2 key-value heads."""
    check_answer(answer, (0, 0, 0, 0, 1, 1, 1, 1), name=_("the key-value head of each query head"), hints={
        (0, 1, 0, 1, 0, 1, 0, 1): _("that is query head i % num_kv_heads, the order of repeat(): the heads of "
                                    "one group sit next to each other, so head i reads "
                                    "i // (num_heads // num_kv_heads)."),
        (0, 0, 1, 1, 2, 2, 3, 3): _("there are only 2 key-value heads (0 and 1): divide by the group size "
                                    "num_heads // num_kv_heads = 4, not by num_kv_heads."),
        (0, 1, 2, 3, 4, 5, 6, 7): _("that is multi-head attention, one key-value head per query head; here 8 query "
                                    "heads share 2 key-value heads."),
        (1, 1, 1, 1, 2, 2, 2, 2): _("right groups, but heads are numbered from 0, as tensor indices are: the two "
                                    "key-value heads are 0 and 1."),
    }, success=_("query heads 0-3 form the group of key-value head 0, heads 4-7 that of head 1: i // 4."))


def _repeat_kv_cases() -> list[tuple]:
    gen = torch.Generator().manual_seed(9)
    return [(torch.randn(b, g, n, d, generator=gen), r) for b, g, n, d, r in
            ((1, 2, 3, 2, 2), (2, 3, 4, 5, 4), (2, 1, 2, 3, 3), (1, 4, 2, 2, 1))]


def check_repeat_kv_heads(fn: Any) -> None:
    """Exercise: ``my_repeat_kv_heads(X, num_groups)``, (batch, kv_heads, n, d) -> (batch, kv_heads*groups, n, d)."""
    check_function(fn, repeat_kv_heads, _repeat_kv_cases(), name="my_repeat_kv_heads", arg_names=["X", "num_groups"],
                   hints={
        lambda X, r: X.repeat(1, r, 1, 1):
            _("X.repeat(1, num_groups, 1, 1) gives the order [k0, k1, k0, k1]; query heads 0 and 1 are in the SAME "
              "group and must both read k0: [k0, k0, k1, k1]. Use X.repeat_interleave(num_groups, dim=1)."),
        lambda X, r: X.repeat_interleave(r, dim=2):
            _("you repeated along axis 2, the key-value pairs (shape {shape}); the heads are axis 1."),
        lambda X, r: X.repeat_interleave(r, dim=0):
            _("you repeated along axis 0, the batch (shape {shape}); the heads are axis 1."),
    }, mutation_hint=_("my_repeat_kv_heads changed X in place; return a new tensor instead."),
        success=_("each key-value head is copied num_groups times, next to itself: [k0, k0, k1, k1]."))


def check_cache_bytes_answer(answer: Any) -> None:
    """Exercise: KV-cache bytes of 32 layers, 8 kv heads of 128, 8192 tokens, batch 1, bfloat16."""
    check_answer(answer, 1_073_741_824, name=_("the number of bytes"), hints={
        536_870_912: _("the cache holds keys AND values: multiply by 2."),
        4_294_967_296: _("that counts 32 key-value heads (one per query head); this model has only 8 key-value heads."),
        2_147_483_648: _("that is float32 (4 bytes); bfloat16 takes 2 bytes per number."),
        536_870_912 // 2: _("each bfloat16 number takes 2 bytes, and the cache holds keys and values (x2 again)."),
        33_554_432: _("every layer has its own cache: multiply by num_layers = 32."),
        131_072: _("that is the cache of ONE token; the context holds 8192 of them."),
        1: _("that is the size in GiB (2^30 bytes each); the question asks for the number of bytes: 2^30."),
        1024: _("that is the size in MiB (2^20 bytes each); the question asks for the number of bytes: "
                "1024 * 2^20."),
    }, success=_("2 x 32 layers x 8 heads x 128 x 8192 tokens x 2 bytes = 1 GiB per sequence."))


def check_kv_cache_formula(fn: Any) -> None:
    """Exercise: ``my_kv_cache_bytes(num_layers, num_kv_heads, head_dim, context_len, batch_size, bytes_per_num)``."""
    cases = [
        {"num_layers": 1, "num_kv_heads": 1, "head_dim": 1, "context_len": 1, "batch_size": 1, "bytes_per_number": 4},
        {"num_layers": 32, "num_kv_heads": 8, "head_dim": 128, "context_len": 8192, "batch_size": 1,
         "bytes_per_number": 2},
        {"num_layers": 3, "num_kv_heads": 5, "head_dim": 7, "context_len": 11, "batch_size": 13,
         "bytes_per_number": 4},
    ]

    def reference(layers, kv_heads, head_dim, context_len, batch, nbytes):
        dtype = {2: torch.float16, 4: torch.float32}[nbytes]
        return kv_cache_bytes(layers, kv_heads, head_dim, context_len, batch, dtype)

    check_formula(fn, reference, cases, name="my_kv_cache_bytes", hints={
        lambda L, g, d, n, b, s: L * g * d * n * b * s: _("the cache holds keys AND values: a factor 2."),
        lambda L, g, d, n, b, s: 2 * L * g * d * n * b: _("that counts numbers, not bytes: multiply by "
                                                          "bytes_per_number."),
        lambda L, g, d, n, b, s: 2 * g * d * n * b * s: _("every layer has its own cache: multiply by num_layers."),
        lambda L, g, d, n, b, s: 2 * L * g * d * n * s: _("every sequence of the batch has its own cache: multiply by "
                                                          "batch_size."),
        lambda L, g, d, n, b, s: 2 * L * g * d * n * b * 2: _("you wrote 2 bytes (bfloat16) as a fixed number: use the "
                                                              "argument bytes_per_number, which is 4 for float32."),
    }, success=_("2 * num_layers * num_kv_heads * head_dim * context_len * batch_size * bytes_per_number."))
