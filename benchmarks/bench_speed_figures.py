"""The three speed figures of mha_lib's MultiHeadAttention, timed in one process and optionally recorded.

Self-attention on the CPU, float32, inference (eval mode, no autograd); each figure is a median ratio of
paired, interleaved timings (torch.utils.benchmark, via mha_chapters.bench.timing.paired_times), ours / theirs,
below 1.00 where mha_lib is faster:

- d2l: batch 2, 10 queries, 100 hiddens, 5 heads, padding (valid lengths 7 and 6), one thread:
  ``mha(x, x, x, valid_lens)`` (need_weights=True: the heads folded, the per-head weights kept) against d2l
  0.17's own ``MultiHeadAttention`` from the PyPI wheel d2l==0.17.6, the weights copied; target <= 1.10;
- fused: the same size and thread, ``mha(..., need_weights=False)`` against
  ``torch.nn.MultiheadAttention(..., key_padding_mask=..., need_weights=False)``; target <= 1.05;
- large: batch 32, 128 tokens, 512 hiddens, 8 heads, no mask, all threads, the same pair; target <= 0.95.

Every pair's outputs are checked equal before it is timed. d2l's definitions are run from the wheel's
``d2l/torch.py`` (importing d2l would need torchvision, pandas and more); the wheel is downloaded once with
``pip download --no-deps`` into ``--wheels`` (default: build/d2l-wheels, ignored by git). Offline, copy the file
``d2l-0.17.6-py3-none-any.whl`` there from a machine that has it, and pass ``--no-download``.

    python benchmarks/bench_speed_figures.py                 # print the figures (about a minute)
    python benchmarks/bench_speed_figures.py --record        # ... and store them in mha_chapters/bench/results/speed/
    python benchmarks/bench_speed_figures.py --out /tmp/x    # ... or write the recording elsewhere

``--record`` first waits (up to two minutes) for the other processes to fall quiet, then refuses to store a run
that others disturbed, by the quiet-machine rule of mha_chapters.bench.quiet. The recordings live beside the
benchmarks, not in the package's results folder (mha_chapters/bench/results), because they are facts about the
library that tests/test_speed_figures.py checks, not data a chapter plots: they need not ship in the wheel.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import math
import platform
import shlex
import statistics
import subprocess
import sys
import types
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import mha_lib
from mha_chapters.bench.quiet import quiet_problems, require_quiet, watch_machine
from mha_chapters.bench.timing import device_name, paired_times

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "mha_chapters" / "bench" / "results" / "speed"  # where --record stores, and the test reads
WHEELS = ROOT / "build" / "d2l-wheels"
D2L_VERSION = "0.17.6"
D2L_NAMES = ["sequence_mask", "masked_softmax", "DotProductAttention", "transpose_qkv", "transpose_output",
             "MultiHeadAttention"]  # what d2l 0.17's MultiHeadAttention needs, in an order in which they run
SCHEMA = "mha-notebooks/speed_figures/1"


@dataclass(frozen=True)
class Figure:
    """One speed figure: mha_lib against ``theirs`` at one size, with the ratio it must reach."""

    batch_size: int
    seq_len: int
    num_hiddens: int
    num_heads: int
    one_thread: bool  # False: all threads PyTorch uses
    padded: bool  # valid lengths seq_len - 3, seq_len - 4, ... (7 and 6 at 10 tokens), as bench_mha's small size
    need_weights: bool  # our path
    theirs: str  # "d2l" or "torch"
    target: float  # the most ours / theirs may be
    number: int  # calls per measurement
    pairs: int  # interleaved measurements of each


FIGURES = {
    "d2l": Figure(2, 10, 100, 5, True, True, True, "d2l", 1.10, number=200, pairs=60),
    "fused": Figure(2, 10, 100, 5, True, True, False, "torch", 1.05, number=200, pairs=60),
    "large": Figure(32, 128, 512, 8, False, False, False, "torch", 0.95, number=4, pairs=30),
}
# the machinery at tiny sizes, for the unit test: the same three comparisons in a second
QUICK = {name: Figure(2, 6, 8, 2, figure.one_thread, figure.padded, figure.need_weights, figure.theirs,
                      figure.target, number=2, pairs=3) for name, figure in FIGURES.items()}


def d2l_wheel(folder: Path, download: bool) -> Path:
    """The wheel d2l==0.17.6 in ``folder``, downloaded there first (``pip download --no-deps``) if allowed."""
    found = sorted(folder.glob(f"d2l-{D2L_VERSION}-*.whl"))
    if not found and download:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
                   "--timeout", "20", "--dest", str(folder), f"d2l=={D2L_VERSION}"]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=180)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as error:
            print(f"pip could not download d2l=={D2L_VERSION}: {error}", file=sys.stderr)
        found = sorted(folder.glob(f"d2l-{D2L_VERSION}-*.whl"))
    if not found:
        raise SystemExit(
            f"no d2l-{D2L_VERSION} wheel in {folder}. Online, run `{sys.executable} -m pip download --no-deps "
            f"--dest {folder} d2l=={D2L_VERSION}` (this script does it unless --no-download is given); offline, "
            f"copy d2l-{D2L_VERSION}-py3-none-any.whl into {folder} from a machine that has it, or pass "
            f"--wheels FOLDER where it is.")
    return found[0]


def d2l_attention_class(wheel: Path) -> type[nn.Module]:
    """d2l 0.17's own ``MultiHeadAttention``, run from the wheel's ``d2l/torch.py`` with what it needs."""
    source = zipfile.ZipFile(wheel).read("d2l/torch.py").decode()
    definitions = {node.name: node for node in ast.parse(source).body
                   if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in D2L_NAMES}
    namespace = types.SimpleNamespace()  # what d2l's code reaches as d2l.X
    scope = {"torch": torch, "nn": nn, "F": F, "math": math, "d2l": namespace}
    for name in D2L_NAMES:
        exec(compile(ast.Module([definitions[name]], type_ignores=[]), f"d2l/torch.py:{name}", "exec"), scope)
        setattr(namespace, name, scope[name])
    return namespace.MultiHeadAttention


def comparison(figure: Figure, d2l_class: type[nn.Module] | None) -> tuple[Callable[[], object],
                                                                          Callable[[], object]]:
    """The two calls a figure times, ours and theirs, on the same input and weights; their outputs are checked."""
    mha_lib.set_seed(0)
    d = figure.num_hiddens
    ours = mha_lib.MultiHeadAttention(d, d, d, d, figure.num_heads).eval()
    x = torch.randn(figure.batch_size, figure.seq_len, d)
    valid_lens = (torch.tensor([figure.seq_len - 3 - i % 4 for i in range(figure.batch_size)]) if figure.padded
                  else None)
    if figure.theirs == "d2l":
        theirs = d2l_class(d, d, d, d, figure.num_heads, 0.0).eval()
        theirs.load_state_dict(ours.state_dict(), strict=True)  # the same names: W_q, W_k, W_v, W_o

        def their_call() -> object:
            return theirs(x, x, x, valid_lens)
    else:
        torch_mha = mha_lib.to_torch_mha(ours).eval()
        padding = None if valid_lens is None else ~mha_lib.valid_lens_mask(valid_lens, figure.seq_len)  # True: hide

        def their_call() -> object:
            return torch_mha(x, x, x, key_padding_mask=padding, need_weights=False)[0]

    def our_call() -> object:
        return ours(x, x, x, valid_lens, need_weights=figure.need_weights)

    with torch.inference_mode():
        torch.testing.assert_close(our_call(), their_call(), rtol=1e-4, atol=1e-5)
    return our_call, their_call


def measure(figure: Figure, d2l_class: type[nn.Module] | None) -> dict[str, object]:
    """Time one figure; the median ratio with its quartiles, each side's median time, and whether it is met."""
    threads = 1 if figure.one_thread else torch.get_num_threads()
    our_call, their_call = comparison(figure, d2l_class)
    ours_s, theirs_s = paired_times(our_call, their_call, repeats=figure.pairs, number=figure.number,
                                    num_threads=threads)
    ratios = [a / b for a, b in zip(ours_s, theirs_s, strict=True)]
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return {**asdict(figure), "threads": threads, "ratio_median": round(median, 4), "ratio_q1": round(q1, 4),
            "ratio_q3": round(q3, 4), "ours_median_s": statistics.median(ours_s),
            "theirs_median_s": statistics.median(theirs_s), "meets": median <= figure.target}


