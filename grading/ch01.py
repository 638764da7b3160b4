"""Grading of chapter 01, tensor shapes."""

from grading import Explain, Function, Part, Value, Variant

SHAPES = "[(b, n, h, d) for b, n, h, d in [(2, 3, 2, 4), (1, 5, 4, 3), (3, 2, 3, 5)]]"

EXERCISES = {
    # A row-major (r, c) tensor steps c elements per row, 1 per column; its transpose swaps the two.
    1: Value(parts=["A.stride()", "A.T.stride()"], variant=Variant(
        params=lambda rng: (lambda r, c: {"r": r, "c": c, "n": r * c})(rng.randint(2, 7), rng.choice([3, 5, 7, 8, 9])),
        replace=[("`A = torch.arange(24).reshape(4, 6)`", "`A = torch.arange({n}).reshape({r}, {c})`")])),
    2: Value(parts=["X.permute(2, 0, 1)", "X.transpose(0, 2)"]),
    3: Function(parts=[Part("random sizes", f"cases = [(torch.randn(b, n, h * d, generator=g), h) for b, n, h, d in "
                                            f"{SHAPES}]")]),
    4: Function(parts=[Part("random sizes", f"cases = [(torch.randn(b, h, n, d, generator=g),) for b, n, h, d in "
                                            f"{SHAPES}]")]),
}

PARTLY_RIGHT = {2: "answer = ((1, 1, 0), (0, 1, 1))"}

EXPLAIN = [Explain(
    after=4, points=2,
    question={"en": "**Question (explain, graded by hand).** After `H.transpose(1, 2)`, why does `view` fail to merge "
                    "the last two axes while `reshape` works?",
              "zh_CN": "**问题（解释，人工评分）。** 在 `H.transpose(1, 2)` 之后，为什么用 `view` 合并最后两个轴会失败，"
                       "而 `reshape` 可以？"})]
