"""Wait for a quiet machine before storing timings, and refuse stored timings that were not made on one.

    python -m tools.quiet [--max-load 0.5] [--timeout 900]   # make outputs runs this first
    python -m tools.quiet --check NOTEBOOK...                 # and this after: exit 1 on a timing of a busy machine

A stored timing is read as the cost of the code it times; on a machine whose cores are busy with other work it
records that work instead. So before the notebooks are executed for their stored outputs, this waits until the
1-minute load average is at most ``--max-load`` (0.5: half a core busy on average, the project's rule), checking every
``POLL_S`` seconds, and gives up with exit status 1 and a message saying what was running after ``--timeout``
seconds. The load average decays with a time constant of a minute, so after a heavy job it takes a minute or two.

``--check`` reads the provenance that every timing cell attaches to its output (``mha_chapters.bench.quiet``:
``with watch_machine() as machine:`` around the timings, then ``machine.report()``) and lists each one whose
machine was busy, each timing cell without a provenance, and each cell that times without the watch.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import nbformat

from mha_chapters.bench.quiet import PROVENANCE_KEY, Provenance

MAX_LOAD = 0.5
TIMEOUT_S = 900.0
POLL_S = 5.0


def wait_for_quiet(max_load: float = MAX_LOAD, timeout_s: float = TIMEOUT_S, poll_s: float = POLL_S) -> float | None:
    """Wait until the 1-minute load average is at most ``max_load``; return it, or None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        load = os.getloadavg()[0]
        if load <= max_load:
            return load
        if time.monotonic() >= deadline:
            return None
        print(f"==> load average {load:.2f} > {max_load}: waiting for a quiet machine before timing", flush=True)
        time.sleep(poll_s)


# The calls that time something: a cell that makes one and stores what it prints (nbval ignores its output, so its
# numbers are free to vary) must watch the machine while it does.
TIMING_CALL = re.compile(r"\b(median_time|paired_times|paired_speedups|thread_speedups|time_generation|measure_device|"
                         r"paired_length_ratios|perf_counter)\(")
WATCH = "watch_machine("


def provenances(cell: nbformat.NotebookNode) -> list[Provenance]:
    """The provenance of every report in a code cell's stored outputs."""
    return [Provenance(**output["metadata"][PROVENANCE_KEY]) for output in cell.get("outputs", [])
            if PROVENANCE_KEY in output.get("metadata", {})]


def stored_problems(path: Path) -> list[str]:
    """Why the stored timings of one notebook must not be kept: one line per cell (empty when every one may)."""
    found = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type != "code" or not TIMING_CALL.search(cell.source) or "NBVAL_IGNORE_OUTPUT" not in cell.source:
            continue  # a checked cell that times only to assert stores no timing
        where = f"{path}: cell {index}"
        if WATCH not in cell.source:
            found.append(f"{where} times without watch_machine() (mha_chapters.bench.quiet)")
        elif cell.get("outputs") and not provenances(cell):
            found.append(f"{where} stores timings without the report of its watch_machine()")
        found += [f"{where}: {problem}" for provenance in provenances(cell) for problem in provenance.problems()]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.quiet", description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-load", type=float, default=MAX_LOAD, help="highest 1-minute load average to start at")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds to wait before giving up")
    parser.add_argument("--check", nargs="+", type=Path, metavar="NOTEBOOK",
                        help="check the stored timings of these notebooks instead of waiting")
    args = parser.parse_args(argv)
    if args.check:
        found = [problem for path in args.check for problem in stored_problems(path)]
        for problem in found:
            print(f"error: {problem}", file=sys.stderr)
        if found:
            print("The stored timings above were made on a busy machine: stop what else runs and run make outputs "
                  "again.", file=sys.stderr)
            return 1
        print(f"==> the stored timings of {len(args.check)} notebook(s) were made on a quiet machine")
        return 0
    load = wait_for_quiet(args.max_load, args.timeout)
    if load is None:
        print(f"error: the 1-minute load average stayed above {args.max_load} for {args.timeout:.0f} s "
              f"(now {os.getloadavg()[0]:.2f}): the stored timings would record other work. Stop what else runs "
              "(top shows it) and try again.", file=sys.stderr)
        return 1
    print(f"==> load average {load:.2f} <= {args.max_load}: a quiet machine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
