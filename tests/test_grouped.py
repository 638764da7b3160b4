"""Grouped-query attention computes what PyTorch computes.

References: ``F.scaled_dot_product_attention(..., enable_gqa=True)`` on the layer's own projections,
the same with the key-value heads copied by ``repeat_interleave``, and ``MultiHeadAttention`` with
copied weights when ``num_kv_heads == num_heads``; float64, with valid lengths, causal and explicit masks.
"""

import pytest
import torch
import torch.nn.functional as F

import mha_lib
from mha_lib import (
    GeneralMultiHeadAttention,
    GroupedQueryAttention,
    MultiHeadAttention,
    kv_head_of,
    mha_to_gqa,
    repeat_kv_heads,
)

TIGHT = {"rtol": 1e-10, "atol": 1e-12}
NUM_HEADS = 6
KV_HEADS = [1, 2, 3, 6]  # MQA, two GQA groupings, MHA


def randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64)


def reference(layer: GroupedQueryAttention, queries, keys, values, mask, *, repeat: bool) -> torch.Tensor:
    """The layer's output computed with PyTorch's kernel: enable_gqa, or explicit repeat_interleave of the kv heads."""
    q = layer.W_q(queries).unflatten(-1, (layer.num_heads, -1)).transpose(1, 2)
    k = layer.W_k(keys).unflatten(-1, (layer.num_kv_heads, -1)).transpose(1, 2)
    v = layer.W_v(values).unflatten(-1, (layer.num_kv_heads, -1)).transpose(1, 2)
    if repeat:
        groups = layer.num_heads // layer.num_kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    else:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    return layer.W_o(out.transpose(1, 2).flatten(2))


def masks_for(case: str, batch_size: int, num_queries: int, num_kvpairs: int):
    """(keyword arguments for the layer, the same mask as SDPA takes it: (batch or 1, 1, queries, kvpairs))."""
    if case == "none":
        return {}, None
    if case == "valid_lens":
        valid_lens = torch.tensor([num_kvpairs, 2])
        mask = torch.arange(num_kvpairs) < valid_lens[:, None, None]
        return {"valid_lens": valid_lens}, mask[:, None]
    if case == "causal":
        return {"causal": True}, torch.ones(num_queries, num_kvpairs, dtype=torch.bool).tril()
    if case == "attn_mask":
        explicit = torch.rand(batch_size, num_queries, num_kvpairs) > 0.5
        explicit[..., 0] = True  # a fully masked row is NaN in PyTorch's kernel, zero in mha_lib
        return {"attn_mask": explicit}, explicit[:, None]
    if case == "all":
        valid_lens = torch.tensor([num_kvpairs, 3])
        explicit = torch.rand(batch_size, num_queries, num_kvpairs) > 0.3
        explicit[..., 0] = True
        mask = (torch.arange(num_kvpairs) < valid_lens[:, None, None]) & explicit
        mask = mask & torch.ones(num_queries, num_kvpairs, dtype=torch.bool).tril()
        return {"valid_lens": valid_lens, "causal": True, "attn_mask": explicit}, mask[:, None]
    raise AssertionError(case)


@pytest.mark.parametrize("num_kv_heads", KV_HEADS)
@pytest.mark.parametrize("case", ["none", "valid_lens", "causal", "attn_mask", "all"])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_gqa_matches_sdpa_enable_gqa_and_repeat_interleave(num_kv_heads, case, need_weights, seed):
    torch.manual_seed(seed)
    batch_size, num_queries, num_kvpairs = 2, 5, 7
    layer = GroupedQueryAttention(5, 4, 3, 24, NUM_HEADS, num_kv_heads, bias=seed == 1).double().eval()
    queries, keys, values = randn(batch_size, num_queries, 4), randn(batch_size, num_kvpairs, 5), \
        randn(batch_size, num_kvpairs, 3)
    if case == "causal" or case == "all":
        keys, values = keys[:, :num_queries], values[:, :num_queries]
        num_kvpairs = num_queries
    kwargs, mask = masks_for(case, batch_size, num_queries, num_kvpairs)
    output = layer(queries, keys, values, need_weights=need_weights, **kwargs)
    assert output.shape == (batch_size, num_queries, 24)
    with torch.no_grad():
        torch.testing.assert_close(output, reference(layer, queries, keys, values, mask, repeat=False), **TIGHT)
        torch.testing.assert_close(output, reference(layer, queries, keys, values, mask, repeat=True), **TIGHT)
    if need_weights:
        assert layer.attention_weights.shape == (batch_size, NUM_HEADS, num_queries, num_kvpairs)
        torch.testing.assert_close(layer.attention_weights.sum(-1), torch.ones(batch_size, NUM_HEADS, num_queries,
                                                                               dtype=torch.float64))
    else:  # a call with need_weights=False clears the weights an earlier call stored
        layer(queries, keys, values)
        assert layer.attention_weights is not None
        layer(queries, keys, values, need_weights=False)
        assert layer.attention_weights is None


