"""Grouped-query attention: query heads that share fewer key-value heads.

Dimension names as in :mod:`mha_lib.functional`, plus two:

    num_kv_heads  key-value heads; it divides num_heads. 1 is multi-query attention (MQA),
                  num_heads is ordinary multi-head attention (MHA)
    num_groups    query heads per key-value head, num_heads // num_kv_heads

Query head ``i`` reads key-value head ``i // num_groups``: the heads of one group sit next to
each other, as in ``F.scaled_dot_product_attention(..., enable_gqa=True)`` and the GQA paper
(Ainslie et al. 2023, arXiv:2305.13245).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._validation import (
    require_bool,
    require_dropout,
    require_heads_divide,
    require_kv_heads_divide,
    require_layer_inputs,
    require_positive_int,
    require_tensor,
)
from .functional import _dot_product_attention
from .masks import attention_mask
from .modules import MultiHeadAttention

__all__ = ["GroupedQueryAttention", "kv_head_of", "mha_to_gqa", "repeat_kv_heads"]


def repeat_kv_heads(X: Tensor, num_groups: int) -> Tensor:
    """Repeat every key-value head ``num_groups`` times in place, so each query head has its own copy.

    In einops notation: ``'b g n d -> b (g r) n d'`` with ``r = num_groups``: heads
    ``[k0, k1]`` become ``[k0, k0, k1, k1]`` (``repeat_interleave``), not ``[k0, k1, k0, k1]``
    (``repeat``), because query heads ``0..r-1`` form the group of key-value head 0.

    Shape:
        - X: ``(batch_size, num_kv_heads, num_kvpairs, head_dim)``
        - output: ``(batch_size, num_kv_heads * num_groups, num_kvpairs, head_dim)``
    """
    require_tensor("X", X, 4, "(batch_size, num_kv_heads, num_kvpairs, head_dim)", floating=False)
    require_positive_int("num_groups", num_groups)
    return _repeat_kv_heads(X, num_groups)


def _repeat_kv_heads(X: Tensor, num_groups: int) -> Tensor:
    """:func:`repeat_kv_heads` without the argument checks, for callers that made them already."""
    return X.repeat_interleave(num_groups, dim=1)  # (b, g, n, d) -> (b, g*r, n, d)


def kv_head_of(query_head: int, num_heads: int, num_kv_heads: int) -> int:
    """The key-value head that query head ``query_head`` reads: ``query_head // (num_heads // num_kv_heads)``."""
    require_positive_int("num_heads", num_heads)
    require_kv_heads_divide(num_heads, num_kv_heads)
    if isinstance(query_head, bool) or not isinstance(query_head, int) or not 0 <= query_head < num_heads:
        raise ValueError(f"query_head must be an int in [0, {num_heads - 1}], got {query_head!r}")
    return query_head // (num_heads // num_kv_heads)


