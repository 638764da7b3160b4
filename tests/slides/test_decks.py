"""Every lecture deck of both languages, slide by slide, in headless Chromium: nothing taller or wider than the
960 x 700 slide, type readable from the back row (prose >= 28 px, code and tables >= 18 px, at most 12 lines of
code a slide), slide numbers shown, the notebook's speaker notes present, at most MAX_SLIDES slides, no solution."""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import pytest

from tools.editions import SOLUTION_MARKERS, code_part, solution_lines
from tools.lecture.deck import MAX_CODE_LINES, MAX_SLIDES, in_deck, setup_cells, speaker_notes
from tools.lecture.pdf import CONTENT_EXTENT

ROOT = Path(__file__).resolve().parents[2]
BUILDS = {"en": (ROOT / "build" / "slides", ROOT / "notebooks"),
          "zh-CN": (ROOT / "build" / "slides-zh", ROOT / "zh-CN" / "notebooks")}
WIDTH, HEIGHT = 960, 700
SCREENSHOTS = ROOT / "build" / "screenshots" / "slides"
# Back-row type (issue 52), in px of the 960 x 700 canvas: prose, code/printed text/tables, text inside figures.
PROSE_PX, CODE_PX, FIGURE_TEXT_PX = 28, 18, 16
# What one slide draws: the computed font size of every text element (prose, or code/pre/table), the lines of code
# its code cells show, and the projected size of every text of its SVG figures.
TYPE_SIZES = (Path(__file__).with_name("type_sizes.js")).read_text(encoding="utf-8")

CASES = [(language, path) for language, (_, folder) in BUILDS.items()
         for path in sorted(folder.glob("[0-9][0-9]_*.ipynb"))]

# What one slide measures: its content's extent (scaled back to slide pixels) and every element that scrolls sideways.
MEASURE = "() => {\n" + CONTENT_EXTENT + """
  const slide = Reveal.getCurrentSlide();
  const {bottom, right} = contentExtent(slide, Reveal.getScale());
  const wide = [];
  slide.querySelectorAll("pre, div, table").forEach(e => {
    if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== "visible")
      wide.push(e.tagName + " " + e.scrollWidth + " > " + e.clientWidth + ": " + e.innerText.slice(0, 60));
    else if (e.tagName === "PRE" && e.scrollWidth > e.clientWidth + 1)
      wide.push("PRE " + e.scrollWidth + " > " + e.clientWidth + ": " + e.innerText.slice(0, 60));
  });
  const number = document.querySelector(".slide-number");
  return {bottom: Math.round(bottom), right: Math.round(right), scrollHeight: slide.scrollHeight,
          height: slide.offsetHeight, wide: wide, notes: slide.querySelectorAll("aside.notes").length,
          number: number && getComputedStyle(number).display !== "none" ? number.innerText.replace(/\\s+/g, "") : "",
          text: slide.innerText.slice(0, 70)};
}"""


def deck_path(language: str, notebook: Path) -> Path:
    path = BUILDS[language][0] / f"{notebook.stem}.slides.html"
    if not path.is_file():
        pytest.fail(f"{path} is missing: build the decks first (`make slides slides-zh`, or `make test-slides`)")
    return path


def page_text(page: str) -> str:
    """The text of an HTML page (tags dropped, entities decoded, spaces collapsed), as a search sees the code."""
    text = re.sub(r"<[^>]+>", "", page)
    return re.sub(r"[ \t]+", " ", html.unescape(text))


def solutions_in(text: str, nb: nbformat.NotebookNode, language: str) -> list[str]:
    """The solution markers and solution lines of ``nb`` that occur in ``text``."""
    found = [marker for marker in SOLUTION_MARKERS if marker in text]
    for line in solution_lines(nb, "zh_CN" if language == "zh-CN" else "en"):
        code = code_part(line)
        if len(code) >= 12 and code in text:
            found.append(line)
    return found


@pytest.mark.parametrize(("language", "notebook"), CASES, ids=[f"{lang}-{p.stem[:2]}" for lang, p in CASES])
def test_every_slide_fits_is_numbered_and_carries_its_notes(browser, language, notebook):  # noqa: F811
    nb = nbformat.read(notebook, as_version=4)
    assert any(in_deck(cell) for cell in nb.cells), (
        f"{notebook.name} selects no cell for its lecture deck: give the deck's cells the cell metadata "
        "{\"lecture\": {}} (docs/maintaining.md, \"Lecture decks\")")
    path = deck_path(language, notebook)
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(path.as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        total = page.evaluate("Reveal.getTotalSlides()")
        assert 1 <= total <= MAX_SLIDES, f"{path.name}: {total} slides, at most {MAX_SLIDES} for one lecture"
        problems, notes = [], 0
        for number in range(total):
            page.evaluate(f"Reveal.slide({number})")
            # MathJax has typeset the slide and the deck's script has fitted it (templates/offline_deck)
            page.wait_for_function(f"() => document.body.dataset.fitted === '{number}'", timeout=15_000)
            page.wait_for_timeout(50)
            shown = page.evaluate(MEASURE)
            where = f"{path.name} slide {number + 1} ({shown['text'][:40]!r})"
            if shown["bottom"] > HEIGHT or shown["scrollHeight"] > shown["height"]:
                problems.append(f"{where}: {max(shown['bottom'], shown['scrollHeight'])} px tall, the slide {HEIGHT}")
            if shown["right"] > WIDTH:
                problems.append(f"{where}: {shown['right']} px wide, the slide {WIDTH}")
            problems += [f"{where}: scrolls sideways: {wide}" for wide in shown["wide"]]
            if shown["number"] != f"{number + 1}/{total}":
                problems.append(f"{where}: slide number {shown['number']!r}, expected {number + 1}/{total}")
            notes += shown["notes"]
            drawn = page.evaluate(TYPE_SIZES)
            problems += [f"{where}: prose at {px} px, at least {PROSE_PX}: {what}"
                         for px, what in drawn["prose"] if px < PROSE_PX][:2]
            problems += [f"{where}: code or printed text at {px} px, at least {CODE_PX}: {what}"
                         for px, what in drawn["code"] if px < CODE_PX][:2]
            if drawn["lines"] > MAX_CODE_LINES:
                problems.append(f"{where}: {drawn['lines']} lines of code, at most {MAX_CODE_LINES}")
            if problems and len(problems) < 4:
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SCREENSHOTS / f"{language}-{notebook.stem}-{number + 1}.png"))
        assert problems == [], "\n".join(problems)
        setup = setup_cells(nb)
        expected = sum(bool(speaker_notes(cell)) for index, cell in enumerate(nb.cells)
                       if in_deck(cell) and index not in setup)
        assert notes == expected, f"{path.name}: {notes} slides with speaker notes, the notebook gives {expected}"
        assert expected >= 1, f"{notebook.name}: no speaker notes (cell metadata lecture.notes) in its deck"
    finally:
        page.close()


@pytest.mark.parametrize(("language", "notebook"), CASES, ids=[f"{lang}-{p.stem[:2]}" for lang, p in CASES])
def test_no_deck_shows_a_solution(language, notebook):
    nb = nbformat.read(notebook, as_version=4)
    page = deck_path(language, notebook).read_text(encoding="utf-8")
    assert solutions_in(page_text(page), nb, language) == []
