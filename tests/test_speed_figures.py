"""The speed figures of issue 50: every recording in mha_chapters/bench/results/speed/ meets them on a quiet machine.

The recordings are made by ``benchmarks/bench_speed_figures.py --record`` on an otherwise idle machine; the
unit test below runs the same script at tiny sizes (its machinery, not its numbers).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from mha_chapters.bench.quiet import QUIET_BEFORE, QUIET_DURING, QUIET_LOAD

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_speed_figures as bench  # noqa: E402

RECORDINGS = sorted(bench.RECORDINGS.glob("*.json"))
MIN_RECORDINGS = 3  # the issue's "at least three recorded runs"


@pytest.mark.xfail(len(RECORDINGS) < MIN_RECORDINGS, strict=True,
                   reason="expected to fail until the lead records three runs on a quiet machine "
                          "(bench_speed_figures.py --record); from the third on it runs as a plain test")
def test_at_least_three_recordings_exist():
    assert len(RECORDINGS) >= MIN_RECORDINGS, [path.name for path in RECORDINGS]


def check_recording(recording: dict) -> None:
    """Assert that one recording was made on a quiet machine and meets every figure at its own size."""
    assert recording["schema"] == bench.SCHEMA
    assert recording["others_before_cores"] is not None and recording["others_before_cores"] <= QUIET_BEFORE
    assert recording["others_during_cores"] is not None and recording["others_during_cores"] <= QUIET_DURING
    assert recording["load_average_before"] is not None and recording["load_average_before"] <= QUIET_LOAD
    assert recording["quiet"] and not recording["quiet_problems"]
    assert set(recording["figures"]) == set(bench.FIGURES)
    for name, figure in bench.FIGURES.items():
        measured = recording["figures"][name]
        # recorded at the figure's own size, path and thread count, against the target the issue sets
        assert (measured["batch_size"], measured["seq_len"], measured["num_hiddens"], measured["num_heads"]) == (
            figure.batch_size, figure.seq_len, figure.num_hiddens, figure.num_heads), name
        assert measured["need_weights"] == figure.need_weights and measured["theirs"] == figure.theirs, name
        assert measured["threads"] == (1 if figure.one_thread else recording["threads_all"]), name
        assert measured["ratio_q1"] <= measured["ratio_median"] <= measured["ratio_q3"], name
        assert measured["ratio_median"] <= figure.target, (name, measured["ratio_median"], figure.target)


@pytest.mark.parametrize("path", RECORDINGS, ids=[path.name for path in RECORDINGS])
def test_each_recording_was_quiet_and_meets_every_figure(path):
    check_recording(json.loads(path.read_text()))


def made_up_recording(**changes) -> dict:
    """A recording as the script writes one, each figure exactly at its target (not a measurement: the check's
    own test input)."""
    figures = {name: {**dataclasses.asdict(figure), "threads": 1 if figure.one_thread else 4,
                      "ratio_q1": figure.target - 0.1, "ratio_median": figure.target, "ratio_q3": figure.target + 0.1}
               for name, figure in bench.FIGURES.items()}
    recording = {"schema": bench.SCHEMA, "load_average_before": 0.3, "others_before_cores": 0.02,
                 "others_during_cores": 0.01, "quiet": True, "quiet_problems": [], "threads_all": 4, "figures": figures}
    for key, value in changes.items():
        if key in bench.FIGURES:
            figures[key].update(value)
        else:
            recording[key] = value
    return recording


@pytest.mark.parametrize("changes", [
    {"others_during_cores": 0.3}, {"others_before_cores": 0.8}, {"load_average_before": 0.9},
    {"others_during_cores": None},
    {"d2l": {"ratio_median": 1.11, "ratio_q3": 1.2}}, {"fused": {"ratio_median": 1.06, "ratio_q3": 1.2}},
    {"large": {"ratio_median": 0.96, "ratio_q3": 1.1}}, {"large": {"threads": 1}}, {"d2l": {"num_heads": 4}},
    {"fused": {"need_weights": True}}], ids=repr)
def test_the_recording_check_refuses_a_busy_or_slow_run(changes):
    check_recording(made_up_recording())  # at the targets exactly: accepted
    with pytest.raises(AssertionError):
        check_recording(made_up_recording(**changes))


def test_the_figures_are_the_issues():
    assert {name: (f.batch_size, f.seq_len, f.num_hiddens, f.num_heads, f.one_thread, f.need_weights, f.theirs,
                   f.target) for name, f in bench.FIGURES.items()} == {
        "d2l": (2, 10, 100, 5, True, True, "d2l", 1.10),
        "fused": (2, 10, 100, 5, True, False, "torch", 1.05),
        "large": (32, 128, 512, 8, False, False, "torch", 0.95)}


def test_no_wheel_offline_says_what_to_do(tmp_path):
    with pytest.raises(SystemExit, match=r"no d2l-0\.17\.6 wheel in .*pip download --no-deps.*offline, copy"):
        bench.main(["--quick", "--wheels", str(tmp_path), "--no-download", "--out", str(tmp_path)])


@pytest.fixture(scope="module")
def wheels() -> Path:
    """The cached d2l 0.17.6 wheel's folder (build/d2l-wheels), downloaded once; skip where no index is reached."""
    try:
        bench.d2l_wheel(bench.WHEELS, download=True)
    except SystemExit as error:
        pytest.skip(str(error))
    return bench.WHEELS


