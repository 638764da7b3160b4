"""Grading of chapter 13, heads that work together (induction heads)."""

from grading import Explain, Function, Part, Value, letters_check

# The weights of one head on one sequence, as the chapter's scores read them: random, causal, rows summing to 1.
CAUSAL = """\
def causal(n):  # (n, n) attention weights, queries by keys; key j > query t gets weight 0
    scores = 3 * torch.randn(n, n, generator=g, dtype=torch.float64)
    return scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -torch.inf).softmax(dim=-1)
"""

# A score may come back as a float or as a one-element tensor (the chapter's checker takes both).
NUMBER = """\
number = values(result)
while type_(number) is tuple_ and len(number) == 1:
    number = number[0]
ok = same(number, want)"""

EXERCISES = {
    # The mean of weights[t, t - 1] over t = 1 .. seq_len - 1, on the weights' values.
    1: Function(library=["mha_chapters.induction:previous_token_score"],
                parts=[Part("random causal weights, 2 to 30 tokens",
                            CAUSAL + "cases = [(causal(n),) for n in (2, 7, 16, 24, "
                                     "int(torch.randint(3, 31, (1,), generator=g)))]")],
                reference="""\
def reference(weights):
    rows = tensor_.tolist(weights)
    return sum(rows[t][t - 1] for t in range(1, len(rows))) / (len(rows) - 1)""",
                compare=NUMBER),
    # For each query t whose token occurred at s < t, the weight on the keys s + 1, summed; the mean over those t.
    # The parts follow the checker's hints: one earlier occurrence (the key s + 1, not s; the mean over the queries
    # that have a key), several (sum them all, not the mean, the first or the last), and a token twice in a row (its
    # key s + 1 = t is the query itself: j <= t, not j < t).
    2: Function(library=["mha_chapters.induction:induction_score"], parts=[
        Part("a repeated span: one earlier occurrence per query",
             CAUSAL + """\
cases = []
for period in (3, 5, 8, int(torch.randint(4, 12, (1,), generator=g))):
    length = period + int(torch.randint(1, period + 1, (1,), generator=g))  # shorter than two periods
    cases.append((causal(length), torch.randperm(32, generator=g)[:period].repeat(2)[:length]))"""),
        Part("tokens that occurred several times",
             CAUSAL + "cases = [(causal(n), torch.randint(4, (n,), generator=g)) for n in (12, 17, 24)]"),
        Part("a token twice in a row: the key after it is the query itself",
             CAUSAL + """\
cases = []
for period in (3, 4, int(torch.randint(5, 9, (1,), generator=g))):
    span = torch.randperm(32, generator=g)[:period]
    span[1] = span[0]  # the first two tokens of each span are the same
    length = 2 * period + int(torch.randint(0, period, (1,), generator=g))
    cases.append((causal(length), span.repeat(3)[:length]))""")],
        reference="""\
def reference(weights, tokens):
    rows, ids = tensor_.tolist(weights), tensor_.tolist(tokens)
    sums = []
    for t in range(len(ids)):
        keys = [s + 1 for s in range(t) if ids[s] == ids[t]]
        if keys:
            sums.append(sum(rows[t][j] for j in keys))
    return sum(sums) / len(sums)""",
        compare=NUMBER),
    # Predicted before section 5, which measures it and asserts at each of the chapter's three seeds that A and D
    # raise the loss by more than 1.5 nats. No variant: the answer is a measurement of the chapter's models, not a
    # number a course could redraw.
    3: Value(check=letters_check("answer", "ad", "abcd")),
}

# Only the last earlier occurrence: right while a token occurred once before (the first part), wrong when it occurred
# several times.
PARTLY_RIGHT = {2: '''\
def my_induction_score(weights, tokens):
    sums = []
    for t in range(len(tokens)):
        keys = [s + 1 for s in range(t) if tokens[s] == tokens[t]]
        if keys:
            sums.append(weights[t, keys[-1]].item())
    return sum(sums) / len(sums)'''}

# After exercise 2, the chapter's last answer (exercise 3 stands before section 5): the question is answered once the
# chapter has shown the path ablation.
EXPLAIN = [Explain(
    after=2, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does an induction head need a previous-token head "
                    "in an earlier layer? Why can one layer of attention not learn this task?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么归纳头需要前面某一层中的前一词元头？为什么一层注意力学不会这个"
                       "任务？"})]
