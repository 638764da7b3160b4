"""The functional core: masks, the masked softmax, dot-product attention, and the reshapes that fold attention
heads into the batch axis. The layers of :mod:`mha_lib.modules` add their projections (and AdditiveAttention its
scores); ``need_weights=False`` hands the attention to PyTorch's ``F.scaled_dot_product_attention`` instead.

Dimension names (those of the d2l book):

    batch_size   sequences (sentences) in a batch
    num_queries  positions that ask: the length of the query sequence
    num_kvpairs  key-value pairs that answer: the length of the key/value sequence
    num_hiddens  features of the projected queries, keys and values, all heads together
    num_heads    attention heads
    head_dim     features per head, num_hiddens // num_heads

Masks are boolean, True = "this query may attend to this key", the polarity of
``torch.nn.functional.scaled_dot_product_attention``; ``torch.nn.MultiheadAttention`` uses the opposite one
for its boolean ``key_padding_mask`` and ``attn_mask`` (True = ignore): pass ``~mask`` there.

The file reads top to bottom: first the computations, which trust their arguments (a layer checks its inputs
once, at the top of ``forward``, and calls them), then the public functions, which check their arguments and
call the computations.
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
    require_masks,
    require_merge_input,
    require_nonnegative_int,
    require_qk_features,
    require_qkv,
    require_split_input,
    require_tensor,
    require_valid_lens,
)
from .i18n import N_, _

__all__ = ["attention_mask", "causal_mask", "dot_product_attention", "masked_softmax", "sequence_mask",
           "transpose_output", "transpose_qkv", "valid_lens_mask"]


# ----- the computations ------------------------------------------------------------------------------------------


def _attention_mask(num_queries: int, num_kvpairs: int, device: torch.device, *, valid_lens: Tensor | None = None,
                    causal: bool = False, attn_mask: Tensor | None = None) -> Tensor | None:
    """Valid lengths, causality and an explicit mask as one boolean mask, built on ``device``; None if none is given.

    A key is visible only if every given mask allows it. Shape: ``(batch or 1, queries or 1, kvpairs)``.
    """
    mask = None
    if valid_lens is not None:  # key j is visible when j < valid_len: (kvpairs,) < (batch, 1 or queries, 1)
        # (batch,) -> (batch, 1, 1): the same for every query; (batch, queries) -> (batch, queries, 1)
        lengths = valid_lens.reshape(-1, 1, 1) if valid_lens.dim() == 1 else valid_lens.unsqueeze(-1)
        mask = torch.arange(num_kvpairs, device=device) < lengths.to(device)  # -> (batch, 1 or queries, kvpairs)
    if causal:  # query i sees keys 0..i: the lower triangle, (queries, kvpairs)
        lower = torch.ones(num_queries, num_kvpairs, dtype=torch.bool, device=device).tril()
        mask = lower if mask is None else mask & lower
    if attn_mask is not None:
        attn_mask = attn_mask.to(device)  # a no-op where it already is
        mask = attn_mask if mask is None else mask & attn_mask
    if mask is not None and mask.dim() < 3:
        mask = mask.reshape((1,) * (3 - mask.dim()) + mask.shape)  # (queries, kvpairs) -> (1, queries, kvpairs)
    return mask


def _masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis that gives every key ``mask`` hides exactly zero weight.

    A hidden score is replaced by the dtype's most negative number: never -1e9 (outside float16's range), never
    -inf (a row with every key hidden would give 0/0 = NaN, and NaN gradients), and replaced, not added to, so
    that whatever it was (a huge number, +-inf, NaN) cannot reach the visible weights. Each row is first shifted
    by its largest visible score (a shift changes no weight), so that a visible score never ties with the hidden
    ones, not even one at that most negative number. Then the hidden weights are set to exactly 0, which also
    empties a row whose every key is hidden: it attends to nothing. A NaN or inf among the visible scores stays,
    as in ``F.softmax``.
    """
    if mask is None:
        return F.softmax(scores, dim=-1)
    lowest = torch.finfo(scores.dtype).min
    row_max = torch.where(mask, scores, lowest).amax(dim=-1, keepdim=True)  # over the visible keys only
    weights = F.softmax(torch.where(mask, scores - row_max, lowest), dim=-1)
    return torch.where(mask, weights, 0.0)


