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

import typing
from typing import Any

import torch
from torch import Tensor

from ._validation import (
    require_called,
    require_head_split,
    require_int,
    require_kv_heads_divide,
    require_positive_int,
    require_tensor,
    wrong_type,
)
from .functional import _dot_product_attention, fold_heads, split_heads
from .i18n import _
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
    num_heads = require_positive_int("num_heads", num_heads)
    num_kv_heads = require_kv_heads_divide(num_heads, num_kv_heads)
    query_head = require_int("query_head", query_head, 0, num_heads - 1)
    return query_head // (num_heads // num_kv_heads)


class GroupedQueryAttention(MultiHeadAttention):
    """Multi-head attention whose ``num_heads`` query heads share ``num_kv_heads`` key-value heads.

    It differs from :class:`~mha_lib.MultiHeadAttention` in two places only. ``W_k`` and ``W_v`` project to
    ``num_kv_heads * head_dim`` features, so the keys and values (and a KV cache of them) are
    ``num_groups = num_heads // num_kv_heads`` times smaller. And step 2 of the inherited forward splits them
    into ``num_kv_heads`` heads, then repeats each for the query heads of its group (:func:`repeat_kv_heads`);
    with ``num_kv_heads == num_heads`` it is exactly MultiHeadAttention. (PyTorch's fused kernel can read the
    shared heads in place, ``F.scaled_dot_product_attention(..., enable_gqa=True)``; chapter 09 shows it.)
    ``rope`` and ``rope_base`` add rotary position embedding, as in MultiHeadAttention.

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_size)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
        - attn_mask: boolean (True = may attend), broadcastable to ``(batch_size, num_queries, num_kvpairs)``
        - output: ``(batch_size, num_queries, num_hiddens)``
    """

    @typing.overload
    def __init__(self, key_size: int, query_size: int, value_size: int, num_hiddens: int, num_heads: int,
                 num_kv_heads: int, dropout: float = 0.0, bias: bool = False, *, rope: str | None = None,
                 rope_base: float = 10000.0) -> None: ...
    @typing.overload
    def __init__(self, num_hiddens: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0, bias: bool = False,
                 *, rope: str | None = None, rope_base: float = 10000.0) -> None: ...

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """``GroupedQueryAttention(key_size, query_size, value_size, num_hiddens, num_heads, num_kv_heads,
        dropout=0.0, bias=False)`` (MultiHeadAttention's d2l 0.17 form with ``num_kv_heads`` after ``num_heads``)
        or ``GroupedQueryAttention(num_hiddens, num_heads, num_kv_heads, dropout=0.0, bias=False)`` (its d2l 1.0
        form, the input sizes fixed by the first call); both also take ``rope`` and ``rope_base`` by keyword."""
        super().__init__(*args, **kwargs)  # it binds the call to one of the forms above; W_k and W_v get
        # num_kv_heads heads through _key_value_heads

    def _key_value_heads(self, arguments: dict[str, Any]) -> int:
        """The constructor's ``num_kv_heads``, checked: the heads ``W_k`` and ``W_v`` project to."""
        self.num_kv_heads = require_kv_heads_divide(self.num_heads, arguments["num_kv_heads"])
        self.num_groups = self.num_heads // self.num_kv_heads  # query heads per key-value head
        return self.num_kv_heads

    def _split_kv_heads(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Step 2 for the projected keys and values: ``num_kv_heads`` heads, each repeated for its group,
        ``(batch, kvpairs, kv_heads * head_dim) -> (batch, kv_heads, kvpairs, head_dim) -> (batch, heads, ...)``."""
        keys, values = split_heads(keys, self.num_kv_heads), split_heads(values, self.num_kv_heads)
        return _repeat_kv_heads(keys, self.num_groups), _repeat_kv_heads(values, self.num_groups)

    def attend(self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None, *,
               need_weights: bool = True) -> Tensor:
        """Attention of projected, head-split tensors (a KV cache keeps them so); ``.attention_weights`` as in
        ``forward``. Checked like ``forward``: the head counts and widths of this layer, a boolean mask.

        Shape:
            - queries: ``(batch_size, num_heads, num_queries, head_dim)``
            - keys, values: ``(batch_size, num_kv_heads, num_kvpairs, head_dim)``
            - mask: boolean, broadcastable to ``(batch_size, num_heads, num_queries, num_kvpairs)``, or None
            - output: ``(batch_size, num_heads, num_queries, head_dim)``
        """
        require_head_split(self, queries, keys, values, mask, need_weights)
        keys, values = _repeat_kv_heads(keys, self.num_groups), _repeat_kv_heads(values, self.num_groups)
        if mask is not None:  # -> (batch, heads, queries, kvpairs), a view: the fused kernel takes no 1-D mask
            mask = mask.expand(*queries.shape[:-1], keys.shape[-2])
        if not need_weights:
            return self._fused_attention(queries, keys, values, mask)
        # forward's step 3, the heads folded into the batch axis: (batch, heads, seq, d) -> (batch * heads, seq, d)
        mask = None if mask is None else mask.flatten(0, 1)  # -> (batch * heads, queries, kvpairs)
        dropout_p = self.attention.dropout.p if self.training else 0.0  # no dropout in evaluation
        output, weights = _dot_product_attention(fold_heads(queries), fold_heads(keys), fold_heads(values), mask,
                                                 dropout_p)
        self.attention.attention_weights = weights.detach()
        return output.unflatten(0, (-1, self.num_heads))  # -> (batch, heads, queries, head_dim)


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
        raise wrong_type("mha", _("an mha_lib.MultiHeadAttention"), mha)
    require_called(mha)
    num_heads, head_dim = mha.num_heads, mha.head_dim
    if isinstance(mha, GroupedQueryAttention) and mha.num_kv_heads != num_heads:
        template = _("mha must have one key-value head per query head, got "
                     "num_kv_heads={num_kv_heads} for num_heads={num_heads}")
        raise ValueError(template.format(num_kv_heads=mha.num_kv_heads, num_heads=num_heads))
    num_hiddens = mha.W_o.out_features
    if head_dim != mha.v_head_dim or num_heads * head_dim != num_hiddens:
        template = _("mha_to_gqa needs heads of num_hiddens // num_heads features for queries, keys and values, got "
                     "head_dim={head_dim}, v_head_dim={v_head_dim}, num_hiddens={num_hiddens}, num_heads={num_heads}")
        raise ValueError(template.format(head_dim=head_dim, v_head_dim=mha.v_head_dim, num_hiddens=num_hiddens,
                                         num_heads=num_heads))
    require_kv_heads_divide(num_heads, num_kv_heads)
    num_groups = num_heads // num_kv_heads
    bias = mha.W_q.bias is not None
    rotary = mha.rotary  # the same rotary position embedding, if any
    gqa = GroupedQueryAttention(mha.W_k.in_features, mha.W_q.in_features, mha.W_v.in_features, num_hiddens,
                                num_heads, num_kv_heads, mha.dropout.p, bias,
                                rope=None if rotary is None else rotary.convention,
                                rope_base=10000.0 if rotary is None else rotary.base)
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
