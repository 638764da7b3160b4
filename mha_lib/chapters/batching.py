"""Why batches are fast: attention in Python loops against one batched call, on every device present.

Three ways to compute the same multi-head attention core (after the projections):

    per_sample  a Python loop over the samples; each call handles one sample, all its heads folded
    per_head    a Python loop over the heads; each call handles one head of every sample
    batched     one call: the heads folded into the batch axis with ``transpose_qkv``

and a sweep over the sequence length that compares the explicit computation (it stores the score
matrix) with PyTorch's fused ``F.scaled_dot_product_attention``. Timings use
``torch.utils.benchmark``, which synchronises a GPU before reading the clock. Results are plain
dicts that :func:`save_result` writes as JSON and :func:`load_result` reads back and checks.

Dimension names (those of the d2l book): ``batch_size``, ``seq_len`` (self-attention, so
``num_queries = num_kvpairs = seq_len``), ``num_hiddens``, ``num_heads``, ``head_dim``.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor
from torch.utils import benchmark

from .._validation import require_positive_int, require_qkv, require_split_input
from ..functional import dot_product_attention, transpose_output, transpose_qkv
from ..utils import cpu_threads
from .anatomy import mha_flops, score_bytes

__all__ = [
    "IMPLEMENTATIONS",
    "PEAK_FLOPS",
    "SCHEMA",
    "BatchSweep",
    "LengthSweep",
    "attention_batched",
    "attention_flops",
    "attention_per_head",
    "attention_per_sample",
    "available_devices",
    "call_plan",
    "device_name",
    "gpu_overtakes_at",
    "load_result",
    "load_results",
    "measure_device",
    "median_time",
    "make_result",
    "paired_speedups",
    "peak_flops",
    "plot_devices",
    "plot_length_sweep",
    "plot_loops_vs_batch",
    "provenance",
    "random_qkv",
    "save_result",
    "sweep_batch_sizes",
    "sweep_seq_lens",
    "validate_result",
]

SCHEMA = "mha-notebooks/bench_batching/1"


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


IMPLEMENTATIONS: dict[str, Callable[[Tensor, Tensor, Tensor, int], Tensor]] = {
    "per_sample": attention_per_sample,
    "per_head": attention_per_head,
    "batched": attention_batched,
}
_LABELS = {"per_sample": "loop over samples", "per_head": "loop over heads", "batched": "batched (one call)",
           "explicit": "explicit (stores scores)", "sdpa": "F.scaled_dot_product_attention"}


def call_plan(batch_size: int, seq_len: int, num_hiddens: int, num_heads: int) -> list[tuple[str, int, tuple]]:
    """For each implementation: how many attention calls it makes and the queries' shape in each call."""
    for name, value in (("batch_size", batch_size), ("seq_len", seq_len), ("num_hiddens", num_hiddens),
                        ("num_heads", num_heads)):
        require_positive_int(name, value)
    if num_hiddens % num_heads:
        raise ValueError(f"num_hiddens must be divisible by num_heads, got {num_hiddens} and {num_heads}")
    head_dim = num_hiddens // num_heads
    return [
        ("per_sample", batch_size, (num_heads, seq_len, head_dim)),
        ("per_head", num_heads, (batch_size, seq_len, head_dim)),
        ("batched", 1, (batch_size * num_heads, seq_len, head_dim)),
    ]


# ---------------------------------------------------------------- exact costs


