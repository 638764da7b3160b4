"""The shape trace, the parameter count and the layer with separate head sizes (chapter 04)."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from mha_chapters.anatomy import (
    TraceRow,
    count_parameters,
    format_trace,
    mha_flops,
    score_bytes,
    trace_multi_head_attention,
)
from mha_lib import GeneralMultiHeadAttention, MultiHeadAttention, causal_mask, valid_lens_mask

# (query_size, key_size, value_size, num_hiddens, num_heads, num_queries, num_kvpairs)
CASES = [(100, 100, 100, 100, 5, 4, 6), (12, 16, 24, 40, 4, 3, 5), (8, 8, 8, 8, 1, 5, 5)]


def make_inputs(query_size, key_size, value_size, num_queries, num_kvpairs, batch_size=2):
    return (torch.randn(batch_size, num_queries, query_size), torch.randn(batch_size, num_kvpairs, key_size),
            torch.randn(batch_size, num_kvpairs, value_size))


def make_valid_lens(kind, num_queries, num_kvpairs):
    if kind == "none":
        return None
    if kind == "per sequence":
        return torch.tensor([num_kvpairs - 1, 2])
    return torch.randint(1, num_kvpairs + 1, (2, num_queries))  # per query


# --- trace_multi_head_attention ------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("lens_kind", ["none", "per sequence", "per query"])
@pytest.mark.parametrize("causal", [False, True])
def test_trace_ends_with_the_modules_own_output_and_weights(case, lens_kind, causal):
    query_size, key_size, value_size, num_hiddens, num_heads, num_queries, num_kvpairs = case
    mha = MultiHeadAttention(key_size, query_size, value_size, num_hiddens, num_heads, bias=True).eval()
    queries, keys, values = make_inputs(query_size, key_size, value_size, num_queries, num_kvpairs)
    valid_lens = make_valid_lens(lens_kind, num_queries, num_kvpairs)
    rows = trace_multi_head_attention(mha, queries, keys, values, valid_lens, causal=causal)
    assert mha.attention_weights is None  # the trace does not touch the module's state
    expected = mha(queries, keys, values, valid_lens, causal=causal)
    assert torch.equal(rows[-1].tensor, expected)
    weights = {row.step: row.tensor for row in rows}["2 score, 3 softmax"]
    assert torch.equal(weights, mha.attention_weights.reshape(-1, num_queries, num_kvpairs))
    assert all(isinstance(row, TraceRow) and row.shape == tuple(row.tensor.shape) for row in rows)
    assert not any(row.tensor.requires_grad for row in rows)


def test_trace_of_the_d2l_example_has_the_expected_steps_and_shapes():
    mha = MultiHeadAttention(100, 100, 100, 100, 5)
    queries, keys, values = make_inputs(100, 100, 100, 4, 6)
    rows = trace_multi_head_attention(mha, queries, keys, values, torch.tensor([3, 2]))
    assert [(row.step, row.shape) for row in rows] == [
        ("input", (2, 4, 100)), ("input", (2, 6, 100)), ("input", (2, 6, 100)), ("  mask", (2, 1, 6)),
        ("1 project", (2, 4, 100)), ("1 project", (2, 6, 100)), ("1 project", (2, 6, 100)),
        ("  split heads", (10, 4, 20)), ("  split heads", (10, 6, 20)), ("  split heads", (10, 6, 20)),
        ("  split heads", (10, 1, 6)),
        ("2 score, 3 softmax", (10, 4, 6)), ("3 weighted sum", (10, 4, 20)),
        ("4 concatenate", (2, 4, 100)), ("5 output projection", (2, 4, 100)),
    ]
    assert torch.equal(rows[3].tensor.sum(-1).flatten(), torch.tensor([3, 2]))
    mask = rows[10].tensor  # valid lengths [3, 2] repeated in place for the 5 heads of each sequence
    assert torch.equal(mask.sum(-1).flatten(), torch.tensor([3] * 5 + [2] * 5))


def test_trace_with_different_sizes_projects_every_input_to_num_hiddens():
    mha = MultiHeadAttention(key_size=16, query_size=12, value_size=24, num_hiddens=40, num_heads=4)
    rows = trace_multi_head_attention(mha, *make_inputs(12, 16, 24, 3, 5))
    shapes = [row.shape for row in rows]
    assert shapes[:6] == [(2, 3, 12), (2, 5, 16), (2, 5, 24), (2, 3, 40), (2, 5, 40), (2, 5, 40)]
    assert shapes[6:9] == [(8, 3, 10), (8, 5, 10), (8, 5, 10)]
    assert "  mask" not in [row.step for row in rows]  # nothing masked, no mask row
    assert [row.operation for row in rows][9:] == [
        "softmax(queries @ keys^T / sqrt(10))", "weights @ values", "transpose_output(output)", "W_o(concatenated)"]


def test_trace_of_causal_self_attention_shares_one_mask_across_the_batch():
    mha = MultiHeadAttention(8, 8, 8, 8, 2)
    X = torch.randn(3, 4, 8)
    rows = trace_multi_head_attention(mha, X, X, X, causal=True)
    mask_rows = [row for row in rows if "mask" in row.step or "mask" in row.operation]
    assert [row.shape for row in mask_rows] == [(1, 4, 4)]  # one mask for the whole batch: nothing to repeat
    assert torch.equal(mask_rows[0].tensor[0], causal_mask(4))
    both = trace_multi_head_attention(mha, X, X, X, torch.tensor([4, 2, 1]), causal=True)
    mask_rows = [row for row in both if "mask" in row.step or "mask" in row.operation]
    assert [(row.operation, row.shape) for row in mask_rows] == [
        ("valid_lens & causal -> mask", (3, 4, 4)), ("mask, repeated per head", (6, 4, 4))]


def test_format_trace_lays_out_step_operation_and_shape():
    mha = MultiHeadAttention(4, 4, 4, 4, 2)
    lines = format_trace(trace_multi_head_attention(mha, *make_inputs(4, 4, 4, 3, 3, batch_size=1))).splitlines()
    assert lines[0].split() == ["step", "operation", "shape"]
    assert lines[2].split() == ["input", "queries", "(1,", "3,", "4)"]
    assert lines[-1].split() == ["5", "output", "projection", "W_o(concatenated)", "(1,", "3,", "4)"]
    assert lines[1].startswith("----")  # the rule under the header
    assert len(lines) == 2 + 13


def test_trace_rejects_a_layer_that_is_not_multi_head_attention():
    with pytest.raises(TypeError, match="mha must be an mha_lib.MultiHeadAttention, got Linear"):
        trace_multi_head_attention(torch.nn.Linear(4, 4), *make_inputs(4, 4, 4, 2, 2))


def test_trace_rejects_inputs_of_the_wrong_size():
    mha = MultiHeadAttention(4, 4, 4, 4, 2)
    with pytest.raises(ValueError, match="keys has 5 features .* key_size=4"):
        trace_multi_head_attention(mha, *make_inputs(4, 5, 4, 2, 2))
    with pytest.raises(ValueError, match=r"valid_lens must have shape \(2,\) or \(2, 2\)"):
        trace_multi_head_attention(mha, *make_inputs(4, 4, 4, 2, 2), torch.tensor([1, 1, 1]))


def test_format_trace_rejects_rows_that_are_not_trace_rows():
    with pytest.raises(TypeError, match="row 0 is a tuple"):
        format_trace([("input", "queries", (1, 2, 3))])


# --- count_parameters ----------------------------------------------------------------------


@pytest.mark.parametrize("num_heads", [1, 2, 4, 5, 10, 20])
def test_parameters_are_4_d_squared_plus_4_d_biases_whatever_the_number_of_heads(num_heads):
    assert count_parameters(MultiHeadAttention(100, 100, 100, 100, num_heads)) == 4 * 100**2
    assert count_parameters(MultiHeadAttention(100, 100, 100, 100, num_heads, bias=True)) == 4 * 100**2 + 4 * 100


def test_count_parameters_adds_up_different_input_sizes():
    mha = MultiHeadAttention(key_size=16, query_size=12, value_size=24, num_hiddens=40, num_heads=4)
    assert count_parameters(mha) == 12 * 40 + 16 * 40 + 24 * 40 + 40 * 40


def test_count_parameters_counts_a_gpt3_sized_layer_on_the_meta_device():
    with torch.device("meta"):
        mha = MultiHeadAttention(12288, 12288, 12288, 12288, 96, bias=True)
    assert mha.W_o.weight.is_meta
    assert count_parameters(mha) == 4 * 12288**2 + 4 * 12288 == 604_028_928


def test_count_parameters_rejects_anything_but_a_module():
    with pytest.raises(TypeError, match="module must be a torch.nn.Module, got Tensor"):
        count_parameters(torch.zeros(3))


# --- GeneralMultiHeadAttention -------------------------------------------------------------


def test_general_layer_with_equal_head_sizes_has_the_standard_layers_parameters():
    # Its forward pass is MultiHeadAttention's own; what could differ is the shape of its weights.
    mha = MultiHeadAttention(12, 16, 24, 40, 4, bias=True)
    general = GeneralMultiHeadAttention(12, 16, 24, 40, 4, qk_size=10, v_size=10, bias=True)
    assert {name: p.shape for name, p in general.named_parameters()} == {
        name: p.shape for name, p in mha.named_parameters()}
    general.load_state_dict(mha.state_dict())  # strict: same names, same shapes


@pytest.mark.parametrize("qk_size, v_size", [(3, 7), (8, 2), (5, 5)])
@pytest.mark.parametrize("masked", [False, True])
def test_general_layer_matches_pytorch_attention_with_separate_head_sizes(qk_size, v_size, masked):
    num_heads, num_hiddens = 3, 10
    general = GeneralMultiHeadAttention(6, 4, 5, num_hiddens, num_heads, qk_size, v_size).double()
    queries, keys, values = (X.double() for X in make_inputs(4, 6, 5, 3, 5))
    valid_lens = torch.tensor([2, 5]) if masked else None
    output = general(queries, keys, values, valid_lens)

    # Reference: heads on an axis of their own, PyTorch's fused attention (which allows v_size != qk_size).
    def heads(X, size):  # (batch, seq, heads*size) -> (batch, heads, seq, size)
        return X.unflatten(-1, (num_heads, size)).transpose(1, 2)

    mask = valid_lens_mask(valid_lens, 5)[:, None, None, :] if masked else None
    expected = F.scaled_dot_product_attention(heads(general.W_q(queries), qk_size), heads(general.W_k(keys), qk_size),
                                              heads(general.W_v(values), v_size), attn_mask=mask)
    expected = general.W_o(expected.transpose(1, 2).flatten(2))
    torch.testing.assert_close(output, expected, rtol=1e-10, atol=1e-12)
    assert output.shape == (2, 3, num_hiddens)
    assert general.attention_weights.shape == (2, num_heads, 3, 5)


def test_general_layer_sizes_and_parameter_count():
    general = GeneralMultiHeadAttention(100, 100, 100, num_hiddens=100, num_heads=5, qk_size=8, v_size=20)
    assert (general.head_dim, general.v_head_dim) == (8, 20)
    assert general.W_q.weight.shape == general.W_k.weight.shape == (40, 100)
    assert general.W_v.weight.shape == (100, 100) and general.W_o.weight.shape == (100, 100)
    assert count_parameters(general) == 2 * 100 * 5 * 8 + 2 * 100 * 5 * 20 == 28_000


def test_general_layer_builds_no_weights_it_throws_away():
    general = GeneralMultiHeadAttention(6, 4, 5, num_hiddens=10, num_heads=3, qk_size=2, v_size=7)
    assert [(name, tuple(p.shape)) for name, p in general.named_parameters()] == [
        ("W_q.weight", (6, 4)), ("W_k.weight", (6, 6)), ("W_v.weight", (21, 5)), ("W_o.weight", (10, 21))]


def test_value_size_plays_no_part_in_the_attention_weights():
    narrow = GeneralMultiHeadAttention(8, 8, 8, 8, 2, qk_size=3, v_size=1)
    wide = GeneralMultiHeadAttention(8, 8, 8, 8, 2, qk_size=3, v_size=6)
    wide.W_q.load_state_dict(narrow.W_q.state_dict())
    wide.W_k.load_state_dict(narrow.W_k.state_dict())
    queries, keys, values = make_inputs(8, 8, 8, 4, 5)
    narrow(queries, keys, values)
    wide(queries, keys, values)
    torch.testing.assert_close(narrow.attention_weights, wide.attention_weights)


@pytest.mark.parametrize("name", ["num_heads", "qk_size", "v_size", "num_hiddens"])
def test_general_layer_rejects_sizes_that_are_not_positive(name):
    sizes = {"key_size": 4, "query_size": 4, "value_size": 4, "num_hiddens": 4, "num_heads": 2,
             "qk_size": 2, "v_size": 2, name: 0}
    with pytest.raises(ValueError, match=f"{name} must be a positive int, got 0"):
        GeneralMultiHeadAttention(**sizes)


def test_general_layer_rejects_a_bad_dropout():
    with pytest.raises(ValueError, match="dropout must be a probability"):
        GeneralMultiHeadAttention(4, 4, 4, 4, 2, 2, 2, dropout=1.5)


def test_general_layer_rejects_inputs_it_was_not_built_for():
    general = GeneralMultiHeadAttention(4, 4, 4, 4, 2, 2, 3)
    with pytest.raises(ValueError, match="queries has 6 features .* query_size=4"):
        general(*make_inputs(6, 4, 4, 2, 2))
    with pytest.raises(TypeError, match="queries has dtype torch.float64 but the layer's weights are torch.float32"):
        general(*(X.double() for X in make_inputs(4, 4, 4, 2, 2)))


# FLOPs and score memory


def test_mha_flops_on_a_hand_computed_case():
    # b=1, n_q=2, n_kv=3, d=4, h=2 (head_dim 2)
    # W_q: 2*1*2*4*4 = 64; W_k = W_v: 2*1*3*4*4 = 96; W_o: 64; scores = weights@values: 2*1*2*2*3*2 = 48
    flops = mha_flops(1, 2, 3, 4, 2)
    assert flops == {"W_q": 64, "W_k": 96, "W_v": 96, "scores": 48, "weights @ values": 48, "W_o": 64, "total": 416}


@pytest.mark.parametrize("num_heads", [1, 2, 8])
def test_mha_flops_equals_what_pytorch_counts_in_the_layer(num_heads):
    batch_size, num_queries, num_kvpairs, d = 2, 5, 7, 16
    mha = MultiHeadAttention(d, d, d, d, num_heads).eval()
    queries, keys = torch.randn(batch_size, num_queries, d), torch.randn(batch_size, num_kvpairs, d)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        mha(queries, keys, keys)
    assert counter.get_total_flops() == mha_flops(batch_size, num_queries, num_kvpairs, d, num_heads)["total"]


def test_mha_flops_rejects_heads_that_do_not_divide_num_hiddens():
    with pytest.raises(ValueError, match="num_heads=3 must divide num_hiddens=16"):
        mha_flops(1, 1, 1, 16, 3)
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        mha_flops(0, 1, 1, 16, 4)


def test_score_bytes_are_exact_and_grow_as_n_squared():
    assert score_bytes(2, 4, 64, 64) == 2 * 4 * 64 * 64 * 4
    assert score_bytes(1, 1, 3, 5, torch.float16) == 30
    assert score_bytes(1, 1, 3, 5, torch.float64) == 120
    for n in (64, 128, 1000):
        assert score_bytes(2, 4, 2 * n, 2 * n) == 4 * score_bytes(2, 4, n, n)
    # equals the real tensor's size
    scores = torch.randn(2 * 4, 16, 16) @ torch.randn(2 * 4, 16, 16)
    assert score_bytes(2, 4, 16, 16) == scores.numel() * scores.element_size()
    with pytest.raises(TypeError, match="dtype must be a torch.dtype"):
        score_bytes(1, 1, 1, 1, "float32")


@pytest.mark.parametrize("causal", [False, True])
def test_general_layer_fused_path_equals_the_explicit_one_with_other_value_heads(causal):
    general = GeneralMultiHeadAttention(6, 4, 5, num_hiddens=10, num_heads=3, qk_size=2, v_size=7).double().eval()
    queries, keys, values = (X.double() for X in make_inputs(4, 6, 5, 5, 5))
    valid_lens = torch.tensor([2, 5])
    explicit = general(queries, keys, values, valid_lens, causal=causal)
    assert general.head_dim == 2 and general.attention_weights.shape == (2, 3, 5, 5)
    fused = general(queries, keys, values, valid_lens, causal=causal, need_weights=False)
    torch.testing.assert_close(fused, explicit, rtol=1e-10, atol=1e-12)
