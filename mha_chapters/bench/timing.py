"""Honest timings on a CPU or a GPU: warm up, synchronise, repeat and take medians.

``median_time`` times one function; ``paired_speedups`` compares two functions, ``thread_speedups`` one
function at two thread counts, and ``interleaved_times`` any number of functions, with back-to-back measurements
that keep a shared machine's drift out of the ratio. All use
``torch.utils.benchmark.Timer``, which synchronises a GPU before it reads the clock.
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch.utils import benchmark

from mha_lib._validation import require_positive_int
from mha_lib.utils import cpu_threads

from ..i18n import N_, _, tr

__all__ = ["available_devices", "calls_per_window", "cpu_caches", "cpuinfo_model", "data_caches", "device_name",
           "interleaved_times",
           "live_threads_text", "machine_summary", "median_time", "page_faults_per_call", "paired_speedups",
           "paired_times", "paired_wall_and_cpu", "resolve_threads", "synchronize", "thread_speedups", "threads_text"]


def available_devices() -> list[torch.device]:
    """Every device present: the CPU, then an NVIDIA GPU (cuda) and an Apple GPU (mps) if found."""
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices.append(torch.device("cuda"))
    if torch.backends.mps.is_available():
        devices.append(torch.device("mps"))
    return devices


def device_name(device: torch.device | str) -> str:
    """A readable name: the CPU model, the GPU's name, or "Apple GPU (<machine>)" for mps."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return f"Apple GPU ({platform.machine()})"
    if device.type == "cpu":
        return cpuinfo_model() or platform.processor() or platform.machine() or "unknown CPU"
    raise ValueError(_("device must be a cpu, cuda or mps device, got {device}").format(device=device))


def cpuinfo_model() -> str | None:
    """The CPU model that Linux names in /proc/cpuinfo; None where there is no such file or line (macOS, Windows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return None


def cpu_caches() -> dict[str, str]:
    """The CPU's cache sizes as Linux reports them for CPU 0, e.g. ``{"L1d": "48K", "L2": "2048K", "L3": "105M"}``.

    Read from ``/sys/devices/system/cpu/cpu0/cache``; empty where that folder does not exist (macOS, Windows).
    A timing claim about caches is only as good as the sizes it was measured with, so every recorded result
    and every live timing header carries them.
    """
    caches: dict[str, str] = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        name = f"L{level}" + {"Data": "d", "Instruction": "i"}.get(kind, "")
        caches[name] = size
    return caches


def data_caches() -> dict[str, str]:
    """:func:`cpu_caches` without the instruction caches: the ones a timing's data passes through."""
    return {name: size for name, size in cpu_caches().items() if not name.endswith("i")}


def machine_summary(num_threads: int | None = None) -> str:
    """One line for a timing's header: CPU model, its caches (no instruction cache) and the thread count.

    ``num_threads`` defaults to the threads PyTorch uses now, e.g.
    "Intel(R) Xeon(R) Processor, L1d 48K, L2 2048K, L3 491520K, 1 thread".
    """
    threads = resolve_threads(num_threads)
    caches = ", ".join(f"{name} {size}" for name, size in data_caches().items())
    parts = [device_name("cpu"), caches, threads_text(threads)]
    return ", ".join(part for part in parts if part)


def live_threads_text(threads: int) -> str:
    """'1 thread', or 'all threads' where ``threads`` is every thread PyTorch uses now, else 'N threads'.

    A live timing's label: how many threads "all" is depends on the machine, a fact that a stored output must
    not carry (tools/machine_facts.py); ``machine_summary`` prints it for the reader who runs the cell.
    """
    if threads > 1 and threads == torch.get_num_threads():
        return _("all threads")
    return threads_text(threads)


ONE_THREAD, THREADS = N_("1 thread"), N_("{count} threads")


def threads_text(threads: int, translate: Callable[[str], str] = _) -> str:
    """'1 thread' or 'N threads', translated by ``translate``: ``_`` for printed text, ``figure_text`` in a figure."""
    return translate(ONE_THREAD) if threads == 1 else translate(THREADS).format(count=threads)


