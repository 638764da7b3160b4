"""Chapter 08's checkers: the right answer passes (in several forms), each typical mistake gets its own hint."""

import pytest
import torch

from mha_chapters.exercises import ch08
from mha_chapters.exercises._engine import CORRECT, NOT_YET


def run(capsys, checker, answer) -> str:
    assert checker(answer) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    return out.rstrip("\n")


def finfo_fill(scores, mask, dim=-1):
    return torch.softmax(scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min), dim=dim)


@pytest.mark.parametrize("answer", [
    finfo_fill,
    lambda s, m: torch.softmax(s.masked_fill(~m.bool(), torch.finfo(s.dtype).min), dim=-1),
    lambda s, m: torch.softmax(s.float().masked_fill(m == 0, torch.finfo(torch.float32).min), dim=2).to(s.dtype),
])
def test_fixed_softmax_right_answers_pass(capsys, answer):
    assert run(capsys, ch08.check_fixed_masked_softmax, answer).startswith(CORRECT)


def zeroed_fill(scores, mask):
    """masked_softmax's way: finfo.min, then exactly 0 for every hidden key (a row with nothing to see is all 0)."""
    return finfo_fill(scores, mask) * (mask != 0)


@pytest.mark.parametrize("answer, phrases", [
    (finfo_fill, ["stays below every real score, in float16 and in float32", "even weights over its hidden keys"]),
    (zeroed_fill, ["stays below every real score", "all-zero weights"]),
    (lambda s, m: torch.nan_to_num(torch.softmax(s.masked_fill(m == 0, float("-inf")), dim=-1)),
     ["stays below every real score", "all-zero weights"]),
])
def test_fixed_softmax_verdict_says_what_the_answer_did(capsys, answer, phrases):
    line = run(capsys, ch08.check_fixed_masked_softmax, answer)
    assert line.startswith(CORRECT) and all(phrase in line for phrase in phrases), line
    assert "returns float32" not in line  # the dtype remark only where the dtype changed


def test_fixed_softmax_verdict_names_a_changed_dtype(capsys):
    def upcast(s, m):
        return torch.softmax(s.float().masked_fill(m == 0, torch.finfo(torch.float32).min), dim=-1)
    line = run(capsys, ch08.check_fixed_masked_softmax, upcast)
    assert line.startswith(CORRECT) and "returns float32" in line, line


@pytest.mark.parametrize("answer", [
    lambda s, m: torch.softmax(s.float().masked_fill(m == 0, -1e9), dim=-1).to(s.dtype),  # issue 54: it passed
    lambda s, m: torch.softmax(s.masked_fill(m == 0, -65504.0), dim=-1),  # float16's bottom, hard-coded
    lambda s, m: torch.softmax(s.masked_fill(m == 0, torch.finfo(torch.float16).min), dim=-1),
])
def test_fixed_softmax_rejects_a_fill_right_for_float16_only(capsys, answer):
    """Review B, defect 7: a -1e9 fill after an upcast, or a hard-coded -65504, was told its fill was finfo.min."""
    line = run(capsys, ch08.check_fixed_masked_softmax, answer)
    assert line.startswith(NOT_YET) and "right for float16 but is a fixed number" in line, line
    assert "100% of its weight" in line and "(float32)" in line


def test_the_cases_hold_float32_scores():
    assert {scores.dtype for scores, _ in ch08._softmax_cases()} == {torch.float16, torch.float32}


@pytest.mark.parametrize("fill", [-100.0, -1e4, -65000.0])
@pytest.mark.parametrize("compute_in", [torch.float16, torch.float32])
def test_fixed_softmax_rejects_a_constant_fill_above_the_bottom_of_the_range(capsys, fill, compute_in):
    """Issue 38: a fill of -100 or -1e4 passed every ordinary case and was told "✅ Correct"."""
    def answer(s, m):
        computed = s.to(torch.promote_types(s.dtype, compute_in))
        return torch.softmax(computed.masked_fill(m == 0, fill), dim=-1).to(s.dtype)
    line = run(capsys, ch08.check_fixed_masked_softmax, answer)
    assert line.startswith(NOT_YET) and "lose to the hidden keys" in line and "finfo" in line, line
    assert "100% of its weight" in line  # both hidden keys outrank every visible score of the probe


def test_the_probe_s_visible_scores_lie_below_every_fill_but_finfo_min():
    scores, mask = ch08._low_scores()
    lowest = torch.finfo(torch.float16).min
    assert scores.dtype == torch.float16 and scores[mask.bool()].max().item() == ch08.VISIBLE_MAX
    assert ch08.VISIBLE_MAX - 64 == lowest  # two float16 steps of 32 above the bottom of the range
    weights = finfo_fill(scores, mask)  # the right answer keeps the weight on the visible keys
    assert weights[0, 0, :2].sum().item() == 1.0 and weights[0, 0, 2:].sum().item() == 0.0


