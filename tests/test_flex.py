"""mha_lib.flex: every mask_mod and score_mod against the dense form built the obvious way, and through
flex_attention (eager) against F.scaled_dot_product_attention and mha_lib.dot_product_attention."""

import math
import statistics
import warnings

import pytest
import torch
import torch.nn.functional as F

from mha_chapters.flex import document_offsets_mask_mod, neighborhood_mask_mod
from mha_lib import MultiHeadAttention, attention_mask, dot_product_attention
from mha_lib.flex import (
    FULL,
    PARTIAL,
    SKIPPED,
    alibi_score_mod,
    alibi_slopes,
    apply_score_mod,
    block_tiles,
    causal_mask_mod,
    dense_mask,
    document_mask_mod,
    flex_attention_available,
    key_padding_mask_mod,
    padding_mask_mod,
    prefix_lm_mask_mod,
    relative_bias_score_mod,
    sink_mask_mod,
    sliding_window_mask_mod,
    softcap_score_mod,
)

needs_flex = pytest.mark.skipif(not flex_attention_available(), reason="this torch has no flex_attention (needs 2.5+)")
SIZES = [(1, 1, 1), (2, 3, 7), (3, 2, 16)]  # (batch_size, num_heads, sequence)
TOL = {"atol": 1e-5, "rtol": 1e-5}  # float32: the same sums in another order


def grid(seq):
    q_idx = torch.arange(seq).view(-1, 1)
    kv_idx = torch.arange(seq).view(1, -1)
    return q_idx, kv_idx


def loop_mask(rule, batch_size, num_heads, seq):
    """The obvious way: a Python loop over every entry."""
    out = torch.zeros(batch_size, num_heads, seq, seq, dtype=torch.bool)
    for b in range(batch_size):
        for h in range(num_heads):
            for i in range(seq):
                for j in range(seq):
                    out[b, h, i, j] = bool(rule(b, h, i, j))
    return out


@pytest.mark.parametrize("batch_size, num_heads, seq", SIZES)
def test_masks_equal_their_loops(batch_size, num_heads, seq):
    gen = torch.Generator().manual_seed(seq)
    valid_lens = torch.randint(0, seq + 1, (batch_size,), generator=gen)
    docs = torch.randint(0, 2, (batch_size, seq), generator=gen).cumsum(-1)
    padding = torch.arange(seq) >= valid_lens.view(-1, 1)
    window, prefix = 3, seq // 2
    cases = [
        (padding_mask_mod(valid_lens), lambda b, h, i, j: j < valid_lens[b]),
        (key_padding_mask_mod(padding), lambda b, h, i, j: not padding[b, j]),
        (causal_mask_mod(), lambda b, h, i, j: j <= i),
        (sliding_window_mask_mod(window), lambda b, h, i, j: abs(i - j) < window),
        (sliding_window_mask_mod(window, causal=True), lambda b, h, i, j: i - window < j <= i),
        (prefix_lm_mask_mod(prefix), lambda b, h, i, j: j < prefix or j <= i),
        (prefix_lm_mask_mod(valid_lens), lambda b, h, i, j: j < valid_lens[b] or j <= i),
        (document_mask_mod(docs), lambda b, h, i, j: docs[b, i] == docs[b, j] and j <= i),
        (document_mask_mod(docs, causal=False), lambda b, h, i, j: docs[b, i] == docs[b, j]),
        (sink_mask_mod(2), lambda b, h, i, j: j < 2),
    ]
    for mask_mod, rule in cases:
        torch.testing.assert_close(dense_mask(mask_mod, batch_size, num_heads, seq, seq),
                                   loop_mask(rule, batch_size, num_heads, seq))


def test_valid_lens_match_the_library_mask():
    valid_lens = torch.tensor([3, 0, 5])
    expected = attention_mask(3, 4, 5, valid_lens).expand(3, 4, 5)  # (batch, queries, kvpairs)
    got = dense_mask(padding_mask_mod(valid_lens), 3, 1, 4, 5)[:, 0]
    torch.testing.assert_close(got, expected)


@needs_flex
def test_dense_mask_matches_torch_create_mask():
    from torch.nn.attention.flex_attention import create_mask, or_masks

    docs = torch.tensor([[0, 0, 1, 1, 1, 2, 2, 2, 2], [0] * 4 + [1] * 5])
    mods = [padding_mask_mod(torch.tensor([4, 0])), sliding_window_mask_mod(2, causal=True), document_mask_mod(docs),
            or_masks(sliding_window_mask_mod(2, causal=True), sink_mask_mod())]
    for mask_mod in mods:
        torch.testing.assert_close(dense_mask(mask_mod, 2, 3, 9, 9), create_mask(mask_mod, 2, 3, 9, 9, device="cpu"))


