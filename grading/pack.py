"""The instructor pack: what the course must not publish, kept by the lecturer outside this repository.

The public ``grading/chNN.py`` hold the questions, the hidden tests' structure and the variants' parameters; the
pack holds, per chapter, the written questions' model answers and rubrics and the variants' solutions (the answer
cell's code, a ``str.format`` template over the variant's parameters, whose value is the expected answer):

    {"schema": "mha-instructor-pack/1", "sample": false,
     "chapters": {"ch04": {"explain": {"explain1": {"model": {"en": ..., "zh_CN": ...},
                                                    "rubric": {"en": ..., "zh_CN": ...}}},
                           "variants": {"1": {"solution": "answer = (({a} + {c}) // 2, 0, ({a} + {c}) // 2, 0)"}}}}}

Its JSON Schema is ``grading/instructor-pack.schema.json``. The repository ships a *sample* pack,
``grading/sample-pack.json`` (``"sample": true``): its variants' solutions work, so that CI and ``make test-course``
run, and its model answers and rubrics are placeholders, not the course's. The pack in use: the one given to
:func:`use` (``tools/nbgrader_course.py --pack``), else ``$MHA_INSTRUCTOR_PACK``, else the sample.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCHEMA = HERE / "instructor-pack.schema.json"
SAMPLE = HERE / "sample-pack.json"
SCHEMA_ID = "mha-instructor-pack/1"

_chosen: Path | None = None
_loaded: dict[Path, dict] = {}


def use(path: Path | str | None) -> None:
    """Make ``path`` the pack that :func:`current` returns (None: back to the environment's or the sample)."""
    global _chosen
    _chosen = None if path is None else Path(path)
    if _chosen is not None:
        load(_chosen)  # a missing or malformed pack stops here, naming it


def path_in_use() -> Path:
    if _chosen is not None:
        return _chosen
    return Path(os.environ["MHA_INSTRUCTOR_PACK"]) if os.environ.get("MHA_INSTRUCTOR_PACK") else SAMPLE


def current() -> dict:
    return load(path_in_use())


def load(path: Path) -> dict:
    """The pack at ``path``, checked against its schema. Raises ValueError naming the file and what is wrong."""
    path = Path(path).resolve()
    if path not in _loaded:
        try:
            pack = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ValueError(f"instructor pack {path}: expected a readable JSON file, got {error}") from error
        check(pack, str(path))
        _loaded[path] = pack
    return _loaded[path]


def check(pack, where: str = "instructor pack") -> None:
    """Raise ValueError unless ``pack`` follows grading/instructor-pack.schema.json."""
    import jsonschema

    try:
        jsonschema.validate(pack, json.loads(SCHEMA.read_text()))
    except jsonschema.ValidationError as error:
        at = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise ValueError(f"{where}: at {at}: {error.message}") from None


def apply(module, prefix: str, pack: dict) -> None:
    """Fill the chapter module's written questions (model, rubric) and variants (solution) from the pack. A piece
    the pack lacks stops the course build, naming it."""
    entry = pack["chapters"].get(prefix)
    kind = "sample pack" if pack.get("sample") else "instructor pack"
    for explain in getattr(module, "EXPLAIN", []):
        texts = (entry or {}).get("explain", {}).get(explain.key)
        if texts is None:
            raise ValueError(f"the {kind} {path_in_use()} has no written answer for {prefix} {explain.key}: add "
                             f'"chapters": {{"{prefix}": {{"explain": {{"{explain.key}": {{"model": ..., '
                             '"rubric": ...}}}}}}')
        explain.model, explain.rubric = dict(texts["model"]), dict(texts["rubric"])
    for number, exercise in getattr(module, "EXERCISES", {}).items():
        variant = getattr(exercise, "variant", None)
        if variant is None:
            continue
        solution = (entry or {}).get("variants", {}).get(str(number), {}).get("solution")
        if solution is None:
            raise ValueError(f"the {kind} {path_in_use()} has no solution for {prefix} exercise {number}'s variant: "
                             f'add "chapters": {{"{prefix}": {{"variants": {{"{number}": {{"solution": ...}}}}}}}}')
        variant.solution = solution


def answer_texts(pack: dict) -> list[str]:
    """Every model answer and rubric text of a pack (for the test that the public tree holds none of them)."""
    return [text for entry in pack["chapters"].values() for explain in entry.get("explain", {}).values()
            for part in ("model", "rubric") for text in explain[part].values()]
