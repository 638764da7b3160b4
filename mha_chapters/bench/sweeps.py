"""The two sweeps of chapter 07: loops against one batched call, and cost against sequence length.

Each sweep first checks that the implementations it times agree (a fast wrong answer is worth nothing),
then times them in float32 and inference mode: the batch sweep its three calls in interleaved rounds
(:func:`~mha_chapters.bench.timing.interleaved_times`), so that its speed-ups are paired, the length sweep each
call with :func:`~mha_chapters.bench.timing.median_time`.
:func:`measure_device` runs both on one device and returns a :class:`~mha_chapters.bench.records.DeviceRun`.

Dimension names (those of the d2l book): ``batch_size``, ``seq_len`` (self-attention, so
``num_queries = num_kvpairs = seq_len``), ``num_hiddens``, ``num_heads``, ``head_dim``.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from mha_lib._validation import require_heads_divide, require_positive_int
from mha_lib.functional import dot_product_attention, transpose_qkv
from mha_lib.utils import cpu_threads

from ..anatomy import score_bytes
from ..batching import IMPLEMENTATIONS, attention_flops, peak_flops, speedups
from ..i18n import _
from .records import BatchSweepRecord, DeviceRun, LengthSweepRecord
from .timing import (
    calls_per_window,
    device_name,
    interleaved_times,
    median_time,
    paired_speedups,
    resolve_threads,
    synchronize,
)

__all__ = ["BatchSweep", "LengthSweep", "length_calls", "measure_device", "paired_length_ratios", "random_qkv",
           "sweep_batch_sizes", "sweep_seq_lens"]


@dataclass(frozen=True)
class BatchSweep:
    """Sizes of the loop-vs-batch sweep: self-attention over ``seq_len`` tokens, for each batch size."""

    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    seq_len: int = 10
    num_hiddens: int = 100
    num_heads: int = 5


@dataclass(frozen=True)
class LengthSweep:
    """Sizes of the cost-growth sweep: self-attention for each sequence length."""

    seq_lens: tuple[int, ...] = (64, 128, 256, 512, 1024)
    batch_size: int = 2
    num_hiddens: int = 64
    num_heads: int = 4


def random_qkv(batch_size: int, seq_len: int, num_hiddens: int, device: torch.device | str = "cpu",
               seed: int = 0) -> list[Tensor]:
    """Seeded random queries, keys and values, the same numbers on every device.

    Shape:
        - each output: ``(batch_size, seq_len, num_hiddens)``, float32
    """
    generator = torch.Generator().manual_seed(seed)  # on the CPU, so every device gets the same numbers
    return [torch.randn(batch_size, seq_len, num_hiddens, generator=generator).to(device) for _ in range(3)]


def sweep_batch_sizes(device: torch.device | str, sweep: BatchSweep = BatchSweep(), min_run_time: float = 0.05,
                      num_threads: int | None = None, seed: int = 0, repeats: int = 9) -> BatchSweepRecord:
    """Time the three implementations of :mod:`mha_chapters.batching` for every batch size.

    At each batch size the three calls are timed in ``repeats`` interleaved rounds, each call for about
    ``min_run_time / repeats`` seconds a round: the medians are each call's, the speed-ups of the batched call are
    taken round by round (``round_speedups``), so a moment of load falls on both sides of a ratio.
    """
    device = torch.device(device)
    _check_sweep(sweep.batch_sizes, "batch_sizes", sweep.num_hiddens, sweep.num_heads)
    require_positive_int("repeats", repeats)
    medians: dict[str, list[float]] = {name: [] for name in IMPLEMENTATIONS}
    rounds: dict[str, list[list[float]]] = {"per_sample": [], "per_head": []}
    with torch.inference_mode():
        for batch_size in sweep.batch_sizes:
            queries, keys, values = random_qkv(batch_size, sweep.seq_len, sweep.num_hiddens, device, seed)
            outputs = {name: fn(queries, keys, values, sweep.num_heads) for name, fn in IMPLEMENTATIONS.items()}
            for name, output in outputs.items():  # the same result, or the timings mean nothing
                torch.testing.assert_close(output, outputs["batched"], rtol=1e-4, atol=1e-5,
                                           msg=lambda m, n=name: f"{n}: {m}")
            calls = [functools.partial(fn, queries, keys, values, sweep.num_heads) for fn in IMPLEMENTATIONS.values()]
            number = calls_per_window(calls, min_run_time / repeats, device, num_threads)
            times = dict(zip(IMPLEMENTATIONS, interleaved_times(calls, device, repeats, number, num_threads),
                             strict=True))
            for name, seconds in times.items():
                medians[name].append(statistics.median(seconds))
            for loop, ratios in rounds.items():
                ratios.append(speedups(times[loop], times["batched"]))
    return BatchSweepRecord(
        batch_sizes=list(sweep.batch_sizes), seq_len=sweep.seq_len, num_hiddens=sweep.num_hiddens,
        num_heads=sweep.num_heads,
        flops=[attention_flops(b, sweep.seq_len, sweep.seq_len, sweep.num_hiddens) for b in sweep.batch_sizes],
        median_s=medians,
        round_speedups=rounds,
    )


def sweep_seq_lens(device: torch.device | str, sweep: LengthSweep = LengthSweep(), min_run_time: float = 0.05,
                   num_threads: int | None = None, seed: int = 0) -> LengthSweepRecord:
    """Time explicit attention against ``F.scaled_dot_product_attention`` for every sequence length.

    Also records the exact size of one float32 score tensor and the FLOPs per length. On CUDA it
    measures each call's peak extra memory with ``torch.cuda.max_memory_allocated``; elsewhere
    ``peak_memory_bytes`` is None (PyTorch does not track CPU allocations).
    """
    device = torch.device(device)
    _check_sweep(sweep.seq_lens, "seq_lens", sweep.num_hiddens, sweep.num_heads)
    medians: dict[str, list[float]] = {"explicit": [], "sdpa": []}
    memory: dict[str, list[int]] | None = {"explicit": [], "sdpa": []} if device.type == "cuda" else None
    with torch.inference_mode(), cpu_threads(resolve_threads(num_threads)):
        for seq_len in sweep.seq_lens:
            for name, call in length_calls(sweep, seq_len, device, seed).items():
                medians[name].append(median_time(call, device, min_run_time, num_threads))
                if memory is not None:
                    memory[name].append(_peak_extra_memory(call, device))
    return LengthSweepRecord(
        seq_lens=list(sweep.seq_lens), batch_size=sweep.batch_size, num_hiddens=sweep.num_hiddens,
        num_heads=sweep.num_heads,
        flops=[attention_flops(sweep.batch_size, n, n, sweep.num_hiddens) for n in sweep.seq_lens],
        score_bytes=[score_bytes(sweep.batch_size, sweep.num_heads, n, n) for n in sweep.seq_lens],
        median_s=medians,
        peak_memory_bytes=memory,
    )


def length_calls(sweep: LengthSweep, seq_len: int, device: torch.device | str = "cpu",
                 seed: int = 0) -> dict[str, Callable[[], Tensor]]:
    """The two calls the length sweep times at ``seq_len``, checked to agree first.

    ``"explicit"``: ``dot_product_attention`` on ``(batch_size * num_heads, seq_len, head_dim)``, which stores the
    scores and the weights; ``"sdpa"``: ``F.scaled_dot_product_attention`` on the same numbers as
    ``(batch_size, num_heads, seq_len, head_dim)``, which never stores the whole score matrix.
    """
    b, h = sweep.batch_size, sweep.num_heads
    qkv = random_qkv(b, seq_len, sweep.num_hiddens, device, seed)
    queries, keys, values = (transpose_qkv(X, h) for X in qkv)  # (b, n, h*d) -> (b*h, n, d)
    as_4d = [X.reshape(b, h, seq_len, -1) for X in (queries, keys, values)]  # (b*h, n, d) -> (b, h, n, d)
    calls: dict[str, Callable[[], Tensor]] = {
        "explicit": lambda: dot_product_attention(queries, keys, values)[0],
        "sdpa": lambda: F.scaled_dot_product_attention(*as_4d),
    }
    with torch.inference_mode():
        torch.testing.assert_close(calls["sdpa"]().reshape(b * h, seq_len, -1), calls["explicit"](),
                                   rtol=1e-4, atol=1e-5)
    return calls


def paired_length_ratios(sweep: LengthSweep = LengthSweep(), repeats: int = 9, number: int = 3,
                         num_threads: int | None = 1, seed: int = 0) -> dict[int, list[float]]:
    """For every length of ``sweep``: ``repeats`` paired ratios time(explicit) / time(fused) on the CPU.

    Each pair times the two calls back to back, alternating which goes first (:func:`paired_speedups`), so a
    moment of load hits both sides of a ratio; above 1 where the fused kernel is faster. One thread by default.
    """
    _check_sweep(sweep.seq_lens, "seq_lens", sweep.num_hiddens, sweep.num_heads)
    ratios = {}
    for seq_len in sweep.seq_lens:
        calls = length_calls(sweep, seq_len, "cpu", seed)
        ratios[seq_len] = paired_speedups(calls["explicit"], calls["sdpa"], "cpu", repeats, number, num_threads)
    return ratios


def _peak_extra_memory(call: Callable[[], object], device: torch.device) -> int:
    """Bytes allocated at the peak of one call, above what was allocated before it (CUDA only)."""
    synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    call()
    synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


def measure_device(device: torch.device | str, batch_sweep: BatchSweep = BatchSweep(),
                   length_sweep: LengthSweep = LengthSweep(), min_run_time: float = 0.05,
                   num_threads: int | None = None) -> DeviceRun:
    """Run both sweeps on ``device`` and return one run record (the unit of a JSON result)."""
    device = torch.device(device)
    name = device_name(device)
    peak = peak_flops(name) if device.type == "cuda" else None
    return DeviceRun(
        device=device.type,
        name=name,
        threads=resolve_threads(num_threads),
        dtype="float32",
        float32_matmul_precision=torch.get_float32_matmul_precision(),
        peak_flops=peak[0] if peak else None,
        peak_flops_source=peak[1] if peak else None,
        batch_sweep=sweep_batch_sizes(device, batch_sweep, min_run_time, num_threads),
        length_sweep=sweep_seq_lens(device, length_sweep, min_run_time, num_threads),
    )


def _check_sweep(sizes: Sequence[int], name: str, num_hiddens: int, num_heads: int) -> None:
    if not sizes:
        raise ValueError(_("{name} must list at least one size, got {sizes!r}").format(name=name, sizes=sizes))
    for size in sizes:
        require_positive_int(name, size)
    require_positive_int("num_hiddens", num_hiddens)
    require_positive_int("num_heads", num_heads)
    require_heads_divide(num_hiddens, num_heads)
