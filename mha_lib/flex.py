"""Masks and position biases as small functions, in the form of PyTorch's FlexAttention.

``torch.nn.attention.flex_attention`` (PyTorch >= 2.5) describes a mask by a function instead of a tensor:

- a ``mask_mod(b, h, q_idx, kv_idx) -> bool`` says whether query ``q_idx`` of batch entry ``b``, head ``h``
  may attend to key ``kv_idx`` (True = may attend, the polarity of :mod:`mha_lib.masks`);
- a ``score_mod(score, b, h, q_idx, kv_idx) -> score`` changes one scaled score before the softmax
  (a position bias, a cap).

Each builder here returns such a function. The functions use only element-wise tensor operations and
indexing, so they also work on whole broadcast grids of indices: :func:`dense_mask` and
:func:`apply_score_mod` call them that way, giving the dense tensor every mask can be checked against.

Glossary: ``batch_size``, ``num_heads``, ``num_queries`` and ``num_kvpairs`` as in the rest of the library;
``block_size`` is the side of one tile of the score matrix.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
from collections.abc import Callable

import torch
from torch import Tensor

from ._validation import (
    require_bool,
    require_int_tensor,
    require_nonnegative_int,
    require_positive_int,
    require_positive_real,
    require_tensor,
    wrong_type,
)
from .i18n import N_, _

__all__ = [
    "MaskMod", "ScoreMod", "alibi_score_mod", "alibi_slopes", "apply_score_mod", "block_tiles", "causal_mask_mod",
    "dense_mask", "document_mask_mod", "flex_attention_available", "key_padding_mask_mod", "padding_mask_mod",
    "prefix_lm_mask_mod", "relative_bias_score_mod", "sink_mask_mod", "sliding_window_mask_mod",
    "softcap_score_mod",
]

MaskMod = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
ScoreMod = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]

SKIPPED, PARTIAL, FULL = 0, 1, 2  # the three kinds of tile in block_tiles


def flex_attention_available() -> bool:
    """True if this torch has ``torch.nn.attention.flex_attention`` (PyTorch 2.5 or newer)."""
    try:
        return importlib.util.find_spec("torch.nn.attention.flex_attention") is not None
    except ModuleNotFoundError:
        return False


# ----- mask_mods ----------------------------------------------------------------------------------------------------


def padding_mask_mod(valid_lens: Tensor) -> MaskMod:
    """d2l's ``valid_lens``: batch entry ``b`` sees its first ``valid_lens[b]`` keys only.

    A row with ``valid_lens[b] == 0`` sees no key at all.

    Shape:
        - valid_lens: ``(batch_size,)``, integer, each ``>= 0``
    """
    valid_lens = require_int_tensor("valid_lens", valid_lens, (1,), N_("of shape (batch_size,)"))
    if valid_lens.numel() and int(valid_lens.min()) < 0:
        raise ValueError(_("valid_lens must be >= 0, got {valid_lens}").format(valid_lens=valid_lens.tolist()))

    def padding(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return kv_idx < valid_lens[b]

    return padding


def key_padding_mask_mod(key_padding_mask: Tensor) -> MaskMod:
    """``nn.MultiheadAttention``'s ``key_padding_mask`` (True = IGNORE this key), turned into True = may attend.

    Shape:
        - key_padding_mask: ``(batch_size, num_kvpairs)``, boolean, True where a key is padding
    """
    if not isinstance(key_padding_mask, Tensor) or key_padding_mask.dtype != torch.bool:
        got = key_padding_mask.dtype if isinstance(key_padding_mask, Tensor) else type(key_padding_mask).__name__
        raise TypeError(_("key_padding_mask must be a boolean tensor (True = ignore), got {got}").format(got=got))
    if key_padding_mask.dim() != 2:
        template = _("key_padding_mask must have shape (batch_size, num_kvpairs), got {shape}")
        raise ValueError(template.format(shape=tuple(key_padding_mask.shape)))

    def not_padding(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return ~key_padding_mask[b, kv_idx]  # the polarity flips here, once

    return not_padding


def causal_mask_mod() -> MaskMod:
    """Query ``i`` sees keys ``0..i`` (top-left aligned, like ``is_causal=True``)."""

    def causal(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return kv_idx <= q_idx

    return causal


def sliding_window_mask_mod(window: int, *, causal: bool = False) -> MaskMod:
    """Local attention: query ``i`` sees the keys fewer than ``window`` positions away.

    With ``causal=True`` it sees key ``i`` and the ``window - 1`` keys before it; without, also the
    ``window - 1`` keys after it.
    """
    window = require_positive_int("window", window)
    require_bool("causal", causal)

    def local(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return (q_idx - kv_idx).abs() < window

    def causal_local(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return (kv_idx <= q_idx) & (q_idx - kv_idx < window)

    return causal_local if causal else local


def prefix_lm_mask_mod(prefix_len: int | Tensor) -> MaskMod:
    """Prefix-LM: every query sees the whole prefix (bidirectional), the rest is causal.

    Shape:
        - prefix_len: an int, or ``(batch_size,)`` integer (one prefix length per batch entry)
    """
    if isinstance(prefix_len, Tensor):
        prefix_len = require_int_tensor("prefix_len", prefix_len, (1,), N_("of shape (batch_size,)"))
        if prefix_len.device.type == "cpu" and prefix_len.numel() and int(prefix_len.min()) < 0:
            template = _("prefix_len must hold ints >= 0, got {prefix_len}")
            raise ValueError(template.format(prefix_len=prefix_len.tolist()))

        def prefix_of(b: Tensor) -> Tensor:
            return prefix_len[b]
    else:
        length = require_nonnegative_int("prefix_len", prefix_len)

        def prefix_of(b: Tensor) -> int:
            return length

    def prefix_lm(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return (kv_idx < prefix_of(b)) | (kv_idx <= q_idx)

    return prefix_lm


def document_mask_mod(document_ids: Tensor, *, causal: bool = True) -> MaskMod:
    """Packed documents: a token sees only tokens of its own document (and, if causal, not later ones).

    Shape:
        - document_ids: ``(batch_size, sequence)`` integer, the document each position belongs to
    """
    document_ids = require_int_tensor("document_ids", document_ids, (2,), N_("of shape (batch_size, sequence)"))
    require_bool("causal", causal)

    def same_document(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        same = document_ids[b, q_idx] == document_ids[b, kv_idx]
        return same & (kv_idx <= q_idx) if causal else same

    return same_document


def sink_mask_mod(num_sink_tokens: int = 1) -> MaskMod:
    """Attention sink: every query sees the first ``num_sink_tokens`` keys. Combine it with ``or_masks``."""
    num_sink_tokens = require_positive_int("num_sink_tokens", num_sink_tokens)

    def sink(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return kv_idx < num_sink_tokens

    return sink


# ----- score_mods ---------------------------------------------------------------------------------------------------


def alibi_slopes(num_heads: int) -> Tensor:
    """ALiBi's per-head slopes: the geometric sequence of Press et al. (2022), float32.

    For ``num_heads`` a power of two, head ``h`` (from 0) has slope ``2 ** (-8 * (h + 1) / num_heads)``.
    Otherwise the paper's code takes the slopes of the power of two just below, then every other slope of
    the power of two just above.

    Shape:
        - output: ``(num_heads,)``
    """
    num_heads = require_positive_int("num_heads", num_heads)
    return torch.tensor(_alibi_slopes(num_heads), dtype=torch.float32)


def _alibi_slopes(num_heads: int) -> list[float]:
    power = 2 ** math.floor(math.log2(num_heads))  # the largest power of two <= num_heads
    slopes = [2 ** (-8 * (h + 1) / power) for h in range(power)]
    if power < num_heads:
        slopes += [2 ** (-8 * (h + 1) / (2 * power)) for h in range(0, 2 * power, 2)][: num_heads - power]
    return slopes


def alibi_score_mod(num_heads: int) -> ScoreMod:
    """ALiBi: add ``slope[h] * (kv_idx - q_idx)`` to each score; with a causal mask that is ``-slope * distance``."""
    slopes = alibi_slopes(num_heads)  # (num_heads,)

    def alibi(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return score + slopes.to(h.device)[h] * (kv_idx - q_idx)  # the slopes go where the indices are

    alibi.num_heads = len(slopes)  # one slope per head: apply_score_mod checks the scores have as many
    return alibi


def relative_bias_score_mod(table: Tensor) -> ScoreMod:
    """A learned relative-position bias: add ``table[h, kv_idx - q_idx]``, distances clipped to the table.

    Column ``max_distance - 1`` of the table holds distance 0; farther distances share the edge columns
    (the clipping of Shaw et al. 2018).

    Shape:
        - table: ``(num_heads, 2 * max_distance - 1)``, floating-point
    """
    table = require_tensor("table", table, 2, "(num_heads, 2 * max_distance - 1)")
    if table.shape[1] % 2 == 0:
        template = _("table must have an odd number of columns (2 * max_distance - 1), got shape {shape}")
        raise ValueError(template.format(shape=tuple(table.shape)))
    max_distance = (table.shape[1] + 1) // 2

    def relative_bias(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        distance = (kv_idx - q_idx).clamp(-(max_distance - 1), max_distance - 1)
        return score + table[h, distance + max_distance - 1]

    relative_bias.num_heads = table.shape[0]  # one row per head: apply_score_mod checks the scores have as many
    return relative_bias


def softcap_score_mod(cap: float) -> ScoreMod:
    """Tanh soft-capping: ``cap * tanh(score / cap)`` keeps every score inside ``(-cap, cap)`` (Gemma 2 uses 50)."""
    # A captured 0-d tensor, not a Python float: torch.compile (which flex_attention uses even when called
    # eagerly in PyTorch 2.15, the newest release pyproject.toml admits, run by make test-torch-newest) turns a
    # captured float into a symbolic input that flex rejects.
    cap = torch.tensor(require_positive_real("cap", cap), dtype=torch.float64)

    def softcap(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        limit = cap.to(score)  # score's dtype and device
        return limit * torch.tanh(score / limit)

    return softcap


# ----- the dense forms, to check against ----------------------------------------------------------------------------


def _require_arity(name: str, function: Callable, count: int, parameters: str) -> None:
    """Require a function that can be called with ``count`` positional arguments, named ``parameters``."""
    try:
        inspect.signature(function).bind(*range(count))
    except TypeError:
        template = _("{name} must take {count} arguments {parameters}, got a function of {signature}")
        raise TypeError(template.format(name=name, count=count, parameters=_(parameters),
                                        signature=inspect.signature(function))) from None
    except ValueError:  # a builtin without a signature: let the call tell
        pass


def _index_grids(batch_size: int, num_heads: int, num_queries: int, num_kvpairs: int,
                 device: torch.device | str | None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    b = torch.arange(batch_size, device=device).view(-1, 1, 1, 1)  # (batch_size, 1, 1, 1)
    h = torch.arange(num_heads, device=device).view(1, -1, 1, 1)  # (1, num_heads, 1, 1)
    q_idx = torch.arange(num_queries, device=device).view(1, 1, -1, 1)  # (1, 1, num_queries, 1)
    kv_idx = torch.arange(num_kvpairs, device=device).view(1, 1, 1, -1)  # (1, 1, 1, num_kvpairs)
    return b, h, q_idx, kv_idx


def dense_mask(mask_mod: MaskMod, batch_size: int, num_heads: int, num_queries: int, num_kvpairs: int, *,
               device: torch.device | str | None = None) -> Tensor:
    """Evaluate ``mask_mod`` at every (b, h, q_idx, kv_idx) at once: the dense boolean mask (True = may attend).

    Shape:
        - output: ``(batch_size, num_heads, num_queries, num_kvpairs)``, boolean
    """
    if not callable(mask_mod):
        raise wrong_type("mask_mod", _("a function (b, h, q_idx, kv_idx) -> bool"), mask_mod)
    sizes = [require_positive_int(name, value) for name, value in (
        ("batch_size", batch_size), ("num_heads", num_heads), ("num_queries", num_queries),
        ("num_kvpairs", num_kvpairs))]
    _require_arity("mask_mod", mask_mod, 4, N_("(b, h, q_idx, kv_idx)"))
    grids = _index_grids(*sizes, device)
    try:
        mask = torch.as_tensor(mask_mod(*grids), device=device)
    except IndexError as error:  # a mask_mod built from a tensor with fewer rows than batch_size or num_kvpairs
        template = _("mask_mod indexes past the end of the tensor it was built from, at batch_size={batch_size}, "
                     "num_queries={num_queries}, num_kvpairs={num_kvpairs}: {error}; build it from a tensor of "
                     "these sizes (valid_lens of shape (batch_size,), for one)")
        raise ValueError(template.format(batch_size=batch_size, num_queries=num_queries, num_kvpairs=num_kvpairs,
                                         error=error)) from error
    return mask.to(torch.bool).expand(*sizes).contiguous()  # broadcast -> (batch, heads, queries, kvpairs)


def apply_score_mod(score_mod: ScoreMod, scores: Tensor) -> Tensor:
    """Apply ``score_mod`` to a whole tensor of scaled scores at once: what flex_attention does inside.

    A score_mod that holds one value per head (:func:`alibi_score_mod`, :func:`relative_bias_score_mod`) records
    its ``num_heads``, and the scores must have as many.

    Shape:
        - scores: ``(batch_size, num_heads, num_queries, num_kvpairs)``, floating-point
        - output: same shape
    """
    if not callable(score_mod):
        raise wrong_type("score_mod", _("a function (score, b, h, q_idx, kv_idx) -> score"), score_mod)
    scores = require_tensor("scores", scores, 4, "(batch_size, num_heads, num_queries, num_kvpairs)")
    _require_arity("score_mod", score_mod, 5, N_("(score, b, h, q_idx, kv_idx)"))
    num_heads = getattr(score_mod, "num_heads", None)  # set by the builders that hold one row per head
    if num_heads is not None and num_heads != scores.shape[1]:
        template = _("score_mod was built for num_heads={num_heads}, but scores has {got} heads (axis 1 of shape "
                     "{shape}); build it for {got} heads")
        raise ValueError(template.format(num_heads=num_heads, got=scores.shape[1], shape=tuple(scores.shape)))
    grids = _index_grids(*scores.shape, scores.device)
    return score_mod(scores, *grids).expand(scores.shape)


def block_tiles(mask: Tensor, block_size: int) -> Tensor:
    """Sort the ``block_size`` x ``block_size`` tiles of a mask: 0 skipped (nothing visible), 1 partial, 2 full.

    A tile at the edge that the sizes cut short is judged on the entries it has.

    Shape:
        - mask: ``(..., num_queries, num_kvpairs)``, boolean
        - output: ``(..., ceil(num_queries / block_size), ceil(num_kvpairs / block_size))``, int64
    """
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.dim() < 2:
        got = (_("shape {shape}, dtype {dtype}").format(shape=tuple(mask.shape), dtype=mask.dtype)
               if isinstance(mask, Tensor) else type(mask).__name__)
        raise TypeError(_("mask must be a boolean tensor (..., num_queries, num_kvpairs), got {got}").format(got=got))
    block_size = require_positive_int("block_size", block_size)
    *lead, num_queries, num_kvpairs = mask.shape
    rows, cols = -(-num_queries // block_size), -(-num_kvpairs // block_size)
    pad = (0, cols * block_size - num_kvpairs, 0, rows * block_size - num_queries)
    visible = torch.nn.functional.pad(mask.to(torch.int64), pad)  # (..., rows*bs, cols*bs); padding is 0
    inside = torch.nn.functional.pad(torch.ones(num_queries, num_kvpairs, dtype=torch.int64, device=mask.device), pad)
    tiles = visible.reshape(*lead, rows, block_size, cols, block_size).sum(dim=(-3, -1))  # (..., rows, cols)
    sizes = inside.reshape(rows, block_size, cols, block_size).sum(dim=(-3, -1))  # (rows, cols)
    return torch.where(tiles == 0, SKIPPED, torch.where(tiles == sizes, FULL, PARTIAL))
