"""mha_chapters.tiled (chapter 10): online softmax and tiled attention against PyTorch, the memory counts."""

import importlib.util
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from mha_chapters.tiled import (
    flash_attention_backward,
    flash_attention_forward,
    full_score_bytes,
    io_bytes,
    measure_peak_bytes,
    num_tiles,
    online_softmax,
    online_softmax_steps,
    plot_io_by_tile,
    plot_memory_by_tile,
    plot_tiles,
    tile_size_report,
    tiled_attention,
    tiled_state_bytes,
)
from mha_lib import causal_mask, dot_product_attention

ROOT = Path(__file__).resolve().parents[1]
FLOAT32 = {"atol": 1e-5, "rtol": 1e-5}  # the tolerance stated in chapter 10 for float32


def qkv(lead, num_queries, num_kvpairs, d=8, value_dim=6, dtype=torch.float64, seed=0):
    generator = torch.Generator().manual_seed(seed)
    def make(*shape):
        return torch.randn(*shape, generator=generator, dtype=dtype)
    return make(*lead, num_queries, d), make(*lead, num_kvpairs, d), make(*lead, num_kvpairs, value_dim)


# online softmax


@pytest.mark.parametrize("tile_size", [1, 2, 3, 7, 50])
@pytest.mark.parametrize("shape", [(7,), (3, 7), (2, 4, 13)])
def test_online_softmax_matches_torch_softmax(shape, tile_size):
    x = 5 * torch.randn(*shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    torch.testing.assert_close(online_softmax(x, tile_size), torch.softmax(x, dim=-1), atol=1e-14, rtol=1e-12)


def test_online_softmax_survives_large_scores_and_minus_infinity():
    x = torch.tensor([[1000.0, 1001.0, -math.inf, 999.0], [-math.inf, -math.inf, 2.0, 1.0]])
    torch.testing.assert_close(online_softmax(x, 1), torch.softmax(x, dim=-1))
    assert torch.isnan(online_softmax(torch.full((1, 3), -math.inf), 2)).all()  # as torch.softmax


def test_online_softmax_steps_rescale_the_sum_when_the_maximum_grows():
    steps = online_softmax_steps(torch.tensor([1.0, 3.0, 2.0, 5.0, 0.0]), tile_size=2)
    assert [s.running_max for s in steps] == [3.0, 5.0, 5.0]
    assert steps[1].rescale == pytest.approx(math.exp(3.0 - 5.0))
    assert steps[2].rescale == 1.0  # the maximum did not change
    expected = sum(math.exp(v - 5.0) for v in (1.0, 3.0, 2.0, 5.0, 0.0))
    assert steps[-1].running_sum == pytest.approx(expected)
    assert [len(s.tile) for s in steps] == [2, 2, 1]


# tiled attention against F.scaled_dot_product_attention


@pytest.mark.parametrize("tile_size", [1, 3, 4, 16, 100])
@pytest.mark.parametrize(("lead", "num_queries", "num_kvpairs"), [((2, 3), 5, 16), ((4,), 9, 13), ((1, 1), 1, 1),
                                                                   ((2,), 17, 6)])
def test_tiled_attention_matches_sdpa_float64(lead, num_queries, num_kvpairs, tile_size):
    q, k, v = qkv(lead, num_queries, num_kvpairs)
    expected = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(tiled_attention(q, k, v, tile_size), expected, atol=1e-13, rtol=1e-12)


@pytest.mark.parametrize("tile_size", [1, 5, 32, 64])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tiled_attention_matches_sdpa_float32(tile_size, seed):
    q, k, v = qkv((2, 4), 33, 70, d=16, value_dim=16, dtype=torch.float32, seed=seed)
    torch.testing.assert_close(tiled_attention(q, k, v, tile_size), F.scaled_dot_product_attention(q, k, v),
                               **FLOAT32)


@pytest.mark.parametrize("tile_size", [1, 4, 5, 16])
@pytest.mark.parametrize("num_queries", [3, 11, 20])
def test_causal_matches_sdpa_is_causal(num_queries, tile_size):
    q, k, v = qkv((2, 2), num_queries, 11)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(tiled_attention(q, k, v, tile_size, causal=True), expected, atol=1e-13, rtol=1e-12)


@pytest.mark.parametrize("tile_size", [1, 3, 8])
@pytest.mark.parametrize("mask_shape", [(2, 3, 7, 10), (2, 1, 7, 10), (7, 10), (1, 10)])
def test_boolean_mask_matches_sdpa(mask_shape, tile_size):
    q, k, v = qkv((2, 3), 7, 10)
    mask = torch.rand(mask_shape, generator=torch.Generator().manual_seed(3)) > 0.4
    mask[..., 0] = True  # every query sees a key: SDPA's result is defined
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(tiled_attention(q, k, v, tile_size, mask=mask), expected, atol=1e-13, rtol=1e-12)


@pytest.mark.parametrize("tile_size", [1, 2, 4, 10])
def test_rows_without_a_visible_key_give_zero_like_dot_product_attention(tile_size):
    q, k, v = qkv((3,), 6, 10)
    mask = torch.rand(3, 6, 10, generator=torch.Generator().manual_seed(4)) > 0.5
    mask[0, 2] = False  # no visible key at all
    mask[1, 4, :] = False
    mask[1, 4, 9] = True  # the only visible key is in the last tile: the first tiles see -inf only
    got = tiled_attention(q, k, v, tile_size, mask=mask)
    assert not torch.isnan(got).any()
    assert torch.equal(got[0, 2], torch.zeros(6, dtype=torch.float64))
    torch.testing.assert_close(got, dot_product_attention(q, k, v, mask)[0], atol=1e-13, rtol=1e-12)
    torch.testing.assert_close(got[1, 4], v[1, 9])


def test_mask_and_causal_together():
    q, k, v = qkv((2,), 8, 8)
    mask = torch.rand(2, 8, 8, generator=torch.Generator().manual_seed(5)) > 0.3
    both = mask & causal_mask(8)
    expected = dot_product_attention(q, k, v, both)[0]
    torch.testing.assert_close(tiled_attention(q, k, v, 3, mask=mask, causal=True), expected, atol=1e-13, rtol=1e-12)


def test_float32_result_does_not_depend_on_the_tile_size_beyond_rounding():
    q, k, v = qkv((4,), 64, 256, d=32, value_dim=32, dtype=torch.float32)
    reference = tiled_attention(q, k, v, 256)
    for tile_size in (1, 7, 64, 100):
        torch.testing.assert_close(tiled_attention(q, k, v, tile_size), reference, **FLOAT32)


def test_gradients_flow_and_match():
    q, k, v = (t.requires_grad_() for t in qkv((2,), 4, 9))
    tiled_attention(q, k, v, 4).sum().backward()
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    F.scaled_dot_product_attention(q, k, v).sum().backward()
    for got, t in zip(grads, (q, k, v), strict=True):
        torch.testing.assert_close(got, t.grad)


def test_inputs_are_left_unchanged():
    q, k, v = qkv((2,), 4, 9)
    mask = torch.rand(2, 4, 9, generator=torch.Generator().manual_seed(6)) > 0.5
    copies = [t.clone() for t in (q, k, v, mask)]
    tiled_attention(q, k, v, 2, mask=mask, causal=True)
    assert all(torch.equal(a, b) for a, b in zip((q, k, v, mask), copies, strict=True))


# bad input


@pytest.mark.parametrize(("tile_size", "error", "message"), [
    (0, ValueError, "tile_size must be at least 1.*got 0"),
    (-3, ValueError, "tile_size must be at least 1"),
    (2.0, TypeError, "tile_size must be an int.*float"),
    (True, TypeError, "tile_size must be an int.*bool"),
    ("4", TypeError, "tile_size must be an int.*str"),
])
def test_bad_tile_size(tile_size, error, message):
    q, k, v = qkv((2,), 4, 9)
    with pytest.raises(error, match=message):
        tiled_attention(q, k, v, tile_size)
    with pytest.raises(error, match=message):
        online_softmax(q, tile_size)


def test_bad_shapes_and_masks():
    q, k, v = qkv((2,), 4, 9)
    with pytest.raises(ValueError, match="same number of features d"):
        tiled_attention(q, k[..., :5], v, 2)
    with pytest.raises(ValueError, match="same number of key-value pairs"):
        tiled_attention(q, k, v[:, :8], 2)
    with pytest.raises(ValueError, match="leading"):
        tiled_attention(q, k[:1], v[:1], 2)
    with pytest.raises(TypeError, match="mask must be a boolean tensor"):
        tiled_attention(q, k, v, 2, mask=torch.ones(4, 9))
    with pytest.raises(ValueError, match=r"mask must broadcast to.*\(2, 4, 9\)"):
        tiled_attention(q, k, v, 2, mask=torch.ones(4, 8, dtype=torch.bool))
    with pytest.raises(TypeError, match="causal must be True or False"):
        tiled_attention(q, k, v, 2, causal=1)
    with pytest.raises(TypeError, match="floating-point"):
        tiled_attention(q.long(), k, v, 2)
    with pytest.raises(ValueError, match="at least one axis"):
        online_softmax(torch.tensor(1.0))


# counts


def test_num_tiles():
    assert num_tiles(1000, 128) == 8  # the last tile holds 104 keys
    assert num_tiles(1024, 128) == 8
    assert num_tiles(10, 100) == 1
    assert num_tiles(7, 1) == 7
    assert num_tiles(1000, 128, num_queries=300, causal=True) == 3  # keys 300..999 are hidden from every query
    with pytest.raises(TypeError, match="num_queries must be a positive int, got None"):
        num_tiles(10, 2, causal=True)
    with pytest.raises(TypeError, match="num_kvpairs must be a positive int, got '10'"):  # a wrong kind: TypeError
        num_tiles("10", 2)


@pytest.mark.parametrize(("num_kvpairs", "tile_size", "causal"), [(16, 4, False), (13, 5, False), (13, 4, True),
                                                                  (6, 10, False)])
def test_num_tiles_counts_the_steps_tiled_attention_takes(num_kvpairs, tile_size, causal, monkeypatch):
    q, k, v = qkv((1,), 9, num_kvpairs)
    calls = []
    original = torch.Tensor.amax
    monkeypatch.setattr(torch.Tensor, "amax", lambda self, *a, **kw: calls.append(1) or original(self, *a, **kw))
    tiled_attention(q, k, v, tile_size, causal=causal)
    assert len(calls) == num_tiles(num_kvpairs, tile_size, num_queries=9, causal=causal)


def test_memory_formulas_by_hand():
    # 2 * 8 query rows, each with a tile of 64 scores, a max, a sum and 64 accumulated values, in float32
    assert tiled_state_bytes(16, 128, 1024, 64, 64) == 16 * 128 * (64 + 2 + 64) * 4
    assert tiled_state_bytes(16, 128, 1024, 64, 4096) == 16 * 128 * (1024 + 2 + 64) * 4  # the tile is cut at n_kv
    assert tiled_state_bytes(1, 1, 1, 1, 1, torch.float16) == 8
    assert full_score_bytes(16, 128, 1024) == 16 * 128 * 1024 * 4 == 8 * 2**20
    assert full_score_bytes(2, 3, 4, torch.float64) == 192
    with pytest.raises(ValueError, match="tile_size must be at least 1"):
        tiled_state_bytes(1, 1, 1, 1, 0)
    with pytest.raises(TypeError, match="dtype must be a torch.dtype"):
        full_score_bytes(1, 1, 1, "float32")


def test_measured_peak_of_the_explicit_path_holds_scores_and_weights():
    q, k, v = qkv((4,), 16, 64, d=8, value_dim=8, dtype=torch.float32)
    measured = measure_peak_bytes(dot_product_attention, q, k, v)
    assert measured >= 2 * full_score_bytes(4, 16, 64)  # scores and weights live together


def test_measured_peak_of_tiled_attention_is_at_least_the_formula_and_grows_with_the_tile():
    q, k, v = qkv((4,), 16, 128, d=8, value_dim=8, dtype=torch.float32)
    peaks = []
    for tile_size in (1, 16, 64, 128):
        measured = measure_peak_bytes(tiled_attention, q, k, v, tile_size)
        assert measured >= tiled_state_bytes(4, 16, 128, 8, tile_size)
        peaks.append(measured)
    assert peaks == sorted(peaks) and peaks[0] < peaks[-1]
    assert peaks[1] < 2 * full_score_bytes(4, 16, 128)


def test_measured_peak_of_tiled_attention_does_not_grow_with_the_number_of_keys():
    peaks = []
    for num_kvpairs in (64, 256, 1024):
        q, k, v = qkv((2,), 16, num_kvpairs, d=8, value_dim=8, dtype=torch.float32)
        peaks.append(measure_peak_bytes(tiled_attention, q, k, v, 32))
    assert peaks[0] == peaks[1] == peaks[2]


def test_measure_peak_bytes_counts_new_tensors_not_inputs_or_views():
    x = torch.zeros(1000)
    assert measure_peak_bytes(lambda t: t[:10].view(2, 5), x) == 0
    assert measure_peak_bytes(lambda t: t + 1, x) == 4000
    assert measure_peak_bytes(lambda t: (t + 1) * 2, x) == 8000  # t + 1 lives until the product exists
    with pytest.raises(TypeError, match="fn must be callable"):
        measure_peak_bytes(3, x)


# the figure


@pytest.mark.parametrize(("step", "causal"), [(0, False), (2, False), (1, True)])
def test_plot_tiles(step, causal):
    fig = plot_tiles(8, 24, 4, step, causal=causal)
    assert isinstance(fig, Figure)
    grid_ax, state_ax = fig.axes
    assert grid_ax.get_xlabel() == "keys" and grid_ax.get_ylabel() == "queries"
    assert f"step {step + 1} of {num_tiles(24, 4, num_queries=8, causal=causal)}" in grid_ax.get_title()
    widths = [bar.get_width() for bar in state_ax.patches]
    assert widths == [8 * 4, 8, 8, 8 * 4, 8 * (4 + 2 + 4), 8 * 24]


def test_plot_tiles_bad_step():
    with pytest.raises(ValueError, match=r"step must be an int in \[0, 1\]"):
        plot_tiles(8, 24, 4, 2, causal=True)  # keys 8..23 lie above the diagonal: 2 tiles
    with pytest.raises(ValueError, match="tile_size must be at least 1"):
        plot_tiles(8, 24, 0, 0)


# the benchmark script


def test_bench_tiled_quick_runs_and_prints_ratios(capsys):
    spec = importlib.util.spec_from_file_location("bench_tiled", ROOT / "benchmarks" / "bench_tiled.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--quick", "--number", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 2  # the header, one tile size and the explicit path for one length
    assert "L1d" in lines[0] or "thread" in lines[0]  # the machine is named in the header
    assert all("ratio" in line and "-" in line.split("ratio")[1] for line in lines[1:])  # median (min-max)


# the slider's helpers


def test_tile_size_report_changes_memory_not_the_result():
    q, k, v = qkv((2, 2), 32, 40, d=8, value_dim=8, dtype=torch.float32)
    small, large = tile_size_report(q, k, v, 4), tile_size_report(q, k, v, 40)
    assert (small.num_tiles, large.num_tiles) == (10, 1)
    assert small.max_abs_difference < 1e-6 and large.max_abs_difference < 1e-6
    assert small.state_bytes == tiled_state_bytes(4, 32, 40, 8, 4) < large.state_bytes
    assert small.measured_peak_bytes < large.measured_peak_bytes
    assert small.full_score_bytes == large.full_score_bytes == full_score_bytes(4, 32, 40)


def test_plot_memory_by_tile_marks_the_chosen_tile_size():
    fig = plot_memory_by_tile(8, 256, 256, 16, 48)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xlabel().startswith("tile_size")
    curve, *_, marker = ax.get_lines()
    assert len(curve.get_xdata()) == 256
    assert curve.get_ydata()[47] == tiled_state_bytes(8, 256, 256, 16, 48) / 2**20
    assert list(marker.get_xdata()) == [48]
    assert "tile_size=48" in marker.get_label()


def test_plot_memory_by_tile_draws_measured_peaks_beside_the_count():
    measured = {16: 2_000_000, 64: 3_000_000}
    ax = plot_memory_by_tile(8, 256, 256, 16, 48, measured=measured).axes[0]
    points = [line for line in ax.get_lines() if "measured" in line.get_label()]
    assert len(points) == 1 and list(points[0].get_xdata()) == [16, 64]
    assert list(points[0].get_ydata()) == [2_000_000 / 2**20, 3_000_000 / 2**20]


# the FlashAttention-2 order and the backward pass


FLASH_CASES = [((2, 3), 10, 10, 3, 4), ((2,), 16, 16, 4, 4), ((1, 2), 7, 12, 2, 5), ((3,), 12, 7, 5, 2),
               ((2,), 9, 9, 100, 100), ((), 6, 11, 1, 1)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("lead", "num_queries", "num_kvpairs", "query_tile", "key_tile"), FLASH_CASES)
def test_flash_forward_and_backward_match_autograd_through_sdpa(lead, num_queries, num_kvpairs, query_tile,
                                                               key_tile, causal):
    q, k, v = (x.requires_grad_() for x in qkv(lead, num_queries, num_kvpairs, seed=num_queries + key_tile))
    grad_output = torch.randn(*lead, num_queries, v.shape[-1], generator=torch.Generator().manual_seed(5),
                              dtype=torch.float64)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    expected.backward(grad_output)
    with torch.no_grad():
        output, logsumexp = flash_attention_forward(q, k, v, query_tile, key_tile, causal)
        grads = flash_attention_backward(q, k, v, output, logsumexp, grad_output, query_tile, key_tile, causal)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if causal:
            scores = scores.masked_fill(~causal_mask(num_queries, num_kvpairs), -math.inf)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(logsumexp, torch.logsumexp(scores, dim=-1))
    for ours, x in zip(grads, (q, k, v), strict=True):
        torch.testing.assert_close(ours, x.grad)


def test_flash_forward_equals_tiled_attention_in_float32():
    q, k, v = qkv((2, 4), 33, 40, dtype=torch.float32)
    output, _ = flash_attention_forward(q, k, v, 8, 16, causal=True)
    torch.testing.assert_close(output, tiled_attention(q, k, v, 16, causal=True), **FLOAT32)


def test_flash_backward_skips_nothing_it_needs_and_a_wrong_logsumexp_is_noticed():
    q, k, v = qkv((2,), 8, 8)
    grad_output = torch.ones(2, 8, v.shape[-1], dtype=torch.float64)
    output, logsumexp = flash_attention_forward(q, k, v, 4, 4)
    right = flash_attention_backward(q, k, v, output, logsumexp, grad_output, 4, 4)
    wrong = flash_attention_backward(q, k, v, output, logsumexp + 1, grad_output, 4, 4)
    assert not torch.allclose(right[2], wrong[2])  # dV depends on the recomputed weights


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"query_tile": 0}, ValueError, "query_tile must be at least 1"),
    ({"key_tile": 2.0}, TypeError, "key_tile must be an int"),
    ({"causal": 1}, TypeError, "causal"),
])
def test_flash_bad_arguments(kwargs, error, message):
    q, k, v = qkv((1,), 4, 4)
    arguments = {"query_tile": 2, "key_tile": 2, "causal": False, **kwargs}
    with pytest.raises(error, match=message):
        flash_attention_forward(q, k, v, **arguments)