def attention_flops(batch_size: int, num_queries: int, num_kvpairs: int, num_hiddens: int) -> int:
    """FLOPs of the two matrix products of attention, ``Q K^T`` and ``weights @ V``, all heads together.

    That is ``4 * batch_size * num_queries * num_kvpairs * num_hiddens``, whatever the number
    of heads (see :func:`mha_lib.chapters.anatomy.mha_flops`, which also counts the projections).
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
    ("H100 PCIe", 51e12, "NVIDIA H100 datasheet, FP32"),
    ("H100 NVL", 60e12, "NVIDIA H100 datasheet, FP32"),
    ("H100", 67e12, "NVIDIA H100 datasheet, FP32 (SXM)"),
    ("H200 NVL", 60e12, "NVIDIA H200 datasheet, FP32"),
    ("H200", 67e12, "NVIDIA H200 datasheet, FP32 (SXM)"),
    ("A100", 19.5e12, "NVIDIA A100 datasheet, FP32"),
]


def peak_flops(name: str) -> tuple[float, str] | None:
    """The device's peak float32 FLOP/s and its source, or None when the table does not know it."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a device name (str), got {type(name).__name__}")
    for pattern, flops, source in PEAK_FLOPS:
        if pattern.lower() in name.lower():
            return flops, source
    return None


# ---------------------------------------------------------------- devices and timing


def available_devices() -> list[torch.device]:
    """Every device present: the CPU, then an NVIDIA GPU (cuda) and an Apple GPU (mps) if found."""
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices.append(torch.device("cuda"))
    if torch.backends.mps.is_available():
        devices.append(torch.device("mps"))
    return devices


def device_name(device: torch.device | str) -> str:
    """A readable name: the CPU model, the GPU's name, or "Apple GPU" for mps."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return f"Apple GPU ({platform.machine()})"
    if device.type == "cpu":
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return platform.processor() or platform.machine() or "unknown CPU"
    raise ValueError(f"device must be a cpu, cuda or mps device, got {device}")


def _synchronize(device: torch.device) -> None:
    """Wait until the device has finished its queued work (GPU calls return before they are done)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def median_time(fn: Callable[[], object], device: torch.device | str, min_run_time: float = 0.05,
                num_threads: int | None = None) -> float:
    """Median seconds per call of ``fn()`` on ``device``, after a warm-up.

    ``torch.utils.benchmark.Timer`` synchronises the GPU before it reads the clock, so the
    time includes the GPU's work and not only the launch. The warm-up keeps one-time costs
    (CUDA context, kernel selection, memory pools) out of the measurement. ``num_threads``
    is the number of CPU threads PyTorch may use while timing (None: all it has now).
    """
    device = torch.device(device)
    if not min_run_time > 0:
        raise ValueError(f"min_run_time must be a positive number of seconds, got {min_run_time}")
    fn = _synchronized(fn, device)
    for _ in range(3):  # warm-up
        fn()
    _synchronize(device)
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=_threads(num_threads))
    return timer.blocked_autorange(min_run_time=min_run_time).median


def paired_speedups(slow: Callable[[], object], fast: Callable[[], object], device: torch.device | str,
                    repeats: int = 9, number: int = 5, num_threads: int | None = None) -> list[float]:
    """Time ``slow`` and ``fast`` back to back ``repeats`` times; return each pair's ratio slow / fast.

    On a shared machine the speed drifts while a benchmark runs (other jobs, clock changes).
    Comparing two timings taken right after each other, alternating which goes first, keeps
    most of that drift out of the ratio; the median of the ratios is a robust summary.
    """
    device = torch.device(device)
    require_positive_int("repeats", repeats)
    require_positive_int("number", number)
    slow, fast = _synchronized(slow, device), _synchronized(fast, device)
    timers = [benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=_threads(num_threads))
              for fn in (slow, fast)]
    ratios = []
    with torch.inference_mode(), cpu_threads(num_threads):
        for fn in (slow, fast):  # warm-up
            fn()
        _synchronize(device)
        for i in range(repeats):
            order = (0, 1) if i % 2 == 0 else (1, 0)  # neither always runs second, on a warmer cache
            times = {j: timers[j].timeit(number).median for j in order}
            ratios.append(times[0] / times[1])
    return ratios


def _synchronized(fn: Callable[[], object], device: torch.device) -> Callable[[], object]:
    """``fn`` followed by a wait for an Apple GPU.

    The Timer of recent PyTorch releases synchronises every accelerator itself; older ones
    only synchronise CUDA, so on mps each timed call waits for the GPU itself.
    """
    if device.type != "mps":
        return fn

    def call() -> object:
        result = fn()
        torch.mps.synchronize()
        return result

    return call


