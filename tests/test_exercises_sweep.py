"""Every checker of chapters 05-12 against wrong answers and against right answers in other forms (issue 38, item 5).

A wrong answer must get exactly one "❌ Not yet" line with a hint, never "✅ Correct" and never a traceback; a right
answer written in another form that the exercise's wording admits (a list for a tuple, a tensor or a numpy array
for a list, a float that is a whole number for an int) must get "✅ Correct". The wrong answers are the typical
mistakes of the review of 2026-11-26 (its table of exercises), the obvious ones (None, a string, the unmodified stub,
a wrong shape, a transposed or reordered answer, a number that is not whole) and answers as numpy arrays.

``python -m tests.test_exercises_sweep`` prints the table of verdicts (checker x answer -> the line) for a report.
"""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pytest
import torch
from torch.nn.attention.flex_attention import or_masks

from mha_chapters.exercises import ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch12
from mha_chapters.exercises._engine import CORRECT, GRADING_VARIABLE, NOT_YET, _same
from mha_chapters.i18n import _, set_language
from mha_chapters.toy import IGNORE
from mha_lib.flex import sink_mask_mod, sliding_window_mask_mod

GENERIC = "Check your reasoning step by step"  # the fallback hint of a predict checker: says nothing specific


def stub(*args):
    raise NotImplementedError("Exercise: write the body of stub")


def returns_none(*args):
    return None


def returns_text(*args):
    return "done"


def takes_one_argument(x):
    return x


# ---- the predict checkers: (checker, right answer) -----------------------------------------------------------------

PREDICT = {
    "05 E1 num_heads options": (ch05.check_num_heads_options, [1, 2, 3, 4, 6, 8, 12, 16, 24, 48]),
    "05 E2 split shape": (ch05.check_explorer_split_shape, (18, 5, 8)),
    "05 E4 score bytes": (ch05.check_score_memory_answer, 536_870_912),
    "05 E5 grey cells": (ch05.check_grey_cells, 6),
    "06 E1 targets": (ch06.check_task_targets, [IGNORE, 33, 13, 43, 13]),
    "07 E1 call counts": (ch07.check_call_counts, (64, 8, 1)),
    "07 E2 score bytes": (ch07.check_score_bytes_answer, 3_221_225_472),
    "07 E4 core peak": (ch07.check_core_peak, 96),
    "08 E3 valid_lens": (ch08.check_lens_that_hide_bug4, ([3, 3], [5, 5])),
    "08 E4 finfo.min - 100": (ch08.check_finfo_min_minus_100, float("-inf")),
    "09 E1 kv head": (ch09.check_kv_head_answer, (0, 0, 0, 0, 1, 1, 1, 1)),
    "09 E3 cache bytes": (ch09.check_cache_bytes_answer, 1_073_741_824),
    "10 E3 tile counts": (ch10.check_tile_counts, (8, 2)),
}


def other_forms(right):
    """The right answer as a list, a tuple, a tensor, a numpy array and in floats (whole numbers stay whole)."""
    if isinstance(right, (int, float)):
        forms = {"float": float(right), "numpy scalar": np.float64(right), "0-d tensor": torch.tensor(right),
                 "0-d numpy array": np.array(right)}
        if isinstance(right, int):
            forms["numpy int64"] = np.int64(right)
        return forms
    if isinstance(right[0], (list, tuple)):  # a pair of lists
        return {"tensors": tuple(torch.tensor(r) for r in right), "numpy arrays": tuple(np.array(r) for r in right),
                "a list of lists": [list(r) for r in right]}
    return {"list": list(right), "tuple": tuple(right), "tensor": torch.tensor(right), "numpy array": np.array(right),
            "floats": [float(r) for r in right], "float tensor": torch.tensor(right, dtype=torch.float32)}


def obvious_wrong(right):
    """None, a string, the stub's ..., and a wrong answer in each form the right one may take."""
    wrong = {"None": None, "a string": str(right), "the stub ...": ...}
    if isinstance(right, (int, float)) and math.isfinite(right):
        wrong.update({"not a whole number": right + 0.5, "as a list": [right],
                      "numpy, wrong value": np.array(right + 2), "half of it as a float": right / 2 + 0.25})
    elif isinstance(right, (list, tuple)) and not isinstance(right[0], (list, tuple)):
        wrong.update({
            "one number too few": tuple(right[:-1]),
            "one number too many": tuple(right) + (right[-1],),
            "not whole": tuple(right[:-1]) + (right[-1] + 0.5,),
            "numpy, wrong values": np.array(right) + 1,
            "a transposed (n, 1) tensor": torch.tensor(right).view(-1, 1),
            "a set": set(right) | {999},
        })
    return wrong


PREDICT_RIGHT = [(label, form, PREDICT[label][0], answer)
                 for label in PREDICT for form, answer in other_forms(PREDICT[label][1]).items()]
