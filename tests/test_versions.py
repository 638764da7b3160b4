"""Versions that resolve (issue 52, item 5): one source of the version, releases that name their commit, and pins
in the docs that a lecturer's clone can check out.

- The version has one source, ``mha_lib.__version__``; pyproject.toml reads it (``dynamic``, setuptools ``attr:``).
  It is the newest release of CHANGELOG.md while "Unreleased" is empty, and that release followed by ``.post0.devN``
  (PEP 440: after it, before any later release) while "Unreleased" has entries. CITATION.cff cites the newest release.
- Each release records its release commit ("Release commit: `<full id>`"), which resolves in every clone where a tag
  may not have travelled; at that commit the library carried that version. A tag, where the clone has one, is it.
- Every commit, tag and version the docs tell a lecturer to check out or install resolves in this clone, and the
  lecturer kit pins the newest recorded release.

- While Unreleased is empty, nothing but the record of the release (CHANGELOG.md, the kit) differs from the release
  commit: a change merged after it needs its entry under Unreleased and the version VERSION.post0.dev0.
- Each release commit since 2026.11.0 has the subject "Release VERSION", so `git log --grep` finds it in any clone,
  and the kit's `git log -1 --format=%H --grep='^Release VERSION$'` prints the commit it pins.
- The chapters' Colab install cell (tools/colab.py writes it) installs from git without a ref, or at a release commit.

The release steps are in docs/maintaining.md, "Making a release" (tools/release.py makes their edits);
docs/lecturer-kit.md, "Pin a version", is the recipe."""

import ast
import datetime
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml
from packaging.version import Version

import mha_lib

ROOT = Path(__file__).resolve().parents[1]
RELEASE = re.compile(r"^## \[(?P<version>[^\]]+)\] - (?P<date>\d{4}-\d{2}-\d{2})\s*$", re.MULTILINE)
RELEASE_COMMIT = re.compile(r"^Release commit: `(?P<commit>[0-9a-f]{40})`\s*$", re.MULTILINE)
UNRELEASED = "## [Unreleased]"
# Where the docs tell a reader to pin: `git checkout REF`, `git+...@REF` and `mha-notebooks==VERSION`.
CHECKOUT = re.compile(r"git checkout (?P<ref>[^\s`'\"]+)")
GIT_PIN = re.compile(r"git\+\S+?@(?P<ref>[^\s`'\"@]+)[\"'`]")
PYPI_PIN = re.compile(r"mha-notebooks==(?P<version>[0-9][^\s`'\";]*)")
COMMIT = re.compile(r"[0-9a-f]{7,40}")
TAG = re.compile(r"v(?P<version>\d+\.\d+\.\d+)")
KITS = [ROOT / "docs" / "lecturer-kit.md", ROOT / "docs" / "lecturer-kit.zh-CN.md"]
# `git log ... --grep='^Release VERSION$'`, as the kit gives it to find a release commit in any clone
GREP_RECIPE = re.compile(r"git log -1 --format=%H --grep='\^Release (?P<version>[0-9][^\s'$]*)\$'")
# the ref, if any, that a Colab install cell pins: git+https://HOST/OWNER/NAME@REF
INSTALL_REF = re.compile(r"git\+https://[^\s\"'\\@]+(?:@(?P<ref>[^\s\"'\\#]+))?")
BEFORE_THE_SUBJECT_RULE = {"2026.11.0"}  # recorded after the fact: its release commit is a merge ("Merge branch ...")


def changelog() -> str:
    return (ROOT / "CHANGELOG.md").read_text()


def releases(text: str) -> list[tuple[str, datetime.date]]:
    """The (version, date) of every release heading of a Keep a Changelog file, in file order; Unreleased skipped."""
    return [(m["version"], datetime.date.fromisoformat(m["date"])) for m in RELEASE.finditer(text)]


def release_commits(text: str) -> dict[str, str | None]:
    """{version: the commit on its "Release commit:" line, or None}, for every release, from the text of its entry."""
    headings = list(RELEASE.finditer(text))
    commits = {}
    for heading, following in zip(headings, headings[1:] + [None], strict=True):
        entry = text[heading.end():following.start() if following else len(text)]
        found = RELEASE_COMMIT.search(entry)
        commits[heading["version"]] = found["commit"] if found else None
    return commits


