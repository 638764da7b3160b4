"""Benchmark results as dataclasses: written with ``dataclasses.asdict``, read back with ``from_dict``.

A result file holds one :class:`BenchResult`: the provenance (date, versions, platform, command, machine
load) and one :class:`DeviceRun` per device, each with a :class:`BatchSweepRecord` and a
:class:`LengthSweepRecord`. The recorded files are package data (``mha_chapters/bench/results/*.json``), so
they travel with ``mha_lib`` into a wheel and are found with ``importlib.resources`` wherever it is
installed. ``from_dict`` refuses a malformed file with a ``ValueError`` naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import platform
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import torch

from mha_lib._validation import wrong_type

from ..i18n import N_, _
from .quiet import Provenance, require_quiet
from .timing import cpu_caches, threads_text

__all__ = [
    "BATCH_IMPLEMENTATIONS",
    "DEVICES",
    "LENGTH_IMPLEMENTATIONS",
    "SCHEMA",
    "BatchSweepRecord",
    "BenchResult",
    "DeviceRun",
    "LengthSweepRecord",
    "load_result",
    "load_results",
    "make_result",
    "newest_recording",
    "provenance",
    "recorded_label",
    "results_directory",
    "save_result",
    "short_machine_name",
    "threads_text",
]

SCHEMA = "mha-notebooks/bench_batching/1"
DEVICES = ("cpu", "cuda", "mps")
BATCH_IMPLEMENTATIONS = ("per_sample", "per_head", "batched")
LENGTH_IMPLEMENTATIONS = ("explicit", "sdpa")

Record = TypeVar("Record")


@dataclass
class BatchSweepRecord:
    """The loop-vs-batch sweep: ``median_s[implementation][i]`` seconds per call at ``batch_sizes[i]``.

    ``round_speedups[loop][i]``: the batched call's speed-up over ``loop`` ("per_sample" or "per_head") at
    ``batch_sizes[i]`` in each round of the interleaved timing, time(loop) / time(batched); files recorded before
    2026-12-04 have none.
    """

    batch_sizes: list[int]
    seq_len: int
    num_hiddens: int
    num_heads: int
    flops: list[int]
    median_s: dict[str, list[float]]
    round_speedups: dict[str, list[list[float]]] | None = None

    def check(self) -> None:
        _check_sizes(self.batch_sizes, "batch_sizes")
        _check_lists(self, ["flops"], len(self.batch_sizes))
        _check_medians(self.median_s, BATCH_IMPLEMENTATIONS, len(self.batch_sizes))
        for loop, rounds in (self.round_speedups or {}).items():
            if len(rounds) != len(self.batch_sizes) or not all(rounds) or min(min(r) for r in rounds) <= 0:
                template = _("must hold, for each of the {length} sizes, a list of positive ratios, got {rounds!r:.80}")
                raise _FieldError(f"round_speedups.{loop}", template.format(length=len(self.batch_sizes),
                                                                            rounds=rounds))


@dataclass
class LengthSweepRecord:
    """The cost-growth sweep: time per call for each ``seq_lens[i]``; peak memory on CUDA, else None."""

    seq_lens: list[int]
    batch_size: int
    num_hiddens: int
    num_heads: int
    flops: list[int]
    score_bytes: list[int]
    median_s: dict[str, list[float]]
    peak_memory_bytes: dict[str, list[int]] | None

    def check(self) -> None:
        _check_sizes(self.seq_lens, "seq_lens")
        _check_lists(self, ["flops", "score_bytes"], len(self.seq_lens))
        _check_medians(self.median_s, LENGTH_IMPLEMENTATIONS, len(self.seq_lens))
        if self.peak_memory_bytes is not None:
            _check_medians(self.peak_memory_bytes, LENGTH_IMPLEMENTATIONS, len(self.seq_lens), "peak_memory_bytes")


@dataclass
class DeviceRun:
    """Both sweeps on one device, with the device's name and the CPU threads PyTorch used."""

    device: str
    name: str
    threads: int
    dtype: str
    float32_matmul_precision: str
    peak_flops: float | None
    peak_flops_source: str | None
    batch_sweep: BatchSweepRecord
    length_sweep: LengthSweepRecord

    def check(self) -> None:
        if self.device not in DEVICES:
            template = _("must be one of {devices}, got {device!r}")
            raise _FieldError("device", template.format(devices=DEVICES, device=self.device))
        if self.threads < 1:
            raise _FieldError("threads", _("must be a positive integer, got {threads}").format(threads=self.threads))


