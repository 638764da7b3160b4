"""Grading of chapter 03, splitting heads."""

from grading import Explain, Function, Part, Value, Variant

EXERCISES = {
    # The 10..27 tensor of section 1 through transpose_qkv(X, 2): samples 1 (sentence 0, head 1) and 2 (sentence 1,
    # head 0), each (seq_len, head_dim).
    1: Value(parts=["sample 1", "sample 2"]),
    # Three sentences of 6 features split into h heads: (3 h, 2, 6 / h); sentence 2, head 1 is sample 2 h + 1.
    2: Value(parts=["shape", "sample"], variant=Variant(
        params=lambda rng: {"h": rng.choice([2, 6])},
        replace=[("`num_heads = 3`", "`num_heads = {h}`")])),
    3: Function(library=["mha_lib.functional:transpose_qkv"], parts=[Part("random sizes", "cases = [(torch.randn(b, n, h * d, generator=g), h) for b, n, h, d in "
                                            "[(2, 3, 2, 4), (3, 2, 3, 2), (1, 4, 4, 3)]]")]),
    4: Function(library=["mha_lib.functional:transpose_output"], parts=[Part("random sizes", "cases = [(torch.randn(b * h, n, d, generator=g), h) for b, n, h, d in "
                                            "[(2, 3, 2, 4), (3, 2, 3, 2), (1, 4, 4, 3)]]")]),
    5: Function(parts=[Part("random lengths", "cases = [(torch.randint(0, 9, (b,), generator=g), h) for b, h in "
                                              "[(3, 2), (2, 4), (4, 3), (1, 5)]]")]),
}

PARTLY_RIGHT = {5: "def my_repeat_valid_lens(valid_lens, num_heads):\n    return valid_lens.repeat(num_heads)"}

EXPLAIN = [Explain(
    after=5, points=2,
    question={"en": "**Question (explain, graded by hand).** Why must the valid lengths be repeated with "
                    "`repeat_interleave` and not `repeat`, and why would a test batch whose sentences all have the "
                    "same length not notice the difference?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么有效长度必须用 `repeat_interleave` 而不是 `repeat` 来重复？"
                       "为什么一个所有句子长度都相同的测试批量察觉不到两者的区别？"})]
