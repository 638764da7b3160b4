"""Autograde outside the student's notebook: nbgrader's ``Execute`` replaced by a grader that runs a submission's
answers in a sandbox and computes the grade in its own process (issue 49; docs/teaching.md, "How grading works").

nbgrader's ``autograde`` sanitizes the submission (outputs cleared, locked cells restored from the gradebook), then
runs its ``Autograde.autograde_preprocessors``; ``tools/nbgrader_course.py`` writes into the course's
``nbgrader_config.py`` the same list with :class:`SandboxGrade` in place of ``Execute``. For one submitted notebook:

1. The program: the chapter's own set-up cells, taken from the course's source notebook (never the student's copy
   of them; the practice checkers are left out), the student's answer cells (nbgrader's solution cells, by
   ``grade_id``; nothing else of the student's), and after each, the probes of its graded test cells: the data
   (``GRADED = {...}``) between nbgrader's hidden-test markers in the source notebook. A function's hidden cases are
   drawn here, from the course's seed, and sent as data. IPython's magics in set-up cells are translated by IPython
   and dropped (``%matplotlib inline``: the sandbox has no display).
2. The run: ``tools/grade_runner.py`` in ``python -I`` (not IPython: no input or AST transformers, no custom
   exception handler, no display hooks), under bubblewrap (:func:`sandbox_command`): read-only the Python
   installation, the virtual environment and the two packages; an empty tmpfs as working folder; no network, no
   other process, no course file; a time and a memory limit. It hands back JSON lines, one per probe.
3. The grade: each probe's data against the reference, computed here (:func:`judge`); each test cell's output is
   then what nbgrader's ``SaveAutoGrades`` reads: nothing but a line of text for full points, an error for none.

Where bubblewrap cannot run, ``SandboxGrade.user`` (a dedicated account with no access to the course) runs the
answers instead; without either, autograde stops with what to install. ``SandboxGrade.unsafe_no_sandbox = True``
runs them as the grader's own user (a lecturer's laptop, where nobody else's code is graded): the grade is still
computed here, but the submission can read and write whatever the grader can.
"""

from __future__ import annotations

import ast
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import nbformat

try:
    from tools import grade_runner
except ModuleNotFoundError:  # imported by nbgrader from a course's nbgrader_config.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tools import grade_runner

try:
    from mha_chapters.i18n import _, set_language
except ImportError:  # pragma: no cover - the grader without the chapters' package
    def _(message: str) -> str:
        return message

    def set_language(code: str) -> None:
        pass

RUNNER = Path(grade_runner.__file__).read_text()
SET_LANGUAGE = re.compile(r"""set_language\(\s*["']([A-Za-z_-]+)["']\s*\)""")
MARKER = "GRADED = "
INSTALL = ("autograde runs each submission in a sandbox, and none is available here: install bubblewrap "
           "(Debian/Ubuntu: apt-get install bubblewrap), or set c.SandboxGrade.user to an account that cannot read "
           "the course, or (a lecturer's own laptop only, unsafe) c.SandboxGrade.unsafe_no_sandbox = True")


# ---- the hidden tests' data ---------------------------------------------------------------------------------------

def graded_cell(spec: dict) -> str:
    """The hidden part of a graded test cell: its data, and (for ``nbgrader validate`` and the fast tests, which
    run it in a notebook) the same judgement run in place."""
    return (f"# Graded outside the notebook by tools/autograde.py (docs/teaching.md, \"How grading works\").\n"
            f"{MARKER}{spec!r}\n"
            "from tools.autograde import judge_here\n"
            "judge_here(GRADED, globals())\n"
            "del GRADED, judge_here")


def spec_of(source: str) -> dict | None:
    """The data of a graded test cell's source (from the course's source notebook), or None."""
    for line in source.splitlines():
        if line.startswith(MARKER):
            return ast.literal_eval(line[len(MARKER):])
    return None


# ---- plain values, as the grader compares them ----------------------------------------------------------------