@dataclass
class BenchResult:
    """One result file: its provenance and one run per device measured."""

    schema: str
    date: str
    torch: str
    python: str
    platform: str
    command: str
    min_run_time_s: float
    load_average_1min: float | None
    runs: list[DeviceRun]
    # the CPU's cache sizes, e.g. {"L1d": "48K", "L2": "2048K", "L3": "105M"} (timing.cpu_caches); older files
    # have none, and an empty dict means the operating system does not report them
    cpu_caches: dict[str, str] | None = None
    # the cores other processes kept busy in the second before the sweeps and used during them (quiet.py); files
    # recorded before 2026-12-02 have neither, and None means the operating system does not report them
    others_before_cores: float | None = None
    others_during_cores: float | None = None
    # the 1-minute load average as the watch started, after waiting for quiet (files before 2026-12-02: none)
    load_average_before: float | None = None

    def check(self) -> None:
        if self.schema != SCHEMA:
            template = _("must be {expected!r}, got {schema!r}")
            raise _FieldError("schema", template.format(expected=SCHEMA, schema=self.schema))
        try:
            datetime.date.fromisoformat(self.date)
        except ValueError:
            raise _FieldError("date", _("must be YYYY-MM-DD, got {date!r}").format(date=self.date)) from None
        if not self.runs:
            raise _FieldError("runs", _("must hold at least one run, got an empty list"))

    @classmethod
    def from_dict(cls, data: object, source: str = "result") -> BenchResult:
        """Build a result from parsed JSON; ``ValueError`` names ``source`` and the first wrong field."""
        try:
            return _build(cls, data)
        except _FieldError as error:
            where = f"{source}: {error.field}" if error.field else source
            raise ValueError(_("{where} {problem}").format(where=where, problem=error.problem)) from None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------- reading JSON into the dataclasses


class _FieldError(Exception):
    """A wrong field; ``field`` grows from the inside out ("median_s.batched" -> "runs[0].batch_sweep...")."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(field, problem)
        self.field, self.problem = field, problem

    def inside(self, outer: str) -> _FieldError:
        """The same error one level up: ``outer`` joined to the field path."""
        if not self.field:
            return _FieldError(outer, self.problem)
        joined = f"{outer}{self.field}" if self.field.startswith("[") else f"{outer}.{self.field}"
        return _FieldError(joined, self.problem)


def _build(cls: type[Record], data: object) -> Record:
    """``cls(**data)`` with every field converted to its annotated type, then ``check()``."""
    if not isinstance(data, dict):
        raise _FieldError("", _("must be an object, got {got}").format(got=_describe(data)))
    hints = typing.get_type_hints(cls)
    values = {}
    for field in dataclasses.fields(cls):
        if field.name not in data and field.default is not dataclasses.MISSING:
            continue  # a field added later: older files go without it
        if field.name not in data:
            raise _FieldError(field.name, _("is missing"))
        try:
            values[field.name] = _convert(hints[field.name], data[field.name])
        except _FieldError as error:
            raise error.inside(field.name) from None
    record = cls(**values)
    record.check()
    return record


def _convert(kind: Any, value: object) -> Any:
    """``value`` as ``kind`` (int, float, str, list[...], dict[str, ...], X | None or a record class)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):  # X | None
        if value is None and type(None) in args:
            return None
        (inner,) = [arg for arg in args if arg is not type(None)]
        return _convert(inner, value)
    if dataclasses.is_dataclass(kind):
        return _build(kind, value)
    if origin is list:
        if not isinstance(value, list):
            raise _FieldError("", _("must be a list, got {got}").format(got=_describe(value)))
        items = []
        for i, item in enumerate(value):
            try:
                items.append(_convert(args[0], item))
            except _FieldError as error:
                raise error.inside(f"[{i}]") from None
        return items
    if origin is dict:
        if not isinstance(value, dict):
            raise _FieldError("", _("must be an object, got {got}").format(got=_describe(value)))
        converted = {}
        for key, item in value.items():
            try:
                converted[key] = _convert(args[1], item)
            except _FieldError as error:
                raise error.inside(str(key)) from None
        return converted
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise _FieldError("", _("must be a finite number, got {value!r}").format(value=value))
        return float(value)
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    raise _FieldError("", _("must be {kind}, got {got}").format(kind=kind.__name__, got=_describe(value)))


