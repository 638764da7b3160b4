"""Issue 54 (review B, defect 7): every typical wrong answer gets a hint of its own, never a generic line.

For each checker of chapters 05 and 07-11 that the review named, a table of typical wrong answers: each must get a
"❌ Not yet" line that contains none of the engine's generic fallbacks, and no two answers of one checker may get the
same line (two different mistakes told one thing is the defect the review found: 07 E2's scores + weights answer was
told "that is float32", 05 E3's division by h got "gave 344, expected 416", 11 E1's builtin max was blamed on and/or).
"""

from __future__ import annotations

import contextlib
import io

import pytest
import torch

from mha_chapters.exercises import ch05, ch07, ch08, ch09, ch10, ch11
from mha_chapters.exercises._engine import GRADING_VARIABLE, NOT_YET

GENERIC = ("Check your reasoning step by step", " gave ", "but different values")


def projections(b, n_q, n_kv, d):
    return 4 * b * (n_q + n_kv) * d * d


def attention(b, n_q, n_kv, d):
    return 4 * b * n_q * n_kv * d


def softmax_fill(value, dim=-1):
    return lambda s, m: torch.softmax(s.masked_fill(m == 0, value), dim=dim)


def state(b, nq, nkv, dv, t):
    return b * nq * (min(t, nkv) + 2 + dv)