def decode(data):
    """JSON data from the sandbox as the plain values the comparisons take: tuples, ("tensor", shape, values),
    ("set", sorted items). Anything else raises ValueError."""
    kind = type(data)
    if kind in (bool, int, float, str):
        return data
    if kind is list:
        return tuple(decode(item) for item in data)
    if kind is dict and set(data) == {"tensor", "values"}:
        shape = decode(data["tensor"])
        if type(shape) is not tuple or not all(type(n) is int for n in shape):
            raise ValueError("a tensor's shape")
        return ("tensor", shape, decode(data["values"]))
    if kind is dict and set(data) == {"set"}:
        return ("set", tuple(sorted(decode(item) for item in data["set"])))
    raise ValueError(f"not an answer: {str(data)[:80]}")


def plain(x):
    """A value of the grader's own (a reference's result) as the comparisons take it."""
    return decode(json.loads(json.dumps(grade_runner.encode(x))))


def same(a, b, rel=1e-5, tiny=1e-6):
    """True when two plain values agree: same structure, ints equal, floats within the tolerance."""
    if type(a) is tuple or type(b) is tuple:
        return (type(a) is tuple and type(b) is tuple and len(a) == len(b)
                and all(same(x, y, rel, tiny) for x, y in zip(a, b, strict=True)))
    numeric = (int, float, bool)
    if type(a) not in numeric or type(b) not in numeric:
        return type(a) is type(b) and a == b
    if a == b or (a != a and b != b):  # equal, or both NaN
        return True
    if math.isinf(a) or math.isinf(b) or a != a or b != b:
        return False
    return abs(a - b) <= tiny + rel * abs(b)


def values(v):
    """The numbers of an answer: a tensor's values, anything else as it is."""
    return v[2] if type(v) is tuple and len(v) == 3 and v[0] == "tensor" else v


def numbers(v):
    """A plain answer with every tensor in it replaced by its values (torch.tensor(3) counts as 3)."""
    v = values(v)
    return tuple(numbers(item) for item in v) if type(v) is tuple else v


def _names() -> dict:
    """What the grading code of grading/chNN.py (cases, references, checks, comparisons) may use, all real."""
    import torch
    return {"math": math, "torch": torch, "type_": type, "tuple_": tuple, "list_": list, "int_": int,
            "float_": float, "bool_": bool, "str_": str, "set_": set, "function_": types.FunctionType,
            "tensor_": torch.Tensor, "to_list": torch.Tensor.tolist, "detached": torch.Tensor.detach,
            "size_of": torch.Tensor.size, "cloned": torch.Tensor.clone, "plain": plain, "same": same,
            "values": values, "numbers": numbers,
            "clone": lambda args: tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)}


def encode_args(x):
    """A hidden case's argument as JSON data (tools/grade_runner.py, decode_args)."""
    import torch
    if isinstance(x, torch.Tensor):
        return {"tensor": list(x.shape), "values": x.tolist(), "dtype": str(x.dtype).removeprefix("torch.")}
    if isinstance(x, tuple):
        return {"tuple": [encode_args(item) for item in x]}
    if isinstance(x, list):
        return [encode_args(item) for item in x]
    return x


def cases_and_wants(spec: dict) -> tuple[list, list]:
    """A function test's hidden cases and the reference's results on them, computed in this process."""
    import torch
    namespace = _names()
    namespace["g"] = torch.Generator().manual_seed(spec["seed"])
    exec(spec["cases"], namespace)  # noqa: S102 - the course's own code, from its source notebook
    exec(spec["reference"], namespace)  # noqa: S102
    cases = list(namespace["cases"])
    wants = [plain(namespace["reference"](*namespace["clone"](args))) for args in cases]
    return cases, wants


def mentions(source: str, library: list[str]) -> list[str]:
    """The named library functions that an answer cell's code names (an import, a name, an attribute, a string)."""
    wanted = {path.rpartition(".")[2].rpartition(":")[2]: path for path in library}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = set()
    for node in ast.walk(tree):
        for name in (getattr(node, "id", None), getattr(node, "attr", None), getattr(node, "name", None),
                     node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None):
            if name in wanted:
                found.add(wanted[name])
    return sorted(found)


