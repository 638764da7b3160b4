"""The checkers of chapter 07: each accepts the right answer and names the typical mistake of each wrong one."""

import pytest

from mha_chapters.exercises import ch07


def attention_flops_right(batch_size, seq_len, num_hiddens):
    return 4 * batch_size * seq_len * seq_len * num_hiddens


def attention_flops_one_product(b, n, d):
    return 2 * b * n * n * d


def attention_flops_multiply_adds_of_one_product(b, n, d):
    return b * n * n * d


def attention_flops_linear(b, n, d):
    return 4 * b * n * d


def attention_flops_raises(b, n, d):
    raise NotImplementedError


RIGHT = [
    (ch07.check_call_counts, (64, 8, 1)),
    (ch07.check_call_counts, [64, 8, 1]),
    (ch07.check_score_bytes_answer, 8 * 12 * 4096 * 4096 * 2),
    (ch07.check_attention_flops, attention_flops_right),
    (ch07.check_core_peak, 96),
    (ch07.check_core_peak, 96.0),
    (ch07.check_core_peak, 3e9 * 2 * 8 * 2 / 1e9),
]

WRONG = [
    (ch07.check_call_counts, (64, 512, 1), "one call per HEAD"),
    (ch07.check_call_counts, (512, 8, 1), "one call per sample (64)"),
    (ch07.check_call_counts, (64, 8, 8), "one call for everything"),
    (ch07.check_call_counts, (1, 8, 64), "the order is"),
    (ch07.check_score_bytes_answer, 8 * 12 * 4096 * 4096 * 4,
     "4 bytes per score (float32), or the scores and the softmax weights together"),
    (ch07.check_score_bytes_answer, 8 * 12 * 4096 * 4096, "each float16 score takes 2 bytes"),
    (ch07.check_score_bytes_answer, 8 * 4096 * 4096 * 2, "multiply by num_heads = 12"),
    (ch07.check_score_bytes_answer, 8 * 12 * 4096 * 2, "grows as n^2, not n"),
    (ch07.check_attention_flops, attention_flops_one_product, "attention has TWO products"),
    (ch07.check_attention_flops, attention_flops_multiply_adds_of_one_product, "count both products"),
    (ch07.check_attention_flops, attention_flops_linear, "the count grows as n^2"),
    (ch07.check_core_peak, 48, "either you counted one FMA unit (the core has 2) or one FLOP per FMA"),
    (ch07.check_core_peak, 24, "count both FMA units"),
    (ch07.check_core_peak, 96e9, "divide by 1e9"),
    (ch07.check_call_counts, (8, 64, 1), "64 samples, 8 heads"),
    (ch07.check_call_counts, (64, 8, 512), "makes ONE call"),
    (ch07.check_core_peak, 192, "8 float32 lanes, not 16"),
    (ch07.check_core_peak, 12, "multiply by 8"),
    (ch07.check_core_peak, 6, "one lane of one FMA unit"),
    (ch07.check_core_peak, 3, "count the FLOPs in each cycle"),
]


@pytest.mark.parametrize(("checker", "answer"), RIGHT)
def test_the_right_answer_is_correct(checker, answer, capsys):
    checker(answer)
    out = capsys.readouterr().out
    assert out.startswith("✅ Correct") and out.count("\n") == 1


@pytest.mark.parametrize(("checker", "answer", "hint"), WRONG)
def test_each_typical_mistake_gets_its_own_hint(checker, answer, hint, capsys):
    checker(answer)
    out = capsys.readouterr().out
    assert out.startswith("❌ Not yet") and hint in out and out.count("\n") == 1


@pytest.mark.parametrize("answer", [None, "96", 95, attention_flops_raises])
def test_other_answers_are_not_yet_and_never_raise(answer, capsys):
    ch07.check_core_peak(answer)
    ch07.check_attention_flops(answer)
    out = capsys.readouterr().out
    assert out.count("❌ Not yet") == 2 and "Traceback" not in out
