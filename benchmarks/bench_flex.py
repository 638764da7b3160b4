"""Time chapter 11's masks: dense SDPA with a boolean mask, eager flex_attention and compiled flex_attention.

Causal sliding-window self-attention (mha_lib.flex.sliding_window_mask_mod(window, causal=True)), float32,
inference, batch 1, 4 heads, head_dim 16, for a few sequence lengths and windows. A fourth call is a reference
for the cost: SDPA with is_causal=True and no mask, the fused kernel's own causal path, which computes the whole
causal triangle (more than the window needs; the same result only where the window covers the sequence). The
ways are timed in this one process, in rotating order (none always runs second, on a warmer cache), with
torch.utils.benchmark; the printed numbers are median times per call and the median and min-max of the per-round
ratios against dense SDPA; the record keeps every round's ratio. The
first call of the compiled function (torch.compile builds the kernel: tens of seconds on a CPU) is reported
separately, once per sequence length, and never mixed into the medians. The block size is 128 (flex's default).

    python benchmarks/bench_flex.py [--pairs 7] [--threads N] [--record] [--quick]
    python benchmarks/bench_flex.py --figure    # one slider change of chapter 11 at its defaults, drawn to PNG

--compile-fresh times the first compiled call of each sequence length in a fresh Python process with an empty
compile cache (TORCHINDUCTOR_CACHE_DIR in a new temporary folder), so that no shape profits from another's work.

--record writes the table, with the machine (CPU model, cache sizes, threads), torch version and date, to
mha_chapters/bench/results/flex/<device>-<date>.json, which chapter 11 reads. Only the CPU is timed here (no GPU
was lent when the recording was made); the script refuses nothing on a GPU machine but times the CPU only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils import benchmark

from mha_chapters.bench.quiet import require_quiet, watch_machine
from mha_chapters.bench.timing import device_name, machine_summary
from mha_lib import set_seed
from mha_lib.flex import SKIPPED, block_tiles, dense_mask, flex_attention_available, sliding_window_mask_mod

BATCH_SIZE, NUM_HEADS, HEAD_DIM, BLOCK_SIZE = 1, 4, 16, 128
SEQ_LENS = (512, 2048)
WINDOWS = (64, 512)
RESULTS = Path(__file__).resolve().parents[1] / "mha_chapters" / "bench" / "results" / "flex"


def paired_times(fns: dict[str, object], pairs: int, number: int, min_time: float = 0.05) -> dict[str, list[float]]:
    """Per-measurement times (seconds per call) of each function, measured in rotating order.

    Each measurement makes at least ``number`` calls, and enough calls to last about ``min_time`` seconds: a
    measurement of one millisecond is at the mercy of a single interruption on a busy machine.
    """
    timers = {name: benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
              for name, fn in fns.items()}
    numbers = {name: max(number, round(min_time / timer.timeit(1).median)) for name, timer in timers.items()}
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(pairs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            times[name].append(timers[name].timeit(numbers[name]).median)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=7, help="rotating measurements per comparison")
    parser.add_argument("--number", type=int, default=2, help="calls per measurement, at least (and 50 ms)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for PyTorch (default: as now)")
    parser.add_argument("--record", action="store_true", help="write the JSON chapter 11 reads")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"with --record: folder for the JSON (default: the package's, {RESULTS}); a run "
                             "timed on a busy machine is refused only there")
    parser.add_argument("--no-compile", action="store_true", help="skip compiled flex (no C compiler)")
    parser.add_argument("--figure", action="store_true", help="time one redraw of chapter 11's block picture only")
    parser.add_argument("--quick", action="store_true", help="one small size, eager only: seconds (a smoke test)")
    parser.add_argument("--compile-fresh", action="store_true",
                        help="also time each length's first compiled call in a fresh process with an empty cache")
    parser.add_argument("--first-call", type=int, default=None, help=argparse.SUPPRESS)  # the fresh process's job
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.figure:
        time_figure()
        return
    if args.first_call is not None:
        print(f"{first_compiled_call(args.first_call):.2f}")
        return
    if not flex_attention_available():
        sys.exit(f"torch {torch.__version__} has no torch.nn.attention.flex_attention (it needs 2.5 or newer)")
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    seq_lens, windows = ((256,), (64,)) if args.quick else (SEQ_LENS, WINDOWS)
    compiled = None if (args.quick or args.no_compile) else torch.compile(flex_attention)
    pairs = 3 if args.quick else args.pairs
    set_seed(0)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    # a recording for the chapter waits up to two minutes for the others to fall quiet
    machine = watch_machine(wait=args.record and args.out is None)
    print(f"torch {torch.__version__}, {machine_summary()}, batch "
          f"{BATCH_SIZE}, {NUM_HEADS} heads, head_dim {HEAD_DIM}, float32, inference, block {BLOCK_SIZE}")
    rows, compile_s = [], {}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")  # eager on purpose
        for n in seq_lens:
            q, k, v = (torch.randn(BATCH_SIZE, NUM_HEADS, n, HEAD_DIM) for _ in range(3))
            for window in windows:
                mask_mod = sliding_window_mask_mod(window, causal=True)
                block_mask = create_block_mask(mask_mod, None, None, n, n, device="cpu", BLOCK_SIZE=BLOCK_SIZE)
                mask = dense_mask(mask_mod, 1, 1, n, n)[0, 0]  # (n, n)
                skipped = (block_tiles(mask, BLOCK_SIZE) == SKIPPED).float().mean().item()
                fns = {"dense_sdpa": partial(F.scaled_dot_product_attention, q, k, v, attn_mask=mask),
                       "causal_sdpa": partial(F.scaled_dot_product_attention, q, k, v, is_causal=True),
                       "eager_flex": partial(flex_attention, q, k, v, block_mask=block_mask)}
                if compiled is not None:
                    fns["compiled_flex"] = partial(compiled, q, k, v, block_mask=block_mask)
                    if n not in compile_s:
                        start = time.perf_counter()
                        compiled(q, k, v, block_mask=block_mask)
                        compile_s[n] = time.perf_counter() - start
                expected = fns["dense_sdpa"]()
                for name, fn in fns.items():
                    if name != "causal_sdpa" or window >= n:  # the whole triangle equals the window only then
                        torch.testing.assert_close(fn(), expected, atol=1e-5, rtol=1e-5)
                times = paired_times(fns, pairs, args.number)
                row = {"seq_len": n, "window": window, "skipped_tiles": round(skipped, 4)}
                for name, values in times.items():
                    row[f"{name}_ms"] = round(statistics.median(values) * 1e3, 4)
                    if name != "dense_sdpa":
                        ratios = [a / b for a, b in zip(values, times["dense_sdpa"], strict=True)]
                        row[f"{name}_over_dense"] = round(statistics.median(ratios), 3)
                        row[f"{name}_over_dense_range"] = [round(min(ratios), 3), round(max(ratios), 3)]
                        row[f"{name}_over_dense_pairs"] = [round(ratio, 4) for ratio in ratios]
                rows.append(row)
                print("  ".join(f"{key} {value}" for key, value in row.items() if not key.endswith("_pairs")))
    for n, seconds in compile_s.items():
        print(f"first compiled call at n={n}: {seconds:.1f} s (compilation, in this process)")
    fresh_s = {}
    if args.compile_fresh:
        for n in seq_lens:
            fresh_s[n] = fresh_first_call(n, torch.get_num_threads())
            print(f"first compiled call at n={n} in a fresh process, empty cache: {fresh_s[n]:.1f} s")
    machine.report()
    if args.record:
        folder = RESULTS if args.out is None else args.out
        path = folder / f"cpu-{datetime.date.today().isoformat()}.json"
        if folder.resolve() == RESULTS.resolve():  # the chapter's recording: only from a quiet machine
            require_quiet(machine.provenance.others_before, machine.provenance.others_during, path.name,
                          machine.provenance.load_average)
        record = {
            "what": "causal sliding-window self-attention, chapter 11 (benchmarks/bench_flex.py)",
            "device": "cpu", "device_name": device_name("cpu"), "machine": machine_summary(),
            "torch": torch.__version__,
            "date": datetime.date.today().isoformat(), "threads": torch.get_num_threads(),
            "command": "python benchmarks/bench_flex.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "sizes": {"batch_size": BATCH_SIZE, "num_heads": NUM_HEADS, "head_dim": HEAD_DIM, "block_size": BLOCK_SIZE},
            "pairs": pairs, "number": args.number, "min_measurement_s": 0.05,
            "note": "no GPU was measured",
            "load_average_1min": [None if load is None else round(load, 2) for load in
                                  (load_before, os.getloadavg()[0] if hasattr(os, "getloadavg") else None)],
            "load_average_before": machine.provenance.load_average,
            "others_before_cores": machine.provenance.others_before,
            "others_during_cores": machine.provenance.others_during,
            "compile_s": {str(n): round(s, 1) for n, s in compile_s.items()},
            "compile_fresh_s": {str(n): round(s, 1) for n, s in fresh_s.items()},
            "rows": rows,
        }
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(f"recorded {path}")


def first_compiled_call(n: int) -> float:
    """Seconds of the first call of torch.compile(flex_attention) at length n, mask and inputs made beforehand."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = (torch.randn(BATCH_SIZE, NUM_HEADS, n, HEAD_DIM) for _ in range(3))
    block_mask = create_block_mask(sliding_window_mask_mod(WINDOWS[0], causal=True), None, None, n, n,
                                   device="cpu", BLOCK_SIZE=BLOCK_SIZE)
    compiled = torch.compile(flex_attention)
    with torch.no_grad():
        start = time.perf_counter()
        compiled(q, k, v, block_mask=block_mask)
        return time.perf_counter() - start


def fresh_first_call(n: int, threads: int) -> float:
    """:func:`first_compiled_call` in a new Python process with an empty compile cache of its own."""
    with tempfile.TemporaryDirectory() as cache:
        environment = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        result = subprocess.run([sys.executable, __file__, "--first-call", str(n), "--threads", str(threads)],
                                env=environment, capture_output=True, text=True, check=True)
    return float(result.stdout.split()[-1])


def time_figure(repeats: int = 9) -> None:
    """Median time of what one slider change does at chapter 11's defaults: build the mask, draw, render a PNG."""
    import io

    from mha_chapters.flex import plot_block_mask

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        plot_block_mask(1024, 128, 128).savefig(io.BytesIO(), format="png")
        times.append(time.perf_counter() - start)
    print(f"one redraw at seq_len 1024, window 128, block 128: median {statistics.median(times) * 1e3:.0f} ms, "
          f"min {min(times) * 1e3:.0f} ms over {repeats} ({torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