def test_heads_of_one_group_see_the_same_keys():
    """With identical queries for every head, the heads of one group have identical weights, other groups not."""
    layer = GroupedQueryAttention(8, 8, 8, 12, 6, 2).double()
    with torch.no_grad():
        layer.W_q.weight.copy_(layer.W_q.weight[:2].repeat(6, 1))  # every head asks the same question
    x = randn(1, 4, 8)
    layer(x, x, x)
    w = layer.attention_weights[0]
    for head in range(6):
        torch.testing.assert_close(w[head], w[kv_head_of(head, 6, 2) * 3])
    assert not torch.allclose(w[0], w[3])


@pytest.mark.parametrize("bias", [False, True])
def test_all_kv_heads_is_multi_head_attention(bias):
    mha = MultiHeadAttention(5, 4, 3, 24, NUM_HEADS, bias=bias).double()
    gqa = GroupedQueryAttention(5, 4, 3, 24, NUM_HEADS, NUM_HEADS, bias=bias).double()
    gqa.load_state_dict(mha.state_dict())  # same names, same shapes when num_kv_heads == num_heads
    q, k, v = randn(2, 3, 4), randn(2, 6, 5), randn(2, 6, 3)
    valid_lens = torch.tensor([6, 2])
    torch.testing.assert_close(gqa(q, k, v, valid_lens), mha(q, k, v, valid_lens), **TIGHT)
    torch.testing.assert_close(gqa.attention_weights, mha.attention_weights, **TIGHT)


def test_projection_sizes_and_parameter_count():
    layer = GroupedQueryAttention(32, 32, 32, 32, 8, 2)
    assert layer.W_q.weight.shape == (32, 32) and layer.W_o.weight.shape == (32, 32)
    assert layer.W_k.weight.shape == (8, 32) and layer.W_v.weight.shape == (8, 32)  # 2 heads of 4
    assert sum(p.numel() for p in layer.parameters()) == 2 * 32 * 32 + 2 * 8 * 32
    assert (layer.num_groups, layer.head_dim) == (4, 4)


def test_repeat_kv_heads_order():
    X = torch.arange(2 * 2 * 3 * 1).reshape(2, 2, 3, 1)  # two kv heads: 0..2 and 3..5
    out = repeat_kv_heads(X, 3)
    assert out.shape == (2, 6, 3, 1)
    assert out[0, :, 0, 0].tolist() == [0, 0, 0, 3, 3, 3]  # repeat_interleave, not repeat
    assert X.repeat(1, 3, 1, 1)[0, :, 0, 0].tolist() != out[0, :, 0, 0].tolist()
    assert [kv_head_of(i, 6, 2) for i in range(6)] == [0, 0, 0, 1, 1, 1]


def test_mha_to_gqa_mean_pools_each_group():
    mha = MultiHeadAttention(8, 8, 8, 16, 4, bias=True).double()
    gqa = mha_to_gqa(mha, 2)
    head_dim = 4
    W_k = mha.W_k.weight.reshape(4, head_dim, 8)
    torch.testing.assert_close(gqa.W_k.weight[:head_dim], (W_k[0] + W_k[1]) / 2)
    torch.testing.assert_close(gqa.W_k.weight[head_dim:], (W_k[2] + W_k[3]) / 2)
    torch.testing.assert_close(gqa.W_v.bias[:head_dim], mha.W_v.bias.reshape(4, head_dim)[:2].mean(0))
    torch.testing.assert_close(gqa.W_q.weight, mha.W_q.weight)
    torch.testing.assert_close(gqa.W_o.bias, mha.W_o.bias)
    x = randn(2, 5, 8)
    torch.testing.assert_close(mha_to_gqa(mha, 4)(x, x, x), mha(x, x, x), **TIGHT)  # nothing averaged
    assert not torch.allclose(gqa(x, x, x), mha(x, x, x))


def test_mha_to_gqa_is_exact_when_the_heads_of_a_group_agree():
    mha = MultiHeadAttention(8, 8, 8, 16, 4).double()
    with torch.no_grad():
        for W in (mha.W_k.weight, mha.W_v.weight):
            W.copy_(W[:8].reshape(2, 1, 4, 8).expand(2, 2, 4, 8).reshape(16, 8))  # heads 0=1, 2=3
    x = randn(2, 5, 8)
    torch.testing.assert_close(mha_to_gqa(mha, 2)(x, x, x, causal=True), mha(x, x, x, causal=True), **TIGHT)


