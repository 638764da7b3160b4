"""The answers to the chapters' "More to try" tasks (docs/more-to-try-answers.md) run, and say what they claim.

Each `## Chapter NN` section's python blocks run in order in one fresh namespace; their asserts state the answers.
The Chinese page has the same sections and the very same code. Every chapter of notebooks/ with a "More to try" task
has a section, and the answers stay out of the reader's editions."""

import re
from pathlib import Path

import matplotlib
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"en": ROOT / "docs" / "more-to-try-answers.md", "zh_CN": ROOT / "docs" / "more-to-try-answers.zh-CN.md"}
TASK_MARKS = {"en": "More to try", "zh_CN": "更多尝试"}
SECTION = re.compile(r"^## (?:Chapter|第) (\d\d)", re.MULTILINE)
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def sections(page: Path) -> dict[str, list[str]]:
    """chapter number -> the python code blocks of its section, in order."""
    text = page.read_text(encoding="utf-8")
    starts = list(SECTION.finditer(text))
    return {m.group(1): BLOCK.findall(text[m.end():(starts[i + 1].start() if i + 1 < len(starts) else len(text))])
            for i, m in enumerate(starts)}


def chapters_with_tasks(folder: Path, mark: str) -> set[str]:
    return {path.name[:2] for path in folder.glob("[0-9][0-9]_*.ipynb")
            if any(mark in cell.source for cell in nbformat.read(path, as_version=4).cells
                   if cell.cell_type == "markdown")}


def test_every_chapter_with_tasks_has_answers_in_both_languages():
    tasks = chapters_with_tasks(ROOT / "notebooks", TASK_MARKS["en"])
    assert tasks, "no chapter has a 'More to try' task: the search is broken"
    assert chapters_with_tasks(ROOT / "zh-CN" / "notebooks", TASK_MARKS["zh_CN"]) == tasks
    for page in PAGES.values():
        assert set(sections(page)) == tasks, page.name


def test_the_chinese_page_runs_the_same_code():
    assert sections(PAGES["zh_CN"]) == sections(PAGES["en"])


def test_the_answers_stay_out_of_the_readers_editions():
    readers = [*(ROOT / "chapters").glob("*.ipynb"), *(ROOT / "zh-CN" / "chapters").glob("*.ipynb")]
    for path in readers:
        assert "more-to-try-answers" not in path.read_text(encoding="utf-8"), path


@pytest.mark.slow  # the answers train and search: chapter 13 takes about 20 s, chapter 06 about 10 s
@pytest.mark.parametrize("chapter", sorted(sections(PAGES["en"])))
def test_the_answers_of_a_chapter_run(chapter):
    matplotlib.use("Agg")  # figures are drawn, never shown, in a test
    namespace: dict = {"__name__": f"more_to_try_{chapter}"}
    blocks = sections(PAGES["en"])[chapter]
    assert blocks, f"chapter {chapter} has no code"
    for block in blocks:
        exec(compile(block, f"more-to-try-answers.md, chapter {chapter}", "exec"), namespace)  # noqa: S102
