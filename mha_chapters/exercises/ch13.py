"""The exercises of chapter 13, heads that work together (induction heads).

``check_previous_token_score``, ``check_induction_score``, ``check_which_ablation_hurts``
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..i18n import _
from ..induction import induction_score, previous_token_score
from ._engine import NOT_YET, check_answer, check_function, contains_ellipsis, report

__all__ = ["check_induction_score", "check_previous_token_score", "check_which_ablation_hurts"]


def _causal_weights(seq_len: int, seed: int) -> Tensor:
    """Attention weights of one head on one sequence, as a trained head could have them: random, causal, rows sum
    to 1. Shape: ``(seq_len, seq_len)``, float64."""
    generator = torch.Generator().manual_seed(seed)
    scores = 3 * torch.randn(seq_len, seq_len, generator=generator, dtype=torch.float64)
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()  # key j <= query t
    return scores.masked_fill(~causal, -torch.inf).softmax(dim=-1)


def _as_number(fn: Any) -> Any:
    """A reader's score function whose result (a float, a 0-d tensor, a numpy number) becomes a Python float."""
    def run(*args: Any) -> Any:
        out = fn(*args)
        if isinstance(out, (Tensor, np.ndarray, np.generic)) and np.size(out) == 1:
            return float(np.asarray(out.detach() if isinstance(out, Tensor) else out).reshape(()))
        return out
    return run


# ---- exercise 1: the previous-token score of one head ----------------------------------------------------------------

def _previous_token_right(weights: Tensor) -> float:
    return previous_token_score(weights[None, None]).item()  # (seq_len, seq_len) -> (1, 1, ...) -> one head


def check_previous_token_score(fn: Any) -> None:
    """Exercise: ``my_previous_token_score(weights)``: the mean weight of query t on key t - 1, over t >= 1."""
    own = _own_function(fn, ("my_previous_token_score",))
    if own is not None:
        report(own)
        return
    cases = [(_causal_weights(n, seed),) for n, seed in ((6, 0), (9, 1), (24, 2))]
    wrong = {
        lambda w: w.diagonal().mean().item():
            _("you read the main diagonal, the weight of each query on ITSELF (key t); the previous token is key "
              "t - 1, one below it: weights.diagonal(offset=-1)."),
        lambda w: w.diagonal(offset=1).mean().item():
            _("you read the diagonal ABOVE the main one, key t + 1: the causal mask hides it, so it is 0. The "
              "previous token is key t - 1: weights.diagonal(offset=-1)."),
        lambda w: (w.diagonal(offset=-1).sum() / w.shape[0]).item():
            _("you divided by seq_len queries, but query 0 has no previous token: average over the seq_len - 1 "
              "queries t = 1 .. seq_len - 1."),
        lambda w: w.diagonal(offset=-1).sum().item():
            _("that is the sum over the queries; the score is their mean (divide by the seq_len - 1 queries that "
              "have a key t - 1)."),
        lambda w: w[1:, 0].mean().item():
            _("you read column 0, the first token; the previous token of query t is key t - 1, a different column "
              "for every query."),
    }
    check_function(_as_number(fn) if callable(fn) else fn, _previous_token_right, cases,
                   name="my_previous_token_score", arg_names=["weights"],
                   hints={_as_number(f): hint for f, hint in wrong.items()},
                   success=_("the mean of weights[t, t - 1] over t = 1 .. seq_len - 1, the entries one below the "
                             "diagonal."))


# ---- exercise 2: the induction score of one head ------------------------------------------------------------------

def _induction_right(weights: Tensor, tokens: Tensor) -> float:
    return induction_score(weights[None, None], tokens[None]).item()  # one head of one sequence


