"""Plain-text tables for notebooks: aligned columns that print the same everywhere."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from ..i18n import _

__all__ = ["display_width", "format_table"]


def format_table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    """Lay out ``rows`` under ``headers`` in left-aligned columns separated by two spaces.

    Tuples print as shapes, e.g. ``(2, 10, 100)``; everything else through ``str``. Headers are printed in the
    language of :func:`mha_lib.i18n.set_language` when the catalogue has them; a Chinese character counts as two
    columns, as a monospaced font draws it.
    """
    cells = [[_(str(h)) for h in headers]] + [[_cell(value) for value in row] for row in rows]
    for number, row in enumerate(cells[1:], start=1):
        if len(row) != len(headers):
            raise ValueError(f"row {number} has {len(row)} cells but there are {len(headers)} headers: {row}")
    widths = [max(display_width(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(cell + " " * (width - display_width(cell)) for cell, width in zip(row, widths, strict=True))
             .rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def display_width(text: str) -> int:
    """The columns ``text`` takes in a monospaced font: 2 for a wide (CJK) character, 1 for any other."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _cell(value: object) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)
