"""Attention layers with the d2l book's names and signatures.

Read them in this order: :class:`DotProductAttention` (one attention), :class:`AdditiveAttention` (another
way to score), :class:`MultiHeadAttention` (``num_heads`` attentions side by side) and
:class:`GeneralMultiHeadAttention` (heads whose values have another width). Each layer checks its inputs
once, at the top of ``forward``, then only projects, folds heads and calls the functional core in
:mod:`mha_lib.functional` (see there for the dimension names).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._validation import (
    require_bool,
    require_dropout,
    require_features,
    require_heads_divide,
    require_layer_dtype,
    require_layer_inputs,
    require_positive_int,
    require_qkv,
)
from .functional import (
    _dot_product_attention,
    _masked_softmax,
    _transpose_output,
    _transpose_qkv,
    transpose_output,
    transpose_qkv,
)
from .masks import attention_mask

__all__ = ["AdditiveAttention", "DotProductAttention", "GeneralMultiHeadAttention", "MultiHeadAttention"]


# The constructor forms of the two editions of the d2l book. d2l 0.17 (the Chinese edition 2.0) is given the input
# sizes; d2l 1.0 (d2l.ai) reads them from the first call, with nn.LazyLinear. A call must fit exactly one form:
# the functions below are never run, :func:`_bind_d2l_form` only matches a call against their signatures.
def _multi_head_d2l_0_17(key_size, query_size, value_size, num_hiddens, num_heads, dropout=0.0, bias=False): ...
def _multi_head_d2l_1_0(num_hiddens, num_heads, dropout=0.0, bias=False): ...
def _additive_d2l_0_17(key_size, query_size, num_hiddens, dropout=0.0): ...
def _additive_d2l_1_0(num_hiddens, dropout=0.0): ...


def _bind_d2l_form(layer: str, forms: tuple[Callable, Callable], args: tuple, kwargs: dict) -> tuple[int, dict]:
    """Which of the two ``forms`` (d2l 0.17's, d2l 1.0's) a constructor call fits, and its arguments by name."""
    for edition, form in enumerate(forms):
        try:
            bound = inspect.signature(form).bind(*args, **kwargs)
        except TypeError:
            continue
        bound.apply_defaults()
        return edition, dict(bound.arguments)
    raise TypeError(f"{layer} takes the arguments of {_forms(layer, forms)}; got {_call(args, kwargs)}")


def _forms(layer: str, forms: tuple[Callable, Callable]) -> str:
    """The two constructor forms, written out for an error message."""
    return " or ".join(f"d2l {edition}'s {layer}{inspect.signature(form)}"
                       for edition, form in zip(("0.17", "1.0"), forms, strict=True))


def _require_dropout_of_form(dropout: object, layer: str, forms: tuple[Callable, Callable]) -> float:
    """:func:`require_dropout`, whose message also shows both forms: a size in the place of ``dropout``
    usually means the call mixed them up."""
    try:
        return require_dropout(dropout)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{error}; {layer} takes the arguments of {_forms(layer, forms)}") from None


def _call(args: tuple, kwargs: dict) -> str:
    return "(" + ", ".join([*map(repr, args), *(f"{name}={value!r}" for name, value in kwargs.items())]) + ")"


class DotProductAttention(nn.Module):
    """Scaled dot-product attention; the weights of the last call stay in ``.attention_weights``.

    Shape:
        - queries: ``(batch_size, num_queries, d)``
        - keys: ``(batch_size, num_kvpairs, d)``
        - values: ``(batch_size, num_kvpairs, value_dim)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
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
        return self._attend(queries, keys, values, mask)

    def _attend(self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None) -> Tensor:
        """``forward`` for checked inputs and a ready mask; :class:`MultiHeadAttention` calls it for all heads."""
        dropout_p = self.dropout.p if self.training else 0.0
        output, weights = _dot_product_attention(queries, keys, values, mask, dropout_p)
        self.attention_weights = weights.detach()
        return output


