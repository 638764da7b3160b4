"""The exercise checkers of chapter 13: a correct solution is confirmed, and each typical wrong one gets ITS hint.

The wrong solutions are written the way a reader would write them (not copied from mha_chapters.exercises.ch13).
Each expected hint is identified by a phrase that only that hint contains. Answers in numpy, and functions that
compute in numpy, are checked like the others and never crash the checker.
"""

import numpy as np
import pytest
import torch
from test_checks import run

from mha_chapters.exercises import ch13
from mha_chapters.exercises._engine import CORRECT, NOT_YET
from mha_chapters.induction import induction_score, previous_token_score


def expect_hint(line: str, phrase: str) -> None:
    assert line.startswith(NOT_YET), line
    assert phrase in line, f"expected the hint containing {phrase!r}, got:\n{line}"


def stub(*args):
    raise NotImplementedError("Exercise: write the body")


# ---- exercise 1: the previous-token score ---------------------------------------------------------------------------

def previous_loop(weights):
    seq_len = weights.shape[0]
    return sum(weights[t, t - 1].item() for t in range(1, seq_len)) / (seq_len - 1)


def previous_diagonal(weights):
    return weights.diagonal(offset=-1).mean()  # a 0-d tensor


def previous_numpy(weights):
    w = weights.numpy()
    return np.mean([w[t, t - 1] for t in range(1, len(w))])  # a numpy float


@pytest.mark.parametrize("solution", [previous_loop, previous_diagonal, previous_numpy])
def test_a_right_previous_token_score_is_confirmed(capsys, solution):
    assert run(capsys, ch13.check_previous_token_score, solution).startswith(CORRECT)


@pytest.mark.parametrize(("solution", "phrase"), [
    (lambda w: w.diagonal().mean(), "main diagonal"),
    (lambda w: np.diagonal(w.numpy()).mean(), "main diagonal"),
    (lambda w: w.diagonal(1).mean(), "ABOVE the main one"),
    (lambda w: sum(w[t, t - 1] for t in range(1, len(w))) / len(w), "divided by seq_len queries"),
    (lambda w: w.diagonal(-1).sum(), "that is the sum"),
    (lambda w: w[1:, 0].mean(), "column 0"),
    (stub, "still raises NotImplementedError"),
    (lambda w: None, "returned None"),
    (lambda w: w.diagonal(-1), "should return"),
])
def test_each_previous_token_mistake_gets_its_hint(capsys, solution, phrase):
    line = run(capsys, ch13.check_previous_token_score, solution)
    if phrase == "should return":  # a vector instead of its mean: the engine names the shapes
        assert line.startswith(NOT_YET) and "shape" in line, line
    else:
        expect_hint(line, phrase)


@pytest.mark.parametrize("not_a_function", [..., None, 0.5])
def test_a_number_instead_of_a_function_is_explained(capsys, not_a_function):
    expect_hint(run(capsys, ch13.check_previous_token_score, not_a_function), "my_previous_token_score")


# ---- exercise 2: the induction score --------------------------------------------------------------------------------

def induction_loop(weights, tokens):
    total, queries = 0.0, 0
    for t in range(len(tokens)):
        keys = [s + 1 for s in range(t) if tokens[s] == tokens[t]]
        if keys:
            total += sum(weights[t, j] for j in keys)
            queries += 1
    return total / queries  # a 0-d tensor


def induction_vectorised(weights, tokens):
    seq_len = len(tokens)
    earlier = (tokens[:, None] == tokens[None, :]) & torch.ones(seq_len, seq_len, dtype=torch.bool).tril(-1)
    keys = torch.zeros_like(earlier)
    keys[:, 1:] = earlier[:, :-1]  # key j = s + 1 for every earlier occurrence s
    has = keys.any(dim=1)
    return ((weights * keys).sum(dim=1)[has]).mean().item()


def induction_numpy(weights, tokens):
    w, x = weights.numpy(), tokens.numpy()
    scores = [sum(w[t, s + 1] for s in range(t) if x[s] == x[t]) for t in range(len(x))
              if (x[:t] == x[t]).any()]
    return np.float64(np.mean(scores))


@pytest.mark.parametrize("solution", [induction_loop, induction_vectorised, induction_numpy])
def test_a_right_induction_score_is_confirmed(capsys, solution):
    assert run(capsys, ch13.check_induction_score, solution).startswith(CORRECT)


def induction_on_the_occurrence(weights, tokens):
    scores = [sum(weights[t, s] for s in range(t) if tokens[s] == tokens[t]) for t in range(len(tokens))
              if (tokens[:t] == tokens[t]).any()]
    return sum(scores) / len(scores)


def induction_over_all_queries(weights, tokens):
    scores = [sum(weights[t, s + 1] for s in range(t) if tokens[s] == tokens[t]) for t in range(len(tokens))]
    return sum(scores) / len(scores)


def induction_last_occurrence_only(weights, tokens):
    scores = []
    for t in range(len(tokens)):
        earlier = [s for s in range(t) if tokens[s] == tokens[t]]
        if earlier:
            scores.append(weights[t, earlier[-1] + 1])
    return sum(scores) / len(scores)


