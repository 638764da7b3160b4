"""Make a release in two commits, the edits of each done by this tool (docs/maintaining.md, "Making a release").

Usage: python -m tools.release prepare VERSION [--date YYYY-MM-DD]
           the release commit's edits: CHANGELOG.md's Unreleased entries move under "## [VERSION] - DATE" below a
           fresh empty Unreleased; mha_lib.__version__ becomes VERSION, CITATION.cff's version and date-released
           VERSION and DATE. Commit them with the message "Release VERSION": that commit is the release.
       python -m tools.release record VERSION
           the next commit's edits: finds the commit "Release VERSION" (or the tag vVERSION), writes its full id on
           the release's "Release commit:" line of CHANGELOG.md and moves the pinning recipe of the lecturer kit
           (docs/lecturer-kit.md and .zh-CN.md) from the previous recorded release to it.

tests/test_versions.py checks the result in the clone; tests/test_release.py checks this tool on a scratch clone.
"""

import argparse
import datetime
import re
import subprocess
import sys
from pathlib import Path

from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
UNRELEASED = "## [Unreleased]"
RELEASE = re.compile(r"^## \[(?P<version>[^\]]+)\] - (?P<date>\d{4}-\d{2}-\d{2})[ \t]*$", re.MULTILINE)
RELEASE_COMMIT = re.compile(r"^Release commit: `(?P<commit>[0-9a-f]{40})`[ \t]*$", re.MULTILINE)
LIBRARY_VERSION = re.compile(r'^(__version__ = ")[^"]*(")', re.MULTILINE)
KITS = ("docs/lecturer-kit.md", "docs/lecturer-kit.zh-CN.md")


def commit_message(version: str) -> str:
    """The subject of the release commit, by which `git log --grep` finds it in any clone."""
    return f"Release {version}"


def _entries(changelog: str) -> list[str]:
    """The Unreleased section's lines other than blank lines and ### headings."""
    section = changelog.split(UNRELEASED, 1)[1]
    following = RELEASE.search(section)
    section = section[:following.start()] if following else section
    return [line for line in section.splitlines() if line.strip() and not line.startswith("### ")]


def _sub_once(pattern: re.Pattern, replacement: str, text: str, where: str) -> str:
    new, count = pattern.subn(replacement, text, count=1)
    if count != 1:
        raise ValueError(f"{where}: expected a line matching {pattern.pattern!r}, found none")
    return new


