"""Rotary position embedding (mha_lib.rope) against an independent formulation: complex numbers.

A feature pair (a, b) is the complex number a + ib; turning it by the angle m * theta_i is a product with
torch.polar(1, m * theta_i). The reference below builds the pairs with torch.view_as_complex (interleaved: features
2i, 2i+1) or torch.complex (halves: features i, i + head_dim/2), and its angles with Python's float arithmetic, so it
shares no code with the library.
"""

import math

import numpy as np
import pytest
import torch

from mha_lib import (
    GroupedQueryAttention,
    MultiHeadAttention,
    RotaryEmbedding,
    apply_rope,
    halves_to_interleaved,
    interleaved_to_halves,
    mha_to_gqa,
    rope_frequencies,
    rotate_half,
    rotate_pairs,
    to_torch_mha,
)
from mha_lib.kv_cache import KVCache, SlidingWindowKVCache, attend_with_cache, generate

DTYPES = [torch.float32, torch.float64]
CONVENTIONS = ["interleaved", "halves"]
TOLERANCE = {torch.float32: {"rtol": 1e-4, "atol": 1e-4}, torch.float64: {"rtol": 1e-12, "atol": 1e-12}}
# float32 holds an angle m * theta to about m * 6e-8 radians: positions up to 512 keep the error near 1e-4 at most
MAX_POSITION = {torch.float32: 512, torch.float64: 100_000}


