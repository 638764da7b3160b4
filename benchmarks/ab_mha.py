"""A/B: this checkout's mha_lib.MultiHeadAttention against another revision's, and both against PyTorch.

The other revision's ``mha_lib`` is unpacked with ``git archive`` into a temporary folder under another package
name (the package imports itself relatively), so both run in this one process on the same weights and inputs.
For each size and path, three callables are timed in interleaved pairs (this / PyTorch, base / PyTorch,
this / base); the table shows the median of the per-pair ratios and their spread (min-max).
The sizes and the PyTorch call are those of ``benchmarks/bench_mha.py``.

    python benchmarks/ab_mha.py [--base main] [--pairs 30] [--sizes small large]
"""

from __future__ import annotations

import argparse
import importlib
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import torch

import mha_lib
from mha_chapters.bench.timing import machine_summary, paired_times

sys.path.insert(0, str(Path(__file__).parent))
from bench_mha import SIZES  # noqa: E402  (the sizes of the benchmark this one compares against)


def load_revision(revision: str, folder: Path):
    """Import ``mha_lib`` as it is at ``revision``, under the package name ``mha_lib_base``."""
    archive = subprocess.run(["git", "archive", revision, "mha_lib"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    (folder / "mha_lib").rename(folder / "mha_lib_base")
    sys.path.insert(0, str(folder))
    return importlib.import_module("mha_lib_base")


def calls(ours, theirs, torch_mha, x, lens, padding, need_weights: bool) -> dict:  # noqa: ANN001
    """The three calls to time: this checkout's layer, the base revision's and PyTorch's, on the same input."""
    return {"this": lambda: ours(x, x, x, lens, need_weights=need_weights),
            "base": lambda: theirs(x, x, x, lens, need_weights=need_weights),
            "torch": lambda: torch_mha(x, x, x, key_padding_mask=padding, need_weights=need_weights,
                                       average_attn_weights=False)[0]}


def spread(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="main")
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), default=["small", "large"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = load_revision(args.base, Path(folder))
        print(f"torch {torch.__version__}; base = {args.base}; median of {args.pairs} pair ratios (min-max)")
        for name in args.sizes:
            size = SIZES[name]
            d = size.num_hiddens
            mha_lib.set_seed(0)
            ours = mha_lib.MultiHeadAttention(d, d, d, d, size.num_heads).eval()
            theirs = base.MultiHeadAttention(d, d, d, d, size.num_heads).eval()
            theirs.load_state_dict(ours.state_dict())
            torch_mha = mha_lib.to_torch_mha(ours).eval()
            x = torch.randn(size.batch_size, size.seq_len, d)
            lens = torch.tensor([size.seq_len - 3 - i % 4 for i in range(size.batch_size)]) if size.padded else None
            padding = ~mha_lib.valid_lens_mask(lens, size.seq_len) if size.padded else None
            with mha_lib.cpu_threads(size.threads), torch.inference_mode():
                print(f"{name}: {machine_summary()}; batch {size.batch_size}, seq {size.seq_len}, hiddens {d}, "
                      f"heads {size.num_heads}, {'padding mask' if size.padded else 'no mask'}")
                for need_weights in (False, True):
                    fns = calls(ours, theirs, torch_mha, x, lens, padding, need_weights)
                    torch.testing.assert_close(fns["this"](), fns["torch"](), rtol=1e-4, atol=1e-5)
                    torch.testing.assert_close(fns["this"](), fns["base"](), rtol=1e-5, atol=1e-6)
                    row = []
                    for first, second in (("this", "torch"), ("base", "torch"), ("this", "base")):
                        a, b = paired_times(fns[first], fns[second], repeats=args.pairs, number=size.number)
                        row.append(f"{first}/{second} {spread([x / y for x, y in zip(a, b, strict=True)])}")
                    print(f"  need_weights={need_weights!s:<5}  " + "   ".join(row))


if __name__ == "__main__":
    main()
