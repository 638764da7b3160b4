"""The defects of the library review of 2026-11-26 (issue 37): non-finite scores at hidden keys, devices, the
checks of ``GroupedQueryAttention.attend``, contracts no test pinned down, and checks and messages that
disagreed with one another.

A layer or tensor on the ``meta`` device stands in for one on a GPU: it has a device of its own and no data.
"""

import math
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mha_chapters.kv_cache import KVCache, attend_with_cache
from mha_lib import (
    AdditiveAttention,
    DotProductAttention,
    GeneralMultiHeadAttention,
    GroupedQueryAttention,
    MultiHeadAttention,
    causal_mask,
    dot_product_attention,
    masked_softmax,
    repeat_kv_heads,
    sequence_mask,
    to_torch_mha,
    transpose_qkv,
)
from mha_lib.flex import apply_score_mod, dense_mask, padding_mask_mod, prefix_lm_mask_mod

INF = math.inf


# ----- 1. a score of -inf, +inf or NaN at a hidden key changes nothing ------------------------------------------


def test_masked_softmax_of_scores_already_masked_with_minus_inf_is_finite():
    # nanoGPT's idiom: causal scores filled with -inf, then d2l's valid_lens on top.
    torch.manual_seed(0)
    scores = torch.randn(1, 4, 4, dtype=torch.float64).masked_fill(~causal_mask(4), -INF)
    weights = masked_softmax(scores, torch.tensor([3]))
    visible = causal_mask(4) & (torch.arange(4) < 3)
    expected = F.softmax(scores.masked_fill(~visible, -INF), dim=-1)
    torch.testing.assert_close(weights, expected)


@pytest.mark.parametrize("hidden_score", [-INF, INF, math.nan], ids=["-inf", "+inf", "nan"])
def test_a_non_finite_score_at_a_hidden_key_changes_no_weight(hidden_score):
    scores = torch.tensor([[[0.5, -1.0, 2.0, hidden_score]]], dtype=torch.float64)
    weights = masked_softmax(scores, torch.tensor([3]))
    expected = F.softmax(scores[..., :3], dim=-1)
    torch.testing.assert_close(weights[..., :3], expected)
    assert weights[..., 3] == 0


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights kept", "fused"])
def test_a_query_that_sees_no_key_gets_zero_output_and_finite_gradients(need_weights):
    # The masked softmax hides keys with -inf: a row with nothing visible is 0/0 = NaN inside, set to 0 after;
    # neither the output nor a gradient may carry that NaN.
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 8, 8, 8, 2)
    x = torch.randn(2, 3, 8, requires_grad=True)
    valid_lens = torch.tensor([[0, 2, 3], [1, 0, 0]])  # query 0 of sequence 0, queries 1 and 2 of sequence 1: none
    output = mha(x, x, x, valid_lens, need_weights=need_weights)
    empty = torch.tensor([[True, False, False], [False, True, True]])
    if need_weights:
        assert (mha.attention_weights.sum(-1)[empty.unsqueeze(1).expand(2, 2, 3)] == 0).all()
    output.sum().backward()
    assert torch.isfinite(output).all() and torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in mha.parameters())
    torch.testing.assert_close(output[empty], mha.W_o.bias.expand(3, 8) if mha.W_o.bias is not None
                               else torch.zeros(3, 8))


@pytest.mark.parametrize("hidden_feature", [-INF, INF], ids=["-inf", "+inf"])
def test_dot_product_attention_with_an_infinite_hidden_key_matches_sdpa_on_the_clean_key(hidden_feature):
    torch.manual_seed(0)
    queries = torch.randn(2, 3, 3, 4, dtype=torch.float64).abs()  # positive: the hidden score is +-inf, not NaN
    keys, values = torch.randn(2, 3, 5, 4, dtype=torch.float64), torch.randn(2, 3, 5, 4, dtype=torch.float64)
    mask = torch.tensor([True, True, True, False, True]).expand(3, 5)
    poisoned = keys.clone()
    poisoned[..., 3, 0] = hidden_feature  # key 3 is hidden from every query
    output, _ = dot_product_attention(queries, poisoned, values, mask)
    expected = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)
    torch.testing.assert_close(output, expected)
    if hidden_feature < 0:  # PyTorch adds -inf to a hidden score: a -inf there stays -inf, and finite
        torch.testing.assert_close(output, F.scaled_dot_product_attention(queries, poisoned, values, attn_mask=mask))