def unreleased_entries(text: str) -> list[str]:
    """The lines of the Unreleased section other than blank lines and its ### headings."""
    if UNRELEASED not in text:
        return []
    section = text.split(UNRELEASED, 1)[1]
    following = RELEASE.search(section)
    section = section[:following.start()] if following else section
    return [line for line in section.splitlines() if line.strip() and not line.startswith("### ")]


def follows_from(version: str, newest: str, unreleased: bool) -> bool:
    """The version the changelog implies: the newest release, or while Unreleased has entries NEWEST.post0.devN."""
    if not unreleased:
        return version == newest
    parsed = Version(version)
    return (str(parsed) == version and parsed.base_version == newest and parsed.post == 0 and parsed.is_devrelease
            and parsed.local is None)


def literal_version(source: str) -> str | None:
    """The string assigned to ``__version__`` at module level, as setuptools' ``attr:`` reads it without importing."""
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and [getattr(target, "id", None) for target in node.targets] == ["__version__"]
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    return None


# --- the one source ---------------------------------------------------------------------------------------------------


def test_pyproject_reads_the_version_from_the_library():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"], "the version has one source, mha_lib.__version__"
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "mha_lib.__version__"}
    # setuptools reads a literal without importing mha_lib (and torch) at build time
    assert literal_version((ROOT / "mha_lib" / "__init__.py").read_text()) == mha_lib.__version__


def test_setuptools_builds_the_version_of_the_library():
    from setuptools.config.pyprojecttoml import read_configuration

    assert read_configuration(ROOT / "pyproject.toml", expand=True)["project"]["version"] == mha_lib.__version__


@pytest.mark.parametrize("edition", ["notebooks", "chapters", "zh-CN/notebooks", "zh-CN/chapters"])
def test_chapter_00_shows_the_version_of_the_library(edition):
    """Chapter 00's first cell prints ``mha_lib VERSION``; nbval hides versions (tests/nbval_sanitize.cfg), so only
    this catches a stored line that names another version, such as one never published."""
    notebook = nbformat.read(ROOT / edition / "00_start_here.ipynb", as_version=4)
    text = "".join(output.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                   for output in cell.outputs)
    shown = re.findall(r"^mha_lib (\S+)$", text, re.MULTILINE)
    assert shown == [mha_lib.__version__], (
        f"{edition}/00_start_here.ipynb shows mha_lib {shown}, the library is {mha_lib.__version__}: "
        "re-execute it (make outputs NOTEBOOKS=notebooks/00_start_here.ipynb)")


def test_the_version_follows_from_the_changelog():
    text = changelog()
    found = releases(text)
    assert found, "CHANGELOG.md has no release heading '## [VERSION] - YYYY-MM-DD'"
    newest, entries = found[0][0], unreleased_entries(text)
    if entries:
        assert follows_from(mha_lib.__version__, newest, True), (
            f"Unreleased has entries, so mha_lib.__version__ is {newest}.post0.dev0, not {mha_lib.__version__!r}")
    else:
        assert mha_lib.__version__ == newest, f"Unreleased is empty: mha_lib.__version__ is the release {newest}"


def test_the_rule_of_versions_between_releases():
    assert follows_from("2026.11.0", "2026.11.0", unreleased=False)
    assert not follows_from("2026.11.0.post0.dev0", "2026.11.0", unreleased=False)
    assert follows_from("2026.11.0.post0.dev0", "2026.11.0", unreleased=True)
    assert follows_from("2026.11.0.post0.dev3", "2026.11.0", unreleased=True)
    for wrong in ("2026.11.0", "2026.11.0.dev0", "2026.12.0.dev0", "2026.11.0.post1.dev0", "2026.11.0.post0.dev0+x",
                  "2026.11.0.post0-dev0", "2026.10.0.post0.dev0"):
        assert not follows_from(wrong, "2026.11.0", unreleased=True), wrong
    assert Version("2026.11.0") < Version("2026.11.0.post0.dev0") < Version("2026.11.1") < Version("2026.12.0")


def test_the_version_is_a_calendar_version_of_its_release_date():
    for version, date in releases(changelog()):
        parsed = Version(version)
        assert str(parsed) == version and len(parsed.release) == 3, "YEAR.MONTH.PATCH, as PEP 440 normalises it"
        assert parsed.release[:2] == (date.year, date.month), f"{version} is not a version of {date:%Y-%m}"
        assert (parsed.pre, parsed.post, parsed.dev, parsed.local) == (None,) * 4, f"{version} is not a release"


