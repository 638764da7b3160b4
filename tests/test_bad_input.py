"""Bad input gets a clear error, never a silent wrong answer or NaN.

The project rule: a wrong value or shape raises ``ValueError``, a wrong dtype or
type raises ``TypeError``, and the message names the argument, what was expected
and what came. Each ``match=`` below checks the argument's name *and* the value or
shape that came, so these tests fail if a message turns vague.

Every test starts from the same small, valid inputs (see ``make_inputs``) and
breaks exactly one thing; ``test_standard_inputs_are_accepted`` checks that the
unbroken inputs pass, and give what ``reference_output`` computes with PyTorch's own
operations. Seeds: ``tests/conftest.py`` calls ``torch.manual_seed(0)`` before every test.
"""

import math
import re
from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import nn

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

BATCH, NUM_QUERIES, NUM_KVPAIRS = 2, 3, 4
QUERY_SIZE, KEY_SIZE, VALUE_SIZE = 6, 5, 7  # all different, so a message naming the wrong one fails
NUM_HIDDENS, NUM_HEADS = 8, 2

LAYERS = {
    # with biases, so that even a query that sees no key has an output that is not 0: W_o's bias
    "MultiHeadAttention": lambda: MultiHeadAttention(KEY_SIZE, QUERY_SIZE, VALUE_SIZE, NUM_HIDDENS, NUM_HEADS,
                                                     bias=True),
    "AdditiveAttention": lambda: AdditiveAttention(KEY_SIZE, QUERY_SIZE, NUM_HIDDENS),
    "DotProductAttention": DotProductAttention,
}
WITH_SDPA = [*LAYERS, "dot_product_attention"]
QKV = ["queries", "keys", "values"]


def msg(*parts: object) -> str:
    """A regex that requires every part, literally and in this order, in the error message."""
    return ".*".join(re.escape(str(part)) for part in parts)


def make_inputs(key_size: int = KEY_SIZE) -> dict[str, torch.Tensor]:
    """Valid queries, keys and values, keyed by the argument names the layers use."""
    return {
        "queries": torch.randn(BATCH, NUM_QUERIES, QUERY_SIZE),
        "keys": torch.randn(BATCH, NUM_KVPAIRS, key_size),
        "values": torch.randn(BATCH, NUM_KVPAIRS, VALUE_SIZE),
    }


def layer_and_inputs(name: str) -> tuple[nn.Module, dict[str, torch.Tensor]]:
    key_size = QUERY_SIZE if name == "DotProductAttention" else KEY_SIZE  # dot products need d_q == d_k
    return LAYERS[name](), make_inputs(key_size)


def callable_and_inputs(name: str) -> tuple[Callable[..., object], dict[str, torch.Tensor]]:
    """A layer of LAYERS, or the function dot_product_attention, with valid inputs for it."""
    if name == "dot_product_attention":
        return dot_product_attention, make_inputs(key_size=QUERY_SIZE)
    return layer_and_inputs(name)


def call_with_valid_lens(target: str, valid_lens: object) -> torch.Tensor:
    """Pass ``valid_lens`` to ``target`` (a function or a layer name) with otherwise valid input."""
    if target == "masked_softmax":
        return masked_softmax(torch.randn(BATCH, NUM_QUERIES, NUM_KVPAIRS), valid_lens)
    if target == "valid_lens_mask":
        return valid_lens_mask(valid_lens, NUM_KVPAIRS)
    layer, inputs = layer_and_inputs(target)
    return layer(**inputs, valid_lens=valid_lens)


