"""One version, in three places: pyproject.toml, mha_lib.__version__ and the newest release of CHANGELOG.md; and
CITATION.cff cites that release.

The scheme is calendar versioning, YEAR.MONTH.PATCH (PEP 440), and each release is tagged vYEAR.MONTH.PATCH so that
a lecturer can pin it (docs/lecturer-kit.md, "Pin a version")."""

import datetime
import re
import tomllib
from pathlib import Path

import yaml
from packaging.version import Version

import mha_lib

ROOT = Path(__file__).resolve().parents[1]
RELEASE = re.compile(r"^## \[(?P<version>[^\]]+)\] - (?P<date>\d{4}-\d{2}-\d{2})\s*$", re.MULTILINE)


def releases(text: str) -> list[tuple[str, datetime.date]]:
    """The (version, date) of every release heading of a Keep a Changelog file, in file order; Unreleased skipped."""
    return [(m["version"], datetime.date.fromisoformat(m["date"])) for m in RELEASE.finditer(text)]


def pyproject_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_pyproject_and_the_library_agree():
    assert mha_lib.__version__ == pyproject_version()


def test_the_newest_release_in_the_changelog_is_the_version():
    found = releases((ROOT / "CHANGELOG.md").read_text())
    assert found, "CHANGELOG.md has no release heading '## [VERSION] - YYYY-MM-DD'"
    assert found[0][0] == pyproject_version(), "add the release to CHANGELOG.md, or set the version to its newest"


def test_the_version_is_a_calendar_version_of_its_release_date():
    version, date = releases((ROOT / "CHANGELOG.md").read_text())[0]
    parsed = Version(version)
    assert str(parsed) == version and len(parsed.release) == 3, "YEAR.MONTH.PATCH, as PEP 440 normalises it"
    assert parsed.release[:2] == (date.year, date.month)


def test_releases_are_newest_first_and_unique():
    found = releases((ROOT / "CHANGELOG.md").read_text())
    versions = [Version(version) for version, _ in found]
    assert versions == sorted(set(versions), reverse=True)
    assert [date for _, date in found] == sorted((date for _, date in found), reverse=True)


def test_the_parser_reads_keep_a_changelog_headings():
    text = "# Changelog\n\n## [Unreleased]\n\n## [2027.2.1] - 2027-02-10\n\n### Fixed\n\n## [2027.2.0] - 2027-02-01\n"
    assert releases(text) == [("2027.2.1", datetime.date(2027, 2, 10)), ("2027.2.0", datetime.date(2027, 2, 1))]
    assert releases("## [Unreleased]\n## 2027.2.0 - 2027-02-01\n") == []  # without brackets: not a release heading


# --- CITATION.cff: the release a citation names ----------------------------------------------------------------------

CFF_REQUIRED = {"cff-version", "message", "title", "authors"}  # Citation File Format 1.2.0's required keys


def citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def test_the_citation_is_cff_1_2_0_with_its_required_keys():
    cff = citation()
    assert isinstance(cff, dict) and CFF_REQUIRED <= set(cff), f"CITATION.cff lacks {CFF_REQUIRED - set(cff or {})}"
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["authors"] and all(set(author) & {"name", "family-names"} for author in cff["authors"])
    assert all(isinstance(cff[key], str) and cff[key].strip() for key in ("message", "title"))


def test_the_citation_names_the_version_and_release_date():
    cff = citation()
    version, date = releases((ROOT / "CHANGELOG.md").read_text())[0]
    assert cff["version"] == pyproject_version() == mha_lib.__version__ == version
    assert datetime.date.fromisoformat(str(cff["date-released"])) == date


def test_the_citation_gives_the_licences_of_code_and_content():
    licences = citation()["license"]
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] in licences  # the code: MIT
    assert "Attribution 4.0 International" in (ROOT / "LICENSE-CONTENT").read_text() and "CC-BY-4.0" in licences