def complex_rope(x, positions, convention, base=10000.0):
    """RoPE as a product of complex numbers: (..., seq_len, head_dim) -> the same shape."""
    head_dim = x.shape[-1]
    theta = [base ** (-2 * i / head_dim) for i in range(head_dim // 2)]
    angles = torch.tensor([[m * t for t in theta] for m in positions.tolist()], dtype=torch.float64)
    turn = torch.polar(torch.ones_like(angles), angles)  # (seq_len, head_dim/2), complex128
    wide = x.double()
    if convention == "interleaved":
        pairs = torch.view_as_complex(wide.reshape(*x.shape[:-1], head_dim // 2, 2).contiguous())
        out = torch.view_as_real(pairs * turn).flatten(-2)
    else:
        pairs = torch.complex(wide[..., :head_dim // 2], wide[..., head_dim // 2:])
        turned = pairs * turn
        out = torch.cat([turned.real, turned.imag], dim=-1)
    return out.to(x.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize(("shape", "base"), [((2, 3, 7, 8), 10000.0), ((5, 16), 500000.0), ((1, 4, 2, 64), 10.0),
                                             ((3, 1, 2), 10000.0)])
def test_apply_rope_equals_the_complex_product(dtype, convention, shape, base):
    torch.manual_seed(0)
    x = torch.randn(shape, dtype=dtype)
    positions = torch.randint(0, MAX_POSITION[dtype], (shape[-2],))
    got = apply_rope(x, positions, convention=convention, base=base)
    assert got.dtype == dtype and got.shape == x.shape
    torch.testing.assert_close(got, complex_rope(x, positions, convention, base), **TOLERANCE[dtype])


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_positions_default_to_0_1_2_and_position_0_changes_nothing(convention):
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    torch.testing.assert_close(apply_rope(x, convention=convention), apply_rope(x, torch.arange(6),
                                                                                 convention=convention))
    at_zero = apply_rope(x, torch.zeros(6, dtype=torch.long), convention=convention)
    assert torch.equal(at_zero, x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("convention", CONVENTIONS)
def test_the_score_depends_only_on_the_distance(dtype, convention):
    torch.manual_seed(1)
    q, k = torch.randn(4, 10, 16, dtype=dtype), torch.randn(4, 10, 16, dtype=dtype)
    positions = torch.arange(10)
    scores = apply_rope(q, positions, convention=convention) @ apply_rope(k, positions, convention=convention).mT
    for offset in (1, 37, 1000):
        shifted = positions + offset
        moved = apply_rope(q, shifted, convention=convention) @ apply_rope(k, shifted, convention=convention).mT
        torch.testing.assert_close(moved, scores, rtol=1e-4 if dtype == torch.float32 else 1e-10,
                                   atol=1e-4 if dtype == torch.float32 else 1e-10)
    # and it does depend on the distance: one vector at every position gives different scores at distances 0 and 1
    same = apply_rope(q[:, :1].expand(4, 10, 16), positions, convention=convention)
    assert not torch.allclose((same[:, 0] * same[:, 0]).sum(-1), (same[:, 1] * same[:, 0]).sum(-1))


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_rope_keeps_the_length_of_every_pair(convention):
    x = torch.randn(3, 9, 12, dtype=torch.float64)
    turned = apply_rope(x, torch.arange(100, 109), convention=convention)
    if convention == "interleaved":
        def pair_lengths(t):
            return t.unflatten(-1, (6, 2)).norm(dim=-1)
    else:
        def pair_lengths(t):
            return torch.stack([t[..., :6], t[..., 6:]], dim=-1).norm(dim=-1)
    torch.testing.assert_close(pair_lengths(turned), pair_lengths(x))


def test_the_two_conventions_give_different_scores_for_the_same_weights():
    torch.manual_seed(2)
    q, k = torch.randn(6, 8, dtype=torch.float64), torch.randn(6, 8, dtype=torch.float64)
    interleaved = apply_rope(q, convention="interleaved") @ apply_rope(k, convention="interleaved").T
    halves = apply_rope(q, convention="halves") @ apply_rope(k, convention="halves").T
    assert (interleaved - halves).abs().max() > 0.1
    torch.testing.assert_close(interleaved.diagonal(), halves.diagonal())  # distance 0: no turn at all


def test_rotate_half_and_rotate_pairs_are_quarter_turns():
    x = torch.arange(1.0, 9.0)
    assert rotate_half(x).tolist() == [-5, -6, -7, -8, 1, 2, 3, 4]
    assert rotate_pairs(x).tolist() == [-2, 1, -4, 3, -6, 5, -8, 7]
    y = torch.randn(3, 8, dtype=torch.float64)
    torch.testing.assert_close(rotate_half(rotate_half(y)), -y)
    torch.testing.assert_close(rotate_pairs(rotate_pairs(y)), -y)
    angle = math.pi / 2 / rope_frequencies(8)[1].item()  # the position at which pair 1 has made a quarter turn
    assert angle > 0


def test_frequencies():
    theta = rope_frequencies(8, base=10000.0)
    assert theta.dtype == torch.float64
    torch.testing.assert_close(theta, torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [False, True])
def test_converting_interleaved_weights_to_halves_gives_identical_scores(dtype, bias):
    torch.manual_seed(3)
    num_heads, head_dim, num_hiddens = 4, 8, 32
    interleaved = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, bias=bias,
                                     rope="interleaved").to(dtype).eval()
    halves = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, bias=bias,
                                rope="halves").to(dtype).eval()
    state = interleaved.state_dict()
    for name in ("W_q.weight", "W_k.weight") + (("W_q.bias", "W_k.bias") if bias else ()):
        state[name] = interleaved_to_halves(state[name], num_heads)
    halves.load_state_dict(state)
    x = torch.randn(2, 7, num_hiddens, dtype=dtype)
    with torch.no_grad():
        expected = interleaved(x, x, x, causal=True)
        torch.testing.assert_close(halves(x, x, x, causal=True), expected, **TOLERANCE[dtype])
        torch.testing.assert_close(halves.attention_weights, interleaved.attention_weights, **TOLERANCE[dtype])
        unconverted = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, bias=bias,
                                         rope="halves").to(dtype).eval()
        unconverted.load_state_dict(interleaved.state_dict())
        assert (unconverted(x, x, x, causal=True) - expected).abs().max() > 1e-3  # unconverted: other scores
    for name in ("W_q.weight", "W_k.weight"):
        assert torch.equal(halves_to_interleaved(state[name], num_heads), interleaved.state_dict()[name])
    assert head_dim == num_hiddens // num_heads


def test_the_permutation_moves_rows_within_each_head():
    rows = torch.arange(16.0).view(16, 1)  # 2 heads of 8 rows, numbered
    assert interleaved_to_halves(rows, 2).flatten().tolist() == [0, 2, 4, 6, 1, 3, 5, 7,
                                                                  8, 10, 12, 14, 9, 11, 13, 15]
    assert halves_to_interleaved(rows, 2).flatten().tolist() == [0, 4, 1, 5, 2, 6, 3, 7,
                                                                  8, 12, 9, 13, 10, 14, 11, 15]


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_the_layers_rotate_after_the_head_split_on_both_paths(convention, num_kv_heads):
    torch.manual_seed(4)
    layer = GroupedQueryAttention(24, 24, 24, 32, 4, num_kv_heads, rope=convention).double().eval()
    x = torch.randn(3, 6, 24, dtype=torch.float64)
    valid_lens = torch.tensor([6, 3, 1])
    with torch.no_grad():
        explicit = layer(x, x, x, valid_lens, causal=True)
        fused = layer(x, x, x, valid_lens, causal=True, need_weights=False)
        q = layer.W_q(x).unflatten(-1, (4, 8)).transpose(1, 2)  # (batch, heads, seq, head_dim)
        k = layer.W_k(x).unflatten(-1, (num_kv_heads, 8)).transpose(1, 2)
        v = layer.W_v(x).unflatten(-1, (num_kv_heads, 8)).transpose(1, 2)
        positions = torch.arange(6)
        q, k = complex_rope(q, positions, convention), complex_rope(k, positions, convention)
        k, v = k.repeat_interleave(4 // num_kv_heads, dim=1), v.repeat_interleave(4 // num_kv_heads, dim=1)
        mask = (torch.arange(6)[None, :] < valid_lens[:, None])[:, None, None, :] & torch.ones(6, 6).tril().bool()
        reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        reference = layer.W_o(reference.transpose(1, 2).flatten(2))
    torch.testing.assert_close(explicit, reference, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(fused, reference, rtol=1e-12, atol=1e-12)


def test_rope_is_off_by_default_and_changes_no_parameter():
    torch.manual_seed(5)
    plain = MultiHeadAttention(16, 16, 16, 16, 2)
    assert plain.rotary is None
    turned = MultiHeadAttention(16, 16, 16, 16, 2, rope="halves", rope_base=500000)
    assert turned.state_dict().keys() == plain.state_dict().keys()
    assert (turned.rotary.convention, turned.rotary.base) == ("halves", 500000.0)
    turned.load_state_dict(plain.state_dict())
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        assert not torch.allclose(turned(x, x, x), plain(x, x, x))
    lazy = MultiHeadAttention(16, 2, rope="interleaved")  # d2l 1.0's form takes it too
    assert lazy.rotary.head_dim == 8 and lazy(x, x, x).shape == (1, 5, 16)


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_mha_to_gqa_keeps_the_rotary_embedding(convention):
    torch.manual_seed(6)
    mha = MultiHeadAttention(16, 16, 16, 16, 4, rope=convention, rope_base=100.0).double()
    gqa = mha_to_gqa(mha, 4)
    assert (gqa.rotary.convention, gqa.rotary.base) == (convention, 100.0)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(gqa(x, x, x), mha(x, x, x), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="no rotary position embedding"):
        to_torch_mha(mha)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("convention", CONVENTIONS)
def test_generation_with_the_cache_equals_recomputing_everything(dtype, convention):
    torch.manual_seed(7)
    layer = GroupedQueryAttention(16, 16, 16, 16, 4, 2, rope=convention).to(dtype).eval()
    prompt = torch.randn(2, 5, 16, dtype=dtype)
    with torch.no_grad():
        cached = generate(layer, prompt, 6, use_cache=True)
        recomputed = generate(layer, prompt, 6, use_cache=False)
    torch.testing.assert_close(cached, recomputed, **TOLERANCE[dtype])


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_the_cache_stores_rotated_keys_and_the_sliding_window_too(convention):
    torch.manual_seed(8)
    layer = GroupedQueryAttention(16, 16, 16, 16, 4, 2, rope=convention).double().eval()
    x = torch.randn(1, 9, 16, dtype=torch.float64)
    cache = KVCache(1, 2, 4, 9, dtype=torch.float64)
    window = SlidingWindowKVCache(1, 2, 4, 3, dtype=torch.float64)
    distance = torch.arange(9)[:, None] - torch.arange(9)[None, :]  # query minus key position
    window_mask = (distance >= 0) & (distance < 3)
    with torch.no_grad():
        attend_with_cache(layer, x[:, :4], cache)
        for t in range(4, 9):
            attend_with_cache(layer, x[:, t:t + 1], cache)
        keys = layer.W_k(x).unflatten(-1, (2, 4)).transpose(1, 2)
        torch.testing.assert_close(cache.keys, complex_rope(keys, torch.arange(9), convention))
        full = layer(x, x, x, attn_mask=window_mask)
        pieces = [attend_with_cache(layer, x[:, :2], window)]
        pieces += [attend_with_cache(layer, x[:, t:t + 1], window) for t in range(2, 9)]
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, rtol=1e-12, atol=1e-12)


# ----- bad input: a clear error naming the argument ---------------------------------------------------------------


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: apply_rope(torch.randn(4, 7), convention="halves"), ValueError, "must be even, got 7"),
    (lambda: apply_rope(torch.randn(4, 8), convention="rotate_half"), ValueError, "'interleaved'"),
    (lambda: apply_rope(torch.randn(4, 8), convention=None), TypeError, "convention must be"),
    (lambda: apply_rope(torch.randn(4, 8)), TypeError, "convention"),
    (lambda: apply_rope(torch.randn(8), convention="halves"), ValueError, "at least 2 axes"),
    (lambda: apply_rope(torch.arange(8).view(1, 8), convention="halves"), TypeError, "floating-point"),
    (lambda: apply_rope([[1.0, 2.0]], convention="halves"), TypeError, "torch.Tensor"),
    (lambda: apply_rope(torch.randn(4, 8), torch.arange(5), convention="halves"), ValueError, "shape (4,)"),
    (lambda: apply_rope(torch.randn(4, 8), torch.arange(4).view(1, 4), convention="halves"), ValueError,
     "positions must be a tensor (seq_len,)"),
    (lambda: apply_rope(torch.randn(4, 8), torch.arange(4.0), convention="halves"), TypeError, "integers"),
    (lambda: apply_rope(torch.randn(4, 8), [0, 1, 2, 3], convention="halves"), TypeError, "positions"),
    (lambda: apply_rope(torch.randn(4, 8), np.arange(4), convention="halves"), TypeError, "positions"),
    (lambda: apply_rope(torch.randn(4, 8), convention="halves", base=0), ValueError, "base"),
    (lambda: apply_rope(torch.randn(4, 8), convention="halves", base="1e4"), TypeError, "base"),
    (lambda: rotate_half(torch.randn(3, 5)), ValueError, "must be even, got 5"),
    (lambda: rotate_pairs(torch.randn(3, 5)), ValueError, "must be even, got 5"),
    (lambda: rope_frequencies(7), ValueError, "head_dim must be even"),
    (lambda: interleaved_to_halves(torch.randn(12, 4), 5), ValueError, "num_heads=5 dividing"),
    (lambda: interleaved_to_halves(torch.randn(12, 4), 4), ValueError, "head_dim must be even, got 3"),
    (lambda: halves_to_interleaved(torch.randn(2, 8, 4), 2), ValueError, "got shape (2, 8, 4)"),
    (lambda: MultiHeadAttention(10, 10, 10, 10, 2, rope="halves"), ValueError, "head_dim must be even, got 5"),
    (lambda: MultiHeadAttention(8, 8, 8, 8, 2, rope="neox"), ValueError, "convention must be"),
    (lambda: MultiHeadAttention(8, 8, 8, 8, 2, rope=True), TypeError, "convention must be"),
    (lambda: GroupedQueryAttention(8, 8, 8, 8, 2, 1, rope="halves", rope_base=-1.0), ValueError, "base"),
    (lambda: RotaryEmbedding(8, "halves")(torch.randn(2, 8), torch.randn(2, 8), start=1.5), TypeError, "start"),
])
def test_bad_input_gets_a_clear_error(call, error, words):
    with pytest.raises(error) as raised:
        call()
    assert words in str(raised.value), str(raised.value)
