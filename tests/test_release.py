"""tools/release.py makes both commits of a release in a scratch clone, and refuses a release that cannot be right."""

import datetime
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import release

OLD = "0123456789abcdef0123456789abcdef01234567"
CHANGELOG = f"""# Changelog

## [Unreleased]

### Added

- chapter 14

## [2027.1.0] - 2027-01-05

Release commit: `{OLD}`

### Added

- chapters 00 to 13
"""
KIT = f"git checkout {OLD}  # 2027.1.0\ngit tag -l v2027.1.0\npip install mha-notebooks==2027.1.0\n" \
      "between releases: 2027.1.0.post0.dev0; not 2027.1.01\n"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "mha_lib").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)
    (tmp_path / "mha_lib" / "__init__.py").write_text('import torch\n\n__version__ = "2027.1.0.post0.dev0"  # one\n')
    (tmp_path / "CITATION.cff").write_text('cff-version: 1.2.0\nversion: "2027.1.0"\ndate-released: "2027-01-05"\n')
    for name in release.KITS:
        (tmp_path / name).write_text(KIT)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "Before")
    return tmp_path


def test_prepare_then_record_makes_the_release_and_pins_it(scratch):
    release.prepare("2027.2.0", datetime.date(2027, 2, 3), scratch)
    changelog = (scratch / "CHANGELOG.md").read_text()
    assert changelog.index("## [Unreleased]") < changelog.index("## [2027.2.0] - 2027-02-03") < \
        changelog.index("- chapter 14") < changelog.index("## [2027.1.0]")
    assert '__version__ = "2027.2.0"  # one' in (scratch / "mha_lib" / "__init__.py").read_text()
    assert (scratch / "CITATION.cff").read_text().splitlines()[1:] == ['version: "2027.2.0"',
                                                                       'date-released: "2027-02-03"']
    git(scratch, "commit", "-qam", release.commit_message("2027.2.0"))
    made = git(scratch, "rev-parse", "HEAD")
    git(scratch, "commit", "-q", "--allow-empty", "-m", "Later work")  # the recipe finds it behind later commits

    assert release.record("2027.2.0", scratch) == made
    changelog = (scratch / "CHANGELOG.md").read_text()
    assert f"## [2027.2.0] - 2027-02-03\n\nRelease commit: `{made}`\n\n### Added\n\n- chapter 14" in changelog
    assert f"Release commit: `{OLD}`" in changelog  # the older release keeps its record
    for name in release.KITS:
        assert (scratch / name).read_text() == (
            f"git checkout {made}  # 2027.2.0\ngit tag -l v2027.2.0\npip install mha-notebooks==2027.2.0\n"
            "between releases: 2027.2.0.post0.dev0; not 2027.1.01\n")
    with pytest.raises(ValueError, match="already records its commit"):
        release.record("2027.2.0", scratch)


def test_record_refuses_a_tag_on_another_commit(scratch):
    release.prepare("2027.2.0", datetime.date(2027, 2, 3), scratch)
    git(scratch, "commit", "-qam", release.commit_message("2027.2.0"))
    git(scratch, "tag", "v2027.2.0", "HEAD~1")
    with pytest.raises(ValueError, match="the tag v2027.2.0 is"):
        release.record("2027.2.0", scratch)


def test_record_refuses_a_commit_that_is_not_the_release(scratch):
    git(scratch, "commit", "-q", "--allow-empty", "-m", release.commit_message("2027.2.0"))  # no release heading
    with pytest.raises(ValueError, match="is not the release commit of 2027.2.0"):
        release.record("2027.2.0", scratch)
    with pytest.raises(ValueError, match="no commit 'Release 2027.3.0' and no tag v2027.3.0"):
        release.record("2027.3.0", scratch)


@pytest.mark.parametrize(("version", "date", "message"), [
    ("2027.2", datetime.date(2027, 2, 3), "expected a calendar version YEAR.MONTH.PATCH"),
    ("2027.2.0.dev0", datetime.date(2027, 2, 3), "expected a calendar version YEAR.MONTH.PATCH"),
    ("2027.2.0.post0", datetime.date(2027, 2, 3), "expected a calendar version YEAR.MONTH.PATCH"),
    ("v2027.2.0", datetime.date(2027, 2, 3), "expected a calendar version YEAR.MONTH.PATCH"),
    ("next", datetime.date(2027, 2, 3), "expected a calendar version YEAR.MONTH.PATCH such as 2026.12.0, got 'next'"),
    ("2027.3.0", datetime.date(2027, 2, 3), "expected 2027.2.PATCH for a release dated 2027-02-03, got 2027.3.0"),
    ("2027.1.0", datetime.date(2027, 1, 20), "expected a version after the newest release 2027.1.0, got 2027.1.0"),
])
def test_prepare_refuses_a_wrong_version_and_changes_nothing(scratch, version, date, message):
    before = {path: path.read_text() for path in scratch.rglob("*") if path.is_file() and ".git" not in path.parts}
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        release.prepare(version, date, scratch)
    assert {path: path.read_text() for path in before} == before


def test_prepare_refuses_an_empty_unreleased(scratch):
    path = scratch / "CHANGELOG.md"
    path.write_text(CHANGELOG.replace("### Added\n\n- chapter 14\n\n", "", 1))
    with pytest.raises(ValueError, match="Unreleased has no entries"):
        release.prepare("2027.2.0", datetime.date(2027, 2, 3), scratch)
