"""Boolean attention masks: True means "this query may attend to this key".

That is the polarity of ``torch.nn.functional.scaled_dot_product_attention``.
``torch.nn.MultiheadAttention`` uses the opposite one for its boolean
``key_padding_mask`` and ``attn_mask`` (True = ignore); pass ``~mask`` there.

Every way of saying "do not look here" (valid lengths, causality, an explicit
mask) is turned into this one polarity by :func:`attention_mask`, the single
conversion point the rest of the library calls.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._validation import require_bool, require_bool_mask, require_positive_int, require_tensor, require_valid_lens

__all__ = ["attention_mask", "causal_mask", "sequence_mask", "valid_lens_mask"]


def valid_lens_mask(valid_lens: Tensor, num_kvpairs: int) -> Tensor:
    """Keep the first ``valid_lens`` key-value pairs of each row, mask the rest.

    Shape:
        - valid_lens: any shape ``S``, whole numbers in ``[0, num_kvpairs]``
        - output: ``S + (num_kvpairs,)``, boolean
    """
    num_kvpairs = require_positive_int("num_kvpairs", num_kvpairs)
    shape = tuple(valid_lens.shape) if isinstance(valid_lens, Tensor) else ()
    require_valid_lens(valid_lens, (shape,), "any shape", num_kvpairs)
    return _valid_lens_mask(valid_lens, num_kvpairs)


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
        raise ValueError(f"X must have at least 2 axes (batch_size, num_steps, ...), got shape {tuple(X.shape)}")
    require_valid_lens(valid_len, ((X.shape[0],),), "(batch_size,)", X.shape[1], name="valid_len")
    keep = _valid_lens_mask(valid_len, X.shape[1])  # (batch_size, num_steps)
    return X.masked_fill_(~keep.reshape(keep.shape + (1,) * (X.dim() - 2)), value)


def causal_mask(
    num_queries: int, num_kvpairs: int | None = None, *, device: torch.device | str | None = None
) -> Tensor:
    """Let query ``i`` see keys ``0..i`` only (lower triangle, aligned top-left).

    The alignment is that of ``is_causal=True`` in PyTorch's
    ``scaled_dot_product_attention`` when queries and keys differ in length.

    Shape:
        - output: ``(num_queries, num_kvpairs)``, boolean; ``num_kvpairs`` defaults to ``num_queries``
    """
    num_queries = require_positive_int("num_queries", num_queries)
    num_kvpairs = num_queries if num_kvpairs is None else require_positive_int("num_kvpairs", num_kvpairs)
    return torch.ones(num_queries, num_kvpairs, dtype=torch.bool, device=device).tril()


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
    nothing is masked, so callers can skip masking altogether.

    Shape:
        - valid_lens: ``(batch_size,)`` or ``(batch_size, num_queries)``, whole numbers
        - attn_mask: boolean, broadcastable to ``(batch_size, num_queries, num_kvpairs)``
        - output: ``(batch_size or 1, num_queries or 1, num_kvpairs)``, boolean, or None
    """
    require_bool("causal", causal)
    if isinstance(device, str):
        device = torch.device(device)
    if valid_lens is not None:
        require_valid_lens(valid_lens, ((batch_size,), (batch_size, num_queries)),
                           "(batch_size,) or (batch_size, num_queries)", num_kvpairs)
    if attn_mask is not None:
        target = (batch_size, num_queries, num_kvpairs)
        require_bool_mask("attn_mask", attn_mask, target, "(batch_size, num_queries, num_kvpairs)")
    return _attention_mask(num_queries, num_kvpairs, valid_lens, causal, attn_mask, device)


def _valid_lens_mask(valid_lens: Tensor, num_kvpairs: int) -> Tensor:
    """:func:`valid_lens_mask` for arguments that were checked already."""
    positions = torch.arange(num_kvpairs, device=valid_lens.device)  # (num_kvpairs,)
    return positions < valid_lens.unsqueeze(-1)  # S -> S + (num_kvpairs,)


def _attention_mask(num_queries: int, num_kvpairs: int, valid_lens: Tensor | None, causal: bool,
                    attn_mask: Tensor | None, device: torch.device | str | None) -> Tensor | None:
    """:func:`attention_mask` for arguments that were checked already."""
    combined = None
    if valid_lens is not None:
        if device is not None and valid_lens.device != device:
            valid_lens = valid_lens.to(device)
        combined = _valid_lens_mask(valid_lens, num_kvpairs)
        if valid_lens.dim() == 1:
            combined = combined.unsqueeze(1)  # (batch, kvpairs) -> (batch, 1, kvpairs)
    if causal:
        causal_part = torch.ones(num_queries, num_kvpairs, dtype=torch.bool, device=device).tril()
        combined = causal_part if combined is None else combined & causal_part
    if attn_mask is not None:
        attn_mask = attn_mask.to(device)  # a no-op where it already is
        combined = attn_mask if combined is None else combined & attn_mask
    if combined is None:
        return None
    while combined.dim() < 3:
        combined = combined.unsqueeze(0)  # (queries, kvpairs) -> (1, queries, kvpairs)
    return combined
