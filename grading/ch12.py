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
    # Inside each head, rows 2i and 2i + 1 move to rows i and i + head_dim/2 (the chapter's statement, on values).
    2: Function(
        library=["mha_lib.rope:interleaved_to_halves"],
        parts=[Part("one head", "cases = [(torch.randn(d, k, generator=g), 1) for d, k in [(2, 3), (8, 5), (16, 1), "
                                "(2 * int(torch.randint(2, 20, (1,), generator=g)), 4)]]"),
               Part("several heads", "cases = [(torch.randn(h * d, k, generator=g), h) for h, d, k in [(2, 8, 3), "
                                     "(4, 4, 5), (3, 8, 1), (int(torch.randint(2, 6, (1,), generator=g)), 6, 2)]]")],
        reference="""\
def reference(W_q, num_heads):
    rows = tensor_.tolist(W_q)
    head_dim = len(rows) // num_heads
    out = []
    for h in range(num_heads):
        head = rows[h * head_dim:(h + 1) * head_dim]
        out += head[0::2] + head[1::2]  # rows 2i first (now rows i), then rows 2i + 1 (now rows i + head_dim/2)
    return ("tensor", tuple_(tensor_.size(W_q)), out)"""),
    # Every position + 100: only the rotated queries and keys (a) change. The answer is always "a", so no variant:
    # another offset would change the question's numbers, not its answer.
    3: Value(check=letters_check("answer", "a", "abcd")),
}

# The pairs of the whole matrix, as if it had one head: right for one head only.
PARTLY_RIGHT = {2: '''\
def my_interleaved_to_halves(W_q, num_heads):
    rows, in_features = W_q.shape
    return W_q.reshape(rows // 2, 2, in_features).transpose(0, 1).reshape(rows, in_features)'''}

EXPLAIN = [Explain(
    after=3, points=2,
    question={"en": "**Question (explain, graded by hand).** With RoPE, the query at position $m$ and the key at "
                    "position $n$ are each rotated by their own position. Why does their score depend only on "
                    "$m - n$, and what does that mean when every position is shifted by the same offset?",
              "zh_CN": "**问题（解释，人工评分）。** 使用 RoPE 时，位置 $m$ 的查询和位置 $n$ 的键各自按自己的位置旋转。"
                       "为什么它们的注意力分数只取决于 $m - n$？当所有位置都平移同一个偏移量时，这意味着什么？"},
    model={"en": "RoPE turns each pair of features: the query's pair i by m theta_i, the key's by n theta_i. A dot "
                 "product of two turned pairs is (R(m theta_i) q)^T (R(n theta_i) k) = q^T R(m theta_i)^T "
                 "R(n theta_i) k = q^T R((n - m) theta_i) k, because the transpose of a rotation is its inverse and "
                 "rotations compose. Summed over the pairs, only the difference of the positions is left. Shift "
                 "every position by the same offset and the rotated queries and keys change, but m - n does not: "
                 "the scores, the attention weights and the output stay the same.",
           "zh_CN": "RoPE 旋转每一对特征：查询的第 i 对旋转 m theta_i，键的第 i 对旋转 n theta_i。两对旋转后的特征的点积是 "
                    "(R(m theta_i) q)^T (R(n theta_i) k) = q^T R(m theta_i)^T R(n theta_i) k = "
                    "q^T R((n - m) theta_i) k，因为旋转矩阵的转置就是它的逆，而旋转可以合成。对所有特征对求和，只剩下"
                    "两个位置之差。所有位置平移同一个偏移量时，旋转后的查询和键会变，但 m - n 不变：注意力分数、注意力"
                    "权重和输出都保持不变。"},
    rubric={"en": "- 1 point: the rotations combine into one rotation by the difference of the angles, "
                  "R(m theta)^T R(n theta) = R((n - m) theta) (the transpose of a rotation undoes it).\n"
                  "- 1 point: a common shift leaves m - n, hence the scores, weights and output, unchanged, although "
                  "the rotated queries and keys themselves change.\n"
                  "- No point for 'RoPE encodes relative position' without saying why the absolute angles cancel.",
            "zh_CN": "- 1 分：两次旋转合成一次按角度之差的旋转，R(m theta)^T R(n theta) = R((n - m) theta)（旋转矩阵的"
                     "转置抵消这次旋转）。\n"
                     "- 1 分：共同的平移不改变 m - n，因此注意力分数、注意力权重和输出都不变，尽管旋转后的查询和键本身"
                     "变了。\n"
                     "- 只说“RoPE 编码相对位置”而不说明绝对角度为什么会抵消，不得分。"})]
