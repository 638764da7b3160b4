"""Record chapter 07's sweeps on an NVIDIA GPU and the CPU beside it, then draw the chapter's figures from it.

    make record-gpu                                    # on a machine with CUDA: record, then draw
    python benchmarks/record_gpu.py --render FILE      # draw the figures of any recording (a CPU one, too)

The recording is ``benchmarks/bench_batching.py --device cuda`` by the quiet-machine rule (it waits for the other
processes to fall quiet and refuses a busy run; ``mha_chapters/bench/quiet.py``), written into the chapters'
recordings, ``mha_chapters/bench/results/cuda-<date>.json``, where chapter 07 finds it. The figures are the two that
chapter 07 draws from its recordings (every device's batched call, and cost against sequence length), written as
SVG into ``build/record-gpu/``; ``make outputs`` then redraws them in the chapter itself.

It runs from the source tree on whatever PyTorch 2.11 or newer the machine has, with nothing installed: a GPU
machine lent for an hour carries its own PyTorch, and perhaps no matplotlib (then the recording is made and the
drawing is left to a machine that has it, with the command to run there). It prints how long the sweeps took (a
device machine's session allows about six minutes) and stops, saying why, before it starts on a machine without
CUDA.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # the source tree, not an installed copy

import torch  # noqa: E402

OLDEST_TORCH = (2, 11)
FIGURES = ROOT / "build" / "record-gpu"


def torch_version() -> tuple[int, int]:
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def why_not_here() -> str | None:
    """Why this machine cannot record the GPU half, or None when it can."""
    if torch_version() < OLDEST_TORCH:
        return (f"torch {torch.__version__} is older than {'.'.join(map(str, OLDEST_TORCH))}, the oldest this "
                "recording runs on")
    if not torch.cuda.is_available():
        return (f"torch {torch.__version__} finds no CUDA device here, and a GPU recording is only ever measured "
                "on that GPU. Run `make record-gpu` on a machine with an NVIDIA GPU; here, `make bench-batching` "
                "records the CPU")
    return None


def render(path: Path, folder: Path = FIGURES) -> list[Path]:
    """Draw chapter 07's two recorded figures from the recording ``path`` into ``folder``; the files written."""
    from mha_chapters.batching import plot_devices, plot_length_sweep
    from mha_chapters.bench.records import load_result

    result = load_result(path)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, figure in (("devices", plot_devices([], [result])), ("length-sweep", plot_length_sweep([], [result]))):
        target = folder / f"{path.stem}-{name}.svg"
        figure.savefig(target, bbox_inches="tight", metadata={"Date": None})
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render", type=Path, metavar="FILE", help="only draw the figures of this recording")
    args = parser.parse_args(argv)
    if args.render is None:
        problem = why_not_here()
        if problem:
            print(f"make record-gpu: {problem}.", file=sys.stderr)
            return 2
        import bench_batching

        start = time.perf_counter()
        path = bench_batching.main(["--device", "cuda"])
        print(f"recorded {path.relative_to(ROOT)} in {time.perf_counter() - start:.0f} s")
    else:
        path = args.render
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"matplotlib is not installed here: draw the figures where it is, with\n"
              f"    python benchmarks/record_gpu.py --render {path}")
        return 0
    for target in render(path):
        print(f"drew {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