def test_alibi_slopes_geometric():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0 ** -(k + 1) for k in range(8)]))
    torch.testing.assert_close(alibi_slopes(4), torch.tensor([2.0 ** -(2 * (k + 1)) for k in range(4)]))
    # not a power of two: the 4 slopes of 4 heads, then slopes 1 and 3 (from 0) of 8 heads
    torch.testing.assert_close(alibi_slopes(6), torch.tensor([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1,
                                                              2.0 ** -3]))
    assert alibi_slopes(1).tolist() == [2.0 ** -8]


def test_score_mods_equal_dense_computations():
    torch.manual_seed(0)
    scores = torch.randn(2, 4, 6, 6) * 10
    q_idx, kv_idx = grid(6)
    slopes = alibi_slopes(4).view(1, 4, 1, 1)
    torch.testing.assert_close(apply_score_mod(alibi_score_mod(4), scores), scores + slopes * (kv_idx - q_idx))
    table = torch.randn(4, 5)  # max_distance 3
    bias = torch.stack([table[h][(kv_idx - q_idx).clamp(-2, 2) + 2] for h in range(4)])  # (heads, q, kv)
    torch.testing.assert_close(apply_score_mod(relative_bias_score_mod(table), scores), scores + bias)
    capped = apply_score_mod(softcap_score_mod(5.0), scores)
    torch.testing.assert_close(capped, 5.0 * torch.tanh(scores / 5.0))
    assert capped.abs().max() < 5.0 < scores.abs().max()


def eager_flex(*args, **kwargs):
    from torch.nn.attention.flex_attention import flex_attention

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        return flex_attention(*args, **kwargs)


@needs_flex
@pytest.mark.parametrize("batch_size, num_heads, seq", SIZES)
def test_flex_masks_match_sdpa(batch_size, num_heads, seq):
    from torch.nn.attention.flex_attention import create_block_mask, or_masks

    torch.manual_seed(seq)
    q, k, v = (torch.randn(batch_size, num_heads, seq, 8) for _ in range(3))
    docs = torch.arange(seq).div(3, rounding_mode="floor").expand(batch_size, seq)
    mods = [causal_mask_mod(), sliding_window_mask_mod(2), sliding_window_mask_mod(3, causal=True),
            prefix_lm_mask_mod(2), document_mask_mod(docs), or_masks(sliding_window_mask_mod(2, causal=True),
                                                                     sink_mask_mod())]
    for mask_mod in mods:
        block_mask = create_block_mask(mask_mod, batch_size, num_heads, seq, seq, device="cpu")
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=dense_mask(mask_mod, batch_size, num_heads, seq,
                                                                                  seq))
        torch.testing.assert_close(eager_flex(q, k, v, block_mask=block_mask), expected, **TOL)


@needs_flex
def test_flex_padding_with_empty_row_matches_mha_lib():
    """A row with valid_len 0: flex_attention returns zeros, the rule of mha_lib (SDPA would give NaN)."""
    from torch.nn.attention.flex_attention import create_block_mask

    torch.manual_seed(1)
    valid_lens = torch.tensor([3, 0])
    q, k, v = (torch.randn(2, 2, 5, 4) for _ in range(3))
    block_mask = create_block_mask(padding_mask_mod(valid_lens), 2, None, 5, 5, device="cpu")
    got = eager_flex(q, k, v, block_mask=block_mask)
    mask = attention_mask(2, 5, 5, valid_lens).unsqueeze(1)  # (batch, 1, 1, kvpairs)
    expected, _ = dot_product_attention(q, k, v, mask=mask)
    torch.testing.assert_close(got, expected, **TOL)
    assert torch.equal(got[1], torch.zeros_like(got[1]))


@needs_flex
def test_flex_through_multi_head_attention_projections():
    from torch.nn.attention.flex_attention import create_block_mask

    torch.manual_seed(2)
    mha = MultiHeadAttention(16, 16, 16, 16, num_heads=4).eval()
    x = torch.randn(2, 6, 16)
    valid_lens = torch.tensor([4, 6])
    with torch.no_grad():  # this torch's flex_attention has no backward on the CPU: it refuses inputs that need grad
        expected = mha(x, x, x, valid_lens, causal=True)
        q, k, v = (W(x).view(2, 6, 4, 4).transpose(1, 2) for W in (mha.W_q, mha.W_k, mha.W_v))  # (batch, heads, seq, d)

    def padded_causal(b, h, q_idx, kv_idx):
        return (kv_idx < valid_lens[b]) & (kv_idx <= q_idx)

    out = eager_flex(q, k, v, block_mask=create_block_mask(padded_causal, 2, None, 6, 6, device="cpu"))
    with torch.no_grad():
        torch.testing.assert_close(mha.W_o(out.transpose(1, 2).reshape(2, 6, 16)), expected, **TOL)


