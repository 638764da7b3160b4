"""The functional core: the masked softmax, dot-product attention, and the reshapes that give every attention
head its own slice of the features. The layers of :mod:`mha_lib.modules` add their projections (and
AdditiveAttention its scores); the masks they take are built in :mod:`mha_lib.masks`.

Dimension names (those of the d2l book):

    batch_size   sequences (sentences) in a batch
    num_queries  positions that ask: the length of the query sequence
    num_kvpairs  key-value pairs that answer: the length of the key/value sequence
    num_hiddens  features of the projected queries, keys and values, all heads together
    num_heads    attention heads
    head_dim     features per head of the queries and keys, num_hiddens // num_heads by default
    v_head_dim   features per head of the values, num_hiddens // num_heads by default

Masks are boolean, True = "this query may attend to this key" (see :mod:`mha_lib.masks`).

The file reads top to bottom: first the computations, which trust their arguments (a layer checks its inputs
once, at the top of ``forward``, and calls them), then the public functions, which check their arguments and
call the computations. A computation named ``_x`` is the public ``x`` without its checks.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from ._validation import (
    VALID_LENS_SHAPES,
    require_bool_mask,
    require_device,
    require_dropout,
    require_merge_input,
    require_qk_features,
    require_qkv,
    require_split_input,
    require_tensor,
    require_valid_lens,
)
from .i18n import N_
from .masks import _attention_mask

__all__ = ["dot_product_attention", "masked_softmax", "transpose_output", "transpose_qkv"]


# ----- the computations ------------------------------------------------------------------------------------------


def split_heads(X: Tensor, num_heads: int) -> Tensor:
    """Give every head its own slice of the features, on an axis of its own: ``'b n (h d) -> b h n d'`` (a view).

    Head ``i`` takes features ``i * d`` to ``(i + 1) * d - 1``. Every layer splits its heads with it.
    """
    batch_size, seq_len, num_hiddens = X.shape
    X = X.reshape(batch_size, seq_len, num_heads, num_hiddens // num_heads)  # (b, n, h*d) -> (b, n, h, d)
    return X.permute(0, 2, 1, 3)  # (b, n, h, d) -> (b, h, n, d)


def merge_heads(X: Tensor) -> Tensor:
    """Undo :func:`split_heads`: concatenate the heads' features again, ``'b h n d -> b n (h d)'`` (a copy)."""
    batch_size, num_heads, seq_len, head_dim = X.shape
    X = X.permute(0, 2, 1, 3)  # (b, h, n, d) -> (b, n, h, d)
    return X.reshape(batch_size, seq_len, num_heads * head_dim)  # (b, n, h, d) -> (b, n, h*d)


def fold_heads(X: Tensor) -> Tensor:
    """Fold the heads into the batch axis, as d2l does: ``'b h n d -> (b h) n d'``, sequence 0's heads first."""
    return X.reshape(-1, X.shape[2], X.shape[3])  # (b, h, n, d) -> (b*h, n, d), a copy of split heads