def _attention(queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None,
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
    weights = _masked_softmax(scores, mask)
    attended = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    output = attended @ values  # (..., queries, kvpairs) @ (..., kvpairs, value_dim) -> (..., queries, value_dim)
    return (output.to(dtype), weights.to(dtype)) if half else (output, weights)


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


# ----- the public functions: check, then compute -----------------------------------------------------------------


def valid_lens_mask(valid_lens: Tensor, num_kvpairs: int) -> Tensor:
    """Keep the first ``valid_lens`` key-value pairs of each row, mask the rest.

    Shape:
        - valid_lens: any shape ``S``, whole numbers in ``[0, num_kvpairs]``
        - output: ``S + (num_kvpairs,)``, boolean
    """
    num_kvpairs = require_nonnegative_int("num_kvpairs", num_kvpairs)
    shape = tuple(valid_lens.shape) if isinstance(valid_lens, Tensor) else ()
    require_valid_lens(valid_lens, (shape,), N_("any shape"), num_kvpairs)
    flat = valid_lens.reshape(-1)  # S -> (N,), so that the mask is (N, 1, num_kvpairs)
    return _attention_mask(1, num_kvpairs, valid_lens.device, valid_lens=flat).reshape(*shape, num_kvpairs)


def sequence_mask(X: Tensor, valid_len: Tensor, value: float = 0) -> Tensor:
    """d2l's ``sequence_mask``: set the entries of ``X`` past each row's valid length to ``value``, in place.

    The d2l book masks a loss with it (``MaskedSoftmaxCELoss``); ``X`` is changed and returned, as there.
    The attention layers use the boolean :func:`valid_lens_mask` instead.

    Shape:
        - X: ``(batch_size, num_steps, ...)``
        - valid_len: ``(batch_size,)``, whole numbers in ``[0, num_steps]``
        - output: ``X`` itself
    """
    require_tensor("X", X, None, "(batch_size, num_steps, ...)", floating=False)
    if X.dim() < 2:
        template = _("X must have at least 2 axes (batch_size, num_steps, ...), got shape {shape}")
        raise ValueError(template.format(shape=tuple(X.shape)))
    require_valid_lens(valid_len, ((X.shape[0],),), "(batch_size,)", X.shape[1], name="valid_len",
                       length_name=N_("num_steps, the length of X's axis 1"))
    keep = _attention_mask(1, X.shape[1], X.device, valid_lens=valid_len)  # (batch_size, 1, num_steps)
    return X.masked_fill_(~keep.reshape(X.shape[:2] + (1,) * (X.dim() - 2)), value)


def causal_mask(
    num_queries: int, num_kvpairs: int | None = None, *, device: torch.device | str | None = None
) -> Tensor:
    """Let query ``i`` see keys ``0..i`` (lower triangle, aligned top-left).

    The alignment is that of ``is_causal=True`` in PyTorch's
    ``scaled_dot_product_attention`` when queries and keys differ in length.

    Shape:
        - output: ``(num_queries, num_kvpairs)``, boolean; ``num_kvpairs`` defaults to ``num_queries``; either
          may be 0, as the layers take empty sequences
    """
    num_queries = require_nonnegative_int("num_queries", num_queries)
    num_kvpairs = num_queries if num_kvpairs is None else require_nonnegative_int("num_kvpairs", num_kvpairs)
    return _attention_mask(num_queries, num_kvpairs, torch.device(device or "cpu"), causal=True)[0]


def attention_mask(
    batch_size: int,
    num_queries: int,
    num_kvpairs: int,
    valid_lens: Tensor | None = None,
    *,
    causal: bool = False,
    attn_mask: Tensor | None = None,
    device: torch.device | str | None = None,
) -> Tensor | None:
    """Combine valid lengths, causality and an explicit mask into one boolean mask.

    A key is visible only if every given mask allows it. Returns None when
    nothing is masked, so callers can skip masking altogether. The mask is built
    on ``device``; by default on the device of ``valid_lens`` or ``attn_mask``
    (the CPU if neither is given).

    Shape:
        - valid_lens: ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
        - attn_mask: boolean, broadcastable to ``(batch_size, num_queries, num_kvpairs)``
        - output: ``(batch_size or 1, num_queries or 1, num_kvpairs)``, boolean, or None
    """
    for name, size in (("batch_size", batch_size), ("num_queries", num_queries), ("num_kvpairs", num_kvpairs)):
        require_nonnegative_int(name, size)
    require_masks(batch_size, num_queries, num_kvpairs, valid_lens, causal, attn_mask)
    if device is None:
        given = valid_lens if valid_lens is not None else attn_mask
        device = given.device if given is not None else "cpu"
    return _attention_mask(num_queries, num_kvpairs, torch.device(device), valid_lens=valid_lens, causal=causal,
                           attn_mask=attn_mask)


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
    if valid_lens is not None:
        require_valid_lens(valid_lens, ((batch_size,), (batch_size, num_queries)),
                           VALID_LENS_SHAPES, num_kvpairs)
        require_device("valid_lens", valid_lens, X.device, other="X")
    return _masked_softmax(X, _attention_mask(num_queries, num_kvpairs, X.device, valid_lens=valid_lens))


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
    return _attention(queries, keys, values, mask, require_dropout(dropout_p, "dropout_p"))


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