def judge(spec: dict, result: dict | None, prepared: tuple | None = None, answer_source: str = "") -> str | None:
    """None when the probe's data is right, else the message the student reads."""
    name = spec["name"]
    if result is None:
        return _("{name}: not graded, the notebook stopped before this test (an answer cell that never ends, "
                 "or uses too much memory or time)").format(name=name)
    if "error" in result:
        if "NotImplementedError" in str(result.get("cell_error", "")) or "NotImplementedError" in result["error"]:
            return _("{name} is not answered yet").format(name=name)
        return f"{name}: {result['error']}"
    if spec["kind"] == "value":
        if result.get("cell_error"):
            return _("{name}: the answer cell raised {error}").format(name=name, error=result["cell_error"])
        try:
            got = numbers(decode(result["value"]))
        except (KeyError, ValueError, TypeError):
            return _("{name} cannot be graded: use numbers, strings, tuples, lists, sets, tensors").format(name=name)
        if spec.get("index") is not None:
            if type(got) is not tuple or len(got) != spec["length"]:
                return _("{name} should be a tuple of {n}").format(name=name, n=spec["length"])
            got = got[spec["index"]]
        if spec.get("check"):
            namespace = {**_names(), "got": got}
            try:
                exec(spec["check"], namespace)  # noqa: S102 - the course's own code
            except AssertionError as error:
                return str(error) or _("{name} is not right").format(name=name)
            return None
        want = eval(spec["want"], {"__builtins__": {"float": float}})  # noqa: S307 - the course's own literal
        return None if same(got, want) else _("{name} is not right").format(name=name)
    cases, wants = prepared if prepared is not None else cases_and_wants(spec)
    if result.get("alias") or mentions(answer_source, spec.get("library", [])):
        return _("{name} uses the library function that this exercise asks you to write: no points for "
                 "this part").format(name=name)
    outputs = result.get("outputs")
    if type(outputs) is not list or len(outputs) != len(cases):
        return _("{name} gives a wrong result on a hidden case ({label})").format(name=name, label=spec["label"])
    compare = spec.get("compare") or "ok = same(result, want)"
    for args, output, want in zip(cases, outputs, wants, strict=True):
        if type(output) is not dict or "value" not in output:
            if type(output) is dict and output.get("error") == "NotImplementedError":
                return _("{name} is not written yet").format(name=name)
            return _("{name} raised {error} on a hidden case ({label})").format(
                name=name, error=output.get("error") if type(output) is dict else "?", label=spec["label"])
        try:
            namespace = {**_names(), "args": args, "result": decode(output["value"]), "want": want}
            exec(compare, namespace)  # noqa: S102 - the course's own comparison
            ok = namespace["ok"] is True
        except Exception:  # noqa: BLE001 - a result the comparison cannot read is a wrong result
            ok = False
        if not ok:
            return _("{name} gives a wrong result on a hidden case ({label})").format(name=name, label=spec["label"])
    return None


def judge_here(spec: dict, namespace: dict) -> None:
    """The judgement of one graded test cell, with the answers in ``namespace`` (a notebook's globals): for
    ``nbgrader validate`` and tests/test_course_build.py. Autograde never runs it; it runs the same steps with the
    answers in the sandbox. Raises AssertionError with the student's message."""
    import torch
    # In a notebook the reference below shares the student's process: it needs torch's own functions
    for owner, names in ((torch, ("allclose", "equal", "softmax", "exp", "matmul", "randn", "randint", "tensor")),
                         (torch.nn.functional, ("scaled_dot_product_attention",)),
                         (torch.Tensor, ("tolist", "clone", "detach", "size", "__eq__", "float", "double"))):
        for name in names:
            if type(getattr(owner, name)) is types.FunctionType:
                raise AssertionError(f"{owner.__name__}.{name} was replaced in this notebook: not graded here")
    step = probe_step(spec, "here")
    prepared = None
    if spec["kind"] == "function":
        prepared = cases_and_wants(spec)
        step["cases"] = [[encode_args(a) for a in args] for args in prepared[0]]
    emitted = []
    grade_runner.run({"steps": [step]}, lambda r: emitted.append(json.loads(json.dumps(r))), namespace)
    message = judge(spec, emitted[0], prepared)
    if message is not None:
        raise AssertionError(message)


