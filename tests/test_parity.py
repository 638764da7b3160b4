"""mha_lib computes what PyTorch computes.

References: ``F.scaled_dot_product_attention`` for the functional core and
``nn.MultiheadAttention(batch_first=True)`` with copied weights for the module,
in float64 with tight tolerances, over shapes, masks and seeds.
"""

import zlib

import pytest
import torch
import torch.nn.functional as F

import mha_lib
from mha_lib import (
    AdditiveAttention,
    DotProductAttention,
    MultiHeadAttention,
    attention_mask,
    causal_mask,
    dot_product_attention,
    masked_softmax,
    to_torch_mha,
    transpose_output,
    transpose_qkv,
    valid_lens_mask,
)

TIGHT = {"rtol": 1e-10, "atol": 1e-12}
SEEDS = [0, 1, 2]


def randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64)


def reference_weights(queries, keys, mask=None):
    """PyTorch's own attention weights: SDPA applied to identity values returns exactly them."""
    num_kvpairs = keys.shape[-2]
    identity = torch.eye(num_kvpairs, dtype=keys.dtype).expand(*keys.shape[:-2], num_kvpairs, num_kvpairs)
    return F.scaled_dot_product_attention(queries, keys, identity, attn_mask=mask)


def loop_mask(valid_lens, num_queries, num_kvpairs):
    """The valid-length mask written out element by element, independent of valid_lens_mask."""
    batch_size = valid_lens.shape[0]
    mask = torch.zeros(batch_size, num_queries, num_kvpairs, dtype=torch.bool)
    for b in range(batch_size):
        for i in range(num_queries):
            length = valid_lens[b] if valid_lens.dim() == 1 else valid_lens[b, i]
            mask[b, i, :length] = True
    return mask


# --- masks ---------------------------------------------------------------------------------


def test_valid_lens_mask_keeps_the_first_valid_lens_pairs():
    expected = torch.tensor([[True, False, False, False], [True, True, True, False], [False] * 4])
    assert torch.equal(valid_lens_mask(torch.tensor([1, 3, 0]), 4), expected)


@pytest.mark.parametrize("num_queries, num_kvpairs", [(4, 4), (3, 5), (5, 3)])
def test_causal_mask_is_sdpa_is_causal(num_queries, num_kvpairs):
    q, k, v = randn(2, num_queries, 4), randn(2, num_kvpairs, 4), randn(2, num_kvpairs, 3)
    output, _ = dot_product_attention(q, k, v, causal_mask(num_queries, num_kvpairs))
    torch.testing.assert_close(output, F.scaled_dot_product_attention(q, k, v, is_causal=True), **TIGHT)


@pytest.mark.parametrize("seed", SEEDS)
def test_attention_mask_combines_all_three_kinds(seed):
    torch.manual_seed(seed)
    batch_size, num_queries, num_kvpairs = 3, 4, 5
    valid_lens = torch.randint(0, num_kvpairs + 1, (batch_size, num_queries))
    explicit = torch.rand(batch_size, num_queries, num_kvpairs) > 0.3
    combined = attention_mask(batch_size, num_queries, num_kvpairs, valid_lens, causal=True, attn_mask=explicit)
    expected = loop_mask(valid_lens, num_queries, num_kvpairs) & torch.ones(4, 5, dtype=torch.bool).tril() & explicit
    assert torch.equal(combined, expected)


def test_attention_mask_is_none_when_nothing_is_masked():
    assert attention_mask(2, 3, 4) is None


# --- masked softmax ------------------------------------------------------------------------


@pytest.mark.parametrize("lens_shape", ["batch", "batch_queries"])
@pytest.mark.parametrize("seed", SEEDS)
def test_masked_softmax_matches_softmax_over_the_valid_pairs(lens_shape, seed):
    torch.manual_seed(seed)
    batch_size, num_queries, num_kvpairs = 3, 4, 6
    X = randn(batch_size, num_queries, num_kvpairs)
    shape = (batch_size,) if lens_shape == "batch" else (batch_size, num_queries)
    valid_lens = torch.randint(1, num_kvpairs + 1, shape)
    weights = masked_softmax(X, valid_lens)
    mask = loop_mask(valid_lens, num_queries, num_kvpairs)
    expected = torch.softmax(X.masked_fill(~mask, float("-inf")), dim=-1)
    torch.testing.assert_close(weights, expected, **TIGHT)
    assert torch.all(weights[~mask] == 0)


