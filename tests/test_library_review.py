"""The defects of the library review of 2026-11-24 (D1-D8), the d2l 1.0 forms and ``sequence_mask`` offline, and
the promises of issue 25: one forward pass through few functions, Shift-Tab signatures, no surviving mutants.

Device-sensitive helpers are tested on the ``meta`` device, which stands in for a GPU: a tensor built on the
CPU by mistake meets a meta tensor and fails, as it would meet a CUDA tensor.
"""

import importlib
import inspect
import sys
import typing
from pathlib import Path

import numpy as np
import pytest
import torch

import mha_lib
from mha_lib import (
    AdditiveAttention,
    DotProductAttention,
    GroupedQueryAttention,
    KVCache,
    MultiHeadAttention,
    attend_with_cache,
    attention_mask,
    causal_mask,
    dot_product_attention,
    generate,
    kv_head_of,
    masked_softmax,
    mha_to_gqa,
    sequence_mask,
    to_torch_mha,
    valid_lens_mask,
)
from mha_lib.flex import alibi_score_mod, apply_score_mod, block_tiles, sliding_window_mask_mod, softcap_score_mod

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


# ----- D1: DotProductAttention checks that queries and keys have one feature size -------------------------------


def test_d1_dot_product_attention_layer_needs_queries_and_keys_of_one_size():
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 6)
    with pytest.raises(ValueError, match="queries and keys must have the same number of features d_k"):
        DotProductAttention()(q, k, k)


# ----- D2: a failed first call leaves the lazy (d2l 1.0) forms unbuilt -----------------------------------------


@pytest.mark.parametrize("layer", [lambda: MultiHeadAttention(8, 2), lambda: AdditiveAttention(8)],
                         ids=["MultiHeadAttention", "AdditiveAttention"])
def test_d2_a_failed_first_call_does_not_fix_the_input_sizes(layer):
    layer = layer().eval()
    q, k = torch.randn(2, 3, 5), torch.randn(2, 4, 6)
    with pytest.raises(ValueError, match="valid_lens must have shape"):
        layer(q, k, k, torch.tensor([4, 4, 4]))  # three lengths for two sequences
    assert layer.query_size is None
    other_q, other_k = torch.randn(2, 3, 7), torch.randn(2, 4, 3)  # other sizes than the failed call's
    assert layer(other_q, other_k, other_k, torch.tensor([2, 4])).shape[:2] == (2, 3)
    assert (layer.query_size, layer.key_size) == (7, 3)


def test_d2l_1_0_forms_read_their_input_sizes_from_the_first_call_offline():
    torch.manual_seed(0)
    mha = MultiHeadAttention(12, 3, 0.0, True).eval()  # d2l 1.0: (num_hiddens, num_heads, dropout, bias)
    assert (mha.query_size, mha.key_size, mha.value_size) == (None, None, None)
    q, kv = torch.randn(2, 4, 5), torch.randn(2, 6, 7)
    output = mha(q, kv, kv, torch.tensor([3, 6]))
    assert output.shape == (2, 4, 12) and (mha.query_size, mha.key_size, mha.value_size) == (5, 7, 7)
    assert mha.W_q.bias is not None and mha.W_q.weight.shape == (12, 5)
    with pytest.raises(ValueError, match="queries has 4 features .* query_size=5"):
        mha(torch.randn(2, 4, 4), kv, kv)
    X = torch.arange(2 * 4 * 12).reshape(2, 4, 12)
    assert torch.equal(mha.transpose_qkv(X), mha_lib.transpose_qkv(X, 3))
    assert torch.equal(mha.transpose_output(mha.transpose_qkv(X)), X)
    additive = AdditiveAttention(9, 0.25)  # d2l 1.0: (num_hiddens, dropout)
    assert additive.dropout.p == 0.25 and additive(q, kv, kv).shape == (2, 4, 7)
    with pytest.raises(TypeError, match=r"\(d2l 0.17's form\) or MultiHeadAttention.*\(d2l 1.0's form\)"):
        MultiHeadAttention(1, 2, 3, 4, 5, 6, 7, 8)


