"""Lecture decks: the cells a chapter selects for a 45-60 minute lecture, fitted to 960 x 700 reveal.js slides.

A chapter chooses its deck in its own cells (``notebooks/``; the Chinese edition and the reader edition carry the
cell metadata over): a cell goes into the deck when its metadata has a ``lecture`` entry, and
``lecture.notes`` (a string, English; translated through translations/zh_CN/*.po like the prose) becomes the
speaker notes of the slide the cell is on (reveal.js: press S)::

    "metadata": {"lecture": {}}                                  the cell is on a slide
    "metadata": {"lecture": {"notes": "Ask first: which ..."}}   ... with speaker notes

How the selected cells become slides (:func:`deck_notebook`):

- every heading (``#``, ``##``, ``###``, also in the middle of a cell) starts a slide; a markdown cell is cut at its
  headings, so each heading titles its own slide;
- a cell that does not fit on the current slide starts a new one, titled "<heading> (continued)": every slide
  has a title;
- no solution is shown: an exercise's answer cell (tag ``solution``) appears as the reader edition's unsolved stub,
  and its checker cells without their outputs (a "Correct" would give the answer away);
- code and printed lines get a smaller font (down to ``MIN_CODE_PX``) where the longest line would not fit the
  width, and wrap beyond that; printed output longer than the room on the slide is cut, with a line that says so;
  figures are scaled to at most ``FIGURE_MAX_PX`` high;
- the slides are flat (one row, no vertical stacks), numbered "current/total".

The whole notebook, cell by cell, stays available as the handout (:func:`tools.lecture.render_slides`).
"""

from __future__ import annotations

import copy
import re

import nbformat

from tools.markdown_blocks import fenced, split_blocks

LECTURE_KEY = "lecture"  # cell metadata: the cell is in the deck; "notes" holds its speaker notes
SOLUTION_TAG = "solution"  # tools/editions.py: an exercise's answer cell
MAX_SLIDES = 30  # a 45-60 minute lecture

# The slide: reveal.js's 960 x 700 box, less the room nbconvert's theme and the slide number take. Measured in
# headless Chromium (tests/slides): the heights below are upper bounds of what a line takes there.
SLIDE_HEIGHT_PX = 620  # content height a slide may fill (700 less margins and a reserve)
CONTENT_WIDTH_PX = 900  # width of a code block's text area
TEXT_LINE_PX = 32  # one line of prose (the theme's 20 px font, line height 1.5, with paragraph spacing)
TEXT_CHARS = 70  # characters of prose per line
HEADING_PX = {1: 80, 2: 62, 3: 52}  # a heading of level 1, 2, 3 on one line, and its margin
HEADING_CHARS = {1: 36, 2: 46, 3: 58}  # characters per line of a heading
HEADING_LINE_PX = {1: 60, 2: 46, 3: 38}  # each further line of a long heading
TABLE_ROW_PX = 36  # one line of a markdown table row
TABLE_CHARS = 80  # characters per line of a table row
CODE_PX = 16  # the code font where the longest line fits
MIN_CODE_PX = 11  # smaller is unreadable on a projector: longer lines wrap
HTML_ROW_PX = 26  # a row of a table shown as HTML: 15 px font, line height 1.3, padding, border (offline_deck)
CODE_LINE = 1.35  # line height of code, in font sizes
CHAR_EM = 0.61  # width of a monospace character, in font sizes (DejaVu Sans Mono 0.602)
CELL_GAP_PX = 32  # padding and margins around one cell's input or output
FIGURE_MAX_PX = 420  # a figure is scaled down to this height at most
MIN_OUTPUT_LINES = 4  # a printed output is never cut shorter than this
MORE_LINES = {"en": "⋯ {count} more lines: run the notebook to see them",
              "zh-CN": "⋯ 还有 {count} 行：运行 notebook 即可看到"}
CONTINUED = {"en": "{heading} (continued)", "zh-CN": "{heading}（续）"}

_CJK = re.compile(r"[\u2e80-\u9fff\uff00-\uffef]")
_HEADING = re.compile(r"^(#{1,3})\s+(.*\S)\s*$")


def in_deck(cell: nbformat.NotebookNode) -> bool:
    return LECTURE_KEY in cell.get("metadata", {})


