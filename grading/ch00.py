"""Grading of chapter 00, start here."""

from grading import Explain, Value, Variant

EXERCISES = {
    # The parameter count with one head and with eight: the heads split num_hiddens, the count stays 4 d^2.
    1: Value(parts=["one head", "eight heads"], variant=Variant(
        params=lambda rng: {"d": rng.choice([32, 48, 96, 128, 256])},
        replace=[("MultiHeadAttention(64, 64, 64, 64, num_heads)", "MultiHeadAttention({d}, {d}, {d}, {d}, num_heads)")])),
}

# Right with one head, and the count with eight heads divided by 8 (as if each head had its own d x d projections);
# built from the right answer, whatever the course's numbers.
PARTLY_RIGHT = {1: lambda right: right + "\nanswer = (answer[0], answer[1] // 8)"}

EXPLAIN = [Explain(
    after=1, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does the number of heads not change the number of "
                    "parameters of the layer?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么头数不改变这一层的参数量？"})]