@pytest.mark.parametrize(("layer", "d2l_0_17", "d2l_1_0"), [
    (MultiHeadAttention, ["key_size", "query_size", "value_size", "num_hiddens", "num_heads", "dropout", "bias"],
     ["num_hiddens", "num_heads", "dropout", "bias"]),
    (AdditiveAttention, ["key_size", "query_size", "num_hiddens", "dropout"], ["num_hiddens", "dropout"]),
], ids=["MultiHeadAttention", "AdditiveAttention"])
def test_both_editions_show_their_parameter_names(layer, d2l_0_17, d2l_1_0):
    forms = typing.get_overloads(layer.__init__)  # what an editor and a type checker show
    assert [list(inspect.signature(form).parameters)[1:len(names) + 1] for form, names in
            zip(forms, (d2l_0_17, d2l_1_0), strict=True)] == [d2l_0_17, d2l_1_0]
    docstring = layer.__init__.__doc__  # Shift-Tab's "Init docstring" spells out both forms, with their defaults
    for names in (d2l_0_17, d2l_1_0):
        defaults = {"dropout": "dropout=0.0", "bias": "bias=False"}
        assert f"{layer.__name__}({', '.join(defaults.get(name, name) for name in names)})" in docstring
    assert "d2l 1.0" in layer.__doc__ and "__signature__" not in vars(layer.__init__)  # no signature patched on


# ----- D3: GroupedQueryAttention checks bias -------------------------------------------------------------------


def test_d3_grouped_query_attention_refuses_a_bias_that_is_not_a_bool():
    with pytest.raises(TypeError, match="bias must be True or False, got 'no'"):
        GroupedQueryAttention(8, 8, 8, 8, 4, 2, 0.0, "no")


# ----- D4: helpers build on their inputs' device ----------------------------------------------------------------


def test_d4_attention_mask_builds_every_part_on_the_device_of_its_inputs():
    valid_lens = torch.tensor([1, 3], device="meta")
    mask = attention_mask(2, 3, 3, valid_lens, causal=True)
    assert mask.device.type == "meta" and mask.shape == (2, 3, 3)
    attn_mask = torch.ones(2, 3, 3, dtype=torch.bool, device="meta")
    assert attention_mask(2, 3, 3, causal=True, attn_mask=attn_mask).device.type == "meta"
    assert causal_mask(3, device="meta").device.type == "meta"
    assert attention_mask(2, 3, 3, causal=True).device.type == "cpu"


def test_d4_alibi_and_block_tiles_work_on_the_device_of_their_inputs():
    scores = torch.zeros(1, 4, 3, 3, device="meta")
    assert apply_score_mod(alibi_score_mod(4), scores).device.type == "meta"
    mask = torch.ones(5, 5, dtype=torch.bool, device="meta")
    assert block_tiles(mask, 2).device.type == "meta"


# ----- D5 is in test_plotting.py: test_a_nan_cell_keeps_the_colour_scale_of_the_finite_ones and the bad inputs -----


# ----- D6: numpy scalars are numbers; a type problem is a TypeError ----------------------------------------------


def test_d6_numpy_scalars_are_accepted_wherever_python_numbers_are():
    q = torch.randn(2, 3, 4)
    output, _ = dot_product_attention(q, q, q, dropout_p=np.float32(0.1))
    assert output.shape == (2, 3, 4)
    assert kv_head_of(np.int64(3), np.int64(4), np.int64(2)) == 1
    layer = MultiHeadAttention(np.int64(8), np.int64(8), np.int64(8), np.int64(8), np.int64(2), np.float64(0.1))
    assert layer.num_heads == 2 and layer.dropout.p == pytest.approx(0.1)
    assert GroupedQueryAttention(8, 8, 8, 8, np.int32(4), np.int32(2)).num_groups == 2
    assert sliding_window_mask_mod(np.int64(2)) is not None and softcap_score_mod(np.float32(2.0)) is not None
    assert valid_lens_mask(torch.tensor([1]), np.int64(3)).tolist() == [[True, False, False]]


def test_d6_a_wrong_type_is_a_type_error_and_a_wrong_value_a_value_error():
    with pytest.raises(TypeError, match=r"query_head must be an int in \[0, 3\], got '1'"):
        kv_head_of("1", 4, 2)
    with pytest.raises(ValueError, match=r"query_head must be an int in \[0, 3\], got 4"):
        kv_head_of(4, 4, 2)
    with pytest.raises(ValueError, match="has not been called yet"):
        mha_to_gqa(MultiHeadAttention(8, 2), 1)


