"""Chapter 09's helpers: the KV cache against full causal attention, FLOP counts against PyTorch's counter,
MLA absorbed against explicit, and the memory formulas against the bytes of real tensors."""

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from torch.utils.flop_counter import FlopCounterMode

from mha_chapters.kv_cache import (
    MODELS,
    KVCache,
    MultiHeadLatentAttention,
    SlidingWindowKVCache,
    attend_with_cache,
    cache_curves,
    conversion_error,
    decode_flops,
    dtype_bytes,
    generate,
    kv_cache_bytes,
    memory_calculator,
    memory_summary,
    mla_cache_bytes,
    model_table,
    plot_cache_bytes,
    plot_head_sharing,
)
from mha_lib import GroupedQueryAttention
from mha_lib.flex import dense_mask, sliding_window_mask_mod

TIGHT = {"rtol": 1e-10, "atol": 1e-12}


def layer(num_kv_heads: int, num_hiddens: int = 24, num_heads: int = 6) -> GroupedQueryAttention:
    return GroupedQueryAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, num_kv_heads).double()


@pytest.mark.parametrize("num_kv_heads", [1, 2, 6])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cached_generation_equals_full_causal_attention(num_kv_heads, seed):
    torch.manual_seed(seed)
    gqa = layer(num_kv_heads)
    prompt = torch.randn(2, 3, 24, dtype=torch.float64)
    cached = generate(gqa, prompt, 8)
    uncached = generate(gqa, prompt, 8, use_cache=False)
    assert cached.shape == (2, 11, 24)
    torch.testing.assert_close(cached, uncached, **TIGHT)
    full = gqa(cached, cached, cached, causal=True)  # every position at once
    torch.testing.assert_close(cached[:, 3:], full[:, 2:-1], **TIGHT)  # token t+1 is the output at t
    torch.testing.assert_close(cached[:, :3], prompt)


@pytest.mark.parametrize("use_cache", [True, False])
def test_generate_refuses_an_empty_prompt(use_cache):
    # an empty prompt has no last position to continue from: both paths would return (1, 0, 24), not (1, 3, 24)
    with pytest.raises(ValueError, match=r"prompt must hold at least one token .*got shape \(1, 0, 24\)"):
        generate(layer(2), torch.zeros(1, 0, 24, dtype=torch.float64), 3, use_cache=use_cache)


def test_attend_with_cache_in_chunks_equals_one_causal_pass():
    gqa = layer(2)
    x = torch.randn(2, 9, 24, dtype=torch.float64)
    cache = KVCache(2, 2, 4, 9, dtype=torch.float64)
    pieces = [attend_with_cache(gqa, x[:, a:b], cache) for a, b in ((0, 4), (4, 5), (5, 9))]
    torch.testing.assert_close(torch.cat(pieces, dim=1), gqa(x, x, x, causal=True), **TIGHT)
    assert len(cache) == 9
    k = gqa.W_k(x).unflatten(-1, (2, 4)).transpose(1, 2)
    torch.testing.assert_close(cache.keys, k, **TIGHT)


def test_append_returns_the_causal_mask_shifted_by_the_past():
    cache = KVCache(1, 1, 2, 6)
    cache.append(torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2, 2))
    keys, values, mask = cache.append(torch.ones(1, 1, 3, 2), torch.ones(1, 1, 3, 2))
    assert keys.shape == values.shape == (1, 1, 5, 2) and cache.seen == len(cache) == 5
    assert mask.tolist() == [[True, True, True, False, False], [True, True, True, True, False], [True] * 5]


def window_reference(gqa: GroupedQueryAttention, x: torch.Tensor, window: int) -> torch.Tensor:
    """Full attention over the whole sequence under a dense sliding-window mask (chapter 11's mask_mod)."""
    n = x.shape[1]
    mask = dense_mask(sliding_window_mask_mod(window, causal=True), 1, 1, n, n)[0]  # (1, n, n)
    return gqa(x, x, x, attn_mask=mask)


