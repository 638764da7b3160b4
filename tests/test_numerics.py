"""Half precision against float64: float16 and bfloat16 results of the public entry points, within stated tolerances.

The reference is always the same computation in float64 from the *rounded* inputs (and, for a layer, its rounded
weights: ``copy.deepcopy(layer).double()``), so only the arithmetic in half precision is measured, never the rounding
of the inputs. Attention's reference is written out (mask with -inf, softmax, a row with nothing visible set to 0),
RoPE's too; a layer's and the decoder's are the library's float64 path, which the other test files hold against
PyTorch. Every tolerance is absolute (``assert_close`` with ``rtol=0``) and holds for seeds 0-4, which the tests run.
It was set at 2-4 times the largest error seen (`seen`) over seeds 0-19, on one CPU thread (torch 2.13.0+cpu, x86-64):

| entry point                          | compared          | max abs ref | fp16 tol | fp16 seen | bf16 tol | bf16 seen |
|--------------------------------------|-------------------|-------------|----------|-----------|----------|-----------|
| dot_product_attention                | weights           | 1           | 1e-3     | 2.9e-4    | 6e-3     | 2.0e-3    |
| dot_product_attention                | output            | 4.8         | 3e-3     | 1.0e-3    | 2e-2     | 7.8e-3    |
| masked_softmax (no float32 upcast)   | weights           | 1           | 1e-3     | 2.6e-4    | 6e-3     | 2.1e-3    |
| MultiHeadAttention, folded and fused | weights (folded)  | 1           | 1e-3     | 2.8e-4    | 6e-3     | 2.3e-3    |
| MultiHeadAttention, folded and fused | output            | 1.1         | 1e-3     | 3.8e-4    | 1e-2     | 3.9e-3    |
| GroupedQueryAttention + RoPE, both   | weights (folded)  | 1           | 1e-3     | 4.0e-4    | 6e-3     | 2.9e-3    |
| GroupedQueryAttention + RoPE, both   | output            | 1.1         | 1e-3     | 4.4e-4    | 1e-2     | 3.7e-3    |
| apply_rope, RotaryEmbedding          | x turned, <=29999 | 5.2         | 1.5e-2   | 5.3e-3    | 4e-2     | 1.6e-2    |
| generate, with and without the cache | sequence, 6 steps | 4.4         | 1e-3     | 2.8e-4    | 1e-2     | 3.5e-3    |
| attend_with_cache with a KVCache     | output, 8 tokens  | 1.1         | 1e-3     | 4.0e-4    | 1e-2     | 3.7e-3    |

bfloat16 keeps 8 significant bits to float16's 11, and its errors are about 2**3 = 8 times larger throughout.

What else is asserted, exactly, in both dtypes: a hidden key gets weight 0 (valid lengths, causal and boolean masks),
a query that sees no key gets weights and output 0 (a valid length of 0 in the layers, on the fused path too), every
result is finite. ``dot_product_attention`` computes half-precision scores in float32: queries and keys 300 times
larger give scores beyond 2.6e5, four times float16's largest number, and still meet the tolerances above (mostly
within 1e-10, since the softmax is then nearly one-hot; a near tie of the two largest scores at some of seeds 5-19
gives errors of 2e-4). ``masked_softmax`` runs in the dtype it is given, and meets its tolerance with scores up to
float16's largest (inputs are clamped into each dtype's range first: an inf would be a different test).
RoPE's angles are float32: at position 30,000 their error (about 1e-3 rad) is as large as float16's rounding of the
result, and doubles the float16 error there against position 0.
The last test pins a fixed defect in float16, bfloat16 and float32: a visible score at ``finfo(dtype).min``, the value
``masked_softmax`` gives the hidden keys, used to tie with them (weight 1/4 where 1 was right).
"""

import copy

import pytest
import torch
import torch.nn.functional as F

from mha_lib import (
    GroupedQueryAttention,
    KVCache,
    MultiHeadAttention,
    RotaryEmbedding,
    apply_rope,
    attend_with_cache,
    dot_product_attention,
    generate,
    masked_softmax,
)

SEEDS = range(5)
HALF = [torch.float16, torch.bfloat16]
SHORT = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}


def runs_on_this_cpu(dtype: torch.dtype) -> bool:
    """Whether this CPU build multiplies and runs PyTorch's attention kernel in ``dtype``."""
    try:
        x = torch.ones(1, 1, 2, 2, dtype=dtype)
        x @ x
        F.scaled_dot_product_attention(x, x, x, attn_mask=torch.ones(2, 2, dtype=torch.bool))
    except RuntimeError:
        return False
    return True


