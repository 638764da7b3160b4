"""The functional core: masked softmax, scaled dot-product attention and the
reshapes that fold attention heads into the batch axis.

Dimension names (those of the d2l book):

    batch_size   sequences (sentences) in a batch
    num_queries  positions that ask: the length of the query sequence
    num_kvpairs  key-value pairs that answer: the length of the key/value sequence
    num_hiddens  features of the projected queries, keys and values, all heads together
    num_heads    attention heads
    head_dim     features per head, num_hiddens // num_heads
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from ._validation import require_bool_mask, require_merge_input, require_qkv, require_split_input, require_tensor
from .masks import attention_mask

__all__ = ["masked_softmax", "dot_product_attention", "transpose_output", "transpose_qkv"]


def masked_softmax(X: Tensor, valid_lens: Tensor | None = None) -> Tensor:
    """Softmax over the last axis that gives every masked key-value pair exactly zero weight.

    Only the first ``valid_lens`` key-value pairs of a row take part. A row with
    valid length 0 attends to nothing: all its weights are 0 (not NaN, and not
    spread evenly over padding). ``X`` itself is left unchanged.

    Shape:
        - X: ``(batch_size, num_queries, num_kvpairs)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, integer
        - output: same as ``X``
    """
    require_tensor("X", X, 3, "(batch_size, num_queries, num_kvpairs)")
    batch_size, num_queries, num_kvpairs = X.shape
    mask = attention_mask(batch_size, num_queries, num_kvpairs, valid_lens, device=X.device)
    return _softmax_where(X, mask)


def dot_product_attention(
    queries: Tensor,
    keys: Tensor,
    values: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """Compute ``softmax(queries @ keys^T / sqrt(d)) @ values``; return the output and the weights.

    ``mask`` is boolean with True = may attend, as in
    ``torch.nn.functional.scaled_dot_product_attention``. A query that may
    attend to no key gets all-zero weights and a zero output. With
    ``dropout_p > 0`` each weight is dropped with that probability before it
    multiplies the values (pass 0 in evaluation); the returned weights are
    those before dropout.

    Shape:
        - queries: ``(..., num_queries, d)``
        - keys: ``(..., num_kvpairs, d)``
        - values: ``(..., num_kvpairs, value_dim)``
        - mask: boolean, broadcastable to ``(..., num_queries, num_kvpairs)``
        - output: ``(..., num_queries, value_dim)``
        - weights: ``(..., num_queries, num_kvpairs)``
    """
    require_qkv(queries, keys, values)
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            "queries and keys must have the same number of features d to take dot products, "
            f"got queries {tuple(queries.shape)} and keys {tuple(keys.shape)}"
        )
    d = queries.shape[-1]
    # Dividing the queries by sqrt(d) rather than the scores gives the same result with fewer divisions.
    # (..., queries, d) @ (..., d, kvpairs) -> (..., queries, kvpairs)
    scores = (queries / math.sqrt(d)) @ keys.transpose(-2, -1)
    if mask is not None:
        require_bool_mask("mask", mask, scores.shape, "the scores' shape (..., num_queries, num_kvpairs)")
    weights = _softmax_where(scores, mask)
    attended = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    # (..., queries, kvpairs) @ (..., kvpairs, value_dim) -> (..., queries, value_dim)
    return attended @ values, weights


def transpose_qkv(X: Tensor, num_heads: int) -> Tensor:
    """Split the features into ``num_heads`` heads and fold the heads into the batch axis.

    In einops notation: ``'b n (h d) -> (b h) n d'``. Along the new first axis
    the order is sequence 0 head 0, sequence 0 head 1, ..., sequence 1 head 0, ...
    Only elements move, so any dtype works, integers included.

    Shape:
        - X: ``(batch_size, seq_len, num_hiddens)``
        - output: ``(batch_size * num_heads, seq_len, num_hiddens // num_heads)``
    """
    require_split_input(X, num_heads)
    batch_size, seq_len, num_hiddens = X.shape
    X = X.reshape(batch_size, seq_len, num_heads, num_hiddens // num_heads)  # (b, n, h*d) -> (b, n, h, d)
    X = X.permute(0, 2, 1, 3)  # (b, n, h, d) -> (b, h, n, d)
    return X.reshape(batch_size * num_heads, seq_len, num_hiddens // num_heads)  # -> (b*h, n, d)


def transpose_output(X: Tensor, num_heads: int) -> Tensor:
    """Undo :func:`transpose_qkv`: unfold the heads from the batch axis and concatenate them.

    In einops notation: ``'(b h) n d -> b n (h d)'``.

    Shape:
        - X: ``(batch_size * num_heads, seq_len, head_dim)``
        - output: ``(batch_size, seq_len, num_heads * head_dim)``
    """
    require_merge_input(X, num_heads)
    folded, seq_len, head_dim = X.shape
    X = X.reshape(folded // num_heads, num_heads, seq_len, head_dim)  # (b*h, n, d) -> (b, h, n, d)
    X = X.permute(0, 2, 1, 3)  # (b, h, n, d) -> (b, n, h, d)
    return X.reshape(folded // num_heads, seq_len, num_heads * head_dim)  # -> (b, n, h*d)


def _softmax_where(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis that is exactly 0 wherever ``mask`` is False."""
    if mask is None:
        return F.softmax(scores, dim=-1)
    hidden = ~mask
    # The dtype's most negative number, not -1e9: -1e9 overflows to -inf in float16.
    scores = scores.masked_fill(hidden, torch.finfo(scores.dtype).min)  # out of place
    # A row with every key hidden would otherwise spread its weight evenly over them.
    return F.softmax(scores, dim=-1).masked_fill(hidden, 0.0)

