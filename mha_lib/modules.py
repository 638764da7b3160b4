"""Attention layers with the d2l book's names and signatures.

Each layer only projects, folds heads and calls the functional core in
:mod:`mha_lib.functional`; see there for the dimension names.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._validation import (
    require_dropout,
    require_features,
    require_heads_divide,
    require_layer_dtype,
    require_positive_int,
    require_qkv,
)
from .functional import dot_product_attention, masked_softmax, transpose_output, transpose_qkv
from .masks import attention_mask

__all__ = ["AdditiveAttention", "DotProductAttention", "GeneralMultiHeadAttention", "MultiHeadAttention"]


class DotProductAttention(nn.Module):
    """Scaled dot-product attention; the weights of the last call stay in ``.attention_weights``.

    Shape:
        - queries: ``(batch_size, num_queries, d)``
        - keys: ``(batch_size, num_kvpairs, d)``
        - values: ``(batch_size, num_kvpairs, value_dim)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, integer
        - output: ``(batch_size, num_queries, value_dim)``
    """

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(require_dropout(dropout))
        self.attention_weights: Tensor | None = None

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor | None = None) -> Tensor:
        require_qkv(queries, keys, values, rank=3)
        batch_size, num_queries, _ = queries.shape
        num_kvpairs = keys.shape[1]
        mask = attention_mask(batch_size, num_queries, num_kvpairs, valid_lens, device=queries.device)
        output, self.attention_weights = dot_product_attention(
            queries, keys, values, mask, self.dropout.p if self.training else 0.0)
        return output


class AdditiveAttention(nn.Module):
    """Additive attention: the score is ``w_v . tanh(W_q q + W_k k)``, so queries and keys may differ in size.

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_dim)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, integer
        - output: ``(batch_size, num_queries, value_dim)``
    """

    def __init__(self, key_size: int, query_size: int, num_hiddens: int, dropout: float = 0.0) -> None:
        super().__init__()
        for name, size in (("key_size", key_size), ("query_size", query_size), ("num_hiddens", num_hiddens)):
            require_positive_int(name, size)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(require_dropout(dropout))
        self.attention_weights: Tensor | None = None

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor | None = None) -> Tensor:
        require_qkv(queries, keys, values, rank=3)
        require_features("queries", queries, self.W_q.in_features, "query_size")
        require_features("keys", keys, self.W_k.in_features, "key_size")
        require_layer_dtype("queries", queries, self.W_q.weight)
        # Every query meets every key by broadcasting:
        # (batch, queries, 1, hiddens) + (batch, 1, kvpairs, hiddens) -> (batch, queries, kvpairs, hiddens)
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)  # (batch, queries, kvpairs, 1) -> (batch, queries, kvpairs)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return self.dropout(self.attention_weights) @ values  # -> (batch, queries, value_dim)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: ``num_heads`` scaled dot-product attentions side by side, then mixed by ``W_o``.

    Each head works on ``head_dim = num_hiddens // num_heads`` features, so the
    parameter count does not depend on ``num_heads``. With ``need_weights=True``
    the weights of the last call stay in ``.attention_weights``, shaped
    ``(batch_size, num_heads, num_queries, num_kvpairs)``; with
    ``need_weights=False`` PyTorch's fused kernel computes the same output
    without storing them.

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_size)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, integer
        - attn_mask: boolean (True = may attend), broadcastable to ``(batch_size, num_queries, num_kvpairs)``
        - output: ``(batch_size, num_queries, num_hiddens)``
    """

    def __init__(
        self,
        key_size: int,
        query_size: int,
        value_size: int,
        num_hiddens: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = False,
        *,
        head_dim: int | None = None,
        v_head_dim: int | None = None,
    ) -> None:
        super().__init__()
        for name, size in (("key_size", key_size), ("query_size", query_size),
                           ("value_size", value_size), ("num_hiddens", num_hiddens)):
            require_positive_int(name, size)
        self.num_heads = require_positive_int("num_heads", num_heads)
        if head_dim is None or v_head_dim is None:
            require_heads_divide(num_hiddens, num_heads)
        # Features per head: of the queries and keys (they meet in dot products), and of the values.
        self.head_dim = num_hiddens // num_heads if head_dim is None else require_positive_int("head_dim", head_dim)
        self.v_head_dim = num_hiddens // num_heads if v_head_dim is None else require_positive_int(
            "v_head_dim", v_head_dim)
        self.W_q = nn.Linear(query_size, num_heads * self.head_dim, bias=bias)
        self.W_k = nn.Linear(key_size, num_heads * self.head_dim, bias=bias)
        self.W_v = nn.Linear(value_size, num_heads * self.v_head_dim, bias=bias)
        self.W_o = nn.Linear(num_heads * self.v_head_dim, num_hiddens, bias=bias)
        self.dropout = nn.Dropout(require_dropout(dropout))
        self.attention_weights: Tensor | None = None

    def forward(
        self,
        queries: Tensor,
        keys: Tensor,
        values: Tensor,
        valid_lens: Tensor | None = None,
        *,
        causal: bool = False,
        attn_mask: Tensor | None = None,
        need_weights: bool = True,
    ) -> Tensor:
        require_qkv(queries, keys, values, rank=3)
        require_features("queries", queries, self.W_q.in_features, "query_size")
        require_features("keys", keys, self.W_k.in_features, "key_size")
        require_features("values", values, self.W_v.in_features, "value_size")
        require_layer_dtype("queries", queries, self.W_q.weight)
        batch_size, num_queries, _ = queries.shape
        num_kvpairs = keys.shape[1]
        mask = attention_mask(batch_size, num_queries, num_kvpairs, valid_lens,
                              causal=causal, attn_mask=attn_mask, device=queries.device)

        # (batch, queries or kvpairs, *_size) -> (batch, queries or kvpairs, num_hiddens)
        queries, keys, values = self.W_q(queries), self.W_k(keys), self.W_v(values)
        if need_weights:
            output = self._attention_with_weights(queries, keys, values, mask)
        else:
            output = self._fused_attention(queries, keys, values, mask)
            self.attention_weights = None
        return self.W_o(output)  # mixes what the heads found; the shape stays (batch, queries, num_hiddens)

    def _attention_with_weights(self, queries: Tensor, keys: Tensor, values: Tensor,
                                mask: Tensor | None) -> Tensor:
        """All heads in one batched call, with the heads folded into the batch axis (d2l's layout)."""
        batch_size, num_queries, _ = queries.shape
        num_kvpairs = keys.shape[1]
        # (batch, queries or kvpairs, num_hiddens) -> (batch*heads, queries or kvpairs, head_dim)
        queries, keys, values = (transpose_qkv(X, self.num_heads) for X in (queries, keys, values))
        if mask is not None and mask.size(0) > 1:
            # The heads of one sequence sit next to each other on the folded axis, so each
            # sequence's mask is repeated in place: [m0, m0, m1, m1], not [m0, m1, m0, m1].
            # (batch, queries or 1, kvpairs) -> (batch*heads, queries or 1, kvpairs)
            mask = mask.repeat_interleave(self.num_heads, dim=0)
        dropout_p = self.dropout.p if self.training else 0.0
        output, weights = dot_product_attention(queries, keys, values, mask, dropout_p)
        # (batch*heads, queries, kvpairs) -> (batch, heads, queries, kvpairs)
        self.attention_weights = weights.reshape(batch_size, self.num_heads, num_queries, num_kvpairs)
        # (batch*heads, queries, head_dim) -> (batch, queries, num_hiddens)
        return transpose_output(output, self.num_heads)

    def _fused_attention(self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None) -> Tensor:
        """The same attention through PyTorch's fused kernel, which never stores the weights."""
        # The fused kernels take heads on an axis of their own, the 4-D layout of chapter 03;
        # these are views of the projections, nothing is copied.
        # (batch, seq, num_hiddens) -> (batch, seq, heads, head_dim) -> (batch, heads, seq, head_dim)
        queries, keys, values = (X.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)
                                 for X in (queries, keys, values))
        if mask is not None:
            # (batch, queries or 1, kvpairs) -> (batch, 1, queries or 1, kvpairs): one mask for all heads
            mask = mask.unsqueeze(1)
        dropout_p = self.dropout.p if self.training else 0.0
        output = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask, dropout_p=dropout_p)
        return output.transpose(1, 2).flatten(2)  # (batch, heads, queries, head_dim) -> (batch, queries, num_hiddens)


