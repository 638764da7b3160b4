"""Attention layers with the d2l book's names and signatures.

Read them in this order: :class:`DotProductAttention` (one attention), :class:`AdditiveAttention` (another
way to score), :class:`MultiHeadAttention` (``num_heads`` attentions side by side) and
:class:`GeneralMultiHeadAttention` (heads whose values have another width); :class:`~mha_lib.GroupedQueryAttention`
(:mod:`mha_lib.grouped`) is the multi-head layer with fewer key-value heads. Each layer checks its inputs with
one call at the top of ``forward``, then projects, splits heads and calls the computations of
:mod:`mha_lib.functional` (see there for the dimension names) on the mask of :mod:`mha_lib.masks`.
"""

from __future__ import annotations

import inspect
import numbers
import typing
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._validation import (
    require_bool,
    require_dropout,
    require_forward_arguments,
    require_heads_divide,
    require_positive_int,
)
from .functional import (
    _dot_product_attention,
    _softmax_with_mask,
    fold_heads,
    merge_heads,
    split_heads,
    transpose_output,
    transpose_qkv,
)
from .i18n import _
from .masks import _attention_mask
from .rope import RotaryEmbedding

__all__ = ["AdditiveAttention", "DotProductAttention", "GeneralMultiHeadAttention", "MultiHeadAttention"]


