"""Every lecture deck as a PDF, one page a slide, for a lecturer who teaches from a PDF (``make pdfs``).

From the repository root, after ``make slides slides-zh``::

    python -m tools.lecture.pdf --out build/pdfs/en build/slides/[0-9][0-9]_*.slides.html

Each deck is opened in reveal.js's print view (``NN_name.slides.html?view=print``) in headless Chromium (Debian's
``chromium``, driven by Playwright, as tests/slides does) and printed with Chromium's own print. reveal.js puts every
slide on a page of its own, sizes the pages (the 960 x 700 slide and its margin) and leaves out the controls and the
speaker notes; the deck's script (templates/offline_deck) typesets and fits every slide as it does one at a time on
screen. A deck whose print view would cut a slide, give it a second page or show its notes or controls is not
printed: the error names the slide.

Environment variable:
    CHROMIUM   path of the Chromium executable (default: ``chromium`` or ``chromium-browser`` on PATH)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

# What the print view shows: the deck's slide count (as tests/slides counts it), every page whose slide is taller
# or wider than the slide size, or than its page (measured as tests/slides measures one slide on screen), and any
# speaker notes or navigation controls that would be printed.
# The extent of a slide's content in slide pixels (its boxes' bottom and right edge, less the slide's top and left,
# divided by the deck's scale), speaker notes and MathJax's inner boxes left out: the print view here, the screen in
# tests/slides/test_decks.py.
CONTENT_EXTENT = r"""const contentExtent = (slide, scale) => {
  const box = slide.getBoundingClientRect();
  let bottom = 0, right = 0;
  slide.querySelectorAll("*").forEach(e => {
    if (e.closest("aside.notes") || (e.parentElement && e.parentElement.closest(".MathJax_Display"))) return;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) {
      bottom = Math.max(bottom, (r.bottom - box.top) / scale);
      right = Math.max(right, (r.right - box.left) / scale);
    }
  });
  return {box, bottom, right};
};
"""

PAGES = "() => {\n" + CONTENT_EXTENT + r"""
  const config = Reveal.getConfig();
  const cut = [];
  document.querySelectorAll(".reveal .pdf-page").forEach((page, number) => {
    const slide = page.querySelector("section");
    const {box, bottom, right} = contentExtent(slide, 1);
    const page_box = page.getBoundingClientRect();
    if (bottom > config.height + 1 || right > config.width + 1 || box.top + bottom > page_box.bottom + 1 ||
        slide.scrollHeight > slide.offsetHeight + 1)
      cut.push(`slide ${number + 1} (${slide.innerText.replace(/\s+/g, " ").trim().slice(0, 40)}): ` +
               `${Math.round(right)} x ${Math.round(bottom)} px, the slide ${config.width} x ${config.height}`);
  });
  // what a printed page must not show: speaker notes, the arrows, the progress bar
  const extra = [...document.querySelectorAll("aside.notes, .speaker-notes-pdf, .reveal .controls, .reveal .progress")]
    .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).map(e => e.className);
  return {slides: Reveal.getTotalSlides(), pages: document.querySelectorAll(".reveal .pdf-page").length, cut, extra};
}"""


def chromium_executable() -> str:
    """Debian's Chromium (``apt-get install chromium``), or the one $CHROMIUM names."""
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise RuntimeError("Chromium is not installed: `apt-get install chromium` (or set CHROMIUM=/path/to/chromium)")
    return path


def pdf_name(deck: Path) -> str:
    """``08_pitfalls.slides.html`` -> ``08_pitfalls.pdf``."""
    if not deck.name.endswith(".slides.html"):
        raise ValueError(f"deck: expected a lecture deck NN_name.slides.html (make slides), got {deck}")
    return deck.name.removesuffix(".slides.html") + ".pdf"


def open_print_view(browser, deck: Path):
    """Open ``deck`` (a built NN_name.slides.html) in reveal.js's print view; return the page and the slide count.

    ``browser`` is a Playwright Chromium ``Browser``; the caller closes the page. Raises RuntimeError, naming the
    slide, where the print view would cut a slide or give it more than one page.
    """
    if not deck.is_file():
        raise FileNotFoundError(f"deck: {deck} does not exist: build the decks first (`make slides slides-zh`)")
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(deck.resolve().as_uri() + "?view=print")
        # reveal.js has laid out the pages, MathJax has typeset them and the deck has fitted them (offline_deck)
        page.wait_for_function("() => document.body.dataset.printed !== undefined", timeout=60_000)
        shown = page.evaluate(PAGES)
        if shown["pages"] != shown["slides"]:
            raise RuntimeError(f"{deck.name}: the print view has {shown['pages']} pages for {shown['slides']} slides")
        if shown["extra"]:
            raise RuntimeError(f"{deck.name}: the print view shows " + ", ".join(sorted(set(shown["extra"]))))
        if shown["cut"]:
            raise RuntimeError(f"{deck.name}: the print would cut " + "; ".join(shown["cut"]))
    except BaseException:
        page.close()
        raise
    return page, shown["slides"]


def print_page(page, out: Path) -> None:
    """Chromium's print of an open print view into the PDF ``out``, at the page size reveal.js chose."""
    out.parent.mkdir(parents=True, exist_ok=True)
    page.pdf(path=str(out), prefer_css_page_size=True, print_background=True)


def print_deck(browser, deck: Path, out: Path) -> int:
    """Print ``deck`` to the PDF ``out``, one page a slide (:func:`open_print_view`); return the slide count."""
    page, slides = open_print_view(browser, deck)
    try:
        print_page(page, out)
    finally:
        page.close()
    return slides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.lecture.pdf", description=__doc__.split("\n\n")[0])
    parser.add_argument("decks", nargs="+", type=Path, help="built decks, e.g. build/slides/[0-9][0-9]_*.slides.html")
    parser.add_argument("--out", type=Path, required=True, help="folder for the PDFs, e.g. build/pdfs/en")
    args = parser.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("error: printing the decks needs Playwright: `make pdfs` installs it (the `browser` extra)",
              file=sys.stderr)
        return 1
    try:
        names = [pdf_name(deck) for deck in args.decks]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_executable(), headless=True)
            try:
                for deck, name in zip(args.decks, names, strict=True):
                    slides = print_deck(browser, deck, args.out / name)
                    print(f"  {args.out / name}: {slides} pages")
            finally:
                browser.close()
    except (FileNotFoundError, RuntimeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"pdfs: {len(names)} decks printed into {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