class GeneralMultiHeadAttention(MultiHeadAttention):
    """Multi-head attention whose heads have ``qk_size`` query/key features and ``v_size`` value features.

    Scores only need queries and keys of one size; the values may have another, and
    ``W_o`` maps the ``num_heads * v_size`` concatenated features to ``num_hiddens``.
    Only the widths of the four projections differ from :class:`~mha_lib.MultiHeadAttention`:
    the forward pass is inherited unchanged (masks, ``causal``, ``need_weights``), and
    ``head_dim`` is ``qk_size``, the size that sets the scale ``1/sqrt(qk_size)``. With
    ``qk_size = v_size = num_hiddens // num_heads`` it is the standard layer, with the same
    parameter names and shapes, so ``load_state_dict`` copies weights from one to the other.

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_size)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, integer
        - output: ``(batch_size, num_queries, num_hiddens)``
    """

    def __init__(
        self,
        key_size: int,
        query_size: int,
        value_size: int,
        num_hiddens: int,
        num_heads: int,
        qk_size: int,
        v_size: int,
        dropout: float = 0.0,
        bias: bool = False,
    ) -> None:
        super().__init__(key_size, query_size, value_size, num_hiddens, num_heads, dropout, bias,
                         head_dim=require_positive_int("qk_size", qk_size),
                         v_head_dim=require_positive_int("v_size", v_size))
        self.qk_size, self.v_size = qk_size, v_size
