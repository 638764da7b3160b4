"""Grading of chapter 07, batching on the CPU and the GPU."""

from grading import Explain, Function, Part, Value, Variant

EXERCISES = {
    # One call per sample, one per head (the heads' loop runs over the whole batch), one batched call.
    1: Value(parts=["loop over samples", "loop over heads", "batched"], variant=Variant(
        params=lambda rng: {"b": rng.choice([16, 32, 128]), "h": rng.choice([2, 4, 6, 12])},
        replace=[("`batch_size = 64`", "`batch_size = {b}`"), ("and 8 heads", "and {h} heads", "en"),
                 ("、8 个头", "、{h} 个头", "zh_CN"), ("call_plan(64, 12, 96, 8)", "call_plan({b}, 12, 96, {h})")],
        solution="answer = ({b}, {h}, 1)",
        expected=lambda p: (p["b"], p["h"], 1))),
    # Bytes of one float16 score tensor: batch_size * 12 heads * n * n * 2.
    2: Value(variant=Variant(
        params=lambda rng: {"b": rng.choice([2, 4, 16, 32]), "n": rng.choice([512, 1024, 2048, 8192])},
        replace=[("`batch_size = 8`", "`batch_size = {b}`"), ("4096 tokens", "{n} tokens", "en"),
                 ("4096 个词元", "{n} 个词元", "zh_CN"), ("4096, 4096", "{n}, {n}")],
        solution="answer = {b} * 12 * {n} * {n} * 2",
        expected=lambda p: p["b"] * 12 * p["n"] * p["n"] * 2)),
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
                       "尽管两者做的算术一样多？"},
    model={"en": "Each call has a fixed cost (Python, PyTorch's dispatch, on a GPU a kernel launch) that dwarfs the "
                 "arithmetic of a small input. The loop pays it once per sample, the batched call once; its larger "
                 "matrices also use the vector units and threads better.",
           "zh_CN": "每次调用都有固定开销（Python、PyTorch 的分派，在 GPU 上还有内核启动），它远大于小输入的算术量。循环为每个"
                    "样本付一次，批量调用只付一次；更大的矩阵也能更好地利用向量单元和线程。"},
    rubric={"en": "- 1 point: a fixed overhead per call dominates when the work per call is small.\n"
                  "- 1 point: batching pays it once and gives larger matrices that use the hardware better.",
            "zh_CN": "- 1 分：每次调用的固定开销在每次调用的工作量很小时占主导。\n"
                     "- 1 分：批量只付一次开销，并给出更大的矩阵，更好地利用硬件。"})]