def test_masked_softmax_gives_a_row_of_zeros_where_nothing_is_valid():
    weights = masked_softmax(randn(2, 3, 4), torch.tensor([[0, 2, 4], [0, 0, 1]]))
    assert torch.all(weights[0, 0] == 0) and torch.all(weights[1, :2] == 0)
    torch.testing.assert_close(weights[0, 1:].sum(-1), torch.ones(2, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_masked_softmax_is_safe_in_half_precision(dtype):
    X = torch.randn(2, 3, 5) * 30  # large scores, as an untrained model can produce
    valid_lens = torch.tensor([[0, 2, 5], [1, 3, 4]])
    weights = masked_softmax(X.to(dtype), valid_lens)
    assert weights.dtype == dtype and not weights.isnan().any()
    mask = loop_mask(valid_lens, 3, 5)
    assert torch.all(weights[~mask] == 0)
    torch.testing.assert_close(weights.float(), masked_softmax(X, valid_lens), rtol=0, atol=1e-2)


# --- the functional core against F.scaled_dot_product_attention ------------------------------

SHAPES = [  # (leading axes, num_queries, num_kvpairs, d, value_dim)
    ((2,), 3, 5, 4, 6),
    ((1,), 7, 7, 8, 8),
    ((3,), 1, 4, 2, 5),
    ((2, 3), 4, 6, 5, 3),  # (batch, heads, ...)
]


def make_mask(kind, leading, num_queries, num_kvpairs):
    if kind is None:
        return None
    if kind == "causal":
        return causal_mask(num_queries, num_kvpairs)
    if kind == "padding":
        valid_lens = torch.randint(1, num_kvpairs + 1, (leading[0],))
        return attention_mask(leading[0], num_queries, num_kvpairs, valid_lens).reshape(
            leading[0], *[1] * (len(leading) - 1), 1, num_kvpairs)
    return torch.rand(*leading, num_queries, num_kvpairs) > 0.4  # "random": some rows fully masked


@pytest.mark.parametrize("mask_kind", [None, "padding", "causal", "random"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("seed", SEEDS)
def test_dot_product_attention_matches_pytorch(shape, mask_kind, seed):
    torch.manual_seed(seed)
    leading, num_queries, num_kvpairs, d, value_dim = shape
    q, k, v = randn(*leading, num_queries, d), randn(*leading, num_kvpairs, d), randn(*leading, num_kvpairs, value_dim)
    mask = make_mask(mask_kind, leading, num_queries, num_kvpairs)
    output, weights = dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(output, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), **TIGHT)
    torch.testing.assert_close(weights, reference_weights(q, k, mask), **TIGHT)


@pytest.mark.parametrize("seed", SEEDS)
def test_dot_product_attention_with_valid_lens_matches_pytorch(seed):
    torch.manual_seed(seed)
    q, k, v = randn(2, 3, 4), randn(2, 6, 4), randn(2, 6, 5)
    valid_lens = torch.tensor([2, 6])
    layer = DotProductAttention(dropout=0.0)
    mask = valid_lens_mask(valid_lens, 6)[:, None, :]
    torch.testing.assert_close(layer(q, k, v, valid_lens), F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                               **TIGHT)
    torch.testing.assert_close(layer.attention_weights, reference_weights(q, k, mask), **TIGHT)


@pytest.mark.parametrize("seed", SEEDS)
def test_additive_attention_matches_its_formula(seed):
    torch.manual_seed(seed)
    layer = AdditiveAttention(key_size=3, query_size=5, num_hiddens=7, dropout=0.0).double()
    q, k, v = randn(2, 4, 5), randn(2, 6, 3), randn(2, 6, 2)
    valid_lens = torch.tensor([[1, 2, 6, 6], [3, 3, 4, 5]])
    output = layer(q, k, v, valid_lens)
    # score(q, k) = w_v . tanh(W_q q + W_k k), one (query, key) pair at a time
    scores = torch.empty(2, 4, 6, dtype=torch.float64)
    for b in range(2):
        for i in range(4):
            for j in range(6):
                features = torch.tanh(layer.W_q.weight @ q[b, i] + layer.W_k.weight @ k[b, j])
                scores[b, i, j] = layer.w_v.weight[0] @ features
    weights = torch.softmax(scores.masked_fill(~loop_mask(valid_lens, 4, 6), float("-inf")), dim=-1)
    torch.testing.assert_close(layer.attention_weights, weights, **TIGHT)
    torch.testing.assert_close(output, weights @ v, **TIGHT)


# --- folding heads into the batch axis -------------------------------------------------------


@pytest.mark.parametrize("batch_size, seq_len, num_hiddens, num_heads", [(2, 2, 4, 2), (2, 10, 100, 5), (3, 1, 6, 1),
                                                                         (1, 4, 12, 12)])
def test_transpose_qkv_puts_head_i_of_sequence_b_at_b_times_heads_plus_i(batch_size, seq_len, num_hiddens, num_heads):
    X = randn(batch_size, seq_len, num_hiddens)
    folded = transpose_qkv(X, num_heads)
    head_dim = num_hiddens // num_heads
    assert folded.shape == (batch_size * num_heads, seq_len, head_dim)
    for b in range(batch_size):
        for i in range(num_heads):
            assert torch.equal(folded[b * num_heads + i], X[b, :, i * head_dim:(i + 1) * head_dim])
    assert torch.equal(transpose_output(folded, num_heads), X)


def test_transpose_qkv_on_the_10_to_27_example():
    X = torch.tensor([[[10, 11, 12, 13], [14, 15, 16, 17]],
                      [[20, 21, 22, 23], [24, 25, 26, 27]]])
    expected = torch.tensor([[[10, 11], [14, 15]], [[12, 13], [16, 17]],
                             [[20, 21], [24, 25]], [[22, 23], [26, 27]]])
    assert torch.equal(transpose_qkv(X, 2), expected)
    assert torch.equal(transpose_output(expected, 2), X)


# --- MultiHeadAttention against nn.MultiheadAttention -----------------------------------------

CASES = {  # name: (num_queries, num_kvpairs, key_size, value_size); num_hiddens = query_size = 12
    "self": (5, 5, 12, 12),
    "cross-longer-kv": (3, 7, 12, 12),
    "cross-shorter-kv": (6, 2, 12, 12),
    "cross-other-sizes": (4, 6, 5, 9),
}
MASKS = ["none", "valid_lens", "valid_lens_per_query", "causal", "valid_lens+causal", "attn_mask"]


def torch_masks(kind, valid_lens, num_heads, num_queries, num_kvpairs):
    """The same masking in nn.MultiheadAttention's terms, where True means *ignore*."""
    key_padding_mask = attn_mask = None
    if kind in ("valid_lens", "valid_lens+causal"):
        key_padding_mask = ~valid_lens_mask(valid_lens, num_kvpairs)
    if kind == "valid_lens_per_query":
        attn_mask = ~loop_mask(valid_lens, num_queries, num_kvpairs).repeat_interleave(num_heads, dim=0)
    if kind in ("causal", "valid_lens+causal"):
        attn_mask = ~causal_mask(num_queries, num_kvpairs)
    return key_padding_mask, attn_mask


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "fused"])
@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("num_heads", [1, 3, 4])
def test_multi_head_attention_matches_pytorch(case, mask_kind, bias, need_weights, num_heads):
    torch.manual_seed(zlib.crc32(f"{case}/{mask_kind}/{num_heads}".encode()))  # stable across runs
    num_queries, num_kvpairs, key_size, value_size = CASES[case]
    batch_size, num_hiddens = 3, 12
    ours = MultiHeadAttention(key_size, num_hiddens, value_size, num_hiddens, num_heads, dropout=0.0, bias=bias)
    ours = ours.double().eval()
    if bias:  # nn.Linear biases start random; make sure they are nonzero everywhere
        for layer in (ours.W_q, ours.W_k, ours.W_v, ours.W_o):
            torch.nn.init.normal_(layer.bias)
    theirs = to_torch_mha(ours)
    queries, keys, values = randn(batch_size, num_queries, 12), randn(batch_size, num_kvpairs, key_size), randn(
        batch_size, num_kvpairs, value_size)
    shape = (batch_size, num_queries) if mask_kind == "valid_lens_per_query" else (batch_size,)
    valid_lens = torch.randint(1, num_kvpairs + 1, shape)
    explicit = torch.rand(batch_size, num_queries, num_kvpairs) > 0.3
    explicit[..., 0] = True  # keep one key per row: PyTorch's slow path gives NaN for fully masked rows

    output = ours(queries, keys, values, valid_lens if "valid_lens" in mask_kind else None,
                  causal="causal" in mask_kind, attn_mask=explicit if mask_kind == "attn_mask" else None,
                  need_weights=need_weights)
    key_padding_mask, attn_mask = torch_masks(mask_kind, valid_lens, num_heads, num_queries, num_kvpairs)
    if mask_kind == "attn_mask":
        attn_mask = ~explicit.repeat_interleave(num_heads, dim=0)
    expected, expected_weights = theirs(queries, keys, values, key_padding_mask=key_padding_mask,
                                        attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
    assert output.shape == (batch_size, num_queries, num_hiddens)
    torch.testing.assert_close(output, expected, **TIGHT)
    if need_weights:
        torch.testing.assert_close(ours.attention_weights, expected_weights, **TIGHT)
    else:  # a call with need_weights=False clears the weights an earlier call stored
        ours(queries, keys, values)
        assert ours.attention_weights is not None
        ours(queries, keys, values, need_weights=False)
        assert ours.attention_weights is None


def test_the_source_notes_closing_example():
    """100 hiddens, 5 heads, 4 queries attending to 6 key-value pairs with valid_lens [3, 2]."""
    attention = MultiHeadAttention(100, 100, 100, 100, 5, 0.5).eval()
    X, Y = torch.ones(2, 4, 100), torch.ones(2, 6, 100)
    assert attention(X, Y, Y, torch.tensor([3, 2])).shape == (2, 4, 100)
    weights = attention.attention_weights
    assert weights.shape == (2, 5, 4, 6)
    assert torch.all(weights[0, :, :, 3:] == 0) and torch.all(weights[1, :, :, 2:] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 5, 4))


# --- what is masked cannot matter -------------------------------------------------------------


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "fused"])
@pytest.mark.parametrize("seed", SEEDS)
def test_padded_key_value_pairs_cannot_change_the_output(need_weights, seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(6, 8, 7, 8, 2, dropout=0.0).double().eval()
    queries, keys, values = randn(2, 3, 8), randn(2, 5, 6), randn(2, 5, 7)
    valid_lens = torch.tensor([2, 4])
    before = mha(queries, keys, values, valid_lens, need_weights=need_weights)
    keys[0, 2:], values[0, 2:], keys[1, 4:], values[1, 4:] = 1e3, -1e3, 7.0, 7.0
    after = mha(queries, keys, values, valid_lens, need_weights=need_weights)
    torch.testing.assert_close(after, before, **TIGHT)


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "fused"])
@pytest.mark.parametrize("position", [0, 2, 4])
def test_future_tokens_cannot_change_earlier_outputs(need_weights, position):
    mha = MultiHeadAttention(8, 8, 8, 8, 4, dropout=0.0).double().eval()
    X = randn(2, 6, 8)
    before = mha(X, X, X, causal=True, need_weights=need_weights)
    X[:, position + 1:] = randn(2, 5 - position, 8) * 100
    after = mha(X, X, X, causal=True, need_weights=need_weights)
    torch.testing.assert_close(after[:, :position + 1], before[:, :position + 1], **TIGHT)
    if position < 5:
        assert not torch.allclose(after[:, position + 1:], before[:, position + 1:])


