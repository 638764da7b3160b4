"""Why batches are fast: attention in Python loops against one batched call, and what the hardware does with it.

Three ways to compute the same multi-head attention core (after the projections):

    per_sample  a Python loop over the samples; each call handles one sample, all its heads folded
    per_head    a Python loop over the heads; each call handles one head of every sample
    batched     one call: the heads folded into the batch axis with ``transpose_qkv``

with their call counts (:func:`call_plan`), the copies each makes only to change the layout
(:func:`layout_copies`; :func:`attention_prefolded` is the batched call without the copies in), the exact
FLOPs of attention, the float32 peak of some GPUs, what the CPU's vector units can do (:func:`cpu_facts`)
and the figures of chapter 07. The timing harness
(devices, synchronisation, sweeps, recorded results) is the private package :mod:`mha_chapters.bench`.

Dimension names (those of the d2l book): ``batch_size``, ``seq_len`` (self-attention, so
``num_queries = num_kvpairs = seq_len``), ``num_hiddens``, ``num_heads``, ``head_dim``.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from mha_lib._validation import require_heads_divide, require_positive_int, require_qkv, require_split_input, wrong_type
from mha_lib.functional import dot_product_attention, transpose_output, transpose_qkv

from .anatomy import mha_flops, score_bytes
from .bench.records import provenance
from .bench.timing import threads_text
from .i18n import N_, _, figure_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .bench.records import BatchSweepRecord, BenchResult, DeviceRun

__all__ = [
    "CPU_FACT_NAMES",
    "FLOAT32_LANES",
    "IMPLEMENTATIONS",
    "H100_SXM",
    "PEAK_FLOPS",
    "PUBLISHED_ATTENTION",
    "GpuSpec",
    "LayerTraffic",
    "LayoutCopy",
    "attention_batched",
    "attention_flops",
    "attention_per_head",
    "attention_per_sample",
    "attention_prefolded",
    "call_plan",
    "cpu_facts",
    "gpu_overtakes_at",
    "layout_copies",
    "busy_sms",
    "layer_traffic",
    "peak_flops",
    "plot_roofline",
    "ridge_batch",
    "roofline_seconds",
    "plot_devices",
    "plot_length_sweep",
    "plot_loops_vs_batch",
    "speedups",
]


# ---------------------------------------------------------------- three ways to compute one thing


def attention_per_sample(queries: Tensor, keys: Tensor, values: Tensor, num_heads: int) -> Tensor:
    """Multi-head attention with a Python loop over the samples: ``batch_size`` calls.

    Shape:
        - queries: ``(batch_size, num_queries, num_hiddens)``, already projected
        - keys, values: ``(batch_size, num_kvpairs, num_hiddens)``, already projected
        - output: ``(batch_size, num_queries, num_hiddens)``
    """
    _check_inputs(queries, keys, values, num_heads)
    outputs = []
    for i in range(queries.shape[0]):
        # one sample, its heads folded: (1, seq, h*d) -> (h, seq, d)
        q, k, v = (transpose_qkv(X[i : i + 1], num_heads) for X in (queries, keys, values))
        output, _ = dot_product_attention(q, k, v)  # (h, num_queries, d)
        outputs.append(transpose_output(output, num_heads))  # (h, num_queries, d) -> (1, num_queries, h*d)
    return torch.cat(outputs)  # -> (batch_size, num_queries, h*d)


def attention_per_head(queries: Tensor, keys: Tensor, values: Tensor, num_heads: int) -> Tensor:
    """Multi-head attention with a Python loop over the heads: ``num_heads`` calls.

    Shape:
        - queries: ``(batch_size, num_queries, num_hiddens)``, already projected
        - keys, values: ``(batch_size, num_kvpairs, num_hiddens)``, already projected
        - output: ``(batch_size, num_queries, num_hiddens)``
    """
    _check_inputs(queries, keys, values, num_heads)
    head_dim = queries.shape[-1] // num_heads
    outputs = []
    for j in range(num_heads):
        features = slice(j * head_dim, (j + 1) * head_dim)  # head j's block of the features
        # (batch_size, seq, h*d) -> (batch_size, seq, d), every sample at once
        output, _ = dot_product_attention(queries[..., features], keys[..., features], values[..., features])
        outputs.append(output)  # (batch_size, num_queries, d)
    return torch.cat(outputs, dim=-1)  # h times (b, num_queries, d) -> (b, num_queries, h*d)


def attention_batched(queries: Tensor, keys: Tensor, values: Tensor, num_heads: int) -> Tensor:
    """Multi-head attention in one call, the heads folded into the batch axis (``mha_lib``'s way).

    Shape:
        - queries: ``(batch_size, num_queries, num_hiddens)``, already projected
        - keys, values: ``(batch_size, num_kvpairs, num_hiddens)``, already projected
        - output: ``(batch_size, num_queries, num_hiddens)``
    """
    _check_inputs(queries, keys, values, num_heads)
    q, k, v = (transpose_qkv(X, num_heads) for X in (queries, keys, values))  # (b, seq, h*d) -> (b*h, seq, d)
    output, _ = dot_product_attention(q, k, v)  # (b*h, num_queries, d)
    return transpose_output(output, num_heads)  # -> (b, num_queries, h*d)


def attention_prefolded(queries: Tensor, keys: Tensor, values: Tensor, num_heads: int) -> Tensor:
    """:func:`attention_batched` for inputs that are already folded: its one call without ``transpose_qkv``'s copies.

    Shape:
        - queries: ``(batch_size * num_heads, num_queries, head_dim)``, e.g. ``transpose_qkv(projected, num_heads)``
        - keys, values: ``(batch_size * num_heads, num_kvpairs, head_dim)``
        - output: ``(batch_size, num_queries, num_heads * head_dim)``
    """
    output, _ = dot_product_attention(queries, keys, values)  # (b*h, num_queries, d)
    return transpose_output(output, num_heads)  # -> (b, num_queries, h*d)


IMPLEMENTATIONS: dict[str, Callable[[Tensor, Tensor, Tensor, int], Tensor]] = {
    "per_sample": attention_per_sample,
    "per_head": attention_per_head,
    "batched": attention_batched,
}
_LABELS = {"per_sample": N_("loop over samples"), "per_head": N_("loop over heads"),
           "batched": N_("batched (one call)"), "explicit": N_("explicit (stores scores)"),
           "sdpa": "F.scaled_dot_product_attention"}


def call_plan(batch_size: int, seq_len: int, num_hiddens: int, num_heads: int) -> list[tuple[str, int, tuple]]:
    """For each implementation: how many attention calls it makes and the queries' shape in each call."""
    for name, value in (("batch_size", batch_size), ("seq_len", seq_len), ("num_hiddens", num_hiddens),
                        ("num_heads", num_heads)):
        require_positive_int(name, value)
    require_heads_divide(num_hiddens, num_heads)
    head_dim = num_hiddens // num_heads
    return [
        ("per_sample", batch_size, (num_heads, seq_len, head_dim)),
        ("per_head", num_heads, (batch_size, seq_len, head_dim)),
        ("batched", 1, (batch_size * num_heads, seq_len, head_dim)),
    ]


# ---------------------------------------------------------------- copies that only change the layout

# Operations that move numbers without arithmetic. Each returns a view of its input's memory where the strides
# allow it (slicing, permute, transpose, a reshape that keeps the order in memory) and new memory where they do
# not (a reshape after a permute, contiguous on a permuted tensor) or never (cat, stack).
_LAYOUT_OPERATIONS = frozenset({
    "__getitem__", "cat", "concat", "concatenate", "contiguous", "expand", "flatten", "movedim", "narrow",
    "permute", "reshape", "squeeze", "stack", "swapaxes", "t", "transpose", "unflatten", "unsqueeze", "view",
})


class LayoutCopy(NamedTuple):
    """One copy that a layout operation made: the operation, the shape of the new tensor, and its bytes."""

    operation: str
    shape: tuple[int, ...]
    nbytes: int


def layout_copies(fn: Callable[..., object], *args: object) -> list[LayoutCopy]:
    """Run ``fn(*args)`` and list the copies it made only to change a layout, in the order they were made.

    Every PyTorch call is seen from outside (a ``torch.overrides.TorchFunctionMode``); a layout operation
    (reshape, permute, slicing, ``cat``, ...) whose result does not share memory with any of its inputs wrote
    every number once more: a copy. Copies inside one C++ call (none in these implementations) are not seen.
    """
    if not callable(fn):
        raise wrong_type("fn", _("callable"), fn)
    watcher = _CopyWatcher()
    with watcher:
        fn(*args)
    return watcher.copies


class _CopyWatcher(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.copies: list[LayoutCopy] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 - PyTorch's protocol
        result = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") in _LAYOUT_OPERATIONS and isinstance(result, Tensor):
            inputs = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, Tensor)]
            memory = result.untyped_storage().data_ptr()
            if result.numel() and all(x.untyped_storage().data_ptr() != memory for x in inputs):
                self.copies.append(LayoutCopy(func.__name__, tuple(result.shape),
                                              result.numel() * result.element_size()))
        return result