def test_releases_are_newest_first_and_unique():
    found = releases(changelog())
    versions = [Version(version) for version, _ in found]
    assert versions == sorted(set(versions), reverse=True)
    assert [date for _, date in found] == sorted((date for _, date in found), reverse=True)


def test_the_parser_reads_keep_a_changelog_headings():
    commit = "0123456789abcdef0123456789abcdef01234567"
    text = (f"# Changelog\n\n## [Unreleased]\n\n### Added\n\n- a\n  b\n\n## [2027.2.1] - 2027-02-10\n\n"
            f"Release commit: `{commit}`\n\n### Fixed\n\n## [2027.2.0] - 2027-02-01\n\n"
            f"Release commit: `{commit[:7]}`\n")
    assert releases(text) == [("2027.2.1", datetime.date(2027, 2, 10)), ("2027.2.0", datetime.date(2027, 2, 1))]
    assert releases("## [Unreleased]\n## 2027.2.0 - 2027-02-01\n") == []  # without brackets: not a release heading
    assert release_commits(text) == {"2027.2.1": commit, "2027.2.0": None}  # an abbreviated id is not recorded
    assert unreleased_entries(text) == ["- a", "  b"]
    assert unreleased_entries("## [Unreleased]\n\n### Added\n\n## [2027.2.0] - 2027-02-01\n\n- old\n") == []


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


def test_the_citation_names_the_newest_release_and_its_date():
    cff = citation()
    version, date = releases(changelog())[0]
    assert cff["version"] == version, "CITATION.cff cites the newest release of CHANGELOG.md, never a .dev version"
    assert Version(mha_lib.__version__).base_version == version
    assert datetime.date.fromisoformat(str(cff["date-released"])) == date


def test_the_citation_gives_the_licences_of_code_and_content():
    licences = citation()["license"]
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] in licences  # the code: MIT
    assert "Attribution 4.0 International" in (ROOT / "LICENSE-CONTENT").read_text() and "CC-BY-4.0" in licences


# --- release commits and tags, in the clone being tested -------------------------------------------------------------


