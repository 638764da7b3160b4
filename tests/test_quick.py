"""`make test-quick` is the unit tests without those marked `slow` (pyproject.toml): it executes no notebook, starts
no kernel and builds no wheel, and still holds the library to PyTorch.

Which tests execute or build is read from their source: a test function, or a module-level helper or fixture it
names, that calls nbclient or nbconvert's executor, starts a kernel, runs nbval, nbgrader's autograde, `pip wheel`,
`pip download` or `python -m build`, or makes the wheel's venv (tests/wheel_env.py). Every such test must be marked
slow, by its decorator or by its module's `pytestmark`."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted((ROOT / "tests").glob("test_*.py"))  # tests/'s subfolders are collect_ignore'd (conftest.py)
EXECUTES = re.compile(r"NotebookClient|ExecutePreprocessor|\bexecute_notebook\b|start_new_kernel|KernelManager|"
                      r"--nbval|--execute|make_wheel_venv|nbgrader\([^)]*[\"']autograde[\"']|"
                      r"[\"']pip[\"'],\s*[\"'](?:wheel|download)|[\"']-m[\"'],\s*[\"']build[\"']")


def marked_slow(node: ast.AST) -> bool:
    return "mark.slow" in ast.unparse(node)


def executing_tests(path: Path) -> dict[str, bool]:
    """Each test function of a module that executes or builds (see the docstring) -> whether it is marked slow."""
    module = ast.parse(path.read_text(encoding="utf-8"))
    whole_module_slow = any(isinstance(node, ast.Assign) and "pytestmark" in ast.unparse(node.targets[0])
                            and marked_slow(node.value) for node in module.body)
    functions = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    named = {name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(node)
                                                                               if isinstance(a, ast.arg)}
             for name, node in functions.items()}
    executing = {name for name, node in functions.items() if EXECUTES.search(ast.unparse(node))}
    while grown := {name for name in functions if name not in executing and named[name] & executing}:
        executing |= grown  # a test that calls a helper, or takes a fixture, that executes
    return {name: whole_module_slow or any(marked_slow(d) for d in functions[name].decorator_list)
            for name in sorted(executing) if name.startswith("test_")}


def test_the_source_check_finds_the_tests_that_execute_notebooks_or_build_a_wheel():
    found = {(path.name, name) for path in MODULES for name in executing_tests(path)}
    assert {("test_wheel_install.py", "test_chapter_07_runs_top_to_bottom_from_the_wheel"),
            ("test_plotting.py", "test_show_heatmaps_draws_once_where_it_is_called_in_a_notebook"),
            ("test_wakeful_kernel.py", "test_a_notebook_runs_with_the_wakeful_kernel_manager"),
            ("test_cjk_font.py", "test_a_real_kernel_tells_jupyterlab_but_not_nbclient"),
            ("test_nbgrader.py", "test_round_trip")} <= found
    assert ("test_core.py", "test_dot_product_attention_matches_sdpa") not in found


def test_every_test_that_executes_notebooks_or_builds_a_wheel_is_marked_slow():
    unmarked = [f"{path.name}::{name}" for path in MODULES for name, slow in executing_tests(path).items()
                if not slow]
    assert unmarked == [], "mark these @pytest.mark.slow: make test-quick must execute no notebook and build no wheel"


def test_make_test_quick_and_the_command_without_make_are_the_same():
    makefile = (ROOT / "Makefile").read_text()
    assert '$(BIN)/python -m pytest -n auto -m "not slow" tests' in makefile
    assert "test-quick" in re.search(r"^READER_TARGETS := (.*)$", makefile, re.MULTILINE)[1].split()
    for page in ("platforms.md", "platforms.zh-CN.md"):
        assert r'.venv\Scripts\python -m pytest -n auto -m "not slow" tests' in (ROOT / "docs" / page).read_text(), page


def test_make_test_notebooks_and_the_commands_without_make_are_the_same():
    """docs/platforms*.md give `make test-notebooks` for Windows: its pytest calls and PORTABLE's settings."""
    makefile = (ROOT / "Makefile").read_text()
    nbval = re.search(r"^NBVAL := (.*)$", makefile, re.MULTILINE)[1]
    portable = re.search(r"^PORTABLE := (.*)$", makefile, re.MULTILINE)[1]
    recipe = re.search(r"^test-notebooks:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)[1]
    runs = [line.split("$(BIN)/python ")[1].replace("$(NBVAL)", nbval) for line in recipe.splitlines()]
    assert len(runs) == 3 and "$(PORTABLE)" in recipe
    for page in ("platforms.md", "platforms.zh-CN.md"):
        text = (ROOT / "docs" / page).read_text()
        for run in runs:
            assert rf".venv\Scripts\python {run}" in text, (page, run)
        for setting in portable.split():
            name, value = setting.split("=")
            assert f'$env:{name}="{value}"' in text, (page, setting)


@pytest.fixture(scope="module")
def quick_selection() -> tuple[set[str], int]:
    """The node ids that make test-quick runs, collected by pytest in a subprocess, and the number it deselected."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
               "-m", "not slow", "tests"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    ids = {line for line in result.stdout.splitlines() if "::" in line}
    deselected = int(re.search(r"\((\d+) deselected\)", result.stdout)[1])
    return ids, deselected


@pytest.mark.slow  # collects the whole suite once more, in a subprocess
def test_the_quick_selection_leaves_out_what_is_slow_and_keeps_the_library_against_pytorch(quick_selection):
    ids, deselected = quick_selection
    modules = {node.split("::")[0] for node in ids}
    assert {"tests/test_core.py", "tests/test_parity.py", "tests/test_checks.py", "tests/test_editions.py",
            "tests/test_translations.py", "tests/test_grouped.py", "tests/test_exercises_ch04.py"} <= modules
    assert "tests/test_wheel_install.py" not in modules and "tests/test_d2l.py" not in modules
    assert not any("test_round_trip" in node or "test_the_answers_of_a_chapter_run" in node for node in ids)
    functions = {(node.split("::")[0], node.split("::")[1].split("[")[0]) for node in ids}
    executing = {(f"tests/{path.name}", name) for path in MODULES for name in executing_tests(path)}
    assert executing and not executing & functions, sorted(executing & functions)
    assert 0 < deselected < 0.05 * (len(ids) + deselected)  # the slow tests are few; the quick run is most of the suite


@pytest.mark.slow  # collects the whole suite once more, in a subprocess
def test_the_core_parity_tests_are_all_in_the_quick_selection(quick_selection):
    ids, _ = quick_selection
    every = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                            "tests/test_core.py", "tests/test_parity.py"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300).stdout
    parity = {line for line in every.splitlines() if "::" in line}
    assert len(parity) > 100 and parity <= ids, sorted(parity - ids)[:5]