def _threads(num_threads: int | None) -> int:
    return torch.get_num_threads() if num_threads is None else require_positive_int("num_threads", num_threads)


# ---------------------------------------------------------------- the two sweeps


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
                      num_threads: int | None = None, seed: int = 0) -> dict:
    """Time the three implementations for every batch size; first check that they agree.

    Returns a dict with the sizes and ``median_s[name]``, one median (seconds per call)
    per batch size, in float32.
    """
    device = torch.device(device)
    _check_sweep(sweep.batch_sizes, "batch_sizes", sweep.num_hiddens, sweep.num_heads)
    medians: dict[str, list[float]] = {name: [] for name in IMPLEMENTATIONS}
    with torch.inference_mode(), cpu_threads(num_threads):
        for batch_size in sweep.batch_sizes:
            queries, keys, values = random_qkv(batch_size, sweep.seq_len, sweep.num_hiddens, device, seed)
            outputs = {name: fn(queries, keys, values, sweep.num_heads) for name, fn in IMPLEMENTATIONS.items()}
            for name, output in outputs.items():  # the same result, or the timings mean nothing
                torch.testing.assert_close(output, outputs["batched"], rtol=1e-4, atol=1e-5,
                                           msg=lambda m, n=name: f"{n}: {m}")
            for name, fn in IMPLEMENTATIONS.items():
                call = functools.partial(fn, queries, keys, values, sweep.num_heads)
                medians[name].append(median_time(call, device, min_run_time, num_threads))
    return {**_sizes(sweep), "flops": [attention_flops(b, sweep.seq_len, sweep.seq_len, sweep.num_hiddens)
                                       for b in sweep.batch_sizes], "median_s": medians}


def sweep_seq_lens(device: torch.device | str, sweep: LengthSweep = LengthSweep(), min_run_time: float = 0.05,
                   num_threads: int | None = None, seed: int = 0) -> dict:
    """Time explicit attention against ``F.scaled_dot_product_attention`` for every sequence length.

    Also returns the exact size of one float32 score tensor and the FLOPs per length. On
    CUDA it measures each call's peak extra memory with ``torch.cuda.max_memory_allocated``;
    elsewhere ``peak_memory_bytes`` is None (PyTorch does not track CPU allocations).
    """
    device = torch.device(device)
    _check_sweep(sweep.seq_lens, "seq_lens", sweep.num_hiddens, sweep.num_heads)
    b, h = sweep.batch_size, sweep.num_heads
    medians: dict[str, list[float]] = {"explicit": [], "sdpa": []}
    memory: dict[str, list[int]] | None = {"explicit": [], "sdpa": []} if device.type == "cuda" else None
    with torch.inference_mode(), cpu_threads(num_threads):
        for seq_len in sweep.seq_lens:
            queries, keys, values = (transpose_qkv(X, h) for X in random_qkv(b, seq_len, sweep.num_hiddens,
                                                                              device, seed))  # (b*h, n, d)
            as_4d = [X.reshape(b, h, seq_len, -1) for X in (queries, keys, values)]  # (b*h, n, d) -> (b, h, n, d)
            calls = {
                "explicit": lambda q=queries, k=keys, v=values: dot_product_attention(q, k, v)[0],
                "sdpa": lambda qkv=as_4d: F.scaled_dot_product_attention(*qkv),
            }
            torch.testing.assert_close(calls["sdpa"]().reshape(b * h, seq_len, -1), calls["explicit"](),
                                       rtol=1e-4, atol=1e-5)
            for name, call in calls.items():
                medians[name].append(median_time(call, device, min_run_time, num_threads))
                if memory is not None:
                    memory[name].append(_peak_extra_memory(call, device))
    return {
        **_sizes(sweep),
        "flops": [attention_flops(b, n, n, sweep.num_hiddens) for n in sweep.seq_lens],
        "score_bytes": [score_bytes(b, h, n, n) for n in sweep.seq_lens],
        "median_s": medians,
        "peak_memory_bytes": memory,
    }