def git(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def clone() -> None:
    """Skip, saying why, where commits cannot be looked up: no git, no repository, or a shallow clone."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the release commits cannot be looked up")
    top = git("rev-parse", "--show-toplevel", check=False).stdout.strip()
    if not top or Path(top).resolve() != ROOT:  # no repository, or an unpacked copy inside someone else's
        pytest.skip("not the top of a git clone (an unpacked archive?): the release commits cannot be looked up")
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("a shallow clone lacks older commits; `git fetch --unshallow` to check the release commits")


def resolves(ref: str) -> str | None:
    """The full id of the commit ``ref`` names in this clone, or None."""
    found = git("rev-parse", "--quiet", "--verify", f"{ref}^{{commit}}", check=False)
    return found.stdout.strip() if found.returncode == 0 else None


def being_released(version: str) -> bool:
    """The release of ``version`` is being made: its heading is not in the parent of HEAD (so HEAD is the release
    commit, or the release is not committed yet), and so cannot name its own commit."""
    parent = git("show", "HEAD^:CHANGELOG.md", check=False)
    return parent.returncode == 0 and version not in {found for found, _ in releases(parent.stdout)}


def test_every_release_records_its_release_commit(clone):
    commits = release_commits(changelog())
    missing = [version for version, commit in commits.items() if commit is None]
    newest = next(iter(commits))
    if missing == [newest] and being_released(newest):
        missing = []  # step 1 of the release: the commit that follows records it (CHANGELOG.md's header, step 3)
    assert missing == [], f"CHANGELOG.md: add 'Release commit: `<git rev-parse vVERSION^{{commit}}>`' under {missing}"


def test_every_release_commit_resolves_and_carried_its_version(clone):
    for version, commit in release_commits(changelog()).items():
        if commit is None:
            continue
        assert resolves(commit) == commit, f"the release commit of {version}, {commit}, is not in this clone"
        library = git("show", f"{commit}:mha_lib/__init__.py").stdout
        assert literal_version(library) == version, f"at {commit[:12]}, mha_lib.__version__ is not {version}"
        pyproject = tomllib.loads(git("show", f"{commit}:pyproject.toml").stdout)["project"]
        assert pyproject.get("version", version) == version, f"at {commit[:12]}, pyproject.toml's version differs"
        then = git("show", f"{commit}:CHANGELOG.md").stdout
        assert releases(then)[0][0] == version, f"at {commit[:12]}, CHANGELOG.md's newest release is not {version}"
        assert unreleased_entries(then) == [], f"at {commit[:12]}, the release commit of {version}: Unreleased is full"


# What the commit after a release may change: the record of its commit (CHANGELOG.md) and the kit's recipe.
RECORD_STEP = {"CHANGELOG.md", *(kit.relative_to(ROOT).as_posix() for kit in KITS)}


def test_nothing_changed_since_the_release_while_unreleased_is_empty(clone):
    """A version is one tree: while mha_lib.__version__ is the newest release, the clone is that release's commit
    plus its record. Anything else merged since belongs under Unreleased, with the version VERSION.post0.dev0."""
    text = changelog()
    version, commit = next(iter(release_commits(text).items()))
    if unreleased_entries(text) or commit is None or resolves(commit) is None:
        return  # between releases, or the release commit itself; an absent commit fails in the test above
    changed = set(git("diff", "--name-only", commit, "--").stdout.split()) - RECORD_STEP
    assert not changed, (
        f"{len(changed)} files changed since the release commit of {version} ({commit[:12]}), e.g. "
        f"{sorted(changed)[:3]}, while Unreleased is empty: add their entries under Unreleased in CHANGELOG.md and "
        f"set mha_lib.__version__ to {version}.post0.dev0")


def test_a_tag_in_this_clone_is_its_release_commit(clone):
    for version, commit in release_commits(changelog()).items():
        tagged = resolves(f"refs/tags/v{version}")
        if tagged is not None and commit is not None:
            assert tagged == commit, f"the tag v{version} is {tagged}, CHANGELOG.md records {commit}"


# --- what the docs tell a lecturer to check out ----------------------------------------------------------------------


def pinning_pages() -> list[Path]:
    """Every page a reader or lecturer follows: the top-level pages, docs/, and the hub's and tools' READMEs."""
    return sorted({*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), *(ROOT / "hub").rglob("*.md")})


def pins(text: str) -> tuple[set[str], set[str]]:
    """The refs the text checks out or installs from git (commits and vVERSION tags), and the PyPI versions."""
    refs = {m["ref"] for pattern in (CHECKOUT, GIT_PIN) for m in pattern.finditer(text)}
    refs = {ref for ref in refs if COMMIT.fullmatch(ref) or TAG.fullmatch(ref)}  # not `--`, paths or <placeholders>
    return refs, {m["version"] for m in PYPI_PIN.finditer(text)}


def test_the_pin_finder_sees_commits_tags_and_versions():
    text = ('git checkout 0123456789abcdef0123456789abcdef01234567  # x\ngit checkout v2027.2.0\n'
            'git checkout -- chapters\n`git checkout vVERSION`\n'
            'pip install "mha-notebooks @ git+<repository>@v2027.1.0"\n`pip install mha-notebooks==2027.2.0`\n')
    assert pins(text) == ({"0123456789abcdef0123456789abcdef01234567", "v2027.2.0", "v2027.1.0"}, {"2027.2.0"})


def test_every_pin_in_the_docs_resolves_in_this_clone(clone):
    commits = release_commits(changelog())
    recorded = {commit: version for version, commit in commits.items() if commit}
    for page in pinning_pages():
        text = page.read_text()
        refs, versions = pins(text)
        name = page.relative_to(ROOT).as_posix()
        for ref in refs:
            if tag := TAG.fullmatch(ref):
                version = tag["version"]
                assert version in commits, f"{name} pins {ref}, which is no release of CHANGELOG.md"
                if resolves(f"refs/tags/{ref}") is None:  # tags do not travel with every clone: give the commit too
                    assert commits[version] and commits[version] in text, (
                        f"{name} pins the tag {ref}, which this clone lacks, without its release commit")
            else:
                assert len(ref) == 40, f"{name} pins {ref}: give the full commit id, as CHANGELOG.md records it"
                assert resolves(ref) == ref, f"{name} pins {ref}, which is not a commit of this clone"
                assert ref in recorded, f"{name} pins {ref}, which is no release commit in CHANGELOG.md"
        for version in versions:
            assert version in commits, f"{name} pins mha-notebooks=={version}, which is no release of CHANGELOG.md"


def test_the_lecturer_kit_pins_the_newest_recorded_release():
    commits = release_commits(changelog())
    version, commit = next((version, commit) for version, commit in commits.items() if commit)
    for kit in KITS:
        text = kit.read_text()
        refs, versions = pins(text)
        checkout = {m["ref"] for m in CHECKOUT.finditer(text)} & refs
        install = {m["ref"] for m in GIT_PIN.finditer(text)}
        assert checkout and install, f"{kit.name}: the recipe's `git checkout` and `pip install ...@` were not found"
        assert checkout <= {commit, f"v{version}"} and commit in checkout, f"{kit.name}: git checkout {commit}"
        assert install == {commit}, f"{kit.name}: pip install \"mha-notebooks @ git+<repository>@{commit}\""
        assert versions <= {version}, f"{kit.name}: mha-notebooks=={version}"


def test_every_release_commit_is_found_by_its_subject(clone):
    for version, commit in release_commits(changelog()).items():
        if commit is None or version in BEFORE_THE_SUBJECT_RULE:
            continue
        subject = git("log", "-1", "--format=%s", commit).stdout.strip()
        assert subject == f"Release {version}", (
            f"the release commit of {version}, {commit[:12]}, has the subject {subject!r}, not 'Release {version}'")


def test_the_kits_grep_recipe_prints_the_commit_it_pins(clone):
    commits = release_commits(changelog())
    for kit in KITS:
        text = kit.read_text()
        recipes = list(GREP_RECIPE.finditer(text))
        newest = next(version for version, commit in commits.items() if commit)
        if newest in BEFORE_THE_SUBJECT_RULE:
            assert recipes == [], f"{kit.name}: {newest}'s release commit has no 'Release {newest}' subject"
            continue
        assert recipes, f"{kit.name}: give `git log -1 --format=%H --grep='^Release {newest}$'`, which any clone runs"
        for recipe in recipes:
            version = recipe["version"]
            assert commits.get(version), f"{kit.name}: {version} is no release of CHANGELOG.md with a release commit"
            printed = subprocess.run(shlex.split(recipe[0]), cwd=ROOT,
                                     capture_output=True, text=True, check=True).stdout.strip()
            assert printed == commits[version], f"{kit.name}: {recipe[0]} prints {printed!r}, not {commits[version]}"


def test_the_grep_recipe_finder_reads_the_kit_s_form():
    found = GREP_RECIPE.search("run `git log -1 --format=%H --grep='^Release 2027.2.0$'` to see it")
    assert found and found["version"] == "2027.2.0"
    assert GREP_RECIPE.search("git log -1 --format=%H --grep='Release 2027.2.0'") is None  # unanchored: not the form


def install_refs() -> dict[str, set[str | None]]:
    """{notebook: the refs its git+https installs pin (None: no ref)}, in every edition (tools/colab.py's cell)."""
    files = [*sorted(ROOT.glob("notebooks/*.ipynb")), *sorted(ROOT.glob("chapters/*.ipynb")),
             *sorted(ROOT.glob("zh-CN/*/*.ipynb"))]
    refs = {}
    for path in files:
        found = {m["ref"] for m in INSTALL_REF.finditer(path.read_text())}
        if found:
            refs[path.relative_to(ROOT).as_posix()] = found
    return refs


def test_the_install_ref_finder_sees_a_ref_or_none():
    assert {m["ref"] for m in INSTALL_REF.finditer('"mha-notebooks @ git+https://github.com/o/r"')} == {None}
    cell = '\\"mha-notebooks @ git+https://github.com/o/r@0123abc\\"'
    assert {m["ref"] for m in INSTALL_REF.finditer(cell)} == {"0123abc"}


def test_the_colab_install_cells_pin_a_release(clone):
    refs = install_refs()
    assert any(name.startswith("notebooks/") for name in refs) and any(name.startswith("zh-CN/") for name in refs), (
        "the Colab install cell was not found: the notebooks no longer install from git+https")
    commits = release_commits(changelog())
    recorded = {commit for commit in commits.values() if commit}
    for name, found in refs.items():
        assert None not in found, f"{name} installs mha-notebooks from git+https without a ref: pin a release"
        for ref in found:
            # A release's tag (test_a_tag_in_this_clone_is_its_release_commit checks where a tag points), or a
            # release commit recorded in CHANGELOG.md.
            tag = TAG.fullmatch(ref)
            assert (tag and tag["version"] in commits) or (ref in recorded and resolves(ref) == ref), (
                f"{name} installs mha-notebooks at {ref}: pin a release (vVERSION or its recorded commit)")