def prepare(version: str, date: datetime.date, root: Path = ROOT) -> None:
    """The edits of the release commit of ``version``, released on ``date``."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        parsed = None
    if parsed is None or str(parsed) != version or len(parsed.release) != 3 \
            or any(part is not None for part in (parsed.pre, parsed.post, parsed.dev, parsed.local)):
        raise ValueError(f"version: expected a calendar version YEAR.MONTH.PATCH such as 2026.12.0, got {version!r}")
    if parsed.release[:2] != (date.year, date.month):
        raise ValueError(f"version: expected {date.year}.{date.month}.PATCH for a release dated {date}, got {version}")
    path = root / "CHANGELOG.md"
    changelog = path.read_text()
    if UNRELEASED not in changelog:
        raise ValueError(f"CHANGELOG.md: expected a {UNRELEASED!r} heading, found none")
    if not _entries(changelog):
        raise ValueError("CHANGELOG.md: Unreleased has no entries, so there is nothing to release")
    newest = RELEASE.search(changelog)
    if newest and parsed <= Version(newest["version"]):
        raise ValueError(f"version: expected a version after the newest release {newest['version']}, got {version}")
    path.write_text(changelog.replace(UNRELEASED, f"{UNRELEASED}\n\n## [{version}] - {date.isoformat()}", 1))
    library = root / "mha_lib" / "__init__.py"
    library.write_text(_sub_once(LIBRARY_VERSION, rf"\g<1>{version}\g<2>", library.read_text(), "mha_lib/__init__.py"))
    cff = root / "CITATION.cff"
    text = _sub_once(re.compile(r"^version: .*$", re.MULTILINE), f'version: "{version}"', cff.read_text(), cff.name)
    text = _sub_once(re.compile(r"^date-released: .*$", re.MULTILINE), f'date-released: "{date.isoformat()}"', text,
                     cff.name)
    cff.write_text(text)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def find_release_commit(version: str, root: Path = ROOT) -> str:
    """The full id of the commit "Release VERSION" reachable from HEAD; the tag vVERSION, if any, must be it."""
    pattern = "^" + re.escape(commit_message(version)).replace(r"\ ", " ") + "$"
    found = git(root, "log", "-1", "--format=%H", "--basic-regexp", f"--grep={pattern}", "HEAD")
    tagged = subprocess.run(["git", "rev-parse", "--quiet", "--verify", f"refs/tags/v{version}^{{commit}}"], cwd=root,
                            capture_output=True, text=True).stdout.strip()
    if tagged and found and tagged != found:
        raise ValueError(f"the tag v{version} is {tagged}, the commit {commit_message(version)!r} is {found}")
    if not (found or tagged):
        raise ValueError(f"no commit {commit_message(version)!r} and no tag v{version} in this clone")
    return found or tagged


def record(version: str, root: Path = ROOT) -> str:
    """The edits of the commit after the release: its commit in CHANGELOG.md and in the lecturer kit's recipe."""
    commit = find_release_commit(version, root)
    then = git(root, "show", f"{commit}:CHANGELOG.md")
    newest = RELEASE.search(then)
    if not newest or newest["version"] != version or _entries(then):
        raise ValueError(f"{commit[:12]} is not the release commit of {version}: its CHANGELOG.md's newest release is "
                         f"{newest['version'] if newest else None}, and Unreleased must be empty")
    path = root / "CHANGELOG.md"
    changelog = path.read_text()
    headings = list(RELEASE.finditer(changelog))
    heading = next((h for h in headings if h["version"] == version), None)
    if heading is None:
        raise ValueError(f"version: expected a release heading of {version} in CHANGELOG.md, found none")
    following = next((h.start() for h in headings if h.start() > heading.start()), len(changelog))
    if RELEASE_COMMIT.search(changelog, heading.end(), following):
        raise ValueError(f"CHANGELOG.md: the release {version} already records its commit")
    previous = None  # the release the kit pins now: the newest one that records its commit
    for h, after in zip(headings, [*headings[1:], None], strict=True):
        found = RELEASE_COMMIT.search(changelog, h.end(), after.start() if after else len(changelog))
        if found:
            previous = (h["version"], found["commit"])
            break
    kits = {name: (root / name).read_text() for name in KITS}
    if previous:
        old_version, old_commit = previous
        old = re.compile(rf"(?<![\d.]){re.escape(old_version)}(?!\d)")
        for name, text in kits.items():
            if old_commit not in text:
                raise ValueError(f"{name}: expected the recipe to pin {old_commit} ({old_version}), it does not")
            kits[name] = old.sub(version, text.replace(old_commit, commit))
    path.write_text(changelog[:heading.end()] + f"\n\nRelease commit: `{commit}`" + changelog[heading.end():])
    for name, text in kits.items():
        (root / name).write_text(text)
    return commit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    first = commands.add_parser("prepare", help="the edits of the release commit")
    first.add_argument("version")
    first.add_argument("--date", type=datetime.date.fromisoformat, default=datetime.date.today())
    second = commands.add_parser("record", help="the edits of the commit after it")
    second.add_argument("version")
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            prepare(args.version, args.date)
            print(f'Now: git commit -am "{commit_message(args.version)}", then python -m tools.release record '
                  f"{args.version}")
        else:
            commit = record(args.version)
            print(f'Now: git commit -am "Record the release commit of {args.version}", then\n'
                  f'  git tag -a v{args.version} {commit} -m "mha-notebooks {args.version}" && '
                  "git push origin main && git push origin --tags")
    except ValueError as error:
        print(f"tools.release: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