def _peak_extra_memory(call: Callable[[], object], device: torch.device) -> int:
    """Bytes allocated at the peak of one call, above what was allocated before it (CUDA only)."""
    _synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    call()
    _synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


def measure_device(device: torch.device | str, batch_sweep: BatchSweep = BatchSweep(),
                   length_sweep: LengthSweep = LengthSweep(), min_run_time: float = 0.05,
                   num_threads: int | None = None) -> dict:
    """Run both sweeps on ``device`` and return one run record (the unit of a JSON result)."""
    device = torch.device(device)
    name = device_name(device)
    peak = peak_flops(name) if device.type == "cuda" else None
    return {
        "device": device.type,
        "name": name,
        "threads": _threads(num_threads),
        "dtype": "float32",
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "peak_flops": peak[0] if peak else None,
        "peak_flops_source": peak[1] if peak else None,
        "batch_sweep": sweep_batch_sizes(device, batch_sweep, min_run_time, num_threads),
        "length_sweep": sweep_seq_lens(device, length_sweep, min_run_time, num_threads),
    }


def _sizes(sweep: BatchSweep | LengthSweep) -> dict:
    return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(sweep).items()}


def _check_sweep(sizes: Sequence[int], name: str, num_hiddens: int, num_heads: int) -> None:
    if not sizes:
        raise ValueError(f"{name} must list at least one size, got {sizes!r}")
    for size in sizes:
        require_positive_int(name, size)
    require_positive_int("num_hiddens", num_hiddens)
    require_positive_int("num_heads", num_heads)
    if num_hiddens % num_heads:
        raise ValueError(f"num_hiddens must be divisible by num_heads, got {num_hiddens} and {num_heads}")


def _check_inputs(queries: Tensor, keys: Tensor, values: Tensor, num_heads: int) -> None:
    require_qkv(queries, keys, values, rank=3)
    require_split_input(queries, num_heads)


def gpu_overtakes_at(cpu_run: dict, gpu_run: dict, implementation: str = "batched") -> int | None:
    """The smallest batch size, measured on both, from which on the GPU is faster than the CPU; None if never.

    "From which on" means: faster at that batch size and at every larger one measured.
    """
    for name, run in (("cpu_run", cpu_run), ("gpu_run", gpu_run)):
        if not isinstance(run, dict) or "batch_sweep" not in run:
            raise ValueError(f"{name} must be a run record with a 'batch_sweep', got {type(run).__name__}")
    cpu = dict(zip(cpu_run["batch_sweep"]["batch_sizes"], cpu_run["batch_sweep"]["median_s"][implementation],
                   strict=True))
    gpu = dict(zip(gpu_run["batch_sweep"]["batch_sizes"], gpu_run["batch_sweep"]["median_s"][implementation],
                   strict=True))
    common = sorted(set(cpu) & set(gpu))
    if not common:
        raise ValueError("cpu_run and gpu_run share no batch size, so they cannot be compared")
    overtakes = None
    for batch_size in reversed(common):
        if gpu[batch_size] >= cpu[batch_size]:
            break
        overtakes = batch_size
    return overtakes


# ---------------------------------------------------------------- JSON results


def make_result(runs: Sequence[dict], command: str, min_run_time: float) -> dict:
    """Wrap run records with their provenance: date, torch and Python versions, platform, command."""
    result = {
        "schema": SCHEMA,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "command": command,
        "min_run_time_s": min_run_time,
        # how busy the machine was: timings taken beside other jobs are slower and noisier
        "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "runs": list(runs),
    }
    validate_result(result, "the new result")
    return result


def save_result(result: dict, directory: str | Path) -> Path:
    """Write ``result`` as ``<device>-<date>.json`` (the fastest device measured) into ``directory``."""
    validate_result(result, "result")
    devices = [run["device"] for run in result["runs"]]
    fastest = next((d for d in ("cuda", "mps") if d in devices), devices[0])
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{fastest}-{result['date']}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path


