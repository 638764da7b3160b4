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

from ._validation import require_bool_mask, require_positive_int

__all__ = ["attention_mask", "causal_mask", "sequence_mask"]


def sequence_mask(valid_lens: Tensor, num_kvpairs: int) -> Tensor:
    """Keep the first ``valid_lens`` key-value pairs of each row, mask the rest.

    Shape:
        - valid_lens: any shape ``S``, integer values in ``[0, num_kvpairs]``
        - output: ``S + (num_kvpairs,)``, boolean
    """
    require_positive_int("num_kvpairs", num_kvpairs)
    _check_valid_lens_values(valid_lens, num_kvpairs)
    positions = torch.arange(num_kvpairs, device=valid_lens.device)  # (num_kvpairs,)
    return positions < valid_lens.unsqueeze(-1)  # S -> S + (num_kvpairs,)


def causal_mask(
    num_queries: int, num_kvpairs: int | None = None, *, device: torch.device | str | None = None
) -> Tensor:
    """Let query ``i`` see keys ``0..i`` only (lower triangle, aligned top-left).

    The alignment is that of ``is_causal=True`` in PyTorch's
    ``scaled_dot_product_attention`` when queries and keys differ in length.

    Shape:
        - output: ``(num_queries, num_kvpairs)``, boolean; ``num_kvpairs`` defaults to ``num_queries``
    """
    if num_kvpairs is None:
        num_kvpairs = num_queries
    require_positive_int("num_queries", num_queries)
    require_positive_int("num_kvpairs", num_kvpairs)
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
        - valid_lens: ``(batch_size,)`` or ``(batch_size, num_queries)``, integer
        - attn_mask: boolean, broadcastable to ``(batch_size, num_queries, num_kvpairs)``
        - output: ``(batch_size or 1, num_queries or 1, num_kvpairs)``, boolean, or None
    """
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    masks = []
    if valid_lens is not None:
        _check_valid_lens_shape(valid_lens, batch_size, num_queries)
        mask = sequence_mask(valid_lens.to(device), num_kvpairs)
        if valid_lens.dim() == 1:
            mask = mask.unsqueeze(1)  # (batch, kvpairs) -> (batch, 1, kvpairs)
        masks.append(mask)
    if causal:
        masks.append(causal_mask(num_queries, num_kvpairs, device=device))  # (queries, kvpairs)
    if attn_mask is not None:
        target = (batch_size, num_queries, num_kvpairs)
        require_bool_mask("attn_mask", attn_mask, target, "(batch_size, num_queries, num_kvpairs)")
        masks.append(attn_mask.to(device))
    if not masks:
        return None
    combined = masks[0]
    for mask in masks[1:]:
        combined = combined & mask
    while combined.dim() < 3:
        combined = combined.unsqueeze(0)  # (queries, kvpairs) -> (1, queries, kvpairs)
    return combined


def _check_valid_lens_values(valid_lens: Tensor, num_kvpairs: int) -> None:
    if not isinstance(valid_lens, Tensor):
        raise TypeError(f"valid_lens must be a tensor of integers, got {type(valid_lens).__name__}")
    if valid_lens.dtype.is_floating_point or valid_lens.dtype.is_complex or valid_lens.dtype == torch.bool:
        raise TypeError(
            f"valid_lens must hold integers (e.g. torch.long), got dtype {valid_lens.dtype}; "
            "a length of 2.5 key-value pairs has no meaning"
        )
    if valid_lens.numel() and (valid_lens.min() < 0 or valid_lens.max() > num_kvpairs):
        raise ValueError(
            f"valid_lens must lie in [0, {num_kvpairs}] (the number of key-value pairs), "
            f"got values from {valid_lens.min().item()} to {valid_lens.max().item()}"
        )


def _check_valid_lens_shape(valid_lens: Tensor, batch_size: int, num_queries: int) -> None:
    if not isinstance(valid_lens, Tensor):
        raise TypeError(f"valid_lens must be a tensor of integers, got {type(valid_lens).__name__}")
    if tuple(valid_lens.shape) not in ((batch_size,), (batch_size, num_queries)):
        raise ValueError(
            f"valid_lens must have shape ({batch_size},) or ({batch_size}, {num_queries}), "
            f"i.e. (batch_size,) or (batch_size, num_queries), got {tuple(valid_lens.shape)}"
        )

