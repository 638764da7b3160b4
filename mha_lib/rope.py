"""Rotary position embedding (RoPE): each head's queries and keys turned, pair of features by pair, by their position.

Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding" (2021, arXiv:2104.09864). A query or key
at position ``m`` has its feature pair ``i`` turned by the angle ``m * theta_i``, with
``theta_i = base ** (-2 * i / head_dim)`` for ``i = 0 .. head_dim/2 - 1``. Turning both sides of a dot product
leaves only the difference of their angles, so the score of positions ``m`` and ``n`` depends on ``m - n``.

Which two features form pair ``i`` is a convention, and the two in use are not interchangeable:

    interleaved  features 2i and 2i+1 (RoFormer, Meta's original Llama code, GPT-J)
    halves       features i and i + head_dim/2 (GPT-NeoX, Hugging Face's ``rotate_half``)

A checkpoint moves from one to the other by permuting the rows of ``W_q`` and ``W_k`` inside each head
(:func:`interleaved_to_halves`, :func:`halves_to_interleaved`), biases too, each with its own number of heads:
``W_q`` with ``num_heads``, ``W_k`` with ``num_kv_heads`` under grouped-query attention. Dimension names as in
:mod:`mha_lib.functional`; ``seq_len`` is the length of the sequence whose positions are given.

The file reads top to bottom: the computations, which trust their arguments, then the public functions, which check
them, then :class:`RotaryEmbedding`, the part a layer holds (``MultiHeadAttention(..., rope="halves")``).
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor, nn

from ._validation import (
    require_device,
    require_int_tensor,
    require_positive_int,
    require_positive_real,
    require_tensor,
    wrong_type,
)
from .i18n import _

__all__ = ["CONVENTIONS", "RotaryEmbedding", "apply_rope", "halves_to_interleaved", "interleaved_to_halves",
           "rope_frequencies", "rotate_half", "rotate_pairs"]

CONVENTIONS = ("interleaved", "halves")  # which features form a pair: (2i, 2i+1) or (i, i + head_dim/2)


# ----- the computations: they trust their arguments ------------------------------------------------------------------


def _rope_frequencies(head_dim: int, base: float, dtype: torch.dtype, device: torch.device | None) -> Tensor:
    exponents = torch.arange(0, head_dim, 2, dtype=dtype, device=device) / head_dim  # 2i / head_dim
    return base ** -exponents  # (head_dim/2,): theta_0 = 1, ..., theta_{d/2-1} close to 1/base


def _rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)  # the first and the second half of the features
    return torch.cat([-x2, x1], dim=-1)  # pair (x1_i, x2_i) -> (-x2_i, x1_i): a quarter turn


def _rotate_pairs(x: Tensor) -> Tensor:
    pairs = x.unflatten(-1, (-1, 2))  # (..., head_dim) -> (..., head_dim/2, 2): pair i = features 2i, 2i+1
    return torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)  # (a, b) -> (-b, a), -> (..., head_dim)


def _apply_rope(x: Tensor, positions: Tensor, convention: str, base: float) -> Tensor:
    dtype = torch.promote_types(x.dtype, torch.float32)  # angles in float32 at least, also for float16 inputs
    theta = _rope_frequencies(x.shape[-1], base, dtype, x.device)  # (head_dim/2,)
    angles = positions.to(dtype).unsqueeze(-1) * theta  # (seq_len, 1) * (head_dim/2,) -> (seq_len, head_dim/2)
    if convention == "halves":  # features i and i + head_dim/2 share angle i
        angles, rotated = torch.cat([angles, angles], dim=-1), _rotate_half(x)
    else:  # interleaved: features 2i and 2i+1 share angle i
        angles, rotated = angles.repeat_interleave(2, dim=-1), _rotate_pairs(x)
    # Each pair (a, b) becomes (a cos - b sin, b cos + a sin): a turn by its angle. -> (..., seq_len, head_dim)
    return (x * angles.cos() + rotated * angles.sin()).to(x.dtype)


def _permute_rows(weight: Tensor, num_heads: int, to_halves: bool) -> Tensor:
    rows, *rest = weight.shape
    head_dim = rows // num_heads
    if to_halves:  # row 2i + j of a head -> row j * head_dim/2 + i
        split = weight.reshape(num_heads, head_dim // 2, 2, *rest)  # (h, pair i, member j, ...)
    else:  # row j * head_dim/2 + i of a head -> row 2i + j
        split = weight.reshape(num_heads, 2, head_dim // 2, *rest)  # (h, member j, pair i, ...)
    return split.transpose(1, 2).reshape(rows, *rest)  # swap pair and member inside each head, -> (rows, ...)


# ----- the public functions: check, then compute ---------------------------------------------------------------------


def _require_convention(convention: object) -> str:
    if not isinstance(convention, str) or convention not in CONVENTIONS:
        template = _("convention must be 'interleaved' (pairs 2i, 2i+1: RoFormer, Meta's Llama code, GPT-J) or "
                     "'halves' (pairs i, i + head_dim/2: GPT-NeoX, Hugging Face's rotate_half), got {convention!r}")
        error = ValueError if isinstance(convention, str) else TypeError
        raise error(template.format(convention=convention))
    return convention


def _require_even(name: str, size: int) -> None:
    if size % 2:
        template = _("{name} must be even, got {size}: rotary position embedding turns the features in pairs")
        raise ValueError(template.format(name=name, size=size))


def _require_features(name: str, x: object) -> Tensor:
    """A floating-point tensor with an even last axis, the features of one head."""
    require_tensor(name, x, None, "(..., head_dim)")
    if x.dim() < 1:
        template = _("{name} must have at least 1 axis (..., head_dim), got shape {shape}")
        raise ValueError(template.format(name=name, shape=tuple(x.shape)))
    _require_even(_("the last axis of {name} (head_dim)").format(name=name), x.shape[-1])
    return x


def rope_frequencies(head_dim: int, base: float = 10000.0) -> Tensor:
    """The angle per position of each feature pair, ``theta_i = base ** (-2i / head_dim)``, in float64.

    Shape:
        - output: ``(head_dim // 2,)``
    """
    head_dim = require_positive_int("head_dim", head_dim)
    _require_even("head_dim", head_dim)
    return _rope_frequencies(head_dim, require_positive_real("base", base), torch.float64, None)


def rotate_half(x: Tensor) -> Tensor:
    """Hugging Face's ``rotate_half``: ``(x1, x2) -> (-x2, x1)`` for the two halves of the features.

    A quarter turn of every pair (i, i + head_dim/2), the ``halves`` convention.

    Shape:
        - x: ``(..., head_dim)``, head_dim even
        - output: ``(..., head_dim)``
    """
    return _rotate_half(_require_features("x", x))


def rotate_pairs(x: Tensor) -> Tensor:
    """The quarter turn of the ``interleaved`` convention: ``(x_2i, x_2i+1) -> (-x_2i+1, x_2i)`` for every pair.

    Shape:
        - x: ``(..., head_dim)``, head_dim even
        - output: ``(..., head_dim)``
    """
    return _rotate_pairs(_require_features("x", x))


def apply_rope(x: Tensor, positions: Tensor | None = None, *, convention: str, base: float = 10000.0) -> Tensor:
    """Turn every feature pair ``i`` of ``x`` at position ``m`` by the angle ``m * base ** (-2i / head_dim)``.

    ``positions`` None means ``0, 1, ..., seq_len - 1``. Call it after the head split, on each head's queries and
    keys (never on the values): a pair must be two features of the same head.

    Shape:
        - x: ``(..., seq_len, head_dim)``, head_dim even, e.g. ``(batch_size, num_heads, seq_len, head_dim)``
        - positions: ``(seq_len,)``, integers, or None
        - output: ``(..., seq_len, head_dim)``, the dtype of ``x``
    """
    _require_features("x", x)
    if x.dim() < 2:
        template = _("x must have at least 2 axes (..., seq_len, head_dim), got shape {shape}")
        raise ValueError(template.format(shape=tuple(x.shape)))
    convention = _require_convention(convention)
    base = require_positive_real("base", base)
    seq_len = x.shape[-2]
    if positions is None:
        positions = torch.arange(seq_len, device=x.device)
    require_int_tensor("positions", positions, (1,), "(seq_len,)")
    if positions.shape[0] != seq_len:
        template = _("positions must hold one position per row of x, shape ({seq_len},), got shape {shape}")
        raise ValueError(template.format(seq_len=seq_len, shape=tuple(positions.shape)))
    require_device("positions", positions, x.device, other="x")
    return _apply_rope(x, positions, convention, base)


def _require_weight(weight: object, num_heads: object) -> int:
    """A projection's weight (or bias) whose rows are num_heads heads of an even head_dim; return num_heads."""
    require_tensor("weight", weight, None, "(num_heads * head_dim, in_features)")
    num_heads = require_positive_int("num_heads", num_heads)
    if weight.dim() not in (1, 2) or weight.shape[0] % num_heads:
        template = _("weight must be a W_q or W_k weight (num_heads * head_dim, in_features) or its bias "
                     "(num_heads * head_dim,), with num_heads={num_heads} dividing its rows, got shape {shape}")
        raise ValueError(template.format(num_heads=num_heads, shape=tuple(weight.shape)))
    _require_even("head_dim", weight.shape[0] // num_heads)
    return num_heads


def interleaved_to_halves(weight: Tensor, num_heads: int) -> Tensor:
    """The rows of ``W_q`` or ``W_k`` (or its bias) reordered so that the ``halves`` convention gives the scores
    that the ``interleaved`` one gave with ``weight``: inside each head, row ``2i + j`` moves to ``j * head_dim/2 + i``.

    In einops notation: ``'(h i two) ... -> (h two i) ...'``. ``num_heads`` is the number of heads whose rows
    ``weight`` holds: the layer's ``num_heads`` for ``W_q``, its ``num_kv_heads`` for ``W_k`` (they differ under
    grouped-query attention, and the wrong one gives other scores without an error). Convert a projection's bias
    with its weight; never ``W_v``. This is what Hugging Face's Llama conversion script does to Meta's checkpoints,
    ``k_proj`` with ``num_key_value_heads``.

    Shape:
        - weight: ``(num_heads * head_dim, in_features)`` or ``(num_heads * head_dim,)``
        - output: the shape of ``weight``
    """
    return _permute_rows(weight, _require_weight(weight, num_heads), to_halves=True)


def halves_to_interleaved(weight: Tensor, num_heads: int) -> Tensor:
    """The inverse of :func:`interleaved_to_halves`: inside each head, row ``j * head_dim/2 + i`` moves to ``2i + j``.

    In einops notation: ``'(h two i) ... -> (h i two) ...'``.

    Shape:
        - weight: ``(num_heads * head_dim, in_features)`` or ``(num_heads * head_dim,)``
        - output: the shape of ``weight``
    """
    return _permute_rows(weight, _require_weight(weight, num_heads), to_halves=False)


class RotaryEmbedding(nn.Module):
    """The rotary position embedding a layer applies to its queries and keys after the head split.

    It holds no parameters (the angles are computed from the positions), so a layer's ``state_dict`` is the same with
    and without it. ``forward`` trusts its arguments, which the layer holding it has checked; :func:`apply_rope` is
    the same computation, checked.

    Shape:
        - queries: ``(..., num_queries, head_dim)``, at positions ``start, start + 1, ...``
        - keys: ``(..., num_kvpairs, head_dim)``, at positions ``start, start + 1, ...``
        - output: both, turned, in the same shapes
    """

    def __init__(self, head_dim: int, convention: str, base: float = 10000.0) -> None:
        super().__init__()
        self.head_dim = require_positive_int("head_dim", head_dim)
        _require_even("head_dim", self.head_dim)
        self.convention = _require_convention(convention)
        self.base = require_positive_real("base", base)

    def forward(self, queries: Tensor, keys: Tensor, start: int = 0) -> tuple[Tensor, Tensor]:
        if isinstance(start, bool) or not isinstance(start, numbers.Integral):
            raise wrong_type("start", _("an int"), start)
        query_positions = torch.arange(start, start + queries.shape[-2], device=queries.device)
        key_positions = torch.arange(start, start + keys.shape[-2], device=keys.device)
        return (_apply_rope(queries, query_positions, self.convention, self.base),
                _apply_rope(keys, key_positions, self.convention, self.base))

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, convention={self.convention!r}, base={self.base:g}"