def dtype_param(dtype: torch.dtype):
    return pytest.param(dtype, id=SHORT[dtype],
                        marks=pytest.mark.skipif(not runs_on_this_cpu(dtype), reason=f"no {dtype} on this CPU"))


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One thread: CPU matmuls in half precision split even 16x16 products across threads, and on a busy
    machine each call then waits milliseconds for the other core. The tolerances hold with any thread count."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


DTYPES = pytest.mark.parametrize("dtype", [dtype_param(dtype) for dtype in HALF])
SEED = pytest.mark.parametrize("seed", SEEDS)


def randn(generator: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=generator, dtype=torch.float64) * scale


def rounded(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` in ``dtype``, clamped first so that it is finite there."""
    finite = torch.finfo(dtype).max
    return x.clamp(-finite, finite).to(dtype)


def reference_attention(queries, keys, values, mask):
    """Float64 attention by the textbook: hide with -inf, softmax, a row with nothing visible set to 0."""
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    weights = torch.nan_to_num(scores.masked_fill(~mask, float("-inf")).softmax(dim=-1), nan=0.0)
    return weights @ values, weights


def reference_softmax(X, valid_lens):
    """Float64 softmax over the first ``valid_lens`` keys of each row, the others 0; and which keys those are."""
    mask = torch.arange(X.shape[-1]) < (valid_lens.reshape(-1, 1, 1) if valid_lens.dim() == 1
                                        else valid_lens.unsqueeze(-1))
    return torch.nan_to_num(X.masked_fill(~mask, float("-inf")).softmax(dim=-1), nan=0.0), mask


# The table of the module docstring: (entry point, what is compared) -> (float16's, bfloat16's) absolute tolerance.
TOLERANCE = {
    ("dot_product_attention", "weights"): (1e-3, 6e-3),
    ("dot_product_attention", "output"): (3e-3, 2e-2),
    ("masked_softmax", "weights"): (1e-3, 6e-3),
    ("MultiHeadAttention", "weights"): (1e-3, 6e-3),
    ("MultiHeadAttention", "output"): (1e-3, 1e-2),
    ("GroupedQueryAttention", "weights"): (1e-3, 6e-3),
    ("GroupedQueryAttention", "output"): (1e-3, 1e-2),
    ("apply_rope", "output"): (1.5e-2, 4e-2),
    ("generate", "sequence"): (1e-3, 1e-2),
    ("attend_with_cache", "output"): (1e-3, 1e-2),
}


def within(key: tuple[str, str], dtype: torch.dtype, actual: torch.Tensor, reference: torch.Tensor) -> None:
    """``actual``, in ``dtype``, is the float64 ``reference`` within the absolute tolerance of ``key`` for ``dtype``."""
    atol = TOLERANCE[key][HALF.index(dtype)]
    torch.testing.assert_close(actual.double(), reference, rtol=0, atol=atol, msg=lambda m: f"{key}, {dtype}: {m}")


def assert_zero(x: torch.Tensor) -> None:
    assert torch.equal(x, torch.zeros_like(x)), x


# ----- dot_product_attention ------------------------------------------------------------------------------------


def attention_mask_of(kind: str, generator: torch.Generator) -> torch.Tensor:
    """A boolean mask for scores (2, 4, 16, 16): random, or the first n keys; either with a row that sees nothing."""
    if kind == "random":
        mask = torch.rand(2, 4, 16, 16, generator=generator) < 0.5
        mask[0, 1, 3] = False  # one query that may attend to no key
        return mask
    lengths = torch.tensor([0, 1, 9, 16, 5, 16, 3, 12]).reshape(2, 4, 1, 1)  # a length 0 for a whole head
    return torch.arange(16) < lengths  # (2, 4, 1, 16): broadcast over the queries


@DTYPES
@SEED
@pytest.mark.parametrize("mask_kind", ["random", "lengths"])
@pytest.mark.parametrize("scale", [1, 30, 300])
def test_dot_product_attention_matches_float64(dtype, seed, mask_kind, scale):
    generator = torch.Generator().manual_seed(seed)
    # Queries and keys times `scale`: at 300 the scores reach about 3e5, far past float16's 65504.
    queries, keys = (rounded(randn(generator, 2, 4, 16, 64, scale=scale), dtype) for _ in range(2))
    values = rounded(randn(generator, 2, 4, 16, 64), dtype)
    mask = attention_mask_of(mask_kind, generator)
    largest_score = (queries.double() @ keys.double().transpose(-2, -1)).abs().max() / 64**0.5
    assert scale < 300 or largest_score > 4 * torch.finfo(torch.float16).max  # past float16's range
    output, weights = dot_product_attention(queries, keys, values, mask)
    assert output.dtype == weights.dtype == dtype
    reference_output, reference_weights = reference_attention(queries.double(), keys.double(), values.double(),
                                                              mask)
    assert torch.isfinite(output).all() and torch.isfinite(weights).all()
    assert_zero(weights.masked_select(~mask.expand_as(weights)))  # every hidden key: exactly 0
    blind = ~mask.expand_as(weights).any(dim=-1)  # (2, 4, 16): the queries that see nothing
    assert blind.any()
    assert_zero(output[blind])
    within(("dot_product_attention", "weights"), dtype, weights, reference_weights)
    within(("dot_product_attention", "output"), dtype, output, reference_output)


# ----- masked_softmax, which runs in the dtype it is given ------------------------------------------------------


@DTYPES
@SEED
@pytest.mark.parametrize("lengths", ["per sequence", "per query"])
@pytest.mark.parametrize("scale", [10, 65_000])
def test_masked_softmax_matches_float64(dtype, seed, lengths, scale):
    generator = torch.Generator().manual_seed(seed)
    X = rounded(randn(generator, 2, 6, 12, scale=scale), dtype)  # at 65,000 many clamp to float16's +-65504
    if lengths == "per sequence":
        valid_lens = torch.tensor([0, 7])
    else:
        valid_lens = torch.randint(0, 13, (2, 6), generator=generator)
        valid_lens[0, 2] = 0  # one query that sees nothing
    weights = masked_softmax(X, valid_lens)
    assert weights.dtype == dtype and torch.isfinite(weights).all()
    reference, mask = reference_softmax(X.double(), valid_lens)
    assert_zero(weights.masked_select(~mask.expand_as(weights)))
    assert_zero(weights[~mask.expand_as(weights).any(dim=-1)])  # valid length 0: all 0
    within(("masked_softmax", "weights"), dtype, weights, reference)


# ----- the layers, both paths ------------------------------------------------------------------------------------

LAYERS = {
    "MultiHeadAttention": lambda: MultiHeadAttention(32, 32, 32, 64, 4),
    "GroupedQueryAttention": lambda: GroupedQueryAttention(32, 32, 32, 64, 8, 2, rope="halves"),
}


def half_and_float64(build, dtype: torch.dtype, seed: int):
    """A layer rounded to ``dtype`` and the same layer in float64, made from the rounded weights."""
    torch.manual_seed(seed)
    layer = build().to(dtype).eval()
    return layer, copy.deepcopy(layer).double()


def layer_mask(valid_lens: torch.Tensor, num_queries: int, num_kvpairs: int) -> torch.Tensor:
    """Which key each query may see, with valid lengths and causality: (batch, num_queries, num_kvpairs)."""
    keys, queries = torch.arange(num_kvpairs), torch.arange(num_queries).unsqueeze(-1)
    return (keys < valid_lens.reshape(-1, 1, 1)) & (keys <= queries)


@DTYPES
@SEED
@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("need_weights", [True, False], ids=["folded", "fused"])
def test_layer_matches_float64(dtype, seed, name, need_weights):
    layer, reference_layer = half_and_float64(LAYERS[name], dtype, seed)
    generator = torch.Generator().manual_seed(seed)
    queries = rounded(randn(generator, 2, 8, 32), dtype)
    keys, values = (rounded(randn(generator, 2, 10, 32), dtype) for _ in range(2))
    valid_lens = torch.tensor([0, 6])  # the first sequence attends to nothing
    output = layer(queries, keys, values, valid_lens, causal=True, need_weights=need_weights)
    reference = reference_layer(queries.double(), keys.double(), values.double(), valid_lens, causal=True)
    assert output.dtype == dtype and torch.isfinite(output).all()
    assert_zero(output[0])  # no key to see: a zero output, and W_o has no bias
    within((name, "output"), dtype, output, reference)
    if need_weights:  # (batch, heads, queries, kvpairs)
        weights, hidden = layer.attention_weights, ~layer_mask(valid_lens, 8, 10).unsqueeze(1)
        assert_zero(weights.masked_select(hidden.expand_as(weights)))
        within((name, "weights"), dtype, weights, reference_layer.attention_weights)


# ----- rotary position embedding far out ----------------------------------------------------------------------


def reference_rope(x: torch.Tensor, positions: torch.Tensor, convention: str, base: float = 10000.0) -> torch.Tensor:
    """Float64 rotary embedding written out: pair i of position m turned by m * base ** (-2i / head_dim)."""
    head_dim = x.shape[-1]
    angles = positions.double().unsqueeze(-1) * base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    cos, sin = angles.cos(), angles.sin()  # (seq_len, head_dim/2)
    if convention == "halves":  # pair i: features i and i + head_dim/2
        a, b = x[..., :head_dim // 2], x[..., head_dim // 2:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]  # interleaved, pair i: features 2i and 2i+1
    return torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)


@DTYPES
@SEED
@pytest.mark.parametrize("convention", ["interleaved", "halves"])
def test_rope_at_positions_up_to_30000_matches_float64(dtype, seed, convention):
    generator = torch.Generator().manual_seed(seed)
    x = rounded(randn(generator, 2, 4, 48, 64), dtype)
    positions = torch.cat([torch.tensor([0, 1, 29_999]), torch.randint(0, 30_000, (45,), generator=generator)])
    turned = apply_rope(x, positions, convention=convention)
    assert turned.dtype == dtype
    within(("apply_rope", "output"), dtype, turned, reference_rope(x.double(), positions, convention))
    # The module the layers hold: queries and keys at positions 29,954 ... 29,999.
    queries, keys = x[..., :46, :], x[..., 2:, :]
    start = 29_954
    turned_queries, turned_keys = RotaryEmbedding(64, convention)(queries, keys, start=start)
    at = torch.arange(start, start + 46)
    within(("apply_rope", "output"), dtype, turned_queries, reference_rope(queries.double(), at, convention))
    within(("apply_rope", "output"), dtype, turned_keys, reference_rope(keys.double(), at, convention))


# ----- decoding with a cache -------------------------------------------------------------------------------------


def decoder(dtype: torch.dtype, seed: int):
    return half_and_float64(lambda: GroupedQueryAttention(16, 16, 16, 16, 4, 2, rope="interleaved"), dtype, seed)


@DTYPES
@SEED
@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "no cache"])
def test_generate_matches_float64(dtype, seed, use_cache):
    layer, reference_layer = decoder(dtype, seed)
    prompt = rounded(randn(torch.Generator().manual_seed(seed), 2, 3, 16), dtype)
    sequence = generate(layer, prompt, 6, use_cache=use_cache)
    assert sequence.dtype == dtype
    reference = generate(reference_layer, prompt.double(), 6, use_cache=use_cache)
    within(("generate", "sequence"), dtype, sequence, reference)


@DTYPES
@SEED
def test_attend_with_cache_matches_float64_causal_forward(dtype, seed):
    layer, reference_layer = decoder(dtype, seed)
    x = rounded(randn(torch.Generator().manual_seed(seed), 2, 8, 16), dtype)
    cache = KVCache(2, 2, 4, 8, dtype=dtype)
    steps = [attend_with_cache(layer, x[:, :4], cache)]  # the prompt at once, then one token a step
    steps += [attend_with_cache(layer, x[:, i:i + 1], cache) for i in range(4, 8)]
    assert cache.keys.dtype == dtype and len(cache) == 8
    reference = reference_layer(x.double(), x.double(), x.double(), causal=True)  # every token at once
    within(("attend_with_cache", "output"), dtype, torch.cat(steps, dim=1), reference)


# ----- the mask's sentinel -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [*(dtype_param(dtype) for dtype in HALF), pytest.param(torch.float32, id="fp32")])
def test_a_visible_score_at_the_dtypes_minimum_is_not_taken_for_a_hidden_one(dtype):
    # masked_softmax gives the hidden keys finfo.min; a visible score equal to it (or rounding to it, as
    # 0.999 * finfo.min does in bfloat16) must still take the weight from them, not tie with them at 1/4.
    low = torch.finfo(dtype).min
    X = torch.tensor([[[low, 0, 0, 0], [0.999 * low, 0, 0, 0], [low, 0, 0, 5], [low, low, 0, 0]]], dtype=dtype)
    weights = masked_softmax(X, torch.tensor([[1, 1, 3, 2]]))
    expected = torch.tensor([[[1, 0, 0, 0], [1, 0, 0, 0], [0, 0.5, 0.5, 0], [0.5, 0.5, 0, 0]]], dtype=dtype)
    torch.testing.assert_close(weights, expected, rtol=0, atol=0)