def reference_softmax(scores: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the keys that ``keep`` lets through (True = may attend); a row that sees none gets weights 0."""
    if keep is not None:
        scores = scores.masked_fill(~keep, -torch.inf)
    return scores.softmax(dim=-1).nan_to_num(0.0)  # a row of -inf only: 0/0 = NaN -> 0


def reference_output(layer: nn.Module, inputs: dict[str, torch.Tensor], keep: torch.Tensor | None = None):
    """What ``layer`` must return for ``inputs``, written out with PyTorch's own operations, head by head."""
    queries, keys, values = inputs["queries"], inputs["keys"], inputs["values"]
    if isinstance(layer, MultiHeadAttention):
        q, k, v, d = layer.W_q(queries), layer.W_k(keys), layer.W_v(values), layer.head_dim
        heads = [reference_softmax(q[..., h * d:(h + 1) * d] @ k[..., h * d:(h + 1) * d].mT / math.sqrt(d), keep)
                 @ v[..., h * d:(h + 1) * d] for h in range(layer.num_heads)]
        return layer.W_o(torch.cat(heads, dim=-1))
    if isinstance(layer, AdditiveAttention):
        scores = layer.w_v(torch.tanh(layer.W_q(queries)[:, :, None] + layer.W_k(keys)[:, None])).squeeze(-1)
        return reference_softmax(scores, keep) @ values
    return reference_softmax(queries @ keys.mT / math.sqrt(queries.shape[-1]), keep) @ values


def keep_of(valid_lens: torch.Tensor) -> torch.Tensor:
    """The keys that ``valid_lens`` lets through: ``(batch, 1 or num_queries, num_kvpairs)``, True = may attend."""
    return torch.arange(NUM_KVPAIRS) < valid_lens.reshape(BATCH, -1, 1)


@pytest.mark.parametrize("name", LAYERS)
def test_standard_inputs_are_accepted(name):
    layer, inputs = layer_and_inputs(name)
    output = layer(**inputs)
    assert output.shape[:2] == (BATCH, NUM_QUERIES)
    torch.testing.assert_close(output, reference_output(layer, inputs))


# --- layer construction ------------------------------------------------------------------


def mha_sizes(**changes: object) -> dict[str, object]:
    sizes = {"key_size": KEY_SIZE, "query_size": QUERY_SIZE, "value_size": VALUE_SIZE,
             "num_hiddens": NUM_HIDDENS, "num_heads": NUM_HEADS}
    return sizes | changes


@pytest.mark.parametrize(("num_hiddens", "num_heads"), [(100, 3), (8, 3), (6, 4)])
def test_mha_num_heads_must_divide_num_hiddens_and_the_message_names_both(num_hiddens, num_heads):
    with pytest.raises(ValueError, match=msg(f"num_heads={num_heads}", f"num_hiddens={num_hiddens}")):
        MultiHeadAttention(**mha_sizes(num_hiddens=num_hiddens, num_heads=num_heads))


@pytest.mark.parametrize("size", ["key_size", "query_size", "value_size", "num_hiddens", "num_heads"])
@pytest.mark.parametrize("value", [0, -2, 2.5, 8.0, "8", None, True], ids=repr)
def test_mha_sizes_must_be_positive_ints(size, value):
    # A number below 1 is a bad value (ValueError); anything but a whole number is a bad type (TypeError).
    error = ValueError if value in (0, -2) else TypeError
    with pytest.raises(error, match=msg(size, "positive int", f"got {value!r}")):
        MultiHeadAttention(**mha_sizes(**{size: value}))


@pytest.mark.parametrize("integer", [np.int64, np.int32, np.uint8])
def test_mha_sizes_may_be_numpy_integers(integer):
    mha = MultiHeadAttention(**{name: integer(size) for name, size in mha_sizes().items()})
    assert mha.num_heads == NUM_HEADS and type(mha.num_heads) is int
    assert mha.W_q.out_features == NUM_HIDDENS


@pytest.mark.parametrize("bias", [True, False])
def test_mha_with_a_bool_where_a_size_goes_names_both_forms(bias):
    # five positional arguments bind d2l 0.17's form, but the caller meant d2l 1.0's (num_hiddens, num_heads,
    # dropout, bias) and one more: the message must show both forms, not blame num_hiddens for the bias
    both_forms = msg("MultiHeadAttention(key_size", "(d2l 0.17's form) or MultiHeadAttention(num_hiddens, num_heads",
                     "(d2l 1.0's form)", f"got (16, 4, 0.1, {bias}, 5)")
    with pytest.raises(TypeError, match=both_forms):
        MultiHeadAttention(16, 4, 0.1, bias, 5)


DROPOUT_LAYERS = {
    "MultiHeadAttention": lambda p: MultiHeadAttention(**mha_sizes(), dropout=p),
    "AdditiveAttention": lambda p: AdditiveAttention(KEY_SIZE, QUERY_SIZE, NUM_HIDDENS, dropout=p),
    "DotProductAttention": lambda p: DotProductAttention(dropout=p),
}


@pytest.mark.parametrize("name", DROPOUT_LAYERS)
@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5, math.nan], ids=repr)
def test_dropout_must_lie_in_zero_one(name, dropout):
    with pytest.raises(ValueError, match=msg("dropout", "[0, 1)", f"got {dropout!r}")):
        DROPOUT_LAYERS[name](dropout)


