"""Measure what one student costs a JupyterHub: memory and CPU of a kernel per chapter, and autograding time.

    python hub/measure_sizing.py [--out hub/sizing.json] [--chapters 04 06] [--skip-autograde]

For each chapter of the reader edition (``chapters/``, what students run), a fresh ``python3`` kernel runs every
cell with nbclient, as JupyterLab's "Run All" would. The record keeps, per chapter:

- ``kernel_peak_mib``: the kernel's peak resident memory, its high-water mark (``VmHWM`` in /proc), plus the peak
  of its child processes sampled every 0.1 s (torch.compile's workers, if any);
- ``kernel_cpu_s``: CPU seconds (user + system) of the kernel and its children;
- ``wall_s``: wall-clock seconds. Only this one depends on how busy the machine is; memory and CPU seconds do not
  (much).

Then an nbgrader course of the same chapters (``tools.nbgrader_course``, as ``make assignments``), one submission
per chapter holding the instructor's solutions, and ``nbgrader autograde`` per chapter, timed: wall-clock seconds
and CPU seconds of nbgrader and the kernel it starts. Also the resident memory of an idle JupyterLab server, the
other process in every student's container.

The record (JSON) carries its provenance: date, Python, PyTorch, torch's thread count and the CPU count of the
machine. Sizing numbers in hub/z2jh/values.yaml and docs/teaching.md come from hub/sizing.json, made by this script.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import nbclient
import nbformat
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools.nbgrader_course import nbgrader, write_course  # noqa: E402

MIB = 1024 * 1024


def high_water_mark(pid: int) -> int:
    """The process's peak resident memory in bytes (Linux: VmHWM in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


class ChildSampler(threading.Thread):
    """Samples the summed resident memory of a process's descendants every 0.1 s; keeps the peak."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.peak = 0
        self.cpu = {}  # child pid -> last CPU seconds seen (a child that exits keeps its last reading)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            total = 0
            for child in self.process.children(recursive=True):
                try:
                    total += child.memory_info().rss
                    times = child.cpu_times()
                    self.cpu[child.pid] = times.user + times.system
                except psutil.NoSuchProcess:
                    pass
            self.peak = max(self.peak, total)


def measure_chapter(path: Path, work: Path) -> dict:
    """Run one notebook in a fresh kernel from an empty folder; the kernel's peak memory, CPU and wall time."""
    nb = nbformat.read(path, as_version=4)
    folder = work / path.stem
    folder.mkdir()
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": folder}})
    start = time.perf_counter()
    with client.setup_kernel():
        pid = client.km.provisioner.pid
        sampler = ChildSampler(pid)
        sampler.start()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        wall = time.perf_counter() - start
        sampler.stop.set()
        sampler.join()
        kernel = psutil.Process(pid)
        times = kernel.cpu_times()
        peak = high_water_mark(pid) + sampler.peak
        cpu = times.user + times.system + times.children_user + times.children_system + sum(sampler.cpu.values())
    return {"chapter": path.name, "kernel_peak_mib": round(peak / MIB), "kernel_cpu_s": round(cpu, 1),
            "wall_s": round(wall, 1)}


def idle_lab_server_mib(work: Path) -> int:
    """Resident memory of a JupyterLab server that has started and answered one request (no kernel)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = secrets.token_hex(16)
    jupyter = Path(sys.executable).parent / "jupyter"
    args = [str(jupyter), "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
            *(["--allow-root"] if os.geteuid() == 0 else [])]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/lab",
                                                 headers={"Authorization": f"token {token}"})
                with urllib.request.urlopen(request, timeout=10) as response:
                    response.read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        return round(psutil.Process(server.pid).memory_info().rss / MIB)
    finally:
        server.terminate()
        server.wait(timeout=30)


def measure_autograde(chapters: list[Path], work: Path) -> list[dict]:
    """nbgrader autograde of one submission (the instructor's solutions) per chapter: wall and CPU seconds."""
    course = work / "course"
    names = write_course(course, chapters)
    rows = []
    for name in names:
        nbgrader(course, "generate_assignment", name, "--force")
        nbgrader(course, "db", "student", "add", "sizing")
        (source,) = (course / "source" / name).glob("*.ipynb")
        target = course / "submitted" / "sizing" / name / source.name
        target.parent.mkdir(parents=True)
        shutil.copyfile(source, target)  # a student who wrote the instructor's solutions
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        nbgrader(course, "autograde", name, "--student", "sizing", "--force")
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)  # nbgrader and its kernel
        rows.append({"assignment": name, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)})
        print(f"autograde {name}: {rows[-1]}", flush=True)
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "hub" / "sizing.json")
    parser.add_argument("--chapters", nargs="*", help="chapter numbers (default: all)")
    parser.add_argument("--skip-autograde", action="store_true")
    args = parser.parse_args(argv)
    paths = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    if args.chapters:
        paths = [p for p in paths if p.name[:2] in args.chapters]
    import torch

    record = {
        "made_by": "python hub/measure_sizing.py",
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": [round(x, 1) for x in os.getloadavg()],
        "note": "wall_s depends on the machine's load (other jobs ran beside this one); memory and CPU seconds do not",
    }
    with tempfile.TemporaryDirectory(prefix="mha-sizing-") as tmp:
        work = Path(tmp)
        record["lab_server_idle_mib"] = idle_lab_server_mib(work)
        print(f"idle JupyterLab server: {record['lab_server_idle_mib']} MiB", flush=True)
        record["chapters"] = []
        for path in paths:
            row = measure_chapter(path, work)
            record["chapters"].append(row)
            print(f"{row}", flush=True)
        if not args.skip_autograde:
            instructor = [ROOT / "notebooks" / p.name for p in paths]
            record["autograde"] = measure_autograde(instructor, work)
    record["load_average_at_end"] = [round(x, 1) for x in os.getloadavg()]
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