def _induction_cases() -> list[tuple[Tensor, Tensor]]:
    """Weights and tokens of one sequence: a repeated span, a span with a token twice, a random sequence, and a
    span with a token twice in a row (its key after the occurrence at t - 1 is the query t itself)."""
    repeated = torch.tensor([5, 2, 7, 9, 5, 2, 7, 9, 5, 2])  # period 4
    twice = torch.tensor([3, 1, 3, 4, 0, 3, 1, 3, 4, 0, 3, 1])  # 3 occurs twice per span: two keys to sum
    generator = torch.Generator().manual_seed(3)
    random = torch.randint(6, (16,), generator=generator)
    doubled = torch.tensor([6, 6, 2, 8, 6, 6, 2, 8, 6])  # 6, 6: at t = 1 the only key is t itself
    return [(_causal_weights(len(tokens), seed), tokens)
            for seed, tokens in enumerate((repeated, twice, random, doubled))]


def _induction_variant(keys_of: Any, divide_by_all: bool = False, mean: bool = False) -> Any:
    """A score that sums (or, with ``mean``, averages) the weight on the keys ``keys_of(tokens, t)`` returns,
    averaged over the queries with such keys (or over all queries): the frame of the typical wrong answers."""
    def score(weights: Tensor, tokens: Tensor) -> float:
        total, counted = 0.0, 0
        for t in range(len(tokens)):
            keys = keys_of(tokens, t)
            if keys or divide_by_all:
                on_keys = sum(weights[t, j].item() for j in keys)
                total += on_keys / len(keys) if mean and keys else on_keys
                counted += 1
        return total / counted
    return score


def _own_function(fn: Any, names: tuple[str, ...]) -> str | None:
    """A hint when ``fn`` is one of the collection's own functions passed as it is, else None."""
    module = getattr(fn, "__module__", None) or ""
    if module.split(".")[0] in ("mha_chapters", "mha_lib"):
        return _(NOT_YET) + _("{fn} is the collection's own function; write your own {names}, with the loop or "
                              "the indexing the exercise describes.").format(
            fn=getattr(fn, "__name__", repr(fn)), names=" / ".join(names))
    return None


def _after_earlier(tokens: Tensor, t: int) -> list[int]:
    return [s + 1 for s in range(t) if tokens[s] == tokens[t]]


def check_induction_score(fn: Any) -> None:
    """Exercise: ``my_induction_score(weights, tokens)``: the mean weight on the keys that follow an earlier
    occurrence of the query's token, over the queries that have such a key."""
    own = _own_function(fn, ("my_induction_score",))
    if own is not None:
        report(own)
        return
    wrong = {
        _induction_variant(lambda tokens, t: [s for s in range(t) if tokens[s] == tokens[t]]):
            _("you summed the weight on the earlier occurrence ITSELF (key s, where token s equals token t); an "
              "induction head looks one step further, at key s + 1, the token that came next."),
        _induction_variant(_after_earlier, mean=True):
            _("you took the MEAN of the weights on a query's keys; the score SUMS them: the weight the head puts on "
              "all the keys that came next, together. Average only over the queries."),
        _induction_variant(lambda tokens, t: [s + 1 for s in range(t) if tokens[s] == tokens[t]][:1]):
            _("you took only the FIRST earlier occurrence; when the token occurred several times, each key after an "
              "occurrence counts: sum over all of them."),
        _induction_variant(lambda tokens, t: [s + 1 for s in range(t - 1) if tokens[s] == tokens[t]]):
            _("you kept only keys j < t; the key after an occurrence at s = t - 1 is the query t itself, which the "
              "causal mask shows: keep the keys j <= t."),
        _induction_variant(_after_earlier, divide_by_all=True):
            _("you averaged over every query; the score averages only over the queries whose token occurred before "
              "(the others have no key to look for). If your loop over s runs to t, range(t + 1), s = t counts each "
              "query as its own earlier occurrence: the earlier occurrences are s < t, range(t)."),
        _induction_variant(lambda tokens, t: [s + 1 for s in range(t) if tokens[s] == tokens[t]][-1:]):
            _("you took only the LAST earlier occurrence; when the token occurred several times, each key after an "
              "occurrence counts: sum over all of them."),
        _induction_variant(lambda tokens, t: [s + 1 for s in range(len(tokens) - 1)
                                              if s != t and tokens[s] == tokens[t]]):
            _("you also counted occurrences AFTER the query (s > t): an earlier occurrence has s < t, and only "
              "those keys are visible to query t (the causal mask)."),
        _induction_variant(lambda tokens, t: [s - 1 for s in range(1, t) if tokens[s] == tokens[t]]):
            _("you took the key BEFORE the earlier occurrence (s - 1); the induction head wants the token that "
              "FOLLOWED it, key s + 1."),
    }
    check_function(_as_number(fn) if callable(fn) else fn, _induction_right, _induction_cases(),
                   name="my_induction_score", arg_names=["weights", "tokens"],
                   hints={_as_number(f): hint for f, hint in wrong.items()},
                   success=_("for each query t whose token occurred before (at s < t), the weight on the keys s + 1, "
                             "summed; then the mean over those queries."))


