"""Was the machine quiet while we timed? Each stored timing carries the answer, and the tools refuse one that was not.

    machine = watch_machine()            # from here ...
    ratios = paired_speedups(slow, fast, "cpu")
    machine.report()                     # ... to here: "the machine while timing: other processes used 0.02 ..."

A timing records the cost of the code it times only when nothing else competes for the cores. Two numbers say
whether something did, both from Linux's ``/proc/stat`` less this process's own CPU time:

- **the load average before**: the 1-minute load average as the timings start (the rule: at most ``QUIET_LOAD``,
  half a core). It also counts this process's own earlier work, a chapter's previous cells, which is why a stored
  timing waits for it: the average decays with a time constant of a minute, so after a heavy cell that takes up to
  about a minute;
- **other processes before**: the cores that everything else kept busy in the second before the timings started
  (at most ``QUIET_BEFORE``, half a core);
- **other processes during**: the cores that everything else used while the timings ran (at most
  ``QUIET_DURING``, a tenth of a core).

``report`` shows them with the threads, PyTorch's version, the date and the device, and attaches them to the cell's
output as metadata (``PROVENANCE_KEY``), so that ``tools/quiet.py --check`` and the tests can read every stored
timing's provenance in any language. When a notebook is executed for its stored outputs (``make outputs`` sets
``STORE_OUTPUTS_VARIABLE``), the watch first waits, up to ``WAIT_S`` seconds, for all three to meet the rule;
a reader's own run, and a test's, never waits, and its report says how busy the machine was. Where ``/proc/stat``
does not exist (macOS, Windows) the other processes are not measured, and the report says so.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from mha_lib._validation import require_positive_int

from ..i18n import _
from .timing import threads_text

__all__ = ["PROVENANCE_KEY", "QUIET_BEFORE", "QUIET_DURING", "QUIET_LOAD", "BusyMachineError", "MachineWatch",
           "Provenance", "busy_cores", "quiet_problems", "require_quiet", "watch_machine"]

QUIET_LOAD = 0.5  # the highest 1-minute load average at which a stored timing may start
QUIET_BEFORE = 0.5  # cores other processes may keep busy in the second before a stored timing starts
QUIET_DURING = 0.1  # cores other processes may use while it runs
SAMPLE_S = 1.0  # how long "before" is
WAIT_S = 240.0  # how long an unattended run waits for quiet before timing anyway (the check then refuses it)
PROVENANCE_KEY = "mha_notebooks/timing_provenance"  # the output metadata that carries it
STORE_OUTPUTS_VARIABLE = "MHA_STORE_OUTPUTS"  # set to 1 by the Makefile's EXECUTE, which stores what a notebook prints
_BUSY_FIELDS = (0, 1, 2, 5, 6)  # /proc/stat's user, nice, system, irq, softirq (not idle, iowait, steal or guest)


def _machine_cpu_s() -> float | None:
    """CPU seconds every process on the machine has used since boot (busy time only), or None without /proc/stat."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    return sum(int(fields[i]) for i in _BUSY_FIELDS) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    """CPU seconds this process (every thread) and its finished children have used."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _tree_cpu_s() -> float:
    """CPU seconds this process and every process started under it (alive, or finished and waited for) have used.

    What a browser test owns: the JupyterLab server, its kernel and the browser are this process's descendants, and
    their work is the measurement, not a disturbance. Read from ``/proc/<pid>/stat`` (utime, stime and the
    cutime, cstime of waited-for children); without ``/proc`` only this process's own time.
    """
    stats = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # a process that ended while we looked
            continue
        fields = text.rsplit(")", 1)[1].split()  # after "pid (name)": state, ppid, ... utime is field 14
        stats[int(stat.parent.name)] = (int(fields[1]), sum(int(value) for value in fields[11:15]))
    if not stats:
        return _own_cpu_s()
    children: dict[int, list[int]] = {}
    for pid, (parent, _ticks) in stats.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0))[1]
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class _Sample:
    wall_s: float
    machine_s: float | None
    own_s: float

    @classmethod
    def now(cls, tree: bool = False) -> _Sample:
        return cls(time.perf_counter(), _machine_cpu_s(), _tree_cpu_s() if tree else _own_cpu_s())


def busy_cores(start: _Sample, end: _Sample) -> float | None:
    """The cores that processes other than this one kept busy between two samples, on average; None unmeasured.

    Linux counts CPU time in ticks of a hundredth of a second on each core, so an interval of ``t`` seconds reads up
    to about ``0.01 * cores / t`` cores high or low (0.02 over one second on 2 cores); the result is kept between 0
    and the number of cores.
    """
    if start.machine_s is None or end.machine_s is None:
        return None
    others = (end.machine_s - start.machine_s) - (end.own_s - start.own_s)
    return min(max(0.0, others / max(end.wall_s - start.wall_s, 1e-9)), float(os.cpu_count() or 1))


class BusyMachineError(RuntimeError):
    """A timing was about to be stored that other processes disturbed."""