@pytest.mark.parametrize("bad", [4, 5])
def test_kv_heads_must_divide_heads(bad):
    with pytest.raises(ValueError, match=r"num_kv_heads must divide num_heads=6.*\[1, 2, 3, 6\]"):
        GroupedQueryAttention(8, 8, 8, 12, 6, bad)


@pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (-2, ValueError), (2.0, TypeError), (None, TypeError)])
def test_kv_heads_must_be_a_positive_int(bad, error):
    with pytest.raises(error, match=f"num_kv_heads must be a positive int, got {bad!r}"):
        GroupedQueryAttention(8, 8, 8, 12, 6, bad)
    with pytest.raises(error, match=f"num_kv_heads must be a positive int, got {bad!r}"):
        GroupedQueryAttention(12, 6, bad)  # d2l 1.0's form


def test_a_bool_for_num_kv_heads_is_refused_as_a_flag_where_a_size_goes():
    # as MultiHeadAttention refuses a bool in a size's place: the call fits neither form, and the message shows both
    with pytest.raises(TypeError, match=r"takes the arguments .*\(d2l 0\.17's form\) .* got \(8, 8, 8, 12, 6, True\)"):
        GroupedQueryAttention(8, 8, 8, 12, 6, True)


def test_bad_inputs_name_the_argument():
    layer = GroupedQueryAttention(8, 8, 8, 12, 6, 3)
    x = torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match="keys has 7 features"):
        layer(x, torch.randn(2, 4, 7), x)
    with pytest.raises(TypeError, match="float64"):
        layer(x.double(), x.double(), x.double())
    with pytest.raises(ValueError, match="valid_lens must have shape"):
        layer(x, x, x, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="num_heads=5 must divide num_hiddens=12"):
        GroupedQueryAttention(8, 8, 8, 12, 5, 1)
    with pytest.raises(ValueError, match="num_groups must be a positive int"):
        repeat_kv_heads(torch.zeros(1, 2, 3, 4), 0)
    with pytest.raises(ValueError, match="X must be a 4-D tensor"):
        repeat_kv_heads(torch.zeros(2, 3, 4), 2)
    with pytest.raises(ValueError, match="query_head must be an int in"):
        kv_head_of(6, 6, 2)
    with pytest.raises(TypeError, match="mha must be an mha_lib.MultiHeadAttention"):
        mha_to_gqa(torch.nn.Linear(2, 2), 1)
    with pytest.raises(ValueError, match="mha must have one key-value head per query head, got num_kv_heads=3"):
        mha_to_gqa(layer, 1)
    with pytest.raises(ValueError, match="num_kv_heads must divide"):
        mha_to_gqa(MultiHeadAttention(8, 8, 8, 12, 6), 4)


@pytest.mark.parametrize(("qk_size", "v_size"), [(4, 6), (2, 2)], ids=["qk-vs-v", "narrower-than-hiddens"])
def test_mha_to_gqa_needs_heads_of_num_hiddens_over_num_heads_features(qk_size, v_size):
    # GQA's heads all have num_hiddens // num_heads features; pooling other widths would mix rows of different heads
    mha = GeneralMultiHeadAttention(8, 8, 8, 16, 4, qk_size=qk_size, v_size=v_size)
    with pytest.raises(ValueError, match=rf"mha_to_gqa needs heads of num_hiddens // num_heads features .*got "
                                         rf"head_dim={qk_size}, v_head_dim={v_size}, num_hiddens=16, num_heads=4"):
        mha_to_gqa(mha, 2)


@pytest.mark.parametrize("name", ["keys", "values"])
def test_attend_needs_one_dtype(name):
    layer = GroupedQueryAttention(8, 8, 8, 8, 4, 2)
    tensors = {"queries": torch.zeros(1, 4, 3, 2), "keys": torch.zeros(1, 2, 3, 2), "values": torch.zeros(1, 2, 3, 2)}
    tensors[name] = tensors[name].double()
    dtypes = ", ".join(str(tensors[key].dtype) for key in ("queries", "keys")) + f" and {tensors['values'].dtype}"
    with pytest.raises(TypeError, match=f"queries, keys and values must share one dtype, got {dtypes}"):
        layer.attend(tensors["queries"], tensors["keys"], tensors["values"], None)


