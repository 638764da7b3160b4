"""The exercises of chapter 05, the interactive explorer.

``check_num_heads_options``, ``check_explorer_split_shape``, ``check_mha_flops``,
``check_score_memory_answer``, ``check_grey_cells``
"""

from __future__ import annotations

from typing import Any

from mha_lib.masks import causal_mask

from ..anatomy import mha_flops
from ..i18n import _
from ._engine import NOT_YET, _plain, check_answer, check_formula, contains_ellipsis, report

__all__ = ['check_explorer_split_shape', 'check_grey_cells', 'check_mha_flops', 'check_num_heads_options',
           'check_score_memory_answer']


def check_num_heads_options(answer: Any) -> None:
    """Exercise: the values the ``num_heads`` slider offers when ``num_hiddens = 48``."""
    expected = [1, 2, 3, 4, 6, 8, 12, 16, 24, 48]
    hints = {
        tuple(expected[1:]): _("1 divides 48 too: a single head of 48 features is allowed."),
        tuple(expected[:-1]): _("48 divides 48 too: 48 heads of one feature each are allowed."),
        tuple(expected[1:-1]): _("1 and 48 divide 48 too: one head of 48 features, or 48 heads of one."),
        (1, 2, 4, 8, 16, 48): _("3, 6, 12 and 24 divide 48 as well: 48 = 2^4 * 3, so the divisors mix powers of 2 "
                                "and 3."),
        (2, 4, 8, 16, 32, 48): _("32 does not divide 48 (48 / 32 = 1.5); the slider offers only divisors."),
    }
    values = answer if isinstance(answer, set) else _plain(answer)  # a tensor or numpy array -> a tuple of numbers
    if not contains_ellipsis(values):
        if not isinstance(values, (tuple, set)) or not all(_is_number(value) for value in values):
            report(_(NOT_YET) + _("write the num_heads options as a list of numbers, [..., ..., ...], one for each "
                                  "value the slider offers."))
            return
        # any order: sorted, and 2.0 counts as 2
        values = tuple(sorted(int(value) if float(value).is_integer() else value for value in values))
        if values != tuple(expected) and values not in hints:
            report(_(NOT_YET) + _divisor_hint(values))
            return
    check_answer(values, tuple(expected), name=_("the num_heads options"), hints=hints,
                 success=_("the divisors of 48; each one gives a whole head_dim = 48 / num_heads."))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _divisor_hint(answer: tuple[float, ...]) -> str:
    """A hint for a list of numbers that is not the divisors of 48, without giving away how many there are."""
    fractions = [a for a in answer if not float(a).is_integer()]
    if fractions:
        return _("{wrong} cannot be num_heads: a layer has a whole number of heads, and the slider offers only the "
                 "whole numbers that divide 48.").format(wrong=fractions)
    wrong = [a for a in answer if a <= 0 or 48 % a != 0]
    if wrong:
        examples = ", ".join(f"48 / {a} = {48 / a:g}" if a > 0 else _("{count} heads").format(count=a)
                             for a in wrong[:3])
        return _("{wrong} cannot be num_heads: the slider offers only the numbers that divide 48 exactly, so that "
                 "head_dim = 48 / num_heads is whole ({examples}).").format(wrong=wrong, examples=examples)
    if answer == (1, 2, 4, 8, 16):
        return _("these powers of two divide 48, but so do 3, 6, 12, 24 and 48: 48 = 2^4 * 3.")
    if len(set(answer)) != len(answer):
        return _("each value appears once on the slider: remove the repeated numbers.")
    return _("every number in your list divides 48, but some divisors are missing: try each number from 1 to 48 "
             "(48 = 2^4 * 3, so the divisors mix powers of 2 and 3).")


def check_explorer_split_shape(answer: Any) -> None:
    """Exercise: the split-heads shape of the queries for d=48, h=6, batch_size=3, num_queries=5."""
    check_answer(answer, (18, 5, 8), name=_("the shape"), hints={
        (3, 6, 5, 8): _("that is the 4-D layout (batch, heads, queries, head_dim); transpose_qkv folds the heads "
                        "into the batch axis: (batch_size * num_heads, num_queries, head_dim)."),
        (3, 5, 8): _("the heads are folded into the batch axis, so the first axis is batch_size * num_heads = 18."),
        (18, 5, 6): _("the last axis is head_dim = num_hiddens / num_heads = 48 / 6, not num_heads."),
        (18, 8, 5): _("the queries come before the features: (batch_size * num_heads, num_queries, head_dim)."),
        (18, 5, 48): _("each head sees only its slice: head_dim = 48 / 6 features, not all 48."),
        (3, 5, 48): _("that is the shape before the split: transpose_qkv folds the 6 heads into the batch axis "
                      "(3 * 6 = 18) and gives each head 48 / 6 = 8 features."),
    }, success=_("(batch_size * num_heads, num_queries, head_dim) = (3 * 6, 5, 48 / 6)."))


def _mha_flops_total(batch_size: int, num_queries: int, num_kvpairs: int, num_hiddens: int) -> int:
    return mha_flops(batch_size, num_queries, num_kvpairs, num_hiddens, num_heads=1)["total"]


