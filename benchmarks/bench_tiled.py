"""Time chapter 10's tiled attention (a Python loop over key tiles) against F.scaled_dot_product_attention.

Self-attention, float32, inference, batch 2, 4 heads, head_dim 16 (chapter 07's 64 hiddens), for a few
sequence lengths and tile sizes. Each comparison is timed in this one process, alternately, with
torch.utils.benchmark; the printed numbers are the median and the min-max of the per-pair time ratios (ours /
PyTorch's fused kernel; above 1.00 means slower). The header names the machine: CPU model, cache sizes, threads.
The explicit computation (mha_lib.dot_product_attention, which
stores the n x n scores and weights) is timed the same way for comparison. Beside each line: the bytes
the tiled loop holds (one tile of scores and the running state, mha_chapters.tiled.tiled_state_bytes)
against the bytes of the full score matrix.

    python benchmarks/bench_tiled.py [--pairs 15] [--number 2] [--threads 1] [--device cpu|cuda] [--quick]

On a CPU expect the tiled loop to be SLOWER than the fused kernel: every tile is a few separate PyTorch
calls from Python, each reading and writing its tile in main memory. Tiling pays where the whole loop runs
inside one kernel that keeps the tile in on-chip memory (FlashAttention on a GPU).
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F

from mha_chapters.bench.timing import machine_summary, paired_times
from mha_chapters.tiled import full_score_bytes, tiled_attention, tiled_state_bytes
from mha_lib import dot_product_attention, set_seed

BATCH_SIZE, NUM_HEADS, HEAD_DIM = 2, 4, 16
SEQ_LENS = (256, 1024, 2048)
TILE_SIZES = (64, 256)


def paired_ratio(ours, theirs, pairs: int, number: int, device: str) -> tuple[list[float], float, float]:
    """The per-pair time ratios ours / theirs, sorted, and both median times in seconds per call."""
    ours_times, theirs_times = paired_times(ours, theirs, device, repeats=pairs, number=number)
    ratios = sorted(a / b for a, b in zip(ours_times, theirs_times, strict=True))
    return ratios, statistics.median(ours_times), statistics.median(theirs_times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=15, help="alternating measurements per comparison")
    parser.add_argument("--number", type=int, default=2, help="calls per measurement")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for PyTorch (default: as many as it uses now); on a busy machine use 1")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a few pairs: seconds (a smoke test)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda asked for, but torch finds no CUDA device; GPU results must be measured on a GPU")
    seq_lens, tile_sizes = ((64,), (16,)) if args.quick else (SEQ_LENS, TILE_SIZES)
    pairs = 3 if args.quick else args.pairs

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    set_seed(0)
    print(f"torch {torch.__version__}, device {args.device}, {machine_summary()}, "
          f"batch {BATCH_SIZE}, {NUM_HEADS} heads, head_dim {HEAD_DIM}, float32, inference; "
          f"ratio = median (min-max) of {pairs} paired ratios against SDPA")
    with torch.inference_mode():
        for n in seq_lens:
            compare_length(n, tile_sizes, pairs, args.number, args.device)


def compare_length(n: int, tile_sizes: tuple[int, ...], pairs: int, number: int, device: str) -> None:
    """Self-attention over n tokens: each tile size and the explicit computation against SDPA; print a line each."""
    q, k, v = (torch.randn(BATCH_SIZE, NUM_HEADS, n, HEAD_DIM, device=device) for _ in range(3))
    def fused():
        return F.scaled_dot_product_attention(q, k, v)
    candidates = {f"tiled, tile_size={t}": (lambda t=t: tiled_attention(q, k, v, t), t) for t in tile_sizes}
    candidates["explicit (n x n scores)"] = (lambda: dot_product_attention(q, k, v)[0], None)
    scores = full_score_bytes(BATCH_SIZE * NUM_HEADS, n, n)
    for name, (fn, tile) in candidates.items():
        torch.testing.assert_close(fn(), fused(), atol=1e-5, rtol=1e-5)
        ratios, ours, theirs = paired_ratio(fn, fused, pairs, number, device)
        held = (f"holds {tiled_state_bytes(BATCH_SIZE * NUM_HEADS, n, n, HEAD_DIM, tile) / 2**20:6.2f} MiB"
                if tile else f"scores {scores / 2**20:6.2f} MiB (x2 with weights)")
        print(f"n={n:5d}  {name:<24} {ours * 1e3:8.3f} ms  SDPA {theirs * 1e3:7.3f} ms  "
              f"ratio {statistics.median(ratios):5.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})   {held}")


if __name__ == "__main__":
    main()
