"""Grading of chapter 11, masks as functions."""

from grading import Explain, Function, Part, Value  # noqa: F401 - Value for exercises to come

GRIDS = ("cases = [(torch.zeros(1, 1, 1, 1, dtype=torch.long), torch.zeros(1, 1, 1, 1, dtype=torch.long), "
         "torch.arange(n).view(1, 1, n, 1), torch.arange(n).view(1, 1, 1, n)) for n in (5, 9, 14)]")

EXERCISES = {
    1: Function(parts=[Part("grids of 5, 9 and 14 tokens", GRIDS)], compare="""\
ok = type_(result) is tuple_ and result[0] == "tensor"
if ok:
    got_mask = torch.broadcast_to(torch.tensor(result[2]), want[1]).bool()
    ok = same(values(plain(got_mask)), values(want))"""),
    2: Function(library=["mha_lib.flex:alibi_slopes"], parts=[Part("2 to 32 heads", "cases = [(n,) for n in (2, 4, 8, 16, 32)]")],
                compare="ok = same(values(result), values(want))"),
    3: Function(parts=[Part("random lengths", "cases = [([int(n) for n in torch.randint(1, 6, (k,), generator=g)],) "
                                              "for k in (2, 3, 5)]")],
                compare="ok = same(values(result), values(want))"),
}

PARTLY_RIGHT = {3: '''\
def my_document_ids(lengths):
    starts = torch.tensor(lengths).cumsum(0)[:-1]
    return (torch.arange(sum(lengths)).view(-1, 1) > starts).sum(-1)'''}

EXPLAIN = [Explain(
    after=1, points=2,
    question={"en": "**Question (explain, graded by hand).** A block mask is built from a `mask_mod`. Why can it "
                    "skip whole tiles of the score matrix, and roughly how much does that save for a causal mask?",
              "zh_CN": "**问题（解释，人工评分）。** 块掩码由 `mask_mod` 构建。为什么它能跳过分数矩阵中的整块？对因果掩码大约"
                       "能省下多少？"})]
