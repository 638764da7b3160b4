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
                       "而不影响别的？"})]

# The 20 trainings behind the table of what the heads learn, seed by seed (a minute): no answer depends on them.
NOT_RUN_WHEN_GRADING = ("SEEDS, HEADS, STEPS = range(5), (1, 2, 4, 8), 250",)
