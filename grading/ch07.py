"""Grading of chapter 07, batching on the CPU and the GPU."""

from grading import Explain, Function, Part, Value, Variant

EXERCISES = {
    # One call per sample, one per head (the heads' loop runs over the whole batch), one batched call.
    1: Value(parts=["loop over samples", "loop over heads", "batched"], variant=Variant(
        params=lambda rng: {"b": rng.choice([16, 32, 128]), "h": rng.choice([2, 4, 6, 12])},
        replace=[("`batch_size = 64`", "`batch_size = {b}`"), ("and 8 heads", "and {h} heads", "en"),
                 ("、8 个头", "、{h} 个头", "zh_CN"), ("call_plan(64, 12, 96, 8)", "call_plan({b}, 12, 96, {h})")])),
    # Bytes of one float16 score tensor: batch_size * 12 heads * n * n * 2.
    2: Value(variant=Variant(
        params=lambda rng: {"b": rng.choice([2, 4, 16, 32]), "n": rng.choice([512, 1024, 2048, 8192])},
        replace=[("`batch_size = 8`", "`batch_size = {b}`"), ("4096 tokens", "{n} tokens", "en"),
                 ("4096 个词元", "{n} 个词元", "zh_CN"), ("4096, 4096", "{n}, {n}")])),
    3: Function(parts=[Part("random sizes", "cases = [tuple_(int(n) for n in torch.randint(1, 300, (3,), generator=g)) "
                                            "for _ in range(6)]")]),
    4: Value(),
}

# The heads' loop counted once per sample and head: right for the samples and the batched call only.
PARTLY_RIGHT = {1: lambda right: right + "\nanswer = (answer[0], answer[0] * answer[1], answer[2])"}

EXPLAIN = [Explain(
    after=1, points=2,
    question={"en": "**Question (explain, graded by hand).** For small inputs, why is one batched call faster than a "
                    "Python loop that makes one call per sample, although both do the same arithmetic?",
              "zh_CN": "**问题（解释，人工评分）。** 输入很小时，为什么一次批量调用比逐个样本调用一次的 Python 循环更快，"
                       "尽管两者做的算术一样多？"})]
