"""A contributor's furniture: the pre-commit hooks, the issue forms, the pull request template and .gitattributes.

The hooks are local (no remote hook repository is fetched): each must name a program of the checkout's .venv and a
module or script of this repository that exists, with a `files:` pattern that matches files of the repository, so
that a renamed tool or folder cannot leave a hook that never runs or always fails."""

import importlib.util
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PRE_COMMIT = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
HOOKS = [hook for repo in PRE_COMMIT["repos"] for hook in repo["hooks"]]
TRACKED = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
FORMS = sorted((ROOT / ".github" / "ISSUE_TEMPLATE").glob("*.yml"))
FORMS = [path for path in FORMS if path.name != "config.yml"]
VENV_PROGRAMS = {".venv/bin/python", ".venv/bin/ruff"}  # made by make setup; ruff from the test extra


def test_every_hook_is_local_and_runs_a_program_of_the_venv():
    assert [repo["repo"] for repo in PRE_COMMIT["repos"]] == ["local"], "remote hook repositories cannot be fetched"
    assert {hook["id"] for hook in HOOKS} >= {"ruff", "editions", "translations"}
    for hook in HOOKS:
        assert hook["language"] in ("system", "unsupported"), hook["id"]
        assert shlex.split(hook["entry"])[0] in VENV_PROGRAMS, hook["id"]


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook["id"])
def test_each_hooks_module_or_script_exists_and_knows_its_command(hook):
    program, *arguments = shlex.split(hook["entry"])
    if program.endswith("/ruff"):
        assert arguments[0] == "check"
        return
    if arguments[0] == "-m":
        module, command = arguments[1], arguments[2]
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin, f"{hook['id']}: no module {module}"
        source = Path(spec.origin).read_text()
    else:
        script, command = arguments[0], arguments[1]
        assert (ROOT / script).is_file(), f"{hook['id']}: no file {script}"
        source = (ROOT / script).read_text()
    # the tool's own usage line or argparse option names the command the hook runs
    assert re.search(rf"[\"' ]{re.escape(command)}[\"' \]]", source), f"{hook['id']}: {command} unknown to the tool"
    assert hook.get("pass_filenames") is False, f"{hook['id']} checks the whole repository, not the staged files"


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: hook["id"])
def test_each_hook_runs_only_for_files_it_checks_and_some_exist(hook):
    pattern = re.compile(hook["files"])
    matched = [name for name in TRACKED if pattern.search(name)]
    assert matched, f"{hook['id']}: its files pattern matches no tracked file"
    assert len(matched) < len(TRACKED), f"{hook['id']} would run on every commit"


@pytest.mark.parametrize("hook_id, path", [
    ("editions", "notebooks/04_multi_head_attention.ipynb"), ("editions", "chapters/04_multi_head_attention.ipynb"),
    ("editions-zh", "zh-CN/chapters/04_multi_head_attention.ipynb"),
    ("translations", "translations/zh_CN/04_multi_head_attention.po"),
    ("translations", "mha_lib/locale/zh_CN/LC_MESSAGES/mha_lib.po"), ("ruff", "mha_lib/modules.py"),
    ("colab", "zh-CN/notebooks/04_multi_head_attention.ipynb"), ("colab", "pyproject.toml"),
])
def test_a_change_to_a_source_wakes_its_hook(hook_id, path):
    (hook,) = [hook for hook in HOOKS if hook["id"] == hook_id]
    assert re.search(hook["files"], path)
    assert not re.search(hook["files"], "README.md")


def test_notebooks_diff_and_merge_with_nbdime():
    lines = (ROOT / ".gitattributes").read_text().splitlines()
    assert "*.ipynb diff=jupyternotebook merge=jupyternotebook" in lines
    assert "nbdime config-git --enable" in (ROOT / "CONTRIBUTING.md").read_text()


def test_there_are_issue_forms_for_a_chapter_the_library_and_a_translation():
    assert {path.stem for path in FORMS} == {"chapter-bug", "library-bug", "translation"}
    config = yaml.safe_load((ROOT / ".github" / "ISSUE_TEMPLATE" / "config.yml").read_text())
    assert isinstance(config["blank_issues_enabled"], bool)


@pytest.mark.parametrize("path", FORMS, ids=lambda path: path.stem)
def test_each_issue_form_is_a_valid_github_form(path):
    form = yaml.safe_load(path.read_text())
    assert {"name", "description", "body"} <= set(form)
    kinds = {"markdown", "input", "textarea", "dropdown", "checkboxes"}
    assert all(item["type"] in kinds for item in form["body"])
    ids = [item["id"] for item in form["body"] if "id" in item]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[A-Za-z0-9_-]+", i) for i in ids)
    for item in form["body"]:
        if item["type"] != "markdown":
            assert item["attributes"]["label"] and "id" in item
        if item["type"] == "dropdown":
            options = item["attributes"]["options"]
            assert options and len(options) == len(set(options))


def test_the_chapter_form_asks_what_a_maintainer_needs():
    form = yaml.safe_load((ROOT / ".github" / "ISSUE_TEMPLATE" / "chapter-bug.yml").read_text())
    required = {item["id"] for item in form["body"] if item.get("validations", {}).get("required")}
    assert required == {"chapter", "cell", "edition", "seen", "expected", "environment"}
    (environment,) = [item for item in form["body"] if item.get("id") == "environment"]
    assert all(word in environment["attributes"]["description"] for word in ("platform", "sys", "torch"))


def test_the_pull_request_template_asks_where_and_which_tests():
    template = (ROOT / ".github" / "pull_request_template.md").read_text()
    for asked in ("Chapter(s) and cell(s)", "Output before and after", "Tests I ran", "make test-unit", "nbval"):
        assert asked in template
