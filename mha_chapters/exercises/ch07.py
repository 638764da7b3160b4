"""The exercises of chapter 07, batching.

``check_call_counts``, ``check_score_bytes_answer``, ``check_attention_flops``, ``check_core_peak``
"""

from __future__ import annotations

from typing import Any

from ..anatomy import mha_flops
from ..i18n import _
from ._engine import check_answer, check_formula

__all__ = ["check_attention_flops", "check_call_counts", "check_core_peak", "check_score_bytes_answer"]


def check_call_counts(answer: Any) -> None:
    """Exercise: calls of the per-sample loop, the per-head loop and the batched version for b=64, h=8."""
    check_answer(answer, (64, 8, 1), name=_("the numbers of calls"), hints={
        (64, 512, 1): _("the loop over heads runs one call per HEAD, each with the whole batch inside it: 8 calls."),
        (512, 8, 1): _("the loop over samples runs one call per sample (64); the heads of a sample go together."),
        (64, 8, 8): _("the batched version folds the heads into the batch axis: one call for everything."),
        (1, 8, 64): _("the order is (loop over samples, loop over heads, batched)."),
        (8, 64, 1): _("the order is (loop over samples, loop over heads, batched): 64 samples, 8 heads."),
        (64, 8, 512): _("the batched version makes ONE call; the 64 * 8 = 512 small attentions are its batch."),
    }, success=_("batch_size calls, num_heads calls, and one call with (batch_size * num_heads) samples."))


def check_score_bytes_answer(answer: Any) -> None:
    """Exercise: bytes of one float16 score tensor for batch_size=8, 12 heads, 4096 tokens."""
    check_answer(answer, 3_221_225_472, name=_("the number of bytes"), hints={
        6_442_450_944: _("6 GiB is twice the answer: either 4 bytes per score (float32), or the scores and the "
                         "softmax weights together. The question asks for ONE float16 tensor, the scores: 2 bytes "
                         "per score."),
        1_610_612_736: _("that is the number of scores; each float16 score takes 2 bytes."),
        268_435_456: _("every head has its own score matrix: multiply by num_heads = 12."),
        786_432: _("the score matrix is 4096 x 4096 per head and sequence: it grows as n^2, not n."),
        3: _("that is the size in GiB (2^30 bytes each); the question asks for the number of bytes: 3 * 2^30."),
        3072: _("that is the size in MiB (2^20 bytes each); the question asks for the number of bytes: "
                "3072 * 2^20."),
    }, success=_("8 * 12 * 4096 * 4096 * 2 bytes = 3 GiB, even in float16: the reason for fused kernels."))


def _attention_flops(batch_size: int, seq_len: int, num_hiddens: int) -> int:
    flops = mha_flops(batch_size, seq_len, seq_len, num_hiddens, num_heads=1)
    return flops["scores"] + flops["weights @ values"]


def check_attention_flops(fn: Any) -> None:
    """Exercise: ``my_attention_flops(batch_size, seq_len, num_hiddens)``, the two products of self-attention."""
    cases = [{"batch_size": 1, "seq_len": 3, "num_hiddens": 2}, {"batch_size": 32, "seq_len": 128, "num_hiddens": 64},
             {"batch_size": 2, "seq_len": 4096, "num_hiddens": 768}]
    check_formula(fn, _attention_flops, cases, name="my_attention_flops", hints={
        lambda b, n, d: 2 * b * n * n * d:
            _("attention has TWO products (Q K^T and weights @ V), or you counted one FLOP per multiply-add: "
              "the answer is 2 products x 2 FLOPs x b * n^2 * d."),
        lambda b, n, d: b * n * n * d:
            _("count both products, Q K^T and weights @ V, and two FLOPs (a multiply and an add) for each "
              "multiply-add."),
        lambda b, n, d: 8 * b * n * d * d + 4 * b * n * n * d:
            _("you counted the projections W_q, W_k, W_v and W_o too; the question asks for the two products of "
              "attention only, Q K^T and weights @ V."),
        lambda b, n, d: 4 * b * n * d:
            _("every query meets every key: each product has n * n * d multiply-adds, so the count grows as n^2."),
    }, success=_("4 * batch_size * seq_len^2 * num_hiddens, whatever the number of heads."))


def check_core_peak(answer: Any) -> None:
    """Exercise: peak float32 GFLOP/s of one core with 8 lanes (AVX2), 2 FMA units, at 3 GHz."""
    check_answer(answer, 96, name=_("the peak in GFLOP/s"), hints={
        48: _("half of the peak: either you counted one FMA unit (the core has 2) or one FLOP per FMA "
              "(a fused multiply-add is 2 FLOPs, a multiply and an add)."),
        24: _("a quarter of the peak: count both FMA units, and 2 FLOPs (a multiply and an add) per FMA."),
        96e9: _("that is in FLOP/s; the question asks for GFLOP/s: divide by 1e9."),
        192: _("an AVX2 register is 256 bits wide: 8 float32 lanes, not 16 (16 is AVX-512)."),
        12: _("each FMA instruction works on all 8 lanes of the register at once: multiply by 8."),
        6: _("that is one lane of one FMA unit; the core has 8 lanes and 2 FMA units working at once."),
        3: _("the clock only says how many cycles per second; count the FLOPs in each cycle."),
    }, success=_("3e9 cycles/s x 2 FMA units x 8 lanes x 2 FLOPs = 96 GFLOP/s, 8 times the bound without "
                                   "vector units (section 5)."))