def _describe(value: object) -> str:
    return f"{type(value).__name__} {value!r:.60}"


def _check_sizes(sizes: list[int], name: str) -> None:
    if not sizes or min(sizes) < 1:
        raise _FieldError(name, _("must list positive integers, got {sizes!r}").format(sizes=sizes))


def _check_lists(record: object, names: Sequence[str], length: int) -> None:
    for name in names:
        values = getattr(record, name)
        if len(values) != length or min(values) <= 0:
            template = _("must hold {length} positive numbers (one per size), got {values!r:.80}")
            raise _FieldError(name, template.format(length=length, values=values))


def _check_medians(table: dict[str, list], names: Sequence[str], length: int, field: str = "median_s") -> None:
    for name in names:
        values = table.get(name)
        if values is None:
            raise _FieldError(f"{field}.{name}", _("is missing"))
        if len(values) != length or min(values) <= 0:
            template = _("must hold {length} positive numbers (one per "
                         "size), got {num_values} values, smallest {smallest}")
            raise _FieldError(f"{field}.{name}", template.format(length=length, num_values=len(values),
                                                                 smallest=min(values, default=None)))


# ---------------------------------------------------------------- files


def results_directory() -> Path:
    """The folder of the recorded results inside the installed package (``mha_chapters/bench/results``).

    Found with ``importlib.resources``, so it is right for an editable install (the checkout), for a
    wheel (site-packages) and on Colab alike.
    """
    return Path(str(resources.files("mha_chapters.bench") / "results"))


# Where each kind of recording lives under results_directory(), and how its files begin: "<prefix>-<date>.json".
RECORDING_KINDS = {
    "batching": ("", None),  # chapters 07 and 10: benchmarks/bench_batching.py, <device>-<date>.json
    "flex": ("flex", None),  # chapter 11: benchmarks/bench_flex.py --record
    "explorer": ("explorer", "browser"),  # chapter 05: tests/browser/test_explorer_latency.py
}
_DATED = re.compile(r"^(?P<prefix>[a-z]+)-(?P<date>\d{4}-\d{2}-\d{2})\.json$")


def newest_recording(kind: str, device: str = "cpu", directory: str | Path | None = None) -> Path:
    """The newest recording of one kind (``RECORDING_KINDS``), by the date in its file name.

    A chapter or test names a recording by this rule, not by its file name, so a recording made again on a later day
    replaces the old one without an edit. ``device`` is the file's prefix for ``"batching"`` and ``"flex"``
    (``"cpu"``, ``"cuda"``); ``directory`` defaults to :func:`results_directory`.
    """
    if kind not in RECORDING_KINDS:
        raise ValueError(_("kind must be one of {kinds}, got {kind!r}").format(kinds=sorted(RECORDING_KINDS),
                                                                               kind=kind))
    folder, prefix = RECORDING_KINDS[kind]
    prefix = prefix or device
    root = results_directory() if directory is None else Path(directory)
    dated = sorted((match["date"], path) for path in (root / folder).glob(f"{prefix}-*.json")
                   if (match := _DATED.match(path.name)) and match["prefix"] == prefix)
    if not dated:
        template = _("no {kind} recording {prefix}-<date>.json in {folder}")
        raise FileNotFoundError(template.format(kind=kind, prefix=prefix, folder=root / folder))
    return dated[-1][1]


def make_result(runs: Sequence[DeviceRun], command: str, min_run_time: float,
                machine: Provenance | None = None) -> BenchResult:
    """Wrap device runs with their provenance: date (UTC), torch and Python versions, platform, command, load, and
    ``machine``, what ``watch_machine`` saw of the other processes while the runs were measured."""
    result = BenchResult(
        schema=SCHEMA,
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        torch=torch.__version__,
        python=platform.python_version(),
        platform=platform.platform(),
        command=command,
        min_run_time_s=float(min_run_time),
        # how busy the machine was: timings taken beside other jobs are slower and noisier
        load_average_1min=os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        runs=list(runs),
        cpu_caches=cpu_caches(),
        others_before_cores=None if machine is None else machine.others_before,
        others_during_cores=None if machine is None else machine.others_during,
        load_average_before=None if machine is None else machine.load_average,
    )
    return BenchResult.from_dict(result.to_dict(), "the new result")  # the same checks as a file gets


