"""The rules of the core (masks, functional, modules) that both paths of MultiHeadAttention share, on every
device present: fully masked rows, dropout, half precision, non-finite numbers, argument types.

The CPU always runs; CUDA and Apple's MPS run where present and are skipped elsewhere.
"""

import pytest
import torch
import torch.nn.functional as F

from mha_chapters.anatomy import trace_multi_head_attention
from mha_lib import (
    AdditiveAttention,
    DotProductAttention,
    GeneralMultiHeadAttention,
    MultiHeadAttention,
    dot_product_attention,
    to_torch_mha,
    valid_lens_mask,
)

DEVICES = [
    pytest.param("cpu"),
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")),
    pytest.param("mps", marks=pytest.mark.skipif(not torch.backends.mps.is_available(), reason="no MPS device")),
]
PATHS = pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "fused"])


def layer_and_input(device, dtype=torch.float32, dropout=0.0, num_hiddens=16, num_heads=4, seq_len=6):
    torch.manual_seed(0)
    mha = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, dropout=dropout)
    X = torch.randn(3, seq_len, num_hiddens)
    return mha.to(device=device, dtype=dtype), X.to(device=device, dtype=dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("causal", [False, True])
def test_fused_and_explicit_paths_agree_on_fully_masked_rows(device, causal):
    mha, X = layer_and_input(device, torch.float64)
    valid_lens = torch.tensor([0, 3, 6], device=device)  # the first sequence attends to nothing
    explicit = mha.eval()(X, X, X, valid_lens, causal=causal)
    weights = mha.attention_weights
    fused = mha(X, X, X, valid_lens, causal=causal, need_weights=False)
    torch.testing.assert_close(explicit, fused, rtol=1e-10, atol=1e-12)
    # The rule: a query that sees no key gets a zero output, so the layer's output is W_o's bias (none here).
    assert torch.equal(explicit[0], torch.zeros_like(explicit[0]))
    assert torch.equal(weights[0], torch.zeros_like(weights[0]))


@pytest.mark.parametrize("device", DEVICES)
@PATHS
def test_dropout_drops_weights_in_training_and_keeps_the_mean(device, need_weights):
    # With values all ones, each output feature is the sum of the kept weights of its row, scaled by 1/(1-p):
    # 0 where every weight was dropped, and 1 on average over many rows.
    p = 0.5
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 8, 8, 8, 2, dropout=p, bias=True).to(device)
    with torch.no_grad():  # values all ones (W_v maps everything to its bias), and W_o passes them through
        mha.W_v.weight.zero_()
        mha.W_v.bias.fill_(1.0)
        mha.W_o.weight.copy_(torch.eye(8))
        mha.W_o.bias.zero_()
    attention = mha.train()
    queries = torch.randn(64, 32, 8, device=device)
    outputs = []
    torch.manual_seed(1)
    for _ in range(4):
        outputs.append(attention(queries, queries, queries, need_weights=need_weights).detach())
    outputs = torch.stack(outputs)  # (4, batch, queries, num_heads * head_dim)
    assert not torch.equal(outputs[0], outputs[1])  # a new mask each call
    mean = outputs.mean().item()
    assert abs(mean - 1.0) < 0.03, mean  # 4 * 64 * 32 rows of 32 weights: the mean is within 0.03 of 1
    mha.eval()
    X = torch.randn(2, 5, 8, device=device)
    torch.testing.assert_close(mha(X, X, X, need_weights=need_weights), mha(X, X, X, need_weights=need_weights))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make", [
    pytest.param(lambda p: DotProductAttention(dropout=p), id="DotProductAttention"),
    pytest.param(lambda p: AdditiveAttention(8, 8, 8, dropout=p), id="AdditiveAttention"),
])
def test_single_head_layers_drop_weights_in_training_only(device, make):
    layer = make(0.5).to(device).train()
    torch.manual_seed(0)
    queries = torch.randn(256, 16, 8, device=device)
    values = torch.ones(256, 16, 8, device=device)
    output = layer(queries, queries, values)
    row_sums = output[..., 0]  # kept weights of each row, scaled by 2
    assert (row_sums == 0).any() or (row_sums < 0.99).any()  # some weights were dropped
    assert abs(row_sums.mean().item() - 1.0) < 0.03
    torch.testing.assert_close(layer.attention_weights.sum(-1), torch.ones(256, 16, device=device))  # stored: before
    layer.eval()
    torch.testing.assert_close(layer(queries, queries, values), torch.ones(256, 16, 8, device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@PATHS
def test_half_precision_gradients_are_finite_and_close_to_float32(device, dtype, need_weights):
    mha, X = layer_and_input(device)
    valid_lens = torch.tensor([0, 4, 6], device=device)
    reference_grads = torch.autograd.grad(mha(X, X, X, valid_lens, need_weights=need_weights).square().sum(),
                                          mha.W_q.weight)[0]
    half = MultiHeadAttention(16, 16, 16, 16, 4).to(device)
    half.load_state_dict(mha.state_dict())
    half = half.to(dtype)
    Xh = X.to(dtype)
    grads = torch.autograd.grad(half(Xh, Xh, Xh, valid_lens, need_weights=need_weights).float().square().sum(),
                                half.W_q.weight)[0]
    assert grads.isfinite().all()
    torch.testing.assert_close(grads.float(), reference_grads, rtol=0.1, atol=0.1)


@pytest.mark.parametrize("device", DEVICES)
@PATHS
def test_float16_scores_that_overflow_65504_stay_finite(device, need_weights):
    # Inputs x250 give scores far beyond float16's largest number; both paths compute them in float32.
    mha, X = layer_and_input(device, torch.float16)
    X = X * 250
    output = mha(X, X, X, need_weights=need_weights)
    assert output.isfinite().all()
    reference = MultiHeadAttention(16, 16, 16, 16, 4).to(device)
    reference.load_state_dict({k: v.float() for k, v in mha.state_dict().items()})
    expected = reference(X.float(), X.float(), X.float())
    torch.testing.assert_close(output.float(), expected, rtol=0.02, atol=0.5)


@pytest.mark.parametrize("device", DEVICES)
@PATHS
def test_a_nan_in_the_padded_values_reaches_the_output_on_both_paths_as_in_pytorch(device, need_weights):
    # A hidden key gets weight 0, and 0 * NaN is NaN: masks choose weights, they do not clean the values.
    mha, X = layer_and_input(device)
    values = X.clone()
    values[0, 4:] = float("nan")  # padding of the first sequence
    valid_lens = torch.tensor([4, 6, 6], device=device)
    output = mha.eval()(X, X, values, valid_lens, need_weights=need_weights)
    assert output[0].isnan().all() and not output[1:].isnan().any()
    reference = to_torch_mha(mha)(X, X, values, key_padding_mask=~valid_lens_mask(valid_lens, 6))[0]
    assert reference[0].isnan().all() and not reference[1:].isnan().any()


@pytest.mark.parametrize("device", DEVICES)
def test_a_nan_in_the_padded_keys_cannot_reach_the_explicit_path_but_reaches_pytorchs_kernel(device):
    # The explicit path replaces a hidden score; PyTorch's fused kernel adds -inf to it, and NaN + -inf is NaN.
    mha, X = layer_and_input(device)
    keys = X.clone()
    keys[0, 4:] = float("nan")  # padding of the first sequence
    valid_lens = torch.tensor([4, 6, 6], device=device)
    mha.eval()
    torch.testing.assert_close(mha(X, keys, X, valid_lens), mha(X, X, X, valid_lens))
    fused = mha(X, keys, X, valid_lens, need_weights=False)
    assert fused[0].isnan().all() and not fused[1:].isnan().any()


@pytest.mark.parametrize("device", DEVICES)
def test_stored_weights_are_detached_from_autograd(device):
    mha, X = layer_and_input(device)
    X.requires_grad_(True)
    mha(X, X, X)
    assert not mha.attention_weights.requires_grad and mha.attention_weights.grad_fn is None


@pytest.mark.parametrize("need_weights", ["no", None, 0, 1])
def test_need_weights_must_be_a_bool(need_weights):
    mha, X = layer_and_input("cpu")
    with pytest.raises(TypeError, match=f"need_weights must be True or False, got {need_weights!r}"):
        mha(X, X, X, need_weights=need_weights)


def test_dot_product_attention_takes_a_dropout_probability_not_a_module():
    q = torch.randn(2, 3, 4)
    torch.manual_seed(0)
    output, weights = dot_product_attention(q, q, q, dropout_p=0.5)
    assert output.shape == (2, 3, 4) and torch.allclose(weights.sum(-1), torch.ones(2, 3))
    with pytest.raises(TypeError, match="dropout_p must be a probability in \\[0, 1\\), got Dropout"):
        dot_product_attention(q, q, q, dropout_p=torch.nn.Dropout(0.1))


def test_trace_rows_are_the_forward_pass_own_tensors():
    # The trace watches the layer from outside: its rows are the tensors the forward pass itself computed.
    torch.manual_seed(0)
    layer = MultiHeadAttention(8, 8, 8, 8, 2).eval()
    X, valid_lens = torch.randn(2, 3, 8), torch.tensor([1, 3])
    rows = trace_multi_head_attention(layer, X, X, X, valid_lens)
    output = layer(X, X, X, valid_lens)
    torch.testing.assert_close(rows[-1].tensor, output)
    by_operation = {row.operation: row.tensor for row in rows}
    torch.testing.assert_close(layer.W_o(by_operation["transpose_output(output)"]), output)
    torch.testing.assert_close(by_operation["softmax(queries @ keys^T / sqrt(4))"], layer.attention.attention_weights)
    assert by_operation["valid_lens -> mask"].tolist() == [[[True, False, False]], [[True, True, True]]]


def test_the_core_carries_no_tracing_code():
    import inspect

    import mha_lib.functional
    import mha_lib.modules
    for module in (mha_lib.modules, mha_lib.functional):
        source = inspect.getsource(module)
        assert "record(" not in source and "_trace" not in source


def test_general_layer_traces_value_heads_of_their_own_width():
    layer = GeneralMultiHeadAttention(6, 4, 5, num_hiddens=10, num_heads=3, qk_size=2, v_size=7)
    queries, keys, values = torch.randn(2, 3, 4), torch.randn(2, 5, 6), torch.randn(2, 5, 5)
    shapes = {row.operation: row.shape for row in trace_multi_head_attention(layer, queries, keys, values)}
    assert shapes["transpose_qkv(queries)"] == (6, 3, 2) and shapes["transpose_qkv(values)"] == (6, 5, 7)
    assert shapes["transpose_output(output)"] == (2, 3, 21) and shapes["W_o(concatenated)"] == (2, 3, 10)


def test_fused_path_reads_value_head_size_from_the_layer():
    torch.manual_seed(0)
    layer = GeneralMultiHeadAttention(6, 4, 5, num_hiddens=10, num_heads=3, qk_size=2, v_size=7).double().eval()
    queries, keys, values = torch.randn(2, 3, 4).double(), torch.randn(2, 5, 6).double(), torch.randn(2, 5, 5).double()
    valid_lens = torch.tensor([2, 5])
    torch.testing.assert_close(layer(queries, keys, values, valid_lens),
                               layer(queries, keys, values, valid_lens, need_weights=False), rtol=1e-10, atol=1e-12)


def test_the_torch_errors_the_exercise_engine_explains_still_say_what_it_looks_for():
    # mha_chapters.exercises._engine recognises a few torch errors by a piece of their message. If a torch release
    # rewords one, this test fails and the engine's hint must follow.
    pieces = {
        "view size is not compatible": lambda: torch.randn(2, 3, 4).transpose(1, 2).view(2, 12),
        "is invalid for input of size": lambda: torch.randn(2, 3).view(4, 2),
        "cannot be multiplied": lambda: torch.randn(2, 3) @ torch.randn(2, 3),
        "without overflow": lambda: torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, False]), -1e9),
    }
    for piece, make_error in pieces.items():
        with pytest.raises(RuntimeError) as error:
            make_error()
        assert piece in str(error.value), (piece, str(error.value))