# ----- D7: attention_mask checks its sizes ----------------------------------------------------------------------


@pytest.mark.parametrize(("sizes", "error", "message"), [
    ((-1, 3, 4), ValueError, "batch_size must be an int >= 0, got -1"),
    ((2, "3", 4), TypeError, "num_queries must be an int >= 0, got '3'"),
    ((2, 3, 4.0), TypeError, "num_kvpairs must be an int >= 0, got 4.0"),
])
def test_d7_attention_mask_checks_its_sizes(sizes, error, message):
    with pytest.raises(error, match=message):
        attention_mask(*sizes, causal=True)


# ----- D8: a masked key gets exactly zero weight, whatever its score ----------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_d8_a_masked_key_gets_zero_weight_however_large_its_score(dtype):
    big = 0.9 * torch.finfo(dtype).max  # the hidden key's score beats the visible ones by more than the dtype's range
    X = torch.tensor([[[-big, -big, -big, big]]], dtype=dtype)  # valid_len 3: keys 0..2 visible, key 3 hidden
    weights = masked_softmax(X, torch.tensor([3])).double()
    assert weights[0, 0, 3] == 0
    torch.testing.assert_close(weights[0, 0, :3], torch.full((3,), 1 / 3, dtype=torch.float64), atol=1e-2, rtol=0)
    visible_far_below = torch.tensor([[[-big, -big, 0.0]]], dtype=dtype)  # a small hidden score, huge visible ones
    weights = masked_softmax(visible_far_below, torch.tensor([2])).double()
    assert weights[0, 0, 2] == 0 and weights.sum() == pytest.approx(1, abs=1e-2)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_d8_masked_keys_get_zero_weight_in_every_layer_and_dtype(dtype):
    torch.manual_seed(0)
    q = torch.randn(2, 3, 4, dtype=dtype) * 100
    k = torch.randn(2, 5, 4, dtype=dtype) * 100
    keep = valid_lens_mask(torch.tensor([2, 0]), 5).unsqueeze(1)
    _, weights = dot_product_attention(q, k, k, mask=keep)
    assert torch.equal(weights == 0, ~keep.expand_as(weights) | (weights == 0))
    assert torch.all(weights[~keep.expand_as(weights)] == 0)
    layer = MultiHeadAttention(4, 4, 4, 8, 2).to(dtype).eval()
    layer(q, k, k, torch.tensor([2, 0]))
    assert torch.all(layer.attention_weights[..., 2:] == 0) and torch.all(layer.attention_weights[1] == 0)
    assert layer.attention_weights.dtype == dtype  # half-precision weights stay in their dtype


# ----- sequence_mask, offline -----------------------------------------------------------------------------------


def test_sequence_mask_changes_X_in_place_and_returns_it():
    X = torch.ones(2, 3, 2)
    result = sequence_mask(X, torch.tensor([1, 2]), value=-1)
    assert result is X
    assert X[..., 0].tolist() == [[1, -1, -1], [1, 1, -1]] and torch.equal(X[..., 0], X[..., 1])


def test_sequence_mask_takes_d2l_positional_lengths_and_clamps_them_as_d2l_does():
    X = torch.ones(3, 4)
    by_position = sequence_mask(X.clone(), torch.tensor([5, 2, -1]), -1.0)  # as d2l calls it: (X, valid_len, value)
    assert by_position.tolist() == [[1, 1, 1, 1], [1, 1, -1, -1], [-1, -1, -1, -1]]  # 5 keeps all 4, -1 none
    assert torch.equal(sequence_mask(X.clone(), valid_lens=torch.tensor([4, 2, 0]), value=-1.0), by_position)


# ----- mutants the review saw survive ---------------------------------------------------------------------------


@pytest.mark.parametrize("training", [True, False])
def test_conversions_keep_the_train_or_eval_mode(training):
    mha = MultiHeadAttention(8, 8, 8, 8, 4).train(training)
    assert to_torch_mha(mha).training == training
    assert mha_to_gqa(mha, 2).training == training


def test_to_torch_mha_refuses_grouped_query_attention():
    with pytest.raises(ValueError, match="one key-value head per query head; mha has num_kv_heads=2"):
        to_torch_mha(GroupedQueryAttention(8, 8, 8, 8, 4, 2))