def quiet_problems(others_before: float | None, others_during: float | None,
                   load_average: float | None = None) -> list[str]:
    """Why a timing with these measurements must not be stored (empty when it may, or when they were not measured)."""
    found = []
    if load_average is not None and load_average > QUIET_LOAD:
        found.append(_("the timings started at a load average of {load:.2f} (at most {limit})").format(
            load=load_average, limit=QUIET_LOAD))
    if others_before is not None and others_before > QUIET_BEFORE:
        found.append(_("other processes kept {cores:.2f} cores busy before the timings started (at most "
                       "{limit})").format(cores=others_before, limit=QUIET_BEFORE))
    if others_during is not None and others_during > QUIET_DURING:
        found.append(_("other processes used {cores:.2f} cores during the timings (at most {limit})").format(
            cores=others_during, limit=QUIET_DURING))
    return found


def require_quiet(others_before: float | None, others_during: float | None, what: str,
                  load_average: float | None = None) -> None:
    """Raise ``BusyMachineError`` naming ``what`` (a recording's file) if the machine was busy while it was timed."""
    found = quiet_problems(others_before, others_during, load_average)
    if found:
        raise BusyMachineError(_("{what} is not stored: {problems}. Stop what else runs (top shows it) and record "
                                 "again.").format(what=what, problems="; ".join(found)))


@dataclass(frozen=True)
class Provenance:
    """How quiet the machine was while one cell's timings ran, with what they ran on."""

    load_average: float | None  # the 1-minute load average at the start (this process's own work included)
    others_before: float | None  # cores other processes kept busy in the second before
    others_during: float | None  # cores other processes used during the timings
    threads: int | str  # "‹N›" in a stored copy where it was the machine's cores (tools/machine_facts.py)
    torch: str
    date: str
    device: str

    def problems(self) -> list[str]:
        """Why this timing must not be stored (empty when the machine was quiet, or could not be measured)."""
        return quiet_problems(self.others_before, self.others_during, self.load_average)

    def text(self) -> str:
        """One line for the reader, in their language."""
        facts = {"threads": threads_text(self.threads), "torch": self.torch, "device": self.device, "date": self.date}
        if self.others_during is None:
            return _("the machine while timing: other processes not measured here (no /proc/stat); {threads}, "
                     "torch {torch}, {device}, {date}").format(**facts)
        load = "?" if self.load_average is None else f"{self.load_average:.2f}"
        return _("the machine while timing: other processes used {before:.2f} cores before and {during:.2f} "
                 "during (load average {load}); {threads}, torch {torch}, {device}, {date}").format(
            before=self.others_before, during=self.others_during, load=load, **facts)


class MachineWatch:
    """What ``watch_machine`` returns, watching already; ``stop`` (or ``report``) ends the watch and sets
    ``provenance``. Also a context manager: ``with watch_machine() as machine:`` stops at the end of the block."""

    def __init__(self, device: str, wait: bool, tree: bool = False, threads: int | None = None) -> None:
        self.device, self.wait, self.tree, self.threads = device, wait, tree, threads
        self.provenance: Provenance | None = None
        self._load: float | None = None
        self._before: float | None = None
        self._start: _Sample | None = None

    def start(self) -> MachineWatch:
        """Wait for quiet if this run's outputs are to be stored, sample the second before, start watching."""
        deadline = time.monotonic() + (WAIT_S if self.wait else 0.0)
        while True:
            first = _Sample.now(self.tree)
            time.sleep(SAMPLE_S)
            self._start = _Sample.now(self.tree)
            self._before = busy_cores(first, self._start)
            self._load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            if not quiet_problems(self._before, None, self._load) or time.monotonic() >= deadline:
                break
        return self

    def stop(self) -> Provenance:
        """End the watch (the first call does) and return the provenance."""
        if self.provenance is not None:
            return self.provenance
        self.provenance = Provenance(
            load_average=_rounded(self._load), others_before=_rounded(self._before),
            others_during=_rounded(busy_cores(self._start, _Sample.now(self.tree))),
            threads=torch.get_num_threads() if self.threads is None else self.threads,
            torch=torch.__version__, date=datetime.date.today().isoformat(), device=self.device)
        return self.provenance

    def __enter__(self) -> MachineWatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def report(self) -> None:
        """End the watch and show its provenance: one line, and in a notebook the provenance as output metadata."""
        provenance = self.stop()
        ipython = sys.modules.get("IPython")
        if ipython is not None and getattr(ipython.get_ipython(), "kernel", None) is not None:  # a notebook's kernel
            from IPython.display import display

            display({"text/plain": provenance.text()}, raw=True, metadata={PROVENANCE_KEY: asdict(provenance)})
        else:  # a script, or IPython in a terminal
            print(provenance.text())


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def watch_machine(device: str = "cpu", wait: bool | None = None, tree: bool = False,
                  threads: int | None = None) -> MachineWatch:
    """Start watching how busy the rest of the machine is while this cell times something on ``device``.

    ``wait``: first wait up to ``WAIT_S`` seconds for the other processes to fall quiet; by default only while the
    outputs are being stored (``STORE_OUTPUTS_VARIABLE`` is 1); a recorder (``benchmarks/``) passes True.
    ``tree``: count the processes started under this one as its own (a browser test's server, kernel and browser).
    ``threads``: the most CPU threads the cell's timings use, for the provenance (None: all PyTorch uses now).
    """
    if wait is None:
        wait = os.environ.get(STORE_OUTPUTS_VARIABLE) == "1"
    if threads is not None:
        require_positive_int("threads", threads)
    return MachineWatch(str(device), wait, tree, threads).start()