@pytest.mark.parametrize("name", DROPOUT_LAYERS)
@pytest.mark.parametrize("dropout", [0, 0.0, 0.5, 0.999], ids=repr)
def test_dropout_in_zero_one_is_accepted(name, dropout):
    assert DROPOUT_LAYERS[name](dropout).dropout.p == dropout


# --- queries, keys and values ------------------------------------------------------------

RESHAPES = {
    "2-D": lambda x: x[0],
    "4-D": lambda x: x.unsqueeze(0),
}


@pytest.mark.parametrize("rank", RESHAPES)
@pytest.mark.parametrize("arg", QKV)
@pytest.mark.parametrize("name", LAYERS)
def test_layers_reject_wrong_rank(name, arg, rank):
    layer, inputs = layer_and_inputs(name)
    inputs[arg] = bad = RESHAPES[rank](inputs[arg])
    with pytest.raises(ValueError, match=msg(arg, "3-D", f"got shape {tuple(bad.shape)}")):
        layer(**inputs)


FUNCTIONS_OF_X = {
    "masked_softmax": masked_softmax,
    "transpose_qkv": lambda X: transpose_qkv(X, NUM_HEADS),
    "transpose_output": lambda X: transpose_output(X, NUM_HEADS),
}


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4, 2)], ids=["2-D", "4-D"])
@pytest.mark.parametrize("function", FUNCTIONS_OF_X)
def test_functions_reject_X_of_wrong_rank(function, shape):
    with pytest.raises(ValueError, match=msg("X", "3-D", f"got shape {shape}")):
        FUNCTIONS_OF_X[function](torch.randn(*shape))


def test_masked_softmax_rejects_integer_X():
    with pytest.raises(TypeError, match=msg("X", "floating-point", "torch.int64")):
        masked_softmax(torch.ones(BATCH, NUM_QUERIES, NUM_KVPAIRS, dtype=torch.long))


@pytest.mark.parametrize("function", ["transpose_qkv", "transpose_output"])
def test_head_reshapes_only_move_elements_so_integer_X_is_fine(function):
    X = torch.arange(BATCH * NUM_QUERIES * 4).reshape(BATCH, NUM_QUERIES, 4)
    assert FUNCTIONS_OF_X[function](X).dtype == torch.long


FEATURE_SIZES = [
    pytest.param("MultiHeadAttention", "queries", "query_size", QUERY_SIZE, id="MHA-queries"),
    pytest.param("MultiHeadAttention", "keys", "key_size", KEY_SIZE, id="MHA-keys"),
    pytest.param("MultiHeadAttention", "values", "value_size", VALUE_SIZE, id="MHA-values"),
    pytest.param("AdditiveAttention", "queries", "query_size", QUERY_SIZE, id="Additive-queries"),
    pytest.param("AdditiveAttention", "keys", "key_size", KEY_SIZE, id="Additive-keys"),
]