@pytest.mark.parametrize("hidden_feature", [-INF, INF], ids=["-inf", "+inf"])
def test_an_infinite_padded_key_leaves_the_layers_output_finite(hidden_feature):
    torch.manual_seed(0)
    layer = MultiHeadAttention(8, 8, 8, 8, 2).double().eval()
    X = torch.randn(2, 5, 8, dtype=torch.float64)
    poisoned = X.clone()
    poisoned[0, 4] = hidden_feature  # padding of the first sequence
    valid_lens = torch.tensor([4, 5])
    torch.testing.assert_close(layer(X, poisoned, X, valid_lens), layer(X, X, X, valid_lens))


# ----- 2. devices are checked at entry -------------------------------------------------------------------------


def test_a_layer_on_one_device_refuses_inputs_on_another():
    X = torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match=r"queries is on cpu but the layer's weights are on meta"):
        MultiHeadAttention(8, 8, 8, 8, 2).to("meta")(X, X, X)
    with pytest.raises(ValueError, match=r"queries is on meta but the layer's weights are on cpu"):
        MultiHeadAttention(8, 8, 8, 8, 2)(X.to("meta"), X.to("meta"), X.to("meta"))
    with pytest.raises(ValueError, match=r"queries is on cpu but the layer's weights are on meta"):
        AdditiveAttention(8, 8, 4).to("meta")(X, X, X)


@pytest.mark.parametrize("name", ["keys", "values", "valid_lens", "attn_mask"])
@pytest.mark.parametrize("layer", [lambda: MultiHeadAttention(8, 8, 8, 8, 2), lambda: MultiHeadAttention(8, 2),
                                   lambda: DotProductAttention()], ids=["d2l-0.17", "d2l-1.0", "dot-product"])
def test_an_argument_on_another_device_than_the_queries_is_named(layer, name):
    layer = layer()
    X = torch.randn(2, 4, 8)
    arguments = {"queries": X, "keys": X, "values": X, "valid_lens": torch.tensor([2, 4])}
    if name == "attn_mask":
        if isinstance(layer, DotProductAttention):
            pytest.skip("DotProductAttention takes no attn_mask")
        arguments["attn_mask"] = causal_mask(4)
    moved = {**arguments, name: arguments[name].to("meta")}
    with pytest.raises(ValueError, match=rf"{name} is on meta but queries is on cpu; move it there first"):
        layer(**moved)
    if isinstance(layer, MultiHeadAttention) and layer.W_q.in_features == 0:  # lazy: a refused call fixes nothing
        assert layer.query_size is None
    assert layer(**arguments).shape == (2, 4, 8)


def test_the_functions_name_an_argument_on_another_device():
    q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"keys is on meta but queries is on cpu"):
        dot_product_attention(q, q.to("meta"), q)
    with pytest.raises(ValueError, match=r"mask is on meta but queries is on cpu"):
        dot_product_attention(q, q, q, causal_mask(3, device="meta"))
    with pytest.raises(ValueError, match=r"valid_lens is on meta but X is on cpu"):
        masked_softmax(torch.randn(2, 3, 3), torch.tensor([1, 2], device="meta"))


# ----- 3. GroupedQueryAttention.attend checks its arguments, and both of its paths follow the mask -----------------


def gqa_and_heads(seed=0):
    torch.manual_seed(seed)
    layer = GroupedQueryAttention(8, 8, 8, 8, 4, 2).double().eval()  # head_dim 2, two query heads per kv head
    queries = torch.randn(2, 4, 3, 2, dtype=torch.float64)
    keys, values = torch.randn(2, 2, 5, 2, dtype=torch.float64), torch.randn(2, 2, 5, 2, dtype=torch.float64)
    return layer, queries, keys, values


