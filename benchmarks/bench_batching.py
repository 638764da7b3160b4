"""Time attention in loops against one batched call, and its cost against sequence length, per device.

Runs the two sweeps of chapter 07 (mha_chapters.batching) on the CPU and on the GPU you name, in float32,
inference, and writes one JSON result with its provenance (device names, torch version, date, threads,
shapes, medians) into the package's results folder, mha_chapters/bench/results/<device>-<date>.json, which
ships with mha_lib (package data). The notebook plots every file there, labelled as recorded.

    python benchmarks/bench_batching.py                  # the CPU only
    python benchmarks/bench_batching.py --device cuda    # an NVIDIA GPU, and the CPU of the same machine
    python benchmarks/bench_batching.py --device mps     # an Apple GPU, and the CPU
    python benchmarks/bench_batching.py --quick --out /tmp/results   # a tiny sweep (tests use it)

A GPU result is only ever measured on that GPU: the script stops if the device asked for is not there.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import torch

from mha_chapters.bench.quiet import watch_machine
from mha_chapters.bench.records import make_result, results_directory, save_result
from mha_chapters.bench.sweeps import BatchSweep, LengthSweep, measure_device

# The GPU sweeps go further: a GPU is slow on tiny batches (each kernel launch costs a few
# microseconds) and fast on large ones, and the point where it overtakes the CPU is the interesting part.
BATCH_SWEEPS = {
    "cpu": BatchSweep(batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256)),
    "gpu": BatchSweep(batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096)),
    "quick": BatchSweep(batch_sizes=(1, 4), seq_len=4, num_hiddens=8, num_heads=2),
}
LENGTH_SWEEPS = {
    "cpu": LengthSweep(seq_lens=(64, 128, 256, 512, 1024, 2048)),
    "gpu": LengthSweep(seq_lens=(64, 128, 256, 512, 1024, 2048, 4096, 8192)),
    "quick": LengthSweep(seq_lens=(8, 16), batch_size=1, num_hiddens=8, num_heads=2),
}


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda", "mps"), default="cpu",
                        help="the device to measure besides the CPU (default: the CPU only)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for PyTorch while timing (default: all it uses now)")
    parser.add_argument("--min-run-time", type=float, default=0.05,
                        help="seconds of timing per measurement (torch.utils.benchmark blocked_autorange)")
    parser.add_argument("--quick", action="store_true", help="a tiny sweep that takes seconds (for tests)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"directory for the JSON result (default: the package's, {results_directory()})")
    args = parser.parse_args(argv)

    available = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if not available[args.device]:
        parser.error(f"--device {args.device} asked for, but torch finds no {args.device} device here "
                     f"(torch {torch.__version__}); GPU results must be measured on a GPU")
    devices = ["cpu"] if args.device == "cpu" else [args.device, "cpu"]
    min_run_time = 0.01 if args.quick else args.min_run_time

    # into the chapters' recordings: first wait up to two minutes for the other processes to fall quiet
    machine = watch_machine(wait=args.out is None)
    runs = []
    for device in devices:
        # one set of sizes for every device of a run, so that the GPU and its CPU are compared like for like
        size = "quick" if args.quick else ("cpu" if args.device == "cpu" else "gpu")
        start = time.perf_counter()
        runs.append(measure_device(device, BATCH_SWEEPS[size], LENGTH_SWEEPS[size], min_run_time, args.threads))
        run = runs[-1]
        print(f"{device}: {run.name}, threads {run.threads}, {time.perf_counter() - start:.1f} s")
        sweep = run.batch_sweep
        for i, batch_size in enumerate(sweep.batch_sizes):
            times = "  ".join(f"{name} {sweep.median_s[name][i] * 1e3:8.3f} ms" for name in sweep.median_s)
            print(f"  batch {batch_size:5d}:  {times}")
        sweep = run.length_sweep
        for i, seq_len in enumerate(sweep.seq_lens):
            times = "  ".join(f"{name} {sweep.median_s[name][i] * 1e3:8.3f} ms" for name in sweep.median_s)
            print(f"  seq {seq_len:5d}:  {times}  score tensor {sweep.score_bytes[i] / 2**20:8.2f} MiB")

    command = " ".join(["python", "benchmarks/bench_batching.py", *map(shlex.quote, sys.argv[1:] if argv is None
                                                                         else argv)])
    machine.report()  # save_result refuses to add a result timed while other processes were busy to the chapters
    path = save_result(make_result(runs, command, min_run_time, machine.stop()), args.out)
    print(f"wrote {path.name}")
    return path


if __name__ == "__main__":
    main()
