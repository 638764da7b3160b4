"""Grading of chapter 12, rotary position embedding."""

from grading import Explain, Function, Part, Value, letters_check

EXERCISES = {
    # (x1, x2) -> (-x2, x1) on the last axis, against the definition written out on the tensors' values.
    1: Function(
        library=["mha_lib.rope:rotate_half"],
        parts=[Part("one vector", "cases = [(torch.randn(n, generator=g),) for n in (2, 8, 64, "
                                  "2 * int(torch.randint(2, 40, (1,), generator=g)))]"),
               Part("batches of heads", "cases = [(torch.randn(*shape, generator=g, dtype=dtype),) for shape, dtype in "
                                        "[((2, 3, 6), torch.float32), ((1, 2, 4, 16), torch.float32), "
                                        "((2, 4, 5, 8), torch.float64), ((3, 2), torch.float64)]]")],
        reference="""\
def reference(x):
    def turn(v):  # the last axis of nested lists: halves (x1, x2) -> (-x2, x1)
        if type_(v[0]) is list_:
            return [turn(row) for row in v]
        half = len(v) // 2
        return [-a for a in v[half:]] + v[:half]
    return ("tensor", tuple_(tensor_.size(x)), turn(tensor_.tolist(x)))"""),
    # Inside each head, rows 2i and 2i + 1 move to rows i and i + head_dim/2 (the chapter's statement, on values):
    # W_q with num_heads, W_k with num_kv_heads, weights (2-D) and biases (1-D) alike.
    2: Function(
        library=["mha_lib.rope:interleaved_to_halves"],
        parts=[Part("as many key-value heads as heads",
                    "cases = [(torch.randn(h * d, k, generator=g), torch.randn(h * d, k, generator=g), h, h) for h, d, k "
                    "in [(1, 8, 3), (2, 8, 5), (4, 4, 1), (int(torch.randint(2, 6, (1,), generator=g)), 6, 2)]]"),
               Part("GQA, weights and biases",
                    "cases = [(torch.randn(h * d, *k, generator=g), torch.randn(kv * d, *k, generator=g), h, kv) "
                    "for h, kv, d, k in [(4, 2, 4, (5,)), (6, 2, 8, (1,)), (4, 1, 4, (3,)), (4, 2, 8, ()), "
                    "(8, int(torch.randint(1, 3, (1,), generator=g)) * 2, 6, ())]]")],
        reference="""\
def reference(W_q, W_k, num_heads, num_kv_heads):
    def convert(W, heads):
        rows = tensor_.tolist(W)
        head_dim = len(rows) // heads
        out = []
        for h in range(heads):
            head = rows[h * head_dim:(h + 1) * head_dim]
            out += head[0::2] + head[1::2]  # rows 2i first (now rows i), then rows 2i + 1 (now rows i + head_dim/2)
        return ("tensor", tuple_(tensor_.size(W)), out)
    return (convert(W_q, num_heads), convert(W_k, num_kv_heads))"""),
    # Section 2's shift check in float32 at +1,000,000: the angles' rounding moves the scores by about 0.1, (c).
    # Always "c" (measured at seeds 0 to 5: 0.09 to 0.21), so no variant.
    3: Value(check=letters_check("answer", "c", "abcd")),
}

# W_k cut into num_heads heads: right whenever num_kv_heads == num_heads, wrong for GQA.
PARTLY_RIGHT = {2: '''\
def my_interleaved_to_halves(W_q, W_k, num_heads, num_kv_heads):
    def convert(W):
        head_dim = W.shape[0] // num_heads
        return W.reshape(num_heads, head_dim // 2, 2, *W.shape[1:]).transpose(1, 2).reshape(W.shape)
    return convert(W_q), convert(W_k)'''}

EXPLAIN = [Explain(
    after=3, points=2,
    question={"en": "**Question (explain, graded by hand).** With RoPE, the query at position $m$ and the key at "
                    "position $n$ are each rotated by their own position. Why does their score depend only on "
                    "$m - n$, and what does that mean when every position is shifted by the same offset?",
              "zh_CN": "**问题（解释，人工评分）。** 使用 RoPE 时，位置 $m$ 的查询和位置 $n$ 的键各自按自己的位置旋转。"
                       "为什么它们的注意力分数只取决于 $m - n$？当所有位置都平移同一个偏移量时，这意味着什么？"})]
