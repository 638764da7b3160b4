"""The PDFs of the lecture decks (``make pdfs``, tools/lecture/pdf.py), read page by page: one page for each slide of
the deck, every page the same size, and no blank page.

Each deck of both languages is printed into a temporary folder as ``make pdfs`` prints it, and the PDF is read with
a few regular expressions (Chromium writes plain objects and Flate-compressed content streams; no PDF library is
needed). A page is blank when it draws no more than the same page printed with its slide hidden (what is left is
the page's background and its number).
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import pytest

from tools.lecture.pdf import open_print_view, pdf_name, print_page

ROOT = Path(__file__).resolve().parents[2]
BUILDS = {"en": ROOT / "build" / "slides", "zh-CN": ROOT / "build" / "slides-zh"}
NOTEBOOKS = {"en": ROOT / "notebooks", "zh-CN": ROOT / "zh-CN" / "notebooks"}
CASES = [(language, BUILDS[language] / f"{path.stem}.slides.html")
         for language in BUILDS for path in sorted(NOTEBOOKS[language].glob("[0-9][0-9]_*.ipynb"))]

XREF = re.compile(rb"(\d{10}) \d{5} ([nf])")
PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
HEAD = re.compile(rb"\d+ \d+ obj\s*(.*?)(stream\r?\n|endobj)", re.S)
# What a content stream draws: glyphs (the bytes of the hex strings shown with Tj or TJ: one or two a glyph, as the
# font has it), painted paths, images and other XObjects.
GLYPHS = re.compile(rb"<([0-9A-Fa-f]*)>")
PAINT = re.compile(rb"(?m)^(?:f\*?|F|S|s|B\*?|b\*?)$")
XOBJECT = re.compile(rb"/\w+\s+Do\b")


def pdf_pages(data: bytes) -> list[dict]:
    """Every page of a PDF Chromium wrote, in reading order: its MediaBox and what its content streams draw.

    The objects are found through the cross-reference table (Chromium writes a plain one, no object streams), each
    stream read by its /Length: a compressed stream may hold any bytes, "endobj" among them.
    """
    start = int(re.findall(rb"startxref\s+(\d+)", data)[-1])
    table = re.compile(rb"xref\s+0 (\d+)\s+").match(data, start)
    entries = XREF.findall(data, table.end(), table.end() + 20 * int(table[1]))
    objects, streams = {}, {}
    for number, (offset, used) in enumerate(entries):
        if used != b"n":
            continue
        head = HEAD.match(data, int(offset))
        objects[number] = head[1]
        if head[2].startswith(b"stream"):
            length = int(re.search(rb"/Length\s+(\d+)", head[1])[1])
            streams[number] = data[head.end():head.end() + length]
    root = re.search(rb"/Pages\s+(\d+) 0 R", objects[int(re.search(rb"/Root\s+(\d+) 0 R", data)[1])])
    pages: list[dict] = []

    def walk(number: int) -> None:
        body = objects[number]
        if not PAGE.search(body):  # a /Pages node of the page tree
            for kid in re.findall(rb"(\d+) 0 R", re.search(rb"/Kids\s*\[(.*?)\]", body, re.S).group(1)):
                walk(int(kid))
            return
        contents = re.search(rb"/Contents\s*(\[.*?\]|\d+ 0 R)", body, re.S).group(1)
        drawn = b"".join(zlib.decompress(streams[int(ref)])
                         for ref in re.findall(rb"(\d+) 0 R", contents))
        text = b"".join(re.findall(rb"(?:\[[^\]]*\]|<[^>]*>)\s*T[jJ]", drawn))
        box = re.search(rb"/MediaBox\s*\[([^\]]*)\]", body).group(1)
        pages.append({"box": [round(float(v), 1) for v in box.split()],
                      "ink": (sum(len(hex_digits) // 2 for hex_digits in GLYPHS.findall(text)),
                              len(PAINT.findall(drawn)), len(XOBJECT.findall(drawn)))})

    walk(int(root.group(1)))
    return pages


def test_pdf_pages_reads_a_page_count_and_the_ink():
    """The reader on a hand-made PDF of two pages: one with two glyphs and a filled box, one with nothing."""
    shown, empty = zlib.compress(b"BT\n/F1 12 Tf\n<00410042> Tj\nET\n0 0 10 10 re\nf\n"), zlib.compress(b"")
    bodies = [b"<</Type /Catalog /Pages 2 0 R>>", b"<</Type /Pages /Count 2 /Kids [3 0 R 4 0 R]>>",
              b"<</Type /Page /MediaBox [0 0 720 525] /Contents 5 0 R /Parent 2 0 R>>",
              b"<</Type /Page /MediaBox [0 0 720 525] /Contents [6 0 R] /Parent 2 0 R>>",
              b"<</Filter /FlateDecode /Length %d>> stream\n%s\nendstream" % (len(shown), shown),
              b"<</Filter /FlateDecode /Length %d>> stream\n%s\nendstream" % (len(empty), empty)]
    data, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(bodies, start=1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<</Size %d /Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(bodies) + 1, xref)
    pages = pdf_pages(data)
    assert pages == [{"box": [0, 0, 720, 525], "ink": (4, 1, 0)}, {"box": [0, 0, 720, 525], "ink": (0, 0, 0)}]
    # against a bare page that shows one glyph of two bytes (its number): the first page is not blank, the second is
    assert blank_pages_of(pages, [{"ink": (2, 0, 0)}] * 2) == [2]


def test_the_printer_names_a_wrong_or_missing_deck(tmp_path):
    wrong = r"deck: expected a lecture deck NN_name.slides.html .* got .*/08_pitfalls.html"
    with pytest.raises(ValueError, match=wrong):
        pdf_name(Path("build/slides/08_pitfalls.html"))
    assert pdf_name(Path("build/slides/08_pitfalls.slides.html")) == "08_pitfalls.pdf"
    with pytest.raises(FileNotFoundError, match=r"deck: .*99_none.slides.html does not exist: build the decks first"):
        open_print_view(None, tmp_path / "99_none.slides.html")


def blank_pages_of(pages: list[dict], bare: list[dict]) -> list[int]:
    """The numbers (from 1) of the ``pages`` that draw no more glyphs, paths or images than the ``bare`` ones."""
    return [number + 1 for number, (page, empty) in enumerate(zip(pages, bare, strict=True))
            if all(drawn <= left for drawn, left in zip(page["ink"], empty["ink"], strict=True))]


@pytest.mark.parametrize(("language", "deck"), CASES, ids=[f"{lang}-{d.name[:2]}" for lang, d in CASES])
def test_every_deck_prints_one_whole_page_a_slide(browser, tmp_path, language, deck):  # noqa: F811
    if not deck.is_file():
        pytest.fail(f"{deck} is missing: build the decks first (`make slides slides-zh`, or `make test-slides`)")
    out, bare = tmp_path / pdf_name(deck), tmp_path / "bare.pdf"
    page, slides = open_print_view(browser, deck)  # fails where the print view would cut a slide
    try:
        print_page(page, out)  # as `make pdfs` prints it
        # and again with every slide hidden: what is left on a page is its background and its number
        page.add_style_tag(content="html .reveal .pdf-page > section > * { display: none !important; }")
        print_page(page, bare)
    finally:
        page.close()
    pages = pdf_pages(out.read_bytes())
    assert len(pages) == slides, f"{out.name}: {len(pages)} pages for the deck's {slides} slides"
    sizes = {tuple(page["box"]) for page in pages}
    assert len(sizes) == 1, f"{out.name}: pages of different sizes {sorted(sizes)}"
    (x0, y0, x1, y1), = sizes
    assert abs((x1 - x0) / (y1 - y0) - 960 / 700) < 0.01, f"{out.name}: pages {x1 - x0} x {y1 - y0} pt, not 960:700"
    empty = pdf_pages(bare.read_bytes())
    assert len(empty) == len(pages), f"{out.name}: {len(empty)} pages with the slides hidden, {len(pages)} shown"
    blank = blank_pages_of(pages, empty)
    assert blank == [], f"{out.name}: pages {blank} draw nothing but their background and number"
