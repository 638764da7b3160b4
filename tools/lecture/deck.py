"""Lecture decks: the cells a chapter selects for a 45-60 minute lecture, fitted to 960 x 700 reveal.js slides.

A chapter chooses its deck in its own cells (``notebooks/``; the Chinese edition and the reader edition carry the
cell metadata over): a cell goes into the deck when its metadata has a ``lecture`` entry, and
``lecture.notes`` (a string, English; translated through translations/zh_CN/*.po like the prose) becomes the
speaker notes of the slide the cell is on (reveal.js: press S)::

    "metadata": {"lecture": {}}                                  the cell is on a slide
    "metadata": {"lecture": {"notes": "Ask first: which ..."}}   ... with speaker notes
    "metadata": {"lecture": {"show": "figures"}}                 only its figures: the code is too long for a slide

How the selected cells become slides (:func:`deck_notebook`):

- every heading (``#``, ``##``, ``###``, also in the middle of a cell) starts a slide; a markdown cell is cut at its
  headings, so each heading titles its own slide;
- a cell that does not fit on the current slide starts a new one, titled "<heading> (continued)": every slide
  has a title;
- no solution is shown: an exercise's answer cell (tag ``solution``) appears as the reader edition's unsolved stub,
  and its checker cells without their outputs (a "Correct" would give the answer away);
- a code cell too tall for a slide of its own even so (a figure or a table cannot be cut) shows its code on one
  slide and its outputs on the next;
- a code cell whose metadata says ``"lecture": {"show": "figures"}`` shows only its figures (no code, no printed
  text): for a figure whose code is too long for a slide;
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
OUTPUT_ONLY_TAG = "deck-output-only"  # the outputs of a cell whose code is on the slide before (see the template)
MAX_SLIDES = 45  # a 45-60 minute lecture, at back-row type sizes (deck 08 has 43: thin its selection)
MAX_CODE_LINES = 12  # lines of code on one slide, at most (longer cells are cut into slides "(continued)")

# The slide: reveal.js's 960 x 700 box, less the room nbconvert's theme and the slide number take. Measured in
# headless Chromium (tests/slides): the heights below are upper bounds of what a line takes there. The type is for
# the back row of a hall (issue 52): prose 28 px, code and printed text 18 px at least (templates/offline_deck).
SLIDE_HEIGHT_PX = 620  # content height a slide may fill (700 less margins and a reserve)
CONTENT_WIDTH_PX = 900  # width of a code block's text area
PROSE_PX = 28  # the font of prose
TEXT_LINE_PX = 46  # one line of prose (28 px font, line height 1.5, with paragraph spacing)
TEXT_CHARS = 54  # characters of prose per line (a Chinese character counts as two)
HEADING_PX = {1: 100, 2: 84, 3: 72}  # a heading of level 1, 2, 3 on one line, and its margin
HEADING_CHARS = {1: 30, 2: 36, 3: 42}  # characters per line of a heading
HEADING_LINE_PX = {1: 62, 2: 54, 3: 48}  # each further line of a long heading
TABLE_ROW_PX = 40  # one line of a markdown table row (24 px font)
TABLE_CHARS = 64  # characters per line of a table row
CODE_PX = 22  # the code font where the longest line fits
MIN_CODE_PX = 18  # smaller cannot be read from the back row: longer lines wrap
HTML_ROW_PX = 30  # a row of a table shown as HTML: 18 px font, line height 1.3, padding, border (offline_deck)
CODE_LINE = 1.35  # line height of code, in font sizes
CHAR_EM = 0.61  # width of a monospace character, in font sizes (DejaVu Sans Mono 0.602)
CELL_GAP_PX = 32  # padding and margins around one cell's input or output
FIGURE_MAX_PX = 440  # a figure is shown at most this high (and at most CONTENT_WIDTH_PX wide) ...
FIGURE_ZOOM = 2.0  # ... and enlarged up to this factor to get there: its labels grow with it (SVG only)
MIN_OUTPUT_LINES = 4  # a printed output is never cut shorter than this
MORE_LINES = {"en": "⋯ {count} more lines: run the notebook to see them",
              "zh-CN": "⋯ 还有 {count} 行：运行 notebook 即可看到"}
CONTINUED = {"en": "{heading} (continued)", "zh-CN": "{heading}（续）"}
LEFT_OUT = "# ⋯"
SHOW_FIGURES = "figures"  # ``lecture.show``: the slide shows the cell's figures only, not its code or printed text
FIGURE_TYPES = ("image/svg+xml", "image/png")  # in place of the lines a cell's ``lecture.lines`` leaves out

_CJK = re.compile(r"[\u2e80-\u9fff\uff00-\uffef]")
_HEADING = re.compile(r"^(#{1,3})\s+(.*\S)\s*$")


def columns(line: str) -> int:
    """Columns a line of code takes in a monospace font: a Chinese character (in a comment, a string) takes two."""
    return len(_CJK.sub("xx", line.expandtabs()))


def in_deck(cell: nbformat.NotebookNode) -> bool:
    return LECTURE_KEY in cell.get("metadata", {})


def speaker_notes(cell: nbformat.NotebookNode) -> str:
    """The cell's speaker notes (``metadata.lecture.notes``), or ""."""
    entry = cell.get("metadata", {}).get(LECTURE_KEY)
    notes = entry.get("notes", "") if isinstance(entry, dict) else ""
    return "".join(notes) if isinstance(notes, list) else notes