# ---------------------------------------------------------------- exact costs


def attention_flops(batch_size: int, num_queries: int, num_kvpairs: int, num_hiddens: int) -> int:
    """FLOPs of the two matrix products of attention, ``Q K^T`` and ``weights @ V``, all heads together.

    That is ``4 * batch_size * num_queries * num_kvpairs * num_hiddens``, whatever the number
    of heads (see :func:`mha_chapters.anatomy.mha_flops`, which also counts the projections).
    """
    flops = mha_flops(batch_size, num_queries, num_kvpairs, num_hiddens, num_heads=1)
    return flops["scores"] + flops["weights @ values"]


# Peak float32 throughput WITHOUT tensor cores (PyTorch's default for float32 matrix products,
# torch.get_float32_matmul_precision() == "highest"), dense, in FLOP/s. Sources: NVIDIA H100 Tensor
# Core GPU datasheet (FP32: SXM 67, NVL 60, PCIe 51 TFLOPS), NVIDIA H200 datasheet (FP32: SXM 67,
# NVL 60 TFLOPS), NVIDIA A100 datasheet (FP32: 19.5 TFLOPS). Matched against torch.cuda.get_device_name,
# most specific name first. CPUs and Apple GPUs are not listed: their peak depends on clock and core
# count that the name does not give.
PEAK_FLOPS: list[tuple[str, float, str]] = [
    ("H100 PCIe", 51e12, N_("NVIDIA H100 datasheet, FP32")),
    ("H100 NVL", 60e12, N_("NVIDIA H100 datasheet, FP32")),
    ("H100", 67e12, N_("NVIDIA H100 datasheet, FP32 (SXM)")),
    ("H200 NVL", 60e12, N_("NVIDIA H200 datasheet, FP32")),
    ("H200", 67e12, N_("NVIDIA H200 datasheet, FP32 (SXM)")),
    ("A100", 19.5e12, N_("NVIDIA A100 datasheet, FP32")),
]