@needs_flex
def test_flex_score_mods_match_dense_bias():
    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 4, 7, 8) for _ in range(3))
    for score_mod in (alibi_score_mod(4), relative_bias_score_mod(torch.randn(4, 7)), softcap_score_mod(0.5)):
        scores = q @ k.transpose(-1, -2) / math.sqrt(8)  # (batch, heads, queries, kvpairs)
        expected = torch.softmax(apply_score_mod(score_mod, scores), dim=-1) @ v
        torch.testing.assert_close(eager_flex(q, k, v, score_mod=score_mod), expected, **TOL)
    bias = alibi_slopes(4).view(1, 4, 1, 1) * (torch.arange(7).view(1, -1) - torch.arange(7).view(-1, 1))
    torch.testing.assert_close(eager_flex(q, k, v, score_mod=alibi_score_mod(4)),
                               F.scaled_dot_product_attention(q, k, v, attn_mask=bias), **TOL)


@pytest.mark.parametrize(("score_mod", "built_for", "heads"), [
    pytest.param(alibi_score_mod(4), 4, 2, id="alibi-4-on-2"),  # would add 4-head slopes silently
    pytest.param(alibi_score_mod(2), 2, 4, id="alibi-2-on-4"),  # would fail with an IndexError inside
    pytest.param(relative_bias_score_mod(torch.zeros(2, 5)), 2, 4, id="table-2-on-4"),
])
def test_a_score_mod_built_for_other_heads_is_refused_naming_both_counts(score_mod, built_for, heads):
    scores = torch.zeros(1, heads, 3, 3)
    expected = rf"score_mod was built for num_heads={built_for}, but scores has {heads} heads"
    with pytest.raises(ValueError, match=expected):
        apply_score_mod(score_mod, scores)


def test_block_tiles_counts():
    causal = dense_mask(causal_mask_mod(), 1, 1, 8, 8)[0, 0]
    assert block_tiles(causal, 4).tolist() == [[PARTIAL, SKIPPED], [FULL, PARTIAL]]
    assert block_tiles(causal, 8).tolist() == [[PARTIAL]]
    edge = block_tiles(torch.ones(5, 5, dtype=torch.bool), 4)  # edge tiles cut short, still full
    assert edge.tolist() == [[FULL, FULL], [FULL, FULL]]
    window = dense_mask(sliding_window_mask_mod(2, causal=True), 1, 1, 16, 16)[0, 0]
    tiles = block_tiles(window, 4)
    assert (tiles == SKIPPED).sum() == 16 - 4 - 3 and (tiles == FULL).sum() == 0


@needs_flex
def test_block_tiles_agree_with_create_block_mask():
    from torch.nn.attention.flex_attention import create_block_mask

    for mask_mod in (causal_mask_mod(), sliding_window_mask_mod(40, causal=True), prefix_lm_mask_mod(100)):
        block_mask = create_block_mask(mask_mod, None, None, 512, 512, device="cpu", BLOCK_SIZE=128)
        tiles = block_tiles(dense_mask(mask_mod, 1, 1, 512, 512)[0, 0], 128)
        assert block_mask.kv_num_blocks.flatten().tolist() == (tiles == PARTIAL).sum(-1).tolist()  # partial only
        assert block_mask.full_kv_num_blocks.flatten().tolist() == (tiles == FULL).sum(-1).tolist()


@pytest.mark.parametrize("call, error, words", [
    (lambda: sliding_window_mask_mod(0), ValueError, "window"),
    (lambda: sliding_window_mask_mod(2.5), TypeError, "window"),
    (lambda: sliding_window_mask_mod(2, causal="yes"), TypeError, "causal"),
    (lambda: document_mask_mod(torch.zeros(1, 5, dtype=torch.long), causal=1), TypeError, "causal"),
    (lambda: padding_mask_mod(torch.tensor([1.0])), TypeError, "valid_lens"),
    (lambda: padding_mask_mod(torch.tensor([2, -1])), ValueError, "valid_lens"),
    (lambda: padding_mask_mod(torch.tensor([[2]])), ValueError, "valid_lens"),
    (lambda: key_padding_mask_mod(torch.zeros(2, 3)), TypeError, "key_padding_mask"),
    (lambda: prefix_lm_mask_mod(-1), ValueError, "prefix_len"),
    (lambda: document_mask_mod(torch.zeros(5, dtype=torch.long)), ValueError, "document_ids"),
    (lambda: alibi_slopes(0), ValueError, "num_heads"),
    (lambda: relative_bias_score_mod(torch.zeros(2, 4)), ValueError, "table"),
    (lambda: softcap_score_mod(0.0), ValueError, "cap"),
    (lambda: dense_mask(causal_mask_mod(), 1, 1, 0, 3), ValueError, "num_queries"),
    (lambda: dense_mask("causal", 1, 1, 2, 3), TypeError, "mask_mod"),
    (lambda: block_tiles(torch.ones(4, 4), 2), TypeError, "mask"),
    (lambda: block_tiles(torch.ones(4, 4, dtype=torch.bool), 0), ValueError, "block_size"),
])
def test_bad_arguments(call, error, words):
    with pytest.raises(error, match=words):
        call()


