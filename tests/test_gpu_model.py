"""Chapter 07's GPU half without a GPU: the H100 SXM's datasheet model (roofline, occupancy), the layer's counted
FLOPs and least bytes, and the paired wall / CPU timing of its CPU half (mha_chapters.batching,
mha_chapters.bench.timing)."""

import os
import time

import pytest
from matplotlib.figure import Figure

from mha_chapters.batching import (
    H100_SXM,
    PUBLISHED_ATTENTION,
    GpuSpec,
    busy_sms,
    layer_traffic,
    plot_roofline,
    ridge_batch,
    roofline_seconds,
)
from mha_chapters.bench.timing import paired_wall_and_cpu

BATCHES = (1, 4, 16, 32, 64, 256, 1024, 4096)


def test_the_ridge_point_is_the_datasheet_peak_over_its_bandwidth():
    assert H100_SXM.peak_flops == pytest.approx(989.5e12)  # half the datasheet's 1,979 TFLOPS with sparsity
    assert H100_SXM.bandwidth == 3.35e12
    assert H100_SXM.ridge_point == pytest.approx(295.37, abs=0.01)
    assert any("nvidia.com" in source for source in H100_SXM.sources)
    slow_memory = H100_SXM._replace(bandwidth=H100_SXM.bandwidth / 2)
    assert slow_memory.ridge_point == pytest.approx(2 * H100_SXM.ridge_point)


@pytest.mark.parametrize("batch_size, seq_len, num_hiddens, num_heads", [(1, 10, 100, 5), (32, 10, 100, 5),
                                                                        (3, 7, 64, 4), (64, 10, 1024, 16)])
def test_the_counted_flops_and_the_least_bytes_follow_the_layers_sizes(batch_size, seq_len, num_hiddens, num_heads):
    traffic = layer_traffic(batch_size, seq_len, num_hiddens, num_heads)
    tokens = batch_size * seq_len
    # four projections of 2 * d^2 FLOPs per token, and Q K^T plus weights @ V of 2 * n * d each per token
    assert traffic.flops == 8 * tokens * num_hiddens**2 + 4 * tokens * seq_len * num_hiddens
    assert traffic.nbytes == 2 * (4 * num_hiddens**2 + 2 * tokens * num_hiddens)  # FP16: weights, input, output
    assert layer_traffic(batch_size, seq_len, num_hiddens, num_heads, bytes_per_number=4).nbytes == 2 * traffic.nbytes
    assert traffic.intensity == traffic.flops / traffic.nbytes


def test_the_small_layer_never_reaches_the_ridge_and_the_wide_one_does_between_32_and_64():
    small = [layer_traffic(b, 10, 100, 5) for b in BATCHES]
    wide = [layer_traffic(b, 10, 1024, 16) for b in BATCHES]
    for traffics in (small, wide):
        assert all(a.intensity < b.intensity for a, b in zip(traffics, traffics[1:], strict=False))
    assert ridge_batch(small) is None and small[-1].intensity < 210  # levels off at (8 d^2 + 4 n d) / 4 d = 210
    assert ridge_batch(wide) == 64 and wide[BATCHES.index(32)].intensity < H100_SXM.ridge_point
    # below the ridge, the model's time is the weights' bytes: 32 samples cost about one
    assert roofline_seconds(wide[BATCHES.index(32)]) < 1.2 * roofline_seconds(wide[0])
    assert roofline_seconds(wide[-1]) == pytest.approx(wide[-1].flops / H100_SXM.peak_flops)  # compute-bound
    assert roofline_seconds(small[0]) == pytest.approx(small[0].nbytes / H100_SXM.bandwidth)  # memory-bound
    fast = GpuSpec(**{**H100_SXM._asdict(), "bandwidth": 1e15})  # a ridge of ~1 FLOP per byte
    assert ridge_batch(small, fast) == 1


def test_busy_sms_counts_one_block_per_sm_at_most():
    assert busy_sms(5) == pytest.approx(5 / 132)
    assert busy_sms(132) == 1.0 and busy_sms(160) == 1.0
    with pytest.raises(ValueError, match="num_blocks"):
        busy_sms(0)


@pytest.mark.parametrize("name, kwargs", [("batch_size", {"batch_size": 0}), ("seq_len", {"seq_len": -1}),
                                          ("bytes_per_number", {"bytes_per_number": 0})])
def test_layer_traffic_names_a_bad_argument(name, kwargs):
    arguments = {"batch_size": 2, "seq_len": 4, "num_hiddens": 8, "num_heads": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        layer_traffic(**arguments)


def test_published_measurements_carry_their_source_and_stay_under_the_peak():
    for what, device, flops, source in PUBLISHED_ATTENTION:
        assert what
        assert "H100" in device and "arXiv" in source and 0 < flops < H100_SXM.peak_flops
    assert PUBLISHED_ATTENTION[0][2] == 740e12


def test_the_roofline_is_log_log_with_a_line_per_published_measurement():
    fig = plot_roofline({"small": [layer_traffic(b, 10, 100, 5) for b in (1, 32)]})
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    dashed = sorted(value for line in ax.get_lines() if line.get_linestyle() == "--"
                    for value in (line.get_ydata()[0], line.get_xdata()[0]))
    published = sorted(value for _, _, flops, _ in PUBLISHED_ATTENTION
                       for value in (flops / 1e12, flops / H100_SXM.bandwidth))
    assert dashed == pytest.approx(published)  # each rate from the least intensity at which the roofline allows it
    with pytest.raises(ValueError, match="layers"):
        plot_roofline({})


def test_paired_wall_and_cpu_tells_waiting_from_working():
    def sleeper():
        time.sleep(0.004)

    def worker():
        sum(range(20_000))

    times = paired_wall_and_cpu(sleeper, worker, repeats=4, window_s=0.01, num_threads=1)
    assert set(times) == {"wall", "cpu"} and all(len(side) == 4 for pair in times.values() for side in pair)
    sleep_wall, work_wall = times["wall"]
    sleep_cpu, work_cpu = times["cpu"]
    assert min(sleep_wall) >= 0.004
    assert max(sleep_cpu) < 0.5 * min(sleep_wall)  # sleeping takes wall time, hardly any CPU time
    assert all(cpu > 0 for cpu in work_cpu) and all(wall > 0 for wall in work_wall)
    with pytest.raises(ValueError, match="repeats"):
        paired_wall_and_cpu(worker, worker, repeats=0)
    with pytest.raises(ValueError, match="window_s"):
        paired_wall_and_cpu(worker, worker, window_s=0)


def test_cpu_time_windows_are_long_enough_to_count_the_cores():
    """Over windows of a few calls the process's CPU time can read more cores than there are; over 20 ms it cannot."""
    import torch

    from mha_chapters.batching import attention_batched
    from mha_chapters.bench.sweeps import random_qkv
    from mha_chapters.bench.timing import calls_per_window

    queries, keys, values = random_qkv(32, 10, 100)
    call = lambda: attention_batched(queries, keys, values, 5)  # noqa: E731 - a call of a fraction of a millisecond
    assert calls_per_window([call], 1e-9) == 1 and calls_per_window([call], 10.0) > 1  # at least one call, and enough
    threads = min(2, os.cpu_count() or 1)
    times = paired_wall_and_cpu(call, call, repeats=3, num_threads=threads)
    for wall, cpu in zip(times["wall"][1], times["cpu"][1], strict=True):
        assert cpu / wall <= threads * 1.15, (cpu, wall, torch.get_num_threads())
