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
             compare="ok = same(result, want, 1e-2, 1e-3)"),
        Part("float32 scores at the bottom of their range", SOFTMAX_CASES.replace(".half()", ".float() - 3e38"),
             compare="ok = same(result, want, 1e-5, 1e-6)")]),
    # The split queries of 4 words without a batch axis, and the keys each word attends to.
    2: Value(),
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
                       "`torch.finfo(scores.dtype).min` 在每种数据类型中都可行？"})]