# --- gradients ---------------------------------------------------------------------------------


def test_gradcheck_dot_product_attention_with_a_fully_masked_row():
    q, k, v = (randn(2, 3, 4).requires_grad_() for _ in range(3))
    mask = torch.tensor([[True, False, False], [False, False, False], [True, True, True]])
    assert torch.autograd.gradcheck(lambda q, k, v: dot_product_attention(q, k, v, mask), (q, k, v))


def test_gradcheck_masked_softmax():
    X = randn(2, 3, 4).requires_grad_()
    assert torch.autograd.gradcheck(lambda X: masked_softmax(X, torch.tensor([[1, 0, 4], [2, 3, 3]])), (X,))


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "fused"])
def test_gradcheck_multi_head_attention(need_weights):
    mha = MultiHeadAttention(3, 4, 5, 6, 2, dropout=0.0, bias=True).double()
    queries, keys, values = randn(2, 3, 4).requires_grad_(), randn(2, 4, 3).requires_grad_(), randn(2, 4, 5)
    valid_lens = torch.tensor([4, 2])
    assert torch.autograd.gradcheck(
        lambda q, k: mha(q, k, values, valid_lens, causal=True, need_weights=need_weights), (queries, keys))


# --- dropout, precision and helpers ----------------------------------------------------------