def load_result(path: str | Path) -> dict:
    """Read one JSON result and check it against the schema; a malformed file raises ``ValueError``."""
    path = Path(path)
    try:
        result = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path.name} is not valid JSON: {error}") from None
    validate_result(result, path.name)
    return result


def load_results(directory: str | Path) -> list[dict]:
    """Every ``*.json`` result in ``directory``, sorted by file name (an empty list if there is none)."""
    return [load_result(path) for path in sorted(Path(directory).glob("*.json"))]


def provenance(result: dict, run: dict) -> str:
    """The label of a recorded run: 'recorded on <device>, torch <version>, <date>'."""
    threads = f", {_threads_text(run['threads'])}" if run["device"] == "cpu" else ""
    return f"recorded on {run['name']} ({run['device']}{threads}), torch {result['torch']}, {result['date']}"


def validate_result(result: object, source: str = "result") -> None:
    """Raise ``ValueError`` naming the first field of ``result`` that does not follow the schema."""
    where = source
    _expect(result, dict, where, "an object")
    if result.get("schema") != SCHEMA:
        raise ValueError(f"{where}: schema must be {SCHEMA!r}, got {result.get('schema')!r}")
    for key in ("date", "torch", "python", "platform", "command"):
        _expect(result.get(key), str, f"{where}: {key}", "a string")
    try:
        datetime.date.fromisoformat(result["date"])
    except ValueError:
        raise ValueError(f"{where}: date must be YYYY-MM-DD, got {result['date']!r}") from None
    _expect(result.get("runs"), list, f"{where}: runs", "a list")
    if not result["runs"]:
        raise ValueError(f"{where}: runs must hold at least one run, got an empty list")
    for i, run in enumerate(result["runs"]):
        at = f"{where}: runs[{i}]"
        _expect(run, dict, at, "an object")
        if run.get("device") not in ("cpu", "cuda", "mps"):
            raise ValueError(f"{at}.device must be 'cpu', 'cuda' or 'mps', got {run.get('device')!r}")
        _expect(run.get("name"), str, f"{at}.name", "a string")
        _expect(run.get("threads"), int, f"{at}.threads", "an integer")
        if run.get("peak_flops") is not None:
            _expect(run["peak_flops"], (int, float), f"{at}.peak_flops", "a number or null")
        _check_sweep_record(run.get("batch_sweep"), f"{at}.batch_sweep", "batch_sizes", IMPLEMENTATIONS)
        _check_sweep_record(run.get("length_sweep"), f"{at}.length_sweep", "seq_lens", ("explicit", "sdpa"))
        sweep = run["length_sweep"]
        _check_numbers(sweep.get("score_bytes"), len(sweep["seq_lens"]), f"{at}.length_sweep.score_bytes")
        memory = sweep.get("peak_memory_bytes")
        if memory is not None:
            _expect(memory, dict, f"{at}.length_sweep.peak_memory_bytes", "an object or null")
            for name in ("explicit", "sdpa"):
                where_memory = f"{at}.length_sweep.peak_memory_bytes.{name}"
                _check_numbers(memory.get(name), len(sweep["seq_lens"]), where_memory)


def _check_sweep_record(sweep: object, where: str, sizes_key: str, names: Sequence[str]) -> None:
    _expect(sweep, dict, where, "an object")
    sizes = sweep.get(sizes_key)
    _expect(sizes, list, f"{where}.{sizes_key}", "a list")
    if not sizes or not all(isinstance(s, int) and s > 0 for s in sizes):
        raise ValueError(f"{where}.{sizes_key} must list positive integers, got {sizes!r}")
    _check_numbers(sweep.get("flops"), len(sizes), f"{where}.flops")
    medians = sweep.get("median_s")
    _expect(medians, dict, f"{where}.median_s", "an object")
    for name in names:
        _check_numbers(medians.get(name), len(sizes), f"{where}.median_s.{name}")


def _check_numbers(values: object, length: int, where: str) -> None:
    if not isinstance(values, list) or len(values) != length:
        got = f"{len(values)} values" if isinstance(values, list) else repr(values)
        raise ValueError(f"{where} must be a list of {length} numbers (one per size), got {got}")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{where} must hold positive finite numbers, got {value!r}")


