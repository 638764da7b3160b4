"""Grading of chapter 00, start here."""

from grading import Explain, Value, Variant

EXERCISES = {
    # The parameter count with one head and with eight: the heads split num_hiddens, the count stays 4 d^2.
    1: Value(parts=["one head", "eight heads"], variant=Variant(
        params=lambda rng: {"d": rng.choice([32, 48, 96, 128, 256])},
        replace=[("MultiHeadAttention(64, 64, 64, 64, num_heads)", "MultiHeadAttention({d}, {d}, {d}, {d}, num_heads)")],
        solution="answer = (4 * {d} * {d}, 4 * {d} * {d})",
        expected=lambda p: (4 * p["d"] ** 2, 4 * p["d"] ** 2))),
}

# Right with one head, and the count with eight heads divided by 8 (as if each head had its own d x d projections);
# built from the right answer, whatever the course's numbers.
PARTLY_RIGHT = {1: lambda right: right + "\nanswer = (answer[0], answer[1] // 8)"}

EXPLAIN = [Explain(
    after=1, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does the number of heads not change the number of "
                    "parameters of the layer?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么头数不改变这一层的参数量？"},
    model={"en": "The heads split num_hiddens between them: W_q, W_k, W_v and W_o stay num_hiddens x num_hiddens "
                 "matrices, and splitting only reshapes their outputs into num_heads slices of head_dim features.",
           "zh_CN": "各个头分摊 num_hiddens：W_q、W_k、W_v 和 W_o 仍是 num_hiddens x num_hiddens 的矩阵，切分只是把它们的"
                    "输出重塑成 num_heads 片、每片 head_dim 个特征。"},
    rubric={"en": "- 1 point: the four projections keep their size (num_hiddens x num_hiddens) whatever num_heads is.\n"
                  "- 1 point: splitting into heads is a reshape of the projected features (num_heads x head_dim = "
                  "num_hiddens), which adds no weights.",
            "zh_CN": "- 1 分：无论 num_heads 是多少，四个投影的大小都不变（num_hiddens x num_hiddens）。\n"
                     "- 1 分：分头只是对投影后的特征做重塑（num_heads x head_dim = num_hiddens），不增加权重。"})]
