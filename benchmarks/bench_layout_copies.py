"""Why the loop over heads can beat the batched call (chapter 07): the batched call with and without its copies.

At each batch size, one thread, four codes are timed in interleaved rounds (each round runs all four, the order
reversed every other round): the loop over heads (5 calls, no copies in), the batched call (transpose_qkv copies
queries, keys and values into the folded layout), the same call on inputs already folded (attention_prefolded),
and the three copies alone. Each code is timed by the wall clock and by this thread's CPU time
(time.thread_time), which leaves out the time the operating system gives to other jobs: on a shared machine the
CPU-time ratios spread far less. The ratios printed are per round, median (min to max).

    python benchmarks/bench_layout_copies.py                       # batch 1, 4, 16, 64, 256, 1024; 9 rounds
    python benchmarks/bench_layout_copies.py --sizes 256 --rounds 15
    ATEN_CPU_CAPABILITY=default python benchmarks/bench_layout_copies.py   # PyTorch's plain (non-vector) kernels
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time

import torch

from mha_chapters.batching import attention_batched, attention_per_head, attention_prefolded, layout_copies
from mha_chapters.bench.sweeps import random_qkv
from mha_chapters.bench.timing import machine_summary
from mha_lib.functional import transpose_qkv

SEQ_LEN, NUM_HIDDENS, NUM_HEADS = 10, 100, 5  # chapter 07's sizes


def timed(fn, number: int) -> tuple[float, float]:
    """Milliseconds per call of fn(): by the wall clock and by this thread's CPU time."""
    wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
    for _ in range(number):
        fn()
    return (time.perf_counter_ns() - wall) / number / 1e6, (time.thread_time_ns() - cpu) / number / 1e6


def spread(values: list[float]) -> str:
    values = sorted(values)
    return f"{statistics.median(values):6.3f} ({values[0]:.3f} to {values[-1]:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,4,16,64,256,1024", help="batch sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    torch.set_num_threads(1)
    load = f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "unknown"
    print(f"{machine_summary(1)} | kernels {torch.backends.cpu.get_cpu_capability()} | torch {torch.__version__} "
          f"| load {load}")
    with torch.inference_mode():
        for batch_size in (int(size) for size in args.sizes.split(",")):
            queries, keys, values = random_qkv(batch_size, SEQ_LEN, NUM_HIDDENS)
            folded = [transpose_qkv(X, NUM_HEADS) for X in (queries, keys, values)]
            codes = {
                "loop over heads": functools.partial(attention_per_head, queries, keys, values, NUM_HEADS),
                "batched": functools.partial(attention_batched, queries, keys, values, NUM_HEADS),
                "batched, already folded": functools.partial(attention_prefolded, *folded, NUM_HEADS),
                "the three copies alone": lambda q=queries, k=keys, v=values: [transpose_qkv(X, NUM_HEADS)
                                                                               for X in (q, k, v)],
            }
            torch.testing.assert_close(codes["batched, already folded"](), codes["batched"]())
            torch.testing.assert_close(codes["loop over heads"](), codes["batched"]())
            copied = sum(c.nbytes for c in layout_copies(codes["batched"])) - sum(
                c.nbytes for c in layout_copies(codes["loop over heads"]))
            number = max(3, min(100, 10_000 // batch_size))
            wall: dict[str, list[float]] = {name: [] for name in codes}
            cpu: dict[str, list[float]] = {name: [] for name in codes}
            names = list(codes)
            for name in names:  # warm-up
                codes[name]()
            for r in range(args.rounds):
                for name in names if r % 2 == 0 else names[::-1]:
                    w, c = timed(codes[name], number)
                    wall[name].append(w)
                    cpu[name].append(c)
            print(f"\nbatch {batch_size}: the batched call copies {copied:,} bytes more than the loop; "
                  f"{args.rounds} rounds of {number} calls; ms per call, median (min to max)")
            for name in names:
                print(f"  {name:24s} CPU {spread(cpu[name])}   wall {spread(wall[name])}")
            for first, second in (("loop over heads", "batched"), ("batched, already folded", "batched"),
                                  ("batched, already folded", "loop over heads"),
                                  ("the three copies alone", "batched")):
                by_cpu = [a / b for a, b in zip(cpu[first], cpu[second], strict=True)]
                by_wall = [a / b for a, b in zip(wall[first], wall[second], strict=True)]
                print(f"  {first} / {second}: CPU {spread(by_cpu)}   wall {spread(by_wall)}")


if __name__ == "__main__":
    main()
