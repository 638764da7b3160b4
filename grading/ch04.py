"""Grading of chapter 04, the multi-head attention module."""

from grading import Explain, Function, FunctionVariant, Part, Value, Variant

EXERCISES = {
    # The one-head blend of two contents with weight 1/2 each: their average, copied into both halves by W_v.
    1: Value(points=[2], variant=Variant(
        params=lambda rng: {"a": 2 * rng.randint(1, 5), "c": 2 * rng.randint(6, 11)},
        replace=[("$(2, 0)$", "$({a}, 0)$"), ("$(8, 0)$", "$({c}, 0)$")])),
    # W_k.weight that makes head 0 pick `first` and head 1 pick `second`: checked on the layer itself.
    2: Function(parts=[Part("each head picks its position", "cases = [(a, b) for a in range(4) for b in range(4)]",
                            points=2)],
                reference="def reference(first, second):\n    return (first, second)",
                compare="""\
from mha_chapters.why_heads import two_place_inputs, two_place_layer
first, second = args
ok = type_(result) is tuple_ and result[0] == "tensor" and result[1] == (4, 4)
if ok:
    layer = two_place_layer(2)
    with torch.no_grad():
        layer.W_k.weight.copy_(torch.tensor(result[2], dtype=torch.float32))
        layer(*two_place_inputs())
    weights = to_list(layer.attention_weights[0, :, 0])  # (num_heads, num_kvpairs) of the one query
    ok = weights[0][first] >= 0.9 and weights[1][second] >= 0.9"""),
    # The shapes of the output and of .attention_weights.
    3: Value(parts=["output shape", "weights shape"], variant=Variant(
        params=lambda rng: {"b": rng.randint(2, 9), "q": rng.randint(2, 9), "k": rng.randint(5, 12),
                            "h": rng.choice([2, 3, 4, 8])},
        replace=[("`batch_size = 4`, 3 queries and 7", "`batch_size = {b}`, {q} queries and {k}", "en"),
                 ("`batch_size = 4`、3 个查询和 7", "`batch_size = {b}`、{q} 个查询和 {k}", "zh_CN"),
                 ("num_hiddens=48,\nnum_heads=6)", "num_hiddens=48,\nnum_heads={h})", "en"),
                 ("num_hiddens=48, num_heads=6)", "num_hiddens=48, num_heads={h})", "zh_CN"),
                 ("draw_multi_head_attention(4, 3, 7, 48, 6,", "draw_multi_head_attention({b}, {q}, {k}, 48, {h},")])),
    # The parameter count of one layer, biases included.
    4: Value(variant=Variant(
        params=lambda rng: {"d_in": rng.choice([64, 128, 192, 384]), "d": rng.choice([96, 256, 320, 768])},
        replace=[("MultiHeadAttention(256, 256, 256, 512, 8, bias=True)",
                  "MultiHeadAttention({d_in}, {d_in}, {d_in}, {d}, 8, bias=True)"),
                 ("256 features", "{d_in} features", "en"), ("256 个特征", "{d_in} 个特征", "zh_CN"),
                 ("`num_hiddens` 512", "`num_hiddens` {d}", "en"), ("`num_hiddens` 为 512", "`num_hiddens` 为 {d}", "zh_CN")])),
    # The formula; the two parts: without biases, with biases. Graded as a variant: the parameters' memory in bytes
    # in a dtype drawn per course (or student), under another name, so the chapter's public solution answers nothing.
    5: Function(library=["mha_lib:MultiHeadAttention", "mha_lib.modules:MultiHeadAttention"], variant=FunctionVariant(
        params=lambda rng: dict(zip(("dtype", "size"), rng.choice([("float16", 2), ("float32", 4), ("float64", 8)]),
                                    strict=True)),
        replace=[("Write section 4's formula as `count_mha_parameters(num_hiddens, bias)`.",
                  "With section 4's formula, write `mha_parameter_bytes(num_hiddens, bias)`: the memory, in bytes, of "
                  "the layer's parameters stored as `torch.{dtype}` ({size} bytes each).", "en"),
                 ("把第 4 节的公式写成 `count_mha_parameters(num_hiddens, bias)`。",
                  "用第 4 节的公式写出 `mha_parameter_bytes(num_hiddens, bias)`：以 `torch.{dtype}`（每个 {size} 字节）存储时，"
                  "这一层参数占用的内存字节数。", "zh_CN"),
                 ("def count_mha_parameters(num_hiddens, bias):", "def mha_parameter_bytes(num_hiddens, bias):"),
                 ('"""Parameters of MultiHeadAttention(', '"""Bytes, as torch.{dtype}, of the parameters of '
                  'MultiHeadAttention(', "en"),
                 ('bias=bias) 的参数个数"""', 'bias=bias) 的参数以 torch.{dtype} 存储时的字节数"""', "zh_CN")]),
                parts=[Part("bias=False", "cases = [(n, False) for n in (1, 8, 100, 512, int(torch.randint(2, 999, (1,), generator=g)))]"),
                       Part("bias=True", "cases = [(n, True) for n in (1, 8, 100, 512, int(torch.randint(2, 999, (1,), generator=g)))]")],
                reference="""\
def reference(num_hiddens, bias):
    from mha_lib.modules import MultiHeadAttention
    with torch.device("meta"):
        layer = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads=1, bias=bias)
    return int_(sum(p.numel() for p in layer.parameters()))"""),
}

# A half-right answer, graded part by part: the formula without the biases earns the bias=False part only.
PARTLY_RIGHT = {5: lambda right: right.replace("4 * num_hiddens if bias else 0", "0")}

EXPLAIN = [Explain(
    after=1, points=2,
    question={"en": "**Question (explain, graded by hand).** Why can one head not return position 0's content "
                    "next to position 1's, however its weights are trained, while two heads of the same size can?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么无论怎样训练权重，一个头都无法把位置 0 的内容和位置 1 "
                       "的内容并排返回，而同样大小的两个头却可以？"})]