def peak_flops(name: str) -> tuple[float, str] | None:
    """The device's peak float32 FLOP/s and its source, or None when the table does not know it."""
    if not isinstance(name, str):
        raise wrong_type("name", _("a device name (str)"), name)
    for pattern, flops, source in PEAK_FLOPS:
        if pattern.lower() in name.lower():
            return flops, source
    return None


# ---------------------------------------------------------------- the GPU half: a model from the datasheet


class GpuSpec(NamedTuple):
    """One GPU as its vendor documents it: what the roofline model and the occupancy count need."""

    name: str
    streaming_multiprocessors: int  # SMs: each runs its own blocks of threads
    warp_size: int  # threads that execute one instruction together
    max_warps_per_sm: int  # warps one SM can keep resident, switching between them to hide memory latency
    peak_flops: float  # dense FP16/BF16 tensor-core FLOP/s
    bandwidth: float  # HBM bytes per second
    sources: tuple[str, ...]

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte at which the memory roof meets the compute roof: peak FLOP/s / bandwidth."""
        return self.peak_flops / self.bandwidth


H100_SXM = GpuSpec(
    name="NVIDIA H100 SXM",
    streaming_multiprocessors=132,
    warp_size=32,
    max_warps_per_sm=64,
    peak_flops=1979e12 / 2,  # the datasheet's 1,979 TFLOPS FP16/BF16 Tensor Core are "with sparsity"; dense is half
    bandwidth=3.35e12,
    sources=("https://www.nvidia.com/en-us/data-center/h100/ (datasheet: FP16/BF16 Tensor Core 1,979 TFLOPS "
             "with sparsity, half without; GPU memory bandwidth 3.35 TB/s)",
             "NVIDIA, H100 Tensor Core GPU Architecture (2022), https://resources.nvidia.com/en-us-tensor-core "
             "(132 SMs on the SXM5 board)",
             "CUDA C++ Programming Guide, compute capability 9.0: warps of 32 threads, at most 64 resident warps "
             "per SM, https://docs.nvidia.com/cuda/cuda-c-programming-guide/"),
)

# Measurements that others published, with their source: none of them was measured here.
PUBLISHED_ATTENTION: list[tuple[str, str, float, str]] = [
    (N_("FlashAttention-3, FP16"), "H100 SXM", 740e12,
     "Shah et al. 2024, arXiv:2407.08608, abstract: up to 740 TFLOP/s (75% utilization)"),
    (N_("FlashAttention-2 (35% of the H100's peak)"), "H100 SXM", 0.35 * H100_SXM.peak_flops,
     "Shah et al. 2024, arXiv:2407.08608, abstract: 35% utilization; TFLOP/s = 0.35 x the dense peak above"),
]


class LayerTraffic(NamedTuple):
    """One self-attention layer's work at one batch size: FLOPs counted, bytes from its sizes."""

    batch_size: int
    flops: int  # counted by torch.utils.flop_counter.FlopCounterMode on the layer's forward
    nbytes: int  # the least a fused layer moves: its weights, its input and its output, once each

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved."""
        return self.flops / self.nbytes


def layer_traffic(batch_size: int, seq_len: int, num_hiddens: int, num_heads: int,
                  bytes_per_number: int = 2) -> LayerTraffic:
    """FLOPs and least bytes moved of ``mha_lib.MultiHeadAttention(num_hiddens, num_heads)`` on ``(batch, seq, hid)``.

    The FLOPs are counted on the layer itself (meta tensors: nothing is computed); the bytes assume every weight,
    the input and the output cross the memory bus once, at ``bytes_per_number`` each (2: FP16). Anything a real
    kernel writes and reads back in between (queries, keys, values, scores) only adds bytes, so the intensity
    is an upper bound.
    """
    from torch.utils.flop_counter import FlopCounterMode

    from mha_lib import MultiHeadAttention

    for name, value in (("batch_size", batch_size), ("seq_len", seq_len), ("bytes_per_number", bytes_per_number)):
        require_positive_int(name, value)
    with torch.device("meta"):
        layer = MultiHeadAttention(num_hiddens, num_heads)
        x = torch.empty(batch_size, seq_len, num_hiddens)
        with FlopCounterMode(display=False) as counter:
            layer(x, x, x)
    weights = sum(parameter.numel() for parameter in layer.parameters())
    return LayerTraffic(batch_size, counter.get_total_flops(),
                        (weights + 2 * batch_size * seq_len * num_hiddens) * bytes_per_number)


def roofline_seconds(traffic: LayerTraffic, gpu: GpuSpec = H100_SXM) -> float:
    """The roofline model's time: the larger of FLOPs / peak and bytes / bandwidth (a bound, not a measurement)."""
    return max(traffic.flops / gpu.peak_flops, traffic.nbytes / gpu.bandwidth)


