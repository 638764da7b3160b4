"""Time mha_lib.MultiHeadAttention against torch.nn.MultiheadAttention on the CPU.

Self-attention, float32, batch 32, sequence 128, 512 hiddens, 8 heads, inference
(eval mode, no autograd). Both modules hold the same weights and run in this one
process, timed alternately with torch.utils.benchmark; the printed numbers are
median time ratios mha_lib / PyTorch (below 1.00 means mha_lib is faster).

    python benchmarks/bench_mha.py [--pairs 30] [--number 4]
"""

from __future__ import annotations

import argparse
import statistics

import torch
from torch.utils import benchmark

import mha_lib

BATCH_SIZE, SEQ_LEN, NUM_HIDDENS, NUM_HEADS = 32, 128, 512, 8
TARGETS = {"need_weights=False": 1.00, "need_weights=True": 1.15}


def paired_times(ours_fn, theirs_fn, x: torch.Tensor, pairs: int, number: int) -> tuple[list, list]:
    """Time the two functions alternately, ``number`` calls at a time; return both lists of seconds per call.

    This machine's speed drifts (other jobs, clock changes); timing the pair back to back
    and comparing within each pair keeps that drift out of the ratio.
    """
    timers = [benchmark.Timer(stmt="fn(x)", globals={"fn": fn, "x": x}, num_threads=torch.get_num_threads())
              for fn in (ours_fn, theirs_fn)]
    ours_times, theirs_times = [], []
    for i in range(pairs):
        order = (0, 1) if i % 2 == 0 else (1, 0)  # neither always runs second, on a warmer cache
        times = {j: timers[j].timeit(number).median for j in order}
        ours_times.append(times[0])
        theirs_times.append(times[1])
    return ours_times, theirs_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=30, help="alternating measurements per comparison")
    parser.add_argument("--number", type=int, default=4, help="calls per measurement")
    args = parser.parse_args()

    mha_lib.set_seed(0)
    ours = mha_lib.MultiHeadAttention(NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, NUM_HEADS, dropout=0.0).eval()
    theirs = mha_lib.to_torch_mha(ours).eval()
    x = torch.randn(BATCH_SIZE, SEQ_LEN, NUM_HIDDENS)

    pairs = {
        "need_weights=False": (
            lambda x: ours(x, x, x, need_weights=False),
            lambda x: theirs(x, x, x, need_weights=False)[0],
        ),
        "need_weights=True": (
            lambda x: ours(x, x, x, need_weights=True),
            lambda x: theirs(x, x, x, need_weights=True, average_attn_weights=False)[0],
        ),
    }
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"batch {BATCH_SIZE}, seq {SEQ_LEN}, hiddens {NUM_HIDDENS}, heads {NUM_HEADS}, float32, inference")
    with torch.inference_mode():
        for name, (ours_fn, theirs_fn) in pairs.items():
            torch.testing.assert_close(ours_fn(x), theirs_fn(x), rtol=1e-4, atol=1e-5)
            ours_times, theirs_times = paired_times(ours_fn, theirs_fn, x, args.pairs, args.number)
            ratios = [a / b for a, b in zip(ours_times, theirs_times, strict=True)]
            ratio = statistics.median(ratios)
            verdict = "ok" if ratio <= TARGETS[name] else "OVER TARGET"
            print(f"{name:<20} mha_lib {statistics.median(ours_times) * 1e3:7.2f} ms   "
                  f"torch {statistics.median(theirs_times) * 1e3:7.2f} ms   "
                  f"ratio {ratio:.3f}x (target <= {TARGETS[name]:.2f}x, {verdict})")


if __name__ == "__main__":
    main()