def test_the_float32_probe_lies_below_every_constant_fill_but_finfo_min():
    scores, mask = ch08._low_scores(torch.float32)
    visible = scores[mask.bool()]
    assert scores.dtype == torch.float32 and visible.max().item() < -1e30
    assert visible.min() > torch.finfo(torch.float32).min
    weights = finfo_fill(scores, mask)
    assert weights[0, 0, :2].sum().item() == 1.0 and weights[0, 0, 2:].sum().item() == 0.0


@pytest.mark.parametrize("answer", [
    lambda s, m: torch.softmax(s.masked_fill(m == 0, float("-inf")), dim=-1),
    lambda s, m: torch.softmax(torch.where(m.bool(), s, torch.tensor(float("-inf"), dtype=s.dtype)), dim=-1),
    lambda s, m: torch.softmax(torch.where(m.bool(), s, torch.tensor(-1e9).half()), dim=-1),  # -1e9 -> -inf
])
def test_fixed_softmax_rejects_nan_for_a_query_with_no_visible_key(capsys, answer):
    line = run(capsys, ch08.check_fixed_masked_softmax, answer)
    assert line.startswith(NOT_YET) and "NaN" in line and "section 8" in line, line


def test_fixed_softmax_probes_a_fully_masked_row():
    scores, mask = ch08._nothing_to_see()
    assert (mask == 0).all(dim=-1).any() and not (mask == 0).all(dim=-1).all()


@pytest.mark.parametrize("answer, phrase", [
    (lambda s, m: torch.softmax(s.masked_fill(m == 0, -1e9), dim=1), "outside the float16 range"),
    (lambda s, m: torch.softmax(s.masked_fill(m == 0, -1e9), dim=-1), "outside the float16 range"),
    (lambda s, m: finfo_fill(s, m, dim=1), "still runs over dim=1"),
    (lambda s, m: torch.softmax(s.masked_fill(m != 0, torch.finfo(s.dtype).min), dim=-1), "the mask is inverted"),
])
def test_fixed_softmax_hints(capsys, answer, phrase):
    line = run(capsys, ch08.check_fixed_masked_softmax, answer)
    assert line.startswith(NOT_YET) and phrase in line, line


@pytest.mark.parametrize("answer", [([3, 3], [5, 5]), (torch.tensor([2, 2]), torch.tensor([4, 4])), [[1, 1], [2, 2]]])
def test_lens_right_answers_pass(capsys, answer):
    assert run(capsys, ch08.check_lens_that_hide_bug4, answer).startswith(CORRECT)


@pytest.mark.parametrize("answer, phrase", [
    (([3, 2], [5, 5]), "they agree only when the two lengths are the same"),
    (([3, 3], [3, 3]), "must differ"),
    (([3, 3, 3], [5, 5, 5]), "batch_size = 2 numbers"),
    (([..., ...], [..., ...]), "replace each ..."),
])
def test_lens_hints(capsys, answer, phrase):
    line = run(capsys, ch08.check_lens_that_hide_bug4, answer)
    assert line.startswith(NOT_YET) and phrase in line, line


@pytest.mark.parametrize("answer", [float("-inf"), -float("inf"), torch.tensor(float("-inf"), dtype=torch.float16)])
def test_finfo_right_answers_pass(capsys, answer):
    assert run(capsys, ch08.check_finfo_min_minus_100, answer).startswith(CORRECT)


@pytest.mark.parametrize("answer, phrase", [
    (-65604, "float16 cannot hold -65604"), (-65504, "only a change smaller than 16 is lost"),
    (float("nan"), "not NaN"), (..., "replace each ..."),
])
def test_finfo_hints(capsys, answer, phrase):
    line = run(capsys, ch08.check_finfo_min_minus_100, answer)
    assert line.startswith(NOT_YET) and phrase in line, line


def test_finfo_verdict_states_when_float16_overflows(capsys):
    line = run(capsys, ch08.check_finfo_min_minus_100, float("-inf"))
    assert "subtracting 16 or more rounds to -inf" in line and "negative bias" in line, line
    # the arithmetic the verdict states
    lowest = torch.tensor(torch.finfo(torch.float16).min, dtype=torch.float16)
    assert (lowest - 15).item() == lowest.item() and (lowest - 16).item() == float("-inf")
