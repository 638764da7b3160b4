"""Plain-text tables for notebooks: aligned columns that print the same everywhere."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

from ..i18n import N_, _

__all__ = ["CHAPTER_HEADERS", "display_width", "format_table", "tenth"]


# The column headers that the chapters' code cells pass to format_table, marked for mha_lib's catalogue: a Chinese
# chapter runs the same code cells, and format_table prints these headers in Chinese. Headers that are code
# (num_heads, W_k.weight, x_j) or units (MiB, FLOPs) stay as they are. tests/test_i18n.py fails when a chapter prints
# a worded header that is missing here.
CHAPTER_HEADERS = (
    N_("tensor"), N_("shape"), N_("stride"), N_("contiguous"), N_("shares memory with X"), N_("sample"),
    N_("sentence"), N_("head"), N_("needs"), N_("repeat"), N_("sample i"), N_("sentence i // num_heads"),
    N_("head i % num_heads"), N_("tokens x features"), N_("counted"), N_("counted, bias"), N_("model"),
    N_("standard layer"), N_("parameters"), N_("layers"), N_("W_k, W_v of the heads"), N_("kv heads"), N_("kind"),
    N_("head on t-1"), N_("head on 0"), N_("weight"), N_("head zeroed"), N_("pair"), N_("local part"),
    N_("first part"), N_("local drop"), N_("first drop"), N_("mean weight on key t-1"), N_("mean weight on key 0"),
    N_("seed"), N_("heads"), N_("heads on t-1"), N_("heads on 0"), N_("largest drop, one head zeroed"),
    N_("weight on t-1"), N_("weight on 0"), N_("held-out accuracy at the end"), N_("role"), N_("random, 90%"),
    N_("initial"), N_("trained"), N_("trained - initial"), N_("above random"),
    N_("local, t-1 zeroed"), N_("first, key-0 zeroed"), N_("loop over samples"),
    N_("loop over heads"), N_("batched"), N_("scores shape"), N_("score bytes"), N_("calls"), N_("queries per call"),
    N_("implementation"), N_("counted (device)"), N_("device name contains"), N_("peak TFLOP/s"), N_("source"),
    N_("context"), N_("with cache"), N_("without"), N_("ratio"), N_("query heads"),
    N_("cache bytes per token (float32)"), N_("bytes per token"), N_("explicit (ms)"), N_("fused (ms)"),
    N_("explicit / fused"), N_("one score tensor (MiB)"), N_("tiles"), N_("counted bytes"),
    N_("measured peak bytes"), N_("tiled, measured peak bytes"), N_("explicit, measured peak bytes"), N_("value"),
    N_("min"), N_("median"), N_("max"), N_("page faults per explicit call"), N_("pages of scores + weights"),
    N_("datasheet peak TFLOP/s"),
    N_("new tokens"), N_("speed-up"), N_("floor of one head"), N_("one head"), N_("two heads"), N_("copies"),
    N_("bytes copied"),
)


def format_table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    """Lay out ``rows`` under ``headers`` in left-aligned columns separated by two spaces.

    Tuples print as shapes, e.g. ``(2, 10, 100)``; everything else through ``str``. Headers are printed in the
    language of :func:`mha_lib.i18n.set_language` when the catalogue has them; a Chinese character counts as two
    columns, as a monospaced font draws it.
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
    return "\n".join(lines)


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
