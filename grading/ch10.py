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
                 ("256 queries", "{q} queries", "en"), ("256 个查询", "{q} 个查询", "zh_CN")])),
}

PARTLY_RIGHT = {2: '''\
def my_tiled_bytes(batch_size, num_queries, num_kvpairs, value_dim, tile_size):
    return batch_size * num_queries * (tile_size + 2 + value_dim) * 4'''}

EXPLAIN = [Explain(
    after=1, points=2,
    question={"en": "**Question (explain, graded by hand).** Why does the online softmax multiply the running sum by "
                    "$e^{m_{old} - m_{new}}$ when the maximum grows, and why keep a running maximum at all?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么最大值变大时，在线 softmax 要把累计和乘以 "
                       "$e^{m_{old} - m_{new}}$？为什么要维护累计最大值？"})]
