"""Tables for notebooks: aligned text that prints the same everywhere, shown as an HTML table in a notebook.

A monospaced font aligns the text's columns only where every character is one column or two: in JupyterLab's code
font a Chinese character is narrower than two Latin columns, so the columns right of Chinese text drift. So a
:class:`Table` is the text (``print`` writes it; nbval compares it as ``text/plain``) and also an HTML ``<table>``,
which a notebook shows when a cell passes the table to ``display`` (or ends with it): the browser lays the columns
out. JupyterLab shows it in an untrusted notebook too (it sanitises untrusted HTML and keeps tables), as do
nbconvert, the slides and the book.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from .i18n import N_, _

__all__ = ["CHAPTER_HEADERS", "Table", "display_width", "format_table", "tenth"]


# The column headers that the chapters' code cells pass to format_table, marked for mha_lib's catalogue: a Chinese
# chapter runs the same code cells, and format_table prints these headers in Chinese. Headers that are code
# (num_heads, W_k.weight, x_j) or units (MiB, FLOPs) stay as they are. tests/test_i18n.py fails when a chapter prints
# a worded header that is missing here.
CHAPTER_HEADERS = (
    N_("tensor"), N_("shape"), N_("stride"), N_("contiguous"), N_("shares memory with X"), N_("sample"),
    N_("sentence"), N_("head"), N_("needs"), N_("repeat"), N_("sample i"), N_("sentence i // num_heads"),
    N_("head i % num_heads"), N_("tokens x features"), N_("counted"), N_("counted, bias"), N_("model"),
    N_("standard layer"), N_("parameters"), N_("layers"), N_("W_k, W_v of the heads"), N_("kv heads"), N_("kind"),
    N_("head on t-1"), N_("head on 0"), N_("its weight"), N_("head zeroed"), N_("pair"), N_("local part"),
    N_("first part"), N_("local drop"), N_("first drop"), N_("mean weight on key t-1"), N_("mean weight on key 0"),
    N_("seed"), N_("heads on t-1"), N_("heads on 0"), N_("largest drop, one head zeroed"), N_("weight on t-1"),
    N_("weight on 0"), N_("held-out accuracy at the end"), N_("role"), N_("random heads, 90%"),
    N_("at initialisation"), N_("trained"), N_("trained - initial"), N_("trained above 95% of random"),
    N_("local part, t-1 head zeroed"), N_("first part, key-0 head zeroed"), N_("loop over samples"),
    N_("loop over heads"), N_("batched"), N_("scores shape"), N_("score bytes"), N_("calls"), N_("queries per call"),
    N_("implementation"), N_("counted (device)"), N_("device name contains"), N_("peak TFLOP/s"), N_("source"),
    N_("context"), N_("with cache"), N_("without"), N_("ratio"), N_("query heads"),
    N_("cache bytes per token (float32)"), N_("bytes per token"), N_("explicit (ms)"), N_("fused (ms)"),
    N_("explicit / fused"), N_("one score tensor (MiB)"), N_("tiles"), N_("counted bytes"),
    N_("measured peak bytes"), N_("tiled, measured peak bytes"), N_("explicit, measured peak bytes"), N_("value"),
    N_("min"), N_("median"), N_("max"), N_("page faults per explicit call"), N_("pages of scores + weights"),
    N_("datasheet peak TFLOP/s"),
    N_("new tokens"), N_("speed-up"), N_("floor of one head"), N_("one head"), N_("two heads"), N_("copies"),
    N_("bytes copied"), N_("step below ln(32)/2"), N_("largest fall in 50 steps"), N_("final loss"), N_("layer"),
    N_("previous-token score"), N_("induction score"), N_("heads zeroed"), N_("loss on the repeated part"),
    N_("one-layer model"), N_("induction scores, layer 2"), N_("copying score"), N_("rise"), N_("removed from"),
    N_("composition score"),
)


# A cell the HTML table right-aligns: a number, with thousands commas, a sign, an exponent or a unit after it.
_NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?( ?(%|x|×|ms|s|B|KiB|MiB|GiB|GFLOP/s))?")


class Table(str):
    """A table as aligned text (a ``str``: what ``print`` writes and nbval compares) that a notebook shows as HTML.

    ``headers`` and ``rows`` are the cells as text, ``caption`` a line above the table (``""``: none). Numeric
    columns are right-aligned in the HTML, the others left-aligned. ``display(table)`` shows the HTML table, with
    the text as its ``text/plain``; ``print(table)`` writes the text only.
    """

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str

    def __new__(cls, text: str, headers: Iterable[object], rows: Iterable[Iterable[object]],
                caption: str = "") -> Table:
        table = super().__new__(cls, text)
        table.headers = tuple(str(header) for header in headers)
        table.rows = tuple(tuple(str(cell) for cell in row) for row in rows)
        table.caption = caption
        return table

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle: the text and the cells
        return Table, (str(self), self.headers, self.rows, self.caption)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython's text/plain: the text, not its repr
        printer.text(str(self))

    def _repr_html_(self) -> str:
        right = [bool(column) and all(_NUMBER.fullmatch(cell.strip()) for cell in column if cell.strip())
                 for column in zip(*self.rows, strict=True)] if self.rows else [False] * len(self.headers)

        def row(tag: str, cells: Sequence[str]) -> str:
            return "<tr>" + "".join(f'<{tag} style="text-align: {"right" if r else "left"}">{html.escape(cell)}</{tag}>'
                                    for cell, r in zip(cells, right, strict=True)) + "</tr>"

        caption = f'<caption style="text-align: left">{html.escape(self.caption)}</caption>' if self.caption else ""
        body = "\n".join(row("td", cells) for cells in self.rows)  # a row a line: a readable diff of a stored output
        return f"<table>{caption}\n<thead>{row('th', self.headers)}</thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def format_table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> Table:
    """Lay out ``rows`` under ``headers`` in left-aligned columns separated by two spaces: a :class:`Table`.

    Tuples print as shapes, e.g. ``(2, 10, 100)``; everything else through ``str``. Headers are printed in the
    language of :func:`mha_chapters.set_language` when the catalogue has them; a Chinese character counts as two
    columns, as a monospaced font draws it. ``display(format_table(...))`` shows it in a notebook as an HTML table.
    """
    cells = [[_(str(h)) for h in headers]] + [[_cell(value) for value in row] for row in rows]
    for number, row in enumerate(cells[1:], start=1):
        if len(row) != len(headers):
            template = _("row {number} has {num_cells} cells but there are {num_headers} headers: {row}")
            raise ValueError(template.format(number=number, num_cells=len(row), num_headers=len(headers), row=row))
    widths = [max(display_width(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(cell + " " * (width - display_width(cell)) for cell, width in zip(row, widths, strict=True))
             .rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return Table("\n".join(lines), cells[0], cells[1:])


def tenth(value: float) -> str:
    """The tenth of [0, 1] that ``value`` lies in, e.g. ``tenth(0.244) == "0.2-0.3"`` (1.0 lies in "0.9-1.0").

    For numbers that another CPU computes a little differently: a model that has not converged is sensitive to
    rounding, and its statistics move in the third decimal between machines. Printed with two decimals, 0.244
    and 0.246 read 0.24 and 0.25; both lie in the same tenth. Its edges, 0.2 and 0.3, are far from either.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(_("value must be a number in [0, 1], got {value!r}").format(value=value))
    low = min(math.floor(value * 10), 9)
    return f"{low / 10:.1f}-{(low + 1) / 10:.1f}"


def display_width(text: str) -> int:
    """The columns ``text`` takes in a monospaced font: 2 for a wide (CJK) character, 1 for any other."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _cell(value: object) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)