def test_the_divisor_list_in_the_message_is_complete():
    with pytest.raises(ValueError, match=r"the divisors of 12 are \[1, 2, 3, 4, 6, 12\]"):
        MultiHeadAttention(12, 12, 12, 12, 5)
    with pytest.raises(ValueError, match=r"allowed values are \[1, 2, 3, 6\]"):
        GroupedQueryAttention(12, 12, 12, 12, 6, 4)


# ----- one forward pass a student reads in one sitting -----------------------------------------------------------


def test_one_forward_pass_runs_through_at_most_4_files_and_12_functions():
    # 14 functions in 3 files at the review of 2026-11-29; 12 in 4 files since issue 50: the five steps sit in
    # forward itself, which calls down into the checks, the mask (masks.py), the head reshapes and the attention
    # (functional.py) and one method, the key-value head split that GroupedQueryAttention changes; a check calls
    # the function that words its message only when an argument is wrong
    torch.manual_seed(0)
    layer = MultiHeadAttention(8, 8, 8, 8, 2).eval()
    X, valid_lens = torch.randn(2, 3, 8), torch.tensor([1, 3])
    package = str(Path(mha_lib.__file__).parent)
    calls = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            calls.append(frame.f_code)

    sys.setprofile(profile)
    try:
        layer(X, X, X, valid_lens)
    finally:
        sys.setprofile(None)
    files = {Path(code.co_filename).name for code in calls}
    assert len(set(calls)) <= 12 and len(files) <= 4, sorted({code.co_qualname for code in calls})
    in_modules = {code.co_qualname for code in calls if Path(code.co_filename).name == "modules.py"}
    assert in_modules == {"MultiHeadAttention.forward", "MultiHeadAttention._split_kv_heads"}


def test_grouped_query_attention_lives_in_its_subclass():
    mha, gqa = MultiHeadAttention(8, 8, 8, 8, 4), GroupedQueryAttention(8, 8, 8, 8, 4, 2)
    assert not {"num_kv_heads", "num_groups"} & set(vars(mha))  # the plain layer knows nothing of groups
    assert (gqa.num_kv_heads, gqa.num_groups, gqa.W_k.out_features, gqa.W_v.out_features) == (2, 2, 4, 4)
    assert isinstance(gqa.attention, DotProductAttention) and gqa.rotary is None  # built by MultiHeadAttention


@pytest.mark.parametrize("rope", [None, "halves"])
def test_a_plain_multi_head_layer_decodes_with_a_cache_of_all_its_heads(rope):
    # any MultiHeadAttention: its cache holds num_heads key-value heads, as the GQA layer with as many does
    torch.manual_seed(0)
    mha = MultiHeadAttention(24, 24, 24, 24, 6, rope=rope).double()
    x = torch.randn(2, 9, 24, dtype=torch.float64)
    cache = KVCache(2, 6, 4, 9, dtype=torch.float64)
    pieces = [attend_with_cache(mha, x[:, a:b], cache) for a, b in ((0, 4), (4, 5), (5, 9))]
    torch.testing.assert_close(torch.cat(pieces, dim=1), mha(x, x, x, causal=True), rtol=1e-10, atol=1e-12)
    prompt = x[:, :3]
    cached, uncached = generate(mha, prompt, 5), generate(mha, prompt, 5, use_cache=False)
    torch.testing.assert_close(cached, uncached, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"cache holds 2 key-value heads .* layer has num_kv_heads=6"):
        attend_with_cache(mha, x, KVCache(2, 2, 4, 9, dtype=torch.float64))


@pytest.mark.parametrize("module", ["modules", "grouped", "kv_cache", "latent"])
def test_the_heads_are_split_and_merged_by_the_one_pair_of_functional(module):
    # split_heads and merge_heads in mha_lib.functional; a layer that wrote its own split would drift from them
    source = inspect.getsource(importlib.import_module(f"mha_lib.{module}"))
    for idiom in ("unflatten(-1, (", ".transpose(1, 2).flatten(2)", "permute(0, 2, 1, 3)",
                  "repeat_interleave(self.num_groups"):  # key-value heads repeat in _repeat_kv_heads only
        assert idiom not in source, idiom
    assert "split_heads(" in source
