"""Grading of chapter 10, tiled attention."""

from grading import Explain, Function, Part, Value, Variant

EXERCISES = {
    1: Function(parts=[
        Part("ordinary rows", "cases = [(torch.randn(5, generator=g, dtype=torch.float64), "
                              "torch.rand(5, generator=g, dtype=torch.float64) + 0.5, "
                              "torch.randn(5, generator=g, dtype=torch.float64) * 3) for _ in range(3)]"),
        Part("the first score and large scores",
             "cases = [(torch.full((3,), -torch.inf, dtype=torch.float64), torch.zeros(3, dtype=torch.float64), "
             "torch.randn(3, generator=g, dtype=torch.float64)), (torch.tensor([1000.0], dtype=torch.float64), "
             "torch.tensor([2.0], dtype=torch.float64), torch.tensor([1003.0], dtype=torch.float64))]")]),
    2: Function(parts=[
        Part("tiles smaller than the keys", "cases = [(b, q, k, v, t) for b, q, k, v, t in [(2, 16, 1000, 64, 128), "
                                            "(1, 7, 300, 8, 32), (4, 3, 65, 16, 64)]]"),
        Part("a tile larger than the keys", "cases = [(b, q, k, v, t) for b, q, k, v, t in [(2, 16, 100, 64, 128), "
                                            "(1, 5, 3, 8, 32)]]")]),
    # ceil(keys / tile) tiles; with causal=True only the keys the queries can see: ceil(min(keys, queries) / tile).
    3: Value(parts=["without a mask", "causal"], variant=Variant(
        params=lambda rng: {"k": rng.choice([700, 1500, 2100]), "t": rng.choice([64, 256]), "q": rng.choice([100, 384])},
        replace=[("1000 keys, tiles of 128 keys", "{k} keys, tiles of {t} keys", "en"),
                 ("1000 个键，每块 128 个键", "{k} 个键，每块 {t} 个键", "zh_CN"),
                 ("256 queries", "{q} queries", "en"), ("256 个查询", "{q} 个查询", "zh_CN")],
        solution="answer = (-(-{k} // {t}), -(-min({k}, {q}) // {t}))",
        expected=lambda p: (-(-p["k"] // p["t"]), -(-min(p["k"], p["q"]) // p["t"])))),
}

PARTLY_RIGHT = {2: '''\
def my_tiled_bytes(batch_size, num_queries, num_kvpairs, value_dim, tile_size):
    return batch_size * num_queries * (tile_size + 2 + value_dim) * 4'''}

EXPLAIN = [Explain(
    after=1, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does the online softmax multiply the running sum by "
                    "$e^{m_{old} - m_{new}}$ when the maximum grows, and why keep a running maximum at all?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么最大值变大时，在线 softmax 要把累计和乘以 "
                       "$e^{m_{old} - m_{new}}$？为什么要维护累计最大值？"},
    model={"en": "The running sum holds exponentials relative to the old maximum, e^(x - m_old); "
                 "e^(x - m_new) = e^(x - m_old) e^(m_old - m_new), so one factor moves the whole sum to the new "
                 "maximum and the result is exact. Subtracting the maximum keeps every exponential at most 1, so "
                 "large scores do not overflow.",
           "zh_CN": "累计和中存的是相对旧最大值的指数 e^(x - m_old)；由于 e^(x - m_new) = e^(x - m_old) e^(m_old - m_new)，"
                    "乘一个因子就把整个和换到新的最大值上，结果是精确的。减去最大值使每个指数都不超过 1，大的分数不会溢出。"},
    rubric={"en": "- 1 point: the factor rescales the sum from the old maximum to the new one (exact, no recomputing).\n"
                  "- 1 point: the maximum keeps the exponentials at most 1, so nothing overflows.",
            "zh_CN": "- 1 分：这个因子把和从旧最大值换算到新最大值（精确，无需重算）。\n"
                     "- 1 分：最大值使指数不超过 1，因此不会溢出。"})]