# ----- chapter 11's helpers: the block picture and the recorded table --------------------------------------------


def test_block_counts_and_figure():
    from matplotlib.figure import Figure

    from mha_chapters.flex import block_counts, plot_block_mask

    counts = block_counts(256, 32, 64)  # 4 x 4 tiles: the diagonal partial, the one below it partial, rest skipped
    assert counts == {"full": 0, "partial": 7, "skipped": 9, "total": 16}
    assert block_counts(256, 256, 64) == {"full": 6, "partial": 4, "skipped": 6, "total": 16}  # plain causal
    fig = plot_block_mask(256, 32, 64)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert "9 of 16 skipped (56%)" in fig.axes[1].get_title()
    assert fig.axes[0].get_xlabel() == "keys" and fig.axes[0].get_ylabel() == "queries"
    other = plot_block_mask(64, 0, 16, mask_mod=prefix_lm_mask_mod(20))
    assert other._suptitle.get_text() == "the given mask"


def test_recorded_flex_table_loads_and_is_consistent():
    from mha_chapters.flex import flex_cost_lines, load_flex_record, plot_flex_costs

    record = load_flex_record()
    assert record["device"] == "cpu" and record["rows"]
    for row in record["rows"]:
        expected = block_counts_fraction(row["seq_len"], row["window"], record["sizes"]["block_size"])
        assert row["skipped_tiles"] == pytest.approx(expected, abs=1e-4)
        assert row["eager_flex_ms"] > 0 and row["dense_sdpa_ms"] > 0
        for name in ("causal_sdpa", "eager_flex", "compiled_flex"):
            pairs = row[f"{name}_over_dense_pairs"]  # every round's ratio, the figure's dots
            assert len(pairs) == record["pairs"]
            assert [min(pairs), statistics.median(pairs), max(pairs)] == pytest.approx(
                [*row[f"{name}_over_dense_range"][:1], row[f"{name}_over_dense"], row[f"{name}_over_dense_range"][1]],
                abs=2e-3)
    assert "L2" in record["machine"] and "thread" in record["machine"]  # CPU model, caches and threads
    assert set(record["compile_fresh_s"]) == set(record["compile_s"])
    assert len(record["load_average_1min"]) == 2
    lines = flex_cost_lines(record)
    assert len(lines) == len(record["rows"]) + 1 and max(map(len, lines)) <= 90  # fits a slide
    fig = plot_flex_costs(record)
    assert len(fig.axes) == 1 and len(fig.legends) == 1  # the legend beside the axes covers no dot


def block_counts_fraction(seq_len, window, block_size):
    from mha_chapters.flex import block_counts

    counts = block_counts(seq_len, window, block_size)
    return counts["skipped"] / counts["total"]


def test_load_flex_record_names_a_missing_field(tmp_path):
    from mha_chapters.flex import load_flex_record

    path = tmp_path / "bad.json"
    path.write_text('{"device": "cpu", "device_name": "x", "torch": "2", "date": "d", "rows": []}')
    with pytest.raises(ValueError, match="machine"):
        load_flex_record(path)


# the benchmark script


