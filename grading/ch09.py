"""Grading of chapter 09, the KV cache and grouped-query attention."""

from grading import Explain, Function, Part, Value, Variant

EXERCISES = {
    # 8 query heads in groups of 8 / kv: query head i reads key-value head i // (8 / kv).
    1: Value(variant=Variant(
        params=lambda rng: {"kv": rng.choice([1, 4])},
        replace=[("and 2 key-value heads", "and {kv} key-value heads", "en"), ("和 2 个键值头", "和 {kv} 个键值头", "zh_CN")],
        solution="answer = tuple(i // (8 // {kv}) for i in range(8))",
        expected=lambda p: tuple(i // (8 // p["kv"]) for i in range(8)))),
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
              "zh_CN": "**问题（解释，人工评分）。** 为什么用键值缓存生成的词元与每一步都重新计算完全相同？缓存的代价是什么？"},
    model={"en": "With a causal mask the keys and values of earlier positions depend only on earlier tokens, so they "
                 "do not change when a token is appended: reusing them is exact. The cache costs memory that grows "
                 "with the context length, layers and key-value heads (which is what grouped-query attention cuts).",
           "zh_CN": "在因果掩码下，之前位置的键和值只依赖之前的词元，追加新词元时它们不会改变：重复使用它们是精确的。缓存的"
                    "代价是内存，它随上下文长度、层数和键值头数增长（分组查询注意力削减的正是它）。"},
    rubric={"en": "- 1 point: causal masking: earlier keys and values never change, so caching is exact.\n"
                  "- 1 point: the cost is memory, growing with context length (and layers, key-value heads).",
            "zh_CN": "- 1 分：因果掩码：之前的键和值不会改变，所以缓存是精确的。\n"
                     "- 1 分：代价是内存，随上下文长度（以及层数、键值头数）增长。"})]

# The tokens-per-second table (a minute of timing on one thread): no answer depends on it.
NOT_RUN_WHEN_GRADING = ("results = time_generation(model, prompt, lengths",)