def synchronize(device: torch.device | str) -> None:
    """Wait until ``device`` has finished its queued work (a GPU call returns before it is done).

    On the CPU there is nothing to wait for: a CPU call returns when its work is done.
    """
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def resolve_threads(num_threads: int | None) -> int:
    """The CPU threads a measurement uses: ``num_threads``, or all PyTorch uses now when it is None."""
    return torch.get_num_threads() if num_threads is None else require_positive_int("num_threads", num_threads)


def median_time(fn: Callable[[], object], device: torch.device | str, min_run_time: float = 0.05,
                num_threads: int | None = None) -> float:
    """Median seconds per call of ``fn()`` on ``device``, after a warm-up.

    The warm-up keeps one-time costs (memory pools, kernel selection, a CUDA context) out of the
    measurement; the Timer synchronises a GPU before reading the clock, so the time includes the
    GPU's work and not only the launch. ``num_threads``: CPU threads PyTorch may use (None: as now).
    """
    device = torch.device(device)
    if not min_run_time > 0:
        template = tr("min_run_time must be a positive number of seconds, got {min_run_time!r}")
        raise ValueError(template.format(min_run_time=min_run_time))
    threads = resolve_threads(num_threads)
    fn = _synchronized(fn, device)
    with cpu_threads(threads):
        for _ in range(3):  # warm-up
            fn()
        synchronize(device)
        timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads)
        return timer.blocked_autorange(min_run_time=min_run_time).median


def paired_times(first: Callable[[], object], second: Callable[[], object], device: torch.device | str = "cpu",
                 repeats: int = 9, number: int = 5, num_threads: int | None = None) -> tuple[list[float], list[float]]:
    """Time ``first`` and ``second`` back to back ``repeats`` times; return both lists of seconds per call.

    On a shared machine the speed drifts while a benchmark runs (other jobs, clock changes).
    Two timings taken right after each other, alternating which goes first, share most of that
    drift, so it cancels in their ratio; the median of the per-pair ratios is a robust summary.
    """
    threads = resolve_threads(num_threads)
    return _paired([(first, threads), (second, threads)], torch.device(device), repeats, number)


def paired_speedups(slow: Callable[[], object], fast: Callable[[], object], device: torch.device | str,
                    repeats: int = 9, number: int = 5, num_threads: int | None = None) -> list[float]:
    """Each pair's ratio time(slow) / time(fast), timed as in :func:`paired_times`."""
    return _ratios(*paired_times(slow, fast, device, repeats, number, num_threads))


def calls_per_window(calls: Sequence[Callable[[], object]], window_s: float, device: torch.device | str = "cpu",
                     num_threads: int | None = None) -> int:
    """How many calls of the fastest of ``calls`` take at least ``window_s`` seconds (at least one call).

    A timed window must be long enough for its clock: ``torch.utils.benchmark`` reads a wall clock that is exact to
    the microsecond, but Linux adds up a process's CPU time in ticks, so a CPU-time window of a few milliseconds can
    read twice too high or too low. Each call is timed three times after a warm-up, and the fastest time counts.
    """
    if not window_s > 0:
        raise ValueError(tr("window_s must be a positive number of seconds, got {window_s!r}").format(
            window_s=window_s))
    device = torch.device(device)
    threads = resolve_threads(num_threads)
    fastest = math.inf
    with torch.inference_mode(), cpu_threads(threads):
        for fn in calls:
            fn = _synchronized(fn, device)
            fn()  # warm-up
            timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads)
            fastest = min(fastest, *(timer.timeit(1).median for _ in range(3)))  # the best of 3: a hiccup is not it
    return max(1, math.ceil(window_s / fastest))


def paired_wall_and_cpu(first: Callable[[], object], second: Callable[[], object], repeats: int = 9,
                        window_s: float = 0.02, num_threads: int | None = None
                        ) -> dict[str, tuple[list[float], list[float]]]:
    """On the CPU, ``first`` and ``second`` timed back to back ``repeats`` times, alternating which goes first.

    Returns ``{"wall": (first_s, second_s), "cpu": (first_s, second_s)}``, seconds per call in each window: wall-clock
    time (``time.perf_counter``) and the CPU time of this process, all its threads together (``time.process_time``).
    On a busy machine the wall time includes the moments another process held the core; the CPU time does not,
    and CPU time / wall time shows how many cores the call kept busy. Each window lasts at least ``window_s``
    (:func:`calls_per_window`): over shorter ones the CPU time is not exact, so a core count read from it can come
    out above the cores there are.
    """
    require_positive_int("repeats", repeats)
    threads = resolve_threads(num_threads)
    calls = (first, second)
    number = calls_per_window(calls, window_s, "cpu", threads)
    times: dict[str, tuple[list[float], list[float]]] = {"wall": ([], []), "cpu": ([], [])}
    with torch.inference_mode(), cpu_threads(threads):
        for i in range(repeats):
            for j in ((0, 1) if i % 2 == 0 else (1, 0)):
                wall, cpu = time.perf_counter(), time.process_time()
                for _ in range(number):
                    calls[j]()
                times["cpu"][j].append((time.process_time() - cpu) / number)
                times["wall"][j].append((time.perf_counter() - wall) / number)
    return times