def check_mha_flops(fn: Any) -> None:
    """Exercise: ``my_mha_flops(batch_size, num_queries, num_kvpairs, num_hiddens)``, the total FLOPs of one layer."""
    cases = [{"batch_size": 1, "num_queries": 2, "num_kvpairs": 3, "num_hiddens": 4},
             {"batch_size": 2, "num_queries": 6, "num_kvpairs": 8, "num_hiddens": 64},
             {"batch_size": 3, "num_queries": 128, "num_kvpairs": 16, "num_hiddens": 512}]
    check_formula(fn, _mha_flops_total, cases, name="my_mha_flops", hints={
        lambda b, n_q, n_kv, d: _mha_flops_total(b, n_q, n_kv, d) // 2:
            _("you counted one FLOP per multiply-add; count two (a multiply and an add), as PyTorch does."),
        lambda b, n_q, n_kv, d: _mha_flops_total(b, n_q, n_kv, d) - 2 * b * n_q * d * d:
            _("one projection is missing: W_q, W_k, W_v and the output projection W_o each cost 2 * rows * d^2."),
        lambda b, n_q, n_kv, d: _mha_flops_total(b, n_q, n_kv, d) - 2 * b * n_q * n_kv * d:
            _("attention has TWO products: the scores Q K^T and the weighted sum weights @ V."),
        lambda b, n_q, n_kv, d: 4 * b * (n_q + n_kv) * d * d:
            _("you counted the four projections only; attention itself adds two products, the scores Q K^T and "
              "weights @ V, each 2 * b * n_q * n_kv * d FLOPs."),
        lambda b, n_q, n_kv, d: 8 * b * n_q * d * d + 4 * b * n_q * n_q * d:
            _("the keys and values have num_kvpairs rows, not num_queries: W_k and W_v cost 2 * b * n_kv * d^2 "
              "each, and the products 2 * b * n_q * n_kv * d each."),
        **_per_head_attention_hints(),
    }, success=_("4 * b * (n_q + n_kv) * d^2 for the projections + 4 * b * n_q * n_kv * d for attention."))


def _per_head_attention_hints() -> dict:
    """Hints for attention counted for ONE head of head_dim = d / h (or d // h), for the h a reader may have in mind.

    The projections are right, the attention part is 4 * b * n_q * n_kv * (d / h): the reader saw that each head
    works on d / h features and forgot that there are h heads, which is the "why?" of the exercise.
    """
    hints = {}
    for num_heads in (2, 4, 8, 16):
        hint = _("you counted the attention of ONE head, head_dim = d / {h} features: all {h} heads do it, and {h} "
                 "x (d / {h}) = d, so attention costs 4 * b * n_q * n_kv * d whatever the number of heads. That is "
                 "why h does not appear.").format(h=num_heads)
        hints[lambda b, n_q, n_kv, d, h=num_heads: 4 * b * (n_q + n_kv) * d * d + 4 * b * n_q * n_kv * (d / h)] = hint
        hints[lambda b, n_q, n_kv, d, h=num_heads: 4 * b * (n_q + n_kv) * d * d + 4 * b * n_q * n_kv * (d // h)] = hint
    return hints


def check_score_memory_answer(answer: Any) -> None:
    """Exercise: bytes of float32 scores for 16 heads, batch 8, 1024 tokens."""
    check_answer(answer, 536_870_912, name=_("the number of bytes"), hints={
        134_217_728: _("that is the number of scores; each float32 score takes 4 bytes."),
        33_554_432: _("every head has its own score matrix: multiply by num_heads = 16."),
        1_073_741_824: _("that counts the scores and the softmax weights together; the question asks for the "
                         "scores only."),
        512: _("that is the size in MiB (2^20 bytes each); the question asks for the number of bytes: "
               "512 * 2^20."),
        0.5: _("that is the size in GiB (2^30 bytes each); the question asks for the number of bytes."),
        268_435_456: _("that is float16, 2 bytes per score; float32 takes 4 bytes per score."),
        524_288: _("the score matrix is num_queries x num_kvpairs = 1024 x 1024 per head and sequence: it grows "
                   "as n^2, not n."),
    }, success=_("8 * 16 * 1024 * 1024 * 4 bytes = 512 MiB, for one layer's scores alone."))


def check_grey_cells(answer: Any) -> None:
    """Exercise: the grey (masked) cells of one panel with causal=True, 8 queries, 4 keys, valid_len = 4."""
    expected = int((~causal_mask(8, 4)).sum())  # query i sees keys 0..i: top-left aligned, as in chapter 02
    bottom_right = sum(4 - max(0, min(4, i - 3)) for i in range(8))  # if query i saw keys 0..i-4 only
    check_answer(answer, expected, name=_("the number of grey cells"), hints={
        bottom_right: _("that aligns the causal mask at the bottom right (the last query with the last key). "
                        "mha_lib.causal_mask aligns it at the top left: query i sees keys 0..i."),
        32 - expected: _("that counts the cells a query may see; the grey ones are the others."),
        0: _("valid_len = 4 masks nothing here, but causal does: query 0 may not see keys 1, 2 and 3."),
        3: _("3 counts the queries that miss a key; the question counts the grey CELLS: how many keys does each of "
             "those queries miss?"),
        28: _("that is the upper triangle of an 8 x 8 panel; with 4 keys the panel is 8 x 4."),
        32: _("32 is every cell of the 8 x 4 panel. valid_len = 4 hides no key here; only the causal mask hides "
              "cells: the keys after queries 0, 1 and 2."),
    }, success=_("{expected}: queries 0, 1 and 2 miss 3, 2 and 1 keys; from query 3 on every query sees "
                 "all 4.").format(expected=expected))
