"""No stored output of any edition carries a fact of the machine that ran it (tools/machine_facts.py).

The check reads this machine's CPU model, cache sizes and core count, so it fails on the machine that made the
mistake: a notebook executed here and committed with, say, ``设备：cpu（Intel(R) Xeon(R) Processor）`` in a checked
cell, which another CPU then fails under nbval.
"""

from pathlib import Path

import nbformat
import pytest

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
    from mha_lib.chapters.batching import CPU_FACT_NAMES, cpu_facts

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
