"""Grading of chapter 08, pitfalls."""

from grading import Explain, Function, Part, Value

SOFTMAX_CASES = """\
cases = []
for b, q, k in [(2, 3, 4), (1, 5, 2), (3, 2, 6)]:
    mask = (torch.rand(b, q, k, generator=g) > 0.4).long()
    mask[..., 0] = 1
    cases.append((torch.randn(b, q, k, generator=g).half(), mask))"""

EXERCISES = {
    1: Function(parts=[
        Part("float16 scores", SOFTMAX_CASES, compare="ok = same(result, want, 1e-2, 1e-3)"),
        Part("a query that sees no key", SOFTMAX_CASES + "\nfor scores, mask in cases:\n    mask[0, 0] = 0",
             compare="ok = same(result, want, 1e-2, 1e-3)")]),
    # Two different valid_lens for which repeat and repeat_interleave agree: each with equal lengths.
    3: Value(check="""\
ok = type_(got) is tuple_ and len(got) == 2
pairs = [values(lens) for lens in got] if ok else []
for lens in pairs:
    ok = ok and type_(lens) is tuple_ and len(lens) == 2 and same(lens[0], lens[1]) and lens[0] >= 0
assert ok and not same(pairs[0], pairs[1]), 'answer_lens is not right'"""),
    4: Value(),
}

PARTLY_RIGHT = {4: "answer_overflow = -65604"}

EXPLAIN = [Explain(
    after=4, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does a mask filled with `-1e9` fail in float16, "
                    "and why does `torch.finfo(scores.dtype).min` work in every dtype?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么用 `-1e9` 填充的掩码在 float16 中会失败，而 "
                       "`torch.finfo(scores.dtype).min` 在每种数据类型中都可行？"},
    model={"en": "float16 holds numbers down to -65504 only: -1e9 does not fit (masked_fill refuses it, or it becomes "
                 "-inf and a fully masked row gives NaN). finfo(dtype).min is the most negative finite number of the "
                 "scores' own dtype, so it always fits, and exp of it minus the row maximum is 0.",
           "zh_CN": "float16 能表示的最小数只到 -65504：-1e9 放不下（masked_fill 会拒绝，或者变成 -inf，使整行被遮蔽的查询"
                    "得到 NaN）。finfo(dtype).min 是分数自身数据类型中最小的有限数，所以总能放下，减去行最大值后取 exp 为 0。"},
    rubric={"en": "- 1 point: -1e9 is outside float16's range (about -65504): an error, or -inf and NaN.\n"
                  "- 1 point: finfo(dtype).min is finite and in range for the scores' own dtype, and still gives "
                  "weight 0.",
            "zh_CN": "- 1 分：-1e9 超出 float16 的范围（约 -65504）：报错，或变成 -inf 并产生 NaN。\n"
                     "- 1 分：finfo(dtype).min 在分数自身的数据类型中是有限且在范围内的数，仍然给出权重 0。"})]
