"""No stored output of any edition carries a fact of the machine that ran it (tools/machine_facts.py).

The check reads this machine's CPU model, cache sizes and core count, so it fails on the machine that made the
mistake: a notebook executed here and committed with, say, ``设备：cpu（Intel(R) Xeon(R) Processor）`` in a checked
cell, which another CPU then fails under nbval.
"""

import json
import re
from pathlib import Path

import nbformat
import pytest

from mha_chapters.bench.records import (
    load_result,
    newest_recording,
    provenance,
    results_directory,
    short_machine_name,
)
from tools import machine_facts

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(path for edition in machine_facts.EDITIONS for path in (ROOT / edition).glob("*.ipynb"))
# A machine as a fixture: what Linux reports on one of the machines the chapters were executed on
XEON = {"model": "Intel(R) Xeon(R) Processor", "caches": {"L1d": "48K", "L2": "2048K", "L3": "491520K"}, "cores": 2}


def notebook(*cells: tuple[str, str]) -> nbformat.NotebookNode:
    """A notebook of code cells, each (source, printed text)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source, outputs=[nbformat.v4.new_output("stream", name="stdout", text=text)])
                for source, text in cells]
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
def test_stored_outputs_carry_no_fact_of_this_machine(path):
    found = machine_facts.find(nbformat.read(path, as_version=4))
    assert not found, (f"{path.relative_to(ROOT)} stores facts of this machine (cell, text): {found}; "
                       "a live-timing cell: run `python -m tools.machine_facts scrub` on it (make outputs does); "
                       "a checked cell: print something every machine prints alike")


def test_this_machines_facts_are_read():
    patterns = machine_facts.fact_patterns()
    if machine_facts.cpu_model() is None:
        pytest.skip("no /proc/cpuinfo model name on this machine")
    assert any(machine_facts.cpu_model() in pattern.pattern.replace("\\", "") for pattern, _ in patterns)


def test_find_sees_each_kind_of_fact_in_any_language():
    patterns = machine_facts.fact_patterns(**XEON)
    nb = notebook(("print(device)", "设备：cpu（Intel(R) Xeon(R) Processor）\n"),
                  ("print(summary)", "Intel(R) Xeon(R) Processor, L1d 48K, L2 2048K, L3 491520K, 2 threads\n"),
                  ("print(facts)", "logical_cores  2\ntorch_threads  2\n2 个线程相对 1 个线程\n"),
                  ("print(facts)", "逻辑核心数  2\nPyTorch 线程数  2\n"))  # the same rows, printed as tr(name)
    found = [text for _, text in machine_facts.find(nb, patterns)]
    assert found.count("Intel(R) Xeon(R) Processor") == 2
    assert {"L1d 48K", "L2 2048K", "L3 491520K", "2 threads", "2 个线程", "logical_cores  2",
            "torch_threads  2", "逻辑核心数  2", "PyTorch 线程数  2"} <= set(found)


def test_the_core_rows_are_the_names_chapter_07_prints():
    from mha_chapters.batching import CPU_FACT_NAMES, cpu_facts

    assert list(cpu_facts()) == list(CPU_FACT_NAMES)  # every row is in the catalogue, as tr(name) needs
    assert set(machine_facts.CORE_ROWS) <= set(CPU_FACT_NAMES)


def test_find_leaves_settings_and_other_numbers_alone():
    patterns = machine_facts.fact_patterns(**XEON)
    nb = notebook(("print(x)", "1 thread | 12 threads | 0.2 threads | 32 heads | L2 4096K | AMD EPYC\n"))
    assert machine_facts.find(nb, patterns) == []


def test_scrub_replaces_facts_in_live_timing_cells_only():
    patterns = machine_facts.fact_patterns(**XEON)
    summary = "live: cpu (Intel(R) Xeon(R) Processor, L1d 48K, L2 2048K, L3 491520K, 2 threads)\n"
    nb = notebook(("# NBVAL_IGNORE_OUTPUT\nprint(summary)", summary), ("print(summary)", summary))
    assert machine_facts.scrub(nb, patterns) == 5
    assert nb.cells[0].outputs[0].text == "live: cpu (‹CPU model›, L1d ‹size›, L2 ‹size›, L3 ‹size›, ‹N› threads)\n"
    assert nb.cells[1].outputs[0].text == summary  # a checked cell is left for `check` to report
    assert len(machine_facts.find(nb, patterns)) == 5


# ---------------------------------------------------------------- a recording's provenance is not the reader's machine

# The newest recording of chapter 07's sweeps (found by the rule, not by its file name) and its label
NEWEST = load_result(newest_recording("batching"))
NEWEST_RUN = next(run for run in NEWEST.runs if run.device == "cpu")
RECORDED_LABEL = provenance(NEWEST, NEWEST_RUN)  # e.g. "recorded on AMD EPYC (cpu, 1 thread), torch ..., <date>"
RECORDED_MODEL = short_machine_name(NEWEST_RUN.name)
RECORDED_CPU = {"model": RECORDED_MODEL, "caches": {}, "cores": 2}  # /proc/cpuinfo's model name, short


def recorded_machines() -> dict[str, dict]:
    """Every machine a shipped recording names, as fact_patterns takes it, by a name for the test's id.

    Each model twice: as recorded, and by its short name, since /proc/cpuinfo may give either (the AMD EPYC that
    recorded cpu-2026-11-21.json reported "AMD EPYC"). Caches and cores are the recording's, where it has them (a
    ``machine_summary`` line, ``cpus``): two recordings of one model with other caches are two machines.
    """
    machines = {}
    for path in sorted(results_directory().rglob("*.json")):
        data = json.loads(path.read_text())
        names = [run["name"] for run in data.get("runs", []) if run["device"] == "cpu"]
        names += [data[key] for key in ("machine", "device_name") if key in data]
        for name in names:
            model, *rest = name.split(", ")
            caches = dict(part.split(" ", 1) for part in rest if re.fullmatch(r"L\d[a-z]? \w+", part))
            for each in (model, short_machine_name(model)):
                label = ", ".join([each, *(f"{level} {size}" for level, size in caches.items())])
                machines[label] = {"model": each, "caches": caches, "cores": data.get("cpus")}
    return machines


RECORDED_MACHINES = recorded_machines()


def test_every_recording_names_its_cpu_as_recorded_and_by_its_short_name():
    models = {machine["model"] for machine in RECORDED_MACHINES.values()}
    assert {RECORDED_MODEL, NEWEST_RUN.name.split(", ")[0]} <= models


@pytest.mark.parametrize("machine", RECORDED_MACHINES.values(), ids=RECORDED_MACHINES.keys())
def test_no_edition_stores_a_fact_of_any_recorded_machine_beyond_its_recordings_labels(machine):
    # As if this machine were the one that recorded: the check must pass there too (it failed on every AMD EPYC
    # before the recordings' labels were told apart from the reader's machine)
    patterns = machine_facts.fact_patterns(**machine)
    found = {path.relative_to(ROOT).as_posix(): machine_facts.find(nbformat.read(path, as_version=4), patterns)
             for path in NOTEBOOKS}
    assert not {path: facts for path, facts in found.items() if facts}


def test_without_the_labels_the_recording_machines_check_finds_chapter_07s_provenance():
    # The test above is not empty: the same search that passes over the labels finds them when told of none
    patterns = machine_facts.fact_patterns(**{**RECORDED_CPU, "cores": 1})  # the model alone
    found = machine_facts.find(nbformat.read(ROOT / "notebooks" / "10_tiled_attention.ipynb", as_version=4),
                               patterns, labels=[])
    assert found and all(text == RECORDED_MODEL for _, text in found)


def test_a_label_passes_only_with_the_fields_of_a_recording_and_anything_else_is_a_fact():
    patterns = machine_facts.fact_patterns(**RECORDED_CPU)
    [chinese] = [label for label in machine_facts.recorded_labels() if label.startswith("记录于")
                 and NEWEST.date in label and RECORDED_MODEL in label and NEWEST.torch in label]
    name = newest_recording("batching").name
    nb = notebook(("print(label)", f"{name}: {RECORDED_LABEL}\n"), ("print(label)", chinese + "\n"),
                  ("print(svg)", f"<!-- {RECORDED_LABEL} --><!-- live: cpu ({RECORDED_MODEL}, 1 thread) -->\n"),
                  ("print(forged)", RECORDED_LABEL.replace(NEWEST.date, "1999-01-01") + "\n"),
                  ("print(forged)", RECORDED_LABEL.replace(NEWEST.torch, "0.0.1") + "\n"))
    assert RECORDED_LABEL in machine_facts.recorded_labels()
    assert [index for index, _ in machine_facts.find(nb, patterns)] == [2, 3, 4]


def test_scrub_keeps_a_recordings_label_and_replaces_the_live_machine_beside_it():
    patterns = machine_facts.fact_patterns(**RECORDED_CPU)
    text = f"live: cpu ({RECORDED_MODEL}, 1 thread) against {RECORDED_LABEL}\n"
    nb = notebook(("# NBVAL_IGNORE_OUTPUT\nprint(both)", text))
    assert machine_facts.scrub(nb, patterns) == 1
    assert nb.cells[0].outputs[0].text == f"live: cpu (‹CPU model›, 1 thread) against {RECORDED_LABEL}\n"


def test_recorded_labels_come_from_each_kind_of_recording(tmp_path):
    flex = {"machine": "Intel(R) Xeon(R) Processor, L1d 48K, 1 thread", "device": "cpu", "threads": 1,
            "torch": "2.13.0+cpu", "date": "2026-11-26"}
    (tmp_path / "flex").mkdir()
    (tmp_path / "flex" / "cpu-2026-11-26.json").write_text(json.dumps(flex))
    (tmp_path / "explorer.json").write_text(json.dumps({"machine": "AMD EPYC 7B13", "date": "2026-11-25"}))
    labels = machine_facts.recorded_labels(tmp_path)
    assert "recorded on Intel Xeon (cpu, 1 thread), torch 2.13.0+cpu, 2026-11-26" in labels
    assert not [label for label in labels if "AMD" in label]  # a file with no label's fields gives no label
    assert len(labels) == 1 + len(list((ROOT / "mha_lib" / "locale").iterdir()))  # English and each language


def test_a_table_row_is_a_fact_in_its_html_as_in_its_plain_text():
    # format_table displays both: the HTML once showed "logical_cores 2" where the plain text had been scrubbed
    patterns = machine_facts.fact_patterns(**XEON)
    html = ('<table><tr><td style="text-align: left">logical_cores</td><td style="text-align: left">2</td></tr>'
            '<tr><td>逻辑核心数</td><td>2</td></tr><tr><td>float32_lanes</td><td>2</td></tr></table>')
    nb = notebook(("# NBVAL_IGNORE_OUTPUT\ndisplay(table)", "logical_cores  2\n"))
    nb.cells[0].outputs.append(nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": "t"}))
    assert len(machine_facts.find(nb, patterns, labels=[])) == 3  # float32_lanes 2 is not the core count
    machine_facts.scrub(nb, patterns, labels=[])
    assert nb.cells[0].outputs[1].data["text/html"].count("‹N›") == 2 and not machine_facts.find(nb, patterns, [])


def test_a_timings_provenance_metadata_hides_the_core_count_its_text_hides():
    from mha_chapters.bench.quiet import PROVENANCE_KEY

    def report(threads):
        nb = notebook(("# NBVAL_IGNORE_OUTPUT\nmachine.report()", "x\n"))
        nb.cells[0].outputs = [nbformat.v4.new_output(
            "display_data", data={"text/plain": f"the machine while timing: ...; {threads} threads"},
            metadata={PROVENANCE_KEY: {"threads": threads, "load_average": 0.3}})]
        return nb

    patterns = machine_facts.fact_patterns(**XEON)
    nb = report(XEON["cores"])
    assert [fact for _, fact in machine_facts.find(nb, patterns, labels=[], cores=XEON["cores"])
            if "metadata" in fact]
    assert machine_facts.scrub(nb, patterns, labels=[], cores=XEON["cores"]) == 2  # the text and the metadata
    assert nb.cells[0].outputs[0].metadata[PROVENANCE_KEY]["threads"] == "‹N›"
    assert not machine_facts.find(nb, patterns, labels=[], cores=XEON["cores"])
    one = report(1)  # one thread is a setting, not a fact: kept
    assert machine_facts.scrub(one, patterns, labels=[], cores=XEON["cores"]) == 0
    assert one.cells[0].outputs[0].metadata[PROVENANCE_KEY]["threads"] == 1