@pytest.mark.parametrize(("name", "arg", "size_name", "size"), FEATURE_SIZES)
def test_layers_reject_feature_sizes_they_were_not_built_for(name, arg, size_name, size):
    layer, inputs = layer_and_inputs(name)
    inputs[arg] = inputs[arg][..., :-1]  # one feature short
    with pytest.raises(ValueError, match=msg(arg, f"has {size - 1} features", f"{size_name}={size}")):
        layer(**inputs)


def test_dot_product_needs_queries_and_keys_of_one_size():
    inputs = make_inputs(key_size=QUERY_SIZE + 1)
    with pytest.raises(ValueError, match=msg("queries and keys", "same number of features",
                                             tuple(inputs["queries"].shape), tuple(inputs["keys"].shape))):
        dot_product_attention(**inputs)


@pytest.mark.parametrize("name", WITH_SDPA)
def test_keys_and_values_must_have_the_same_length(name):
    call, inputs = callable_and_inputs(name)
    inputs["values"] = torch.cat([inputs["values"], inputs["values"][:, :1]], dim=1)  # one pair too many
    with pytest.raises(ValueError, match=msg("keys and values", "key-value pairs",
                                             f"values {tuple(inputs['values'].shape)}")):
        call(**inputs)


@pytest.mark.parametrize("arg", QKV)
@pytest.mark.parametrize("name", LAYERS)
def test_batch_sizes_must_agree(name, arg):
    layer, inputs = layer_and_inputs(name)
    inputs[arg] = bad = torch.cat([inputs[arg], inputs[arg][:1]])  # one sequence too many
    with pytest.raises(ValueError, match=msg("leading (batch) axes", tuple(bad.shape))):
        layer(**inputs)


@pytest.mark.parametrize("arg", QKV)
@pytest.mark.parametrize("name", LAYERS)
def test_integer_inputs_raise_type_error(name, arg):
    layer, inputs = layer_and_inputs(name)
    inputs[arg] = inputs[arg].long()
    with pytest.raises(TypeError, match=msg(arg, "floating-point", "torch.int64")):
        layer(**inputs)


@pytest.mark.parametrize("arg", QKV)
@pytest.mark.parametrize("name", WITH_SDPA)
def test_mixed_dtypes_raise_type_error(name, arg):
    call, inputs = callable_and_inputs(name)
    inputs[arg] = inputs[arg].double()
    dtypes = [inputs[a].dtype for a in QKV]
    with pytest.raises(TypeError, match=msg("queries, keys and values", "one dtype",
                                            f"got {dtypes[0]}, {dtypes[1]} and {dtypes[2]}")):
        call(**inputs)


def test_dot_product_attention_has_no_weights_so_float64_is_fine():
    layer, inputs = layer_and_inputs("DotProductAttention")
    output = layer(**{arg: x.double() for arg, x in inputs.items()})
    assert output.dtype == torch.float64


@pytest.mark.parametrize("name", ["MultiHeadAttention", "AdditiveAttention"])
def test_inputs_of_another_dtype_than_the_layer_raise_type_error(name):
    layer, inputs = layer_and_inputs(name)
    with pytest.raises(TypeError, match=msg("queries", "torch.float64", "torch.float32")):
        layer(**{arg: x.double() for arg, x in inputs.items()})


# --- valid_lens ----------------------------------------------------------------------------

BAD_VALID_LENS_SHAPES = [
    pytest.param((BATCH + 1,), id="batch+1"),
    pytest.param((BATCH, NUM_QUERIES + 1), id="batch-x-queries+1"),
    pytest.param((BATCH, NUM_QUERIES, 1), id="3-D"),
    pytest.param((), id="0-D"),
]


@pytest.mark.parametrize("shape", BAD_VALID_LENS_SHAPES)
@pytest.mark.parametrize("target", ["masked_softmax", *LAYERS])
def test_valid_lens_of_wrong_shape(target, shape):
    valid_lens = torch.ones(shape, dtype=torch.long)
    with pytest.raises(ValueError, match=msg("valid_lens", f"({BATCH},) or ({BATCH}, {NUM_QUERIES})",
                                             f"got {shape}")):
        call_with_valid_lens(target, valid_lens)