def _softmax_with_mask(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis that gives every key ``mask`` hides exactly zero weight.

    A hidden score is replaced by -inf, whose exponential is exactly 0: replaced, not added to, so that whatever
    it was (a huge number, +-inf, NaN) cannot reach the visible weights, and -inf rather than a large negative
    number (-1e9 is outside float16's range; even the dtype's most negative number ties with a visible score
    there). A row whose every key is hidden comes out of the softmax as 0/0 = NaN; the last step sets every hidden
    weight to exactly 0, so it attends to nothing, and neither its output nor any gradient sees a NaN (the
    gradient of ``torch.where`` reaches the scores of visible keys only). A NaN or inf among the visible scores
    stays, as in ``F.softmax``.
    """
    if mask is None:
        return F.softmax(scores, dim=-1)
    weights = F.softmax(torch.where(mask, scores, -math.inf), dim=-1)  # a hidden key: exp(-inf) = 0
    return torch.where(mask, weights, 0.0)  # a row with nothing visible: NaN -> 0


def _dot_product_attention(queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None,
                           dropout_p: float) -> tuple[Tensor, Tensor]:
    """``softmax(queries @ keys^T / sqrt(d)) @ values`` with a mask and dropout; the output and the weights."""
    dtype = queries.dtype
    half = dtype in (torch.float16, torch.bfloat16)
    if half:
        # Scores of half-precision inputs overflow 65504 easily; like PyTorch's reference (math) kernel,
        # compute in float32 and round the results back.
        queries, keys, values = queries.float(), keys.float(), values.float()
    # (..., queries, d) @ (..., d, kvpairs) -> (..., queries, kvpairs)
    scores = (queries * (1 / math.sqrt(queries.shape[-1]))) @ keys.transpose(-2, -1)
    weights = _softmax_with_mask(scores, mask)
    attended = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    output = attended @ values  # (..., queries, kvpairs) @ (..., kvpairs, value_dim) -> (..., queries, value_dim)
    return (output.to(dtype), weights.to(dtype)) if half else (output, weights)


# ----- the public functions: check, then compute -----------------------------------------------------------------


def masked_softmax(X: Tensor, valid_lens: Tensor | None = None) -> Tensor:
    """d2l's ``masked_softmax``: softmax over the last axis that gives every masked key-value pair exactly zero weight.

    Only the first ``valid_lens`` key-value pairs of a row take part; a length above ``num_kvpairs`` counts as
    ``num_kvpairs``, as in d2l. A row with valid length 0 attends to nothing: all its weights are 0 (not NaN,
    and not spread evenly over padding, as d2l's are). ``X`` itself is left unchanged. It builds the mask of
    :func:`mha_lib.valid_lens_mask` and applies it as the layers do.

    Shape:
        - X: ``(batch_size, num_queries, num_kvpairs)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
        - output: same as ``X``
    """
    require_tensor("X", X, 3, "(batch_size, num_queries, num_kvpairs)")
    batch_size, num_queries, num_kvpairs = X.shape
    if valid_lens is not None:
        require_valid_lens(valid_lens, ((batch_size,), (batch_size, num_queries)), VALID_LENS_SHAPES)
        require_device("valid_lens", valid_lens, X.device, other="X")
    return _softmax_with_mask(X, _attention_mask(num_queries, num_kvpairs, valid_lens, False, None, X.device))


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
        require_bool_mask("mask", mask, scores_shape, N_("the scores' shape (..., num_queries, num_kvpairs)"))
        require_device("mask", mask, queries.device)
    return _dot_product_attention(queries, keys, values, mask, require_dropout(dropout_p, "dropout_p"))


def transpose_qkv(X: Tensor, num_heads: int) -> Tensor:
    """d2l's ``transpose_qkv``: split the features into ``num_heads`` heads and fold the heads into the batch axis.

    In einops notation: ``'b n (h d) -> (b h) n d'``, :func:`split_heads` then :func:`fold_heads`. Along the new
    first axis the order is sequence 0 head 0, sequence 0 head 1, ..., sequence 1 head 0, ...
    Only elements move, so any dtype works, integers included.

    Shape:
        - X: ``(batch_size, seq_len, num_hiddens)``
        - output: ``(batch_size * num_heads, seq_len, num_hiddens // num_heads)``
    """
    require_split_input(X, num_heads)
    return fold_heads(split_heads(X, num_heads))


def transpose_output(X: Tensor, num_heads: int) -> Tensor:
    """d2l's ``transpose_output``: undo :func:`transpose_qkv`, unfold the heads from the batch axis and join them.

    In einops notation: ``'(b h) n d -> b n (h d)'``: the folded axis split in two, then :func:`merge_heads`.

    Shape:
        - X: ``(batch_size * num_heads, seq_len, head_dim)``
        - output: ``(batch_size, seq_len, num_heads * head_dim)``
    """
    require_merge_input(X, num_heads)
    return merge_heads(X.reshape(-1, num_heads, X.shape[1], X.shape[2]))  # (b*h, n, d) -> (b, h, n, d) -> (b, n, h*d)
