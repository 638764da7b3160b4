"""mha_chapters.batching (the three implementations agree, exact costs, CPU facts, figures) and the
private harness mha_chapters.bench (timing, sweeps, the dataclass records and their reader, the bench script)."""

import copy
import dataclasses
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from mha_chapters.batching import (
    FLOAT32_LANES,
    IMPLEMENTATIONS,
    LayoutCopy,
    attention_batched,
    attention_flops,
    attention_per_head,
    attention_per_sample,
    attention_prefolded,
    call_plan,
    cpu_facts,
    gpu_overtakes_at,
    layout_copies,
    peak_flops,
    plot_devices,
    plot_length_sweep,
    plot_loops_vs_batch,
    speedups,
)
from mha_chapters.bench.records import (
    SCHEMA,
    BenchResult,
    DeviceRun,
    load_result,
    load_results,
    make_result,
    newest_recording,
    provenance,
    results_directory,
    save_result,
)
from mha_chapters.bench.sweeps import BatchSweep, LengthSweep, measure_device, random_qkv
from mha_chapters.bench.timing import (
    available_devices,
    device_name,
    interleaved_times,
    median_time,
    paired_speedups,
    synchronize,
    thread_speedups,
)
from mha_lib import MultiHeadAttention, cpu_threads
from mha_lib.functional import transpose_qkv

ROOT = Path(__file__).resolve().parents[1]
TINY_BATCH = BatchSweep(batch_sizes=(1, 3), seq_len=4, num_hiddens=8, num_heads=2)
TINY_LENGTH = LengthSweep(seq_lens=(4, 8), batch_size=1, num_hiddens=8, num_heads=2)


@pytest.fixture(scope="module")
def tiny_result() -> BenchResult:
    run = measure_device("cpu", TINY_BATCH, TINY_LENGTH, min_run_time=0.001, num_threads=1)
    return make_result([run], "pytest", 0.001)


# ---------------------------------------------------------------- implementations