# ---- the program of one submission ----------------------------------------------------------------------------

def probe_step(spec: dict, grade_id: str) -> dict:
    step = {"probe": grade_id, "kind": spec["kind"], "name": spec["name"]}
    if spec["kind"] == "function":
        step.update(cases=[], library=list(spec.get("library", [])))
    return step


def _setup_code(source: str) -> str:
    """A cell as plain Python: IPython's magics translated by IPython, then dropped (no display here)."""
    from IPython.core.inputtransformer2 import TransformerManager
    try:
        code = TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - a cell IPython cannot read either: it fails in the sandbox as it is
        return source
    written = set(source.splitlines())  # the cell's own lines stay, get_ipython() and all: only magics go
    return "\n".join(line for line in code.splitlines() if line in written or "get_ipython()" not in line)


def notebook_language(nb: nbformat.NotebookNode) -> str:
    """The language a chapter's set-up chooses (``mha_chapters.set_language("zh_CN")`` in the Chinese edition), or
    ``"en"``: the grader's feedback is written in it."""
    for cell in nb.cells:
        match = SET_LANGUAGE.search(cell.source) if cell.cell_type == "code" else None
        if match:
            return match[1]
    return "en"


def program(source: nbformat.NotebookNode, submitted: nbformat.NotebookNode) -> tuple[list, dict]:
    """The steps to run in the sandbox, and for each graded test cell its (spec, prepared cases, answer source)."""
    answers = {}
    for cell in submitted.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code" and meta.get("grade_id") not in answers:
            answers[meta["grade_id"]] = cell.source
    steps, tests, last_answer = [], {}, ""
    for cell in source.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id", "")
        if meta.get("solution"):
            last_answer = answers.get(grade_id, "")
            steps.append({"run": _setup_code(last_answer), "answer": grade_id})
        elif meta.get("grade"):
            spec = spec_of(cell.source)
            if spec is None:
                continue
            step = probe_step(spec, grade_id)
            prepared = None
            if spec["kind"] == "function":
                prepared = cases_and_wants(spec)
                step["cases"] = [[encode_args(a) for a in args] for args in prepared[0]]
            steps.append(step)
            tests[grade_id] = (spec, prepared, last_answer)
        elif "_practice" not in grade_id and cell.metadata.get("grading", {}).get("run", True):
            # the chapter's own cells; not its checkers (practice), nor its timings (NOT_RUN_WHEN_GRADING)
            steps.append({"run": _setup_code(cell.source), "answer": None})
    while steps and "run" in steps[-1]:  # nothing after the last probe changes a grade
        steps.pop()
    return steps, tests


# ---- the sandbox --------------------------------------------------------------------------------------------------