BAD_VALID_LENS_VALUES = [
    pytest.param(torch.tensor([1.0, 2.5]), ValueError, ("valid_lens", "whole numbers", "got 2.5"), id="fractional"),
    pytest.param(torch.tensor([1.0, float("nan")]), ValueError, ("valid_lens", "whole numbers", "got nan"), id="nan"),
    pytest.param(torch.tensor([True, False]), TypeError, ("valid_lens", "whole numbers", "torch.bool"), id="bool"),
    pytest.param([1, 2], TypeError, ("valid_lens", "tensor", "got list"), id="python-list"),
]


@pytest.mark.parametrize(("valid_lens", "error", "parts"), BAD_VALID_LENS_VALUES)
@pytest.mark.parametrize("target", ["valid_lens_mask", "masked_softmax", *LAYERS])
def test_valid_lens_of_wrong_type_or_value(target, valid_lens, error, parts):
    with pytest.raises(error, match=msg(*parts)):
        call_with_valid_lens(target, valid_lens)


@pytest.mark.parametrize(("beyond", "clamped"), [
    pytest.param([1, NUM_KVPAIRS + 3], [1, NUM_KVPAIRS], id="longer-than-num_kvpairs"),
    pytest.param([-2, 3], [0, 3], id="negative"),
])
@pytest.mark.parametrize("target", ["valid_lens_mask", "masked_softmax", *LAYERS])
def test_valid_lens_beyond_the_kvpairs_count_as_clamped_as_in_d2l(target, beyond, clamped):
    # d2l's sequence_mask reads a length as "keys j < length", so it clamps in effect, and d2l 0.17's
    # predict_seq2seq passes lengths longer than the sequence: mha_lib reads them the same way, on every device
    torch.manual_seed(0)
    got = call_with_valid_lens(target, torch.tensor(beyond))
    torch.manual_seed(0)  # the same layer's weights and inputs again
    torch.testing.assert_close(got, call_with_valid_lens(target, torch.tensor(clamped)), rtol=0, atol=0)
    torch.manual_seed(0)
    assert not torch.equal(got, call_with_valid_lens(target, torch.tensor([1, 1])))  # the lengths mattered


@pytest.mark.parametrize("valid_lens", [[1, NUM_KVPAIRS + 3], [-2, 3]], ids=["longer", "negative"])
def test_one_rule_for_valid_lens_on_the_cpu_and_off_it(valid_lens):
    # the meta device has no values to read back: what passes there must pass on the CPU too, with the same shapes
    layer = LAYERS["MultiHeadAttention"]()
    for device in ("cpu", "meta"):
        inputs = {name: x.to(device) for name, x in make_inputs().items()}
        lengths = torch.tensor(valid_lens, device=device)
        output = layer.to(device)(**inputs, valid_lens=lengths)
        mask = attention_mask(BATCH, NUM_QUERIES, NUM_KVPAIRS, lengths)
        assert (output.device.type, output.shape) == (device, (BATCH, NUM_QUERIES, NUM_HIDDENS))
        assert (mask.device.type, mask.shape) == (device, (BATCH, 1, NUM_KVPAIRS))
        assert valid_lens_mask(lengths, NUM_KVPAIRS).shape == (BATCH, NUM_KVPAIRS)
    assert valid_lens_mask(torch.tensor(valid_lens), NUM_KVPAIRS).sum(-1).tolist() == [
        min(max(length, 0), NUM_KVPAIRS) for length in valid_lens]


GOOD_VALID_LENS = [
    pytest.param(torch.tensor([0, NUM_KVPAIRS]), id="0-and-num_kvpairs"),
    pytest.param(torch.tensor([0, 0]), id="all-0"),
    pytest.param(torch.tensor([[0, 1, NUM_KVPAIRS], [NUM_KVPAIRS, 2, 0]]), id="per-query"),
    pytest.param(torch.tensor([0, NUM_KVPAIRS], dtype=torch.int32), id="int32"),
    pytest.param(torch.tensor([0.0, NUM_KVPAIRS]), id="whole-float32"),  # d2l's BERT makes float32 lengths
]


