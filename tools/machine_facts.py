"""Facts of the machine that executed a notebook, kept out of its stored outputs.

    python -m tools.machine_facts scrub NOTEBOOK ...   # after executing: replace them in live-timing cells
    python -m tools.machine_facts check [NOTEBOOK ...] # list every stored fact of this machine (default: all editions)

A stored output is read on other machines, and checked against them by nbval, so it must not carry what only the
machine that ran it knows: its CPU model, its cache sizes, its number of cores. A live timing cell (one marked
``# NBVAL_IGNORE_OUTPUT``) prints them on purpose, for the reader who runs it; ``scrub`` replaces them in the stored
copy with a placeholder in angle quotes, ``‹CPU model›``, ``L2 ‹size›``, ``‹N› threads``, which reads the same in
every language. A checked cell must not print them at all: ``check`` (and tests/test_machine_facts.py, in
``make test``) lists them, so the mistake shows on the machine that made it.

What counts as a fact, read from this machine:
- the CPU model, as ``mha_chapters.bench.timing.cpuinfo_model`` reads it from /proc/cpuinfo;
- each data or unified cache, as ``machine_summary`` prints it (``L2 2048K``);
- the number of logical cores, where it is above 1, in the phrases the chapters print (``2 threads``, ``2 个线程``,
  ``logical_cores  2``, ``torch_threads  2``, ``2 cores``, ``2 个核心``, and the Chinese names of those two table
  rows as mha_lib's catalogue writes them, in a table's plain text and in its HTML); one thread is a setting, not a
  fact of the machine. Every text MIME type is searched alike: ``text/plain``, ``text/html``, SVG.

A recording (a JSON file under ``mha_chapters/bench/results/``) names the machine it was measured on, and a chapter
may print that: it is the recording's provenance, not a fact of the machine that executed the notebook. It has
one form, ``mha_chapters.bench.records.recorded_label`` ("recorded on AMD EPYC (cpu, 1 thread), torch 2.13.0+cpu,
2026-11-21"). ``recorded_labels`` prints that label from every recording's own fields, in English and in every
language of mha_lib's catalogue; ``find`` and ``scrub`` pass over those exact texts and look at everything else.
So a chapter executed on the machine that made a recording (an AMD EPYC printing its own AMD EPYC recording)
passes, while the same name printed in any other form, or with fields no recording has, is still a fact.
"""

from __future__ import annotations

import functools
import gettext
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
EDITIONS = ("notebooks", "chapters", "zh-CN/notebooks", "zh-CN/chapters")
IGNORE_MARK = "NBVAL_IGNORE_OUTPUT"
CPU_PLACEHOLDER, SIZE_PLACEHOLDER, COUNT_PLACEHOLDER = "‹CPU model›", "‹size›", "‹N›"
CORE_ROWS = ("logical_cores", "torch_threads")  # rows of chapter 07's CPU table (mha_chapters.batching.cpu_facts)
LOCALE = ROOT / "mha_chapters" / "locale"


def translators() -> list[Callable[[str], str]]:
    """English (the message itself) and the ``gettext`` of each language of mha_chapters' catalogue."""
    folders = sorted(LOCALE.iterdir()) if LOCALE.is_dir() else []
    return [str] + [gettext.translation("mha_chapters", LOCALE, [folder.name], fallback=True).gettext
                    for folder in folders]


def row_names(names: tuple[str, ...] = CORE_ROWS) -> list[str]:
    """``names`` and their translations in every language of mha_lib's catalogue (the chapters print ``tr(name)``)."""
    return sorted({translate(name) for translate in translators() for name in names}, key=len, reverse=True)


def cpu_model() -> str | None:
    """This machine's CPU model as /proc/cpuinfo names it, or None (no such file: nothing precise to look for)."""
    from mha_chapters.bench.timing import cpuinfo_model  # imports torch: only when asked

    return cpuinfo_model()


def cache_sizes() -> dict[str, str]:
    """This machine's data and unified caches as ``machine_summary`` names them: ``{"L1d": "48K", "L2": "2048K"}``."""
    from mha_chapters.bench.timing import data_caches

    return data_caches()


def fact_patterns(model: str | None = None, caches: dict[str, str] | None = None,
                  cores: int | None = None) -> list[tuple[re.Pattern[str], str]]:
    """(pattern, replacement) for every fact of a machine; each argument defaults to this machine's."""
    model = cpu_model() if model is None else model
    caches = cache_sizes() if caches is None else caches
    cores = os.cpu_count() if cores is None else cores
    patterns = []
    if model:
        patterns.append((re.compile(re.escape(model)), CPU_PLACEHOLDER))
    for name, size in caches.items():
        patterns.append((re.compile(rf"\b{re.escape(name)} {re.escape(size)}(?!\w)"), f"{name} {SIZE_PLACEHOLDER}"))
    if cores and cores > 1:
        count = rf"(?<![\d.,]){cores}"
        patterns += [
            (re.compile(rf"{count}( threads?| cores?| ?个线程| ?个核心?)"), rf"{COUNT_PLACEHOLDER}\1"),
            # a table row, as text ("logical_cores  2") or as HTML ("<td>logical_cores</td><td ...>2</td>")
            (re.compile(rf"((?:{'|'.join(map(re.escape, row_names()))})(?:\s+|\s*</td>\s*<td[^>]*>\s*)){cores}\b"),
             rf"\g<1>{COUNT_PLACEHOLDER}"),
        ]
    return patterns