def test_quick_run_writes_a_recording_with_its_provenance(wheels, tmp_path):
    recording = bench.main(["--quick", "--wheels", str(wheels), "--no-download", "--out", str(tmp_path)])
    (path,) = tmp_path.glob("cpu-*.json")
    assert json.loads(path.read_text()) == recording
    for key in ("torch", "date", "commit", "device", "device_name", "threads_all", "load_average_before",
                "others_before_cores",
                "others_during_cores", "quiet", "quiet_problems"):
        assert key in recording, key
    assert recording["quiet"] == (not recording["quiet_problems"])
    assert set(recording["figures"]) == set(bench.FIGURES)
    for figure in recording["figures"].values():
        assert figure["ours_median_s"] > 0 and figure["theirs_median_s"] > 0
        assert figure["ratio_q1"] <= figure["ratio_median"] <= figure["ratio_q3"]
        assert figure["meets"] == (figure["ratio_median"] <= figure["target"])


def test_d2l_layer_from_the_wheel_is_d2l_017s_and_matches_ours(wheels):
    d2l_class = bench.d2l_attention_class(bench.d2l_wheel(wheels, download=False))
    assert d2l_class.__module__ != "mha_lib.modules" and "d2l/torch.py" in d2l_class.forward.__code__.co_filename
    figure = bench.QUICK["d2l"]
    ours, theirs = bench.comparison(figure, d2l_class)  # checks the outputs equal itself; here a second look
    assert ours().shape == theirs().shape == (figure.batch_size, figure.seq_len, figure.num_hiddens)


def test_comparison_refuses_outputs_that_differ(wheels, monkeypatch):
    d2l_class = bench.d2l_attention_class(bench.d2l_wheel(wheels, download=False))

    class Off(d2l_class):
        def forward(self, *args):
            return super().forward(*args) + 1e-2

    with pytest.raises(AssertionError, match="not close"):
        bench.comparison(bench.QUICK["d2l"], Off)


def test_record_refuses_a_busy_machine(wheels, monkeypatch, tmp_path):
    from mha_chapters.bench import quiet

    monkeypatch.setattr(bench, "RECORDINGS", tmp_path / "speed")
    monkeypatch.setattr(bench, "FIGURES", bench.QUICK)
    monkeypatch.setattr(quiet, "WAIT_S", 0.0)
    monkeypatch.setattr(quiet, "busy_cores", lambda start, end: 1.5)  # as if another job kept 1.5 cores busy
    with pytest.raises(quiet.BusyMachineError, match="is not stored"):
        bench.main(["--record", "--wheels", str(wheels), "--no-download"])
    assert not (tmp_path / "speed").exists()
