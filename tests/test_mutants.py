"""The list of hand-made mutants (tools/mutants.py) stays in step with the core it mutates.

A mutant whose text no longer occurs in its file cannot be applied, and a mutant that does not compile is killed
by the import error, not by a test; either would make the kill count lie. This file is not among the mutants'
CORE_TESTS: it would fail for every mutant applied.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("mutants_tool", ROOT / "tools" / "mutants.py")
mutants = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutants)


@pytest.mark.parametrize("number", range(len(mutants.MUTANTS)))
def test_mutant_applies_once_and_compiles(number):
    name, original, mutant, _, extra = mutants.MUTANTS[number]
    path = ROOT / "mha_lib" / name
    source = path.read_text()
    assert source.count(original) == 1, f"mutant {number}: its text occurs {source.count(original)} times in {name}"
    assert mutant != original
    compile(source.replace(original, mutant), str(path), "exec")  # a SyntaxError would kill it without a test
    for test_file in extra:
        assert (ROOT / test_file).is_file(), f"mutant {number}: no {test_file}"


def test_mutants_are_distinct_and_not_run_against_this_file():
    applied = [(name, original, mutant) for name, original, mutant, _, _ in mutants.MUTANTS]
    assert len(set(applied)) == len(applied)
    assert "tests/test_mutants.py" not in mutants.CORE_TESTS
    assert all((ROOT / test_file).is_file() for test_file in mutants.CORE_TESTS)