def test_dropout_only_in_training():
    layer = GroupedQueryAttention(8, 8, 8, 8, 4, 2, dropout=0.5)
    x = torch.randn(2, 6, 8)
    layer.eval()
    torch.testing.assert_close(layer(x, x, x), layer(x, x, x, need_weights=False))
    layer.train()
    assert not torch.allclose(layer(x, x, x), layer.eval()(x, x, x))


def test_exported_from_mha_lib():
    for name in ("GroupedQueryAttention", "repeat_kv_heads", "mha_to_gqa", "kv_head_of"):
        assert name in mha_lib.__all__ and hasattr(mha_lib, name)


# ----- d2l 1.0's short form, as MultiHeadAttention takes it (review case 90) -----------------------------------


def test_d2l_1_0_form_fixes_the_input_sizes_at_the_first_call():
    torch.manual_seed(0)
    layer = GroupedQueryAttention(16, 4, 2)  # num_hiddens, num_heads, num_kv_heads
    assert (layer.num_heads, layer.num_kv_heads, layer.num_groups, layer.head_dim) == (4, 2, 2, 4)
    assert layer.query_size is None and layer.W_q.bias is None and layer.dropout.p == 0.0
    q, kv = torch.randn(2, 3, 5), torch.randn(2, 6, 7)
    output = layer(q, kv, kv, torch.tensor([6, 2]))
    assert output.shape == (2, 3, 16) and (layer.query_size, layer.key_size, layer.value_size) == (5, 7, 7)
    assert layer.W_k.weight.shape == layer.W_v.weight.shape == (2 * 4, 7)  # num_kv_heads heads of keys and values
    full = GroupedQueryAttention(7, 5, 7, 16, 4, 2)  # d2l 0.17's form, the sizes given: the same layer
    full.load_state_dict(layer.state_dict(), strict=True)
    torch.testing.assert_close(full(q, kv, kv, torch.tensor([6, 2])), output)


def test_d2l_1_0_form_takes_dropout_bias_and_rope():
    layer = GroupedQueryAttention(16, 4, 1, 0.25, True, rope="halves", rope_base=500.0)
    assert layer.dropout.p == 0.25 and layer.num_kv_heads == 1 and layer.rotary.base == 500.0
    layer(torch.randn(1, 3, 16), torch.randn(1, 3, 16), torch.randn(1, 3, 16))
    assert layer.W_k.bias.shape == (4,) and layer.W_o.bias.shape == (16,)
    keywords = GroupedQueryAttention(num_hiddens=16, num_heads=4, num_kv_heads=2, dropout=0.1)
    assert keywords.query_size is None and keywords.num_kv_heads == 2 and keywords.dropout.p == 0.1


NEITHER_FORM = {
    "0.17 form without num_kv_heads": (8, 8, 8, 12, 6),
    "a size where dropout goes": (16, 4, 2, 1),
    "a bool where num_kv_heads goes": (16, 4, True),
    "num_kv_heads missing": (16, 4),
    "too many": (8, 8, 8, 12, 6, 2, 0.0, False, 1),
}


@pytest.mark.parametrize("call", NEITHER_FORM.values(), ids=NEITHER_FORM.keys())
def test_a_call_that_fits_neither_form_names_both(call):
    pattern = (r"GroupedQueryAttention takes the arguments GroupedQueryAttention\(key_size, query_size, value_size, "
               r"num_hiddens, num_heads, num_kv_heads, dropout=0\.0, bias=False\) \(d2l 0\.17's form\) or "
               r"GroupedQueryAttention\(num_hiddens, num_heads, num_kv_heads, dropout=0\.0, bias=False\) \(d2l 1\.0's "
               r"form\).*got ")
    with pytest.raises(TypeError, match=pattern):
        GroupedQueryAttention(*call)


def test_w_k_and_w_v_are_built_once_in_their_size():
    # The layer draws its weights in the order W_q, W_k, W_v, W_o, each in its final size (none built and replaced):
    # from one seed, its first three are those of nn.Linear layers of those sizes drawn in that order.
    torch.manual_seed(3)
    layer = GroupedQueryAttention(8, 8, 8, 12, 6, 2)
    torch.manual_seed(3)
    expected = [torch.nn.Linear(8, 12, bias=False), torch.nn.Linear(8, 4, bias=False),
                torch.nn.Linear(8, 4, bias=False), torch.nn.Linear(12, 12, bias=False)]
    for got, want in zip((layer.W_q, layer.W_k, layer.W_v, layer.W_o), expected, strict=True):
        torch.testing.assert_close(got.weight, want.weight, rtol=0, atol=0)
