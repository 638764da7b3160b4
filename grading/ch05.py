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
                 ("16 个头", "{h} 个头", "zh_CN"), ("8 个序列、每个 1024 个词元", "{b} 个序列、每个 {n} 个词元", "zh_CN")],
        solution="answer = {b} * {h} * {n} * {n} * 4",
        expected=lambda p: p["b"] * p["h"] * p["n"] * p["n"] * 4)),
    5: Value(),
}

PARTLY_RIGHT = {1: "answer = [1, 2, 4, 8, 16, 48]"}

EXPLAIN = [Explain(
    after=3, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does the number of heads not appear in the FLOP "
                    "count of the layer?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么这一层的 FLOP 数里不出现头数？"},
    model={"en": "The projections are num_hiddens x num_hiddens whatever the heads. In the attention products each of "
                 "the h heads works on head_dim = num_hiddens / h features, so h heads together do the multiply-adds "
                 "of one head with num_hiddens features.",
           "zh_CN": "无论头数多少，投影都是 num_hiddens x num_hiddens。在注意力的两个矩阵乘法中，h 个头各处理 head_dim = "
                    "num_hiddens / h 个特征，所以 h 个头加起来的乘加次数等于一个有 num_hiddens 个特征的头。"},
    rubric={"en": "- 1 point: the four projections do not depend on the number of heads.\n"
                  "- 1 point: h heads x head_dim = num_hiddens, so the attention products sum to the same count.",
            "zh_CN": "- 1 分：四个投影与头数无关。\n- 1 分：h 个头 x head_dim = num_hiddens，所以注意力乘法的总数不变。"})]
