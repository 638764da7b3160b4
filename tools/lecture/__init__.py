"""Lecture mode: slide metadata on the chapters, and offline reveal.js slides.

From the repository root (``make slides`` runs the second)::

    python -m tools.lecture metadata notebooks/*.ipynb
    python -m tools.lecture slides --assets build/vendor --out build/slides notebooks/*.ipynb

``metadata`` sets ``cell.metadata.slideshow.slide_type`` on every cell from the rules in :func:`slide_types`.
It is idempotent: run it again whenever a chapter changes (tests/test_lecture.py checks that the stored
metadata is current). JupyterLab's live slideshow (jupyterlab-rise) and the slides below both read it.

Nothing is fetched when a slide is shown. reveal.js and MathJax come from two PyPI packages installed into
``--assets`` by ``make slides`` (pinned with hashes in requirements-assets.txt): ``sphinx-revealjs`` ships
reveal.js (``_static/revealjs``) and ``jupyter-server-mathjax`` ships MathJax 2 (``static``). They are copied
next to the slides into ``_static/``, and the templates in ``templates/`` load them from there instead of
nbconvert's CDN addresses (no require.js, jQuery or mermaid is loaded).

The chapters as web pages to read are the book (tools/book, ``make book`` and, solved, ``make html``), which
replaced the static pages this module made; it uses the same MathJax (:class:`Assets`) and checks its pages with
:func:`offline_problems`.
"""

from __future__ import annotations

import base64
import copy
import html
import re
import shutil
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
from nbconvert import SlidesExporter
from nbconvert.preprocessors import Preprocessor

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = "_static"
REVEAL_URL_PREFIX = f"{STATIC}/reveal.js"
MATHJAX_URL = f"{STATIC}/mathjax/MathJax.js"

# --- slide metadata -------------------------------------------------------------------------------------

SLIDE_LINES = 20  # lines of text that fit on one 960 x 700 reveal.js slide (nbconvert's 20 px slide font)
TEXT_WIDTH = 72  # characters of prose on one slide line; longer markdown lines wrap
CODE_WIDTH = 90  # characters of code or printed output on one slide line
LINE_PX = 30  # one line of slide text in pixels, to count a picture as lines
SLIDE_WIDTH_PX = 900  # pictures wider than this are scaled down to it
SETUP_MAX_LINES = 8  # a longer first code cell (the imports) is skipped on the slides
RISE_SETTINGS = {"scroll": True}  # notebook metadata for jupyterlab-rise: tall slides scroll


def _first_line(cell: nbformat.NotebookNode) -> str:
    lines = cell.source.strip().splitlines()
    return lines[0] if lines else ""


def _png_height(encoded: str, shown: dict | None = None) -> int:
    """Displayed height in pixels of a base64 PNG, scaled down to the slide width.

    ``shown`` is the output's metadata for the PNG: a "retina" PNG, drawn at twice the resolution, declares the
    ``width`` and ``height`` it is shown at, half its pixels.
    """
    head = base64.b64decode("".join(encoded.split())[:44])  # the IHDR chunk: width and height at bytes 16..24
    width, height = struct.unpack(">II", head[16:24])
    if shown and "width" in shown and "height" in shown:
        width, height = shown["width"], shown["height"]
    return round(height * min(1.0, SLIDE_WIDTH_PX / max(width, 1)))


PX_PER_UNIT = {"": 1.0, "px": 1.0, "pt": 4 / 3}  # CSS: 96 px = 72 pt = 1 in; matplotlib writes its SVG sizes in pt


def _svg_height(svg: str) -> int:
    """Displayed height in pixels of an SVG with ``width`` and ``height`` in pixels or points, scaled to the slide
    width."""
    size = {name: float(value) * PX_PER_UNIT[unit]
            for name, value, unit in re.findall(r'\b(width|height)="([\d.]+)(px|pt|)"', svg[:600])}
    width, height = size.get("width", SLIDE_WIDTH_PX), size.get("height", LINE_PX)
    return round(height * min(1.0, SLIDE_WIDTH_PX / max(width, 1)))


