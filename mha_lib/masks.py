"""Boolean attention masks: True means "this query may attend to this key".

That is the polarity of ``torch.nn.functional.scaled_dot_product_attention``. ``torch.nn.MultiheadAttention``
uses the opposite one for its boolean ``key_padding_mask`` and ``attn_mask`` (True = ignore); pass ``~mask`` there.

The names, one per role:

    valid_lens  how many key-value pairs each sequence (or each query) may see: d2l's way to hide padding
    causal      True: query i sees keys 0..i only
    attn_mask   an explicit boolean mask a caller passes, PyTorch's name for it
    mask        the one boolean mask the computations take, all of the above combined

A builder is named for what it builds, ``<what>_mask``: :func:`valid_lens_mask`, :func:`causal_mask` and
:func:`attention_mask` (all three sources combined); :func:`sequence_mask` is d2l's, which applies one.
As everywhere in the library, ``_attention_mask`` is :func:`attention_mask` without its checks (and without
``batch_size``, which only a check needs): a layer checks its inputs once, at the top of ``forward``, and calls it.

A valid length counts as if clamped to ``[0, num_kvpairs]``, as in d2l: a length above the number of key-value
pairs hides none of them, one below 0 hides all, on every device (checking the values would read them back
from a GPU on every call).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._validation import require_masks, require_nonnegative_int, require_tensor, require_valid_lens
from .i18n import N_, _

__all__ = ["attention_mask", "causal_mask", "sequence_mask", "valid_lens_mask"]


def _attention_mask(num_queries: int, num_kvpairs: int, valid_lens: Tensor | None, causal: bool,
                    attn_mask: Tensor | None, device: torch.device) -> Tensor | None:
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


def valid_lens_mask(valid_lens: Tensor, num_kvpairs: int) -> Tensor:
    """Keep the first ``valid_lens`` key-value pairs of each row, mask the rest.

    Shape:
        - valid_lens: any shape ``S``, whole numbers (clamped to ``[0, num_kvpairs]``)
        - output: ``S + (num_kvpairs,)``, boolean
    """
    num_kvpairs = require_nonnegative_int("num_kvpairs", num_kvpairs)
    shape = tuple(valid_lens.shape) if isinstance(valid_lens, Tensor) else ()
    require_valid_lens(valid_lens, (shape,), N_("any shape"))
    flat = valid_lens.reshape(-1)  # S -> (N,), so that the mask is (N, 1, num_kvpairs)
    return _attention_mask(1, num_kvpairs, flat, False, None, valid_lens.device).reshape(*shape, num_kvpairs)


def sequence_mask(X: Tensor, valid_lens: Tensor, value: float = 0) -> Tensor:
    """d2l's ``sequence_mask``: set the entries of ``X`` past each row's valid length to ``value``, in place.

    The d2l book masks a loss with it (``MaskedSoftmaxCELoss``); ``X`` is changed and returned, as there.
    d2l names the lengths ``valid_len``; its code passes them by position, which works here unchanged.
    The attention layers use the boolean :func:`valid_lens_mask` instead.

    Shape:
        - X: ``(batch_size, num_steps, ...)``
        - valid_lens: ``(batch_size,)``, whole numbers (clamped to ``[0, num_steps]``)
        - output: ``X`` itself
    """
    require_tensor("X", X, None, "(batch_size, num_steps, ...)", floating=False)
    if X.dim() < 2:
        template = _("X must have at least 2 axes (batch_size, num_steps, ...), got shape {shape}")
        raise ValueError(template.format(shape=tuple(X.shape)))
    require_valid_lens(valid_lens, ((X.shape[0],),), "(batch_size,)")
    keep = _attention_mask(1, X.shape[1], valid_lens, False, None, X.device)  # (batch_size, 1, num_steps)
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
    return _attention_mask(num_queries, num_kvpairs, None, True, None, torch.device(device or "cpu"))[0]


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
        - valid_lens: ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers (clamped to
          ``[0, num_kvpairs]``)
        - attn_mask: boolean, broadcastable to ``(batch_size, num_queries, num_kvpairs)``
        - output: ``(batch_size or 1, num_queries or 1, num_kvpairs)``, boolean, or None
    """
    for name, size in (("batch_size", batch_size), ("num_queries", num_queries), ("num_kvpairs", num_kvpairs)):
        require_nonnegative_int(name, size)
    require_masks(batch_size, num_queries, num_kvpairs, valid_lens, causal, attn_mask)
    if device is None:
        given = valid_lens if valid_lens is not None else attn_mask
        device = given.device if given is not None else "cpu"
    return _attention_mask(num_queries, num_kvpairs, valid_lens, causal, attn_mask, torch.device(device))