TABLE = {
    "05 E3": (ch05.check_mha_flops, {
        "one FLOP per multiply-add": lambda b, q, k, d: (projections(b, q, k, d) + attention(b, q, k, d)) // 2,
        "no W_o": lambda b, q, k, d: projections(b, q, k, d) + attention(b, q, k, d) - 2 * b * q * d * d,
        "one product of attention": lambda b, q, k, d: projections(b, q, k, d) + attention(b, q, k, d) // 2,
        "projections only": projections,
        "n_q rows for the keys": lambda b, q, k, d: 8 * b * q * d * d + 4 * b * q * q * d,
        "attention of one head of 4": lambda b, q, k, d: projections(b, q, k, d) + attention(b, q, k, d) / 4,
        "attention of one head of 8, d // 8": lambda b, q, k, d: projections(b, q, k, d) + attention(b, q, k, d // 8),
    }),
    "07 E2": (ch07.check_score_bytes_answer, {
        "float32, or scores + weights": 8 * 12 * 4096 * 4096 * 4,
        "the number of scores": 8 * 12 * 4096 * 4096,
        "one head": 8 * 4096 * 4096 * 2,
        "GiB": 3,
        "MiB": 3072,
    }),
    "08 E1": (ch08.check_fixed_masked_softmax, {
        "the original line": softmax_fill(-1e9, dim=1),
        "-inf": softmax_fill(float("-inf")),
        "-1e4": softmax_fill(-1e4),
        "-1e9 after an upcast": lambda s, m: torch.softmax(s.float().masked_fill(m == 0, -1e9), dim=-1).to(s.dtype),
        "dim=1 with finfo.min": lambda s, m: torch.softmax(s.masked_fill(m == 0, torch.finfo(s.dtype).min), dim=1),
        "inverted mask": lambda s, m: torch.softmax(s.masked_fill(m != 0, torch.finfo(s.dtype).min), dim=-1),
    }),
    "08 E2": (ch08.check_missing_batch_axis, {
        "as with a batch axis": ((1, 8, 4, 8), 4),
        "before the transpose": ((4, 1, 8, 8), 1),
        "the shape, and all 4 words": ((4, 8, 1, 8), 4),
        "the shape, and the heads": ((4, 8, 1, 8), 8),
        "the shape, and no key": ((4, 8, 1, 8), 0),
        "the shape alone": (4, 8, 1, 8),
    }),
    "09 E4": (ch09.check_kv_cache_formula, {
        "keys only": lambda L, g, d, n, b, s: L * g * d * n * b * s,
        "numbers, not bytes": lambda L, g, d, n, b, s: 2 * L * g * d * n * b,
        "one layer": lambda L, g, d, n, b, s: 2 * g * d * n * b * s,
        "one sequence": lambda L, g, d, n, b, s: 2 * L * g * d * n * s,
        "a fixed 2 bytes": lambda L, g, d, n, b, s: 2 * L * g * d * n * b * 2,
    }),
    "10 E2": (ch10.check_tiled_bytes, {
        "the whole matrix": lambda b, nq, nkv, dv, t: b * nq * nkv * 4,
        "entries, not bytes": state,
        "no min": lambda b, nq, nkv, dv, t: b * nq * (t + 2 + dv) * 4,
        "the value tile counted": lambda b, nq, nkv, dv, t: (state(b, nq, nkv, dv, t) + b * min(t, nkv) * dv) * 4,
        "key and value tiles counted":
            lambda b, nq, nkv, dv, t: (state(b, nq, nkv, dv, t) + 2 * b * min(t, nkv) * dv) * 4,
    }),
    "11 E1": (ch11.check_recent_plus_first, {
        "< 3": lambda b, h, q, kv: (kv <= q) & (q - kv < 3) | (kv == 0),
        "no causal bound": lambda b, h, q, kv: ((q - kv).abs() <= 3) | (kv == 0),
        "no first token": lambda b, h, q, kv: (kv <= q) & (q - kv <= 3),
        "and / or": lambda b, h, q, kv: (kv <= q and q - kv <= 3) or kv == 0,
        "builtin max": lambda b, h, q, kv: (kv <= q) & (kv >= max(q - 3, 0)) | (kv == 0),
        "& for the first token": lambda b, h, q, kv: (kv <= q) & (q - kv <= 3) & (kv == 0),
    }),
}


def verdict(checker, answer) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        checker(answer)
    return out.getvalue().rstrip("\n")


@pytest.fixture(autouse=True)
def _readers_session(monkeypatch):
    monkeypatch.delenv(GRADING_VARIABLE, raising=False)


@pytest.mark.parametrize("label", list(TABLE))
def test_each_wrong_answer_gets_a_specific_hint_of_its_own(label):
    checker, wrong = TABLE[label]
    lines = {mistake: verdict(checker, answer) for mistake, answer in wrong.items()}
    for mistake, line in lines.items():
        assert line.startswith(NOT_YET), f"{label}, {mistake}: {line}"
        assert not any(phrase in line for phrase in GENERIC), f"{label}, {mistake} got a generic line: {line}"
    shared = [(a, b) for a in lines for b in lines if a < b and lines[a] == lines[b]]
    assert not shared, f"{label}: two mistakes share one hint: {shared}"


@pytest.mark.parametrize(("label", "mistake", "phrases"), [
    ("07 E2", "float32, or scores + weights", ["float32", "the scores and the softmax weights together"]),
    ("05 E3", "attention of one head of 4", ["ONE head", "d / 4", "why h does not appear"]),
    ("11 E1", "builtin max", ["builtin max", "torch.maximum"]),
    ("08 E1", "-1e9 after an upcast", ["right for float16 but is a fixed number", "(float32)"]),
    ("09 E4", "a fixed 2 bytes", ["bytes_per_number"]),
])
def test_the_hint_names_what_was_detected(label, mistake, phrases):
    checker, wrong = TABLE[label]
    line = verdict(checker, wrong[mistake])
    assert all(phrase in line for phrase in phrases), line
    if label == "11 E1":
        assert "and / or" not in line  # review B: the builtin max was blamed on and / or


# Issue 54 (review A, defect 7): chapter 03's "work it out on paper first" is a predict exercise; each typical way
# of getting samples 1 and 2 of the folded 10..27 tensor wrong is named by its own hint.
X_1027 = torch.tensor([[[10, 11, 12, 13], [14, 15, 16, 17]], [[20, 21, 22, 23], [24, 25, 26, 27]]])


def _samples(folded):
    return (folded[1].tolist(), folded[2].tolist())


CH03_E1 = {
    "a reshape alone": (_samples(X_1027.reshape(4, 2, 2)), ["a reshape alone"]),
    "head-major": (_samples(X_1027.reshape(2, 2, 2, 2).permute(2, 0, 1, 3).reshape(4, 2, 2)), ["head-major"]),
    "counted from 1": (_samples(torch.cat([X_1027[:1, :, :2].reshape(1, 2, 2), X_1027.reshape(2, 2, 2, 2)
                                           .permute(0, 2, 1, 3).reshape(4, 2, 2)])), ["counted from 0"]),
    "features as rows": (_samples(X_1027.reshape(2, 2, 2, 2).permute(0, 2, 3, 1).reshape(4, 2, 2)),
                         ["features as rows"]),
    "sample 2 with head 1": (([[12, 13], [16, 17]], [[22, 23], [26, 27]]), ["sample 1 is right"]),
}


def test_ch03_samples_by_hand_each_mistake_named():
    from mha_chapters.exercises import ch03

    right = ch03.transpose_qkv(X_1027, 2)
    assert verdict(ch03.check_samples_by_hand, _samples(right)).startswith("✅")
    assert verdict(ch03.check_samples_by_hand, (right[1], right[2])).startswith("✅")  # tensors count too
    lines = {}
    for mistake, (answer, phrases) in CH03_E1.items():
        line = verdict(ch03.check_samples_by_hand, answer)
        assert line.startswith(NOT_YET), f"{mistake}: {line}"
        assert all(phrase in line for phrase in phrases), f"{mistake}: {line}"
        assert not any(phrase in line for phrase in GENERIC), f"{mistake}: {line}"
        lines[mistake] = line
    assert len(set(lines.values())) == len(lines)
