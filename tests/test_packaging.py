"""pyproject.toml is the single source of dependencies; environment.yml and constraints.txt follow it."""

import re
from pathlib import Path

import pytest
import tomllib
import torch
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
ENVIRONMENT = yaml.safe_load((ROOT / "environment.yml").read_text())
CONDA_TO_PYPI = {"pytorch-cpu": "torch", "pytorch": "torch"}  # conda-forge names that differ from PyPI's


def requirements(*extras: str) -> dict[str, Requirement]:
    """The project's requirements by canonical name, with the named extras resolved recursively."""
    found = {}
    optional = PYPROJECT["optional-dependencies"]
    pending = list(PYPROJECT["dependencies"]) + [r for extra in extras for r in optional[extra]]
    while pending:
        requirement = Requirement(pending.pop())
        if canonicalize_name(requirement.name) == canonicalize_name(PYPROJECT["name"]):
            pending += [r for extra in requirement.extras for r in optional[extra]]
        else:
            found[canonicalize_name(requirement.name)] = requirement
    return found


def conda_dependencies() -> dict[str, str]:
    """environment.yml's conda packages as {name: version spec}."""
    found = {}
    for entry in ENVIRONMENT["dependencies"]:
        if isinstance(entry, str):
            name, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", entry).groups()
            found[name] = spec
    return found


def pip_lines() -> list[str]:
    return next(entry["pip"] for entry in ENVIRONMENT["dependencies"] if isinstance(entry, dict))


def test_pyproject_declares_every_package_the_collection_needs():
    assert {"torch", "numpy", "matplotlib", "ipywidgets", "jupyterlab", "nbval", "pytest"} <= set(requirements("dev"))


def test_environment_installs_the_project_itself_with_the_dev_extra():
    assert pip_lines() == ["-e .[dev]"]
    assert set(requirements("dev")) == set(requirements("lab", "test"))


def test_every_conda_package_is_a_pyproject_dependency_with_the_same_range():
    for conda_name, spec in conda_dependencies().items():
        if conda_name in ("python", "pip"):
            continue
        name = canonicalize_name(CONDA_TO_PYPI.get(conda_name, conda_name))
        assert name in requirements(), f"environment.yml installs {conda_name}, which pyproject.toml does not list"
        assert SpecifierSet(spec) == requirements()[name].specifier, (
            f"environment.yml pins {conda_name}{spec} but pyproject.toml says {requirements()[name]}")


def test_environment_python_satisfies_requires_python():
    version = conda_dependencies()["python"].lstrip("=")
    assert Version(version) in SpecifierSet(PYPROJECT["requires-python"])


def test_constraints_pin_one_exact_torch_inside_the_supported_range():
    lines = [line.split("#")[0].strip() for line in (ROOT / "constraints.txt").read_text().splitlines()]
    pins = [Requirement(line) for line in lines if line]
    torch_pins = [pin for pin in pins if pin.name == "torch"]
    assert len(torch_pins) == 1
    (specifier,) = torch_pins[0].specifier
    assert specifier.operator == "==", "an open range would let pip download a CUDA build of torch"
    assert Version(specifier.version) in requirements()["torch"].specifier


def test_installed_torch_is_in_the_supported_range():
    installed = Version(torch.__version__.split("+")[0])
    assert installed in requirements()["torch"].specifier


@pytest.mark.parametrize("target", ["help", "setup", "lab", "test", "lint", "outputs", "clean", "test-browser"])
def test_makefile_has_the_documented_targets(target):
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), f"make {target} is missing"


# --- Binder (repo2docker) builds from environment.yml at the root ---------------------------------------------

CONDA_OPERATORS = {"==", "!=", ">=", "<=", ">", "<"}  # operators that conda and pip read the same way


def test_binder_reads_the_root_environment_yml():
    # repo2docker looks only inside binder/ or .binder/ when one exists, and would miss environment.yml.
    for folder in ("binder", ".binder"):
        assert not (ROOT / folder).exists() or (ROOT / folder / "environment.yml").exists(), (
            f"{folder}/ hides the root environment.yml from repo2docker")


def test_environment_takes_conda_packages_from_conda_forge_only():
    assert ENVIRONMENT["channels"] == ["conda-forge"]
    assert "pytorch-cpu" in conda_dependencies(), "the CPU build keeps the Binder image small"


def test_environment_installs_the_checkout_itself():
    # A local path in the pip section makes repo2docker copy the repository before it installs the environment.
    (line,) = pip_lines()
    assert re.fullmatch(r"-e \.(\[[a-z,]+\])?", line)


def test_environment_and_pyproject_list_the_same_packages_with_the_same_pins():
    installed = dict(requirements("dev"))  # what `pip install -e .[dev]` asks for
    for conda_name, spec in conda_dependencies().items():
        if conda_name in ("python", "pip"):
            continue
        name = canonicalize_name(CONDA_TO_PYPI.get(conda_name, conda_name))
        operators = {specifier.operator for specifier in SpecifierSet(spec)}
        assert operators <= CONDA_OPERATORS, f"{conda_name}{spec}: conda and pip read it differently"
        assert SpecifierSet(spec) == installed.pop(name).specifier, f"{conda_name}{spec} != pyproject's pin"
    # Every other requirement comes from pip through `-e .[dev]`, with exactly the pins of pyproject.toml.
    assert "torch" not in installed and pip_lines() == ["-e .[dev]"]


def test_environment_torch_range_holds_the_pinned_torch():
    pinned = next(Requirement(line.split("#")[0]) for line in (ROOT / "constraints.txt").read_text().splitlines()
                  if line.startswith("torch"))
    (exact,) = pinned.specifier
    assert Version(exact.version) in SpecifierSet(conda_dependencies()["pytorch-cpu"])


def test_browser_extra_brings_playwright_and_stays_out_of_the_environment():
    optional = PYPROJECT["optional-dependencies"]
    assert "browser" in optional, "pyproject.toml needs `browser = [\"playwright>=...\"]` for make test-browser"
    assert {canonicalize_name(Requirement(r).name) for r in optional["browser"]} == {"playwright"}
    assert "playwright" not in requirements("dev"), "Binder and `make setup` need no browser driver"


def test_ci_runs_the_browser_test_after_the_others():
    script = (ROOT / ".ci" / "run").read_text()
    assert script.index("make test\n") < script.index("make test-browser")
    assert "install -y" in script and "DEBIAN_FRONTEND=noninteractive" in script  # no question to answer
