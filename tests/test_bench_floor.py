"""benchmarks/bench_mha_floor.py: every stripped variant still computes the layer's output.

The script asserts each variant against torch.nn.MultiheadAttention before timing it, and patches the layer's
check out by its dotted name; two pairs of timings are enough to run every assertion and the patch.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # runs benchmarks/bench_mha_floor.py in a subprocess, timing every variant
def test_every_variant_matches_pytorch_and_is_timed():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_mha_floor.py"), "--pairs", "2"],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    timed = [line.split()[0] for line in lines if line.startswith("    ")]
    assert timed == ["layer", "layer,", "inline", "inline,", "inline,", "layer", "layer,", "inline", "inline,"]
    assert sum("(goal <= " in line for line in lines) == 2