def test_dropout_acts_in_training_only_and_stored_weights_stay_normalised():
    mha = MultiHeadAttention(8, 8, 8, 8, 2, dropout=0.5)
    X = torch.randn(2, 5, 8)
    first, second = mha(X, X, X), mha(X, X, X)
    assert not torch.allclose(first, second)
    torch.testing.assert_close(mha.attention_weights.sum(-1), torch.ones(2, 2, 5))
    mha.eval()
    torch.testing.assert_close(mha(X, X, X), mha(X, X, X, need_weights=False))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "fused"])
def test_multi_head_attention_runs_in_half_precision_without_nan(dtype, need_weights):
    mha = MultiHeadAttention(16, 16, 16, 16, 4).eval()
    X = torch.randn(2, 5, 16) * 10
    expected = mha(X, X, X, torch.tensor([0, 3]), causal=True)
    output = mha.to(dtype)(X.to(dtype), X.to(dtype), X.to(dtype), torch.tensor([0, 3]), causal=True,
                           need_weights=need_weights)
    assert not output.isnan().any()
    torch.testing.assert_close(output.float(), expected, rtol=0.05, atol=0.05)


def test_pick_device_prefers_cuda_then_mps(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert mha_lib.pick_device() == torch.device("cpu")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert mha_lib.pick_device() == torch.device("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert mha_lib.pick_device() == torch.device("cuda")


def test_set_seed_makes_every_generator_repeat():
    import random

    import numpy as np

    def draw():
        return random.random(), np.random.rand(), torch.rand(1).item()

    mha_lib.set_seed(7)
    first = draw()
    mha_lib.set_seed(7)
    assert draw() == first
    mha_lib.set_seed(8)
    assert draw() != first