def _wrapped_lines(text: str, width: int) -> int:
    return sum(max(1, -(-len(line) // width)) for line in text.splitlines())


# A comment line that only steers the tests, e.g. "# NBVAL_IGNORE_OUTPUT  (a live widget: ...)" (nbval's marks).
TEST_MARKER = re.compile(r"^[ \t]*#[ \t]*NBVAL_[A-Z_]+\b.*(?:\n|$)", re.MULTILINE)


def hide_test_markers(source: str) -> str:
    """``source`` without its test-marker comment lines (``# NBVAL_IGNORE_OUTPUT``, ``# NBVAL_SKIP``, ...)."""
    return TEST_MARKER.sub("", source)


def cell_lines(cell: nbformat.NotebookNode) -> int:
    """Rough height of a cell on a slide, in lines of text: its wrapped source plus its outputs."""
    if cell.cell_type == "markdown":
        headings = sum(line.startswith("#") for line in cell.source.splitlines())  # twice the size
        return _wrapped_lines(cell.source, TEXT_WIDTH) + headings
    lines = _wrapped_lines(hide_test_markers(cell.source), CODE_WIDTH)  # the slides do not show the markers
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            lines += _wrapped_lines(output.text, CODE_WIDTH)
        elif output.output_type in ("execute_result", "display_data"):
            data = output.data
            if "image/svg+xml" in data:  # a figure stored as SVG and PNG: the slides show the SVG
                lines += -(-_svg_height(data["image/svg+xml"]) // LINE_PX)
            elif "image/png" in data:
                lines += -(-_png_height(data["image/png"], output.get("metadata", {}).get("image/png")) // LINE_PX)
            else:
                lines += _wrapped_lines(str(data.get("text/plain", "")), CODE_WIDTH)
        elif output.output_type == "error":
            lines += len(output.traceback)
    return lines


INSTALL_TAG = "colab-install"  # the tag of tools/colab.py's install cell


def slide_types(nb: nbformat.NotebookNode) -> list[str]:
    """The slide type of each cell, from the chapter's structure; the same notebook always gets the same list.

    - the title cell (the first cell) and each ``## `` section heading start a new slide;
    - a ``### `` sub-heading starts a subslide (below its section in reveal.js's 2-D navigation);
    - the first code cell (the imports) is skipped when it is longer than ``SETUP_MAX_LINES`` lines;
      an empty cell and the Colab install cell (tagged ``colab-install``, see tools/colab.py) are always skipped;
    - a cell that would overflow the current (sub)slide (about ``SLIDE_LINES`` lines) starts a subslide;
    - a code cell right after a markdown cell that ends with a question is a fragment: the lecturer asks,
      the class predicts, the next key press shows the answer;
    - every other cell continues the current slide (``"-"``).
    """
    types = []
    used = 0  # lines already on the current (sub)slide
    seen_code = False
    previous = None  # the previous cell that is shown
    for index, cell in enumerate(nb.cells):
        if INSTALL_TAG in cell.metadata.get("tags", []):  # only Colab needs it, and it prints nothing
            types.append("skip")
            continue
        lines = cell_lines(cell)
        first = _first_line(cell)
        is_setup = cell.cell_type == "code" and not seen_code
        seen_code = seen_code or cell.cell_type == "code"
        if not cell.source.strip() or (is_setup and len(cell.source.splitlines()) > SETUP_MAX_LINES):
            types.append("skip")
            continue
        if cell.cell_type == "markdown" and (index == 0 or first.startswith(("# ", "## "))):
            kind = "slide"
        elif cell.cell_type == "markdown" and first.startswith("### "):
            kind = "subslide"
        elif used > 0 and used + lines > SLIDE_LINES:
            kind = "subslide"
        elif (cell.cell_type == "code" and previous is not None and previous.cell_type == "markdown"
              and previous.source.rstrip().endswith("?")):
            kind = "fragment"
        else:
            kind = "-"
        used = lines if kind in ("slide", "subslide") else used + lines
        types.append(kind)
        previous = cell
    return types


def apply_slide_metadata(nb: nbformat.NotebookNode) -> bool:
    """Set ``metadata.slideshow.slide_type`` on every cell (and the RISE settings); True if anything changed.

    Other cell metadata (tags, nbval marks) is kept. Running it twice changes nothing the second time.
    """
    changed = nb.metadata.get("rise") != RISE_SETTINGS
    nb.metadata["rise"] = dict(RISE_SETTINGS)
    for cell, kind in zip(nb.cells, slide_types(nb), strict=True):
        if cell.metadata.get("slideshow") != {"slide_type": kind}:
            cell.metadata["slideshow"] = {"slide_type": kind}
            changed = True
    return changed


def has_slide_metadata(nb: nbformat.NotebookNode) -> bool:
    return any("slideshow" in cell.metadata for cell in nb.cells)


def write_slide_metadata(paths: Iterable[Path]) -> list[Path]:
    """Apply :func:`apply_slide_metadata` to notebook files in place; returns the files that changed."""
    changed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if apply_slide_metadata(nb):
            nbformat.write(nb, path)
            changed.append(Path(path))
    return changed


# --- exporters -------------------------------------------------------------------------------------------

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = "[An interactive widget is here: open the notebook in JupyterLab to use it.]"


class HideTestMarkers(Preprocessor):
    """Drop the test-marker lines from code cells: they are for CI, not for the audience of a slide."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            cell.source = hide_test_markers(cell.source)
        return cell, resources


class StaticWidgets(Preprocessor):
    """Replace live widgets by a short note, so no widget manager has to be loaded from a CDN."""

    def preprocess(self, nb, resources):
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            if WIDGET_MIME in output.get("data", {}):
                output.data = nbformat.from_dict({"text/plain": WIDGET_NOTE})
        return cell, resources


# Our templates (templates/<name>/) extend nbconvert's; the shared MathJax snippet sits in templates/ itself.
TEMPLATE_OPTIONS = {"extra_template_basedirs": [str(TEMPLATES)], "extra_template_paths": [str(TEMPLATES)],
                    "mathjax_url": MATHJAX_URL}


def _exporter(template_name: str, reveal_scroll: bool) -> SlidesExporter:
    # No In [n]: / Out[n]: prompts on slides: the code gets the whole width.
    exporter = SlidesExporter(template_name=template_name, reveal_url_prefix=REVEAL_URL_PREFIX,
                              reveal_scroll=reveal_scroll, exclude_input_prompt=True, exclude_output_prompt=True,
                              **TEMPLATE_OPTIONS)
    exporter.register_preprocessor(StaticWidgets(), enabled=True)
    exporter.register_preprocessor(HideTestMarkers(), enabled=True)
    return exporter


def slides_exporter() -> SlidesExporter:
    """The exporter of the handouts (templates/offline_slides): the whole notebook, tall slides scroll."""
    return _exporter("offline_slides", reveal_scroll=True)


def deck_exporter() -> SlidesExporter:
    """The exporter of the lecture decks (templates/offline_deck): numbered slides, fitted by tools/lecture/deck.py."""
    return _exporter("offline_deck", reveal_scroll=False)


def render_deck(nb: nbformat.NotebookNode, name: str) -> str:
    """The chapter's lecture deck (HTML text): the cells it selects, fitted to the slides, no solution shown."""
    from tools.lecture.deck import deck_notebook

    deck = deck_notebook(nb)
    body, _ = deck_exporter().from_notebook_node(deck, resources={"metadata": {"name": chapter_title(nb, name)}})
    return _with_language(body, nb)


def render_slides(nb: nbformat.NotebookNode, name: str) -> str:
    """One chapter as reveal.js slides (HTML text) that load reveal.js and MathJax from ``_static/``."""
    if not has_slide_metadata(nb):
        nb = copy.deepcopy(nb)
        apply_slide_metadata(nb)
    body, _ = slides_exporter().from_notebook_node(nb, resources={"metadata": {"name": chapter_title(nb, name)}})
    return _with_language(body, nb)


def notebook_language(nb: nbformat.NotebookNode) -> str:
    """The page language of a chapter: "zh-CN" for the Chinese edition (its cell tagged ``language``), else "en"."""
    switch = [cell for cell in nb.cells if "language" in cell.get("metadata", {}).get("tags", [])]
    return "zh-CN" if switch and 'set_language("zh_CN")' in switch[0].source else "en"


def _with_language(page: str, nb: nbformat.NotebookNode) -> str:
    """Tell the browser the page's language (fonts, hyphenation, screen readers); the templates say "en"."""
    return page.replace('<html lang="en">', f'<html lang="{notebook_language(nb)}">', 1)


# --- assets ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assets:
    """Where the installed reveal.js and MathJax files are."""

    reveal: Path  # holds dist/ and plugin/
    mathjax: Path  # holds MathJax.js

    @classmethod
    def find(cls, vendor: Path) -> Assets:
        assets = cls(reveal=Path(vendor) / "sphinx_revealjs" / "_static" / "revealjs",
                     mathjax=Path(vendor) / "jupyter_server_mathjax" / "static")
        for needed in (assets.reveal / "dist" / "reveal.js", assets.mathjax / "MathJax.js"):
            if not needed.is_file():
                raise FileNotFoundError(
                    f"vendor: expected {needed} (from tools/lecture/requirements-assets.txt), but it is missing;"
                    " `make slides` (or `make book`) installs it")
        return assets

    def copy_to(self, out_dir: Path, reveal: bool) -> None:
        """Copy MathJax (and reveal.js's dist/ and notes plugin if ``reveal``) into ``out_dir/_static``."""
        static = Path(out_dir) / STATIC
        no_maps = shutil.ignore_patterns("*.map")
        shutil.copytree(self.mathjax, static / "mathjax", dirs_exist_ok=True)
        if reveal:
            shutil.copytree(self.reveal / "dist", static / "reveal.js" / "dist", ignore=no_maps, dirs_exist_ok=True)
            shutil.copytree(self.reveal / "plugin" / "notes", static / "reveal.js" / "plugin" / "notes",
                            ignore=no_maps, dirs_exist_ok=True)
            shutil.copy2(self.reveal / "LICENSE", static / "reveal.js" / "LICENSE")


class _Resources(HTMLParser):
    """Collects the addresses a page loads: script src, link href, img/iframe/source/embed src."""

    LOADS = {"script": "src", "link": "href", "img": "src", "iframe": "src", "source": "src", "embed": "src"}

    def __init__(self):
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        attribute = self.LOADS.get(tag)
        value = dict(attrs).get(attribute) if attribute else None
        if value:
            self.urls.append((tag, value))


def loaded_urls(page: str) -> list[tuple[str, str]]:
    """(tag, address) of every script, style sheet, picture or frame that ``page`` loads."""
    parser = _Resources()
    parser.feed(page)
    return parser.urls


def offline_problems(page: str, folder: Path | None = None) -> list[str]:
    """Why ``page`` would not work offline: remote addresses and, if ``folder`` is given, missing local files."""
    problems = []
    for tag, url in loaded_urls(page):
        parts = urlsplit(url)
        if parts.scheme == "data":
            continue
        if parts.scheme or parts.netloc:
            problems.append(f"<{tag}> loads {url} from the network")
        elif folder is not None and not (Path(folder) / unquote(parts.path)).is_file():
            problems.append(f"<{tag}> loads {url}, which is not in {folder}")
    return problems


# --- whole collection ------------------------------------------------------------------------------------


def chapter_title(nb: nbformat.NotebookNode, fallback: str) -> str:
    """The chapter's ``# `` title from its first cell, e.g. ``00 · Start here``."""
    for cell in nb.cells[:1]:
        first = _first_line(cell)
        if cell.cell_type == "markdown" and first.startswith("# "):
            return first[2:].strip()
    return fallback


INDEX_PAGE = """<!DOCTYPE html>
<html lang="{language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{heading}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 44em; margin: 3em auto; padding: 0 1em; line-height: 1.5; }}
ul {{ list-style: none; padding-left: 0; }}
li {{ margin: 0.4em 0; }}
a {{ text-decoration: none; }}
</style>
</head>
<body>
<h1>{heading}</h1>
<p>{intro}</p>
<ul>
{items}
</ul>
</body>
</html>
"""


# The index page's heading and introduction in each page language
INDEX_TEXT = {
    "en": ("Multi-head attention: lecture slides",
           "One lecture deck per chapter, and the whole chapter as a handout. Arrow keys move, Esc shows the "
           "overview, F is full screen, S opens the speaker notes."),
    "zh-CN": ("多头注意力：课堂幻灯片",
              "每章一套课堂幻灯片，另有整章讲义。方向键翻页，Esc 显示总览，F 全屏，S 打开演讲者备注。"),
}


def render_index(entries: Sequence[tuple[str, ...]], heading: str, intro: str, language: str = "en") -> str:
    """An index page linking ``(title, href, ...)`` entries in the given order (chapter 00 first); further
    ``(label, href)`` pairs in an entry become further links on its line (the handout)."""
    items = []
    for title, href, *more in entries:
        extra = "".join(f' · <a href="{html.escape(more[i + 1])}">{html.escape(more[i])}</a>'
                        for i in range(0, len(more), 2))
        items.append(f'<li><a href="{html.escape(href)}">{html.escape(title)}</a>{extra}</li>')
    return INDEX_PAGE.format(heading=html.escape(heading), intro=html.escape(intro), items="\n".join(items),
                             language=language)


HANDOUT_LABEL = {"en": "handout (the whole chapter)", "zh-CN": "讲义（整章）"}
HANDOUTS = ("solved", "student", "none")


def student_handout(nb: nbformat.NotebookNode, path: Path) -> nbformat.NotebookNode:
    """The whole chapter without solutions (tools.editions.student_notebook), with slide metadata of its own."""
    from tools.editions import chapter_prefix, student_notebook

    language = "zh_CN" if notebook_language(nb) == "zh-CN" else "en"
    student = student_notebook(nb, chapter_prefix(path), language)
    for cell in student.cells:
        cell.metadata.pop("slideshow", None)
    apply_slide_metadata(student)
    return student


def build(notebooks: Sequence[Path], out_dir: Path, vendor: Path | None, handout: str = "solved") -> list[Path]:
    """Write each chapter's lecture deck ``NN_name.slides.html`` (tools/lecture/deck.py: the cells the chapter
    selects, no solution shown), its handout ``NN_name.handout.html`` (the whole notebook, cell by cell:
    ``handout="solved"`` as it is, ``"student"`` without solutions, ``"none"``: no handout) and ``index.html``.

    With ``vendor`` (the folder requirements-assets.txt was installed into) the assets are copied next to
    the slides and every page is checked to load only files that exist there; raises RuntimeError if not.
    """
    if handout not in HANDOUTS:
        raise ValueError(f"handout: expected one of {HANDOUTS}, got {handout!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if vendor is not None:
        Assets.find(vendor).copy_to(out_dir, reveal=True)
    entries, written, problems, languages = [], [], [], set()
    for path in sorted(Path(p) for p in notebooks):
        nb = nbformat.read(path, as_version=4)
        language = notebook_language(nb)
        languages.add(language)
        pages = {f"{path.stem}.slides.html": render_deck(nb, path.stem)}
        if handout != "none":
            shown = student_handout(nb, path) if handout == "student" else nb
            pages[f"{path.stem}.handout.html"] = render_slides(shown, path.stem)
        for name, page in pages.items():
            (out_dir / name).write_text(page, encoding="utf-8")
            written.append(out_dir / name)
            problems += [f"{name}: {p}" for p in offline_problems(page, out_dir if vendor else None)]
        entry = [chapter_title(nb, path.stem), f"{path.stem}.slides.html"]
        if handout != "none":
            entry += [HANDOUT_LABEL[language], f"{path.stem}.handout.html"]
        entries.append(tuple(entry))
    language = languages.pop() if len(languages) == 1 else "en"
    heading, intro = INDEX_TEXT[language]
    index = out_dir / "index.html"
    index.write_text(render_index(entries, heading, intro, language), encoding="utf-8")
    written.append(index)
    if problems:
        raise RuntimeError("slides that would not work offline:\n" + "\n".join(problems))
    return written