def _bind_d2l_form(layer: type, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The arguments by name of a constructor call, which must fit exactly one of ``layer.__init__``'s overloads
    (those of the nearest class in its MRO that has them): the forms of d2l 0.17 (input sizes given) and d2l 1.0
    (input sizes read from the first call)."""
    forms = next(filter(None, (typing.get_overloads(cls.__init__) for cls in layer.__mro__)))
    for form in forms:
        try:
            bound = inspect.signature(form).bind(None, *args, **kwargs)  # None stands for self
        except TypeError:
            continue
        bound.apply_defaults()
        arguments = {name: value for name, value in bound.arguments.items() if name != "self"}
        dropout = arguments["dropout"]
        if isinstance(dropout, numbers.Integral) and not isinstance(dropout, bool) and dropout >= 1:
            break  # a size where the dropout goes: d2l 0.17's form with sizes missing, MultiHeadAttention(8, 8, 8)
        positional = zip(list(bound.signature.parameters.values())[1:], args, strict=False)  # (parameter, value)
        if any(isinstance(value, bool) and parameter.default is parameter.empty for parameter, value in positional):
            break  # a flag where a size goes: d2l 1.0's bias in 0.17's form, MultiHeadAttention(16, 4, 0.1, True, 5)
        return arguments
    form_text = _("{layer}{signature} (d2l {edition}'s form)")
    written = _(" or ").join(form_text.format(edition=edition, layer=layer.__name__, signature=_parameters(form))
                             for edition, form in zip(("0.17", "1.0"), forms, strict=True))
    call = ", ".join([*map(repr, args), *(f"{name}={value!r}" for name, value in kwargs.items())])
    keywords = [name for name, parameter in inspect.signature(forms[0]).parameters.items()
                if parameter.kind == inspect.Parameter.KEYWORD_ONLY]
    if keywords:
        written += _(", each also with the keywords {keywords}").format(keywords=", ".join(keywords))
    template = _("{layer} takes the arguments {written}; got ({call})")
    raise TypeError(template.format(layer=layer.__name__, written=written, call=call))


def _parameters(form: Any) -> inspect.Signature:
    """The parameters of ``form`` after ``self`` that d2l's form has, without their annotations and without the
    keyword-only ones: ``(num_hiddens, num_heads, dropout=0.0, bias=False)``."""
    parameters = list(inspect.signature(form).parameters.values())[1:]
    return inspect.Signature([parameter.replace(annotation=inspect.Parameter.empty) for parameter in parameters
                              if parameter.kind != inspect.Parameter.KEYWORD_ONLY])


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
        require_forward_arguments(self, queries, keys, values, valid_lens)
        mask = _attention_mask(queries.shape[1], keys.shape[1], valid_lens, False, None, queries.device)
        dropout_p = self.dropout.p if self.training else 0.0  # no dropout in evaluation
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

    @typing.overload
    def __init__(self, key_size: int, query_size: int, num_hiddens: int, dropout: float = 0.0) -> None: ...
    @typing.overload
    def __init__(self, num_hiddens: int, dropout: float = 0.0) -> None: ...

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """``AdditiveAttention(key_size, query_size, num_hiddens, dropout=0.0)`` (d2l 0.17) or
        ``AdditiveAttention(num_hiddens, dropout=0.0)`` (d2l 1.0)."""
        super().__init__()
        arguments = _bind_d2l_form(AdditiveAttention, args, kwargs)
        num_hiddens = require_positive_int("num_hiddens", arguments["num_hiddens"])
        self.dropout = nn.Dropout(require_dropout(arguments["dropout"]))
        if "key_size" in arguments:  # d2l 0.17: the input sizes are given
            self.key_size = require_positive_int("key_size", arguments["key_size"])
            self.query_size = require_positive_int("query_size", arguments["query_size"])
            self.W_k = nn.Linear(self.key_size, num_hiddens, bias=False)
            self.W_q = nn.Linear(self.query_size, num_hiddens, bias=False)
        else:  # d2l 1.0: the first call fixes the input sizes (nn.LazyLinear); None until then
            self.key_size = self.query_size = None
            self.W_k = nn.LazyLinear(num_hiddens, bias=False)
            self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.attention_weights: Tensor | None = None

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor | None = None) -> Tensor:
        require_forward_arguments(self, queries, keys, values, valid_lens)
        if self.query_size is None:  # built in d2l 1.0's form: the first valid call fixes the input sizes
            self.query_size, self.key_size = queries.shape[-1], keys.shape[-1]
        mask = _attention_mask(queries.shape[1], keys.shape[1], valid_lens, False, None, queries.device)
        # Every query meets every key by broadcasting:
        # (batch, queries, 1, hiddens) + (batch, 1, kvpairs, hiddens) -> (batch, queries, kvpairs, hiddens)
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)  # (batch, queries, kvpairs, 1) -> (batch, queries, kvpairs)
        weights = _softmax_with_mask(scores, mask)
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
    the values of each head; :class:`GeneralMultiHeadAttention` names them.) ``rope="interleaved"`` or
    ``rope="halves"`` adds rotary position embedding (:mod:`mha_lib.rope`, chapter 12): after the head split the
    queries and keys of each sequence are turned by their positions 0, 1, ..., with ``rope_base`` as the base
    of the angles; the default, None, leaves them as they are. Two paths compute the same output:

    - ``need_weights=True`` (the default) folds the heads into the batch axis, as the d2l book does, and keeps
      the weights of the last call in ``.attention_weights``, shaped ``(batch_size, num_heads, num_queries,
      num_kvpairs)`` (detached from autograd). ``.attention`` is d2l's attribute, the ``DotProductAttention`` of
      the folded heads: ``forward`` computes what its ``forward`` would, but with the layer's one mask, and keeps
      the dropout and the folded weights there, where d2l's Transformer reads them (``.attention.attention_weights``);
    - ``need_weights=False`` hands the heads to PyTorch's fused ``F.scaled_dot_product_attention`` (chapter 07),
      which never stores the weights.

    The rules both paths follow: a query that may attend to no key gets a zero output; a hidden key gets
    weight 0, but a NaN or inf in its value still reaches the output (0 * inf is NaN, as in PyTorch);
    float16 and bfloat16 scores are computed in float32; a valid length counts as if clamped to
    ``[0, num_kvpairs]``, as in d2l. They differ in one case: the explicit path
    replaces the score of a hidden key, so even a NaN or +inf there changes nothing, while PyTorch's kernel
    adds -inf to it, which only a finite or -inf score survives (a NaN in a padded key makes its rows NaN).

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
                 dropout: float = 0.0, bias: bool = False, *, head_dim: int | None = None,
                 v_head_dim: int | None = None, rope: str | None = None, rope_base: float = 10000.0) -> None: ...
    @typing.overload
    def __init__(self, num_hiddens: int, num_heads: int, dropout: float = 0.0, bias: bool = False, *,
                 head_dim: int | None = None, v_head_dim: int | None = None, rope: str | None = None,
                 rope_base: float = 10000.0) -> None: ...

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """``MultiHeadAttention(key_size, query_size, value_size, num_hiddens, num_heads, dropout=0.0, bias=False)``
        (d2l 0.17) or ``MultiHeadAttention(num_hiddens, num_heads, dropout=0.0, bias=False)`` (d2l 1.0); both also
        take ``head_dim``, ``v_head_dim``, ``rope`` and ``rope_base`` by keyword."""
        super().__init__()
        arguments = _bind_d2l_form(type(self), args, kwargs)  # GroupedQueryAttention's forms add num_kv_heads
        num_hiddens = require_positive_int("num_hiddens", arguments["num_hiddens"])
        self.num_heads = num_heads = require_positive_int("num_heads", arguments["num_heads"])
        head_dim, v_head_dim = arguments.get("head_dim"), arguments.get("v_head_dim")  # GQA's forms have neither
        if head_dim is None or v_head_dim is None:
            require_heads_divide(num_hiddens, num_heads)
        # Features per head: of the queries and keys (they meet in dot products), and of the values.
        self.head_dim = num_hiddens // num_heads if head_dim is None else require_positive_int("head_dim", head_dim)
        self.v_head_dim = (num_hiddens // num_heads if v_head_dim is None
                           else require_positive_int("v_head_dim", v_head_dim))
        bias = require_bool("bias", arguments["bias"])
        if "query_size" in arguments:  # d2l 0.17: the input sizes are given
            self.query_size, self.key_size, self.value_size = (
                require_positive_int(name, arguments[name]) for name in ("query_size", "key_size", "value_size"))
        else:  # d2l 1.0: the first call fixes the input sizes (nn.LazyLinear); None until then
            self.query_size = self.key_size = self.value_size = None

        def projection(in_features: int | None, out_features: int) -> nn.Module:
            return nn.LazyLinear(out_features, bias=bias) if in_features is None else nn.Linear(
                in_features, out_features, bias=bias)

        self.W_q = projection(self.query_size, num_heads * self.head_dim)
        num_kv_heads = self._key_value_heads(arguments)  # num_heads here; GroupedQueryAttention has fewer
        self.W_k = projection(self.key_size, num_kv_heads * self.head_dim)
        self.W_v = projection(self.value_size, num_kv_heads * self.v_head_dim)
        self.W_o = nn.Linear(num_heads * self.v_head_dim, num_hiddens, bias=bias)
        # d2l's attribute, which holds the dropout and the last weights (see the class docstring). forward does not
        # call it: its forward takes valid_lens only, not the layer's one mask of valid_lens, causal and attn_mask,
        # and would check the arguments again.
        self.attention = DotProductAttention(require_dropout(arguments["dropout"]))
        # Rotary position embedding (chapter 12), off by default: it turns the queries and keys after the head split.
        rope = arguments["rope"]
        self.rotary = None if rope is None else RotaryEmbedding(self.head_dim, rope, arguments["rope_base"])

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
        require_forward_arguments(self, queries, keys, values, valid_lens, causal, attn_mask,
                                  need_weights)  # the one check: everything below trusts the arguments
        if self.query_size is None:  # d2l 1.0's form: the first (valid) call fixes the input sizes
            self.query_size, self.key_size, self.value_size = queries.shape[-1], keys.shape[-1], values.shape[-1]
        # valid_lens, causal and attn_mask become one boolean mask: (batch or 1, queries or 1, kvpairs), or None
        mask = _attention_mask(queries.shape[1], keys.shape[1], valid_lens, causal, attn_mask, queries.device)
        # 1. Project: (batch, queries or kvpairs, *_size) -> (batch, queries or kvpairs, heads * head_dim)
        queries, keys, values = self.W_q(queries), self.W_k(keys), self.W_v(values)
        # 2. Split the heads: (batch, seq, heads * head_dim) -> (batch, heads, seq, head_dim), views
        queries = split_heads(queries, self.num_heads)
        keys, values = self._split_kv_heads(keys, values)  # GroupedQueryAttention: fewer heads, shared
        if self.rotary is not None:  # rope: turn each head's queries and keys by their positions (chapter 12)
            queries, keys = self.rotary(queries, keys)
        if not need_weights:  # steps 3 to 5 with PyTorch's fused kernel (chapter 07), which keeps no weights
            mask = None if mask is None else mask.unsqueeze(1)  # -> (batch or 1, 1, queries or 1, kvpairs): every head
            return self.W_o(merge_heads(self._fused_attention(queries, keys, values, mask)))
        # 3. Attend, every head of every sequence in one call: fold the heads into the batch axis as d2l does,
        # (batch, heads, seq, head_dim) -> (batch * heads, seq, head_dim), sequence 0's heads first
        queries, keys, values = fold_heads(queries), fold_heads(keys), fold_heads(values)
        if mask is not None and mask.size(0) > 1:  # a batch of one broadcasts over the folded axis as it is
            mask = mask.repeat_interleave(self.num_heads, dim=0)  # [m0, m1] -> [m0, m0, m1, m1]: a sequence's heads
        dropout_p = self.attention.dropout.p if self.training else 0.0  # no dropout in evaluation
        output, weights = _dot_product_attention(queries, keys, values, mask, dropout_p)
        self.attention.attention_weights = weights.detach()  # (batch * heads, queries, kvpairs), as in d2l
        # 4. Concatenate the heads (d2l's transpose_output): (batch * heads, queries, v_head_dim) ->
        # (batch, heads, queries, v_head_dim) -> (batch, queries, heads * v_head_dim)
        output = merge_heads(output.unflatten(0, (-1, self.num_heads)))
        # 5. Mix what the heads found: (batch, queries, heads * v_head_dim) -> (batch, queries, num_hiddens)
        return self.W_o(output)

    def _key_value_heads(self, arguments: dict[str, Any]) -> int:
        """How many heads ``W_k`` and ``W_v`` project to, read from the constructor's ``arguments``: one for every
        query head; :class:`~mha_lib.GroupedQueryAttention` takes its ``num_kv_heads``."""
        return self.num_heads

    def _split_kv_heads(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Step 2 for the projected keys and values: one head for every query head, ``(batch, kvpairs,
        heads * head_dim) -> (batch, heads, kvpairs, head_dim)``; :class:`~mha_lib.GroupedQueryAttention` splits
        them into fewer heads and shares each with its group."""
        return split_heads(keys, self.num_heads), split_heads(values, self.num_heads)

    def _fused_attention(self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None) -> Tensor:
        """Step 3 in PyTorch's fused ``F.scaled_dot_product_attention`` (chapter 07), which stores no weights:
        ``.attention_weights`` becomes None.

        Shape:
            - queries: ``(batch_size, num_heads, num_queries, head_dim)``
            - keys, values: ``(batch_size, num_heads, num_kvpairs, head_dim or v_head_dim)``
            - mask: boolean, broadcastable to ``(batch_size, num_heads, num_queries, num_kvpairs)``, or None
            - output: ``(batch_size, num_heads, num_queries, v_head_dim)``
        """
        if self.attention.attention_weights is not None:  # those of an earlier call: this one keeps none
            self.attention.attention_weights = None
        dropout_p = self.attention.dropout.p if self.training else 0.0  # no dropout in evaluation
        return F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask, dropout_p=dropout_p)

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


class GeneralMultiHeadAttention(MultiHeadAttention):
    """Multi-head attention whose heads have ``qk_size`` query/key features and ``v_size`` value features.

    Scores only need queries and keys of one size; the values may have another, and
    ``W_o`` maps the ``num_heads * v_size`` concatenated features to ``num_hiddens``.
    Only the widths of the four projections differ from :class:`~mha_lib.MultiHeadAttention`:
    the forward pass is inherited unchanged (masks, ``causal``, ``need_weights``). The layer stores
    the two widths under the names every layer uses, ``head_dim = qk_size`` (the size that sets the scale
    ``1/sqrt(qk_size)``) and ``v_head_dim = v_size``. With ``qk_size = v_size = num_hiddens // num_heads``
    it is the standard layer, with the same parameter names and shapes, so ``load_state_dict`` copies
    weights from one to the other.

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