@pytest.mark.parametrize("shape", [(1, 4, 8, 2), (3, 5, 12, 3), (4, 2, 6, 1), (2, 7, 20, 4)])
@pytest.mark.parametrize("name", sorted(IMPLEMENTATIONS))
def test_every_implementation_equals_the_layers_attention(name, shape):
    batch_size, seq_len, num_hiddens, num_heads = shape
    mha = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads).double().eval()
    X = torch.randn(batch_size, seq_len, num_hiddens, dtype=torch.float64)
    queries, keys, values = mha.W_q(X), mha.W_k(X), mha.W_v(X)
    # the layer is W_o(attention(...)); undo nothing, just compare before W_o through the fused path
    heads = F.scaled_dot_product_attention(
        *(P.reshape(batch_size, seq_len, num_heads, -1).transpose(1, 2) for P in (queries, keys, values)))
    expected = heads.transpose(1, 2).reshape(batch_size, seq_len, num_hiddens)
    output = IMPLEMENTATIONS[name](queries, keys, values, num_heads)
    torch.testing.assert_close(output, expected, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(mha.W_o(output), mha(X, X, X), rtol=1e-10, atol=1e-10)


def test_implementations_handle_cross_attention_lengths():
    queries, keys, values = torch.randn(2, 3, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    outputs = [fn(queries, keys, values, 4) for fn in (attention_per_sample, attention_per_head, attention_batched)]
    assert outputs[0].shape == (2, 3, 8)
    torch.testing.assert_close(outputs[0], outputs[2])
    torch.testing.assert_close(outputs[1], outputs[2])


@pytest.mark.parametrize("fn", [attention_per_sample, attention_per_head, attention_batched])
def test_implementations_reject_heads_that_do_not_divide(fn):
    X = torch.randn(2, 3, 10)
    with pytest.raises(ValueError, match="num_heads"):
        fn(X, X, X, 3)
    with pytest.raises(ValueError, match="queries must be a 3-D tensor"):
        fn(X[0], X[0], X[0], 2)


def test_call_plan_counts_calls_and_shapes():
    assert call_plan(32, 10, 100, 5) == [
        ("per_sample", 32, (5, 10, 20)),
        ("per_head", 5, (32, 10, 20)),
        ("batched", 1, (160, 10, 20)),
    ]
    with pytest.raises(ValueError, match="num_heads=3 must divide num_hiddens=100"):
        call_plan(2, 10, 100, 3)
    with pytest.raises(ValueError, match="batch_size"):
        call_plan(0, 10, 100, 5)


def test_prefolded_is_the_batched_call_on_folded_inputs():
    queries, keys, values = torch.randn(3, 4, 12), torch.randn(3, 6, 12), torch.randn(3, 6, 12)
    folded = [transpose_qkv(X, 3) for X in (queries, keys, values)]
    torch.testing.assert_close(attention_prefolded(*folded, 3), attention_batched(queries, keys, values, 3))
    with pytest.raises(ValueError, match="num_heads"):
        attention_prefolded(*folded, 2)  # 9 folded rows are not a whole number of samples of 2 heads


@pytest.mark.parametrize(("batch_size", "seq_len", "num_hiddens", "num_heads"), [(4, 10, 100, 5), (256, 10, 100, 5),
                                                                                   (3, 7, 12, 4)])
def test_layout_copies_counts_the_folds_and_the_concatenations(batch_size, seq_len, num_hiddens, num_heads):
    queries, keys, values = random_qkv(batch_size, seq_len, num_hiddens)
    one = batch_size * seq_len * num_hiddens * 4  # bytes of one (batch_size, seq_len, num_hiddens) float32 tensor
    folded = (batch_size * num_heads, seq_len, num_hiddens // num_heads)
    assert layout_copies(attention_per_head, queries, keys, values, num_heads) == [
        LayoutCopy("cat", (batch_size, seq_len, num_hiddens), one)]  # the slices are views
    assert layout_copies(attention_batched, queries, keys, values, num_heads) == [
        LayoutCopy("reshape", folded, one)] * 3 + [LayoutCopy("reshape", (batch_size, seq_len, num_hiddens), one)]
    prefolded = [transpose_qkv(X, num_heads) for X in (queries, keys, values)]
    assert layout_copies(attention_prefolded, *prefolded, num_heads) == [
        LayoutCopy("reshape", (batch_size, seq_len, num_hiddens), one)]
    per_sample = layout_copies(attention_per_sample, queries, keys, values, num_heads)
    assert [c.operation for c in per_sample] == ["reshape"] * batch_size + ["cat"]  # one sample's fold is a view


def test_layout_copies_sees_what_the_profiler_sees():
    # every copy PyTorch makes (aten::clone and aten::cat, bigger than a scalar) is one layout_copies reports:
    # no copy hides inside a matrix product of these implementations
    from torch.profiler import ProfilerActivity, profile

    queries, keys, values = random_qkv(8, 10, 100)
    for fn in (attention_per_head, attention_batched, attention_per_sample):
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            fn(queries, keys, values, 5)
        copied = [event.name for event in prof.events()
                  if event.name in ("aten::clone", "aten::cat", "aten::contiguous")
                  or (event.name == "aten::copy_" and event.input_shapes and event.input_shapes[0])]
        seen = layout_copies(fn, queries, keys, values, 5)
        assert copied.count("aten::clone") == copied.count("aten::copy_") == sum(c.operation != "cat" for c in seen)
        assert copied.count("aten::cat") == sum(c.operation == "cat" for c in seen)


def test_layout_copies_tells_views_from_copies():
    X = torch.arange(24.0).reshape(2, 3, 4)
    assert layout_copies(lambda: (X[:, 1:], X.permute(2, 0, 1), X.transpose(0, 1), X.reshape(6, 4))) == []
    assert layout_copies(lambda: X.permute(1, 0, 2).reshape(3, 8)) == [LayoutCopy("reshape", (3, 8), 96)]
    assert layout_copies(lambda: X.transpose(0, 1).contiguous()) == [LayoutCopy("contiguous", (3, 2, 4), 96)]
    assert layout_copies(lambda: X * 2) == []  # arithmetic writes new memory too, but it is not a layout copy
    with pytest.raises(TypeError, match="fn must be"):
        layout_copies(X)


# ---------------------------------------------------------------- exact costs


def test_flops_count_the_two_products():
    assert attention_flops(1, 1, 1, 1) == 4
    assert attention_flops(2, 3, 5, 8) == 2 * 2 * (3 * 5 * 8) * 2  # two products, 2 FLOPs per multiply-add
    with pytest.raises(ValueError, match="num_kvpairs"):
        attention_flops(1, 1, 0, 1)


def test_peak_flops_table_picks_the_most_specific_name():
    assert peak_flops("NVIDIA H100 80GB HBM3") == (67e12, "NVIDIA H100 datasheet, FP32 (SXM)")
    assert peak_flops("NVIDIA H100 PCIe")[0] == 51e12
    assert peak_flops("NVIDIA H200 NVL")[0] == 60e12
    assert peak_flops("NVIDIA H200")[0] == 67e12
    assert peak_flops("AMD EPYC") is None
    with pytest.raises(TypeError, match="name must be"):
        peak_flops(None)


# ---------------------------------------------------------------- what a CPU core offers


def test_cpu_facts_report_this_machine():
    facts = cpu_facts()
    assert facts["capability"] == torch.backends.cpu.get_cpu_capability()
    assert facts["float32_lanes"] == FLOAT32_LANES.get(facts["capability"])
    assert facts["logical_cores"] >= 1 and facts["torch_threads"] == torch.get_num_threads()
    if Path("/proc/cpuinfo").exists():
        assert 1e8 < facts["clock_hz"] < 1e10  # between 0.1 and 10 GHz
    assert FLOAT32_LANES == {"AVX512": 512 // 32, "AVX2": 256 // 32}  # register bits / bits of a float32


def test_speedups_divide_element_by_element():
    assert speedups([4.0, 9.0], [2.0, 3.0]) == [2.0, 3.0]
    with pytest.raises(ValueError, match="same number of timings"):
        speedups([1.0], [1.0, 2.0])


# ---------------------------------------------------------------- devices and timing


def test_available_devices_start_with_the_cpu_and_each_one_computes():
    devices = available_devices()
    assert devices[0] == torch.device("cpu") and len(set(devices)) == len(devices)
    for device in devices:  # each listed device really runs a computation
        X = torch.ones(2, 2, device=device)
        synchronize(device)
        assert (X @ X).sum().item() == 8.0
    assert device_name("cpu")
    with pytest.raises(ValueError, match="device must be a cpu, cuda or mps"):
        device_name("meta")


def test_median_time_measures_the_work_and_paired_speedups_see_a_slower_function():
    small, large = torch.randn(8, 8), torch.randn(256, 256)
    assert 0 < median_time(lambda: small @ small, "cpu", min_run_time=0.01)
    # 256^3 multiply-adds against 8^3: the large product is many times slower, whatever the machine's load
    ratios = paired_speedups(lambda: large @ large, lambda: small @ small, "cpu", repeats=3, number=2,
                             num_threads=1)
    assert len(ratios) == 3 and sorted(ratios)[1] > 5
    with pytest.raises(ValueError, match="min_run_time"):
        median_time(lambda: None, "cpu", min_run_time=0)
    with pytest.raises(ValueError, match="num_threads"):
        paired_speedups(lambda: None, lambda: None, "cpu", num_threads=0)


def test_thread_speedups_compare_one_thread_with_more():
    before = torch.get_num_threads()
    seen = []
    ratios = thread_speedups(lambda: seen.append(torch.get_num_threads()), 2, repeats=2, number=1)
    assert len(ratios) == 2 and min(ratios) > 0
    assert set(seen) == {1, 2}  # each side really ran with its own thread count
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="num_threads"):
        thread_speedups(lambda: None, 0)


def test_interleaved_times_run_rounds_of_every_call_in_turn():
    seen = []
    times = interleaved_times([lambda i=i: seen.append(i) for i in range(3)], repeats=3, number=1)
    assert [len(t) for t in times] == [3, 3, 3] and min(map(min, times)) > 0
    assert seen[:3] == [0, 1, 2]  # one warm-up call each
    runs = [i for k, i in enumerate(seen[3:]) if k == 0 or seen[3 + k - 1] != i]  # however often the Timer calls
    assert runs == [0, 1, 2, 1, 0, 1, 2]  # rounds 0 1 2, then 2 1 0, then 0 1 2: neighbours never all in one order
    with pytest.raises(ValueError, match="repeats"):
        interleaved_times([lambda: None], repeats=0)


def test_timing_leaves_the_thread_count_as_it_was():
    before = torch.get_num_threads()
    median_time(lambda: None, "cpu", min_run_time=0.001, num_threads=1)
    measure_device("cpu", TINY_BATCH, TINY_LENGTH, min_run_time=0.001, num_threads=1)
    assert torch.get_num_threads() == before


def test_random_qkv_is_seeded():
    first, second = random_qkv(2, 3, 4, seed=5), random_qkv(2, 3, 4, seed=5)
    assert [tuple(X.shape) for X in first] == [(2, 3, 4)] * 3
    for a, b in zip(first, second, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(random_qkv(2, 3, 4, seed=6)[0], first[0])


# ---------------------------------------------------------------- records


def test_a_measured_run_has_the_documented_fields(tiny_result):
    run = tiny_result.runs[0]
    assert isinstance(run, DeviceRun) and tiny_result.schema == SCHEMA
    assert run.device == "cpu" and run.threads == 1 and run.peak_flops is None
    assert run.batch_sweep.batch_sizes == [1, 3]
    assert set(run.batch_sweep.median_s) == {"per_sample", "per_head", "batched"}
    assert run.batch_sweep.flops == [attention_flops(b, 4, 4, 8) for b in (1, 3)]
    sweep = run.length_sweep
    assert sweep.score_bytes == [1 * 2 * n * n * 4 for n in (4, 8)]
    assert sweep.peak_memory_bytes is None  # not measured on the CPU
    assert set(sweep.median_s) == {"explicit", "sdpa"}


def test_save_and_load_round_trip(tiny_result, tmp_path):
    path = save_result(tiny_result, tmp_path)
    assert path.name == f"cpu-{tiny_result.date}.json"
    assert json.loads(path.read_text()) == dataclasses.asdict(tiny_result)
    assert load_result(path) == tiny_result
    assert load_results(tmp_path) == {path.name: tiny_result}
    assert load_results(tmp_path / "empty") == {}
    label = provenance(tiny_result, tiny_result.runs[0])
    assert label.startswith("recorded on ") and "1 thread)" in label and tiny_result.date in label
    with pytest.raises(TypeError, match="result must be a BenchResult"):
        save_result(dataclasses.asdict(tiny_result), tmp_path)


BREAKAGES = [
    (lambda r: r.pop("torch"), "broken.json: torch is missing"),
    (lambda r: r.update(torch=2.13), "broken.json: torch must be str, got float"),
    (lambda r: r.update(schema="other/1"), "broken.json: schema must be"),
    (lambda r: r.update(date="21.11.2026"), "broken.json: date must be YYYY-MM-DD"),
    (lambda r: r.update(runs=[]), "broken.json: runs must hold at least one run"),
    (lambda r: r.update(runs={}), "broken.json: runs must be a list"),
    (lambda r: r["runs"].append(3), r"broken.json: runs\[1\] must be an object"),
    (lambda r: r["runs"][0].update(device="tpu"), r"broken.json: runs\[0\]\.device must be one of"),
    (lambda r: r["runs"][0].update(threads=True), r"runs\[0\]\.threads must be int, got bool"),
    (lambda r: r["runs"][0]["batch_sweep"]["median_s"].pop("batched"),
     r"runs\[0\]\.batch_sweep\.median_s\.batched is missing"),
    (lambda r: r["runs"][0]["batch_sweep"]["median_s"]["per_head"].append(1.0),
     r"batch_sweep\.median_s\.per_head must hold 2 positive numbers"),
    (lambda r: r["runs"][0]["length_sweep"]["median_s"]["sdpa"].__setitem__(0, -1.0),
     r"length_sweep\.median_s\.sdpa must hold 2 positive numbers"),
    (lambda r: r["runs"][0]["length_sweep"]["median_s"]["sdpa"].__setitem__(1, "fast"),
     r"length_sweep\.median_s\.sdpa\[1\] must be float, got str"),
    (lambda r: r["runs"][0]["length_sweep"].update(seq_lens=[4, "8"]), r"length_sweep\.seq_lens\[1\] must be int"),
    (lambda r: r["runs"][0]["length_sweep"].update(score_bytes=[1]), r"length_sweep\.score_bytes must hold 2"),
]


@pytest.mark.parametrize(("breakage", "message"), BREAKAGES)
def test_a_malformed_result_is_rejected_naming_the_file_and_the_field(tiny_result, tmp_path, breakage, message):
    broken = copy.deepcopy(dataclasses.asdict(tiny_result))
    breakage(broken)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match=message) as error:
        load_result(path)
    assert str(error.value).startswith("broken.json")


def test_a_file_that_is_not_json_or_not_an_object_is_rejected(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text('{"schema": "mha-notebooks/bench_batching/1", "runs": [')
    with pytest.raises(ValueError, match="cut.json is not valid JSON"):
        load_result(path)
    with pytest.raises(ValueError, match="^x must be an object, got list"):
        BenchResult.from_dict([], "x")


def test_recorded_results_ship_inside_the_package():
    directory = results_directory()
    assert directory == Path(__import__("mha_chapters.bench").__file__).parent / "bench" / "results"
    results = load_results()
    newest = newest_recording("batching")  # the newest CPU recording, whatever its date
    assert newest.name in results, "a CPU recording of chapter 07's sweeps must ship"
    cpu = results[newest.name]
    raw = json.loads(newest.read_text())
    # its provenance and first numbers, as recorded (converting the format must not change them)
    assert (cpu.torch, cpu.command, cpu.runs[0].threads) == (raw["torch"], raw["command"], raw["runs"][0]["threads"])
    assert cpu.command.startswith("python benchmarks/bench_batching.py")
    assert cpu.runs[0].batch_sweep.median_s["batched"][0] == raw["runs"][0]["batch_sweep"]["median_s"]["batched"][0]
    assert not (ROOT / "benchmarks" / "results").exists(), "recorded results live in mha_chapters/bench/results/"


def test_bench_script_quick_run_writes_a_loadable_result(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_batching", ROOT / "benchmarks" / "bench_batching.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = bench.main(["--quick", "--threads", "1", "--out", str(tmp_path)])
    assert path.parent == tmp_path and path.name.startswith("cpu-")
    result = load_result(path)
    assert result.command == f"python benchmarks/bench_batching.py --quick --threads 1 --out {tmp_path}"
    assert [run.device for run in result.runs] == ["cpu"]
    assert result.runs[0].batch_sweep.batch_sizes == list(bench.BATCH_SWEEPS["quick"].batch_sizes)
    assert result.load_average_1min is None or result.load_average_1min >= 0
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            bench.main(["--device", "cuda", "--out", str(tmp_path)])


# ---------------------------------------------------------------- comparisons and figures


def _with_fake_gpu(result: BenchResult, factor: float) -> BenchResult:
    """A copy of ``result`` with a made-up GPU run ``factor`` times faster; only to test the drawing."""
    gpu = copy.deepcopy(result)
    fake = copy.deepcopy(gpu.runs[0])
    fake.device, fake.name = "cuda", "test GPU"
    fake.batch_sweep.median_s["batched"] = [t / factor for t in fake.batch_sweep.median_s["batched"]]
    gpu.runs.insert(0, fake)
    return gpu


def test_gpu_overtakes_at_finds_the_first_size_from_which_on_it_is_faster(tiny_result):
    cpu = tiny_result.runs[0]
    gpu = copy.deepcopy(cpu)
    gpu.batch_sweep.median_s["batched"] = [cpu.batch_sweep.median_s["batched"][0] * 2,
                                           cpu.batch_sweep.median_s["batched"][1] / 2]
    assert gpu_overtakes_at(cpu, gpu) == 3
    assert gpu_overtakes_at(cpu, _with_fake_gpu(tiny_result, 2.0).runs[0]) == 1
    assert gpu_overtakes_at(cpu, _with_fake_gpu(tiny_result, 0.5).runs[0]) is None
    with pytest.raises(TypeError, match="cpu_run must be a DeviceRun"):
        gpu_overtakes_at({}, gpu)


def _labels(ax) -> list[str]:
    return [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_loops_figure_draws_each_run_with_its_threads(tiny_result):
    one = tiny_result.runs[0]
    every, three = dataclasses.replace(one, threads=2), dataclasses.replace(one, threads=3)
    with cpu_threads(2):  # a live run with every thread PyTorch uses is labelled "all threads", not with a count
        fig = plot_loops_vs_batch([one, every])
        other = _labels(plot_loops_vs_batch([three]).axes[0])
    assert sum(label.endswith("cpu, 3 threads") for label in other) == 3
    assert isinstance(fig, Figure)
    time_ax, speed_ax = fig.axes
    assert time_ax.get_xscale() == time_ax.get_yscale() == "log"
    assert time_ax.get_ylabel() == "median time per call (ms)" and "batch size" in time_ax.get_xlabel()
    labels = _labels(time_ax)
    assert len(labels) == 6 and sum(label.endswith("cpu, 1 thread") for label in labels) == 3
    assert sum(label.endswith("cpu, all threads") for label in labels) == 3
    assert speed_ax.get_title() and speed_ax.get_legend() is not None
    y = time_ax.get_lines()[2].get_ydata()
    assert list(y) == [t * 1e3 for t in one.batch_sweep.median_s["batched"]]


def test_devices_figure_keeps_live_and_recorded_apart_and_draws_no_empty_panel(tiny_result):
    fig = plot_devices(tiny_result.runs, [tiny_result])
    (time_ax,) = fig.axes  # no GPU measured anywhere: no speed-up panel, rather than an empty one
    live, recorded = time_ax.get_lines()
    assert live.get_linestyle() == "-." and recorded.get_linestyle() == "--"  # the live run has 1 thread
    assert live.get_label().startswith("live: cpu") and recorded.get_label().startswith("recorded on ")
    assert fig.legends and time_ax.get_xscale() == "log"
    assert time_ax.get_title() == ""  # one panel: the chapter's suptitle is its only title, not a second one


def test_devices_figure_draws_a_speedup_when_a_gpu_run_is_present(tiny_result):
    fig = plot_devices([], [_with_fake_gpu(tiny_result, 2.0)])
    speed_ax = fig.axes[1]
    (line,) = [line for line in speed_ax.get_lines() if "test GPU vs its CPU" in line.get_label()]
    assert all(math.isclose(y, 2.0) for y in line.get_ydata())
    assert not speed_ax.texts
    assert fig.axes[0].get_title() and speed_ax.get_title()  # two panels: each names what it shows


def test_length_figure_draws_the_score_memory_as_a_formula(tiny_result):
    fig = plot_length_sweep(tiny_result.runs, [tiny_result])
    time_ax, memory_ax = fig.axes
    assert memory_ax.get_ylabel() == "memory (MiB)" and memory_ax.get_yscale() == "log"
    assert "formula" in memory_ax.get_title() and "measured only on CUDA" in memory_ax.get_title()
    exact = [line for line in memory_ax.get_lines() if line.get_label().startswith("one score tensor, formula")]
    assert list(exact[0].get_ydata()) == [1 * 2 * n * n * 4 / 2**20 for n in (4, 8)]
    assert len(_labels(time_ax)) == 4  # explicit and sdpa, live and recorded
    with pytest.raises(ValueError, match="no run to draw"):
        plot_length_sweep([], [])


def test_machine_summary_names_the_cpu_its_caches_and_threads():
    from mha_chapters.bench.timing import cpu_caches, device_name, machine_summary

    line = machine_summary(1)
    assert line.startswith(device_name("cpu"))
    assert line.endswith("1 thread")
    assert machine_summary(3).endswith("3 threads")
    for name, size in cpu_caches().items():
        assert (f"{name} {size}" in line) != name.endswith("i")  # data and unified caches, never instruction


def test_paired_length_ratios_time_the_checked_calls_in_pairs():
    from mha_chapters.bench.sweeps import LengthSweep, length_calls, paired_length_ratios

    sweep = LengthSweep(seq_lens=(8, 16), batch_size=1, num_hiddens=8, num_heads=2)
    ratios = paired_length_ratios(sweep, repeats=7, number=1)
    assert list(ratios) == [8, 16] and all(len(r) == 7 and min(r) > 0 for r in ratios.values())
    calls = length_calls(sweep, 16)
    assert calls["explicit"]().shape == (2, 16, 4) and calls["sdpa"]().shape == (1, 2, 16, 4)
    with pytest.raises(ValueError):
        paired_length_ratios(LengthSweep(seq_lens=(0,)))


@pytest.mark.skipif(sys.platform not in ("linux", "darwin"), reason="the OS counts minor page faults")
def test_page_faults_per_call_counts_fresh_pages_of_large_results():
    from mha_chapters.bench.timing import page_faults_per_call

    small = page_faults_per_call(lambda: torch.ones(16))
    large = page_faults_per_call(lambda: torch.ones(64 * 2**20 // 4))  # 64 MiB: fresh pages every call
    assert small < 10 and large > 0.5 * 64 * 2**20 / 4096
    with pytest.raises(ValueError):
        page_faults_per_call(lambda: None, calls=0)


# ---------------------------------------------------------------- paired rounds, the clock


def test_the_batch_sweep_keeps_each_rounds_speed_up_and_the_figure_draws_their_spread(tiny_result):
    sweep = tiny_result.runs[0].batch_sweep
    assert set(sweep.round_speedups) == {"per_sample", "per_head"}
    for loop, rounds in sweep.round_speedups.items():
        assert len(rounds) == len(sweep.batch_sizes) and all(len(ratios) == 9 for ratios in rounds)
        assert all(ratio > 0 for ratios in rounds for ratio in ratios), loop
    fig = plot_loops_vs_batch(tiny_result.runs)
    speed_ax = fig.axes[1]
    assert len(speed_ax.collections) == 2  # a min-max band per loop, around the median line
    again = BenchResult.from_dict(json.loads(json.dumps(tiny_result.to_dict())))  # it survives the JSON file
    assert again.runs[0].batch_sweep.round_speedups == sweep.round_speedups
    older = tiny_result.to_dict()
    del older["runs"][0]["batch_sweep"]["round_speedups"]  # a recording made before the rounds were kept
    assert BenchResult.from_dict(older).runs[0].batch_sweep.round_speedups is None
    plot_loops_vs_batch(BenchResult.from_dict(older).runs)
    broken = tiny_result.to_dict()
    broken["runs"][0]["batch_sweep"]["round_speedups"]["per_head"] = [[1.0]]
    with pytest.raises(ValueError, match="round_speedups.per_head"):
        BenchResult.from_dict(broken)


def test_the_clock_is_the_cores_maximum_where_linux_gives_it(tmp_path):
    from mha_chapters.batching import _cpufreq_max_hz

    assert _cpufreq_max_hz(tmp_path) is None  # no cpufreq (a virtual machine): cpu_facts falls back to /proc/cpuinfo
    for core, khz in ((0, "3700000"), (1, "3500000\n")):
        folder = tmp_path / f"cpu{core}" / "cpufreq"
        folder.mkdir(parents=True)
        (folder / "cpuinfo_max_freq").write_text(khz)
    assert _cpufreq_max_hz(tmp_path) == 3.7e9
    facts = cpu_facts()
    assert isinstance(facts["clock_is_max"], bool)