def _expect(value: object, kind: type | tuple[type, ...], where: str, expected: str) -> None:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{where} must be {expected}, got {type(value).__name__} {value!r:.60}")


# ---------------------------------------------------------------- figures

_COLOURS = {"per_sample": "tab:red", "per_head": "tab:orange", "batched": "tab:blue",
            "explicit": "tab:red", "sdpa": "tab:blue"}
_DEVICE_COLOURS = {"cpu": "tab:blue", "cuda": "tab:green", "mps": "tab:purple"}


def _threads_text(threads: int) -> str:
    return "1 thread" if threads == 1 else f"{threads} threads"


def _live_label(run: dict) -> str:
    threads = f", {_threads_text(run['threads'])}" if run["device"] == "cpu" else ""
    return f"live: {run['device']} ({run['name']}{threads})"


def plot_loops_vs_batch(runs: Sequence[dict]) -> Figure:
    """Live loop-vs-batch sweep: time per call against batch size, and the batched call's speed-up."""
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    time_ax, speed_ax = fig.subplots(1, 2)
    for run in runs:
        sweep = run["batch_sweep"]
        marker = "o" if run["device"] == "cpu" else "s"
        for name in IMPLEMENTATIONS:
            time_ax.plot(sweep["batch_sizes"], [t * 1e3 for t in sweep["median_s"][name]], marker=marker,
                         color=_COLOURS[name], label=f"{_LABELS[name]}, {run['device']}")
        batched = sweep["median_s"]["batched"]
        for name in ("per_sample", "per_head"):
            speed_ax.plot(sweep["batch_sizes"], [a / b for a, b in zip(sweep["median_s"][name], batched, strict=True)],
                          marker=marker, color=_COLOURS[name], label=f"batched vs {_LABELS[name]}, {run['device']}")
    time_ax.set(xscale="log", yscale="log", xlabel="batch size (samples)", ylabel="median time per call (ms)",
                title="Time for one multi-head attention")
    speed_ax.set(xscale="log", xlabel="batch size (samples)", ylabel="speed-up of the batched call (×)",
                 title="How many times faster one batched call is")
    speed_ax.axhline(1.0, color="gray", linewidth=0.8, linestyle=":")
    for ax in (time_ax, speed_ax):
        ax.legend(fontsize="small")
        ax.grid(True, which="major", alpha=0.3)
    return fig


def plot_devices(live: Sequence[dict], recorded: Sequence[dict]) -> Figure:
    """The batched call on every device: live runs solid, recorded runs dashed with their provenance.

    Right: for each run (live or one recorded file) that measured a GPU and the CPU of the same
    machine, the GPU's speed-up over that CPU; a note where there is none.
    """
    fig = Figure(figsize=(11, 5.2), layout="constrained")
    time_ax, speed_ax = fig.subplots(1, 2)
    groups = [("live", None, live)] + [("recorded", result, result["runs"]) for result in recorded]
    speedups = 0
    for kind, result, runs in groups:
        for run in runs:
            sweep = run["batch_sweep"]
            label = _live_label(run) if kind == "live" else provenance(result, run)
            style = _line_style(kind, run["device"])
            time_ax.plot(sweep["batch_sizes"], [t * 1e3 for t in sweep["median_s"]["batched"]], label=label, **style)
        cpu = next((run for run in runs if run["device"] == "cpu"), None)
        for run in runs:
            if run["device"] == "cpu" or cpu is None:
                continue
            sizes, cpu_times = cpu["batch_sweep"]["batch_sizes"], cpu["batch_sweep"]["median_s"]["batched"]
            gpu = dict(zip(run["batch_sweep"]["batch_sizes"], run["batch_sweep"]["median_s"]["batched"], strict=True))
            common = [(s, t / gpu[s]) for s, t in zip(sizes, cpu_times, strict=True) if s in gpu]
            if common:
                where = "live" if kind == "live" else f"recorded {result['date']}"
                speed_ax.plot(*zip(*common, strict=True), label=f"{run['name']} vs its CPU ({where})",
                              **_line_style(kind, run["device"]))
                speedups += 1
    time_ax.set(xscale="log", yscale="log", xlabel="batch size (samples)", ylabel="median time per call (ms)",
                title="Batched attention on each device")
    speed_ax.set(xscale="log", yscale="log", xlabel="batch size (samples)", ylabel="GPU speed-up over the CPU (×)",
                 title="CPU time / GPU time, same machine")
    speed_ax.axhline(1.0, color="gray", linewidth=0.8, linestyle=":")
    if speedups:
        speed_ax.legend(fontsize="small")
    else:
        speed_ax.text(0.5, 0.5, "no GPU measurement, live or recorded:\nrun benchmarks/bench_batching.py\n"
                      "--device cuda on a machine with a GPU", transform=speed_ax.transAxes, ha="center", va="center")
        speed_ax.set_xlim(time_ax.get_xlim())
    time_ax.grid(True, alpha=0.3)
    speed_ax.grid(True, alpha=0.3)
    fig.legend(*time_ax.get_legend_handles_labels(), loc="outside lower center", fontsize="small", ncols=1)
    return fig