# the IO model


def test_io_bytes_by_hand():
    n, d = 1024, 64
    assert io_bytes(n, d, None) == (4 * n * d + 4 * n * n) * 4
    assert io_bytes(n, d, 128, torch.bfloat16) == (2 * n * d + n + 2 * n * d * 8) * 2
    assert io_bytes(n, d, 100) == (2 * n * d + n + 2 * n * d * 11) * 4  # ceil(1024 / 100) blocks


def test_io_bytes_falls_with_the_block_and_beats_the_explicit_path_for_long_sequences():
    moved = [io_bytes(4096, 64, t) for t in (1, 16, 128, 4096)]
    assert moved == sorted(moved, reverse=True)
    assert io_bytes(4096, 64, 128) * 3 < io_bytes(4096, 64, None)
    assert io_bytes(4096, 64, 1) > io_bytes(4096, 64, None)  # blocks of one query re-read K and V n times
    # Theorem 2: with blocks of M / d queries the count is Theta(n^2 d^2 / M): doubling M about halves it
    n, d = 8192, 64
    big, small = (io_bytes(n, d, m // d) - io_bytes(n, d, n) for m in (2**14, 2**15))
    assert big / small == pytest.approx(2.0, rel=0.05)


def test_io_bytes_bad_input():
    with pytest.raises(ValueError, match="seq_len"):
        io_bytes(0, 64, 8)
    with pytest.raises(TypeError, match="query_tile must be an int"):
        io_bytes(64, 64, 8.0)


def test_plot_io_by_tile_says_it_is_a_model():
    fig = plot_io_by_tile(1024, 64)
    ax = fig.axes[0]
    assert "model" in ax.get_title().lower() and "model" in ax.get_ylabel().lower()
    assert len(ax.lines[0].get_xdata()) == 11  # 1, 2, ..., 1024 queries per block