class AdditiveAttention(nn.Module):
    """Additive attention: the score is ``w_v . tanh(W_q q + W_k k)``, so queries and keys may differ in size.

    Built in either edition's form: ``AdditiveAttention(key_size, query_size, num_hiddens, dropout=0.0)``
    (d2l 0.17) or ``AdditiveAttention(num_hiddens, dropout=0.0)`` (d2l 1.0, input sizes from the first call).

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_dim)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
        - output: ``(batch_size, num_queries, value_dim)``
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        forms = (_additive_d2l_0_17, _additive_d2l_1_0)
        edition, arguments = _bind_d2l_form("AdditiveAttention", forms, args, kwargs)
        num_hiddens = require_positive_int("num_hiddens", arguments["num_hiddens"])
        dropout = _require_dropout_of_form(arguments["dropout"], "AdditiveAttention", forms)
        if edition == 0:  # d2l 0.17: AdditiveAttention(key_size, query_size, num_hiddens, dropout)
            self.key_size = require_positive_int("key_size", arguments["key_size"])
            self.query_size = require_positive_int("query_size", arguments["query_size"])
            self.W_k = nn.Linear(self.key_size, num_hiddens, bias=False)
            self.W_q = nn.Linear(self.query_size, num_hiddens, bias=False)
        else:  # d2l 1.0: AdditiveAttention(num_hiddens, dropout); the first call fixes the input sizes
            self.key_size = self.query_size = None
            self.W_k = nn.LazyLinear(num_hiddens, bias=False)
            self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights: Tensor | None = None

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor | None = None) -> Tensor:
        require_qkv(queries, keys, values, rank=3)
        if self.query_size is None:  # built in d2l 1.0's form: this first call fixes the input sizes
            self.query_size, self.key_size = queries.shape[-1], keys.shape[-1]
        require_features("queries", queries, self.query_size, "query_size")
        require_features("keys", keys, self.key_size, "key_size")
        require_layer_dtype("queries", queries, self.W_q.weight)
        batch_size, num_queries, _ = queries.shape
        num_kvpairs = keys.shape[1]
        mask = attention_mask(batch_size, num_queries, num_kvpairs, valid_lens, device=queries.device)
        # Every query meets every key by broadcasting:
        # (batch, queries, 1, hiddens) + (batch, 1, kvpairs, hiddens) -> (batch, queries, kvpairs, hiddens)
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)  # (batch, queries, kvpairs, 1) -> (batch, queries, kvpairs)
        weights = _masked_softmax(scores, mask)
        self.attention_weights = weights.detach()
        return self.dropout(weights) @ values  # -> (batch, queries, value_dim)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: ``num_heads`` scaled dot-product attentions side by side, then mixed by ``W_o``.

    It is built in the form of either edition of the d2l book (the number of arguments tells them apart):

    - ``MultiHeadAttention(key_size, query_size, value_size, num_hiddens, num_heads, dropout=0.0, bias=False)``,
      d2l 0.17 (the Chinese edition 2.0, which this collection follows): the input sizes are given;
    - ``MultiHeadAttention(num_hiddens, num_heads, dropout=0.0, bias=False)``, d2l 1.0 (d2l.ai): the input
      sizes are fixed by the first call, as with ``nn.LazyLinear``; ``query_size`` and the other two are None
      until then. d2l 1.0's methods ``transpose_qkv(X)`` and ``transpose_output(X)`` are here too.

    Each head works on ``head_dim = num_hiddens // num_heads`` features, so the parameter count does not
    depend on ``num_heads``. (``head_dim`` and ``v_head_dim`` set other widths for the queries/keys and
    the values of each head; :class:`GeneralMultiHeadAttention` names them.) Two paths compute the
    same output:

    - ``need_weights=True`` (the default) folds the heads into the batch axis with ``transpose_qkv``,
      as the d2l book does, and keeps the weights of the last call in ``.attention_weights``, shaped
      ``(batch_size, num_heads, num_queries, num_kvpairs)`` (detached from autograd);
    - ``need_weights=False`` hands 4-D views to PyTorch's fused ``F.scaled_dot_product_attention``,
      which never stores the weights.

    The rules both paths follow: a query that may attend to no key gets a zero output; masks choose
    weights but do not clean the numbers, so a NaN or inf anywhere in the keys or values, padding
    included, reaches the output (as in PyTorch); float16 and bfloat16 scores are computed in float32.

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_size)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
        - attn_mask: boolean (True = may attend), broadcastable to ``(batch_size, num_queries, num_kvpairs)``
        - output: ``(batch_size, num_queries, num_hiddens)``
    """

    def __init__(self, *args: Any, head_dim: int | None = None, v_head_dim: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__()
        forms = (_multi_head_d2l_0_17, _multi_head_d2l_1_0)
        edition, arguments = _bind_d2l_form("MultiHeadAttention", forms, args, kwargs)
        num_hiddens = require_positive_int("num_hiddens", arguments["num_hiddens"])
        self.num_heads = num_heads = require_positive_int("num_heads", arguments["num_heads"])
        dropout = _require_dropout_of_form(arguments["dropout"], "MultiHeadAttention", forms)
        bias = require_bool("bias", arguments["bias"])
        if head_dim is None or v_head_dim is None:
            require_heads_divide(num_hiddens, num_heads)
        # Features per head: of the queries and keys (they meet in dot products), and of the values.
        self.head_dim = num_hiddens // num_heads if head_dim is None else require_positive_int("head_dim", head_dim)
        self.v_head_dim = (num_hiddens // num_heads if v_head_dim is None
                           else require_positive_int("v_head_dim", v_head_dim))
        if edition == 0:  # d2l 0.17: the input sizes are given
            self.query_size, self.key_size, self.value_size = (
                require_positive_int(name, arguments[name]) for name in ("query_size", "key_size", "value_size"))
            self.W_q = nn.Linear(self.query_size, num_heads * self.head_dim, bias=bias)
            self.W_k = nn.Linear(self.key_size, num_heads * self.head_dim, bias=bias)
            self.W_v = nn.Linear(self.value_size, num_heads * self.v_head_dim, bias=bias)
        else:  # d2l 1.0: the first call fixes the input sizes (nn.LazyLinear); None until then
            self.query_size = self.key_size = self.value_size = None
            self.W_q = nn.LazyLinear(num_heads * self.head_dim, bias=bias)
            self.W_k = nn.LazyLinear(num_heads * self.head_dim, bias=bias)
            self.W_v = nn.LazyLinear(num_heads * self.v_head_dim, bias=bias)
        self.W_o = nn.Linear(num_heads * self.v_head_dim, num_hiddens, bias=bias)
        # All heads attend in one call of one DotProductAttention, with the heads folded into its batch
        # axis; d2l's Transformer code reads the weights there: .attention.attention_weights.
        self.attention = DotProductAttention(dropout)
        self._trace: list[tuple[str, str, Tensor]] | None = None  # filled while a shape trace runs

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
        # The arguments are checked here, once; everything below trusts them.
        require_layer_inputs(queries, keys, values, (self.query_size, self.key_size, self.value_size), self.W_q.weight)
        require_bool("need_weights", need_weights)
        if self.query_size is None:  # built in d2l 1.0's form: this first call fixes the input sizes
            self.query_size, self.key_size, self.value_size = (x.shape[-1] for x in (queries, keys, values))
        batch_size, num_queries, _ = queries.shape
        num_kvpairs = keys.shape[1]
        # valid_lens, causal and attn_mask become one boolean mask: (batch or 1, queries or 1, kvpairs), or None
        mask = attention_mask(batch_size, num_queries, num_kvpairs, valid_lens,
                              causal=causal, attn_mask=attn_mask, device=queries.device)
        record = self._record
        if mask is not None:
            record("  mask", "attention_mask(valid_lens, causal, attn_mask)", mask)

        # 1. Project: (batch, queries or kvpairs, *_size) -> (batch, queries or kvpairs, num_heads * head_dim)
        queries = record("1 project", "W_q(queries)", self.W_q(queries))
        keys = record("1 project", "W_k(keys)", self.W_k(keys))
        values = record("1 project", "W_v(values)", self.W_v(values))  # num_heads * v_head_dim features
        if need_weights:
            output = self._attend_with_weights(queries, keys, values, mask)  # steps 2 to 4, below
        else:
            output = self._attend_fused(queries, keys, values, mask)
            self.attention.attention_weights = None
        # 5. Mix what the heads found: (batch, queries, num_heads * v_head_dim) -> (batch, queries, num_hiddens)
        return record("5 output projection", "W_o(concatenated)", self.W_o(output))

    def _attend_with_weights(self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None) -> Tensor:
        """Steps 2 to 4 with the heads folded into the batch axis (the d2l book's layout), keeping the weights."""
        record, num_heads = self._record, self.num_heads
        # Split into heads and fold them into the batch axis (transpose_qkv, chapter 03):
        # (batch, queries or kvpairs, num_heads * head_dim) -> (batch * heads, queries or kvpairs, head_dim)
        queries = record("  split heads", "transpose_qkv(queries)", _transpose_qkv(queries, num_heads))
        keys = record("  split heads", "transpose_qkv(keys)", _transpose_qkv(keys, num_heads))
        values = record("  split heads", "transpose_qkv(values)", _transpose_qkv(values, num_heads))
        if mask is not None and mask.size(0) > 1:
            # The heads of one sequence sit next to each other on the folded axis, so each sequence's
            # mask is repeated in place: [m0, m0, m1, m1], not [m0, m1, m0, m1].
            # (batch, queries or 1, kvpairs) -> (batch * heads, queries or 1, kvpairs)
            mask = record("  split heads", "mask, repeated per head", mask.repeat_interleave(num_heads, dim=0))
        # 2. Score, 3. softmax and weighted sum: every head of every sequence in one batched call.
        # (batch * heads, queries, head_dim) -> (batch * heads, queries, v_head_dim)
        attention = self.attention
        output = attention._attend(queries, keys, values, mask)
        record("2 score, 3 softmax", f"softmax(queries @ keys^T / sqrt({queries.shape[-1]}))",
               attention.attention_weights)
        record("3 weighted sum", "weights @ values", output)
        # 4. Concatenate the heads (transpose_output, chapter 03):
        # (batch * heads, queries, v_head_dim) -> (batch, queries, num_heads * v_head_dim)
        return record("4 concatenate", "transpose_output(output)", _transpose_output(output, num_heads))

    def _attend_fused(self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None) -> Tensor:
        """Steps 2 to 4 in PyTorch's fused kernel, which never stores the weights."""
        # The kernel takes the heads on an axis of their own (chapter 03's 4-D layout); these are views.
        # (batch, seq, num_heads * head_dim) -> (batch, seq, heads, head_dim) -> (batch, heads, seq, head_dim)
        queries, keys, values = (X.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)
                                 for X in (queries, keys, values))
        if mask is not None:
            mask = mask.unsqueeze(1)  # (batch, queries or 1, kvpairs) -> (batch, 1, queries or 1, kvpairs)
        dropout_p = self.dropout.p if self.training else 0.0
        output = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask, dropout_p=dropout_p)
        return output.transpose(1, 2).flatten(2)  # (batch, heads, queries, v_head_dim) -> (batch, queries, ...)

    def transpose_qkv(self, X: Tensor) -> Tensor:
        """d2l 1.0's method: :func:`mha_lib.transpose_qkv` with this layer's ``num_heads``."""
        return transpose_qkv(X, self.num_heads)

    def transpose_output(self, X: Tensor) -> Tensor:
        """d2l 1.0's method: :func:`mha_lib.transpose_output` with this layer's ``num_heads``."""
        return transpose_output(X, self.num_heads)

    @property
    def attention_weights(self) -> Tensor | None:
        """The weights of the last call, ``(batch_size, num_heads, num_queries, num_kvpairs)``; None after a
        call with ``need_weights=False``. A view of ``.attention.attention_weights`` (heads folded into the batch)."""
        weights = self.attention.attention_weights  # (batch * heads, queries, kvpairs)
        return None if weights is None else weights.unflatten(0, (-1, self.num_heads))

    @property
    def dropout(self) -> nn.Dropout:
        """The dropout of the attention weights; it lives in ``.attention``, as in the d2l book."""
        return self.attention.dropout

    def _record(self, step: str, operation: str, tensor: Tensor) -> Tensor:
        """Return ``tensor``; while a shape trace runs (``mha_lib.chapters.anatomy``), also keep it."""
        if self._trace is not None:
            self._trace.append((step, operation, tensor))
        return tensor


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
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
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