def speaker_notes(cell: nbformat.NotebookNode) -> str:
    """The cell's speaker notes (``metadata.lecture.notes``), or ""."""
    entry = cell.get("metadata", {}).get(LECTURE_KEY)
    notes = entry.get("notes", "") if isinstance(entry, dict) else ""
    return "".join(notes) if isinstance(notes, list) else notes


def has_deck(nb: nbformat.NotebookNode) -> bool:
    return any(in_deck(cell) for cell in nb.cells)


# --- cutting markdown --------------------------------------------------------------------------------------------


def markdown_pieces(source: str) -> list[str]:
    """The cell cut before each heading line (outside fenced code and ``$$`` formulas); empty pieces dropped."""
    pieces, lines = [], []
    for line, inside in fenced(source.splitlines()):
        if not inside and _HEADING.match(line) and any(x.strip() for x in lines):
            pieces.append("\n".join(lines).strip())
            lines = []
        lines.append(line)
    if any(x.strip() for x in lines):
        pieces.append("\n".join(lines).strip())
    return pieces


def heading_of(piece: str) -> tuple[int, str] | None:
    first = piece.splitlines()[0] if piece.strip() else ""
    match = _HEADING.match(first)
    return (len(match.group(1)), match.group(2)) if match else None


# --- heights -----------------------------------------------------------------------------------------------------


