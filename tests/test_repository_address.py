"""The repository address lives in one place, [project.urls] Repository in pyproject.toml; tools/colab.py makes
the Colab install cells and the badges of docs/online.md from it and its --check fails when either has drifted.
The set-up's `git clone` line (the READMEs, docs/platforms*.md) is the one other place that spells it."""

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("colab_tool", ROOT / "tools" / "colab.py")
colab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(colab)
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# The pages whose set-up starts with `git clone ADDRESS`: a newcomer copies it, so it is the address itself.
CLONE_PAGES = ("README.md", "README.zh-CN.md", "docs/platforms.md", "docs/platforms.zh-CN.md")
CLONE = f"git clone {colab.REPOSITORY_URL}"


def test_the_address_is_read_from_pyproject(tmp_path):
    assert colab.REPOSITORY_URL == colab.repository_url(ROOT / "pyproject.toml")
    assert f"git+{colab.REPOSITORY_URL}" in colab.INSTALL_CELL
    moved = tmp_path / "pyproject.toml"
    moved.write_text('[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/someone/fork"\n')
    assert colab.repository_url(moved) == "https://github.com/someone/fork"
    moved.write_text('[project]\nname = "x"\n[project.urls]\nRepository = "https://gitlab.com/someone/fork"\n')
    with pytest.raises(ValueError, match="must be https://github.com/<owner>/<name>, got 'https://gitlab.com"):
        colab.repository_url(moved)


def test_the_badges_are_the_generated_ones():
    assert colab.readme_drift((ROOT / "docs" / "online.md").read_text(), CHAPTERS) == []
    zh = sorted((ROOT / "zh-CN" / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert colab.readme_drift((ROOT / "docs" / "online.zh-CN.md").read_text(), zh, "zh_CN") == []


def test_drift_in_the_badge_page_is_reported():
    readme = (ROOT / "docs" / "online.md").read_text()
    owner_name = colab.REPOSITORY_URL.removeprefix("https://github.com/")
    other_owner = readme.replace(f"colab.research.google.com/github/{owner_name}/",
                                 "colab.research.google.com/github/x/y/", 1)
    drift = colab.readme_drift(other_owner, CHAPTERS)
    assert any(line.startswith("not current: https://colab.research.google.com/github/x/y/") for line in drift)
    assert any(line.startswith("missing: | 00 · Start here |") for line in drift)
    without_binder = "\n".join(line for line in readme.splitlines() if "mybinder.org/badge_logo" not in line)
    assert [line[:18] for line in colab.readme_drift(without_binder, CHAPTERS)] == ["missing: [![Binder"]


def test_no_other_tracked_file_spells_the_address():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    generated = {"pyproject.toml", "docs/online.md", "docs/online.zh-CN.md"}  # the source, and the badges made from it
    owner_name = colab.REPOSITORY_URL.removeprefix("https://github.com/")
    spelled = []
    for name in tracked.splitlines():
        path = ROOT / name
        if name in generated or name.startswith(("notebooks/", "chapters/", "zh-CN/")) or not path.is_file():
            continue  # the install cells of every edition are generated too (and checked by --check)
        try:
            text = path.read_text()
            if owner_name in (text.replace(CLONE, "") if name in CLONE_PAGES else text):
                spelled.append(name)
        except UnicodeDecodeError:
            continue
    assert spelled == []


@pytest.mark.parametrize("page", CLONE_PAGES)
def test_the_set_up_clones_the_address_of_pyproject(page):
    text = (ROOT / page).read_text()
    assert CLONE in text, f"{page}: the set-up should start with `{CLONE}`"
    assert set(re.findall(r"git clone (https://[^\s`]+)", text)) == {colab.REPOSITORY_URL}, page


def test_the_readmes_offer_no_badge_while_the_address_is_a_placeholder():
    """Binder and Colab open nothing until the collection is published: the READMEs say so and link docs/online.md."""
    for name in ("README.md", "README.zh-CN.md"):
        readme = (ROOT / name).read_text()
        assert colab._BADGE_URL.findall(readme) == [], name
        assert "docs/online" in readme, name