def figure_outputs(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The outputs of a code cell that are figures (an image: SVG or PNG)."""
    return [output for output in cell.get("outputs", [])
            if any(kind in output.get("data", {}) for kind in FIGURE_TYPES)]


def figures_only(cell: nbformat.NotebookNode) -> bool:
    """Whether the cell's slide shows only its figures (``lecture.show`` is ``"figures"``), not its code.

    Raises ValueError naming the cell when ``lecture.show`` is given another value or on a markdown cell.
    """
    entry = cell.get("metadata", {}).get(LECTURE_KEY)
    show = entry.get("show") if isinstance(entry, dict) else None
    if show is None:
        return False
    if show != SHOW_FIGURES or cell.cell_type != "code":
        raise ValueError(f"cell {cell.get('id', '?')}: metadata lecture.show: expected \"{SHOW_FIGURES}\" on a code "
                         f"cell (its slide shows its figures, not its code), got {show!r} on a {cell.cell_type} cell")
    return True


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
            height += sum(TABLE_ROW_PX * max(1, -(-columns(row) // TABLE_CHARS)) + 4 for row in block.splitlines()) + 16
            continue
        text = re.sub(r"\$[^$]*\$", "xxxxxx", block)  # inline formulas are short
        text = re.sub(r"\]\([^)]*\)", "]", text)  # links show their text only
        text = _CJK.sub("xx", text)  # a Chinese character: as wide as two Latin letters
        lines = sum(max(1, -(-len(line) // TEXT_CHARS)) for line in text.splitlines())
        height += lines * TEXT_LINE_PX + 16
    return height


def code_font(lines: list[str]) -> tuple[int, bool]:
    """(font size in px, whether lines must wrap) so that the longest line fits the slide's width."""
    longest = max((columns(line) for line in lines), default=0)
    for size in range(CODE_PX, MIN_CODE_PX - 1, -1):
        if longest * size * CHAR_EM <= CONTENT_WIDTH_PX:
            return size, False
    return MIN_CODE_PX, True


def text_px(lines: list[str], size: int, wrap: bool) -> int:
    per_line = max(1, int(CONTENT_WIDTH_PX // (size * CHAR_EM)))
    count = sum(max(1, -(-columns(line) // per_line)) if wrap else 1 for line in lines)
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
        return HTML_ROW_PX * max(1, str(data["text/html"]).count("<tr")) + CELL_GAP_PX
    return 60


def shown_source(cell: nbformat.NotebookNode) -> list[str]:
    """The lines of the cell's code its slide shows: none where the code is on the slide before."""
    return [] if OUTPUT_ONLY_TAG in cell.get("metadata", {}).get("tags", []) else cell.source.splitlines()


def code_lines(cell: nbformat.NotebookNode) -> list[str]:
    """Every line the cell shows in monospace: its code and its text outputs."""
    lines = shown_source(cell)
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
    source = shown_source(cell)
    height = text_px(source, size, wrap) if any(line.strip() for line in source) else 0
    return height + sum(output_px(output, size, wrap) for output in cell.get("outputs", []))


def cell_px(cell: nbformat.NotebookNode) -> int:
    return markdown_px(cell.source) if cell.cell_type == "markdown" else code_px(cell)


# --- code on a slide ---------------------------------------------------------------------------------------------

_SETUP_LINE = re.compile(r"^(import |from \S+ import |[%!]|try:|except |    import |.*pip install)")


def setup_cells(nb: nbformat.NotebookNode) -> set[int]:
    """The indices of the notebook's set-up cells, which are never on a slide: the code cells from the first one
    on, as long as each installs or imports something (a top-level ``import``, a ``%magic``, ``!pip``, the Colab
    ``try: import mha_lib``). The first code cell that does neither ends them."""
    found = set()
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if not any(_SETUP_LINE.match(line) for line in cell.source.splitlines()):
            break
        found.add(index)
    return found


def shown_lines(cell: nbformat.NotebookNode) -> str:
    """The cell's source as its slide shows it: without test markers and, where ``lecture.lines`` marks some
    lines (``"3-14"``, ``"1-2, 9-20"``: 1-based, inclusive), only those, each run left out shown as ``# ⋯``.

    Raises ValueError naming the cell when ``lecture.lines`` is not such a range of the cell's lines.
    """
    from tools.lecture import hide_test_markers

    source = hide_test_markers(cell.source).rstrip("\n")
    entry = cell.get("metadata", {}).get(LECTURE_KEY)
    marked = entry.get("lines") if isinstance(entry, dict) else None
    if not marked:
        return source
    lines = source.splitlines()
    keep: set[int] = set()
    for part in str(marked).split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+))?\s*", part)
        first, last = (int(match.group(1)), int(match.group(2) or match.group(1))) if match else (0, 0)
        if not match or not 1 <= first <= last <= len(lines):
            raise ValueError(f"cell {cell.get('id', '?')}: metadata lecture.lines: expected ranges of its "
                             f"{len(lines)} lines such as \"3-14\" or \"1-2, 9-20\", got {marked!r}")
        keep.update(range(first - 1, last))
    shown: list[str] = []
    for number, line in enumerate(lines):
        if number in keep:
            shown.append(line)
        elif not shown or shown[-1].strip() != LEFT_OUT:
            following = next((lines[n] for n in range(number, len(lines)) if n in keep), "")
            shown.append(" " * (len(following) - len(following.lstrip())) + LEFT_OUT)
    return "\n".join(shown)


def visual_lines(source: str) -> int:
    """Lines the code takes on a slide, at most: at the smallest font, where long lines wrap."""
    per_line = int(CONTENT_WIDTH_PX // (MIN_CODE_PX * CHAR_EM))
    return sum(max(1, -(-columns(line) // per_line)) for line in source.splitlines()) if source else 0


def _cut_points(lines: list[str]) -> tuple[list[int], list[int], list[int]]:
    """Where a cell's code may be cut, best first in each rank: before a statement at the top level that follows
    a blank line, before any top-level statement, before any statement (Python's tokenizer finds them)."""
    import io
    import tokenize

    starts = set()
    try:
        after_newline = True
        for token in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            if token.type in (tokenize.NEWLINE,):
                after_newline = True
            elif after_newline and token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT,
                                                       tokenize.DEDENT, tokenize.ENDMARKER):
                starts.add(token.start[0] - 1)
                after_newline = False
    except (tokenize.TokenError, IndentationError, SyntaxError):  # magics and the like: any line may start one
        starts = set(range(len(lines)))
    closing = re.compile(r"^\s*(else|elif|except|finally)\b|^\s*[)\]}]")

    def good(n: int) -> bool:
        previous = lines[n - 1].lstrip() if n else ""
        return n in starts and not closing.match(lines[n]) and not previous.startswith("@")

    top = [n for n in range(1, len(lines)) if good(n) and not lines[n][:1].isspace()]
    return [n for n in top if not lines[n - 1].strip()], top, [n for n in range(1, len(lines)) if good(n)]


def enlarge_figures(cell: nbformat.NotebookNode) -> None:
    """Show each SVG figure of the cell as large as a slide holds it (at most ``FIGURE_MAX_PX`` high,
    ``CONTENT_WIDTH_PX`` wide, ``FIGURE_ZOOM`` times its own size): the SVG's ``width`` and ``height`` are set to
    that size and its ``viewBox`` keeps the drawing, so axis labels and annotations are projected larger."""
    from tools.lecture import PX_PER_UNIT

    for output in cell.get("outputs", []):
        svg = output.get("data", {}).get("image/svg+xml")
        if not isinstance(svg, str) or "viewBox" not in svg[:2000]:
            continue
        start = svg.find("<svg")
        end = svg.find(">", start)
        if start < 0 or end < 0:
            continue
        tag = svg[start:end]
        size = {name: float(value) * PX_PER_UNIT[unit]
                for name, value, unit in re.findall(r'\s(width|height)="([\d.]+)(px|pt|)"', tag)}
        if not {"width", "height"} <= size.keys() or min(size.values()) <= 0:
            continue
        zoom = min(FIGURE_ZOOM, CONTENT_WIDTH_PX / size["width"], FIGURE_MAX_PX / size["height"])
        for name, value in size.items():
            tag = re.sub(rf'\s{name}="[\d.]+(px|pt|)"', f' {name}="{value * zoom:.1f}px"', tag)
        output.data["image/svg+xml"] = svg[:start] + tag + svg[end:]


def code_chunks(source: str, limit: int = MAX_CODE_LINES) -> list[str]:
    """The code cut into consecutive pieces of at most ``limit`` lines on a slide (:func:`visual_lines`), each cut
    at the best place (:func:`_cut_points`) that leaves the piece at least a third of ``limit``."""
    lines = source.splitlines()
    chunks, start = [], 0
    ranks = _cut_points(lines)
    while start < len(lines):
        end = start
        while end < len(lines) and visual_lines("\n".join(lines[start:end + 1])) <= limit:
            end += 1
        end = max(end, start + 1)
        if end < len(lines):
            lowest = start + max(1, limit // 3)
            for rank in ranks:
                fitting = [n for n in rank if lowest <= n <= end]
                if fitting:
                    end = fitting[-1]
                    break
        piece = "\n".join(lines[start:end]).strip("\n")
        if piece.strip():
            chunks.append(piece)
        start = end
    return chunks or [source]


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
    tags = [t for t in cell.metadata.get("tags", []) if not t.startswith("deck-") or t == OUTPUT_ONLY_TAG]
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
    code_used = 0  # lines of code on the current slide
    setup = setup_cells(nb)

    def add(cell: nbformat.NotebookNode, kind: str) -> None:
        cell.metadata["slideshow"] = {"slide_type": kind}
        deck.cells.append(cell)

    def new_slide_with_title() -> None:
        nonlocal used, code_used
        title = nbformat.v4.new_markdown_cell(f"### {CONTINUED[language].format(heading=heading)}"
                                              if heading else "")
        code_used = 0
        if heading:
            add(title, "slide")
            used = markdown_px(title.source)
        else:
            used = 0

    def place(cell: nbformat.NotebookNode, lines: int) -> None:
        """Put a code cell showing ``lines`` lines of code on the current slide, or on a new one."""
        nonlocal used, code_used
        _styled(cell, SLIDE_HEIGHT_PX)
        height = code_px(cell)
        if used + height > SLIDE_HEIGHT_PX or code_used + lines > MAX_CODE_LINES:
            new_slide_with_title()
            _styled(cell, SLIDE_HEIGHT_PX - used)  # alone on a slide: a smaller font, then a shorter output
            if used + code_px(cell) > SLIDE_HEIGHT_PX:
                _cut_output(cell, SLIDE_HEIGHT_PX - used, language)
            if used + code_px(cell) > SLIDE_HEIGHT_PX and cell.outputs and cell.source.strip():
                # still too tall (a figure or a table cannot be cut): the code here, its outputs on the next slide
                shown = copy.deepcopy(cell)
                cell.outputs = []
                _styled(cell, SLIDE_HEIGHT_PX - used)
                add(cell, "-")
                new_slide_with_title()
                cell = shown
                cell.id = f"{cell.id}-outputs"
                cell.metadata["tags"] = [*cell.metadata.get("tags", []), OUTPUT_ONLY_TAG]
                _styled(cell, SLIDE_HEIGHT_PX - used)
                lines = 0
            height = code_px(cell)
        add(cell, "-")
        used += height
        code_used += lines

    for index, original in enumerate(source.cells):
        if not in_deck(original) or index in setup:
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
                        used, code_used = markdown_px(part), 0
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
            cell.source = shown_lines(original)
            if figures_only(original):  # the figures alone, as a cell whose code is on no slide
                cell.source = ""
                cell.outputs = figure_outputs(cell)
                cell.metadata["tags"] = [*cell.metadata.get("tags", []), OUTPUT_ONLY_TAG]
            enlarge_figures(cell)
            pieces = code_chunks(cell.source) if visual_lines(cell.source) > MAX_CODE_LINES else [cell.source]
            if not cell.source and not cell.outputs:  # figures only, but not executed: nothing to show
                pieces = []
            for number, piece in enumerate(pieces):
                part = copy.deepcopy(cell)
                part.source = piece
                if number < len(pieces) - 1:  # the outputs come with the last piece
                    part.outputs = []
                    part.execution_count = None
                if number:
                    part.id = f"{cell.id}-{number + 1}"
                    code_used = MAX_CODE_LINES  # each further piece on a slide "(continued)" of its own
                place(part, visual_lines(piece))
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
    items = [n for n, row in enumerate(rows) if re.match(r"(\d+\.|[-*]) ", row)]
    if len(items) > 1 and items[0] == 0 and markdown_px(block) > room:  # a list too tall: cut between its items
        return ["\n".join(rows[a:b]) for a, b in zip(items, [*items[1:], len(rows)], strict=True)]
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