def ridge_batch(traffics: Sequence[LayerTraffic], gpu: GpuSpec = H100_SXM) -> int | None:
    """The first batch size whose intensity reaches the GPU's ridge point; None where none does."""
    return next((t.batch_size for t in traffics if t.intensity >= gpu.ridge_point), None)


def busy_sms(num_blocks: int, gpu: GpuSpec = H100_SXM) -> float:
    """Share of the GPU's SMs that ``num_blocks`` thread blocks can occupy (one block per SM at least)."""
    require_positive_int("num_blocks", num_blocks)
    return min(1.0, num_blocks / gpu.streaming_multiprocessors)


def plot_roofline(layers: dict[str, Sequence[LayerTraffic]], gpu: GpuSpec = H100_SXM,
                  published: Sequence[tuple[str, str, float, str]] = PUBLISHED_ATTENTION) -> Figure:
    """Log-log roofline of ``gpu``: attainable FLOP/s against intensity, each layer's batch sizes on its roof.

    The points are the model's bound (min(peak, intensity x bandwidth)), not measurements. A published
    measurement gives a rate but not the intensity it ran at, so it is drawn where the roofline allows that rate:
    a dashed line from the least intensity that reaches it (rate / bandwidth, marked) to the right, labelled as
    published.
    """
    from matplotlib.figure import Figure

    if not layers:
        raise ValueError(_("layers must name at least one layer's traffic, got an empty dict"))
    fig = Figure(figsize=(7.5, 5), layout="constrained")
    ax = fig.subplots()
    low = min(t.intensity for ts in layers.values() for t in ts) / 2
    high = max(max(t.intensity for ts in layers.values() for t in ts), gpu.ridge_point) * 4
    xs = [low * (high / low) ** (i / 200) for i in range(201)]
    ax.plot(xs, [min(gpu.peak_flops, x * gpu.bandwidth) / 1e12 for x in xs], color="black",
            label=figure_text("{gpu}: datasheet roofline").format(gpu=gpu.name))
    ax.axvline(gpu.ridge_point, color="gray", linestyle=":", linewidth=0.8)
    for k, ((label, traffics), marker) in enumerate(zip(layers.items(), "os^D", strict=False)):
        points = [(t.intensity, min(gpu.peak_flops, t.intensity * gpu.bandwidth) / 1e12) for t in traffics]
        hollow = {"markerfacecolor": "none", "markersize": 10} if k == 0 else {}  # the next layer's points show inside
        ax.plot(*zip(*points, strict=True), marker=marker, linestyle="none", label=label, **hollow)
        last_x = 0.0
        for t, (x, y) in zip(traffics, points, strict=True):
            if x > 1.15 * last_x:  # a label where it does not overlap the previous one
                ax.annotate(str(t.batch_size), (x, y), textcoords="offset points", xytext=(3, -11 if k == 0 else 5),
                            fontsize="x-small")
                last_x = x
    for (what, device, flops, _source), colour in zip(published, ("tab:green", "tab:purple"), strict=False):
        least = flops / gpu.bandwidth  # below this intensity the memory roof is lower than the published rate
        ax.plot([least, high], [flops / 1e12] * 2, color=colour, linestyle="--", linewidth=1, marker="|",
                markevery=[0], markersize=12,
                label=figure_text("published: {what}, {device}; the roofline allows it from {least:.0f} FLOPs "
                                  "per byte").format(what=figure_text(what), device=device, least=least))
    ax.set(xscale="log", yscale="log", xlabel=figure_text("arithmetic intensity (FLOPs per byte moved)"),
           ylabel=figure_text("attainable TFLOP/s (model)"),
           title=figure_text("Roofline: batch sizes marked; dotted: the ridge point"))
    ax.legend(fontsize="x-small")
    ax.grid(True, which="major", alpha=0.3)
    return fig