def plot_length_sweep(live: Sequence[dict], recorded: Sequence[dict] = ()) -> Figure:
    """Time against sequence length (explicit and fused), and memory: the exact score tensor and CUDA peaks."""
    fig = Figure(figsize=(11, 5.2), layout="constrained")
    time_ax, memory_ax = fig.subplots(1, 2)
    groups = [("live", None, live)] + [("recorded", result, result["runs"]) for result in recorded]
    for kind, result, runs in groups:
        for run in runs:
            sweep = run["length_sweep"]
            who = _live_label(run) if kind == "live" else provenance(result, run)
            for name in ("explicit", "sdpa"):
                style = {**_line_style(kind, run["device"]), "color": _COLOURS[name]}
                if run["device"] != "cpu":
                    style["marker"] = "s"
                time_ax.plot(sweep["seq_lens"], [t * 1e3 for t in sweep["median_s"][name]],
                             label=f"{_LABELS[name]}; {who}", **style)
                if sweep.get("peak_memory_bytes"):
                    memory_ax.plot(sweep["seq_lens"], [m / 2**20 for m in sweep["peak_memory_bytes"][name]],
                                   label=f"measured peak, {_LABELS[name]}; {who}", **style)
    sizes = sorted({n for _, _, runs in groups for run in runs for n in run["length_sweep"]["seq_lens"]})
    first = (live or [run for result in recorded for run in result["runs"]])[0]["length_sweep"]
    exact = [score_bytes(first["batch_size"], first["num_heads"], n, n) / 2**20 for n in sizes]
    memory_ax.plot(sizes, exact, color="black", marker="x", label=f"one score tensor, exact (batch "
                   f"{first['batch_size']}, {first['num_heads']} heads, float32)")
    time_ax.set(xscale="log", yscale="log", xlabel="sequence length n (tokens)", ylabel="median time per call (ms)",
                title="Time grows with n")
    memory_ax.set(xscale="log", yscale="log", xlabel="sequence length n (tokens)", ylabel="memory (MiB)",
                  title="Memory of the n × n scores")
    for ax in (time_ax, memory_ax):
        ax.grid(True, alpha=0.3)
    memory_ax.legend(fontsize="small")
    fig.legend(*time_ax.get_legend_handles_labels(), loc="outside lower center", fontsize="small", ncols=2)
    return fig


def _line_style(kind: str, device: str) -> dict:
    """Live runs: solid lines, filled markers. Recorded runs: dashed lines, hollow markers."""
    colour = _DEVICE_COLOURS[device]
    if kind == "live":
        return {"color": colour, "linestyle": "-", "marker": "o", "linewidth": 2}
    return {"color": colour, "linestyle": "--", "marker": "D", "markerfacecolor": "white", "linewidth": 1.2}
