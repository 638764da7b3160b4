"""Attention without the n x n matrix (chapter 10): online softmax, tiled attention, its memory and a tile figure.

Dimension names are those of :mod:`mha_lib.functional`; here ``...`` stands for any leading axes
(``batch_size * num_heads`` after :func:`mha_lib.transpose_qkv`, or ``(batch_size, num_heads)``), and
``tile_size`` is the number of key-value pairs handled in one step.

The two recurrences:

- online softmax (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax"): one pass over
  the scores keeps a running maximum ``m`` and a running sum ``l`` of ``exp(score - m)``; when ``m``
  grows, the old sum is rescaled by ``exp(m_old - m_new)``.
- tiled attention (the FlashAttention recurrence, Dao et al. 2022): the same, with an output
  accumulator that is rescaled together with ``l``, so that only one tile of scores exists at a time.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import NamedTuple

import matplotlib.patches as mpatches
import matplotlib.ticker as ticker
import torch
from matplotlib.figure import Figure
from torch import Tensor
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from mha_lib._validation import (
    require_bool,
    require_bool_mask,
    require_positive_int,
    require_qk_features,
    require_qkv,
    require_tensor,
    wrong_type,
)

from .i18n import N_, _, figure_text, tr

__all__ = [
    "SoftmaxStep",
    "TileSizeReport",
    "flash_attention_backward",
    "flash_attention_forward",
    "full_score_bytes",
    "io_bytes",
    "measure_peak_bytes",
    "num_tiles",
    "online_softmax",
    "online_softmax_steps",
    "plot_io_by_tile",
    "plot_memory_by_tile",
    "plot_tiles",
    "tile_size_report",
    "tiled_attention",
    "tiled_state_bytes",
]


def online_softmax(x: Tensor, tile_size: int = 1) -> Tensor:
    """Softmax over the last axis whose normaliser is found in one pass, ``tile_size`` entries at a time.

    Gives what ``torch.softmax(x, dim=-1)`` gives, including NaN for a row that is all -inf.

    Shape:
        - x: ``(..., n)``, floating point
        - output: same as ``x``
    """
    require_tensor("x", x, None, "(..., n)")
    if x.dim() == 0:
        raise ValueError(_("x must have at least one axis (..., n), got a 0-D tensor"))
    tile_size = _require_tile_size(tile_size)
    running_max = x.new_full(x.shape[:-1], -math.inf)  # (...,) the largest entry seen so far
    running_sum = x.new_zeros(x.shape[:-1])  # (...,) the sum of exp(entry - running_max) so far
    for start in range(0, x.shape[-1], tile_size):
        tile = x[..., start:start + tile_size]  # (..., tile)
        new_max = torch.maximum(running_max, tile.amax(dim=-1))  # (...,)
        shift = _finite(new_max)
        # the old sum was taken relative to the old maximum: rescale it to the new one
        running_sum = running_sum * torch.exp(running_max - shift) + torch.exp(tile - shift[..., None]).sum(dim=-1)
        running_max = new_max
    return torch.exp(x - running_max[..., None]) / running_sum[..., None]  # (..., n)


class SoftmaxStep(NamedTuple):
    """One step of :func:`online_softmax` on a single row: what arrived and what is kept."""

    step: int
    tile: tuple[float, ...]
    tile_max: float
    running_max: float
    rescale: float
    running_sum: float


def online_softmax_steps(x: Tensor, tile_size: int = 1) -> list[SoftmaxStep]:
    """The running maximum, the rescale factor of the old sum and the running sum after each tile of one row.

    Shape:
        - x: ``(n,)``, floating point
    """
    require_tensor("x", x, 1, "(n,)")
    tile_size = _require_tile_size(tile_size)
    running_max, running_sum, rows = -math.inf, 0.0, []
    for step, start in enumerate(range(0, x.numel(), tile_size)):
        tile = x[start:start + tile_size].double()
        new_max = max(running_max, tile.max().item())
        rescale = math.exp(running_max - new_max) if new_max > -math.inf else 0.0
        running_sum = running_sum * rescale + torch.exp(tile - new_max).sum().item()
        rows.append(SoftmaxStep(step, tuple(tile.tolist()), tile.max().item(), new_max, rescale, running_sum))
        running_max = new_max
    return rows


def tiled_attention(
    queries: Tensor,
    keys: Tensor,
    values: Tensor,
    tile_size: int,
    mask: Tensor | None = None,
    causal: bool = False,
) -> Tensor:
    """Scaled dot-product attention computed ``tile_size`` key-value pairs at a time, never all scores at once.

    Same result as :func:`mha_lib.dot_product_attention` (and ``F.scaled_dot_product_attention``):
    ``mask`` is boolean with True = may attend; ``causal=True`` lets query ``i`` see keys ``0..i``
    (aligned top-left, as ``causal_mask``); a query that may attend to no key gets a zero output.
    With ``causal=True`` the tiles that lie wholly above the diagonal are skipped.

    Shape:
        - queries: ``(..., num_queries, d)``
        - keys: ``(..., num_kvpairs, d)``
        - values: ``(..., num_kvpairs, value_dim)``
        - mask: boolean, broadcastable to ``(..., num_queries, num_kvpairs)``
        - output: ``(..., num_queries, value_dim)``
    """
    require_qkv(queries, keys, values)
    require_qk_features(queries, keys)
    tile_size = _require_tile_size(tile_size)
    if not isinstance(causal, bool):
        raise TypeError(tr("causal must be True or False, got {causal!r}").format(causal=causal))
    *lead, num_queries, d = queries.shape
    num_kvpairs = values.shape[-2]
    if mask is not None:
        target = (*lead, num_queries, num_kvpairs)
        require_bool_mask("mask", mask, target, "(..., num_queries, num_kvpairs)")
        mask = mask.expand(target)  # a view: no copy, but every axis can now be sliced by tile
    queries = queries / math.sqrt(d)  # (..., num_queries, d), scaled once instead of every tile of scores
    output, _, running_sum = _over_key_tiles(queries, keys, values, tile_size, mask, 0 if causal else None)
    # a query that saw no visible key has running_sum 0 and output 0: divide by 1 to keep it 0, not NaN
    return output / running_sum.masked_fill(running_sum == 0, 1.0)[..., None]


def _over_key_tiles(queries: Tensor, keys: Tensor, values: Tensor, tile_size: int, mask: Tensor | None,
                    first_row: int | None) -> tuple[Tensor, Tensor, Tensor]:
    """The online-softmax loop over key tiles for already scaled queries: (unnormalised output, max, sum).

    ``first_row`` is None without causal masking, else the position of the first query row (its block's
    offset), so that row ``r`` sees keys ``0..first_row + r``; tiles wholly above the diagonal are skipped.
    """
    *lead, num_queries, _ = queries.shape
    num_kvpairs, value_dim = values.shape[-2:]
    running_max = queries.new_full((*lead, num_queries), -math.inf)  # (..., num_queries)
    running_sum = queries.new_zeros((*lead, num_queries))  # (..., num_queries)
    output = queries.new_zeros((*lead, num_queries, value_dim))  # (..., num_queries, value_dim), unnormalised
    causal = first_row is not None
    if causal:
        rows = torch.arange(first_row, first_row + num_queries, device=queries.device)[:, None]  # (num_queries, 1)
    # causal: from key first_row + num_queries on, every key lies above the diagonal of every query
    last = min(num_kvpairs, first_row + num_queries) if causal else num_kvpairs
    for start in range(0, last, tile_size):
        stop = min(start + tile_size, num_kvpairs)
        # (..., num_queries, d) @ (..., d, tile) -> (..., num_queries, tile): the only scores that exist now
        scores = queries @ keys[..., start:stop, :].transpose(-2, -1)
        hidden = None if mask is None else ~mask[..., start:stop]  # (..., num_queries, tile)
        if causal:
            above = torch.arange(start, stop, device=queries.device) > rows  # (num_queries, tile)
            hidden = above if hidden is None else hidden | above
        if hidden is not None:
            scores.masked_fill_(hidden, -math.inf)  # in place: scores is our own tensor
        new_max = torch.maximum(running_max, scores.amax(dim=-1))  # (..., num_queries)
        shift = _finite(new_max)
        rescale = torch.exp(running_max - shift)  # (..., num_queries): old sum and output to the new maximum
        weights = (scores - shift[..., None]).exp_()  # (..., num_queries, tile): unnormalised weights
        running_sum = running_sum * rescale + weights.sum(dim=-1)
        # (..., num_queries, tile) @ (..., tile, value_dim) -> (..., num_queries, value_dim)
        output = output * rescale[..., None] + weights @ values[..., start:stop, :]
        running_max = new_max
    return output, running_max, running_sum


def flash_attention_forward(queries: Tensor, keys: Tensor, values: Tensor, query_tile: int, key_tile: int,
                            causal: bool = False) -> tuple[Tensor, Tensor]:
    """Attention in the FlashAttention-2 order: an outer loop over blocks of queries, an inner one over key tiles.

    Each block of ``query_tile`` queries runs the online softmax of :func:`tiled_attention` over all key
    tiles and is finished (divided by its sum) before the next block starts; besides the output it keeps
    one number per query, the log-sum-exp ``m + log(l)`` of its scores, which is all the backward pass needs.

    Shape:
        - queries: ``(..., num_queries, d)``; keys: ``(..., num_kvpairs, d)``; values: ``(..., num_kvpairs, value_dim)``
        - output: ``(..., num_queries, value_dim)``; logsumexp: ``(..., num_queries)``
    """
    require_qkv(queries, keys, values)
    require_qk_features(queries, keys)
    query_tile, key_tile = _require_tile_size(query_tile, "query_tile"), _require_tile_size(key_tile, "key_tile")
    require_bool("causal", causal)
    queries = queries / math.sqrt(queries.shape[-1])  # (..., num_queries, d)
    outputs, logsumexps = [], []
    for start in range(0, queries.shape[-2], query_tile):
        block = queries[..., start:start + query_tile, :]  # (..., query_tile, d): one block of queries
        output, running_max, running_sum = _over_key_tiles(block, keys, values, key_tile, None,
                                                           start if causal else None)
        outputs.append(output / running_sum[..., None])  # (..., query_tile, value_dim), finished
        logsumexps.append(running_max + torch.log(running_sum))  # (..., query_tile)
    return torch.cat(outputs, dim=-2), torch.cat(logsumexps, dim=-1)


def flash_attention_backward(queries: Tensor, keys: Tensor, values: Tensor, output: Tensor, logsumexp: Tensor,
                             grad_output: Tensor, query_tile: int, key_tile: int,
                             causal: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """Gradients of :func:`flash_attention_forward` with respect to queries, keys and values, tile by tile.

    The weights are never stored: each tile's ``P = exp(S - logsumexp)`` is recomputed from the scores.
    With ``dP = dO V^T`` and ``D = rowsum(dO * O)``, the softmax's gradient is ``dS = P * (dP - D)``;
    then ``dV += P^T dO``, ``dK += dS^T Q / sqrt(d)`` and ``dQ += dS K / sqrt(d)``. The outer loop runs over
    key tiles (each key tile's ``dK``, ``dV`` finish there), the inner one over query blocks, as in FlashAttention-2.

    Shape:
        - queries, keys, values, output as in :func:`flash_attention_forward`; grad_output like output
        - logsumexp: ``(..., num_queries)``
        - returns: gradients shaped like queries, keys and values
    """
    require_qkv(queries, keys, values)
    require_qk_features(queries, keys)
    query_tile, key_tile = _require_tile_size(query_tile, "query_tile"), _require_tile_size(key_tile, "key_tile")
    require_bool("causal", causal)
    scale = 1 / math.sqrt(queries.shape[-1])
    num_queries, num_kvpairs = queries.shape[-2], keys.shape[-2]
    delta = (grad_output * output).sum(dim=-1)  # (..., num_queries): D = rowsum(dO * O), once
    grad_queries, grad_keys, grad_values = (torch.zeros_like(x) for x in (queries, keys, values))
    for k_start in range(0, num_kvpairs, key_tile):
        k_stop = min(k_start + key_tile, num_kvpairs)
        K_t, V_t = keys[..., k_start:k_stop, :], values[..., k_start:k_stop, :]  # (..., tile, d), (..., tile, dv)
        first_block = (k_start // query_tile) * query_tile if causal else 0  # earlier query blocks see none of it
        for q_start in range(first_block, num_queries, query_tile):
            rows = slice(q_start, min(q_start + query_tile, num_queries))
            scores = queries[..., rows, :] @ K_t.transpose(-2, -1) * scale  # (..., block, tile)
            if causal:
                query_pos = torch.arange(rows.start, rows.stop, device=queries.device)[:, None]
                scores = scores.masked_fill(torch.arange(k_start, k_stop, device=queries.device) > query_pos,
                                            -math.inf)
            weights = torch.exp(scores - logsumexp[..., rows, None])  # (..., block, tile): P, recomputed
            dO = grad_output[..., rows, :]  # (..., block, value_dim)
            grad_values[..., k_start:k_stop, :] += weights.transpose(-2, -1) @ dO  # (..., tile, value_dim)
            grad_weights = dO @ V_t.transpose(-2, -1)  # (..., block, tile): dP
            grad_scores = weights * (grad_weights - delta[..., rows, None])  # (..., block, tile): dS
            grad_queries[..., rows, :] += grad_scores @ K_t * scale  # (..., block, d)
            grad_keys[..., k_start:k_stop, :] += grad_scores.transpose(-2, -1) @ queries[..., rows, :] * scale
    return grad_queries, grad_keys, grad_values


def io_bytes(seq_len: int, head_dim: int, query_tile: int | None, dtype: torch.dtype = torch.float32) -> int:
    """A model of the bytes moved between slow memory (HBM, DRAM) and fast memory (SRAM, cache) by one head.

    ``query_tile=None``: the explicit path, which reads Q and K, writes the scores S, reads S and writes the
    weights P, reads P and V and writes O: ``4 * n * d + 4 * n**2`` numbers. Otherwise the FlashAttention-2
    forward pass with blocks of ``query_tile`` queries: Q read and O written once, the log-sum-exp written
    once, and K and V read once per block of queries: ``2 * n * d + n + 2 * n * d * ceil(n / query_tile)``.
    With the largest block that fits in M bytes of fast memory (``query_tile`` about M / d) that is the
    Theta(n**2 d**2 / M) of Dao et al. (2022), Theorem 2. A count, not a measurement.
    """
    for name, value in (("seq_len", seq_len), ("head_dim", head_dim)):
        require_positive_int(name, value)
    n, d = seq_len, head_dim
    if query_tile is None:
        numbers = 4 * n * d + 4 * n * n
    else:
        numbers = 2 * n * d + n + 2 * n * d * -(-n // _require_tile_size(query_tile, "query_tile"))
    return numbers * _itemsize(dtype)


def plot_io_by_tile(seq_len: int, head_dim: int, dtype: torch.dtype = torch.float32) -> Figure:
    """The modelled bytes of :func:`io_bytes` for blocks of 1 to ``seq_len`` queries, against the explicit path."""
    tiles = [2**k for k in range(seq_len.bit_length()) if 2**k <= seq_len]
    flash = [io_bytes(seq_len, head_dim, t, dtype) / 2**20 for t in tiles]
    explicit = io_bytes(seq_len, head_dim, None, dtype) / 2**20
    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.subplots()
    ax.plot(tiles, flash, "o-", color="#f28e2b", label=figure_text("FlashAttention-2 order: K, V read once per block"))
    ax.axhline(explicit, color="black", linestyle=":", label=figure_text("explicit: S and P written and read"))
    ax.axhline(io_bytes(seq_len, head_dim, seq_len, dtype) / 2**20, color="#6b6b6b", linestyle="--",
               label=figure_text("lower bound: Q, K, V read, O written once"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axis.set_minor_formatter(ticker.NullFormatter())
    ax.set(xlabel=figure_text("queries per block (query_tile)"), ylabel=figure_text("MiB moved (model)"),
           title=figure_text("Bytes between slow and fast memory, n={n}, d={d}\n(a model, not a measurement)")
           .format(n=seq_len, d=head_dim))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="upper right")
    return fig


def num_tiles(num_kvpairs: int, tile_size: int, *, num_queries: int | None = None, causal: bool = False) -> int:
    """How many tiles :func:`tiled_attention` computes: all of them, or with ``causal`` those touching the diagonal."""
    require_positive_int("num_kvpairs", num_kvpairs)
    tile_size = _require_tile_size(tile_size)
    if causal:
        require_positive_int("num_queries", num_queries)
        num_kvpairs = min(num_kvpairs, num_queries)
    return -(-num_kvpairs // tile_size)  # ceil: the last tile may be shorter


def full_score_bytes(batch_size: int, num_queries: int, num_kvpairs: int, dtype: torch.dtype = torch.float32) -> int:
    """Bytes of the whole score matrix ``(batch_size, num_queries, num_kvpairs)`` that the explicit path stores.

    ``batch_size`` counts every leading axis, e.g. ``batch_size * num_heads``. The weights after the
    softmax take as many bytes again.
    """
    for name, value in (("batch_size", batch_size), ("num_queries", num_queries), ("num_kvpairs", num_kvpairs)):
        require_positive_int(name, value)
    return batch_size * num_queries * num_kvpairs * _itemsize(dtype)


def tiled_state_bytes(batch_size: int, num_queries: int, num_kvpairs: int, value_dim: int, tile_size: int,
                      dtype: torch.dtype = torch.float32) -> int:
    """Bytes that tiled attention holds besides its inputs: one tile of scores and the running state.

    The tile of scores ``(batch_size, num_queries, min(tile_size, num_kvpairs))``, the running
    maximum and running sum ``(batch_size, num_queries)`` each, and the output accumulator
    ``(batch_size, num_queries, value_dim)``. ``batch_size`` counts every leading axis.
    """
    for name, value in (("batch_size", batch_size), ("num_queries", num_queries), ("num_kvpairs", num_kvpairs),
                        ("value_dim", value_dim)):
        require_positive_int(name, value)
    tile = min(_require_tile_size(tile_size), num_kvpairs)
    return batch_size * num_queries * (tile + 2 + value_dim) * _itemsize(dtype)


def measure_peak_bytes(fn: Callable[..., Tensor], *args: object, **kwargs: object) -> int:
    """Measure the most bytes that ``fn(*args, **kwargs)`` holds at once in tensors it allocated itself.

    Every tensor that a PyTorch call returns to Python is seen on its way out (a ``TorchFunctionMode``);
    a new storage adds its bytes, which are subtracted when the last tensor using it is freed. The
    tensors passed in do not count (views of them neither); the output does. Buffers that one call
    uses only inside C++ (e.g. inside ``F.scaled_dot_product_attention``) are not seen.
    """
    if not callable(fn):
        raise wrong_type("fn", _("callable"), fn)
    given = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    counter = _LiveBytes({a.untyped_storage().data_ptr() for a in given})
    with counter:
        output = fn(*args, **kwargs)
        del output
    return counter.peak


class _LiveBytes(TorchFunctionMode):
    """Count the bytes of the storages created inside the mode that are still alive, and their peak."""

    def __init__(self, external: set[int]) -> None:
        super().__init__()
        self.external, self.live, self.total, self.peak = external, {}, 0, 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 - PyTorch's protocol
        result = func(*args, **(kwargs or {}))
        for tensor in tree_flatten(result)[0]:
            if isinstance(tensor, Tensor):
                self._track(tensor)
        return result

    def _track(self, tensor: Tensor) -> None:
        storage = tensor.untyped_storage()
        key, nbytes = storage.data_ptr(), storage.nbytes()
        if key in self.external or nbytes == 0:
            return
        if key not in self.live:  # a new allocation, not a view or an in-place result
            self.live[key] = [nbytes, 0]
            self.total += nbytes
            self.peak = max(self.peak, self.total)
        self.live[key][1] += 1
        weakref.finalize(tensor, self._release, key)

    def _release(self, key: int) -> None:
        entry = self.live[key]
        entry[1] -= 1
        if entry[1] == 0:
            self.total -= entry[0]
            del self.live[key]


class TileSizeReport(NamedTuple):
    """What one tile size changes (memory, steps) and what it does not (the result)."""

    tile_size: int
    num_tiles: int
    max_abs_difference: float
    state_bytes: int
    measured_peak_bytes: int
    full_score_bytes: int


def tile_size_report(queries: Tensor, keys: Tensor, values: Tensor, tile_size: int) -> TileSizeReport:
    """Run :func:`tiled_attention` with one tile size: its largest difference from SDPA, and its memory.

    Shape:
        - queries: ``(..., num_queries, d)``; keys: ``(..., num_kvpairs, d)``; values: ``(..., num_kvpairs, value_dim)``
    """
    output = tiled_attention(queries, keys, values, tile_size)
    difference = (output - torch.nn.functional.scaled_dot_product_attention(queries, keys, values)).abs().max()
    *lead, num_queries, _ = queries.shape
    num_kvpairs, value_dim = values.shape[-2:]
    batch_size = math.prod(lead)
    return TileSizeReport(
        tile_size=tile_size,
        num_tiles=num_tiles(num_kvpairs, tile_size),
        max_abs_difference=difference.item(),
        state_bytes=tiled_state_bytes(batch_size, num_queries, num_kvpairs, value_dim, tile_size, queries.dtype),
        measured_peak_bytes=measure_peak_bytes(tiled_attention, queries, keys, values, tile_size),
        full_score_bytes=full_score_bytes(batch_size, num_queries, num_kvpairs, queries.dtype),
    )


def plot_memory_by_tile(batch_size: int, num_queries: int, num_kvpairs: int, value_dim: int, tile_size: int,
                        dtype: torch.dtype = torch.float32, measured: dict[int, int] | None = None) -> Figure:
    """Bytes tiled attention holds for every tile size, the chosen one marked, against the full score matrix.

    The line is the count of :func:`tiled_state_bytes`; ``measured`` maps tile sizes to peaks measured
    with :func:`measure_peak_bytes`, drawn as points beside it.
    """
    sizes = list(range(1, num_kvpairs + 1))
    held = [tiled_state_bytes(batch_size, num_queries, num_kvpairs, value_dim, t, dtype) / 2**20 for t in sizes]
    full = full_score_bytes(batch_size, num_queries, num_kvpairs, dtype) / 2**20
    chosen = tiled_state_bytes(batch_size, num_queries, num_kvpairs, value_dim, tile_size, dtype) / 2**20
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.subplots()
    ax.plot(sizes, held, color="#f28e2b", label=figure_text("tiled, counted: one tile of scores + running state"))
    if measured:
        tiles = sorted(measured)
        ax.plot(tiles, [measured[t] / 2**20 for t in tiles], "s", color="#4e79a7", markersize=5,
                label=figure_text("tiled, measured peak (eager PyTorch)"))
    ax.axhline(full, color="#6b6b6b", linestyle="--", label=figure_text("explicit: the whole score matrix"))
    ax.axhline(2 * full, color="black", linestyle=":", label=figure_text("explicit: scores and weights"))
    ax.plot([tile_size], [chosen], "o", color="#f28e2b", markeredgecolor="black", markersize=9,
            label=f"tile_size={tile_size}: {chosen:.2f} MiB")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set(xlabel=figure_text("tile_size (keys per tile)"), ylabel=figure_text("memory held (MiB)"),
           title=figure_text("Memory besides the inputs, {batch_size}×{num_queries} query rows, {num_kvpairs} keys")
           .format(batch_size=batch_size, num_queries=num_queries, num_kvpairs=num_kvpairs))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axis.set_minor_formatter(ticker.NullFormatter())
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)  # below: no line covered
    return fig


def plot_tiles(num_queries: int, num_kvpairs: int, tile_size: int, step: int, *, value_dim: int = 4,
               causal: bool = False) -> Figure:
    """Draw the score matrix cut into key tiles at one step of :func:`tiled_attention`, and what that step keeps.

    Left: finished tiles (their scores are gone), the tile in memory now, tiles still to come, and
    with ``causal`` the tiles skipped above the diagonal. Right: the entries held at this step (the
    tile of scores and the running state), beside the full score matrix the explicit computation stores.
    """
    for name, value in (("num_queries", num_queries), ("num_kvpairs", num_kvpairs), ("value_dim", value_dim)):
        require_positive_int(name, value)
    total = num_tiles(num_kvpairs, tile_size, num_queries=num_queries, causal=causal)
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < total:
        template = _("step must be an int in [0, {last}] (there are {total} tiles to compute), got {step!r}")
        raise ValueError(template.format(last=total - 1, total=total, step=step))
    colours = {"done": "#d9d9d9", "now": "#f28e2b", "later": "white", "skipped": "#6b6b6b"}
    fig = Figure(figsize=(12, 4.6), layout="constrained")
    grid_ax, state_ax = fig.subplots(1, 2, width_ratios=[3, 2])
    for start in range(0, num_kvpairs, tile_size):
        index = start // tile_size
        state = "done" if index < step else "now" if index == step else "later"
        if index >= total:
            state = "skipped"
        width = min(tile_size, num_kvpairs - start)
        grid_ax.add_patch(mpatches.Rectangle((start, 0), width, num_queries, facecolor=colours[state],
                                             edgecolor="black", linewidth=1.5))
    if causal:  # the hidden cells above the diagonal inside computed tiles
        for i in range(num_queries):
            for j in range(i + 1, min(num_kvpairs, num_queries)):
                grid_ax.add_patch(mpatches.Rectangle((j, i), 1, 1, facecolor="none", hatch="///",
                                                     edgecolor="#555555", linewidth=0))
    grid_ax.set_xticks(range(0, num_kvpairs + 1, tile_size))  # labelled ticks on the tile borders
    grid_ax.set_xticks(range(num_kvpairs + 1), minor=True)
    grid_ax.set_yticks(range(num_queries + 1), minor=True)
    grid_ax.grid(which="minor", color="#999999", linewidth=0.4)
    grid_ax.tick_params(which="minor", length=0)
    grid_ax.set(xlim=(0, num_kvpairs), ylim=(num_queries, 0), aspect="equal", xlabel=figure_text("keys"),
                ylabel=figure_text("queries"),
                title=figure_text("Scores, tile_size={tile_size}: step {step} of {total}").format(
                    tile_size=tile_size, step=step + 1, total=total))
    handles = [mpatches.Patch(facecolor=colours[k], edgecolor="black", label=figure_text(label)) for k, label in (
        ("done", N_("done: folded into the state, freed")), ("now", N_("in memory at this step")),
        ("later", N_("not computed yet")))]
    if causal:
        handles += [mpatches.Patch(facecolor="white", hatch="///", edgecolor="#555555",
                                   label=figure_text("hidden (causal)")),
                    mpatches.Patch(facecolor=colours["skipped"], edgecolor="black",
                                   label=figure_text("skipped (causal)"))]
    grid_ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, -0.24), ncols=2, fontsize="small")

    tile = min(tile_size, num_kvpairs - step * tile_size)
    n_q = num_queries
    bars = [(figure_text("scores of this tile ({n_q}×{tile})").format(n_q=n_q, tile=tile), n_q * tile, colours["now"]),
            (figure_text("running max m ({n_q})").format(n_q=n_q), n_q, "#4e79a7"),
            (figure_text("running sum l ({n_q})").format(n_q=n_q), n_q, "#4e79a7"),
            (figure_text("output accumulator ({n_q}×{value_dim})").format(n_q=n_q, value_dim=value_dim),
             n_q * value_dim, "#59a14f"),
            (figure_text("all kept at this step"), n_q * (tile + 2 + value_dim), "black"),
            (figure_text("explicit: all scores ({n_q}×{n_kv})").format(n_q=n_q, n_kv=num_kvpairs), n_q * num_kvpairs,
             colours["skipped"])]
    labels, sizes, bar_colours = zip(*bars, strict=True)
    state_ax.barh(range(len(bars)), sizes, color=bar_colours, edgecolor="black")
    for y, size in enumerate(sizes):
        state_ax.text(size, y, f" {size}", va="center", fontsize="small")
    state_ax.set_yticks(range(len(bars)), labels, fontsize="small")
    state_ax.set(xlim=(0, 1.2 * max(sizes)), ylim=(len(bars) - 0.5, -0.5), xlabel=figure_text("entries held"),
                 title=figure_text("What this step keeps in memory"))
    return fig


def _finite(new_max: Tensor) -> Tensor:
    """The running maximum with -inf (no visible key yet) replaced by 0, so that exp(-inf - 0) = 0, not NaN."""
    return new_max.masked_fill(new_max == -math.inf, 0.0)


def _require_tile_size(tile_size: object, name: str = "tile_size") -> int:
    what = _("queries per block") if name == "query_tile" else _("key-value pairs per tile")
    if isinstance(tile_size, bool) or not isinstance(tile_size, int):
        template = _("{name} must be an int ({what}), got {type_name} {tile_size!r}")
        raise TypeError(template.format(name=name, what=what, type_name=type(tile_size).__name__, tile_size=tile_size))
    if tile_size < 1:
        template = _("{name} must be at least 1 ({what}), got {tile_size}")
        raise ValueError(template.format(name=name, what=what, tile_size=tile_size))
    return tile_size


def _itemsize(dtype: object) -> int:
    if not isinstance(dtype, torch.dtype):
        raise wrong_type("dtype", _("a torch.dtype"), dtype)
    return dtype.itemsize
