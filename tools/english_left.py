"""What a translated reader edition still prints or draws in English, read from its stored outputs.

    python -m tools.english_left [NOTEBOOK ...]   # default: zh-CN/chapters/; lists each English line, then counts

A printed line (a stream, a result's ``text/plain``, an error's name and message) or a text of a stored SVG figure
carries English when it has a word that a translator could translate. Not words in that sense: identifiers and code
(``valid_lens``, ``X.view(6, 4)``, ``dtype=torch.int32``), numbers and units, names written with capitals (``GQA``,
``PyTorch``, ``ValueError``), a processor's name (``Intel(R) Xeon(R) Processor``, up to the next comma), a model's
name, an address, Python's and PyTorch's own words in a repr (``True``, ``tensor``, ``nan``) and a few names of
functions that Chinese text keeps too (``softmax``). tests/test_chinese_output.py holds the Chinese reader edition
to at most 10% such lines, and its figures to none.
"""

from __future__ import annotations

import html
import json
import re
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EDITION = ROOT / "zh-CN" / "chapters"
CODE = re.compile(r"`[^`]*`"  # a code span
                  r"|\$[^$]+\$"  # math in a figure's text: $n_{kv} = 6$, drawn by mathtext
                  r"|https?://\S+"  # an address
                  r"|[A-Za-z_][\w']*(?:\.\w+)+"  # a dotted name: torch.float32, X.view, d2l.masked_softmax
                  r"|\w*_\w*"  # a snake_case name: valid_lens, num_heads
                  r"|[A-Za-z]\w*(?=\()"  # a call: softmax(, tensor(, causal_mask(
                  r"|[A-Za-z]\w*(?==)"  # a keyword argument: dtype=, is_causal=
                  r"|\w*\d\w*"  # a word with a digit: float16, d2l, 1e9, 4x
                  r"|\\[A-Za-z]+",  # a TeX command outside $...$
                  flags=re.ASCII)  # \w: letters, digits and _, never a Chinese character
MACHINE = re.compile(r"\b(?:Intel|AMD|Apple|Arm|NVIDIA)\b[^,;|，；（）]*")  # a processor's name: Intel(R) Xeon(R) ...
WORD = re.compile(r"[A-Za-z]{2,}")
KEPT = {  # words that Chinese text keeps as they are
    "True", "False", "None", "nan", "inf", "tensor", "dtype", "torch", "device", "cpu", "cuda", "mps", "meta", "grad",
    "softmax", "logsumexp", "einsum", "ms", "us", "ns", "Hz", "GHz", "Tensor",  # units: 时钟频率（Hz）
    "Transformer", "Llama", "Mistral", "Falcon", "Qwen", "Gemma",  # names of models
    "def", "return", "raise", "import", "lambda", "int", "float", "bool", "str",  # printed code
}


def english_words(text: str) -> list[str]:
    """The words of ``text`` that a translator could translate (see the module's docstring)."""
    words = WORD.findall(CODE.sub(" ", MACHINE.sub(" ", text)))
    return [word for word in words
            if word not in KEPT and not re.fullmatch(r"[A-Z][A-Z]+s?|[A-Za-z][a-z]*[A-Z]\w*", word)]


def printed_lines(notebook: Path) -> Iterator[tuple[int, str]]:
    """(cell index, line) for every non-empty line the stored outputs print, figures left out."""
    for index, cell in enumerate(json.loads(notebook.read_text(encoding="utf-8"))["cells"]):
        for output in cell.get("outputs", []):
            kind, data = output["output_type"], output.get("data", {})
            if kind == "stream":
                text = "".join(output["text"])
            elif kind == "error":
                text = f"{output['ename']}: {output['evalue']}"
            elif not any(key.startswith("image/") for key in data):
                text = "".join(data.get("text/plain", ""))
            else:
                text = ""
            yield from ((index, line) for line in text.splitlines() if line.strip())


SVG = "{http://www.w3.org/2000/svg}"
TEXT_GROUP = re.compile(r"text_\d+")  # matplotlib's id of the group that draws one text


def svg_texts(svg: str) -> list[str]:
    """The texts an SVG drawn by matplotlib shows, in either of its ways of writing text.

    With ``svg.fonttype: "none"`` a text is a ``<text>`` element, drawn in the viewer's fonts. With ``"path"`` (the
    chapters' setting: no viewer needs a font) it is a group ``<g id="text_N">`` of glyph outlines, which
    matplotlib opens with the text as a comment, ``<!-- 注意力权重 -->`` (escaped as XML, "--" written "- -").
    """
    root = ElementTree.fromstring(svg, ElementTree.XMLParser(target=ElementTree.TreeBuilder(insert_comments=True)))
    found = ["".join(element.itertext()).strip() for element in root.iter(f"{SVG}text")]
    for group in root.iter(f"{SVG}g"):
        if TEXT_GROUP.fullmatch(group.get("id", "")):
            comment = next((child for child in group if child.tag is ElementTree.Comment), None)
            found.append(html.unescape(comment.text).strip() if comment is not None and comment.text else "")
    return [text for text in found if text]


def figure_texts(notebook: Path) -> Iterator[tuple[int, str]]:
    """(cell index, text) for every text of the stored SVG figures (:func:`svg_texts`; the PNG beside an SVG draws
    the same text; a figure stored as PNG alone has none to read)."""
    for index, cell in enumerate(json.loads(notebook.read_text(encoding="utf-8"))["cells"]):
        for output in cell.get("outputs", []):
            svg = output.get("data", {}).get("image/svg+xml")
            if svg:
                yield from ((index, text) for text in svg_texts("".join(svg) if isinstance(svg, list) else svg))


def png_figures(notebook: Path) -> list[int]:
    """The cells whose stored figure is a PNG without an SVG beside it, whose text cannot be read back."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [index for index, cell in enumerate(cells) for output in cell.get("outputs", [])
            if "image/png" in output.get("data", {}) and "image/svg+xml" not in output.get("data", {})]


def main(argv: list[str]) -> int:
    notebooks = [Path(arg) for arg in argv] or sorted(EDITION.glob("[0-9][0-9]_*.ipynb"))
    lines = english = figures = 0
    for notebook in notebooks:
        found = [(index, line) for index, line in printed_lines(notebook)]
        left = [(index, line) for index, line in found if english_words(line)]
        drawn = [(index, text) for index, text in figure_texts(notebook) if english_words(text)]
        for index, line in left:
            print(f"{notebook.name[:2]} cell {index:>3} printed: {line.strip()[:110]}")
        for index, text in drawn:
            print(f"{notebook.name[:2]} cell {index:>3} drawn:   {text[:110]}")
        pngs = png_figures(notebook)
        if pngs:
            print(f"{notebook.name[:2]}: PNG figures, text not readable, in cells {pngs}")
        lines, english, figures = lines + len(found), english + len(left), figures + len(drawn)
    share = english / lines if lines else 0.0
    print(f"{english} of {lines} printed lines carry English ({share:.0%}); {figures} figure texts are English")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