# ---- exercise 3: predict which ablations hurt ---------------------------------------------------------------------

# A: the previous-token head of layer 1, B: the other head of layer 1, C: the layer-2 head with the higher induction
# score, D: both heads of layer 2. The chapter measures and asserts the answer at every seed it trains.
ABLATIONS = ("A", "B", "C", "D")
HURT = ("A", "D")  # the ablations that raise the loss on the repeated part by more than 1.5 nats


def _letters(answer: Any) -> tuple[str, ...] | None:
    """An answer of letters as a sorted tuple of capitals ("AD", ["a", "d"], {"D", "A"}, a numpy array); else None."""
    if isinstance(answer, np.ndarray):
        answer = answer.tolist()
    if isinstance(answer, str):
        answer = [letter for letter in answer if not letter.isspace() and letter not in ",;+&"]
    if isinstance(answer, (list, tuple, set, frozenset)) and answer and all(isinstance(item, str) for item in answer):
        return tuple(sorted({item.strip().upper() for item in answer}))
    return None


def check_which_ablation_hurts(answer: Any) -> None:
    """Exercise: which of the ablations A-D raise the two-layer model's repeated-part loss by more than 1.5 nats."""
    if answer is None or contains_ellipsis(answer):
        report(_(NOT_YET) + _("write your prediction as a string of letters, e.g. answer = \"BC\", then run this cell "
                              "again."))
        return
    letters = _letters(answer)
    if letters is None:
        report(_(NOT_YET) + _("write the letters of the ablations you predict as a string such as \"BC\" or a list "
                              "such as [\"B\", \"C\"]; got {answer!r}.").format(answer=answer))
        return
    unknown = [letter for letter in letters if letter not in ABLATIONS]
    if unknown:
        report(_(NOT_YET) + _("the ablations are A, B, C and D; {unknown} is not one of them.").format(
            unknown=", ".join(unknown)))
        return
    if "B" in letters:
        report(_(NOT_YET) + _("B, the other head of layer 1, is not part of the circuit: the induction heads find "
                              "their keys through what the previous-token head writes, not through it."))
        return
    if "C" in letters:
        report(_(NOT_YET) + _("C zeroes one induction head, but the other one still copies: two heads doing one job "
                              "back each other up (chapter 06), and the loss rises by less."))
        return
    hints = {
        ("D",): _("the induction heads find the key after an earlier occurrence by the token BEFORE that key, which "
                  "only the previous-token head wrote there (K-composition). Without it (A) they lose their keys."),
        ("A",): _("the previous-token head only prepares the keys; the copying itself is done by the heads of layer "
                  "2, so zeroing both of them (D) hurts too."),
    }
    check_answer(letters, HURT, name=_("the ablations that hurt"), hints=hints,
                 success=_("A and D: zero the previous-token head or both induction heads and the copying is gone; "
                           "the two kinds of head work only together."))
