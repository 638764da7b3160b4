"""Chapter 09's decoder: greedy generation with the KV cache equals generation without it, token for token,
the decoder's cached forward equals its full forward, and the timing helpers return what they promise."""

import pytest
import torch
from matplotlib.figure import Figure

from mha_chapters.generation import TinyDecoder, generate_tokens, plot_generation_speedups, time_generation

TIGHT = {"rtol": 1e-10, "atol": 1e-12}


def decoder(seed: int = 0, num_kv_heads: int | None = None) -> TinyDecoder:
    torch.manual_seed(seed)
    return TinyDecoder(vocab_size=50, num_hiddens=16, num_heads=4, num_layers=2, max_len=64,
                       num_kv_heads=num_kv_heads).double().eval()


@pytest.mark.slow  # nine generations by a whole decoder, seconds each (the chunked forward below is quick)
@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generation_with_and_without_the_cache_gives_the_same_tokens(seed, num_kv_heads):
    model = decoder(seed, num_kv_heads)
    prompt = torch.randint(0, 50, (3, 5), generator=torch.Generator().manual_seed(seed))
    cached = generate_tokens(model, prompt, 30)
    uncached = generate_tokens(model, prompt, 30, use_cache=False)
    assert cached.shape == (3, 35) and cached.dtype == torch.long
    assert torch.equal(cached, uncached)
    assert torch.equal(cached[:, :5], prompt)
    assert len(set(cached[:, 5:].flatten().tolist())) > 1  # not one token repeated: the test could fail


def test_greedy_token_is_the_argmax_of_the_full_forward():
    model = decoder(3)
    prompt = torch.randint(0, 50, (2, 4), generator=torch.Generator().manual_seed(3))
    tokens = generate_tokens(model, prompt, 12)
    with torch.no_grad():
        logits = model(tokens[:, :-1])  # every position at once, no cache
    assert torch.equal(tokens[:, 4:], logits[:, 3:].argmax(dim=-1))  # token t+1 = argmax of the logits at t


def test_cached_forward_in_chunks_equals_the_full_forward():
    model = decoder(4)
    tokens = torch.randint(0, 50, (2, 9), generator=torch.Generator().manual_seed(4))
    caches = model.new_caches(2, 9)
    with torch.no_grad():
        pieces = [model(tokens[:, a:b], caches) for a, b in ((0, 5), (5, 6), (6, 9))]
        torch.testing.assert_close(torch.cat(pieces, dim=1), model(tokens), **TIGHT)
    assert [len(cache) for cache in caches] == [9, 9]


