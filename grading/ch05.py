"""Grading of chapter 05, the interactive explorer."""

from grading import Explain, Function, Part, Value, Variant

EXERCISES = {
    # Every divisor of 48, in any order.
    1: Value(check="assert type_(got) is tuple_ and same(tuple_(sorted(got)), (1, 2, 3, 4, 6, 8, 12, 16, 24, 48)), "
                   "'not the num_heads options'"),
    2: Value(),
    3: Function(parts=[Part("random sizes", "cases = [tuple_(int(n) for n in torch.randint(1, 65, (4,), generator=g)) "
                                            "for _ in range(6)]")]),
    # Bytes of float32 scores: batch_size * num_heads * n * n * 4.
    4: Value(variant=Variant(
        params=lambda rng: {"h": rng.choice([4, 8, 12, 32]), "b": rng.choice([2, 4, 16]), "n": rng.choice([512, 2048])},
        replace=[("16 heads on a batch of 8\nsequences of 1024 tokens", "{h} heads on a batch of {b}\nsequences of {n} tokens", "en"),
                 ("16 个头", "{h} 个头", "zh_CN"), ("8 个序列、每个 1024 个词元", "{b} 个序列、每个 {n} 个词元", "zh_CN")])),
    5: Value(),
}

PARTLY_RIGHT = {1: "answer = [1, 2, 4, 8, 16, 48]"}

EXPLAIN = [Explain(
    after=3, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does the number of heads not appear in the FLOP "
                    "count of the layer?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么这一层的 FLOP 数里不出现头数？"})]
