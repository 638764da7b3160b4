"""Grading of chapter 06, what heads learn."""

from grading import Explain, Function, Part, Value

EXERCISES = {
    # One row of five targets, or the (1, 5) tensor that task.targets returns.
    1: Value(check="""\
row = values(got)
if type_(row) is tuple_ and len(row) == 1 and type_(row[0]) is tuple_:
    row = row[0]
assert same(row, (-100, 33, 13, 43, 13)), 'not the targets'"""),
    2: Function(parts=[Part("random heads", "cases = [(torch.randn(b, q, h * d, generator=g), head, h) for b, q, h, d, head "
                                            "in [(2, 3, 2, 4, 1), (1, 4, 4, 3, 0), (3, 2, 3, 2, 2), (2, 2, 8, 1, 5)]]")]),
}

PARTLY_RIGHT = {1: "answer = [-100, 13, 43, 13, 53]"}

EXPLAIN = [Explain(
    after=2, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does setting one head's slice of the concatenated "
                    "outputs to zero remove exactly that head's contribution to the layer's output, and nothing else?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么把拼接输出中某一个头的那一片置零，恰好去掉这个头对层输出的贡献，"
                       "而不影响别的？"},
    model={"en": "W_o is linear: its output is a sum over heads of (the head's block of W_o's columns) times (that "
                 "head's output). Zeroing one slice removes one term of the sum and leaves the other heads' terms as "
                 "they were.",
           "zh_CN": "W_o 是线性的：它的输出是各个头之和，每一项是 W_o 中属于该头的那一块列乘以该头的输出。把一片置零就去掉了"
                    "和中的一项，其他头的项保持不变。"},
    rubric={"en": "- 1 point: the output projection is linear, a sum of one term per head.\n"
                  "- 1 point: each head owns a contiguous slice of features, so zeroing it removes only its term.",
            "zh_CN": "- 1 分：输出投影是线性的，是每个头一项之和。\n- 1 分：每个头占据一段连续的特征，置零只去掉它自己的那一项。"})]

# The 20 trainings behind the table of what the heads learn, seed by seed (a minute): no answer depends on them.
NOT_RUN_WHEN_GRADING = ("SEEDS, HEADS, STEPS = range(5), (1, 2, 4, 8), 250",)
