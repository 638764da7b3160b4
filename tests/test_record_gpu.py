"""make record-gpu (issue 51 item 4): it refuses clearly without CUDA, its drawing runs on a recorded CPU sweep, its
recording runs where matplotlib is missing, and the tracked tree stays small enough to travel to a device machine."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from mha_chapters.bench.records import newest_recording

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "record_gpu.py"
RECORDED_CPU = newest_recording("batching")  # the newest CPU recording, whatever its date
TREE_LIMIT = 56 * 2**20  # a device machine takes at most 64 MiB of tree; the rest is room for what a run carries


@pytest.fixture
def record_gpu():
    spec = importlib.util.spec_from_file_location("record_gpu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_cuda_it_says_why_and_records_nothing(record_gpu, monkeypatch, capsys):
    monkeypatch.setattr(record_gpu.torch.cuda, "is_available", lambda: False)
    assert record_gpu.main([]) == 2
    err = capsys.readouterr().err
    assert "finds no CUDA device here" in err and "make bench-batching" in err


def test_it_refuses_a_torch_older_than_it_runs_on(record_gpu, monkeypatch):
    monkeypatch.setattr(record_gpu.torch, "__version__", "2.10.1+cu128")
    assert "older than 2.11" in record_gpu.why_not_here()


def test_it_draws_chapter_07s_recorded_figures_from_a_cpu_recording(record_gpu, tmp_path):
    written = record_gpu.render(RECORDED_CPU, tmp_path)
    stem = RECORDED_CPU.stem
    assert [path.name for path in written] == [f"{stem}-devices.svg", f"{stem}-length-sweep.svg"]
    assert all(path.read_text().lstrip().startswith("<?xml") and "<svg" in path.read_text() for path in written)


def test_the_recording_runs_without_matplotlib(tmp_path):
    """On a GPU machine with only PyTorch: the sweeps import, and the drawing is left to another machine."""
    code = f"""
import sys
sys.modules.update(matplotlib=None, ipywidgets=None, IPython=None)
sys.argv = ["record_gpu.py"]
import importlib.util
spec = importlib.util.spec_from_file_location("record_gpu", {str(SCRIPT)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
import bench_batching
module.why_not_here = lambda: None  # as on a machine with CUDA
bench_batching.main = lambda argv: __import__("pathlib").Path({str(RECORDED_CPU)!r})  # the sweeps, already run
sys.exit(module.main([]))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr
    assert "matplotlib is not installed here" in result.stdout and "--render" in result.stdout


def test_the_tracked_tree_travels_to_a_device_machine():
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    size = sum((ROOT / name.decode()).stat().st_size for name in files if name and (ROOT / name.decode()).is_file())
    assert size < TREE_LIMIT, f"the tracked tree is {size / 2**20:.1f} MiB, over {TREE_LIMIT / 2**20:.0f} MiB"
