"""make record-cpu (issue 51 item 5): every CPU recording the chapters load, one after another, each stored with how
busy the other processes were; tried here into a temporary folder at tiny sizes, never into the package's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mha_chapters.bench import records
from tools import record_cpu

ROOT = Path(__file__).resolve().parents[1]


def test_it_records_each_kind_with_its_provenance_into_another_folder(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tools.record_cpu", "--out", str(tmp_path), "--quick", "--no-browser"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    batching = records.newest_recording("batching", directory=tmp_path)
    flex = records.newest_recording("flex", directory=tmp_path)
    result = records.load_result(batching)
    assert result.runs[0].threads == 1 and "--threads 1" in result.command
    assert result.others_during_cores is not None and result.others_before_cores is not None
    table = json.loads(flex.read_text())
    assert table["rows"] and table["others_during_cores"] is not None and table["others_before_cores"] is not None
    assert "every recording made in" in done.stdout
    assert "replaced by" not in done.stdout  # nothing elsewhere is replaced


def test_the_steps_cover_chapters_05_07_10_and_11_in_order(tmp_path):
    found = record_cpu.steps(tmp_path, quick=False, browser=True)
    assert [kind for kind, *_ in found] == ["batching", "flex", "explorer"]
    (_, _, batching, _), (_, _, flex, _), (_, _, browser, environment) = found
    assert batching[1:] == ["benchmarks/bench_batching.py", "--threads", "1", "--out", str(tmp_path)]
    assert flex[1:] == ["benchmarks/bench_flex.py", "--record", "--threads", "1", "--pairs", "9", "--compile-fresh",
                        "--out", str(tmp_path / "flex")]
    assert "tests/browser/test_explorer_latency.py" in browser
    assert environment == {"MHA_RECORD_LATENCY": "1", "MHA_RECORD_LATENCY_DIR": str(tmp_path / "explorer")}
    package = record_cpu.steps(None, quick=False, browser=True)
    assert not any("--out" in command for _, _, command, _ in package)
    assert package[2][3] == {"MHA_RECORD_LATENCY": "1"}  # the browser test writes into the package's folder


def test_tiny_sizes_are_refused_for_the_chapters_folder(capsys):
    with pytest.raises(SystemExit):
        record_cpu.main(["--quick"])
    assert "--quick records tiny sizes: give --out DIR" in capsys.readouterr().err


def test_a_new_recording_replaces_the_older_ones_of_its_kind_only(tmp_path, monkeypatch):
    monkeypatch.setattr(record_cpu, "RESULTS", tmp_path)
    (tmp_path / "flex").mkdir()
    for name in ("cpu-2026-11-21.json", "cpu-2026-12-05.json", "cuda-2026-11-30.json", "flex/cpu-2026-11-26.json"):
        (tmp_path / name).write_text("{}")
    gone = record_cpu.replace_older("batching", tmp_path / "cpu-2026-12-05.json")
    assert [path.name for path in gone] == ["cpu-2026-11-21.json"]
    assert sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*.json")) == [
        "cpu-2026-12-05.json", "cuda-2026-11-30.json", "flex/cpu-2026-11-26.json"]


def test_newest_recording_goes_by_the_date_and_names_a_wrong_kind(tmp_path):
    for name in ("cpu-2026-11-21.json", "cpu-2026-12-05.json", "cpu-notes.json", "cuda-2027-01-01.json"):
        (tmp_path / name).write_text("{}")
    assert records.newest_recording("batching", directory=tmp_path).name == "cpu-2026-12-05.json"
    assert records.newest_recording("batching", "cuda", directory=tmp_path).name == "cuda-2027-01-01.json"
    with pytest.raises(ValueError, match="kind must be one of .*got 'browser'"):
        records.newest_recording("browser")
    with pytest.raises(FileNotFoundError, match="no explorer recording browser-<date>.json in"):
        records.newest_recording("explorer", directory=tmp_path)


def test_make_record_cpu_runs_the_tool():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nrecord-cpu:", 1)[1].split("\n\n", 1)[0]
    assert "-m tools.record_cpu" in recipe and "--out" in recipe
