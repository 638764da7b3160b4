"""Time mha_lib.MultiHeadAttention against torch.nn.MultiheadAttention on the CPU, at two sizes.

Self-attention, float32, inference (eval mode, no autograd), both paths of each module:

- small: batch 2, 10 tokens, 100 hiddens, 5 heads (the size the chapters and the explorer run),
  one thread, with a padding mask (valid lengths 7 and 6);
- large: batch 32, 128 tokens, 512 hiddens, 8 heads, all threads, no mask.

Both modules hold the same weights and run in this one process, timed alternately with
torch.utils.benchmark; the printed numbers are median time ratios mha_lib / PyTorch (below 1.00 means
mha_lib is faster).

    python benchmarks/bench_mha.py [--pairs 30] [--sizes small large]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass

import torch

import mha_lib
from mha_chapters.bench.timing import paired_times


@dataclass(frozen=True)
class Size:
    batch_size: int
    seq_len: int
    num_hiddens: int
    num_heads: int
    threads: int | None  # None: all threads
    padded: bool
    number: int  # calls per measurement
    targets: dict[str, float]  # the goal for each path, as a ratio mha_lib / PyTorch


SIZES = {
    "small": Size(2, 10, 100, 5, threads=1, padded=True, number=200,
                  targets={"need_weights=False": 1.00, "need_weights=True": 1.15}),
    "large": Size(32, 128, 512, 8, threads=None, padded=False, number=4,
                  targets={"need_weights=False": 0.90, "need_weights=True": 1.00}),
}


def run(name: str, size: Size, pairs: int) -> None:
    mha_lib.set_seed(0)
    d = size.num_hiddens
    ours = mha_lib.MultiHeadAttention(d, d, d, d, size.num_heads).eval()
    theirs = mha_lib.to_torch_mha(ours).eval()
    x = torch.randn(size.batch_size, size.seq_len, d)
    valid_lens = torch.tensor([size.seq_len - 3 - i % 4 for i in range(size.batch_size)]) if size.padded else None
    padding = ~mha_lib.valid_lens_mask(valid_lens, size.seq_len) if size.padded else None  # PyTorch: True = ignore
    paths = {
        "need_weights=False": (
            lambda: ours(x, x, x, valid_lens, need_weights=False),
            lambda: theirs(x, x, x, key_padding_mask=padding, need_weights=False)[0],
        ),
        "need_weights=True": (
            lambda: ours(x, x, x, valid_lens),
            lambda: theirs(x, x, x, key_padding_mask=padding, need_weights=True, average_attn_weights=False)[0],
        ),
    }
    with mha_lib.cpu_threads(size.threads):
        print(f"{name}: batch {size.batch_size}, seq {size.seq_len}, hiddens {d}, heads {size.num_heads}, "
              f"{torch.get_num_threads()} thread(s), {'padding mask' if size.padded else 'no mask'}")
        with torch.inference_mode():
            for path, (ours_fn, theirs_fn) in paths.items():
                torch.testing.assert_close(ours_fn(), theirs_fn(), rtol=1e-4, atol=1e-5)
                ours_times, theirs_times = paired_times(ours_fn, theirs_fn, repeats=pairs, number=size.number)
                ratios = [a / b for a, b in zip(ours_times, theirs_times, strict=True)]
                ratio, target = statistics.median(ratios), size.targets[path]
                print(f"  {path:<20} mha_lib {statistics.median(ours_times) * 1e6:9.1f} us   "
                      f"torch {statistics.median(theirs_times) * 1e6:9.1f} us   ratio {ratio:.3f}x "
                      f"(target <= {target:.2f}x, {'ok' if ratio <= target else 'OVER TARGET'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=30, help="alternating measurements per comparison")
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), default=["small", "large"])
    args = parser.parse_args()
    print(f"torch {torch.__version__}, mha_lib / torch.nn.MultiheadAttention, float32, inference")
    for name in args.sizes:
        run(name, SIZES[name], args.pairs)


if __name__ == "__main__":
    main()