@pytest.mark.parametrize("valid_lens", GOOD_VALID_LENS)
@pytest.mark.parametrize("target", ["valid_lens_mask", "masked_softmax", *LAYERS])
def test_valid_lens_from_0_to_num_kvpairs_give_the_reference_result(target, valid_lens):
    keep = keep_of(valid_lens)
    if target == "valid_lens_mask":  # it keeps the first valid_lens keys of each row
        assert torch.equal(valid_lens_mask(valid_lens, NUM_KVPAIRS), keep.reshape(*valid_lens.shape, NUM_KVPAIRS))
    elif target == "masked_softmax":
        X = torch.randn(BATCH, NUM_QUERIES, NUM_KVPAIRS)
        torch.testing.assert_close(masked_softmax(X, valid_lens), reference_softmax(X, keep))
    else:
        layer, inputs = layer_and_inputs(target)
        torch.testing.assert_close(layer(**inputs, valid_lens=valid_lens), reference_output(layer, inputs, keep))


@pytest.mark.parametrize("valid_lens", GOOD_VALID_LENS)
def test_mha_fused_path_gives_the_reference_result_for_valid_lens_from_0(valid_lens):
    layer, inputs = layer_and_inputs("MultiHeadAttention")
    output = layer(**inputs, valid_lens=valid_lens, need_weights=False)
    torch.testing.assert_close(output, reference_output(layer, inputs, keep_of(valid_lens)))


def test_masked_softmax_gives_length_0_all_zero_weights_and_full_length_plain_softmax():
    X = torch.randn(BATCH, NUM_QUERIES, NUM_KVPAIRS)
    weights = masked_softmax(X, torch.tensor([0, NUM_KVPAIRS]))
    assert torch.equal(weights[0], torch.zeros_like(weights[0]))
    torch.testing.assert_close(weights[1], X[1].softmax(dim=-1))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_masked_softmax_gives_a_visible_score_at_the_dtypes_minimum_all_the_weight(dtype):
    # hidden scores are replaced by finfo.min: a visible one equal to it must still beat them, not tie at 1/n
    low = torch.finfo(dtype).min
    X = torch.tensor([[[low, 0, 0, 0], [low, low, 0, 0]]], dtype=dtype)
    weights = masked_softmax(X, torch.tensor([[1, 2]]))
    expected = torch.tensor([[[1, 0, 0, 0], [0.5, 0.5, 0, 0]]], dtype=dtype)
    torch.testing.assert_close(weights, expected, rtol=0, atol=0)


def test_masked_softmax_without_valid_lens_is_plain_softmax():
    X = torch.randn(BATCH, NUM_QUERIES, NUM_KVPAIRS)
    torch.testing.assert_close(masked_softmax(X), X.softmax(dim=-1), rtol=0, atol=0)


def test_masked_softmax_leaves_X_unchanged():
    X = torch.randn(BATCH, NUM_QUERIES, NUM_KVPAIRS)
    before = X.clone()
    masked_softmax(X, torch.tensor([1, 2]))
    assert torch.equal(X, before)


# --- explicit masks ------------------------------------------------------------------------

SCORES_SHAPE = (BATCH, NUM_QUERIES, NUM_KVPAIRS)
BAD_MASK_SHAPES = [
    pytest.param((NUM_QUERIES, NUM_KVPAIRS + 1), id="kvpairs+1"),
    pytest.param((BATCH + 1, NUM_QUERIES, NUM_KVPAIRS), id="batch+1"),
    pytest.param((2, BATCH, NUM_QUERIES, NUM_KVPAIRS), id="broadcasts-to-more-axes"),
]
BAD_MASK_DTYPES = [
    pytest.param(torch.float32, id="float32"),
    pytest.param(torch.long, id="int64"),
    pytest.param(torch.uint8, id="uint8"),
]