def induction_mean_over_keys(weights, tokens):
    scores = []
    for t in range(len(tokens)):
        keys = [s + 1 for s in range(t) if tokens[s] == tokens[t]]
        if keys:
            scores.append(weights[t, keys].mean())  # "mean" read into the wrong place
    return sum(scores) / len(scores)


def induction_first_occurrence_only(weights, tokens):
    scores = []
    for t in range(len(tokens)):
        earlier = [s for s in range(t) if tokens[s] == tokens[t]]
        if earlier:
            scores.append(weights[t, earlier[0] + 1])
    return sum(scores) / len(scores)


def induction_keys_before_the_query(weights, tokens):
    scores = []
    for t in range(len(tokens)):
        keys = [j for j in range(1, t) if tokens[j - 1] == tokens[t]]  # j < t: misses key t after s = t - 1
        if keys:
            scores.append(sum(weights[t, j] for j in keys))
    return sum(scores) / len(scores)


def induction_query_counts_itself(weights, tokens):
    scores = []
    for t in range(len(tokens)):
        keys = [s + 1 for s in range(t + 1) if tokens[s] == tokens[t] and s + 1 < len(tokens)]
        if keys:
            scores.append(sum(weights[t, j] for j in keys))
    return sum(scores) / len(scores)


def induction_also_later(weights, tokens):
    seq_len = len(tokens)
    scores = []
    for t in range(seq_len):
        matches = [s for s in range(seq_len - 1) if s != t and tokens[s] == tokens[t]]
        if matches:
            scores.append(sum(weights[t, s + 1] for s in matches))
    return sum(scores) / len(scores)


def induction_key_before(weights, tokens):
    scores = [sum(weights[t, s - 1] for s in range(1, t) if tokens[s] == tokens[t]) for t in range(len(tokens))
              if (tokens[1:t] == tokens[t]).any()]
    return sum(scores) / len(scores)


@pytest.mark.parametrize(("solution", "phrase"), [
    (induction_on_the_occurrence, "the earlier occurrence ITSELF"),
    (induction_over_all_queries, "averaged over every query"),
    (induction_last_occurrence_only, "only the LAST earlier occurrence"),
    (induction_mean_over_keys, "the MEAN of the weights on a query's keys"),
    (induction_first_occurrence_only, "only the FIRST earlier occurrence"),
    (induction_keys_before_the_query, "only keys j < t"),
    (induction_query_counts_itself, "range(t + 1)"),
    (induction_also_later, "occurrences AFTER the query"),
    (induction_key_before, "the key BEFORE the earlier occurrence"),
    (stub, "still raises NotImplementedError"),
    (lambda weights: 0.0, "could not be called with 2 arguments"),
])
def test_each_induction_mistake_gets_its_hint(capsys, solution, phrase):
    expect_hint(run(capsys, ch13.check_induction_score, solution), phrase)


def test_the_induction_cases_tell_the_mistakes_apart():
    """Every typical mistake gives another number than the right score on at least one case."""
    cases = ch13._induction_cases()
    for wrong in (induction_on_the_occurrence, induction_over_all_queries, induction_last_occurrence_only,
                  induction_also_later, induction_key_before, induction_mean_over_keys,
                  induction_first_occurrence_only, induction_keys_before_the_query, induction_query_counts_itself):
        assert any(abs(float(wrong(*case)) - ch13._induction_right(*case)) > 1e-3 for case in cases), wrong.__name__


@pytest.mark.parametrize(("check", "own"), [
    (ch13.check_previous_token_score, previous_token_score),
    (ch13.check_induction_score, induction_score),
    (ch13.check_induction_score, ch13._induction_right),
])
def test_the_collections_own_function_is_not_accepted_as_an_answer(capsys, check, own):
    expect_hint(run(capsys, check, own), "the collection's own function")


# ---- exercise 3: predict which ablations hurt -----------------------------------------------------------------------

@pytest.mark.parametrize("answer", ["AD", "DA", "a, d", ["A", "D"], ("D", "A"), {"a", "d"}, np.array(["A", "D"])],
                         ids=["string", "reversed", "lower case with a comma", "list", "tuple", "set", "numpy array"])
def test_the_right_prediction_is_confirmed_in_every_form(capsys, answer):
    assert run(capsys, ch13.check_which_ablation_hurts, answer).startswith(CORRECT)


@pytest.mark.parametrize(("answer", "phrase"), [
    ("D", "Without it (A) they lose their keys"),
    (["D"], "Without it (A) they lose their keys"),
    ("A", "zeroing both of them (D) hurts too"),
    ("ABD", "B, the other head of layer 1"),
    (np.array(["A", "B", "D"]), "B, the other head of layer 1"),
    ("ACD", "C zeroes one induction head"),
    ("ABCD", "B, the other head of layer 1"),
    ("AE", "E is not one of them"),
    (..., "write your prediction"),
    (None, "write your prediction"),
    (3, "got 3"),
    ("", "got ''"),
    (np.array([1, 4]), "got array"),
])
def test_each_wrong_prediction_gets_its_hint(capsys, answer, phrase):
    expect_hint(run(capsys, ch13.check_which_ablation_hurts, answer), phrase)


def test_the_predicted_answer_is_the_one_the_chapter_asserts():
    assert ch13.HURT == ("A", "D") and set(ch13.HURT) <= set(ch13.ABLATIONS)
