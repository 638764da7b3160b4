"""Time one change of chapter 05's explorer: recompute the layer, the trace, the costs and the SVG heatmaps.

Builds the widget with ``mha_lib.chapters.explorer.explorer()`` at its default sizes and sets
its controls one at a time, as a reader moving a slider does. Each assignment runs
the widget's own update (``ExplorerBox.update``, called by the control's observer)
to its end, so the time of one assignment is exactly the time of one change; no
browser is involved. The last line is ``median_ms=<value>`` (target: <= 100).

    python benchmarks/bench_explorer.py [--changes 30]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import torch

from mha_lib.chapters.explorer import ExplorerConfig, explorer
from mha_lib.chapters.tables import format_table

# Each change and its way back, so the sizes stay at (or next to) the defaults.
CHANGES = [("num_heads", 8), ("num_heads", 4), ("causal", True), ("causal", False), ("valid_len", 8),
           ("valid_len", 5), ("num_queries", 7), ("num_queries", 6), ("num_hiddens", 36), ("num_hiddens", 32),
           ("batch_size", 3), ("batch_size", 2), ("num_kvpairs", 9), ("num_kvpairs", 8), ("num_heads", 2)]
TARGET_MS = 100.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=30, help="timed control changes")
    args = parser.parse_args()

    box = explorer()
    for name, value in CHANGES[:3]:  # warm-up: fonts, colormaps, first torch calls
        box.controls[name].value = value
    box.controls["causal"].value = False
    box.controls["num_heads"].value = 4

    # Wall-clock time is what a reader waits; the CPU time of this thread leaves out the time the
    # process spent waiting for a core, so on a busy machine the two differ.
    times: dict[str, list[tuple[float, float]]] = {}
    for name, value in itertools.islice(itertools.cycle(CHANGES), args.changes):
        start, start_cpu = time.perf_counter(), time.thread_time()
        box.controls[name].value = value
        wall, cpu = (time.perf_counter() - start) * 1e3, (time.thread_time() - start_cpu) * 1e3
        times.setdefault(name, []).append((wall, cpu))

    def row(name: str, pairs: list[tuple[float, float]]) -> tuple:
        walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
        return (name, len(pairs), f"{statistics.median(walls):.1f}", f"{min(walls):.1f}", f"{max(walls):.1f}",
                f"{statistics.median(cpus):.1f}")

    everything = [pair for pairs in times.values() for pair in pairs]
    median = statistics.median(wall for wall, _ in everything)
    rows = [row(name, pairs) for name, pairs in times.items()] + [row("all", everything)]
    defaults = ExplorerConfig()
    print(f"explorer update, torch {torch.__version__}, {torch.get_num_threads()} threads, defaults: "
          f"num_hiddens={defaults.num_hiddens} num_heads={defaults.num_heads} batch_size={defaults.batch_size} "
          f"num_queries={defaults.num_queries} num_kvpairs={defaults.num_kvpairs} valid_len={defaults.valid_len}")
    print(format_table(rows, ["control changed", "changes", "median ms", "min ms", "max ms", "median cpu ms"]))
    print(f"target: median <= {TARGET_MS:.0f} ms ({'ok' if median <= TARGET_MS else 'OVER TARGET'})")
    print(f"median_ms={median:.1f}")


if __name__ == "__main__":
    main()