def save_result(result: BenchResult, directory: str | Path | None = None) -> Path:
    """Write ``result`` as ``<device>-<date>.json`` (the GPU if one was measured) into ``directory``.

    ``directory`` defaults to the package's results folder (:func:`results_directory`), the recordings the chapters
    show: there a result timed while other processes were busy (its ``others_*_cores``) is refused with
    ``BusyMachineError``. Elsewhere (a reader's own folder) it is written with what was measured.
    """
    if not isinstance(result, BenchResult):
        raise wrong_type("result", _("a BenchResult"), result)
    devices = [run.device for run in result.runs]
    fastest = next((d for d in ("cuda", "mps") if d in devices), devices[0])
    directory = results_directory() if directory is None else Path(directory)
    path = directory / f"{fastest}-{result.date}.json"
    if directory.resolve() == results_directory().resolve():
        require_quiet(result.others_before_cores, result.others_during_cores, path.name, result.load_average_before)
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    return path


def load_result(path: str | Path) -> BenchResult:
    """Read one JSON result; a file that is not JSON or not a result raises ``ValueError`` naming it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(_("{file} is not valid JSON: {error}").format(file=path.name, error=error)) from None
    return BenchResult.from_dict(data, path.name)


def load_results(directory: str | Path | None = None) -> dict[str, BenchResult]:
    """Every ``*.json`` result in ``directory`` (default: the package's), by file name, sorted."""
    directory = results_directory() if directory is None else Path(directory)
    return {path.name: load_result(path) for path in sorted(directory.glob("*.json"))}


def short_machine_name(machine: str) -> str:
    """A recorded machine's vendor and family, as a chapter names it: ``"Intel Xeon"``, ``"AMD EPYC"``.

    ``machine`` is a model name or a ``machine_summary`` line, e.g. ``"Intel(R) Xeon(R) Processor, L1d 48K, ..."``
    or ``"AMD EPYC 7B13 64-Core Processor"``. A stored output prints this short name and the result file's name:
    the model, caches and cores of one machine are facts a stored output must not carry (tools/machine_facts.py),
    and the file keeps them.
    """
    words = re.sub(r"\((?:R|TM)\)", "", machine.split(",")[0], flags=re.IGNORECASE).split()
    vendor = next((i for i, word in enumerate(words) if word in _VENDORS), 0)
    return " ".join(words[vendor:vendor + 2]) or machine


_VENDORS = ("Intel", "AMD", "Apple", "Ampere", "Arm", "NVIDIA", "Qualcomm")


# A recorded run's label: the one form in which a stored output names the machine a recording was made on. The
# fields are the recording's own; tools/machine_facts.py prints every recording's label in every language of the
# catalogue, so that a stored output may carry these labels and no other name of a machine (the reader's).
RECORDED_ON_CPU = N_("recorded on {name} ({device}, {threads}), torch {torch}, {date}")
RECORDED_ON_DEVICE = N_("recorded on {name} ({device}), torch {torch}, {date}")


def recorded_label(machine: str, device: str, threads: int, torch_version: str, date: str,
                   translate: Callable[[str], str] = _) -> str:
    """'recorded on <short name> (<device>[, threads]), torch <version>, <date>', from a recording's fields.

    ``machine`` is the recording's model name or ``machine_summary`` line (a CPU is named by
    :func:`short_machine_name`), ``translate`` the function that translates the template: ``_`` for printed
    text, ``figure_text`` for a figure.
    """
    if device != "cpu":
        return translate(RECORDED_ON_DEVICE).format(name=machine, device=device, torch=torch_version, date=date)
    return translate(RECORDED_ON_CPU).format(name=short_machine_name(machine), device=device,
                                             threads=threads_text(threads, translate), torch=torch_version, date=date)


def provenance(result: BenchResult, run: DeviceRun, translate: Callable[[str], str] = _) -> str:
    """The label of one run of a recorded result (:func:`recorded_label`)."""
    return recorded_label(run.name, run.device, run.threads, result.torch, result.date, translate)
