"""The anatomy of multi-head attention (chapter 04): a shape trace, parameter and FLOP counts.

Dimension names are those of :mod:`mha_lib.functional`.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn

from .._validation import require_heads_divide, require_positive_int
from ..i18n import N_, _
from ..modules import MultiHeadAttention
from .tables import format_table

__all__ = [
    "TraceRow",
    "count_parameters",
    "format_trace",
    "mha_flops",
    "score_bytes",
    "trace_multi_head_attention",
]


# The names of the steps and the worded operations that MultiHeadAttention's forward pass records (mha_lib/modules.py),
# marked for the catalogue: format_trace and the explorer print them in the reader's language.
STEP_NAMES = (N_("input"), N_("mask"), N_("1 project"), N_("split heads"), N_("2 score, 3 softmax"),
              N_("3 weighted sum"), N_("4 concatenate"), N_("5 output projection"), N_("mask, repeated per head"))


class TraceRow(NamedTuple):
    """One step of a traced forward pass: where it is in the five steps, what it computes, and its result."""

    step: str
    operation: str
    shape: tuple[int, ...]
    tensor: Tensor


def trace_multi_head_attention(
    mha: MultiHeadAttention,
    queries: Tensor,
    keys: Tensor,
    values: Tensor,
    valid_lens: Tensor | None = None,
    causal: bool = False,
) -> list[TraceRow]:
    """Run ``mha(queries, keys, values, valid_lens, causal=causal)`` and record every step with its shape.

    The rows are the tensors the layer's own forward pass computes (``need_weights=True``, the path that
    folds the heads into the batch axis), so the last row holds the layer's output. The trace runs
    without gradients and leaves ``mha.attention_weights`` as it was.

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_size)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, integer
        - last row's tensor: ``(batch_size, num_queries, num_hiddens)``
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha must be an mha_lib.MultiHeadAttention, got {type(mha).__name__}")
    steps = [("input", name, X) for name, X in (("queries", queries), ("keys", keys), ("values", values))]
    weights_before = mha.attention.attention_weights
    mha._trace = steps
    try:
        with torch.no_grad():
            mha(queries, keys, values, valid_lens, causal=causal, need_weights=True)
    finally:
        mha._trace = None
        mha.attention.attention_weights = weights_before
    # The layer names its mask after all its sources; here we know which ones were given.
    sources = " & ".join(name for name, given in (("valid_lens", valid_lens is not None), ("causal", causal)) if given)
    return [TraceRow(step, f"{sources} -> mask" if step == "  mask" else operation, tuple(tensor.shape), tensor)
            for step, operation, tensor in steps]


def format_trace(rows: list[TraceRow]) -> str:
    """Lay out a trace from :func:`trace_multi_head_attention` as a table of step, operation and shape."""
    for number, row in enumerate(rows):
        if not isinstance(row, TraceRow):
            raise TypeError(f"rows must be TraceRows from trace_multi_head_attention, row {number} is a "
                            f"{type(row).__name__}")
    return format_table([(localized_step(row.step), _(row.operation), row.shape) for row in rows],
                        [N_("step"), N_("operation"), N_("shape")])


def localized_step(step: str) -> str:
    """A step's name in the reader's language, keeping its indentation (a sub-step starts with two spaces)."""
    name = step.lstrip(" ")
    return step[:len(step) - len(name)] + _(name)


def count_parameters(module: nn.Module) -> int:
    """The number of numbers a module learns: all its weights and biases (works on the "meta" device too)."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return sum(parameter.numel() for parameter in module.parameters())


def mha_flops(batch_size: int, num_queries: int, num_kvpairs: int, num_hiddens: int, num_heads: int) -> dict[str, int]:
    """FLOPs of the matrix products of one forward pass of ``MultiHeadAttention(d, d, d, d, h)``, step by step.

    A product of an ``(m, k)`` and a ``(k, n)`` matrix has ``m*n*k`` multiply-adds,
    counted as ``2*m*n*k`` FLOPs, as ``torch.utils.flop_counter`` counts them. Queries,
    keys and values all have ``num_hiddens`` features. The softmax, the scaling and the
    masking are left out: a few operations per score, small next to the products.
    The key ``"total"`` holds the sum.
    """
    for name, value in (("batch_size", batch_size), ("num_queries", num_queries), ("num_kvpairs", num_kvpairs),
                        ("num_hiddens", num_hiddens), ("num_heads", num_heads)):
        require_positive_int(name, value)
    require_heads_divide(num_hiddens, num_heads)
    b, n_q, n_kv, d, head_dim = batch_size, num_queries, num_kvpairs, num_hiddens, num_hiddens // num_heads
    flops = {
        "W_q": 2 * b * n_q * d * d,  # (b*n_q, d) @ (d, d)
        "W_k": 2 * b * n_kv * d * d,  # (b*n_kv, d) @ (d, d)
        "W_v": 2 * b * n_kv * d * d,
        "scores": 2 * b * num_heads * n_q * n_kv * head_dim,  # (b*h, n_q, head_dim) @ (b*h, head_dim, n_kv)
        "weights @ values": 2 * b * num_heads * n_q * n_kv * head_dim,  # (b*h, n_q, n_kv) @ (b*h, n_kv, head_dim)
        "W_o": 2 * b * n_q * d * d,
    }
    flops["total"] = sum(flops.values())
    return flops


def score_bytes(batch_size: int, num_heads: int, num_queries: int, num_kvpairs: int,
                dtype: torch.dtype = torch.float32) -> int:
    """Bytes of one score tensor ``(batch_size * num_heads, num_queries, num_kvpairs)`` in ``dtype``.

    The weights after the softmax take as many again; PyTorch's fused kernel stores neither.
    """
    for name, value in (("batch_size", batch_size), ("num_heads", num_heads), ("num_queries", num_queries),
                        ("num_kvpairs", num_kvpairs)):
        require_positive_int(name, value)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    return batch_size * num_heads * num_queries * num_kvpairs * dtype.itemsize