@pytest.mark.parametrize("window", [1, 3, 4, 20])
@pytest.mark.parametrize("chunks", [(1,) * 11, (4, 1, 1, 5), (11,), (2, 7, 2)])
def test_sliding_window_cache_equals_full_attention_under_a_window_mask(window, chunks):
    torch.manual_seed(window)
    gqa = layer(2)
    x = torch.randn(2, 11, 24, dtype=torch.float64)
    cache = SlidingWindowKVCache(2, 2, 4, window, dtype=torch.float64)
    pieces, start = [], 0
    for size in chunks:
        pieces.append(attend_with_cache(gqa, x[:, start:start + size], cache))
        start += size
        assert len(cache) == min(start, window) and cache.seen == start  # the buffer never holds more
    torch.testing.assert_close(torch.cat(pieces, dim=1), window_reference(gqa, x, window), **TIGHT)
    # the buffer holds the keys of the last `window` positions, position p in slot p % window
    k = gqa.W_k(x).unflatten(-1, (2, 4)).transpose(1, 2)
    kept = list(range(max(0, 11 - window), 11))
    torch.testing.assert_close(cache.keys[:, :, [p % window for p in kept]], k[:, :, kept], **TIGHT)


def test_sliding_window_definition_counts_window_keys_itself_included():
    cache = SlidingWindowKVCache(1, 1, 1, 3)
    _keys, _values, mask = cache.append(torch.zeros(1, 1, 6, 1), torch.zeros(1, 1, 6, 1))
    assert mask.sum(dim=1).tolist() == [1, 2, 3, 3, 3, 3]  # query i sees i-2, i-1, i
    assert mask[5].nonzero().flatten().tolist() == [3, 4, 5]
    _keys, _values, mask = cache.append(torch.zeros(1, 1, 1, 1), torch.zeros(1, 1, 1, 1))
    assert mask.shape == (1, 4) and mask.sum().item() == 3  # 3 buffered + 1 new key, the oldest out of the window


def test_sliding_window_cache_bad_input():
    with pytest.raises(ValueError, match="window must be a positive int"):
        SlidingWindowKVCache(1, 1, 1, 0)
    cache = SlidingWindowKVCache(1, 2, 4, 3)
    with pytest.raises(ValueError, match=r"keys must have shape .* = \(1, 2, num_new, 4\)"):
        cache.append(torch.zeros(1, 1, 1, 4), torch.zeros(1, 1, 1, 4))
    with pytest.raises(TypeError, match="dtype torch.float64 but the cache holds torch.float32"):
        cache.append(torch.zeros(1, 2, 1, 4, dtype=torch.float64), torch.zeros(1, 2, 1, 4, dtype=torch.float64))
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        attend_with_cache(layer(2), torch.zeros(1, 1, 24, dtype=torch.float64), "cache")


def test_cache_bytes_match_the_formula_and_the_tensors():
    cache = KVCache(3, 2, 8, 20, dtype=torch.float16)
    cache.append(torch.zeros(3, 2, 5, 8, dtype=torch.float16), torch.zeros(3, 2, 5, 8, dtype=torch.float16))
    assert cache.nbytes == kv_cache_bytes(1, 2, 8, 5, 3, torch.float16) == 2 * 2 * 8 * 5 * 3 * 2
    assert cache.nbytes == cache.keys.nbytes + cache.values.nbytes
    assert cache.keys.shape == (3, 2, 5, 8)


