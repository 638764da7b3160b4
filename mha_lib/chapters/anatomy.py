"""The anatomy of multi-head attention (chapter 04): a shape trace, parameter and FLOP counts.

Dimension names are those of :mod:`mha_lib.functional`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from .._validation import require_features, require_heads_divide, require_layer_dtype, require_positive_int, require_qkv
from ..functional import dot_product_attention, transpose_output, transpose_qkv
from ..masks import attention_mask
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
    """Run the steps of ``mha``'s forward pass one by one and record each result with its shape.

    The steps are those of ``mha(queries, keys, values, valid_lens, causal=causal)``
    with ``need_weights=True``, so the last row holds the same output. The trace runs
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
    require_qkv(queries, keys, values, rank=3)
    require_features("queries", queries, mha.W_q.in_features, "query_size")
    require_features("keys", keys, mha.W_k.in_features, "key_size")
    require_features("values", values, mha.W_v.in_features, "value_size")
    require_layer_dtype("queries", queries, mha.W_q.weight)
    batch_size, num_queries, _ = queries.shape
    num_kvpairs = keys.shape[1]
    num_heads, head_dim = mha.num_heads, mha.head_dim
    rows: list[TraceRow] = []

    def record(step: str, operation: str, tensor: Tensor) -> Tensor:
        rows.append(TraceRow(step, operation, tuple(tensor.shape), tensor))
        return tensor

    with torch.no_grad():
        for name, X in (("queries", queries), ("keys", keys), ("values", values)):
            record("input", name, X)
        mask = attention_mask(batch_size, num_queries, num_kvpairs, valid_lens,
                              causal=causal, device=queries.device)

        # (batch, queries or kvpairs, *_size) -> (batch, queries or kvpairs, num_hiddens)
        Q = record("1 project", "W_q(queries)", mha.W_q(queries))
        K = record("1 project", "W_k(keys)", mha.W_k(keys))
        V = record("1 project", "W_v(values)", mha.W_v(values))
        # (batch, queries or kvpairs, num_hiddens) -> (batch*heads, queries or kvpairs, head_dim)
        Q = record("  split heads", f"transpose_qkv(queries, {num_heads})", transpose_qkv(Q, num_heads))
        K = record("  split heads", f"transpose_qkv(keys, {num_heads})", transpose_qkv(K, num_heads))
        V = record("  split heads", f"transpose_qkv(values, {num_heads})", transpose_qkv(V, num_heads))
        if mask is not None:
            sources = [name for name, given in (("valid_lens", valid_lens is not None), ("causal", causal)) if given]
            operation = " & ".join(sources) + " -> mask"
            if mask.size(0) > 1:
                # (batch, queries or 1, kvpairs) -> (batch*heads, queries or 1, kvpairs)
                mask = mask.repeat_interleave(num_heads, dim=0)
                operation += ", repeated per head"
            record("  mask", operation, mask)

        # Divided as in dot_product_attention, so the numbers are the module's to the last bit.
        # (batch*heads, queries, head_dim) @ (batch*heads, head_dim, kvpairs) -> (batch*heads, queries, kvpairs)
        record("2 score", f"queries @ keys^T / sqrt({head_dim})", (Q / math.sqrt(head_dim)) @ K.transpose(1, 2))
        output, weights = dot_product_attention(Q, K, V, mask, mha.dropout.p if mha.training else 0.0)
        record("3 softmax", "masked softmax over keys" if mask is not None else "softmax over keys", weights)
        record("3 weighted sum", "weights @ values", output)  # -> (batch*heads, queries, head_dim)
        # (batch*heads, queries, head_dim) -> (batch, queries, num_hiddens)
        concat = record("4 concatenate", f"transpose_output(heads, {num_heads})", transpose_output(output, num_heads))
        record("5 output projection", "W_o(concatenated)", mha.W_o(concat))
    return rows


def format_trace(rows: list[TraceRow]) -> str:
    """Lay out a trace from :func:`trace_multi_head_attention` as a table of step, operation and shape."""
    for number, row in enumerate(rows):
        if not isinstance(row, TraceRow):
            raise TypeError(f"rows must be TraceRows from trace_multi_head_attention, row {number} is a "
                            f"{type(row).__name__}")
    return format_table([(row.step, row.operation, row.shape) for row in rows], ["step", "operation", "shape"])


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
