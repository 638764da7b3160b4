"""Grading of chapter 02, scaled dot-product attention."""

from grading import Explain, Function, Part, Value, Variant

ATTENTION_CASES = ("cases = [(torch.randn(b, q, d, generator=g), torch.randn(b, k, d, generator=g), "
                   "torch.randn(b, k, v, generator=g)) for b, q, k, d, v in [(2, 3, 5, 4, 6), (1, 4, 4, 8, 2), "
                   "(3, 1, 7, 16, 5)]]")

EXERCISES = {
    # Var(q . k) = d_k * v^2 for features of variance v; the divisor is its square root.
    1: Value(parts=["variance", "divisor"], variant=Variant(
        params=lambda rng: {"v": rng.choice([2, 3, 9, 16]), "d": rng.choice([16, 36, 100, 144])},
        replace=[("variance 4 instead", "variance {v} instead", "en"), ("方差都是 4 而不是", "方差都是 {v} 而不是", "zh_CN"),
                 ("$d_k = 64$", "$d_k = {d}$")])),
    # Query i sees keys 0..i (top-left aligned), at most num_kvpairs of them.
    2: Value(variant=Variant(
        params=lambda rng: {"k": rng.choice([2, 4, 6, 8])},
        replace=[("causal_mask(3, 5)", "causal_mask(3, {k})")])),
    # One head against PyTorch: the output against F.scaled_dot_product_attention, the weights against a softmax.
    3: Function(
        library=["mha_lib.functional:dot_product_attention"],
        parts=[Part("output", ATTENTION_CASES, compare="ok = type_(result) is tuple_ and len(result) == 2 and "
                                                       "same(result[0], want[0])"),
               Part("weights", ATTENTION_CASES, compare="ok = type_(result) is tuple_ and len(result) == 2 and "
                                                        "same(result[1], want[1])")],
        reference="""\
def reference(queries, keys, values):
    weights = torch.softmax(queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1]), dim=-1)
    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values), weights"""),
    4: Function(library=["mha_lib.functional:masked_softmax"], parts=[
        Part("valid lengths of 1 or more", "cases = [(torch.randn(b, q, k, generator=g), torch.randint(1, k + 1, (b,), "
                                           "generator=g)) for b, q, k in [(2, 3, 5), (3, 2, 4), (1, 4, 6)]]"),
        Part("a valid length of 0, and float16",
             "cases = [(torch.randn(2, 3, 4, generator=g), torch.tensor([0, 3])), "
             "(torch.randn(2, 2, 5, generator=g).half(), torch.tensor([2, 0]))]",
             compare="ok = same(result, want, 1e-2, 1e-3)")]),
}

PARTLY_RIGHT = {4: '''\
def my_masked_softmax(X, valid_lens):
    mask = torch.arange(X.shape[-1]) < valid_lens[:, None, None]
    return torch.softmax(X.masked_fill(~mask, -1e6), dim=-1)'''}

EXPLAIN = [Explain(
    after=2, points=2,
    question={"en": "**Question (explain, graded by hand).** What goes wrong in training when the scores are not "
                    "divided by $\\sqrt{d_k}$ and $d_k$ is large?",
              "zh_CN": "**问题（解释，人工评分）。** 如果不把分数除以 $\\sqrt{d_k}$，而 $d_k$ 又很大，训练时会出什么问题？"})]