class GroupedQueryAttention(nn.Module):
    """Multi-head attention whose ``num_heads`` query heads share ``num_kv_heads`` key-value heads.

    ``W_q`` and ``W_o`` are those of :class:`~mha_lib.MultiHeadAttention`; ``W_k`` and ``W_v``
    project to ``num_kv_heads * head_dim`` features only, so the keys and values (and a
    KV cache of them) are ``num_heads // num_kv_heads`` times smaller. ``forward`` takes the
    arguments of ``MultiHeadAttention.forward``; with ``need_weights=True`` the weights of the
    last call stay in ``.attention_weights``, shaped ``(batch_size, num_heads, num_queries,
    num_kvpairs)``, and with ``need_weights=False`` PyTorch's fused kernel runs with
    ``enable_gqa=True``, without copying the key-value heads.

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_size)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
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
        num_kv_heads: int,
        dropout: float = 0.0,
        bias: bool = False,
    ) -> None:
        super().__init__()
        for name, size in (("key_size", key_size), ("query_size", query_size),
                           ("value_size", value_size), ("num_hiddens", num_hiddens)):
            require_positive_int(name, size)
        self.num_heads = require_positive_int("num_heads", num_heads)
        require_heads_divide(num_hiddens, num_heads)
        self.num_kv_heads = require_kv_heads_divide(num_heads, num_kv_heads)
        self.num_groups = num_heads // num_kv_heads  # query heads per key-value head
        self.head_dim = self.v_head_dim = num_hiddens // num_heads
        self.query_size, self.key_size, self.value_size = query_size, key_size, value_size
        self.W_q = nn.Linear(query_size, num_heads * self.head_dim, bias=bias)
        self.W_k = nn.Linear(key_size, num_kv_heads * self.head_dim, bias=bias)  # fewer heads than W_q
        self.W_v = nn.Linear(value_size, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(num_heads * self.head_dim, num_hiddens, bias=bias)
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
        require_layer_inputs(queries, keys, values, (self.query_size, self.key_size, self.value_size), self.W_q.weight)
        require_bool("need_weights", need_weights)
        batch_size, num_queries, _ = queries.shape
        num_kvpairs = keys.shape[1]
        mask = attention_mask(batch_size, num_queries, num_kvpairs, valid_lens,
                              causal=causal, attn_mask=attn_mask, device=queries.device)
        if mask is not None:
            mask = mask.unsqueeze(1)  # (batch or 1, queries or 1, kvpairs) -> (batch or 1, 1, ...): all heads

        # (batch, seq, heads*head_dim) -> (batch, seq, heads, head_dim) -> (batch, heads, seq, head_dim)
        queries = self.W_q(queries).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        # (batch, kvpairs, kv_heads*head_dim) -> (batch, kv_heads, kvpairs, head_dim)
        keys = self.W_k(keys).unflatten(-1, (self.num_kv_heads, self.head_dim)).transpose(1, 2)
        values = self.W_v(values).unflatten(-1, (self.num_kv_heads, self.head_dim)).transpose(1, 2)
        output = self.attend(queries, keys, values, mask, need_weights=need_weights)
        # (batch, heads, queries, head_dim) -> (batch, queries, heads*head_dim) -> (batch, queries, num_hiddens)
        return self.W_o(output.transpose(1, 2).flatten(2))

    def attend(self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None, *,
               need_weights: bool = True) -> Tensor:
        """Attention of projected, head-split tensors; ``.attention_weights`` as in ``forward``.

        Shape:
            - queries: ``(batch_size, num_heads, num_queries, head_dim)``
            - keys, values: ``(batch_size, num_kv_heads, num_kvpairs, head_dim)``
            - mask: boolean, broadcastable to ``(batch_size, num_heads, num_queries, num_kvpairs)``, or None
            - output: ``(batch_size, num_heads, num_queries, head_dim)``
        """
        dropout_p = self.dropout.p if self.training else 0.0
        if not need_weights:
            self.attention_weights = None
            return F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask, dropout_p=dropout_p,
                                                  enable_gqa=True)
        # (batch, kv_heads, kvpairs, head_dim) -> (batch, heads, kvpairs, head_dim): one copy per query head
        keys, values = _repeat_kv_heads(keys, self.num_groups), _repeat_kv_heads(values, self.num_groups)
        output, weights = _dot_product_attention(queries, keys, values, mask, dropout_p)
        self.attention_weights = weights.detach()
        return output


def mha_to_gqa(mha: MultiHeadAttention, num_kv_heads: int) -> GroupedQueryAttention:
    """Convert a multi-head layer into grouped-query attention by mean-pooling the key-value heads of each group.

    This is the GQA paper's recipe (Ainslie et al. 2023, section 2.1): ``W_q`` and ``W_o`` are
    copied, and the ``W_k``/``W_v`` rows (and biases) of the ``num_heads // num_kv_heads`` heads
    of a group are averaged into the group's one head. With ``num_kv_heads == num_heads``
    nothing is averaged and the layer computes exactly what ``mha`` does.

    Shape:
        - ``mha.W_k.weight``: ``(num_heads * head_dim, key_size)`` -> ``(num_kv_heads * head_dim, key_size)``
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha must be a mha_lib.MultiHeadAttention, got {type(mha).__name__}")
    num_heads, head_dim = mha.num_heads, mha.head_dim
    num_hiddens = mha.W_o.out_features
    if head_dim != mha.v_head_dim or num_heads * head_dim != num_hiddens:
        raise ValueError(
            "mha_to_gqa needs heads of num_hiddens // num_heads features for queries, keys and values, got "
            f"head_dim={head_dim}, v_head_dim={mha.v_head_dim}, num_hiddens={num_hiddens}, num_heads={num_heads}"
        )
    require_kv_heads_divide(num_heads, num_kv_heads)
    num_groups = num_heads // num_kv_heads
    bias = mha.W_q.bias is not None
    gqa = GroupedQueryAttention(mha.W_k.in_features, mha.W_q.in_features, mha.W_v.in_features, num_hiddens,
                                num_heads, num_kv_heads, mha.dropout.p, bias)
    gqa = gqa.to(dtype=mha.W_q.weight.dtype, device=mha.W_q.weight.device)

    def pool(tensor: Tensor) -> Tensor:
        # rows (heads*head_dim, ...) -> (kv_heads, groups, head_dim, ...) -> mean over groups -> (kv_heads*head_dim, ..)
        grouped = tensor.reshape(num_kv_heads, num_groups, head_dim, *tensor.shape[1:])
        return grouped.mean(dim=1).reshape(num_kv_heads * head_dim, *tensor.shape[1:])

    with torch.no_grad():
        for name in ("W_q", "W_o"):
            getattr(gqa, name).load_state_dict(getattr(mha, name).state_dict())
        for name in ("W_k", "W_v"):
            source, target = getattr(mha, name), getattr(gqa, name)
            target.weight.copy_(pool(source.weight))
            if bias:
                target.bias.copy_(pool(source.bias))
    return gqa.train(mha.training)