@pytest.mark.parametrize("shape", BAD_MASK_SHAPES)
def test_dot_product_attention_rejects_mask_that_does_not_broadcast(shape):
    inputs = make_inputs(key_size=QUERY_SIZE)
    with pytest.raises(ValueError, match=msg("mask", "broadcast", SCORES_SHAPE, f"got shape {shape}")):
        dot_product_attention(**inputs, mask=torch.ones(shape, dtype=torch.bool))


@pytest.mark.parametrize("dtype", BAD_MASK_DTYPES)
def test_dot_product_attention_rejects_non_bool_mask(dtype):
    inputs = make_inputs(key_size=QUERY_SIZE)
    with pytest.raises(TypeError, match=msg("mask", "boolean", f"got {dtype}")):
        dot_product_attention(**inputs, mask=torch.ones(SCORES_SHAPE, dtype=dtype))


@pytest.mark.parametrize("shape", BAD_MASK_SHAPES)
def test_mha_rejects_attn_mask_that_does_not_broadcast(shape):
    layer, inputs = layer_and_inputs("MultiHeadAttention")
    with pytest.raises(ValueError, match=msg("attn_mask", "broadcast", SCORES_SHAPE, f"got shape {shape}")):
        layer(**inputs, attn_mask=torch.ones(shape, dtype=torch.bool))


@pytest.mark.parametrize("dtype", BAD_MASK_DTYPES)
def test_mha_rejects_non_bool_attn_mask(dtype):
    layer, inputs = layer_and_inputs("MultiHeadAttention")
    with pytest.raises(TypeError, match=msg("attn_mask", "boolean", f"got {dtype}")):
        layer(**inputs, attn_mask=torch.ones(SCORES_SHAPE, dtype=dtype))


@pytest.mark.parametrize("need_weights", [True, False], ids=["with-weights", "fused"])
def test_mha_with_an_all_false_attn_mask_attends_to_nothing(need_weights):
    layer, inputs = layer_and_inputs("MultiHeadAttention")
    mask = torch.zeros(NUM_QUERIES, NUM_KVPAIRS, dtype=torch.bool)
    output = layer(**inputs, attn_mask=mask, need_weights=need_weights)
    torch.testing.assert_close(output, reference_output(layer, inputs, mask))  # W_o(0): W_o's bias alone


def test_attention_mask_needs_valid_lens_and_attn_mask_on_one_device():
    valid_lens = torch.tensor([1, 2])
    attn_mask = torch.ones(NUM_QUERIES, NUM_KVPAIRS, dtype=torch.bool, device="meta")
    with pytest.raises(ValueError, match=msg("attn_mask is on meta but valid_lens is on cpu")):
        attention_mask(BATCH, NUM_QUERIES, NUM_KVPAIRS, valid_lens, attn_mask=attn_mask)


# --- head reshapes -------------------------------------------------------------------------


def test_transpose_qkv_needs_num_heads_to_divide_the_features():
    X = torch.randn(BATCH, NUM_QUERIES, NUM_HIDDENS)
    with pytest.raises(ValueError, match=msg("num_heads=3", f"num_hiddens={NUM_HIDDENS}", tuple(X.shape))):
        transpose_qkv(X, 3)


def test_transpose_output_needs_a_first_axis_that_is_a_multiple_of_num_heads():
    X = torch.randn(5, NUM_QUERIES, 4)
    with pytest.raises(ValueError, match=msg(f"num_heads={NUM_HEADS}", "got 5", tuple(X.shape))):
        transpose_output(X, NUM_HEADS)


@pytest.mark.parametrize("num_heads", [0, -1, 2.0])
@pytest.mark.parametrize("function", [transpose_qkv, transpose_output], ids=lambda f: f.__name__)
def test_head_reshapes_need_a_positive_int_num_heads(function, num_heads):
    error = TypeError if isinstance(num_heads, float) else ValueError
    with pytest.raises(error, match=msg("num_heads", "positive int", f"got {num_heads!r}")):
        function(torch.randn(BATCH * NUM_HEADS, NUM_QUERIES, NUM_HIDDENS), num_heads)


