"""Grading of chapter 09, the KV cache and grouped-query attention."""

from grading import Explain, Function, Part, Value, Variant

EXERCISES = {
    # 8 query heads in groups of 8 / kv: query head i reads key-value head i // (8 / kv).
    1: Value(variant=Variant(
        params=lambda rng: {"kv": rng.choice([1, 4])},
        replace=[("and 2 key-value heads", "and {kv} key-value heads", "en"), ("和 2 个键值头", "和 {kv} 个键值头", "zh_CN")])),
    2: Function(library=["mha_lib.grouped:repeat_kv_heads"], parts=[Part("random groups", "cases = [(torch.randn(b, kv, n, d, generator=g), groups) for b, kv, n, d, "
                                            "groups in [(2, 2, 3, 4, 4), (1, 3, 2, 2, 2), (2, 1, 4, 3, 5)]]")]),
    3: Value(),
    4: Function(parts=[Part("random sizes", "cases = [tuple_(int(n) for n in torch.randint(1, 100, (6,), generator=g)) "
                                            "for _ in range(6)]")]),
}

PARTLY_RIGHT = {2: "def my_repeat_kv_heads(X, num_groups):\n    return X.repeat(1, num_groups, 1, 1)"}

EXPLAIN = [Explain(
    after=4, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does generating with a KV cache give exactly the "
                    "same tokens as recomputing every step, and what does the cache cost?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么用键值缓存生成的词元与每一步都重新计算完全相同？缓存的代价是什么？"})]

# The tokens-per-second table (a minute of timing on one thread): no answer depends on it.
NOT_RUN_WHEN_GRADING = ("results = time_generation(model, prompt, lengths",)