def git_commit() -> str | None:
    """The commit the library was timed at, with "+changes" if the work tree differs; None outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+changes" if dirty else "")


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--record", action="store_true",
                       help="store the recording in mha_chapters/bench/results/speed (refused if the machine was busy)")
    where.add_argument("--out", type=Path, default=None, help="write the recording into this folder instead")
    parser.add_argument("--wheels", type=Path, default=WHEELS,
                        help=f"the folder of the d2l=={D2L_VERSION} wheel (default: {WHEELS.relative_to(ROOT)})")
    parser.add_argument("--no-download", action="store_true", help="never run pip; the wheel must be in --wheels")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few pairs (the unit test's)")
    args = parser.parse_args(argv)
    figures = QUICK if args.quick else FIGURES
    if args.record and args.quick:
        parser.error("--record stores the real figures; --quick is for a look at the machinery (use --out)")
    d2l_class = d2l_attention_class(d2l_wheel(args.wheels, download=not args.no_download))

    print(f"torch {torch.__version__}, mha_lib / theirs, float32, inference, {device_name('cpu')}")
    machine = watch_machine(wait=args.record)  # a recording first waits up to two minutes for quiet
    results = {}
    for name, figure in figures.items():
        results[name] = result = measure(figure, d2l_class)
        print(f"  {name:<6} batch {figure.batch_size}, seq {figure.seq_len}, hiddens {figure.num_hiddens}, heads "
              f"{figure.num_heads}, {result['threads']} thread(s), against {figure.theirs}: "
              f"ratio {result['ratio_median']:.3f}x (quartiles {result['ratio_q1']:.3f}-{result['ratio_q3']:.3f}), "
              f"ours {result['ours_median_s'] * 1e6:.1f} us, theirs {result['theirs_median_s'] * 1e6:.1f} us "
              f"(target <= {figure.target:.2f}x: {'ok' if result['meets'] else 'MISSED'})")
    provenance = machine.stop()
    machine.report()
    problems = quiet_problems(provenance.others_before, provenance.others_during, provenance.load_average)
    recording = {
        "schema": SCHEMA, "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(), "torch": torch.__version__, "python": platform.python_version(),
        "platform": platform.platform(), "device": "cpu", "device_name": device_name("cpu"),
        "threads_all": torch.get_num_threads(), "d2l": D2L_VERSION,
        "command": " ".join(["python", "benchmarks/bench_speed_figures.py",
                             *map(shlex.quote, sys.argv[1:] if argv is None else argv)]),
        "load_average_before": provenance.load_average, "others_before_cores": provenance.others_before,
        "others_during_cores": provenance.others_during, "quiet": not problems, "quiet_problems": problems,
        "figures": results,
    }
    if args.record or args.out is not None:
        folder = RECORDINGS if args.record else args.out
        stamp = recording["date"].replace(":", "").replace("+0000", "Z")
        path = folder / f"cpu-{stamp}.json"
        if args.record:
            require_quiet(provenance.others_before, provenance.others_during, path.name, provenance.load_average)
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(recording, indent=1) + "\n")
        print(f"wrote {path}")
    return recording


if __name__ == "__main__":
    main()