# ---------------------------------------------------------------- what a CPU core can do at once

# float32 numbers in one vector register, by torch.backends.cpu.get_cpu_capability(): 512-bit AVX-512
# registers hold 16, 256-bit AVX2 registers hold 8 (Intel 64 and IA-32 Architectures Software
# Developer's Manual, vol. 1, ch. 14-15). Other capabilities (ARM, "DEFAULT") are not listed.
FLOAT32_LANES = {"AVX512": 16, "AVX2": 8}
# The names of cpu_facts' entries, marked for mha_lib's catalogue: chapter 07 prints them as ``tr(name)``, so the
# English table shows the keys a reader indexes ``facts`` with, and the Chinese one says what each is.
CPU_FACT_NAMES = (N_("capability"), N_("float32_lanes"), N_("clock_hz"), N_("clock_is_max"), N_("logical_cores"),
                  N_("torch_threads"))


def cpu_facts() -> dict[str, object]:
    """What this CPU offers for parallel arithmetic: vector capability and lanes, clock, cores, threads.

    ``clock_hz`` is the highest clock the operating system reports: the cores' maximum (cpufreq's
    ``cpuinfo_max_freq``, turbo included) where Linux gives it, and ``clock_is_max`` is True; else the clock
    ``/proc/cpuinfo`` reports now, which a turbo clock may exceed (many virtual machines), and ``clock_is_max`` is
    False; None where there is neither (macOS, Windows). ``float32_lanes`` is None for a capability
    :data:`FLOAT32_LANES` does not list.
    """
    capability = torch.backends.cpu.get_cpu_capability()
    maximum = _cpufreq_max_hz()
    return {
        "capability": capability,
        "float32_lanes": FLOAT32_LANES.get(capability),
        "clock_hz": maximum or _cpuinfo_clock_hz(),
        "clock_is_max": maximum is not None,
        "logical_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }


def _cpufreq_max_hz(root: Path = Path("/sys/devices/system/cpu")) -> float | None:
    """The highest ``cpuinfo_max_freq`` of any core, in Hz (the file holds kHz); None where Linux gives none."""
    found = []
    for path in root.glob("cpu[0-9]*/cpufreq/cpuinfo_max_freq"):
        try:
            found.append(int(path.read_text()) * 1e3)
        except (OSError, ValueError):
            continue
    return max(found, default=None)


def _cpuinfo_clock_hz() -> float | None:
    """The highest ``cpu MHz`` that ``/proc/cpuinfo`` lists for any core, in Hz; None without it."""
    try:
        clocks = [float(line.split(":", 1)[1]) * 1e6 for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("cpu MHz")]
    except (OSError, ValueError):
        return None
    return max(clocks, default=None)


# ---------------------------------------------------------------- comparing measurements


def speedups(slow: Sequence[float], fast: Sequence[float]) -> list[float]:
    """Element by element ``slow[i] / fast[i]``: how many times faster ``fast`` is at each size."""
    if len(slow) != len(fast) or not slow:
        template = _("slow and fast must hold the same number of timings "
                     "(at least one), got {num_slow} and {num_fast}")
        raise ValueError(template.format(num_slow=len(slow), num_fast=len(fast)))
    return [a / b for a, b in zip(slow, fast, strict=True)]


def gpu_overtakes_at(cpu_run: DeviceRun, gpu_run: DeviceRun, implementation: str = "batched") -> int | None:
    """The smallest batch size, measured on both, from which on the GPU is faster than the CPU; None if never.

    "From which on" means: faster at that batch size and at every larger one measured.
    """
    for name, run in (("cpu_run", cpu_run), ("gpu_run", gpu_run)):
        if not hasattr(run, "batch_sweep"):
            raise wrong_type(name, _("a DeviceRun (mha_chapters.bench.records)"), run)
    cpu = dict(zip(cpu_run.batch_sweep.batch_sizes, cpu_run.batch_sweep.median_s[implementation], strict=True))
    gpu = dict(zip(gpu_run.batch_sweep.batch_sizes, gpu_run.batch_sweep.median_s[implementation], strict=True))
    common = sorted(set(cpu) & set(gpu))
    if not common:
        raise ValueError(_("cpu_run and gpu_run share no batch size, so they cannot be compared"))
    overtakes = None
    for batch_size in reversed(common):
        if gpu[batch_size] >= cpu[batch_size]:
            break
        overtakes = batch_size
    return overtakes


def _check_inputs(queries: Tensor, keys: Tensor, values: Tensor, num_heads: int) -> None:
    require_qkv(queries, keys, values, rank=3)
    require_split_input(queries, num_heads)


# ---------------------------------------------------------------- figures

_COLOURS = {"per_sample": "tab:red", "per_head": "tab:orange", "batched": "tab:blue",
            "explicit": "tab:red", "sdpa": "tab:blue"}
_DEVICE_COLOURS = {"cpu": "tab:blue", "cuda": "tab:green", "mps": "tab:purple"}


def _live_label(run: DeviceRun) -> str:
    if run.device == "cpu":  # one thread or all: how many is a fact of this machine, kept out of stored figures
        return figure_text("live: {run}").format(run=_short(run))
    return figure_text("live: {device} ({name})").format(device=run.device, name=run.name)


def _short(run: DeviceRun) -> str:
    """A live run's label: 'cpu, 1 thread' or 'cpu, all threads' (how many is a fact of this machine), or the device."""
    if run.device != "cpu":
        return run.device
    threads = figure_text("all threads") if run.threads > 1 and run.threads == torch.get_num_threads() else \
        threads_text(run.threads, figure_text)
    return figure_text("{device}, {threads}").format(device=run.device, threads=threads)


def plot_loops_vs_batch(runs: Sequence[DeviceRun]) -> Figure:
    """Live loop-vs-batch sweeps: time per call against batch size, and the batched call's speed-up.

    The speed-up is the median of the sweep's paired rounds, with their range as a band (a recording without
    rounds: the ratio of the medians). The CPU with one thread is drawn dash-dot, with more threads solid; a GPU
    with square markers.
    """
    from matplotlib.figure import Figure  # imported here: the sweeps themselves run without matplotlib
    from matplotlib.ticker import ScalarFormatter

    fig = Figure(figsize=(11, 4.6), layout="constrained")
    time_ax, speed_ax = fig.subplots(1, 2)
    for run in runs:
        sweep: BatchSweepRecord = run.batch_sweep
        style = {"linestyle": "-." if run.device == "cpu" and run.threads == 1 else "-",
                 "marker": "o" if run.device == "cpu" else "s"}
        for name in IMPLEMENTATIONS:
            time_ax.plot(sweep.batch_sizes, [t * 1e3 for t in sweep.median_s[name]], color=_COLOURS[name],
                         label=figure_text("{implementation}, {run}").format(
                             implementation=figure_text(_LABELS[name]), run=_short(run)), **style)
        for name in ("per_sample", "per_head"):
            rounds = sweep.round_speedups[name] if sweep.round_speedups else \
                [[ratio] for ratio in speedups(sweep.median_s[name], sweep.median_s["batched"])]
            speed_ax.plot(sweep.batch_sizes, [statistics.median(ratios) for ratios in rounds],
                          color=_COLOURS[name], label=figure_text("batched vs {other}, {run}").format(
                              other=figure_text(_LABELS[name]), run=_short(run)), **style)
            speed_ax.fill_between(sweep.batch_sizes, [min(ratios) for ratios in rounds],
                                  [max(ratios) for ratios in rounds], color=_COLOURS[name], alpha=0.15, linewidth=0)
    time_ax.set(xscale="log", yscale="log", xlabel=figure_text("batch size (samples)"),
                ylabel=figure_text("median time per call (ms)"), title=figure_text("Time for one multi-head attention"))
    speed_ax.set(xscale="log", yscale="log", xlabel=figure_text("batch size (samples)"),
                 ylabel=figure_text("speed-up of the batched call (×)"),
                 title=figure_text("Paired speed-up: median, band from min to max"))
    speed_ax.axhline(1.0, color="gray", linewidth=0.8, linestyle=":")
    speed_ax.yaxis.set_major_formatter(ScalarFormatter())  # 2, 3, 4 rather than 2 x 10^0
    speed_ax.yaxis.set_minor_formatter(ScalarFormatter())
    for ax in (time_ax, speed_ax):
        ax.legend(fontsize="x-small")
        ax.grid(True, which="major", alpha=0.3)
    return fig


def plot_devices(live: Sequence[DeviceRun], recorded: Sequence[BenchResult]) -> Figure:
    """The batched call on every device: live runs solid, recorded runs dashed with their provenance.

    Where a run (live or one recorded file) measured a GPU and the CPU of the same machine, a second panel
    draws the GPU's speed-up over that CPU. Without any GPU measurement there is no second panel: an empty
    one would only say what is missing, and the chapter's text says that.
    """
    from matplotlib.figure import Figure  # imported here: the sweeps themselves run without matplotlib

    groups = [("live", None, list(live))] + [("recorded", result, result.runs) for result in recorded]
    comparisons = []  # (kind, result, gpu run, [(batch size, CPU time / GPU time)])
    for kind, result, runs in groups:
        cpu_runs = [run for run in runs if run.device == "cpu"]
        cpu = max(cpu_runs, key=lambda run: run.threads) if cpu_runs else None  # the CPU at its best
        for run in runs:
            if run.device == "cpu" or cpu is None:
                continue
            gpu = dict(zip(run.batch_sweep.batch_sizes, run.batch_sweep.median_s["batched"], strict=True))
            cpu_times = zip(cpu.batch_sweep.batch_sizes, cpu.batch_sweep.median_s["batched"], strict=True)
            common = [(size, t / gpu[size]) for size, t in cpu_times if size in gpu]
            if common:
                comparisons.append((kind, result, run, common))
    fig = Figure(figsize=(11, 5.2) if comparisons else (6.5, 5.2), layout="constrained")
    axes = fig.subplots(1, 2 if comparisons else 1, squeeze=False)[0]
    time_ax = axes[0]
    for kind, result, runs in groups:
        for run in runs:
            label = _live_label(run) if kind == "live" else provenance(result, run, figure_text)
            style = _line_style(kind, run.device)
            if kind == "live" and run.device == "cpu" and run.threads == 1:
                style["linestyle"] = "-."  # the one-thread CPU run beside the all-threads one
            time_ax.plot(run.batch_sweep.batch_sizes, [t * 1e3 for t in run.batch_sweep.median_s["batched"]],
                         label=label, **style)
    time_ax.set(xscale="log", yscale="log", xlabel=figure_text("batch size (samples)"),
                ylabel=figure_text("median time per call (ms)"))
    time_ax.grid(True, alpha=0.3)
    if comparisons:  # two panels: each gets a title; one panel has only the figure's own (suptitle)
        time_ax.set_title(figure_text("Time against batch size"))
        speed_ax = axes[1]
        for kind, result, run, common in comparisons:
            where = figure_text("live") if kind == "live" else figure_text("recorded {date}").format(date=result.date)
            speed_ax.plot(*zip(*common, strict=True),
                          label=figure_text("{name} vs its CPU ({where})").format(name=run.name, where=where),
                          **_line_style(kind, run.device))
        speed_ax.set(xscale="log", yscale="log", xlabel=figure_text("batch size (samples)"),
                     ylabel=figure_text("GPU speed-up over the CPU (×)"),
                     title=figure_text("CPU time / GPU time, same machine"))
        speed_ax.axhline(1.0, color="gray", linewidth=0.8, linestyle=":")
        speed_ax.legend(fontsize="small")
        speed_ax.grid(True, alpha=0.3)
    fig.legend(*time_ax.get_legend_handles_labels(), loc="outside lower center", fontsize="small", ncols=1)
    return fig


def plot_length_sweep(live: Sequence[DeviceRun], recorded: Sequence[BenchResult] = ()) -> Figure:
    """Time against sequence length (explicit and fused), and memory: the exact score tensor and CUDA peaks."""
    from matplotlib.figure import Figure  # imported here: the sweeps themselves run without matplotlib

    fig = Figure(figsize=(11, 5.6), layout="constrained")
    time_ax, memory_ax = fig.subplots(1, 2)
    groups = [("live", None, list(live))] + [("recorded", result, result.runs) for result in recorded]
    for kind, result, runs in groups:
        for run in runs:
            sweep = run.length_sweep
            who = _live_label(run) if kind == "live" else provenance(result, run, figure_text)
            for name in ("explicit", "sdpa"):
                style = {**_line_style(kind, run.device), "color": _COLOURS[name]}
                if run.device != "cpu":
                    style["marker"] = "s"
                elif kind == "live" and run.threads == 1:
                    style["linestyle"] = "-."
                time_ax.plot(sweep.seq_lens, [t * 1e3 for t in sweep.median_s[name]],
                             label=figure_text("{implementation}; {who}").format(
                                 implementation=figure_text(_LABELS[name]), who=who), **style)
                if sweep.peak_memory_bytes:
                    memory_ax.plot(sweep.seq_lens, [m / 2**20 for m in sweep.peak_memory_bytes[name]],
                                   label=figure_text("measured peak, {name}; {who}").format(
                                       name=figure_text(_LABELS[name]), who=who), **style)
    all_runs = [run for _, _, runs in groups for run in runs]
    if not all_runs:
        raise ValueError(_("live and recorded hold no run to draw"))
    sizes = sorted({n for run in all_runs for n in run.length_sweep.seq_lens})
    first = all_runs[0].length_sweep
    exact = [score_bytes(first.batch_size, first.num_heads, n, n) / 2**20 for n in sizes]
    formula = figure_text("one score tensor, formula (batch {batch_size}, {num_heads} heads, float32)")
    memory_ax.plot(sizes, exact, color="black", marker="x",
                   label=formula.format(batch_size=first.batch_size, num_heads=first.num_heads))
    time_ax.set(xscale="log", yscale="log", xlabel=figure_text("sequence length n (tokens)"),
                ylabel=figure_text("median time per call (ms)"), title=figure_text("Time grows with n"))
    memory_ax.set(xscale="log", yscale="log", xlabel=figure_text("sequence length n (tokens)"),
                  ylabel=figure_text("memory (MiB)"),
                  title=figure_text("Memory: formula and CUDA peaks") if any(
                      run.length_sweep.peak_memory_bytes for run in all_runs)
                  else figure_text("Memory: formula; measured only on CUDA"))
    for ax in (time_ax, memory_ax):
        ax.grid(True, alpha=0.3)
    memory_ax.legend(fontsize="small")
    fig.legend(*time_ax.get_legend_handles_labels(), loc="outside lower center", fontsize="x-small", ncols=2)
    return fig


def _line_style(kind: str, device: str) -> dict:
    """Live runs: solid lines, filled markers. Recorded runs: dashed lines, hollow markers."""
    colour = _DEVICE_COLOURS[device]
    if kind == "live":
        return {"color": colour, "linestyle": "-", "marker": "o", "linewidth": 2}
    return {"color": colour, "linestyle": "--", "marker": "D", "markerfacecolor": "white", "linewidth": 1.2}