@needs_flex
@pytest.mark.slow  # times flex_attention against SDPA
def test_bench_flex_quick_runs_and_checks(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_flex.py"
    spec = importlib.util.spec_from_file_location("bench_flex", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--quick", "--number", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and "eager_flex_over_dense" in lines[1] and "skipped_tiles 0.25" in lines[1]
    assert lines[2].startswith("the machine while timing: ")  # how busy the other processes were


def test_no_builder_captures_a_python_float():
    # torch.compile, which flex_attention uses even eagerly in PyTorch 2.15, makes a captured Python float a
    # symbolic input that flex rejects ("can only be of (Tensor, int, SymInt) but got (SymFloat,)")
    mods = [softcap_score_mod(0.5), softcap_score_mod(50), alibi_score_mod(4),
            relative_bias_score_mod(torch.randn(4, 7)), sliding_window_mask_mod(3),
            sliding_window_mask_mod(3, causal=True), prefix_lm_mask_mod(2)]
    for mod in mods:
        captured = [cell.cell_contents for cell in mod.__closure__ or ()]
        assert not any(isinstance(value, float) for value in captured), (mod.__name__, captured)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_softcap_keeps_the_dtype_of_the_scores(dtype):
    scores = torch.linspace(-8, 8, 9, dtype=dtype).view(1, 1, 3, 3)
    capped = apply_score_mod(softcap_score_mod(2.5), scores)
    assert capped.dtype == dtype
    torch.testing.assert_close(capped, 2.5 * torch.tanh(scores / 2.5))


# chapter 11's two further masks


def test_document_offsets_apply_the_inner_mask_within_each_document():
    lengths = [3, 4, 2]
    got = dense_mask(document_offsets_mask_mod(lengths, prefix_lm_mask_mod(2)), 1, 1, 9, 9)[0, 0]
    expected = torch.block_diag(*(dense_mask(prefix_lm_mask_mod(2), 1, 1, n, n)[0, 0] for n in lengths))
    torch.testing.assert_close(got, expected)
    # without the offsets, the prefix would be the first two tokens of the whole row only
    plain = dense_mask(document_mask_mod(torch.tensor([[0, 0, 0, 1, 1, 1, 1, 2, 2]]), causal=True), 1, 1, 9, 9)
    assert got[3, 4] and not plain[0, 0, 3, 4]  # token 3 opens document 1: it sees its prefix partner 4


def test_neighborhood_mask_is_a_kernel_window_shifted_inside_the_grid():
    height, width, kernel = 5, 6, 3
    got = dense_mask(neighborhood_mask_mod(height, width, kernel), 1, 1, height * width, height * width)[0, 0]
    expected = torch.zeros(height * width, height * width, dtype=torch.bool)
    for r in range(height):
        for c in range(width):
            top, left = min(max(r - 1, 0), height - kernel), min(max(c - 1, 0), width - kernel)
            window = torch.zeros(height, width, dtype=torch.bool)
            window[top:top + kernel, left:left + kernel] = True
            expected[r * width + c] = window.flatten()
    torch.testing.assert_close(got, expected)
    assert (got.sum(-1) == kernel**2).all()


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: neighborhood_mask_mod(4, 4, 2), ValueError, "odd"),
    (lambda: neighborhood_mask_mod(4, 4, 5), ValueError, "at most"),
    (lambda: document_offsets_mask_mod([], causal_mask_mod()), TypeError, "lengths"),
    (lambda: document_offsets_mask_mod([3, 0], causal_mask_mod()), ValueError, "lengths"),
])
def test_chapter_masks_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


@needs_flex
def test_chapter_masks_through_flex_equal_sdpa():
    from torch.nn.attention.flex_attention import create_block_mask

    torch.manual_seed(4)
    for mask_mod, n in ((document_offsets_mask_mod([5, 3, 4], prefix_lm_mask_mod(2)), 12),
                        (neighborhood_mask_mod(4, 5, 3), 20)):
        q, k, v = (torch.randn(1, 2, n, 8) for _ in range(3))
        block_mask = create_block_mask(mask_mod, None, None, n, n, device="cpu")
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=dense_mask(mask_mod, 1, 1, n, n))
        torch.testing.assert_close(eager_flex(q, k, v, block_mask=block_mask), expected, **TOL)


def test_the_block_mask_and_cost_figures_title_in_the_readers_language(monkeypatch):
    from mha_chapters import i18n
    from mha_chapters.flex import load_flex_record, plot_block_mask, plot_flex_costs

    record = load_flex_record()
    assert plot_block_mask(256, 32, 64)._suptitle.get_text() == "causal sliding window of 32 keys"
    assert plot_flex_costs(record).axes[0].get_title().startswith(f"CPU ({record['threads']} thread")
    font = i18n.cjk_font() or "Noto Sans CJK SC"  # figure_text translates where a CJK font exists
    monkeypatch.setattr(i18n, "cjk_font", lambda: font)
    i18n.set_language("zh_CN")
    try:
        assert plot_block_mask(256, 32, 64)._suptitle.get_text() == "因果滑动窗口，32 个键"
        assert plot_flex_costs(record).axes[0].get_title().startswith(f"CPU（{record['threads']} 个线程），torch")
    finally:
        i18n.set_language("en")