PREDICT_RIGHT += [
    ("08 E2 missing batch axis", "the answer", ch08.check_missing_batch_axis, ((4, 8, 1, 8), 1)),
    ("08 E2 missing batch axis", "a torch.Size and a tensor", ch08.check_missing_batch_axis,
     (torch.Size([4, 8, 1, 8]), torch.tensor(1))),
    ("05 E1 num_heads options", "reversed tensor (review)", ch05.check_num_heads_options,
     torch.tensor([48, 24, 16, 12, 8, 6, 4, 3, 2, 1])),
    ("05 E1 num_heads options", "reversed numpy array", ch05.check_num_heads_options,
     np.array([48, 24, 16, 12, 8, 6, 4, 3, 2, 1])),
    ("05 E1 num_heads options", "flipped tensor (negative-stride view)", ch05.check_num_heads_options,
     torch.tensor([1, 2, 3, 4, 6, 8, 12, 16, 24, 48]).flip(0)),
    ("05 E1 num_heads options", "a set", ch05.check_num_heads_options, {1, 2, 3, 4, 6, 8, 12, 16, 24, 48}),
    ("05 E2 split shape", "torch.Size", ch05.check_explorer_split_shape, torch.Size([18, 5, 8])),
    ("05 E4 score bytes", "512 * 2**20", ch05.check_score_memory_answer, 512 * 2 ** 20),
    ("06 E1 targets", "task.targets' (1, 5) tensor", ch06.check_task_targets,
     torch.tensor([[IGNORE, 33, 13, 43, 13]])),
    ("06 E1 targets", "(1, 5) numpy array", ch06.check_task_targets, np.array([[IGNORE, 33, 13, 43, 13]])),
    ("06 E1 targets", "numpy array (review)", ch06.check_task_targets, np.array([-100, 33, 13, 43, 13])),
    ("07 E4 core peak", "the solution's float", ch07.check_core_peak, 3e9 * 2 * (256 // 32) * 2 / 1e9),
    ("08 E3 valid_lens", "zero lengths", ch08.check_lens_that_hide_bug4, ([0, 0], [4, 4])),
    ("08 E4 finfo.min - 100", "float16 tensor", ch08.check_finfo_min_minus_100,
     torch.tensor(float("-inf"), dtype=torch.float16)),
    ("08 E4 finfo.min - 100", "np.float16(-inf)", ch08.check_finfo_min_minus_100, np.float16(-np.inf)),
    ("08 E4 finfo.min - 100", "-math.inf", ch08.check_finfo_min_minus_100, -math.inf),
    ("09 E3 cache bytes", "2**30", ch09.check_cache_bytes_answer, 2 ** 30),
]

PREDICT_WRONG = [(label, form, PREDICT[label][0], answer, None)
                 for label in PREDICT for form, answer in obvious_wrong(PREDICT[label][1]).items()
                 if not (label.startswith("08 E4") and form == "a string")]  # below, with its own hint
# the typical wrong answers, each with a phrase of the hint it must get
PREDICT_WRONG += [
    ("05 E1 num_heads options", "powers of 2 to 64 (review)", ch05.check_num_heads_options, [1, 2, 4, 8, 16, 32, 64],
     "[32, 64] cannot be num_heads"),
    ("05 E1 num_heads options", "a number", ch05.check_num_heads_options, 48, "as a list"),
    ("05 E1 num_heads options", "a string", ch05.check_num_heads_options, "1, 2, 3, 4, 6", "as a list"),
    ("05 E1 num_heads options", "a fraction of a head", ch05.check_num_heads_options,
     [1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 48], "[1.5] cannot be num_heads"),
    ("05 E1 num_heads options", "numpy, powers of 2", ch05.check_num_heads_options, np.array([1, 2, 4, 8, 16, 32]),
     "[32] cannot be num_heads"),
    ("05 E1 num_heads options", "tensor without 1", ch05.check_num_heads_options,
     torch.tensor([48, 24, 16, 12, 8, 6, 4, 3, 2]), "1 divides 48 too"),
    ("05 E2 split shape", "4-D layout", ch05.check_explorer_split_shape, (3, 6, 5, 8), "4-D layout"),
    ("05 E2 split shape", "before the split", ch05.check_explorer_split_shape, (3, 5, 48), "before the split"),
    ("05 E2 split shape", "numpy, queries last", ch05.check_explorer_split_shape, np.array([18, 8, 5]),
     "the queries come before the features"),
    ("05 E2 split shape", "reordered", ch05.check_explorer_split_shape, (5, 18, 8), "in another order"),
    ("05 E4 score bytes", "MiB", ch05.check_score_memory_answer, 512, "size in MiB"),
    ("05 E4 score bytes", "GiB", ch05.check_score_memory_answer, 0.5, "size in GiB"),
    ("05 E4 score bytes", "the number of scores", ch05.check_score_memory_answer, 134_217_728, "number of scores"),
    ("05 E4 score bytes", "a byte too many", ch05.check_score_memory_answer, 536_870_913, GENERIC),
    ("05 E5 grey cells", "bottom-right alignment (review)", ch05.check_grey_cells, 22, "bottom right"),
    ("05 E5 grey cells", "the visible cells (review)", ch05.check_grey_cells, 26, "a query may see"),
    ("05 E5 grey cells", "8 x 8 triangle (review)", ch05.check_grey_cells, 28, "8 x 8 panel"),
    ("05 E5 grey cells", "rows with a grey cell (review)", ch05.check_grey_cells, 3, "queries that miss"),
    ("05 E5 grey cells", "not whole", ch05.check_grey_cells, 6.5, "not a whole number"),
    ("06 E1 targets", "token at t (review)", ch06.check_task_targets, (IGNORE, 13, 43, 13, 53), "one step BACK"),
    ("06 E1 targets", "swapped digits (review)", ch06.check_task_targets, (IGNORE, 33, 31, 34, 31), "tens digit"),
    ("06 E1 targets", "-1 for IGNORE (review)", ch06.check_task_targets, np.array([-1, 33, 13, 43, 13]),
     "not -1"),
    ("06 E1 targets", "IGNORE last", ch06.check_task_targets, [33, 13, 43, 13, IGNORE], "in another order"),
    ("07 E1 call counts", "per-head count (review)", ch07.check_call_counts, (64, 512, 1), "one call per HEAD"),
    ("07 E1 call counts", "batched 8 (review)", ch07.check_call_counts, np.array([64, 8, 8]), "one call for"),
    ("07 E1 call counts", "reversed order (review)", ch07.check_call_counts, [1, 8, 64], "the order is"),
    ("07 E1 call counts", "another order", ch07.check_call_counts, (8, 1, 64), "in another order"),
    ("07 E2 score bytes", "float32", ch07.check_score_bytes_answer, 6_442_450_944, "float32"),
    ("07 E2 score bytes", "GiB", ch07.check_score_bytes_answer, 3, "size in GiB"),
    ("07 E2 score bytes", "MiB", ch07.check_score_bytes_answer, 3072, "size in MiB"),
    ("07 E4 core peak", "one FMA unit (review)", ch07.check_core_peak, 48, "half of the peak"),
    ("07 E4 core peak", "AVX-512 lanes (review)", ch07.check_core_peak, 192, "8 float32 lanes"),
    ("07 E4 core peak", "FLOP/s (review)", ch07.check_core_peak, 96e9, "divide by 1e9"),
    ("07 E4 core peak", "no lanes (review)", ch07.check_core_peak, 12, "multiply by 8"),
    ("08 E2 missing batch axis", "with a batch axis", ch08.check_missing_batch_axis, ((1, 8, 4, 8), 4),
     "WITH a batch axis"),
    ("08 E2 missing batch axis", "the shape alone", ch08.check_missing_batch_axis, (4, 8, 1, 8), "in the form"),
    ("08 E3 valid_lens", "different lengths", ch08.check_lens_that_hide_bug4, ([3, 2], [5, 5]), "agree only when"),
    ("08 E3 valid_lens", "the same twice", ch08.check_lens_that_hide_bug4, (np.array([3, 3]), np.array([3, 3])),
     "must differ"),
    ("08 E3 valid_lens", "three numbers", ch08.check_lens_that_hide_bug4, ([3, 3, 3], [5, 5, 5]), "batch_size = 2"),
    ("08 E3 valid_lens", "one valid_lens", ch08.check_lens_that_hide_bug4, [3, 3], "give two valid_lens"),
    ("08 E3 valid_lens", "half a key", ch08.check_lens_that_hide_bug4, ([2.5, 2.5], [3, 3]), "whole number"),
    ("08 E3 valid_lens", "a negative length", ch08.check_lens_that_hide_bug4, ([-1, -1], [3, 3]), "whole number"),
    ("08 E4 finfo.min - 100", "exact arithmetic (review)", ch08.check_finfo_min_minus_100, -65604,
     "float16 cannot hold -65604"),
    ("08 E4 finfo.min - 100", "lost in rounding (review)", ch08.check_finfo_min_minus_100, -65504, "smaller than 16"),
    ("08 E4 finfo.min - 100", "NaN (review)", ch08.check_finfo_min_minus_100, float("nan"), "not NaN"),
    ("08 E4 finfo.min - 100", "NaN as a numpy array", ch08.check_finfo_min_minus_100, np.array(np.nan), "not NaN"),
    ("08 E4 finfo.min - 100", "a string", ch08.check_finfo_min_minus_100, "-inf", "float('-inf')"),
    ("09 E1 kv head", "repeat order (review)", ch09.check_kv_head_answer, (0, 1, 0, 1, 0, 1, 0, 1), "repeat()"),
    ("09 E1 kv head", "four kv heads", ch09.check_kv_head_answer, np.array([0, 0, 1, 1, 2, 2, 3, 3]), "only 2"),
    ("09 E1 kv head", "one kv head per query head", ch09.check_kv_head_answer, torch.arange(8), "multi-head"),
    ("09 E1 kv head", "counted from 1 (review)", ch09.check_kv_head_answer, [1, 1, 1, 1, 2, 2, 2, 2],
     "numbered from 0"),
    ("09 E3 cache bytes", "GiB (review)", ch09.check_cache_bytes_answer, 1, "size in GiB"),
    ("09 E3 cache bytes", "MiB (review)", ch09.check_cache_bytes_answer, 1024, "size in MiB"),
    ("09 E3 cache bytes", "keys only", ch09.check_cache_bytes_answer, 536_870_912, "keys AND values"),
    ("09 E3 cache bytes", "32 kv heads", ch09.check_cache_bytes_answer, 4_294_967_296, "32 key-value heads"),
    ("09 E3 cache bytes", "one token", ch09.check_cache_bytes_answer, 131_072, "ONE token"),
    ("10 E3 tile counts", "round down (review)", ch10.check_tile_counts, (7, 2), "round up"),
    ("10 E3 tile counts", "no skipping (review)", ch10.check_tile_counts, [8, 8], "skipped"),
    ("10 E3 tile counts", "three causal tiles (review)", ch10.check_tile_counts, np.array([8, 3]), "third tile"),
    ("10 E3 tile counts", "the skipped tiles (review)", ch10.check_tile_counts, (8, 6), "SKIPPED"),
    ("10 E3 tile counts", "reversed", ch10.check_tile_counts, torch.tensor([2, 8]), "in another order"),
]


# ---- the code checkers: typical wrong functions ----------------------------------------------------------------------

def mha_flops_right(b, n_q, n_kv, d):
    return 4 * b * (n_q + n_kv) * d * d + 4 * b * n_q * n_kv * d


def ablate_right(c, head, num_heads):
    head_dim = c.shape[-1] // num_heads
    result = c.clone()
    result[..., head * head_dim:(head + 1) * head_dim] = 0
    return result


def ablate_in_place(c, head, num_heads):
    head_dim = c.shape[-1] // num_heads
    c[..., head * head_dim:(head + 1) * head_dim] = 0
    return c


def ablate_interleaved(c, head, num_heads):
    result = c.clone()
    result[..., head::num_heads] = 0  # as if the features of the heads alternated
    return result


def ablate_reshaped(c, head, num_heads):
    b, n, d = c.shape
    split = c.reshape(b, n, num_heads, d // num_heads).clone()
    split[:, :, head] = 0
    return split.reshape(b, n, d)


def ablate_index_fill(c, head, num_heads):
    head_dim = c.shape[-1] // num_heads
    return c.index_fill(-1, torch.arange(head * head_dim, (head + 1) * head_dim), 0)


def softmax_fill(value, dim=-1):
    return lambda s, m: torch.softmax(s.masked_fill(m == 0, value), dim=dim)


def finfo_softmax(s, m):
    return torch.softmax(s.masked_fill(m == 0, torch.finfo(s.dtype).min), dim=-1)


def repeat_kv_expand(X, num_groups):  # Hugging Face's repeat_kv
    b, g, n, d = X.shape
    return X[:, :, None].expand(b, g, num_groups, n, d).reshape(b, g * num_groups, n, d)


def update_right(m, s, x):
    new_max = torch.maximum(m, x)
    return new_max, s * torch.exp(m - new_max) + torch.exp(x - new_max)


def update_python_max(m, s, x):
    new_max = max(m, x)
    return new_max, s * torch.exp(m - new_max) + torch.exp(x - new_max)


def update_logaddexp(m, s, x):
    new_max = torch.maximum(m, x)
    return new_max, torch.exp(torch.logaddexp(torch.log(s) + m, x) - new_max)


def update_where(m, s, x):
    grows = x > m
    return (torch.where(grows, x, m),
            torch.where(grows, s * torch.exp(m - x) + 1, s + torch.exp(x - m)))


def tiled_bytes_right(b, nq, nkv, dv, t):
    return b * nq * (min(t, nkv) + 2 + dv) * 4


def document_ids_right(lengths):
    return torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))


CODE_RIGHT = [
    ("05 E3 my_mha_flops", "the formula", ch05.check_mha_flops, mha_flops_right),
    ("05 E3 my_mha_flops", "in floats", ch05.check_mha_flops,
     lambda b, n_q, n_kv, d: float(mha_flops_right(b, n_q, n_kv, d))),
    ("05 E3 my_mha_flops", "as a 0-d tensor", ch05.check_mha_flops,
     lambda b, n_q, n_kv, d: torch.tensor(mha_flops_right(b, n_q, n_kv, d))),
    ("05 E3 my_mha_flops", "as numpy int64", ch05.check_mha_flops,
     lambda b, n_q, n_kv, d: np.int64(mha_flops_right(b, n_q, n_kv, d))),
    ("06 E2 my_ablate_head", "clone and assign", ch06.check_ablate_head, ablate_right),
    ("06 E2 my_ablate_head", "reshape to heads (review)", ch06.check_ablate_head, ablate_reshaped),
    ("06 E2 my_ablate_head", "index_fill (review)", ch06.check_ablate_head, ablate_index_fill),
    ("07 E3 my_attention_flops", "the formula", ch07.check_attention_flops, lambda b, n, d: 4 * b * n * n * d),
    ("07 E3 my_attention_flops", "in floats", ch07.check_attention_flops, lambda b, n, d: 4.0 * b * n * n * d),
    ("08 E1 fixed_softmax", "finfo.min", ch08.check_fixed_masked_softmax, finfo_softmax),
    ("08 E1 fixed_softmax", "float32's finfo.min, in float32", ch08.check_fixed_masked_softmax,
     lambda s, m: torch.softmax(s.float().masked_fill(m == 0, torch.finfo(torch.float32).min), dim=-1).to(s.dtype)),
    ("08 E1 fixed_softmax", "~mask.bool()", ch08.check_fixed_masked_softmax,
     lambda s, m: torch.softmax(s.masked_fill(~m.bool(), torch.finfo(s.dtype).min), dim=-1)),
    ("08 E1 fixed_softmax", "-inf then nan_to_num (review)", ch08.check_fixed_masked_softmax,
     lambda s, m: torch.nan_to_num(softmax_fill(float("-inf"))(s, m), nan=0.0)),
    ("08 E1 fixed_softmax", "torch.where in float32 (review)", ch08.check_fixed_masked_softmax,
     lambda s, m: torch.softmax(torch.where(m.bool(), s.float(), torch.finfo(torch.float32).min), dim=-1)),
    ("09 E2 my_repeat_kv_heads", "repeat_interleave", ch09.check_repeat_kv_heads,
     lambda X, r: X.repeat_interleave(r, dim=1)),
    ("09 E2 my_repeat_kv_heads", "expand then reshape (review)", ch09.check_repeat_kv_heads, repeat_kv_expand),
    ("09 E4 my_kv_cache_bytes", "the formula", ch09.check_kv_cache_formula,
     lambda L, g, d, n, b, s: 2 * L * g * d * n * b * s),
    ("10 E1 my_update", "torch.maximum", ch10.check_running_update, update_right),
    ("10 E1 my_update", "logaddexp (review)", ch10.check_running_update, update_logaddexp),
    ("10 E1 my_update", "torch.where (review)", ch10.check_running_update, update_where),
    ("10 E1 my_update", "a list of two", ch10.check_running_update, lambda m, s, x: list(update_right(m, s, x))),
    ("10 E2 my_tiled_bytes", "the formula", ch10.check_tiled_bytes, tiled_bytes_right),
    ("11 E1 my_mask_mod", "the solution", ch11.check_recent_plus_first,
     lambda b, h, q, kv: ((kv <= q) & (q - kv <= 3)) | (kv == 0)),
    ("11 E1 my_mask_mod", "or_masks (review)", ch11.check_recent_plus_first,
     or_masks(sliding_window_mask_mod(4, causal=True), sink_mask_mod(1))),
    ("11 E1 my_mask_mod", "sink inside the causal part (review)", ch11.check_recent_plus_first,
     lambda b, h, q, kv: (kv <= q) & ((q - kv <= 3) | (kv == 0))),
    ("11 E2 my_alibi_slopes", "a list", ch11.check_alibi_slopes,
     lambda n: [2 ** (-8 * (h + 1) / n) for h in range(n)]),
    ("11 E2 my_alibi_slopes", "a tensor", ch11.check_alibi_slopes,
     lambda n: 2.0 ** (-8 * torch.arange(1, n + 1) / n)),
    ("11 E2 my_alibi_slopes", "a numpy array", ch11.check_alibi_slopes,
     lambda n: 2.0 ** (-8 * np.arange(1, n + 1) / n)),
    ("11 E3 my_document_ids", "repeat_interleave", ch11.check_document_ids, document_ids_right),
    ("11 E3 my_document_ids", "ids from 1, a list (review)", ch11.check_document_ids,
     lambda lengths: [i + 1 for i, n in enumerate(lengths) for _ in range(n)]),
    ("11 E3 my_document_ids", "torch.cat of full (review)", ch11.check_document_ids,
     lambda lengths: torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])),
    ("11 E3 my_document_ids", "a numpy array", ch11.check_document_ids,
     lambda lengths: np.repeat(np.arange(len(lengths)), lengths)),
    ("12 E1 my_rotate_half", "chunk and cat", ch12.check_rotate_half,
     lambda x: torch.cat([-x.chunk(2, dim=-1)[1], x.chunk(2, dim=-1)[0]], dim=-1)),
    ("12 E1 my_rotate_half", "roll of the halves with a sign", ch12.check_rotate_half,
     lambda x: x.roll(x.shape[-1] // 2, dims=-1) * torch.cat([-torch.ones(x.shape[-1] // 2),
                                                              torch.ones(x.shape[-1] // 2)])),
    ("12 E2 my_interleaved_to_halves", "reshape, transpose, reshape", ch12.check_interleaved_to_halves,
     lambda q, k, h, kv: tuple(W.reshape(n, -1, 2, *W.shape[1:]).transpose(1, 2).reshape(W.shape)
                               for W, n in ((q, h), (k, kv)))),
    ("12 E2 my_interleaved_to_halves", "even rows then odd rows, per head", ch12.check_interleaved_to_halves,
     lambda q, k, h, kv: tuple(torch.cat([torch.cat([head[0::2], head[1::2]]) for head in W.chunk(n)])
                               for W, n in ((q, h), (k, kv)))),
    ("12 E3 shift", "a string", ch12.check_shift_answer, "c"),
    ("12 E3 shift", "a list", ch12.check_shift_answer, ["c"]),
    ("12 E3 shift", "a numpy array", ch12.check_shift_answer, np.array(["c"])),
]

CODE_CHECKERS = {
    "05 E3 my_mha_flops": ch05.check_mha_flops,
    "06 E2 my_ablate_head": ch06.check_ablate_head,
    "07 E3 my_attention_flops": ch07.check_attention_flops,
    "08 E1 fixed_softmax": ch08.check_fixed_masked_softmax,
    "09 E2 my_repeat_kv_heads": ch09.check_repeat_kv_heads,
    "09 E4 my_kv_cache_bytes": ch09.check_kv_cache_formula,
    "10 E1 my_update": ch10.check_running_update,
    "10 E2 my_tiled_bytes": ch10.check_tiled_bytes,
    "11 E1 my_mask_mod": ch11.check_recent_plus_first,
    "11 E2 my_alibi_slopes": ch11.check_alibi_slopes,
    "11 E3 my_document_ids": ch11.check_document_ids,
    "12 E1 my_rotate_half": ch12.check_rotate_half,
    "12 E2 my_interleaved_to_halves": ch12.check_interleaved_to_halves,
}
OBVIOUS_CODE = {"None": None, "a string": "my_function", "the result, not the function": 42,
                "the unmodified stub": stub, "returns None": returns_none, "returns a string": returns_text,
                "takes one argument": takes_one_argument}

CODE_WRONG = [(label, form, checker, answer, None)
              for label, checker in CODE_CHECKERS.items() for form, answer in OBVIOUS_CODE.items()]
CODE_WRONG += [
    ("05 E3 my_mha_flops", "one FLOP per MAC (review)", ch05.check_mha_flops,
     lambda b, n_q, n_kv, d: mha_flops_right(b, n_q, n_kv, d) // 2, "one FLOP per multiply-add"),
    ("05 E3 my_mha_flops", "n_q for the keys (review)", ch05.check_mha_flops,
     lambda b, n_q, n_kv, d: 8 * b * n_q * d * d + 4 * b * n_q * n_q * d, "num_kvpairs rows"),
    ("05 E3 my_mha_flops", "no W_o (review)", ch05.check_mha_flops,
     lambda b, n_q, n_kv, d: mha_flops_right(b, n_q, n_kv, d) - 2 * b * n_q * d * d, "one projection is missing"),
    ("05 E3 my_mha_flops", "a float off by one half", ch05.check_mha_flops,
     lambda b, n_q, n_kv, d: mha_flops_right(b, n_q, n_kv, d) + 0.5, "gave"),
    ("06 E2 my_ablate_head", "in place (review)", ch06.check_ablate_head, ablate_in_place, "in place"),
    ("06 E2 my_ablate_head", "positions zeroed (review)", ch06.check_ablate_head,
     lambda c, head, num_heads: ch06._ablate_tokens(c, head, num_heads), "zeroed positions"),
    ("06 E2 my_ablate_head", "interleaved features (review)", ch06.check_ablate_head, ablate_interleaved,
     "every num_heads-th feature"),
    ("06 E2 my_ablate_head", "transposed result", ch06.check_ablate_head,
     lambda c, head, num_heads: ablate_right(c, head, num_heads).transpose(1, 2), "shape"),
    ("06 E2 my_ablate_head", "a numpy result", ch06.check_ablate_head,
     lambda c, head, num_heads: ablate_right(c, head, num_heads).numpy(), "should return a tensor, got ndarray"),
    ("07 E3 my_attention_flops", "with the projections (review)", ch07.check_attention_flops,
     lambda b, n, d: 8 * b * n * d * d + 4 * b * n * n * d, "projections"),
    ("07 E3 my_attention_flops", "one product", ch07.check_attention_flops,
     lambda b, n, d: 2 * b * n * n * d, "TWO products"),
    ("08 E1 fixed_softmax", "dim=1 (review)", ch08.check_fixed_masked_softmax,
     lambda s, m: torch.softmax(s.masked_fill(m == 0, torch.finfo(s.dtype).min), dim=1), "dim=1"),
    ("08 E1 fixed_softmax", "-1e9 (review)", ch08.check_fixed_masked_softmax, softmax_fill(-1e9),
     "outside the float16 range"),
    ("08 E1 fixed_softmax", "-inf (review)", ch08.check_fixed_masked_softmax, softmax_fill(float("-inf")), "NaN"),
    ("08 E1 fixed_softmax", "inverted mask (review)", ch08.check_fixed_masked_softmax,
     lambda s, m: torch.softmax(s.masked_fill(m != 0, torch.finfo(s.dtype).min), dim=-1), "inverted"),
    ("08 E1 fixed_softmax", "float32's finfo.min (review)", ch08.check_fixed_masked_softmax,
     softmax_fill(torch.finfo(torch.float32).min), "float16 range"),
    ("08 E1 fixed_softmax", "fill -100 (review)", ch08.check_fixed_masked_softmax, softmax_fill(-100.0),
     "lose to the hidden keys"),
    ("08 E1 fixed_softmax", "fill -1e4 (review)", ch08.check_fixed_masked_softmax, softmax_fill(-1e4),
     "lose to the hidden keys"),
    ("08 E1 fixed_softmax", "fill -60000", ch08.check_fixed_masked_softmax, softmax_fill(-60000.0),
     "lose to the hidden keys"),
    ("08 E1 fixed_softmax", "fill -1e4 in float32", ch08.check_fixed_masked_softmax,
     lambda s, m: torch.softmax(s.float().masked_fill(m == 0, -1e4), dim=-1), "lose to the hidden keys"),
    ("08 E1 fixed_softmax", "float16's finfo.min, literally (review B)", ch08.check_fixed_masked_softmax,
     softmax_fill(-65504.0), "right for float16 but is a fixed number"),
    ("08 E1 fixed_softmax", "-1e9 in float32 (review B)", ch08.check_fixed_masked_softmax,
     lambda s, m: torch.softmax(s.float().masked_fill(m == 0, -1e9), dim=-1).to(s.dtype),
     "right for float16 but is a fixed number"),
    ("08 E1 fixed_softmax", "transposed result", ch08.check_fixed_masked_softmax,
     lambda s, m: finfo_softmax(s, m).transpose(1, 2), "shape"),
    ("08 E1 fixed_softmax", "a numpy result", ch08.check_fixed_masked_softmax,
     lambda s, m: finfo_softmax(s, m).numpy(), "should return a tensor, got ndarray"),
    ("09 E2 my_repeat_kv_heads", "repeat (review)", ch09.check_repeat_kv_heads,
     lambda X, r: X.repeat(1, r, 1, 1), "repeat_interleave(num_groups, dim=1)"),
    ("09 E2 my_repeat_kv_heads", "dim=2 (review)", ch09.check_repeat_kv_heads,
     lambda X, r: X.repeat_interleave(r, dim=2), "axis 2"),
    ("09 E2 my_repeat_kv_heads", "expand in the wrong order (review)", ch09.check_repeat_kv_heads,
     lambda X, r: X[:, None].expand(X.shape[0], r, *X.shape[1:]).reshape(X.shape[0], -1, *X.shape[2:]),
     "repeat_interleave(num_groups, dim=1)"),
    ("09 E2 my_repeat_kv_heads", "heads and pairs transposed", ch09.check_repeat_kv_heads,
     lambda X, r: X.repeat_interleave(r, dim=1).transpose(1, 2), "shape"),
    ("09 E4 my_kv_cache_bytes", "keys only", ch09.check_kv_cache_formula,
     lambda L, g, d, n, b, s: L * g * d * n * b * s, "keys AND values"),
    ("09 E4 my_kv_cache_bytes", "numbers, not bytes", ch09.check_kv_cache_formula,
     lambda L, g, d, n, b, s: 2 * L * g * d * n * b, "counts numbers"),
    ("10 E1 my_update", "no rescale (review)", ch10.check_running_update,
     lambda m, s, x: (torch.maximum(m, x), s + torch.exp(x - torch.maximum(m, x))), "OLD maximum"),
    ("10 E1 my_update", "upside down (review)", ch10.check_running_update,
     lambda m, s, x: (torch.maximum(m, x), s * torch.exp(torch.maximum(m, x) - m) + torch.exp(x - torch.maximum(m, x))),
     "upside down"),
    ("10 E1 my_update", "the old maximum (review)", ch10.check_running_update,
     lambda m, s, x: (m, update_right(m, s, x)[1]), "the NEW maximum"),
    ("10 E1 my_update", "Python max (review)", ch10.check_running_update, update_python_max, "torch.maximum"),
    ("10 E1 my_update", "only the sum", ch10.check_running_update, lambda m, s, x: update_right(m, s, x)[1],
     "2 results"),
    ("10 E1 my_update", "numpy results", ch10.check_running_update,
     lambda m, s, x: tuple(t.numpy() for t in update_right(m, s, x)), "tensor"),
    ("10 E2 my_tiled_bytes", "the whole score matrix", ch10.check_tiled_bytes,
     lambda b, nq, nkv, dv, t: b * nq * nkv * 4, "whole score matrix"),
    ("10 E2 my_tiled_bytes", "entries, not bytes", ch10.check_tiled_bytes,
     lambda b, nq, nkv, dv, t: b * nq * (min(t, nkv) + 2 + dv), "counts entries"),
    ("11 E1 my_mask_mod", "< 3 (review)", ch11.check_recent_plus_first,
     lambda b, h, q, kv: (kv <= q) & (q - kv < 3) | (kv == 0), "off by one"),
    ("11 E1 my_mask_mod", "Python and/or (review)", ch11.check_recent_plus_first,
     lambda b, h, q, kv: (kv <= q and q - kv <= 3) or kv == 0, "&, | and ~"),
    ("11 E1 my_mask_mod", "no causal part (review)", ch11.check_recent_plus_first,
     lambda b, h, q, kv: ((q - kv).abs() <= 3) | (kv == 0), "both ways"),
    ("11 E1 my_mask_mod", "a Python bool", ch11.check_recent_plus_first, lambda b, h, q, kv: True, "different values"),
    ("11 E2 my_alibi_slopes", "starts at 1 (review)", ch11.check_alibi_slopes,
     lambda n: [2 ** (-8 * h / n) for h in range(n)], "first slope is 1"),
    ("11 E2 my_alibi_slopes", "8-head slopes (review)", ch11.check_alibi_slopes,
     lambda n: [2 ** (-(h + 1)) for h in range(n)], "8 heads only"),
    ("11 E2 my_alibi_slopes", "reversed (review)", ch11.check_alibi_slopes,
     lambda n: [2 ** (-8 * (h + 1) / n) for h in reversed(range(n))], "reversed"),
    ("11 E2 my_alibi_slopes", "base e (review)", ch11.check_alibi_slopes,
     lambda n: [math.exp(-8 * (h + 1) / n) for h in range(n)], "different values"),
    ("11 E2 my_alibi_slopes", "one slope too many", ch11.check_alibi_slopes,
     lambda n: [2 ** (-8 * h / n) for h in range(n + 1)][1:] + [0.0], "shape"),
    ("11 E3 my_document_ids", "the > bug (review)", ch11.check_document_ids, ch11._buggy_ids, "still the bug"),
    ("11 E3 my_document_ids", "repeat (review)", ch11.check_document_ids,
     lambda lengths: torch.arange(len(lengths)).repeat(max(lengths))[:sum(lengths)], "repeat tiles"),
    ("11 E3 my_document_ids", "compared with the lengths (review)", ch11.check_document_ids,
     lambda lengths: (torch.arange(sum(lengths)).view(-1, 1) >= torch.tensor(lengths)).sum(-1), "START"),
    ("11 E3 my_document_ids", "one id per document", ch11.check_document_ids,
     lambda lengths: torch.arange(len(lengths)), "one id per token"),
    ("12 E1 my_rotate_half", "interleaved pairs", ch12.check_rotate_half,
     lambda x: torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2), "interleaved convention"),
    ("12 E1 my_rotate_half", "a numpy result", ch12.check_rotate_half, lambda x: x.numpy(), "tensor"),
    ("12 E2 my_interleaved_to_halves", "the whole matrix as one head", ch12.check_interleaved_to_halves,
     lambda q, k, h, kv: tuple(W.reshape(-1, 2, *W.shape[1:]).transpose(0, 1).reshape(W.shape) for W in (q, k)),
     "one head"),
    ("12 E2 my_interleaved_to_halves", "W_k with num_heads", ch12.check_interleaved_to_halves,
     lambda q, k, h, kv: tuple(W.reshape(h, -1, 2, *W.shape[1:]).transpose(1, 2).reshape(W.shape) for W in (q, k)),
     "num_key_value_heads"),
    ("12 E3 shift", "float64's precision", ch12.check_shift_answer, "a", "0.03 apart"),
    ("12 E3 shift", "more than 1", ch12.check_shift_answer, ["d"], "small turn"),
    ("12 E3 shift", "two letters", ch12.check_shift_answer, "bc", "one letter"),
    ("12 E3 shift", "None", ch12.check_shift_answer, None, "one letter"),
    ("12 E3 shift", "a number", ch12.check_shift_answer, 0, "one letter"),
    ("12 E3 shift", "a numpy array of numbers", ch12.check_shift_answer, np.array([0, 1]), "one letter"),
    ("12 E3 shift", "the stub ...", ch12.check_shift_answer, ..., "replace ..."),
]

RIGHT = PREDICT_RIGHT + CODE_RIGHT
WRONG = PREDICT_WRONG + CODE_WRONG


def verdict(checker, answer) -> str:
    """The one line a checker prints; a traceback fails the test with the answer named."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            returned = checker(answer)
        except Exception as error:  # noqa: BLE001 - the point of the sweep: name the answer that raised
            pytest.fail(f"{checker.__name__}({answer!r}) raised {type(error).__name__}: {error}")
    assert returned is None
    printed = out.getvalue()
    assert printed.count("\n") == 1 and printed.endswith("\n"), f"a checker prints one line, got {printed!r}"
    return printed.rstrip("\n")


@pytest.fixture(autouse=True)
def _readers_session(monkeypatch):
    monkeypatch.delenv(GRADING_VARIABLE, raising=False)  # a reader's notebook: the checker only prints


@pytest.mark.parametrize(("label", "form", "checker", "answer"), RIGHT,
                         ids=[f"{label}: {form}" for label, form, *_rest in RIGHT])
def test_a_right_answer_in_another_form_is_correct(label, form, checker, answer):
    line = verdict(checker, answer)
    assert line.startswith(CORRECT), line


@pytest.mark.parametrize(("label", "form", "checker", "answer", "phrase"), WRONG,
                         ids=[f"{label}: {form}" for label, form, *_rest in WRONG])
def test_a_wrong_answer_gets_a_hint_and_no_traceback(label, form, checker, answer, phrase):
    line = verdict(checker, answer)
    assert line.startswith(NOT_YET), line
    if phrase is not None:
        assert phrase in line, f"expected {phrase!r} in:\n{line}"
    elif form != "the stub ...":
        assert "replace each ..." not in line, line  # only the stub is told to replace its dots


def test_the_sweep_covers_every_checker_of_chapters_05_to_12():
    modules = [ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch12]
    checkers = {getattr(module, name) for module in modules for name in module.__all__}
    swept_wrong = {checker for _label, _form, checker, *_rest in WRONG}
    swept = swept_wrong & {checker for _label, _form, checker, *_rest in RIGHT}
    assert checkers == swept, sorted(c.__name__ for c in checkers ^ swept)


def test_in_chinese_every_answer_still_gets_one_line_and_its_verdict():
    set_language("zh_CN")
    try:
        for should, cases in ((_(NOT_YET), WRONG), (_(CORRECT), RIGHT)):
            for label, form, checker, answer, *_rest in cases:
                line = verdict(checker, answer)
                assert line.startswith(should), f"{label}: {form}: {line}"
    finally:
        set_language("en")


@pytest.mark.parametrize(("a", "b", "same"), [
    (536_870_912, 536_870_913, False),  # ints compare exactly: a byte too many is wrong
    (536_870_912, 536_870_912.0, True),  # a whole float is that int
    (536_870_912, 536_870_912.5, False),  # ... and no other
    (96, 3e9 * 2 * 8 * 2 / 1e9, True),  # float arithmetic that comes out whole
    (0.1 + 0.2, 0.3, True),  # two floats within a relative 1e-6
    (np.int64(6), 6, True), (np.float16(-np.inf), float("-inf"), True),
    (np.array([18, 5, 8]), (18, 5, 8), True), (np.array([[1, 2]]), ((1, 2),), True),
    (np.array([1, 2]), (1, 2, 3), False),  # used to raise: the truth value of an array is ambiguous
    (torch.tensor(42), 42, True), (42, torch.tensor(42.0), True),  # a 0-d tensor where a number is expected
    (torch.tensor([42]), 42, False), (torch.ones(2), (1.0, 1.0), False),  # a tensor where a tuple is: not plain
    (True, 1, False), ("6", 6, False), (None, 0, False),
])
def test_same_compares_values_as_the_engine_s_docstring_says(a, b, same):
    assert _same(a, b) is same and _same(b, a) is same


if __name__ == "__main__":  # the table of the report
    print("| exercise | answer | should be | the checker's line |\n|---|---|---|---|")
    for should, cases in (("❌", WRONG), ("✅", RIGHT)):
        for label, form, checker, answer, *_rest in cases:
            try:
                with contextlib.redirect_stdout(io.StringIO()) as out:
                    checker(answer)
                line = out.getvalue().strip().replace("|", "\\|")
            except Exception as error:  # noqa: BLE001 - a traceback is a verdict too, in this table
                line = f"TRACEBACK {type(error).__name__}: {error}"
            print(f"| {label} | {form} | {should} | {line[:160]} |")