MASKS = {
    "1-D": torch.tensor([True, False, True, True, False]),
    "(queries, kvpairs)": torch.rand(3, 5, generator=torch.Generator().manual_seed(1)) > 0.4,
    "per head": torch.rand(2, 4, 3, 5, generator=torch.Generator().manual_seed(2)) > 0.4,
}


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "fused"])
@pytest.mark.parametrize("kind", MASKS)
def test_attend_follows_the_mask_on_both_paths(kind, need_weights):
    layer, queries, keys, values = gqa_and_heads()
    mask = MASKS[kind].clone()
    mask[..., 0] = True  # every query sees key 0: no row is empty, where SDPA of -inf rows differs
    output = layer.attend(queries, keys, values, mask, need_weights=need_weights)
    repeated = repeat_kv_heads(keys, 2), repeat_kv_heads(values, 2)
    expected = F.scaled_dot_product_attention(queries, *repeated, attn_mask=mask.expand(2, 4, 3, 5))
    torch.testing.assert_close(output, expected)
    unmasked = F.scaled_dot_product_attention(queries, *repeated)
    assert not torch.allclose(output, unmasked)  # the mask mattered
    assert (layer.attention_weights is None) == (not need_weights)


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "fused"])
def test_attend_refuses_a_float_mask_and_wrong_head_counts(need_weights):
    layer, queries, keys, values = gqa_and_heads()
    with pytest.raises(TypeError, match=r"mask must be a boolean tensor \(True = may attend\), got torch.float32"):
        layer.attend(queries, keys, values, torch.ones(3, 5), need_weights=need_weights)
    with pytest.raises(ValueError, match=r"keys must have shape \(batch_size, num_kv_heads, num_kvpairs, head_dim\) "
                                         r"= \(2, 2, 5, 2\) for this layer, got \(2, 4, 5, 2\)"):
        layer.attend(queries, repeat_kv_heads(keys, 2), values, None, need_weights=need_weights)
    with pytest.raises(ValueError, match=r"queries must be a 4-D tensor"):
        layer.attend(queries[0], keys, values, None, need_weights=need_weights)
    with pytest.raises(ValueError, match=r"mask must broadcast to"):
        layer.attend(queries, keys, values, torch.ones(4, 5, dtype=torch.bool), need_weights=need_weights)
    with pytest.raises(TypeError, match=r"need_weights must be True or False, got 'no'"):
        layer.attend(queries, keys, values, None, need_weights="no")


# ----- 4. contracts no test pinned down --------------------------------------------------------------------------


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_to_torch_mha_copies_the_dropout(dropout):
    assert to_torch_mha(MultiHeadAttention(8, 8, 8, 8, 2, dropout)).dropout == dropout


@pytest.mark.parametrize("call", [
    lambda x: MultiHeadAttention(8, 8, 8, 8, 2)(x, x, x),
    lambda x: dot_product_attention(x, x, x),
    lambda x: masked_softmax(x),
    lambda x: transpose_qkv(x, 2),
], ids=["MultiHeadAttention", "dot_product_attention", "masked_softmax", "transpose_qkv"])
def test_a_numpy_array_is_refused_by_name(call):
    array = np.ones((2, 3, 8), dtype=np.float32)
    with pytest.raises(TypeError, match=r"(queries|X) must be a torch.Tensor .*, got ndarray"):
        call(array)


# ----- 5. checks that agree with one another, messages that name the right thing -------------------------------


def test_numpy_booleans_are_accepted_wherever_python_booleans_are():
    X = torch.randn(2, 4, 8)
    layer = MultiHeadAttention(8, 8, 8, 8, 2, bias=np.True_).eval()
    assert layer.W_q.bias is not None
    expected = layer(X, X, X, causal=True)
    torch.testing.assert_close(layer(X, X, X, causal=np.True_, need_weights=np.False_), expected)
    assert layer.attention_weights is None


def test_causal_mask_takes_empty_sequences_as_the_layers_do():
    assert causal_mask(0).shape == (0, 0)
    assert causal_mask(2, 0).shape == (2, 0)
    with pytest.raises(ValueError, match=r"num_queries must be an int >= 0, got -1"):
        causal_mask(-1)


def test_prefix_len_as_a_tensor_is_checked_like_the_int():
    with pytest.raises(ValueError, match=r"prefix_len must hold ints >= 0, got \[2, -1\]"):
        prefix_lm_mask_mod(torch.tensor([2, -1]))
    mask = dense_mask(prefix_lm_mask_mod(torch.tensor([2, 0])), 2, 1, 3, 3)
    assert mask[0, 0, 0].tolist() == [True, True, False] and mask[1, 0, 0].tolist() == [True, False, False]


def test_an_incomplete_d2l_0_17_call_is_not_blamed_on_dropout():
    with pytest.raises(TypeError, match=r"takes the arguments MultiHeadAttention\(key_size, "
                                        r"query_size, value_size, num_hiddens, num_heads, .*got \(8, 8, 8\)$"):
        MultiHeadAttention(8, 8, 8)
    with pytest.raises(TypeError,
                       match=r"AdditiveAttention\(num_hiddens, dropout=0.0\) \(d2l 1.0's form\); got \(8, 8\)"):
        AdditiveAttention(8, 8)
    assert MultiHeadAttention(8, 2, 0).dropout.p == 0  # a dropout of 0 given as an int is still a dropout