def test_cache_rejects_wrong_shapes_and_overflow():
    cache = KVCache(2, 2, 4, 3)
    with pytest.raises(ValueError, match=r"keys must have shape .* = \(2, 2, num_new, 4\).*got \(2, 3, 1, 4\)"):
        cache.append(torch.zeros(2, 3, 1, 4), torch.zeros(2, 3, 1, 4))
    with pytest.raises(ValueError, match="values must be a 4-D tensor"):
        cache.append(torch.zeros(2, 2, 1, 4), torch.zeros(2, 1, 4))
    with pytest.raises(TypeError, match="dtype torch.float64 but the cache holds torch.float32"):
        cache.append(torch.zeros(2, 2, 1, 4, dtype=torch.float64), torch.zeros(2, 2, 1, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="same number of new tokens"):
        cache.append(torch.zeros(2, 2, 1, 4), torch.zeros(2, 2, 2, 4))
    with pytest.raises(ValueError, match="at most max_len=3"):
        cache.append(torch.zeros(2, 2, 4, 4), torch.zeros(2, 2, 4, 4))
    with pytest.raises(ValueError, match="head_dim must be a positive int"):
        KVCache(2, 2, 0, 3)
    with pytest.raises(TypeError, match="layer must be an mha_lib.MultiHeadAttention"):
        attend_with_cache(torch.nn.Linear(2, 2), torch.zeros(1, 1, 2), cache)
    with pytest.raises(ValueError, match="num_new_tokens must be a positive int"):
        generate(layer(2), torch.zeros(1, 2, 24, dtype=torch.float64), 0)
    with pytest.raises(ValueError, match="must equal num_hiddens"):
        generate(GroupedQueryAttention(8, 8, 8, 12, 6, 2), torch.zeros(1, 2, 8), 2)


@pytest.mark.parametrize("context_len", [1, 5, 9])
@pytest.mark.parametrize("num_kv_heads", [1, 3])
def test_decode_flops_match_pytorchs_flop_counter(context_len, num_kv_heads):
    gqa = layer(num_kv_heads)
    x = torch.randn(2, context_len, 24, dtype=torch.float64)
    cache = KVCache(2, num_kv_heads, 4, context_len, dtype=torch.float64)
    if context_len > 1:
        attend_with_cache(gqa, x[:, :-1], cache)
    with FlopCounterMode(display=False) as counter:
        attend_with_cache(gqa, x[:, -1:], cache)
    assert counter.get_total_flops() == sum(decode_flops(2, context_len, 24, 6, num_kv_heads, use_cache=True).values())
    with FlopCounterMode(display=False) as counter:
        gqa(x, x, x, causal=True)
    assert counter.get_total_flops() == sum(decode_flops(2, context_len, 24, 6, num_kv_heads,
                                                         use_cache=False).values())


def test_decode_flops_grow_linearly_with_the_cache_and_quadratically_without():
    with_cache = [decode_flops(1, n, 64, 8, 2, use_cache=True)["scores"] for n in (100, 200)]
    without = [decode_flops(1, n, 64, 8, 2, use_cache=False)["scores"] for n in (100, 200)]
    assert with_cache[1] == 2 * with_cache[0] and without[1] == 4 * without[0]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_mla_absorbed_equals_explicit(causal, seed):
    torch.manual_seed(seed)
    mla = MultiHeadLatentAttention(32, 4, 8, 12).double()
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    valid_lens = torch.tensor([7, 4])
    explicit = mla(x, valid_lens, causal=causal)
    torch.testing.assert_close(mla(x, valid_lens, causal=causal, absorbed=True), explicit, **TIGHT)
    assert explicit.shape == (2, 7, 32)


def test_mla_explicit_is_multi_head_attention_on_up_projected_latents():
    """Reference built from PyTorch's kernel: keys W_uk(W_dkv x), values W_uv(W_dkv x)."""
    mla = MultiHeadLatentAttention(16, 2, 8, 4).double()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    c = mla.W_dkv(x)
    q, k, v = (W(inp).unflatten(-1, (2, 8)).transpose(1, 2) for W, inp in ((mla.W_q, x), (mla.W_uk, c), (mla.W_uv, c)))
    ref = mla.W_o(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(2))
    torch.testing.assert_close(mla(x, causal=True), ref, **TIGHT)
    query_side, output_side = mla.absorbed_weights()
    assert query_side.shape == (2, 4, 16) and output_side.shape == (16, 2, 4)


def test_mla_bad_input():
    mla = MultiHeadLatentAttention(16, 2, 8, 4)
    with pytest.raises(ValueError, match="x has 8 features"):
        mla(torch.zeros(1, 3, 8))
    with pytest.raises(ValueError, match="kv_lora_rank must be a positive int"):
        MultiHeadLatentAttention(16, 2, 8, 0)


def test_mla_checks_devices_and_flags_as_the_other_layers_do():
    mla = MultiHeadLatentAttention(16, 2, 8, 4)
    x = torch.zeros(2, 3, 16)
    with pytest.raises(ValueError, match=r"x is on meta but the layer's weights are on cpu"):
        mla(x.to("meta"))  # returned a meta tensor
    with pytest.raises(ValueError, match=r"valid_lens is on meta but x is on cpu"):
        mla(x, torch.tensor([3, 1], device="meta"))  # raised PyTorch's "Cannot copy out of meta tensor"
    with pytest.raises(TypeError, match=r"absorbed must be True or False, got 'no' \(a str\)"):
        mla(x, absorbed="no")  # was taken as True
    x = torch.randn(2, 3, 16)  # a length above seq_len counts as seq_len, as in the other layers (and in d2l)
    torch.testing.assert_close(mla(x, torch.tensor([3, 4])), mla(x, torch.tensor([3, 3])))
    assert not torch.allclose(mla(x, torch.tensor([3, 4])), mla(x, torch.tensor([3, 2])))


def test_mla_stores_its_sizes_as_python_ints():
    mla = MultiHeadLatentAttention(*(np.int64(size) for size in (16, 2, 8, 4)))
    assert [type(size) for size in (mla.num_heads, mla.head_dim, mla.kv_lora_rank)] == [int, int, int]


def test_memory_formulas():
    assert dtype_bytes(torch.bfloat16) == dtype_bytes("float16") == 2 and dtype_bytes("float32") == 4
    assert kv_cache_bytes(32, 8, 128, 8192, 1, torch.bfloat16) == 2**30  # 2 * 32 * 8 * 128 * 8192 * 2
    assert kv_cache_bytes(2, 3, 4, 5, 6, torch.float32) == 2 * 2 * 3 * 4 * 5 * 6 * 4
    assert mla_cache_bytes(61, 512, 1, 1, torch.bfloat16, rope_head_dim=64) == 61 * 576 * 2
    assert mla_cache_bytes(2, 8, 10, 3, torch.float32) == 2 * 8 * 10 * 3 * 4
    # measured: a real float32 tensor of that shape has exactly that many bytes
    keys_and_values = torch.zeros(2, 3, 6, 3, 5, 4)  # (k/v, layers, batch, kv_heads, tokens, head_dim)
    assert keys_and_values.nbytes == kv_cache_bytes(3, 3, 4, 5, 6, torch.float32)
    with pytest.raises(ValueError, match="dtype must be one of"):
        dtype_bytes("float12")
    with pytest.raises(TypeError, match="dtype must be a torch.dtype"):
        dtype_bytes(2)
    with pytest.raises(ValueError, match="context_len must be a positive int"):
        kv_cache_bytes(1, 1, 1, 0)
    with pytest.raises(ValueError, match="rope_head_dim must be an int >= 0"):
        mla_cache_bytes(1, 1, 1, rope_head_dim=-1)


def test_curves_plot_and_summary():
    lens = [128, 256, 512]
    curves = cache_curves(lens, num_layers=4, num_heads=8, num_kv_heads=2, head_dim=16, kv_lora_rank=32)
    mha, gqa, mqa, mla = curves.values()
    assert [m // g for m, g in zip(mha, gqa, strict=True)] == [4, 4, 4]
    assert [m // q for m, q in zip(mha, mqa, strict=True)] == [8, 8, 8]
    assert mla[0] == 4 * 32 * 128 * 2
    assert isinstance(plot_cache_bytes(lens, curves), Figure)
    fig = plot_cache_bytes(lens, curves, references={"weights": 2**30, "GPU": 2**31})
    assert [line.get_ydata()[0] for line in fig.axes[0].lines[-2:]] == [1, 2]  # GiB
    assert "computed" in fig.axes[0].get_ylabel()
    bottom, top = fig.axes[0].get_ylim()
    assert bottom < min(mqa) / 2**30 and top >= 2 * 2  # every curve and both lines inside, room for the label
    text = memory_summary(num_layers=32, num_heads=32, num_kv_heads=8, head_dim=128, kv_lora_rank=512,
                          context_len=8192, batch_size=1, dtype="bfloat16")
    assert "131,072 bytes per token" in text and "1.000 GiB" in text
    with pytest.raises(ValueError, match="must divide num_heads"):
        cache_curves(lens, num_layers=1, num_heads=8, num_kv_heads=3, head_dim=4, kv_lora_rank=4)


def test_mla_row_counts_the_rotary_key_and_says_so():
    """Review B, defect 10: section 4 counts 512 + 64 per token, the calculator's row counted the latent alone."""
    sizes = dict(num_layers=32, num_heads=32, num_kv_heads=8, head_dim=128, kv_lora_rank=512)
    latent_only = cache_curves([1], **sizes, dtype=torch.bfloat16)
    with_rope = cache_curves([1], **sizes, rope_head_dim=64, dtype=torch.bfloat16)
    assert list(latent_only)[-1] == "MLA (latent 512)" and list(with_rope)[-1] == "MLA (latent 512 + rotary 64)"
    assert list(with_rope.values())[-1] == [32 * (512 + 64) * 2] == [mla_cache_bytes(32, 512, 1, 1, "bfloat16", 64)]
    assert list(latent_only.values())[-1] == [32 * 512 * 2]
    summary = memory_summary(**sizes, rope_head_dim=64, context_len=8192, batch_size=1, dtype="bfloat16")
    assert "MLA (latent 512 + rotary 64)" in summary and f"{32 * 576 * 2:,} bytes per token" in summary
    assert any("rotary" in str(getattr(control, "description", "")) for control in
               memory_calculator().children[0].children[0].children)


def test_memory_calculator_widget_follows_its_sliders():
    box = memory_calculator()
    controls = box.children[0].children[0].children
    numbers = box.children[0].children[1]
    assert "1.000 GiB" in numbers.value  # GQA, Llama-3-8B-like defaults
    controls[2].value = 1  # kv heads -> MQA
    assert "GQA (1 kv heads)" in numbers.value
    controls[2].value = 64  # does not divide 32 query heads
    assert "must divide" in numbers.value


def test_model_table_uses_each_config():
    rows = {row[0]: row for row in model_table(context_len=4096)}
    assert set(rows) == {m["model"] for m in MODELS}
    assert all(m["source"].startswith("https://huggingface.co/") for m in MODELS)
    assert rows["Llama 2 7B"][1:6] == ("MHA", 32, 32, 32, 128) and rows["Llama 2 7B"][6] == "524,288"
    assert rows["Llama 2 70B"][1] == "GQA" and rows["Falcon 7B"][1] == "MQA" and rows["Falcon 7B"][5] == 64
    assert rows["DeepSeek-V3"][6] == f"{61 * 576 * 2:,}"


def test_head_sharing_figure_draws_one_line_per_query_head():
    fig = plot_head_sharing(8, [8, 2, 1])
    assert len(fig.axes) == 3
    assert [len(ax.lines) for ax in fig.axes] == [8, 8, 8]
    # in the GQA panel, query heads 0-3 end at kv head 0's position, 4-7 at kv head 1's
    ends = [line.get_xdata()[1] for line in fig.axes[1].lines]
    assert len(set(ends[:4])) == 1 and len(set(ends[4:])) == 1 and ends[0] != ends[4]


def test_conversion_error_is_zero_without_pooling_and_positive_with_it():
    from mha_lib import MultiHeadAttention

    mha = MultiHeadAttention(16, 16, 16, 16, 4).double()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    assert conversion_error(mha, 4, x) < 1e-14
    assert conversion_error(mha, 1, x) > 0.01


def test_design_names_and_the_model_table_speak_the_readers_language(monkeypatch):
    from mha_chapters import i18n

    sizes = dict(num_layers=32, num_heads=32, num_kv_heads=8, head_dim=128, kv_lora_rank=512)
    assert list(cache_curves([1], **sizes)) == ["MHA", "GQA (8 kv heads)", "MQA", "MLA (latent 512)"]
    assert model_table()[-1][4] == "latent 512+64"
    font = i18n.cjk_font() or "Noto Sans CJK SC"  # figure_text translates where a CJK font exists
    monkeypatch.setattr(i18n, "cjk_font", lambda: font)
    i18n.set_language("zh_CN")
    try:
        assert list(cache_curves([1], **sizes)) == ["MHA", "GQA（8 个键值头）", "MQA", "MLA（潜在向量 512 维）"]
        assert model_table()[-1][4] == "潜在向量 512+64"
        summary = memory_summary(**sizes, context_len=8192, batch_size=1, dtype="bfloat16")
        assert "GQA（8 个键值头）" in summary and "kv heads" not in summary
        labels = [label.get_text() for label in plot_head_sharing(8, [2]).axes[0].get_yticklabels()]
        assert labels == ["键值头", "查询头"]  # one line each: the English wrap is for English widths
    finally:
        i18n.set_language("en")


def test_the_cache_decoding_and_mla_are_exported_from_mha_lib():
    import mha_lib

    for name in ("KVCache", "SlidingWindowKVCache", "attend_with_cache", "generate", "MultiHeadLatentAttention"):
        assert name in mha_lib.__all__ and hasattr(mha_lib, name)