def markdown_px(markdown: str) -> int:
    """Upper bound of the height of rendered markdown on a slide."""
    height = 0
    for block in split_blocks(markdown):
        heading = heading_of(block)
        if heading:
            level, title = heading
            width = len(_CJK.sub("xx", title))
            height += HEADING_PX[level] + HEADING_LINE_PX[level] * (-(-width // HEADING_CHARS[level]) - 1)
            block = "\n".join(block.splitlines()[1:])
            if not block.strip():
                continue
        if block.lstrip().startswith("$$"):
            height += 70 + 28 * block.count("\\\\")  # a displayed formula
            continue
        if block.lstrip().startswith("|"):  # a table: one row a line
            height += sum(TABLE_ROW_PX * max(1, -(-len(row) // TABLE_CHARS)) + 4 for row in block.splitlines()) + 16
            continue
        text = re.sub(r"\$[^$]*\$", "xxxxxx", block)  # inline formulas are short
        text = re.sub(r"\]\([^)]*\)", "]", text)  # links show their text only
        text = _CJK.sub("xxx", text)  # a Chinese character: as wide as two Latin letters, and taller lines
        lines = sum(max(1, -(-len(line) // TEXT_CHARS)) for line in text.splitlines())
        height += lines * TEXT_LINE_PX + 16
    return height


def code_font(lines: list[str]) -> tuple[int, bool]:
    """(font size in px, whether lines must wrap) so that the longest line fits the slide's width."""
    longest = max((len(line.expandtabs()) for line in lines), default=0)
    for size in range(CODE_PX, MIN_CODE_PX - 1, -1):
        if longest * size * CHAR_EM <= CONTENT_WIDTH_PX:
            return size, False
    return MIN_CODE_PX, True


def text_px(lines: list[str], size: int, wrap: bool) -> int:
    per_line = max(1, int(CONTENT_WIDTH_PX // (size * CHAR_EM)))
    count = sum(max(1, -(-len(line) // per_line)) if wrap else 1 for line in lines)
    return round(count * size * CODE_LINE) + CELL_GAP_PX


def _svg_px(svg: str) -> int:
    from tools.lecture import _svg_height

    return min(FIGURE_MAX_PX, _svg_height(svg))


def output_texts(output: nbformat.NotebookNode) -> list[str] | None:
    """The lines of a text output (stream, or a result shown as text); None for a figure or HTML."""
    if output.output_type == "stream":
        return output.text.rstrip("\n").splitlines()
    if output.output_type in ("execute_result", "display_data"):
        data = output.get("data", {})
        if any(key in data for key in ("image/svg+xml", "image/png", "text/html", "text/markdown", "text/latex")):
            return None
        return str(data.get("text/plain", "")).splitlines()
    if output.output_type == "error":
        return list(output.traceback)
    return None


def output_px(output: nbformat.NotebookNode, size: int, wrap: bool) -> int:
    texts = output_texts(output)
    if texts is not None:
        return text_px(texts, size, wrap)
    data = output.get("data", {})
    if "image/svg+xml" in data:
        return _svg_px(data["image/svg+xml"]) + CELL_GAP_PX
    if "image/png" in data:
        from tools.lecture import _png_height

        return min(FIGURE_MAX_PX, _png_height(data["image/png"], output.get("metadata", {}).get("image/png")))
    if "text/html" in data:  # a table: one row a line (the template's table font)
        return HTML_ROW_PX * str(data["text/html"]).count("<tr") + CELL_GAP_PX
    return 60


def code_lines(cell: nbformat.NotebookNode) -> list[str]:
    """Every line the cell shows in monospace: its source and its text outputs."""
    lines = cell.source.splitlines()
    for output in cell.get("outputs", []):
        lines += output_texts(output) or []
    return lines


def cell_font(cell: nbformat.NotebookNode) -> tuple[int, bool]:
    """The font of a code cell on its slide: the one :func:`_styled` tagged it with, else the widest that fits."""
    tags = cell.get("metadata", {}).get("tags", [])
    sizes = [int(tag.rsplit("-", 1)[1]) for tag in tags if re.fullmatch(r"deck-code-\d+", tag)]
    if sizes:
        return sizes[0], "deck-wrap" in tags
    return code_font(code_lines(cell))


def code_px(cell: nbformat.NotebookNode) -> int:
    size, wrap = cell_font(cell)
    height = text_px(cell.source.splitlines(), size, wrap) if cell.source.strip() else 0
    return height + sum(output_px(output, size, wrap) for output in cell.get("outputs", []))


def cell_px(cell: nbformat.NotebookNode) -> int:
    return markdown_px(cell.source) if cell.cell_type == "markdown" else code_px(cell)


# --- the deck ----------------------------------------------------------------------------------------------------


def _language(nb: nbformat.NotebookNode) -> str:
    from tools.lecture import notebook_language

    return notebook_language(nb)


def _unsolved(nb: nbformat.NotebookNode, language: str) -> nbformat.NotebookNode:
    """A copy of ``nb`` in which no exercise is solved: answer cells are stubs, checker cells have no output."""
    from tools.editions import exercises, make_stub

    nb = copy.deepcopy(nb)
    for answer, checkers in exercises(nb):
        cell = nb.cells[answer]
        stub = cell.metadata.get("stub")
        cell.source = ("".join(stub) if isinstance(stub, list) else stub) if stub else make_stub(
            cell.source, "zh_CN" if language == "zh-CN" else "en")
        for index in [answer, *checkers]:
            nb.cells[index].outputs = []
            nb.cells[index].execution_count = None
    return nb


def _cut_output(cell: nbformat.NotebookNode, room: int, language: str) -> None:
    """Shorten the cell's longest text output so the cell fits in ``room`` px, ending with a line that says so."""
    texts = [(i, output_texts(o)) for i, o in enumerate(cell.outputs)]
    texts = [(i, t) for i, t in texts if t is not None and len(t) > MIN_OUTPUT_LINES]
    if not texts:
        return
    index, lines = max(texts, key=lambda item: len(item[1]))
    output = cell.outputs[index]
    for keep in range(len(lines) - 1, MIN_OUTPUT_LINES - 1, -1):
        shown = "\n".join(lines[:keep] + [MORE_LINES[language].format(count=len(lines) - keep)])
        if output.output_type == "stream":
            output.text = shown + "\n"
        else:
            output.data = nbformat.from_dict({"text/plain": shown})
        if code_px(cell) <= room:
            return


def _styled(cell: nbformat.NotebookNode, room: int) -> None:
    """Tag a code cell with its font (``celltag_deck-code-13``, ``celltag_deck-wrap``: see the template): the
    largest at which its longest line fits the width and, if it can, the whole cell fits in ``room`` px."""
    size, wrap = code_font(code_lines(cell))
    tags = [t for t in cell.metadata.get("tags", []) if not t.startswith("deck-")]
    while True:
        cell.metadata["tags"] = [*tags, f"deck-code-{size}", *(["deck-wrap"] if wrap else [])]
        if size <= MIN_CODE_PX or code_px(cell) <= room:
            return
        size -= 1


def deck_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The chapter's lecture deck as a notebook whose slide metadata nbconvert's reveal.js exporter reads.

    Raises ValueError when the chapter selects no cell (see the module docstring for how to select them).
    """
    if not has_deck(nb):
        raise ValueError("the chapter selects no cell for its lecture deck: give the cells of the deck the cell "
                         "metadata {\"lecture\": {}} (docs/maintaining.md, \"Lecture decks\")")
    language = _language(nb)
    source = _unsolved(nb, language)
    deck = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata))
    deck.metadata.pop("widgets", None)
    heading = ""  # the title of the current slide
    used = SLIDE_HEIGHT_PX  # px filled on the current slide: nothing is on a slide yet

    def add(cell: nbformat.NotebookNode, kind: str) -> None:
        cell.metadata["slideshow"] = {"slide_type": kind}
        deck.cells.append(cell)

    def new_slide_with_title() -> None:
        nonlocal used
        title = nbformat.v4.new_markdown_cell(f"### {CONTINUED[language].format(heading=heading)}"
                                              if heading else "")
        if heading:
            add(title, "slide")
            used = markdown_px(title.source)
        else:
            used = 0

    for original in source.cells:
        if not in_deck(original):
            continue
        notes = speaker_notes(original)
        if original.cell_type == "markdown":
            for piece in markdown_pieces(original.source):
                found = heading_of(piece)
                parts = [piece]
                if found:
                    heading = re.sub(r"\s*\(continued\)$|（续）$", "", found[1])
                    height = markdown_px(piece)
                    if height > SLIDE_HEIGHT_PX:  # a long section start: cut it at its paragraphs
                        parts = _fill(split_blocks(piece))
                    for number, part in enumerate(parts):
                        if number:
                            part = f"### {CONTINUED[language].format(heading=heading)}\n\n{part}"
                        add(nbformat.v4.new_markdown_cell(part), "slide")
                        used = markdown_px(part)
                    continue
                for part in _fill(split_blocks(piece), SLIDE_HEIGHT_PX - used) if markdown_px(piece) + used > \
                        SLIDE_HEIGHT_PX else [piece]:
                    height = markdown_px(part)
                    if used + height > SLIDE_HEIGHT_PX:
                        new_slide_with_title()
                    add(nbformat.v4.new_markdown_cell(part), "-")
                    used += height
        else:
            cell = copy.deepcopy(original)
            cell.metadata = {k: v for k, v in cell.metadata.items() if k in ("tags",)}
            _styled(cell, SLIDE_HEIGHT_PX)
            height = code_px(cell)
            if used + height > SLIDE_HEIGHT_PX:
                new_slide_with_title()
                _styled(cell, SLIDE_HEIGHT_PX - used)  # alone on a slide: a smaller font, then a shorter output
                if used + code_px(cell) > SLIDE_HEIGHT_PX:
                    _cut_output(cell, SLIDE_HEIGHT_PX - used, language)
                height = code_px(cell)
            add(cell, "-")
            used += height
        if notes:
            add(nbformat.v4.new_markdown_cell(notes), "notes")
    if deck.cells and deck.cells[0].metadata["slideshow"]["slide_type"] != "slide":
        deck.cells[0].metadata["slideshow"]["slide_type"] = "slide"
    return deck


def _fill(parts: list[str], first_room: int = SLIDE_HEIGHT_PX) -> list[str]:
    """Group consecutive paragraphs into pieces that each fit a slide (the first in ``first_room``, the others
    below a "continued" title); a table too tall for a slide is cut between rows, its header repeated."""
    groups, current, room = [], [], first_room
    later = SLIDE_HEIGHT_PX - HEADING_PX[3] - HEADING_LINE_PX[3]
    for part in [piece for block in parts for piece in _table_rows(block, later)]:
        if current and markdown_px("\n\n".join([*current, part])) > room:
            groups.append("\n\n".join(current))
            current, room = [], later
        current.append(part)
    if current:
        groups.append("\n\n".join(current))
    return groups


def _table_rows(block: str, room: int) -> list[str]:
    """A markdown table taller than ``room`` as several tables with the same header; any other block as it is."""
    rows = block.splitlines()
    if not block.lstrip().startswith("|") or len(rows) < 4 or markdown_px(block) <= room:
        return [block]
    header, body, tables = rows[:2], rows[2:], []
    current: list[str] = []
    for row in body:
        if current and markdown_px("\n".join([*header, *current, row])) > room:
            tables.append("\n".join([*header, *current]))
            current = []
        current.append(row)
    tables.append("\n".join([*header, *current]))
    return tables


def slide_count(deck: nbformat.NotebookNode) -> int:
    return sum(cell.metadata.get("slideshow", {}).get("slide_type") == "slide" for cell in deck.cells)