# --- mask builders -------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "name", "value"), [
    pytest.param((-1,), "num_queries", -1, id="num_queries=-1"),
    pytest.param((3, -2), "num_kvpairs", -2, id="num_kvpairs=-2"),
    pytest.param((2.0,), "num_queries", 2.0, id="num_queries=2.0"),
])
def test_causal_mask_needs_sizes_of_at_least_0(args, name, value):  # 0, an empty sequence, as the layers take
    error = TypeError if isinstance(value, float) else ValueError
    with pytest.raises(error, match=msg(name, "an int >= 0", f"got {value!r}")):
        causal_mask(*args)


def test_causal_mask_rejects_bool_size():
    with pytest.raises(TypeError, match=msg("num_queries", "an int >= 0", "got True")):
        causal_mask(True)


@pytest.mark.parametrize("num_kvpairs", [-1, 2.5])
def test_valid_lens_mask_checks_num_kvpairs(num_kvpairs):
    error = TypeError if isinstance(num_kvpairs, float) else ValueError
    with pytest.raises(error, match=msg("num_kvpairs", f"got {num_kvpairs!r}")):
        valid_lens_mask(torch.tensor([0, 1]), num_kvpairs)


# --- bridge to torch.nn.MultiheadAttention -------------------------------------------------


def test_to_torch_mha_needs_query_size_equal_to_num_hiddens():
    mha = MultiHeadAttention(**mha_sizes())
    with pytest.raises(ValueError, match=msg(f"num_hiddens={NUM_HIDDENS}", f"query_size={QUERY_SIZE}")):
        to_torch_mha(mha)


def test_to_torch_mha_accepts_query_size_equal_to_num_hiddens():
    mha = MultiHeadAttention(**mha_sizes(query_size=NUM_HIDDENS))
    assert isinstance(to_torch_mha(mha), nn.MultiheadAttention)


def test_causal_must_be_a_bool():
    layer, inputs = layer_and_inputs("MultiHeadAttention")
    with pytest.raises(TypeError, match=msg("causal", "True or False", "got 'yes'")):
        layer(**inputs, causal="yes")


def test_to_torch_mha_needs_an_mha_lib_layer():
    with pytest.raises(TypeError, match=msg("mha", "MultiHeadAttention", "got str")):
        to_torch_mha("x")


def test_to_torch_mha_of_an_uncalled_lazy_layer_says_it_was_not_called_yet():
    # d2l 1.0's form: the input sizes come from the first call; before it LazyLinear's in_features is a placeholder 0
    with pytest.raises(ValueError, match=msg("mha was built in d2l 1.0's form and has not been called yet")):
        to_torch_mha(MultiHeadAttention(NUM_HIDDENS, NUM_HEADS))


def test_dot_product_attention_needs_at_least_two_axes():
    q = torch.randn(4)
    with pytest.raises(ValueError, match=msg("queries", "at least 2 axes", "got shape (4,)")):
        dot_product_attention(q, q, q)


@pytest.mark.parametrize("target", ["dot_product_attention", "DotProductAttention"])
def test_queries_and_keys_of_0_features_are_refused(target):
    # scores are divided by sqrt(d_k): d_k = 0 has no scale (it was a ZeroDivisionError)
    queries, keys, values = torch.randn(BATCH, NUM_QUERIES, 0), torch.randn(BATCH, NUM_KVPAIRS, 0), torch.randn(
        BATCH, NUM_KVPAIRS, VALUE_SIZE)
    call = dot_product_attention if target == "dot_product_attention" else DotProductAttention()
    with pytest.raises(ValueError, match=msg("queries and keys must have at least 1 feature d_k",
                                             f"got queries {tuple(queries.shape)} and keys {tuple(keys.shape)}")):
        call(queries, keys, values)