def test_functional_core_rejects_a_half_and_a_full_precision_mix():
    q = torch.randn(1, 2, 4)
    with pytest.raises(TypeError, match="queries, keys and values must share one dtype"):
        dot_product_attention(q, q.half(), q)
    # F.scaled_dot_product_attention raises its own error for the same mix
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, q.half(), q)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("masking", ["none", "valid_lens", "causal", "valid_lens+causal"])
@PATHS
def test_multi_head_attention_matches_pytorch_on_every_device(device, masking, need_weights):
    # tests/test_parity.py checks every case in float64 on the CPU; this repeats the core one on each device.
    torch.manual_seed(0)
    ours = MultiHeadAttention(12, 12, 12, 12, 3, bias=True).to(device).eval()
    theirs = to_torch_mha(ours)
    X = torch.randn(2, 5, 12, device=device)
    valid_lens = torch.tensor([5, 3], device=device) if "valid_lens" in masking else None
    causal = "causal" in masking
    output = ours(X, X, X, valid_lens, causal=causal, need_weights=need_weights)
    padding = ~valid_lens_mask(valid_lens, 5) if valid_lens is not None else None  # PyTorch: True = ignore
    future = torch.ones(5, 5, dtype=torch.bool, device=device).triu(1) if causal else None
    expected = theirs(X, X, X, key_padding_mask=padding, attn_mask=future, need_weights=False)[0]
    torch.testing.assert_close(output, expected, rtol=1e-5, atol=1e-5)
