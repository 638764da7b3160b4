"""Grading of chapter 04, the multi-head attention module."""

from grading import Explain, Function, Part, Value, Variant

EXERCISES = {
    # The one-head blend of two contents with weight 1/2 each: their average, copied into both halves by W_v.
    1: Value(points=[2], variant=Variant(
        params=lambda rng: {"a": 2 * rng.randint(1, 5), "c": 2 * rng.randint(6, 11)},
        replace=[("$(2, 0)$", "$({a}, 0)$"), ("$(8, 0)$", "$({c}, 0)$")],
        solution="answer = (({a} + {c}) // 2, 0, ({a} + {c}) // 2, 0)",
        expected=lambda p: ((p["a"] + p["c"]) // 2, 0, (p["a"] + p["c"]) // 2, 0))),
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
                 ("draw_multi_head_attention(4, 3, 7, 48, 6,", "draw_multi_head_attention({b}, {q}, {k}, 48, {h},")],
        solution="answer = (({b}, {q}, 48), ({b}, {h}, {q}, {k}))",
        expected=lambda p: ((p["b"], p["q"], 48), (p["b"], p["h"], p["q"], p["k"])))),
    # The parameter count of one layer, biases included.
    4: Value(variant=Variant(
        params=lambda rng: {"d_in": rng.choice([64, 128, 192, 384]), "d": rng.choice([96, 256, 320, 768])},
        replace=[("MultiHeadAttention(256, 256, 256, 512, 8, bias=True)",
                  "MultiHeadAttention({d_in}, {d_in}, {d_in}, {d}, 8, bias=True)"),
                 ("256 features", "{d_in} features", "en"), ("256 个特征", "{d_in} 个特征", "zh_CN"),
                 ("`num_hiddens` 512", "`num_hiddens` {d}", "en"), ("`num_hiddens` 为 512", "`num_hiddens` 为 {d}", "zh_CN")],
        solution="answer = 3 * ({d_in} * {d} + {d}) + ({d} * {d} + {d})",
        expected=lambda p: 3 * (p["d_in"] * p["d"] + p["d"]) + (p["d"] * p["d"] + p["d"]))),
    # The formula; the two parts: without biases, with biases.
    5: Function(parts=[Part("bias=False", "cases = [(n, False) for n in (1, 8, 100, 512, int(torch.randint(2, 999, (1,), generator=g)))]"),
                       Part("bias=True", "cases = [(n, True) for n in (1, 8, 100, 512, int(torch.randint(2, 999, (1,), generator=g)))]")],
                reference="""\
def reference(num_hiddens, bias):
    from mha_lib.modules import MultiHeadAttention
    with torch.device("meta"):
        layer = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads=1, bias=bias)
    return int_(sum(p.numel() for p in layer.parameters()))"""),
}

# A half-right answer, graded part by part: the formula without the biases earns the bias=False part only.
PARTLY_RIGHT = {5: "def count_mha_parameters(num_hiddens, bias):\n    return 4 * num_hiddens * num_hiddens"}

EXPLAIN = [Explain(
    after=1, points=2,
    question={"en": "**Question (explain, graded by hand).** Why can one head not return position 0's content "
                    "next to position 1's, however its weights are trained, while two heads of the same size can?",
              "zh_CN": "**问题（解释，人工评分）。** 为什么无论怎样训练权重，一个头都无法把位置 0 的内容和位置 1 "
                       "的内容并排返回，而同样大小的两个头却可以？"},
    model={"en": "One head has one softmax per query: its output is one weighted average of the values, so two "
                 "contents blend into one vector. Two heads have two softmaxes; each can put its weight on its own "
                 "position, and the concatenation keeps both contents side by side in different features.",
           "zh_CN": "一个头对每个查询只有一个 softmax：它的输出是值的一个加权平均，两个内容混成一个向量。两个头有两个 "
                    "softmax，各自可以把权重放在自己的位置上，拼接之后两个内容并排保留在不同的特征里。"},
    rubric={"en": "- 1 point: one softmax per head and query, so the output is ONE weighted average (a blend) of the "
                  "values.\n- 1 point: each head has its own weights; the concatenation puts the heads' outputs in "
                  "separate features, so both contents survive.\n- No point for restating that 'more heads are more "
                  "expressive' without saying why.",
            "zh_CN": "- 1 分：每个头、每个查询只有一个 softmax，所以输出是值的一个加权平均（混合）。\n- 1 分：每个头有自己的"
                     "权重；拼接把各头的输出放在不同的特征里，所以两个内容都得以保留。\n- 只说“头多表达能力更强”而不说明"
                     "原因，不得分。"})]