def _bwrap_works(bwrap: str) -> bool:
    try:
        return subprocess.run([bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def sandbox_command(python: str, packages: list[Path], work: str = "/submission", user: str = "",
                    unsafe: bool = False, memory_mb: int = 4096, timeout: int = 300,
                    hide: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """The command that runs tools/grade_runner.py on its standard input, and the folders of the two packages as it
    sees them: with ``unsafe``, as this user; else under bubblewrap, else as ``user``. ``hide``: packages (folder
    names) left empty in every site-packages folder bound (under bubblewrap only: a hub's image installs mha_lib
    there). Raises RuntimeError with what to install when there is no sandbox."""
    limits = ["timeout", "--kill-after=5", str(timeout), "prlimit", f"--as={memory_mb * 2**20}",
              f"--fsize={64 * 2**20}", "--"]
    runner = [python, "-I", "-c", RUNNER]
    outside = sorted({str(package.parent) for package in packages})
    if unsafe:  # asked for by name: no sandbox, even where there is one
        return [*limits, "env", "-i", "PATH=/usr/bin", "MPLBACKEND=Agg", "OMP_NUM_THREADS=1", *runner], outside
    bwrap = shutil.which("bwrap")
    if bwrap and _bwrap_works(bwrap):
        # Python, its environment, and every site-packages folder on the import path: a venv can take its packages
        # from another one through a .pth file (the hub's image does), and those must be there inside too
        prefixes = {str(Path(sys.base_prefix)), str(Path(sys.prefix)), str(Path(sys.base_prefix).resolve()),
                    str(Path(sys.prefix).resolve())}
        sites = {str(Path(entry).resolve()) for entry in sys.path
                 if Path(entry).name in ("site-packages", "dist-packages") and Path(entry).is_dir()}
        binds = []
        for path in sorted(prefixes | sites):
            binds += ["--ro-bind", path, path]
        for path in sorted(sites):  # after every bind, so that an empty folder covers the installed package
            for name in hide:
                if (Path(path) / name).is_dir():
                    binds += ["--tmpfs", str(Path(path) / name)]
        for package in packages:
            binds += ["--ro-bind", str(package), f"/packages/{package.name}"]
        return [*limits, bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
                "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--symlink", "usr/bin", "/bin", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", work, *binds, "--chdir", work,
                "--uid", "65534", "--gid", "65534", "--hostname", "sandbox",
                "--setenv", "PATH", "/usr/bin", "--setenv", "HOME", work, "--setenv", "MPLBACKEND", "Agg",
                "--setenv", "MPLCONFIGDIR", f"{work}/.matplotlib", "--setenv", "OMP_NUM_THREADS", "1",
                "--setenv", "MKL_NUM_THREADS", "1", "--", *runner], ["/packages"]
    if user:
        return [*limits, "runuser", "-u", user, "--", "env", "-i", "PATH=/usr/bin", "MPLBACKEND=Agg",
                "OMP_NUM_THREADS=1", "HOME=.", *runner], outside
    raise RuntimeError(INSTALL)


def run_sandboxed(steps: list, packages: list[Path] | None = None, **options) -> dict[str, dict]:
    """Run the steps in the sandbox: {probe id: its data}."""
    if packages is None:
        import mha_chapters
        import mha_lib
        packages = [Path(mha_lib.__file__).parent, Path(mha_chapters.__file__).parent]
    command, path = sandbox_command(sys.executable, packages, **options)
    data = json.dumps({"path": path, "steps": steps}).encode()
    timeout = options.get("timeout", 300)
    with tempfile.TemporaryDirectory(prefix="mha-grade-") as work:  # the working folder outside bubblewrap
        if options.get("user"):
            shutil.chown(work, options["user"])
        try:
            out = subprocess.run(command, input=data, capture_output=True, timeout=timeout + 30, cwd=work).stdout
        except subprocess.TimeoutExpired as expired:
            out = expired.stdout or b""
    results = {}
    for line in out[:64 * 2**20].decode(errors="replace").splitlines():
        try:
            result = json.loads(line)
        except (ValueError, RecursionError):  # not data: nested too deep, or not JSON
            continue
        if type(result) is dict and type(result.get("probe")) is str and result["probe"] not in results:
            # the first line for a probe counts; one that the student's code wrote before the runner's is the
            # student's answer like any other (it holds values the grader judges, never a grade)
            results[result["probe"]] = result
    return results


# ---- per student: the source graded against, and what the feedback shows ------------------------------------

STUDENT_SOURCE = "student-source"  # tools/nbgrader_course.py, write_student_copies


def source_for(coursedir, assignment: str, notebook: str, student: str | None) -> Path:
    """The source notebook a submission is graded against: the student's own (their numbers, from the course's
    secret: ``student-source/<student>/<assignment>/``) where the course made one, else the course's."""
    if student:
        own = Path(coursedir.root) / STUDENT_SOURCE / student / assignment / f"{notebook}.ipynb"
        if own.exists():
            return own
    folder = Path(coursedir.format_path(coursedir.source_directory, ".", assignment))
    return folder / f"{notebook}.ipynb"


def without_hidden_tests(source: str) -> str:
    """A test cell's source without its hidden part (the seed, the expected value, the reference): nbgrader's
    autograde puts it back from the gradebook, and its feedback would show it."""
    lines, hidden = [], False
    for line in source.splitlines():
        if line.strip() == "### BEGIN HIDDEN TESTS":
            hidden = True
        elif line.strip() == "### END HIDDEN TESTS":
            hidden = False
        elif not hidden:
            lines.append(line)
    return "\n".join(lines)


# The imports a chapter's answers take from its first cell, for the run without the packages (where that cell
# stops at its first import of mha_lib).
PLAIN_IMPORTS = "import math\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn"


LIBRARY_PACKAGES = ("mha_lib", "mha_chapters")


def without_library(steps: list) -> list:
    """The program again for the probes of functions with ``library=`` only, to run where the packages are not.

    Whatever the sandbox reports about a function (its outputs, whether it reached the library) is the student's
    claim: the student's code can switch the watch off, call from another thread, patch the runner, or call a
    private twin of the library function. Where mha_lib is not there, no trick reaches it; a function of one's
    own, which needs torch only, gives the same results as in the full run."""
    probes = [n for n, step in enumerate(steps) if step.get("kind") == "function" and step.get("library")]
    if not probes:
        return []
    return [{"run": PLAIN_IMPORTS, "answer": None},
            *(step for step in steps[:probes[-1] + 1] if "run" in step or step.get("library"))]


def run_program(steps: list, **options) -> dict[str, dict]:
    """Run the steps in the sandbox: {probe id: its data}; a function with ``library=`` is judged on its run without
    the packages (:func:`without_library`): no data from the full run counts for it."""
    results = run_sandboxed(steps, **options)
    alone = without_library(steps)
    if alone:
        for step in alone:
            results.pop(step.get("probe"), None)
        results.update(run_sandboxed(alone, packages=[], hide=LIBRARY_PACKAGES, **options))
    return results


# ---- the nbgrader preprocessor --------------------------------------------------------------------------------

try:
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import NbGraderPreprocessor
    from traitlets import Bool, Integer, Unicode

    class SandboxGrade(NbGraderPreprocessor):
        """nbgrader's ``Execute`` replaced: the answers run in the sandbox, the grade is computed here and written
        into each graded test cell as the output nbgrader's ``SaveAutoGrades`` reads."""

        timeout = Integer(300, help="seconds for one submission's answers").tag(config=True)
        memory_mb = Integer(4096, help="address space of the sandboxed process, in MiB").tag(config=True)
        user = Unicode("", help="without bubblewrap: an account that cannot read the course").tag(config=True)
        unsafe_no_sandbox = Bool(False, help="run the answers as the grader's user (a lecturer's laptop only: "
                                             "the submission can read the course's solutions)").tag(config=True)

        def preprocess(self, nb, resources):
            info = resources["nbgrader"]
            coursedir = CourseDirectory(config=self.config)
            source = nbformat.read(source_for(coursedir, info["assignment"], info["notebook"], info.get("student")),
                                   as_version=4)
            set_language(notebook_language(source))  # the feedback in the language the chapter is taught in
            steps, tests = program(source, nb)
            results = run_program(steps, user=self.user, unsafe=self.unsafe_no_sandbox,
                                    memory_mb=self.memory_mb, timeout=self.timeout)
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type != "code":
                    continue
                cell.outputs, cell.execution_count = [], None
                if not meta.get("grade") or meta.get("solution"):
                    continue
                if meta.get("grade_id") in tests:
                    spec, prepared, answer = tests[meta["grade_id"]]
                    try:
                        message = judge(spec, results.get(meta["grade_id"]), prepared, answer)
                    except Exception:  # noqa: BLE001 - data the judgement cannot read is a wrong answer
                        message = _("{name} cannot be graded: use numbers, strings, tuples, lists, sets, "
                                    "tensors").format(name=spec["name"])
                else:
                    message = _("this test is not in the course's source notebook")
                if message is None:
                    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=_("✅ right") + "\n")]
                else:
                    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue=message,
                                                           traceback=[f"AssertionError: {message}"])]
                cell.source = without_hidden_tests(cell.source)  # the feedback shows no seed, no expected value
            return nb, resources

except ImportError:  # pragma: no cover - the grader's functions without nbgrader
    SandboxGrade = None