@functools.cache  # read once a process: find and scrub take them for every notebook
def recorded_labels(directory: Path | None = None) -> tuple[str, ...]:
    """Every recording's label (``recorded_label``) in English and each language of the catalogue, longest first.

    ``directory`` defaults to the package's results folder; every ``*.json`` under it counts. A batching result
    (``runs``) has one label per run, another recording (``flex/``) one label of its top-level fields; a file
    with neither (``explorer/``, whose machine no chapter prints) has none.
    """
    from mha_chapters.bench.records import load_result, provenance, recorded_label, results_directory

    directory = results_directory() if directory is None else directory
    languages = translators()
    labels = set()
    for path in sorted(directory.rglob("*.json")):
        data = json.loads(path.read_text())
        if "runs" in data:
            result = load_result(path)
            labels |= {provenance(result, run, translate) for run in result.runs for translate in languages}
        elif {"machine", "device", "threads", "torch", "date"} <= data.keys():
            labels |= {recorded_label(data["machine"], data["device"], data["threads"], data["torch"], data["date"],
                                      translate) for translate in languages}
    return tuple(sorted(labels, key=len, reverse=True))


def _labels_pattern(labels: Sequence[str]) -> re.Pattern[str]:
    """One pattern, a group, matching any of ``labels`` (one that never matches when there are none)."""
    return re.compile("(" + ("|".join(map(re.escape, labels)) if labels else "(?!)") + ")")


def output_texts(output: dict) -> Iterator[tuple[dict | list, str | int]]:
    """(container, key) of every text an output stores: a stream, a traceback line, each text-like MIME type.

    ``output`` as nbformat reads it: every text one string.
    """
    if "text" in output:
        yield output, "text"
    if "traceback" in output:
        for i in range(len(output["traceback"])):
            yield output["traceback"], i
    for key, value in output.get("data", {}).items():
        if isinstance(value, str) and (key.startswith("text/") or key.endswith("+xml")):
            yield output["data"], key


def _provenance_threads(output: dict, cores: int | None) -> dict | None:
    """The provenance a timing cell's report stores as metadata, where its thread count is this machine's cores.

    The report's text says ``‹N› threads`` once scrubbed; its metadata (``mha_chapters.bench.quiet.PROVENANCE_KEY``)
    must not keep the number the text hides. One thread, or a count other than the cores, is a setting.
    """
    from mha_chapters.bench.quiet import PROVENANCE_KEY

    cores = os.cpu_count() if cores is None else cores
    provenance = output.get("metadata", {}).get(PROVENANCE_KEY)
    if cores and cores > 1 and isinstance(provenance, dict) and provenance.get("threads") == cores:
        return provenance
    return None


def find(nb: dict, patterns: list[tuple[re.Pattern[str], str]] | None = None,
         labels: Sequence[str] | None = None, cores: int | None = None) -> list[tuple[int, str]]:
    """(cell index, matched text) for every fact of this machine in the stored outputs of ``nb``.

    ``labels`` are texts passed over, by default every recording's label (:func:`recorded_labels`); ``cores``
    defaults to this machine's (the thread count a timing's provenance metadata stores).
    """
    patterns = fact_patterns() if patterns is None else patterns
    label = _labels_pattern(recorded_labels() if labels is None else labels)
    found = []
    for index, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            for container, key in output_texts(output):
                text = label.sub("\0", container[key])  # a NUL: no fact matches across a label's place
                found += [(index, match.group(0)) for pattern, _ in patterns for match in pattern.finditer(text)]
            if _provenance_threads(output, cores) is not None:
                found.append((index, f"threads: {cores or os.cpu_count()} (provenance metadata)"))
    return found


def scrub(nb: dict, patterns: list[tuple[re.Pattern[str], str]] | None = None,
          labels: Sequence[str] | None = None, cores: int | None = None) -> int:
    """Replace the facts of this machine in the outputs of ``nb``'s live-timing cells; return how many.

    Only cells whose source carries ``# NBVAL_IGNORE_OUTPUT`` are touched: nbval compares the others, so
    changing them would hide a difference; a fact there is a mistake for ``check`` to report. A recording's label
    (``labels``, as for :func:`find`) is kept as it is.
    """
    patterns = fact_patterns() if patterns is None else patterns
    label = _labels_pattern(recorded_labels() if labels is None else labels)
    replaced = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or IGNORE_MARK not in "".join(cell["source"]):
            continue
        for output in cell.get("outputs", []):
            for container, key in output_texts(output):
                pieces = label.split(container[key])  # the labels at the odd places: the pattern is one group
                for i in range(0, len(pieces), 2):
                    for pattern, replacement in patterns:
                        pieces[i], count = pattern.subn(replacement, pieces[i])
                        replaced += count
                container[key] = "".join(pieces)
            provenance = _provenance_threads(output, cores)
            if provenance is not None:
                provenance["threads"] = COUNT_PLACEHOLDER
                replaced += 1
    return replaced


def _notebooks(paths: list[str]) -> list[Path]:
    if paths:
        return [Path(path) for path in paths]
    return sorted(path.relative_to(ROOT) for edition in EDITIONS for path in (ROOT / edition).glob("*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("scrub", "check"):
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    command, paths = argv[0], _notebooks(argv[1:])
    patterns, labels = fact_patterns(), recorded_labels()
    problems = 0
    for path in paths:
        nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        if command == "scrub" and scrub(nb, patterns, labels):
            nbformat.write(nb, path)
        for index, fact in find(nb, patterns, labels):
            problems += 1
            print(f"{path}: cell {index}: {fact!r}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
