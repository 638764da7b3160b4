"""Each chapter keeps its prose short: at most 1,600 words in its markdown cells (whitespace-split words).

Chapter 08 (twelve pitfalls, each with its fix) has a cap of its own, at its present length.
"""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CAPS = {"08_pitfalls.ipynb": 2400}


def prose_words(path: Path) -> int:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum(len("".join(cell["source"]).split()) for cell in cells if cell["cell_type"] == "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_chapter_prose_within_its_cap(path):
    assert prose_words(path) <= CAPS.get(path.name, 1600)


def test_every_chapter_is_counted():
    assert len(NOTEBOOKS) == 14