def test_the_signature_message_shows_the_parameters_without_annotations():
    with pytest.raises(TypeError) as error:
        MultiHeadAttention(1, 2, 3, 4, 5, 0.1, False, 9)
    assert "int" not in str(error.value) and len(str(error.value)) < 360


def test_attend_with_cache_names_the_cache_when_it_does_not_fit_the_layer():
    layer = GroupedQueryAttention(8, 8, 8, 8, 4, 2)
    with pytest.raises(ValueError, match=r"cache holds 4 key-value heads of 2 features, but layer has "
                                         r"num_kv_heads=2 and head_dim=2"):
        attend_with_cache(layer, torch.randn(1, 3, 8), KVCache(1, 4, 2, 10))


def test_a_kv_cache_names_keys_on_another_device():
    cache = KVCache(1, 2, 2, 10)
    keys = torch.randn(1, 2, 3, 2)
    with pytest.raises(ValueError, match=r"keys is on meta but the cache is on cpu"):
        cache.append(keys.to("meta"), keys)


def test_flex_helpers_name_a_function_of_the_wrong_arity_and_a_tensor_of_the_wrong_size():
    with pytest.raises(TypeError, match=r"mask_mod must take 4 arguments \(b, h, q_idx, kv_idx\)"):
        dense_mask(lambda b, q_idx, kv_idx: kv_idx <= q_idx, 1, 1, 3, 3)
    with pytest.raises(TypeError, match=r"score_mod must take 5 arguments \(score, b, h, q_idx, kv_idx\)"):
        apply_score_mod(lambda score, b, h: score, torch.zeros(1, 1, 2, 2))
    with pytest.raises(ValueError, match=r"mask_mod indexes past the end of the tensor it was built from, "
                                         r"at batch_size=2"):
        dense_mask(padding_mask_mod(torch.tensor([1])), 2, 1, 3, 3)


# ----- 7. the KV cache, generate and MLA are the library's, importable without plotting libraries ---------------


def test_the_kv_cache_and_mla_import_without_matplotlib_or_ipywidgets():
    blocked = "import sys; sys.modules.update(matplotlib=None, ipywidgets=None); "  # importing either now fails
    code = blocked + ("from mha_lib.kv_cache import KVCache, generate; from mha_lib.latent import "
                      "MultiHeadLatentAttention; import mha_lib; print(mha_lib.MultiHeadAttention.__name__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "MultiHeadAttention"


def test_the_chapter_names_the_same_kv_cache_as_the_core():
    from mha_chapters import kv_cache as chapter
    from mha_lib import kv_cache, latent

    assert chapter.KVCache is kv_cache.KVCache and chapter.generate is kv_cache.generate
    assert chapter.MultiHeadLatentAttention is latent.MultiHeadLatentAttention


def test_sequence_mask_does_not_call_its_steps_key_value_pairs():
    with pytest.raises(ValueError, match=r"valid_lens must hold whole numbers .*got 1.5: a length of 1.5 has") as error:
        sequence_mask(torch.zeros(2, 3), torch.tensor([1.5, 2.0]))
    assert "key-value" not in str(error.value)


@pytest.mark.parametrize("dtype, error, words", [
    ("float16", TypeError, "dtype must be a torch.dtype, e.g. torch.float16, got str"),
    (torch.int64, ValueError, "dtype must be a floating-point torch.dtype, got torch.int64"),
])
def test_kv_cache_names_a_wrong_dtype(dtype, error, words):
    """KVCache(dtype=...) says what it wants where torch.zeros would have answered for it."""
    from mha_lib.kv_cache import KVCache
    with pytest.raises(error, match=re.escape(words)):
        KVCache(1, 1, 2, 4, dtype=dtype)
    assert KVCache(1, 1, 2, 4, dtype=torch.float16).keys.dtype == torch.float16


# ----- 9. one value under two names is stored once ----------------------------------------------------------------


def test_general_layer_stores_qk_size_and_v_size_under_the_one_name_of_each_size():
    layer = GeneralMultiHeadAttention(8, 8, 8, 16, 2, qk_size=3, v_size=5)
    assert (layer.head_dim, layer.v_head_dim) == (3, 5)
    assert layer.W_q.out_features == layer.W_k.out_features == 2 * 3 and layer.W_v.out_features == 2 * 5
    assert not hasattr(layer, "qk_size") and not hasattr(layer, "v_size")  # one name per size, as in every layer
