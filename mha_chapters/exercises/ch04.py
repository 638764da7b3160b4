"""The exercises of chapter 04, the multi-head attention module.

``check_blend_answer``, ``check_key_projection``, ``check_mha_shapes``, ``check_mha_parameter_answer``,
``check_count_mha_parameters``, ``check_mha_forward``
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from mha_lib.functional import masked_softmax, transpose_output, transpose_qkv
from mha_lib.modules import MultiHeadAttention

from ..anatomy import count_parameters
from ..i18n import _
from ..why_heads import two_place_inputs, two_place_layer
from ._engine import CORRECT, NOT_YET, check_answer, check_formula, check_function, report

__all__ = ['check_blend_answer', 'check_count_mha_parameters', 'check_key_projection', 'check_mha_forward',
           'check_mha_parameter_answer', 'check_mha_shapes']


def check_blend_answer(answer: Any) -> None:
    """Exercise: the one-head output when the attention weights are 1/2 on positions 0 and 1 of the example."""
    check_answer(answer, (5, 0, 5, 0), name=_("the output"), hints={
        (8, 0, 8, 0): _("that is position 1's content alone; with weight 1/2 on each, the head averages the contents "
                        "of positions 0 and 1, (2, 0) and (8, 0), feature by feature."),
        (10, 0, 10, 0): _("the weights sum to 1: one head returns a weighted AVERAGE of the values, not their sum."),
        (2, 0, 8, 0): _("that is what two heads could return, one per position. One head has one softmax, so it "
                        "returns one average of the two contents, copied into both halves by W_v."),
        (5, 0): _("the output has num_hiddens = 4 features: W_v turns the content (a, b, 0, 0) into (a, b, a, b)."),
    }, success=_("(2, 0) and (8, 0) blend into (5, 0), and W_v copies it into both halves: (5, 0, 5, 0). "
                 "Swap the two contents and the output stays the same."))


def _head_weights(matrix: Tensor, first: int, second: int) -> tuple[float, float]:
    layer = two_place_layer(2)
    with torch.no_grad():
        layer.W_k.weight.copy_(matrix)
        layer(*two_place_inputs())
    weights = layer.attention_weights[0, :, 0]  # (num_heads, num_kvpairs) of the one query
    return weights[0, first].item(), weights[1, second].item()


def _picks(matrix: Tensor, first: int, second: int) -> bool:
    return min(_head_weights(matrix, first, second)) >= 0.9


def check_key_projection(fn: Any) -> None:
    """Exercise: ``key_projection(first, second)``, a ``W_k.weight``: head 0 picks ``first``, head 1 ``second``."""
    cases = [(1, 3), (0, 2), (3, 0), (2, 2)]
    if not callable(fn):
        check_function(fn, lambda *a: None, cases, name="key_projection", arg_names=["first", "second"])
        return
    for first, second in cases:
        where = _("for first={first}, second={second}").format(first=first, second=second)
        try:
            matrix = fn(first, second)
        except NotImplementedError:
            report(_(NOT_YET) + _("key_projection still raises NotImplementedError. Write its body in the cell above "
                                 "(delete the raise line), run that cell, then run this one again."))
            return
        except Exception as error:  # noqa: BLE001 - any error in the reader's code becomes a hint
            report(_(NOT_YET) + _("key_projection raised {kind}: {message} ({where}).").format(
                kind=type(error).__name__, message=str(error).splitlines()[0], where=where))
            return
        if not isinstance(matrix, Tensor) or matrix.shape != (4, 4) or not matrix.is_floating_point():
            got = tuple(matrix.shape) if isinstance(matrix, Tensor) else type(matrix).__name__
            report(_(NOT_YET) + _("key_projection should return a float tensor of shape (4, 4), like W_k.weight; got "
                                 "{got} ({where}). Start from torch.zeros(4, 4).").format(got=got, where=where))
            return
        if _picks(matrix, first, second):
            continue
        if _picks(matrix.T, first, second):
            report(_(NOT_YET) + _("you wrote the matrix that multiplies the keys, W_k; nn.Linear stores its transpose "
                                 "in W_k.weight (out_features, in_features): row i makes projected feature i, "
                                 "column j reads input feature j. Transpose it ({where}).").format(where=where))
        elif _picks(matrix, second, first):
            report(_(NOT_YET) + _("the heads are swapped: head 0 owns projected features 0-1 (rows 0 and 1 of "
                                 "W_k.weight), head 1 owns features 2-3; head 0 must pick first ({where}).").format(
                where=where))
        else:
            head0, head1 = _head_weights(matrix, first, second)
            report(_(NOT_YET) + _("head 0 gives position {first} weight {head0:.2f} and head 1 gives position {second} "
                                 "weight {head1:.2f}; both should be at least 0.9 ({where}). The projected query is "
                                 "(10, 0, 10, 0): only features 0 (head 0) and 2 (head 1) can raise a score, so put "
                                 "the 1s in rows 0 and 2.").format(first=first, head0=head0, second=second,
                                                                    head1=head1, where=where))
        return
    report(_(CORRECT) + _("row 0 of W_k.weight reads position `first` into head 0's scoring feature, row 2 reads "
                         "`second` into head 1's: each head picks its own position with weight above 0.9."))


def check_mha_shapes(answer: Any) -> None:
    """Exercise: output and ``.attention_weights`` shapes of MultiHeadAttention(16, 12, 24, 48, 6), b=4, 3 q, 7 kv."""
    check_answer(answer, ((4, 3, 48), (4, 6, 3, 7)), name=_("the two shapes"), hints={
        ((4, 3, 24), (4, 6, 3, 7)): _("the output comes from W_o, which maps to num_hiddens = 48 features, "
                                      "whatever the size of the values."),
        ((4, 3, 12), (4, 6, 3, 7)): _("the output has as many rows as the queries, but num_hiddens = 48 features, "
                                      "not query_size."),
        ((4, 3, 48), (24, 3, 7)): _("(24, 3, 7) is the folded layout inside the layer; .attention_weights is "
                                    "unfolded to (batch_size, num_heads, num_queries, num_kvpairs)."),
        ((4, 3, 48), (4, 6, 7, 3)): _("weights have one row per query and one column per key: "
                                      "(batch_size, num_heads, num_queries, num_kvpairs)."),
        ((4, 7, 48), (4, 6, 7, 7)): _("the output has one row per QUERY (3), not per key-value pair."),
    }, success=_("output (batch_size, num_queries, num_hiddens); weights (batch_size, num_heads, queries, kvpairs)."))


def check_mha_parameter_answer(answer: Any) -> None:
    """Exercise: the parameter count of ``MultiHeadAttention(256, 256, 256, 512, 8, bias=True)``."""
    check_answer(answer, 657_408, name=_("the parameter count"), hints={
        655_360: _("you forgot the biases: bias=True gives each of the four projections num_hiddens = 512 biases."),
        1_050_624: _("that is 4 * 512^2 + 4 * 512, as if the inputs had 512 features. W_q, W_k and W_v take 256 "
                     "input features: each is 256 x 512 (plus 512 biases); only W_o is 512 x 512."),
        1_048_576: _("that is 4 * 512^2: W_q, W_k and W_v take 256 input features (256 x 512 each), and bias=True "
                     "adds biases."),
        655_872: _("bias=True gives ALL four projections a bias of num_hiddens = 512, not only W_o: "
                   "W_q, W_k and W_v have theirs too."),
        5_259_264: _("the number of heads does not change the count: the heads split num_hiddens between them."),
    }, success=_("3 * (256 * 512 + 512) + (512 * 512 + 512) = 657408; the number of heads plays no part."))


def _params_reference(num_hiddens: int, bias: bool) -> int:
    with torch.device("meta"):  # counts the real layer's parameters without allocating them
        layer = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads=1, bias=bias)
    return count_parameters(layer)


def check_count_mha_parameters(fn: Any) -> None:
    """Exercise: ``count_mha_parameters(num_hiddens, bias)`` for a layer with query/key/value size = num_hiddens."""
    cases = [{"num_hiddens": 8, "bias": False}, {"num_hiddens": 8, "bias": True},
             {"num_hiddens": 100, "bias": True}, {"num_hiddens": 512, "bias": False}]
    check_formula(fn, _params_reference, cases, name="count_mha_parameters", hints={
        lambda num_hiddens, bias: 4 * num_hiddens ** 2:
            _("you ignored bias: with bias=True each of the four projections adds num_hiddens biases."),
        lambda num_hiddens, bias: 3 * num_hiddens ** 2 + (3 * num_hiddens if bias else 0):
            _("you counted three projections; do not forget the output projection W_o (4 in all)."),
        lambda num_hiddens, bias: 4 * num_hiddens ** 2 + (num_hiddens if bias else 0):
            _("each of the four projections has its own bias vector: 4 * num_hiddens biases."),
        lambda num_hiddens, bias: 4 * num_hiddens ** 2 + (4 * num_hiddens ** 2 if bias else 0):
            _("a bias has one number per output feature (num_hiddens), not a whole matrix."),
    }, success=_("4 * num_hiddens^2 weights, plus 4 * num_hiddens biases when bias=True."))


def _mha_variant(mha: MultiHeadAttention, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor, *,
                 tiled: bool = False, scale: str = "head_dim", output_projection: bool = True) -> Tensor:
    h = mha.num_heads
    Q, K, V = (transpose_qkv(X, h) for X in (mha.W_q(queries), mha.W_k(keys), mha.W_v(values)))
    lens = valid_lens.repeat(h) if tiled else valid_lens.repeat_interleave(h)
    d = {"head_dim": Q.shape[-1], "num_hiddens": Q.shape[-1] * h, "none": 1}[scale]
    weights = masked_softmax(Q @ K.transpose(1, 2) / math.sqrt(d), lens)
    output = transpose_output(weights @ V, h)
    return mha.W_o(output) if output_projection else output


def _mha_cases() -> list[tuple]:
    generator = torch.Generator().manual_seed(2)
    cases = []
    for batch_size, num_queries, num_kvpairs, sizes, num_hiddens, num_heads, lens in [
        (2, 3, 5, (6, 6, 6), 8, 2, [2, 5]), (3, 4, 4, (5, 7, 3), 12, 3, [4, 1, 3]), (2, 2, 6, (4, 4, 4), 16, 4, [6, 3])
    ]:
        torch.manual_seed(int(torch.randint(0, 10_000, (1,), generator=generator)))
        mha = MultiHeadAttention(sizes[1], sizes[0], sizes[2], num_hiddens, num_heads).eval()
        cases.append((mha, torch.randn(batch_size, num_queries, sizes[0], generator=generator),
                      torch.randn(batch_size, num_kvpairs, sizes[1], generator=generator),
                      torch.randn(batch_size, num_kvpairs, sizes[2], generator=generator), torch.tensor(lens)))
    return cases


def check_mha_forward(fn: Any) -> None:
    """Exercise: ``my_mha_forward(mha, queries, keys, values, valid_lens)``, the same as ``mha(...)``."""
    with torch.random.fork_rng():
        cases = _mha_cases()
    check_function(fn, lambda mha, q, k, v, lens: mha(q, k, v, lens), cases, name="my_mha_forward",
                   arg_names=["mha", "queries", "keys", "values", "valid_lens"], hints={
        lambda *a: _mha_variant(*a, tiled=True):
            _("the heads of one sentence got the valid length of another: use valid_lens.repeat_interleave(num_heads),"
              " not repeat (the heads of one sentence sit next to each other in the folded batch)."),
        lambda *a: _mha_variant(*a, output_projection=False):
            _("you stopped after concatenating the heads: step 5 is the output projection, mha.W_o(...)."),
        lambda *a: _mha_variant(*a, scale="num_hiddens"):
            _("you scaled by sqrt(num_hiddens); each head takes dot products of head_dim features, so divide by "
              "sqrt(head_dim)."),
        lambda *a: _mha_variant(*a, scale="none"):
            _("the scores are not scaled: divide them by sqrt(head_dim) before the softmax."),
    }, success=_("project, split heads, attend with repeat_interleave'd valid_lens, concatenate, project: "
                 "the same as mha(...)."))
