"""Cutting a markdown cell without cutting a fenced code block or a ``$$`` formula: the translation catalogues
(tools/translate.py) cut it into paragraphs, the lecture decks (tools/lecture/deck.py) into paragraphs and at headings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


def fenced(lines: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """Each line, with whether it lies inside a fenced block or a ``$$`` formula opened on an earlier line."""
    fence = None  # the open fence: "```", "$$" or None
    for line in lines:
        yield line, fence is not None
        stripped = line.strip()
        if fence in (None, "```") and stripped.startswith("```"):
            fence = None if fence else "```"
        elif fence in (None, "$$") and stripped.count("$$") % 2:  # a formula opens or closes on this line
            fence = None if fence else "$$"


def split_blocks(markdown: str) -> list[str]:
    """Cut a markdown cell into blocks at its blank lines, never inside a ``$$`` formula or a fenced block."""
    blocks, lines = [], []
    for line, inside in fenced(markdown.split("\n")):
        if not inside and not line.strip() and lines:
            blocks.append("\n".join(lines))
            lines = []
        elif line.strip() or lines:
            lines.append(line)
    if lines:
        blocks.append("\n".join(lines))
    return blocks
