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
    1: Function(parts=[Part("random causal weights, 2 to 30 tokens",
                            CAUSAL + "cases = [(causal(n),) for n in (2, 7, 16, 24, "
                                     "int(torch.randint(3, 31, (1,), generator=g)))]")],
                reference="""\
def reference(weights):
    rows = tensor_.tolist(weights)
    return sum(rows[t][t - 1] for t in range(1, len(rows))) / (len(rows) - 1)""",
                compare=NUMBER),
    # For each query t whose token occurred at s < t, the weight on the keys s + 1, summed; the mean over those t.
    2: Function(parts=[
        Part("a repeated span: one earlier occurrence per query",
             CAUSAL + """\
cases = []
for period in (3, 5, 8, int(torch.randint(4, 12, (1,), generator=g))):
    length = period + int(torch.randint(1, period + 1, (1,), generator=g))  # shorter than two periods
    cases.append((causal(length), torch.randperm(32, generator=g)[:period].repeat(2)[:length]))"""),
        Part("tokens that occurred several times",
             CAUSAL + "cases = [(causal(n), torch.randint(4, (n,), generator=g)) for n in (12, 17, 24)]")],
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
    # Measured and asserted at each of the chapter's three seeds: A and D raise the loss by more than 1.5 nats. No
    # variant: the answer is a measurement of the chapter's models, not a number a course could redraw.
    3: Value(check=letters_check("answer", "ad", "abcd")),
}

# Only the last earlier occurrence: right while a token occurred once before, wrong when it occurred several times.
PARTLY_RIGHT = {2: '''\
def my_induction_score(weights, tokens):
    sums = []
    for t in range(len(tokens)):
        keys = [s + 1 for s in range(t) if tokens[s] == tokens[t]]
        if keys:
            sums.append(weights[t, keys[-1]].item())
    return sum(sums) / len(sums)'''}

EXPLAIN = [Explain(
    after=3, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does an induction head need a previous-token head "
                    "in an earlier layer? Why can one layer of attention not learn this task?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么归纳头需要前面某一层中的前一词元头？为什么一层注意力学不会这个"
                       "任务？"},
    model={"en": "At query t the induction head looks for the key j whose previous token is x_t, x_{j-1} = x_t. "
                 "A key is computed from what the residual stream holds at position j; in the embedding that is only "
                 "x_j and j. The previous-token head of layer 1 writes x_{j-1} into position j, and the layer-2 "
                 "head's W_k reads it (K-composition); zeroing that head blinds the induction heads. A one-layer "
                 "head sees only the embeddings, so it can find a key by its own token or by a fixed offset, and "
                 "the period changes from sequence to sequence: no fixed offset works.",
           "zh_CN": "在查询 t 处，归纳头要找的是前一个词元等于 x_t 的键 j，即 x_{j-1} = x_t。键由残差流在位置 j 上的内容"
                    "计算；在嵌入中，那里只有 x_j 和 j。第 1 层的前一词元头把 x_{j-1} 写进位置 j，第 2 层的头再通过 "
                    "W_k 读出它（K 组合）；把这个头置零，归纳头就找不到它们的键了。单层的头只能看到嵌入，只能按键自己"
                    "的词元或按固定的偏移找键，而周期随序列而变：没有哪个固定偏移能行。"},
    rubric={"en": "- 1 point: the key at j must carry the token before it, x_{j-1}, which the embedding does not "
                  "hold; the previous-token head writes it into the residual stream and the induction head's keys "
                  "read it (K-composition; ablating it blinds the induction heads).\n"
                  "- 1 point: one layer's keys see only each position's own token and position, and the period "
                  "varies between sequences, so no fixed offset finds the token to copy.",
            "zh_CN": "- 1 分：位置 j 的键必须带有它前面的词元 x_{j-1}，而嵌入中没有它；前一词元头把它写进残差流，归纳头"
                     "的键读出它（K 组合；消融这个头会让归纳头找不到键）。\n"
                     "- 1 分：单层的键只能看到每个位置自己的词元和位置，而周期随序列变化，所以没有哪个固定偏移能找到"
                     "要复制的词元。"})]
