"""Time every change of chapter 05's explorer over the whole slider range, and report the worst case.

Builds the widget with ``mha_chapters.explorer.explorer()`` and sets its controls one at a
time, as a reader moving a slider does. Each assignment runs the widget's own update
(``ExplorerBox.update``, called by the control's observer: the layer, the trace, the costs and
the heatmap SVG) to its end, so the time of one assignment is the time of one change; no
browser is involved. Three sweeps:

- ``num_heads sweep``: ``num_hiddens`` at the largest value its slider allows, then ``num_heads``
  through every option it offers, up and back down, ``--rounds`` times;
- the same with ``batch_size``, ``num_queries``, ``num_kvpairs`` and ``valid_len`` also at their largest;
- ``every control``: each control changed and set back, around the default sizes.

It prints where the time of one change goes at the largest sizes, a table per sweep, the machine's
load average, and last ``worst_ms=<value> median_ms=<value>`` (target: worst case <= 100 ms).

    python benchmarks/bench_explorer.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time
from collections.abc import Callable

import torch

from mha_chapters.explorer import (
    ExplorerBox,
    ExplorerConfig,
    costs_html,
    explore,
    explorer,
    heatmaps_svg,
    render_explorer,
    trace_html,
)
from mha_chapters.tables import format_table

TARGET_MS = 100.0
# Each change around the defaults and its way back.
EVERY_CONTROL = [("num_heads", 8), ("num_heads", 4), ("causal", True), ("causal", False), ("valid_len", 8),
                 ("valid_len", 5), ("num_queries", 7), ("num_queries", 6), ("num_hiddens", 36), ("num_hiddens", 32),
                 ("batch_size", 3), ("batch_size", 2), ("num_kvpairs", 9), ("num_kvpairs", 8), ("num_heads", 2),
                 ("num_heads", 4)]
Timing = tuple[float, float]  # (wall ms, cpu ms of this thread)


def timed_change(box: ExplorerBox, name: str, value: object) -> Timing:
    """Set one control and return the wall-clock and CPU time of the update it triggers, in ms."""
    start, start_cpu = time.perf_counter(), time.thread_time()
    box.controls[name].value = value
    return (time.perf_counter() - start) * 1e3, (time.thread_time() - start_cpu) * 1e3


def set_quietly(box: ExplorerBox, **values: object) -> None:
    """Move controls to a starting point (these changes are not timed)."""
    for name, value in values.items():
        box.controls[name].value = value


def heads_sweep(box: ExplorerBox, rounds: int) -> list[Timing]:
    """Step num_heads through every option the slider offers, up and back down, ``rounds`` times."""
    options = list(box.controls["num_heads"].options)
    path = options[1:] + options[-2::-1]  # from the first option: up to the last, then back to the first
    set_quietly(box, num_heads=options[0])
    return [timed_change(box, "num_heads", value) for _ in range(rounds) for value in path]


def parts_at(config: ExplorerConfig, repeats: int = 5) -> list[tuple[str, float]]:
    """The median time in ms of each part of one update for ``config``, each part timed on its own."""
    result = explore(config)
    parts: dict[str, Callable[[], object]] = {
        "explore: layer, inputs, trace, forward pass": lambda: explore(config),
        "trace_html": lambda: trace_html(result.trace),
        "costs_html": lambda: costs_html(result.costs),
        "heatmaps_svg (one PNG per head)": lambda: heatmaps_svg(result.weights[0], result.may_attend[0]),
        "render_explorer (all of the above)": lambda: render_explorer(config),
    }
    medians = []
    for name, part in parts.items():
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            part()
            times.append((time.perf_counter() - start) * 1e3)
        medians.append((name, statistics.median(times)))
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="times each num_heads sweep goes up and down")
    args = parser.parse_args()

    load_before = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    box = explorer()
    controls = box.controls
    largest = {name: controls[name].max for name in ("num_hiddens", "batch_size", "num_queries", "num_kvpairs")}
    for name, value in EVERY_CONTROL:  # warm-up: colormaps, first torch calls
        controls[name].value = value

    sweeps: dict[str, list[Timing]] = {}
    set_quietly(box, num_hiddens=largest["num_hiddens"])
    sweeps[f"num_heads sweep, num_hiddens={largest['num_hiddens']}"] = heads_sweep(box, args.rounds)
    set_quietly(box, batch_size=largest["batch_size"], num_queries=largest["num_queries"],
                num_kvpairs=largest["num_kvpairs"])
    set_quietly(box, valid_len=controls["valid_len"].max)
    sizes = ", ".join(f"{name}={controls[name].value}" for name in ("batch_size", "num_queries", "num_kvpairs",
                                                                      "valid_len"))
    sweeps[f"num_heads sweep, all sliders at max ({sizes})"] = heads_sweep(box, args.rounds)
    largest_config = dataclasses.replace(box.config(), num_heads=controls["num_heads"].options[-1])
    box.close()

    box = explorer()
    sweeps["every control, around the defaults"] = [timed_change(box, name, value) for name, value in EVERY_CONTROL]
    box.close()

    # Wall-clock time is what a reader waits; the CPU time of this thread leaves out the time the
    # process spent waiting for a core, so on a busy machine the two differ.
    def row(name: str, pairs: list[Timing]) -> tuple:
        walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
        return (name, len(pairs), f"{statistics.median(walls):.1f}", f"{max(walls):.1f}",
                f"{statistics.median(cpus):.1f}", f"{max(cpus):.1f}")

    everything = [pair for pairs in sweeps.values() for pair in pairs]
    worst, median = max(w for w, _ in everything), statistics.median(w for w, _ in everything)
    print(f"explorer update, torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
          f"load average (1, 5, 15 min) before timing: {load_before}")
    print(f"\nWhere the time of one change goes at {largest_config} (median ms):")
    print(format_table([(name, f"{ms:.1f}") for name, ms in parts_at(largest_config)], ["part", "ms"]))
    print()
    print(format_table([row(name, pairs) for name, pairs in sweeps.items()] + [row("all", everything)],
                       ["sweep", "changes", "median ms", "worst ms", "median cpu ms", "worst cpu ms"]))
    print(f"load average after timing: {', '.join(f'{value:.2f}' for value in os.getloadavg())}")
    print(f"target: worst case <= {TARGET_MS:.0f} ms ({'ok' if worst <= TARGET_MS else 'OVER TARGET'})")
    print(f"worst_ms={worst:.1f} median_ms={median:.1f}")


if __name__ == "__main__":
    main()
