"""Grading of chapter 03, splitting heads."""

from grading import Explain, Function, Part, Value, Variant

EXERCISES = {
    # Three sentences of 6 features split into h heads: (3 h, 2, 6 / h); sentence 2, head 1 is sample 2 h + 1.
    1: Value(parts=["shape", "sample"], variant=Variant(
        params=lambda rng: {"h": rng.choice([2, 6])},
        replace=[("`num_heads = 3`", "`num_heads = {h}`")],
        solution="answer = ((3 * {h}, 2, 6 // {h}), 2 * {h} + 1)",
        expected=lambda p: ((3 * p["h"], 2, 6 // p["h"]), 2 * p["h"] + 1))),
    2: Function(library=["mha_lib.functional:transpose_qkv"], parts=[Part("random sizes", "cases = [(torch.randn(b, n, h * d, generator=g), h) for b, n, h, d in "
                                            "[(2, 3, 2, 4), (3, 2, 3, 2), (1, 4, 4, 3)]]")]),
    3: Function(library=["mha_lib.functional:transpose_output"], parts=[Part("random sizes", "cases = [(torch.randn(b * h, n, d, generator=g), h) for b, n, h, d in "
                                            "[(2, 3, 2, 4), (3, 2, 3, 2), (1, 4, 4, 3)]]")]),
    4: Function(parts=[Part("random lengths", "cases = [(torch.randint(0, 9, (b,), generator=g), h) for b, h in "
                                              "[(3, 2), (2, 4), (4, 3), (1, 5)]]")]),
}

PARTLY_RIGHT = {4: "def my_repeat_valid_lens(valid_lens, num_heads):\n    return valid_lens.repeat(num_heads)"}

EXPLAIN = [Explain(
    after=4, points=2,
    question={"en": "**Question (explain, graded by hand).** Why must the valid lengths be repeated with "
                    "`repeat_interleave` and not `repeat`, and why would a test batch whose sentences all have the "
                    "same length not notice the difference?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么有效长度必须用 `repeat_interleave` 而不是 `repeat` 来重复？"
                       "为什么一个所有句子长度都相同的测试批量察觉不到两者的区别？"},
    model={"en": "transpose_qkv puts the heads of one sentence next to each other in the folded batch (sample = "
                 "sentence * num_heads + head), so each length must be repeated in place; repeat tiles the whole "
                 "batch and gives heads the lengths of other sentences. With equal lengths both give the same tensor.",
           "zh_CN": "transpose_qkv 把同一个句子的各个头在折叠后的批量中排在一起（样本 = 句子 * num_heads + 头），所以每个"
                    "长度必须就地重复；repeat 把整个批量平铺，会让头拿到别的句子的长度。长度都相同时两者得到同一个张量。"},
    rubric={"en": "- 1 point: the order of the folded batch: the heads of one sentence are adjacent, so lengths "
                  "repeat in place.\n- 1 point: with equal lengths, repeat and repeat_interleave give the same "
                  "tensor, so the bug hides.",
            "zh_CN": "- 1 分：折叠批量的顺序：同一句子的各个头相邻，所以长度要就地重复。\n"
                     "- 1 分：长度都相同时，repeat 和 repeat_interleave 结果相同，错误被掩盖。"})]
