"""Record every CPU timing the chapters load, one after another, each by the quiet-machine rule (``make record-cpu``).

    python -m tools.record_cpu                       # into mha_chapters/bench/results/: the chapters' recordings
    python -m tools.record_cpu --out /tmp/rec --quick --no-browser   # a tiny run elsewhere (tests use it)

The recordings, in order:

1. ``benchmarks/bench_batching.py --threads 1``: chapter 07's and chapter 10's sweeps, ``<results>/cpu-<date>.json``;
2. ``benchmarks/bench_flex.py --record --threads 1 --pairs 9 --compile-fresh``: chapter 11's table, as its first
   recording was made, ``<results>/flex/cpu-<date>.json``;
3. ``tests/browser/test_explorer_latency.py`` with ``MHA_RECORD_LATENCY=1``: chapter 05's explorer timed in
   JupyterLab in headless Chromium, ``<results>/explorer/browser-<date>.json``.

Chapter 09 loads no recording: its generation timings are a live cell, re-made with the other stored outputs by
``make outputs``. Each recorder watches the machine (``mha_chapters.bench.quiet.watch_machine``): into the package's
folder it first waits up to two minutes for the other processes to fall quiet, stores how busy they were before and
during, and refuses a busy result with ``BusyMachineError``; into ``--out`` it writes what it measured. A recording
made into the package's folder replaces the older ones of its kind (the chapters and tests load the newest,
``records.newest_recording``); tests/test_quiet.py's ``BEFORE_THE_RULE`` must then lose the names of the files
replaced (its test says so). Run it alone: anything else running makes the recorders wait, then refuse.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "mha_chapters" / "bench" / "results"


def steps(out: Path | None, quick: bool, browser: bool) -> list[tuple[str, str, list[str], dict[str, str]]]:
    """(kind, what, command, extra environment) of each recording, in order."""
    python = sys.executable
    batching = [python, "benchmarks/bench_batching.py", "--threads", "1"]
    flex = [python, "benchmarks/bench_flex.py", "--record", "--threads", "1", "--pairs", "9"]
    if quick:
        batching.append("--quick")
        flex.append("--quick")
    else:  # chapter 11 prints the first compiled call in a fresh process too (about a minute on 2 cores)
        flex.append("--compile-fresh")
    latency: dict[str, str] = {"MHA_RECORD_LATENCY": "1"}
    if out is not None:
        batching += ["--out", str(out)]
        flex += ["--out", str(out / "flex")]
        latency["MHA_RECORD_LATENCY_DIR"] = str(out / "explorer")
    found = [("batching", "chapters 07 and 10: loop, batch and length sweeps", batching, {}),
             ("flex", "chapter 11: dense SDPA, eager and compiled flex", flex, {})]
    if browser:
        found.append(("explorer", "chapter 05: the explorer in JupyterLab in headless Chromium",
                      [python, "-m", "pytest", "tests/browser/test_explorer_latency.py", "-q"], latency))
    return found


def replace_older(kind: str, kept: Path) -> list[Path]:
    """Remove the recordings of ``kind`` older than ``kept`` from the package's folder; return them."""
    from mha_chapters.bench.records import RECORDING_KINDS

    folder, prefix = RECORDING_KINDS[kind]
    older = [path for path in sorted((RESULTS / folder).glob(f"{prefix or 'cpu'}-*.json")) if path.name < kept.name]
    for path in older:
        path.unlink()
    return older


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.record_cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="folder to record into instead of the package's (nothing there is refused or replaced)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: seconds, for a test of the command")
    parser.add_argument("--no-browser", action="store_true", help="leave out chapter 05's browser recording")
    args = parser.parse_args(argv)
    if args.out is not None and args.out.resolve() == RESULTS.resolve():
        args.out = None
    if args.quick and args.out is None:
        parser.error("--quick records tiny sizes: give --out DIR, the chapters' folder takes only full recordings")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    today = datetime.date.today().isoformat()
    started = time.perf_counter()
    for kind, what, command, extra in steps(args.out, args.quick, not args.no_browser):
        print(f"==> {what}: {' '.join(command[1:])}", flush=True)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env={**environment, **extra}, check=False)
        print(f"==> {kind}: exit {done.returncode} after {time.perf_counter() - start:.0f} s", flush=True)
        if done.returncode != 0:
            print(f"record-cpu: the {kind} recording failed (exit {done.returncode}); the recordings before it are "
                  "kept", file=sys.stderr)
            return done.returncode
        if args.out is None:
            from mha_chapters.bench.records import newest_recording

            kept = newest_recording(kind)
            if not kept.name.endswith(f"-{today}.json"):
                print(f"record-cpu: the {kind} recorder wrote no {today} recording", file=sys.stderr)
                return 1
            for path in replace_older(kind, kept):
                print(f"==> {path.relative_to(RESULTS)} replaced by {kept.relative_to(RESULTS)}: take its name off "
                      "BEFORE_THE_RULE in tests/test_quiet.py", flush=True)
    print(f"==> every recording made in {time.perf_counter() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
