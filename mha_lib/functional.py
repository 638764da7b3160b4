"""The functional core: masked softmax, dot-product attention and the reshapes that fold attention heads
into the batch axis.

Dimension names (those of the d2l book):

    batch_size   sequences (sentences) in a batch
    num_queries  positions that ask: the length of the query sequence
    num_kvpairs  key-value pairs that answer: the length of the key/value sequence
    num_hiddens  features of the projected queries, keys and values, all heads together
    num_heads    attention heads
    head_dim     features per head, num_hiddens // num_heads

Each public function checks its arguments, then calls the private function of the same name, which
trusts them; the layers in :mod:`mha_lib.modules` check their inputs once and call the private ones.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from ._validation import (
    require_bool_mask,
    require_merge_input,
    require_qk_features,
    require_qkv,
    require_split_input,
    require_tensor,
)
from .masks import attention_mask

__all__ = ["dot_product_attention", "masked_softmax", "transpose_output", "transpose_qkv"]


def masked_softmax(X: Tensor, valid_lens: Tensor | None = None) -> Tensor:
    """Softmax over the last axis that gives every masked key-value pair exactly zero weight.

    Only the first ``valid_lens`` key-value pairs of a row take part. A row with
    valid length 0 attends to nothing: all its weights are 0 (not NaN, and not
    spread evenly over padding). ``X`` itself is left unchanged.

    Shape:
        - X: ``(batch_size, num_queries, num_kvpairs)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
        - output: same as ``X``
    """
    require_tensor("X", X, 3, "(batch_size, num_queries, num_kvpairs)")
    batch_size, num_queries, num_kvpairs = X.shape
    mask = attention_mask(batch_size, num_queries, num_kvpairs, valid_lens, device=X.device)
    return _masked_softmax(X, mask)


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
    those before dropout. (PyTorch's ``F.scaled_dot_product_attention`` takes
    other arguments and returns the output alone.)

    Shape:
        - queries: ``(..., num_queries, d)``
        - keys: ``(..., num_kvpairs, d)``
        - values: ``(..., num_kvpairs, value_dim)``
        - mask: boolean, broadcastable to ``(..., num_queries, num_kvpairs)``
        - output: ``(..., num_queries, value_dim)``
        - weights: ``(..., num_queries, num_kvpairs)``
    """
    require_qkv(queries, keys, values)
    require_qk_features(queries, keys)
    if mask is not None:
        scores_shape = (*queries.shape[:-1], keys.shape[-2])
        require_bool_mask("mask", mask, scores_shape, "the scores' shape (..., num_queries, num_kvpairs)")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)) or not 0 <= dropout_p < 1:
        raise ValueError(f"dropout_p must be a probability in [0, 1), got {dropout_p!r}")
    return _dot_product_attention(queries, keys, values, mask, dropout_p)


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
    return _transpose_qkv(X, num_heads)


def transpose_output(X: Tensor, num_heads: int) -> Tensor:
    """Undo :func:`transpose_qkv`: unfold the heads from the batch axis and concatenate them.

    In einops notation: ``'(b h) n d -> b n (h d)'``.

    Shape:
        - X: ``(batch_size * num_heads, seq_len, head_dim)``
        - output: ``(batch_size, seq_len, num_heads * head_dim)``
    """
    require_merge_input(X, num_heads)
    return _transpose_output(X, num_heads)


# The same computations for arguments that were checked already.

def _dot_product_attention(queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None,
                           dropout_p: float) -> tuple[Tensor, Tensor]:
    dtype = queries.dtype
    half = dtype in (torch.float16, torch.bfloat16)
    if half:
        # Scores of half-precision inputs overflow 65504 easily; like PyTorch's reference (math) kernel,
        # compute in float32 and round the results back.
        queries, keys, values = queries.float(), keys.float(), values.float()
    scale = 1 / math.sqrt(queries.shape[-1])
    bias = None if mask is None else _mask_bias(mask, queries.dtype)
    # (..., queries, d) @ (..., d, kvpairs) -> (..., queries, kvpairs)
    if queries.dim() == 3:
        # bias + scale * queries @ keys^T in one call (beta=0 ignores the bias), as nn.MultiheadAttention does
        scores = torch.baddbmm(queries.new_zeros(()) if bias is None else bias, queries, keys.transpose(1, 2),
                               beta=0 if bias is None else 1, alpha=scale)
    else:
        scores = (queries * scale) @ keys.transpose(-2, -1)
        scores = scores if bias is None else scores + bias
    weights = _softmax_of_scores(scores, mask)
    attended = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    # (..., queries, kvpairs) @ (..., kvpairs, value_dim) -> (..., queries, value_dim)
    output = attended @ values
    return (output.to(dtype), weights.to(dtype)) if half else (output, weights)


def _masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis that is exactly 0 wherever ``mask`` is False."""
    return _softmax_of_scores(scores if mask is None else scores + _mask_bias(mask, scores.dtype), mask)


def _mask_bias(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """0 where ``mask`` lets a query see a key, the dtype's most negative number where it hides one.

    Added to the scores, the bias pushes a hidden key's weight to exactly 0. The most negative number,
    not -1e9 (outside float16's range) and not -inf (a row with every key hidden would then give 0/0 =
    NaN, and NaN gradients). Adding rather than overwriting the score keeps a NaN a NaN, as PyTorch's
    kernels do: masks choose weights, they do not clean the numbers.
    """
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, torch.finfo(dtype).min)


def _softmax_of_scores(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax of scores that already carry the mask's bias; 0 in a row where the mask hides every key."""
    weights = F.softmax(scores, dim=-1)
    # Such a row would spread its weight evenly over the hidden keys: it attends to nothing, so 0. On the
    # CPU a look at the small mask tells whether any row is empty, which is cheaper than touching every weight.
    if mask is not None and (mask.device.type != "cpu" or not mask.any(-1).all()):
        weights = torch.where(mask, weights, 0.0)
    return weights


def _transpose_qkv(X: Tensor, num_heads: int) -> Tensor:
    batch_size, seq_len, num_hiddens = X.shape
    X = X.reshape(batch_size, seq_len, num_heads, num_hiddens // num_heads)  # (b, n, h*d) -> (b, n, h, d)
    X = X.permute(0, 2, 1, 3)  # (b, n, h, d) -> (b, h, n, d)
    return X.reshape(batch_size * num_heads, seq_len, num_hiddens // num_heads)  # -> (b*h, n, d)


def _transpose_output(X: Tensor, num_heads: int) -> Tensor:
    folded, seq_len, head_dim = X.shape
    X = X.reshape(folded // num_heads, num_heads, seq_len, head_dim)  # (b*h, n, d) -> (b, h, n, d)
    X = X.permute(0, 2, 1, 3)  # (b, h, n, d) -> (b, n, h, d)
    return X.reshape(folded // num_heads, seq_len, num_heads * head_dim)  # -> (b, n, h*d)