def thread_speedups(fn: Callable[[], object], num_threads: int, repeats: int = 9, number: int = 5) -> list[float]:
    """On the CPU, time ``fn`` with one thread and with ``num_threads`` back to back ``repeats`` times.

    Returns each pair's ratio time(1 thread) / time(num_threads): above 1 where the extra threads help.
    Paired like :func:`paired_times`, so a moment of load on the machine hits both sides of a ratio.
    """
    calls = [(fn, 1), (fn, require_positive_int("num_threads", num_threads))]
    return _ratios(*_paired(calls, torch.device("cpu"), repeats, number))


def page_faults_per_call(fn: Callable[[], object], calls: int = 10) -> float | None:
    """Minor page faults per call of ``fn()`` on the CPU, after a warm-up; None where the OS does not count them.

    A minor page fault is the operating system handing the process a fresh, zeroed 4 KiB page of memory. A call
    whose large results do not fit in memory that the allocator keeps for reuse pays one per page it touches,
    every call: a cost that grows with the bytes allocated, whatever the arithmetic. Counted with
    ``resource.getrusage`` (Linux and macOS; Windows has no such count).
    """
    require_positive_int("calls", calls)
    try:
        import resource
    except ImportError:  # Windows
        return None
    with torch.inference_mode():
        for _ in range(3):  # warm-up: the allocator's reusable memory reaches its steady state
            fn()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(calls):
            fn()
        return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def _ratios(first: list[float], second: list[float]) -> list[float]:
    return [a / b for a, b in zip(first, second, strict=True)]


def _paired(calls: list[tuple[Callable[[], object], int]], device: torch.device, repeats: int,
            number: int) -> tuple[list[float], list[float]]:
    """Seconds per call of calls[0] and calls[1], each with its own thread count, timed in alternating order."""
    first, second = _interleaved(calls, device, repeats, number)
    return first, second


def _interleaved(calls: list[tuple[Callable[[], object], int]], device: torch.device, repeats: int,
                 number: int) -> list[list[float]]:
    """Seconds per call of every call, each with its own thread count: ``repeats`` rounds of all of them.

    A round runs the calls in order, the next round in reverse, so that neither of two neighbours always runs
    second, on a warmer cache, and a busy moment of the machine falls on one round of every call, not on all
    the repeats of one.
    """
    require_positive_int("repeats", repeats)
    require_positive_int("number", number)
    timers = [benchmark.Timer(stmt="fn()", globals={"fn": _synchronized(fn, device)}, num_threads=threads)
              for fn, threads in calls]
    times: list[list[float]] = [[] for _ in calls]
    order = list(range(len(calls)))
    with torch.inference_mode():
        for fn, threads in calls:  # warm-up, each with its thread count
            with cpu_threads(threads):
                fn()
        synchronize(device)
        for i in range(repeats):
            for j in (order if i % 2 == 0 else order[::-1]):
                times[j].append(timers[j].timeit(number).median)
    return times


def interleaved_times(calls: Sequence[Callable[[], object]], device: torch.device | str = "cpu", repeats: int = 9,
                      number: int = 5, num_threads: int | None = None) -> list[list[float]]:
    """Seconds per call of each of ``calls``, timed in ``repeats`` rounds of all of them (one list per call).

    :func:`paired_times` for more than two: a round runs every call once, in order, and the next in reverse,
    so calls that are compared with each other are timed seconds apart, not one after the other's repeats.
    """
    threads = resolve_threads(num_threads)
    return _interleaved([(fn, threads) for fn in calls], torch.device(device), repeats, number)


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