def test_decoder_bad_input():
    model = decoder()
    with pytest.raises(TypeError, match="tokens must be a 2-D tensor of int64 ids"):
        model(torch.zeros(1, 3))
    with pytest.raises(TypeError, match="tokens must be a 2-D tensor of int64 ids"):
        model([1, 2, 3])
    with pytest.raises(ValueError, match=r"tokens must be ids in \[0, 49\], got ids from 0 to 50"):
        model(torch.tensor([[0, 50]]))
    with pytest.raises(ValueError, match="max_len=64"):
        model(torch.zeros(1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match="one cache per block"):
        model(torch.zeros(1, 3, dtype=torch.long), model.new_caches(1, 3)[:1])
    with pytest.raises(ValueError, match="num_layers must be a positive int"):
        TinyDecoder(10, 16, 4, 0, 8)
    with pytest.raises(ValueError, match="num_kv_heads must divide num_heads"):
        TinyDecoder(10, 16, 4, 1, 8, num_kv_heads=3)
    with pytest.raises(TypeError, match="model must be a TinyDecoder"):
        generate_tokens(torch.nn.Linear(2, 2), torch.zeros(1, 2, dtype=torch.long), 3)
    with pytest.raises(ValueError, match="num_new_tokens must be a positive int"):
        generate_tokens(model, torch.zeros(1, 2, dtype=torch.long), 0)


def test_time_generation_pairs_and_plot():
    model = decoder(5)
    prompt = torch.zeros(1, 2, dtype=torch.long)
    results = time_generation(model, prompt, [2, 4], repeats=3)
    assert list(results) == [2, 4]
    for numbers in results.values():
        assert [len(v) for v in numbers.values()] == [3, 3, 3]
        assert all(v > 0 for values in numbers.values() for v in values)
        for cached, uncached, speedup in zip(*numbers.values(), strict=True):
            assert speedup == pytest.approx(cached / uncached)  # tokens/s ratio = time ratio
    fig = plot_generation_speedups(results, "title")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert [len(c.get_offsets()) for c in fig.axes[1].collections] == [3, 3]  # one point per pair
    with pytest.raises(ValueError, match="length must be a positive int"):
        time_generation(model, prompt, [0])


def windowed_forward(model, tokens, windows):
    """The decoder over the whole sequence, each local block's attention under its sliding-window mask."""
    from mha_lib.flex import dense_mask, sliding_window_mask_mod

    n = tokens.shape[1]
    x = model.token_embedding(tokens) + model.position_embedding(torch.arange(n))
    for block, window in zip(model.blocks, windows, strict=True):
        y = block.norm1(x)
        if window is None:
            x = x + block.attention(y, y, y, causal=True)
        else:
            mask = dense_mask(sliding_window_mask_mod(window, causal=True), 1, 1, n, n)[0]  # (1, n, n)
            x = x + block.attention(y, y, y, attn_mask=mask)
        x = x + block.mlp(block.norm2(x))
    return model.head(model.norm(x))


@pytest.mark.parametrize("windows", [[3, None], [None, 5], [4, 4]])
def test_local_and_global_caches_equal_the_windowed_forward(windows):
    model = decoder(5)
    tokens = torch.randint(0, 50, (2, 13), generator=torch.Generator().manual_seed(5))
    caches = model.new_caches(2, 13, windows)
    with torch.no_grad():
        pieces = [model(tokens[:, a:b], caches) for a, b in ((0, 6), (6, 7), (7, 10), (10, 13))]
        torch.testing.assert_close(torch.cat(pieces, dim=1), windowed_forward(model, tokens, windows), **TIGHT)
    assert [len(cache) for cache in caches] == [13 if window is None else window for window in windows]


def test_hybrid_cache_storage_is_the_formula():
    from mha_chapters.kv_cache import kv_cache_bytes, storage_bytes

    model = decoder(6)
    prompt = torch.randint(0, 50, (1, 4), generator=torch.Generator().manual_seed(6))
    caches = model.new_caches(1, 24, [6, None])
    tokens = generate_tokens(model, prompt, 20, caches=caches)
    assert tokens.shape == (1, 24)
    attention = model.blocks[0].attention
    expected = sum(kv_cache_bytes(1, attention.num_kv_heads, attention.head_dim, size, 1, torch.float64)
                   for size in (6, 24))  # the local layer reserves 6 tokens, the global one all 24
    assert storage_bytes(t for cache in caches for t in (cache.keys, cache.values)) == expected
    assert storage_bytes([caches[1].keys, caches[1].keys[:, :, :3]]) == expected * 24 // 30 // 2  # one storage, once
    with pytest.raises(TypeError, match="tensors must be an iterable of tensors"):
        storage_bytes([caches[0]])


def test_new_caches_and_generate_tokens_bad_input():
    model = decoder()
    with pytest.raises(ValueError, match="one entry per block"):
        model.new_caches(1, 8, [None])
    with pytest.raises(ValueError, match="window must be a positive int"):
        model.new_caches(1, 8, [0, None])
    with pytest.raises(ValueError, match="use_cache=False"):
        generate_tokens(model, torch.zeros(1, 2, dtype=torch.long), 3, use_cache=False, caches=model.new_caches(1, 5))
