"""Hand-made mutation testing of the library's core: change one line, run the tests that guard it, restore.

Each mutant is a plausible mistake (an off-by-one, a lost check, a wrong axis, a constant that looks right).
A mutant is *killed* when at least one test fails; a survivor marks a rule that no test pins down. The
source file is restored after every run, also when the run is interrupted.

    python tools/mutants.py            # all mutants
    python tools/mutants.py 3 7        # only mutants 3 and 7
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE_TESTS = ["tests/test_library_review_37.py", "tests/test_library_review.py", "tests/test_core.py",
              "tests/test_parity.py", "tests/test_bad_input.py", "tests/test_grouped.py"]

# (file in mha_lib/, text as it is, text of the mutant, what the mutant gets wrong, extra test files)
MUTANTS = [
    # functional.py: the masked softmax, the attention, the head reshapes
    ("functional.py", "torch.where(mask, weights, 0.0)", "weights", "hidden weights not set to zero", []),
    ("functional.py", "-math.inf)", "-1e4)", "hidden scores set to -1e4, which a visible score can be below",
     ["tests/test_numerics.py"]),
    ("functional.py", "torch.where(mask, scores, -math.inf)", "scores + torch.where(mask, 0.0, -math.inf)",
     "hidden scores added to, not replaced (a NaN or +inf there reaches the row)", []),
    ("functional.py", "(1 / math.sqrt(queries.shape[-1]))", "(1 / math.sqrt(values.shape[-1]))",
     "scale by the value width", []),
    ("functional.py", "return (output.to(dtype), weights.to(dtype))", "return (output.to(dtype), weights)",
     "half-precision weights returned as float32", []),
    ("functional.py", "if dropout_p > 0 else weights", "if dropout_p > 1 else weights", "dropout never applied", []),
    ("functional.py",
     "    X = X.reshape(batch_size, seq_len, num_heads, num_hiddens // num_heads)  # (b, n, h*d) -> (b, n, h, d)\n"
     "    return X.permute(0, 2, 1, 3)  # (b, n, h, d) -> (b, h, n, d)",
     "    return X.reshape(batch_size, num_heads, seq_len, num_hiddens // num_heads)",
     "heads split without moving them before the tokens", []),
    # masks.py: valid lengths, causality, an explicit mask, combined
    ("masks.py", "< lengths.to(device)", "<= lengths.to(device)", "valid_lens keeps one key too many", []),
    ("masks.py", "dtype=torch.bool, device=device).tril()", "dtype=torch.bool, device=device).tril(1)",
     "causal mask lets a query see the next key", []),
    ("masks.py", "mask = lower if mask is None else mask & lower", "mask = lower if mask is None else mask",
     "causality dropped when valid_lens are given", []),
    ("masks.py", "mask = attn_mask if mask is None else mask & attn_mask",
     "mask = mask if mask is not None else attn_mask",
     "attn_mask dropped when another mask is given", []),
    ("masks.py", "return X.masked_fill_(", "return X.masked_fill(", "sequence_mask not in place", []),
    ("masks.py", "device = given.device if given is not None else \"cpu\"", "device = \"cpu\"",
     "attention_mask builds on the CPU whatever its inputs", []),
    ("masks.py", "        require_nonnegative_int(name, size)\n", "        pass\n",
     "attention_mask sizes unchecked", []),
    ("functional.py", "    require_qk_features(queries, keys)\n    if mask", "    if mask",
     "dot_product_attention without the d_k check", []),
    # modules.py: the layers
    ("modules.py", "mask = mask.repeat_interleave(self.num_heads, dim=0)", "mask = mask.repeat(self.num_heads, 1, 1)",
     "per-sequence mask repeated in the wrong order", []),
    ("grouped.py", "return X.repeat_interleave(num_groups, dim=1)", "return X.repeat(1, num_groups, 1, 1)",
     "GQA key-value heads repeated in the wrong order", []),
    ("modules.py", "self.attention.attention_weights = weights.detach()", "self.attention.attention_weights = weights",
     "stored weights keep their autograd graph", []),
    ("modules.py", "dropout_p = self.attention.dropout.p if self.training else 0.0  # no dropout in evaluation\n"
     "        output, weights",
     "dropout_p = self.attention.dropout.p  # no dropout in evaluation\n        output, weights",
     "dropout in eval mode too", []),
    ("modules.py", "            self.query_size, self.key_size, self.value_size = queries.shape[-1], keys.shape[-1]",
     "            self.query_size, self.key_size, self.value_size = keys.shape[-1], queries.shape[-1]",
     "lazy form records query and key sizes swapped", []),
    ("modules.py", "bias = require_bool(\"bias\", arguments[\"bias\"])", "bias = arguments[\"bias\"]",
     "bias not checked (D3)", []),
    # _validation.py: the checks
    ("_validation.py", "if query_size is not None and q_shape[-1] != query_size:", "if False:",
     "query size unchecked", []),
    ("_validation.py", "        require_qk_features(queries, keys)\n    else:", "        pass\n    else:",
     "DotProductAttention without the d_k check (D1)", []),
    ("masks.py", "mask = torch.arange(num_kvpairs, device=device) < lengths.to(device)",
     "mask = torch.arange(num_kvpairs, device=device) < lengths.to(device).masked_fill(lengths > num_kvpairs, 0)",
     "a valid length above num_kvpairs hides every key instead of none", []),
    ("_validation.py", "return [k for k in range(1, n + 1) if n % k == 0]",
     "return [k for k in range(1, n) if n % k == 0]",
     "divisor list misses n itself", []),
    ("_validation.py",
     "    if isinstance(value, bool) or not isinstance(value, numbers.Integral):\n"
     "        template = _(\"{name} must be {expected}, got {value!r} (a {type_name})\")",
     "    if not isinstance(value, numbers.Integral):\n"
     "        template = _(\"{name} must be {expected}, got {value!r} (a {type_name})\")",
     "True accepted as an int", []),
    ("_validation.py", "    if not isinstance(value, (bool, np.bool_)):\n", "    if False:\n",
     "require_bool accepts anything", []),
    ("grouped.py", "return gqa.train(mha.training)", "return gqa", "mha_to_gqa ignores train/eval",
     ["tests/test_kv_cache.py"]),
    ("grouped.py", "return grouped.mean(dim=1)", "return grouped[:, 0]", "mha_to_gqa keeps one head per group", []),
    ("grouped.py", "return query_head // (num_heads // num_kv_heads)", "return query_head % num_kv_heads",
     "kv_head_of by modulo", []),
    ("utils.py", "return reference.train(mha.training)", "return reference", "to_torch_mha ignores train/eval", []),
    ("modules.py", "return F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask,",
     "return F.scaled_dot_product_attention(queries, keys, values, attn_mask=None,",
     "fused attention ignores its mask (review M7)", []),
    ("grouped.py", "        require_head_split(self, queries, keys, values, mask, need_weights)\n", "",
     "attend checks nothing", []),
    ("grouped.py", "            mask = mask.expand(*queries.shape[:-1], keys.shape[-2])\n", "            pass\n",
     "fused attend takes a 1-D mask as it comes", []),
    ("modules.py", "            self.attention.attention_weights = None\n", "            pass\n",
     "stale weights kept after a fused call (review M14)", []),
    ("utils.py", "num_hiddens, mha.num_heads, dropout=mha.dropout.p,", "num_hiddens, mha.num_heads, dropout=0.0,",
     "to_torch_mha drops the dropout (review M13)", []),
    ("_validation.py", "(\"values\", values)):\n        if x.device != device:\n",
     "(\"values\", values)):\n        if False:\n", "keys and values on another device accepted", []),
    ("_validation.py", "        if queries.device != weight.device:\n", "        if False:\n",
     "inputs on another device than the layer accepted", []),
    ("_validation.py", "        if device is not None and valid_lens.device != device:\n", "        if False:\n",
     "valid_lens on another device accepted", []),
    ("_validation.py", "if not isinstance(value, (bool, np.bool_)):", "if not isinstance(value, bool):",
     "NumPy booleans refused", []),
    ("_validation.py", "    if not isinstance(x, Tensor):\n        template = _(\"{name} must be a torch.Tensor",
     "    if False:\n        template = _(\"{name} must be a torch.Tensor", "non-tensors accepted", []),
    ("modules.py", "and dropout >= 1:\n            break", "and dropout >= 100:\n            break",
     "an incomplete d2l 0.17 call blamed on dropout", []),
    ("flex.py", "slopes.to(h.device)[h]", "slopes[h]", "ALiBi slopes stay on the CPU (D4)", ["tests/test_flex.py"]),
    ("flex.py", "dtype=torch.int64, device=mask.device), pad)", "dtype=torch.int64), pad)",
     "block_tiles builds on the CPU (D4)", ["tests/test_flex.py"]),
    ("../mha_chapters/plotting.py", "finite = matrices[matrices.isfinite()]", "finite = matrices",
     "a NaN cell takes the colour scale (D5)", ["tests/test_plotting.py"]),
    # added with the restructured core (issue 50 item 3)
    ("functional.py", "    X = X.permute(0, 2, 1, 3)  # (b, h, n, d) -> (b, n, h, d)\n", "",
     "heads merged without moving the tokens back before them", []),
    ("functional.py",
     "    X = X.reshape(batch_size, seq_len, num_heads, num_hiddens // num_heads)  # (b, n, h*d) -> (b, n, h, d)\n"
     "    return X.permute(0, 2, 1, 3)",
     "    X = X.reshape(batch_size, seq_len, num_hiddens // num_heads, num_heads)  # (b, n, h*d) -> (b, n, h, d)\n"
     "    return X.permute(0, 3, 1, 2)",
     "head i takes every num_heads-th feature instead of a slice", []),
    ("functional.py", "return X.reshape(-1, X.shape[2], X.shape[3])",
     "return X.transpose(0, 1).reshape(-1, X.shape[2], X.shape[3])",
     "heads folded head-major (head 0 of every sequence first)", []),
    ("modules.py", "output = merge_heads(output.unflatten(0, (-1, self.num_heads)))",
     "output = merge_heads(output.unflatten(0, (self.num_heads, -1)))",
     "heads unfolded in the wrong order", []),
    ("modules.py", "return None if weights is None else weights.unflatten(0, (-1, self.num_heads))",
     "return None if weights is None else weights.unflatten(0, (self.num_heads, -1))",
     "attention_weights unfolded in the wrong order", []),
    ("functional.py", "-math.inf)", "torch.finfo(scores.dtype).min)",
     "hidden scores at the dtype's minimum: a visible score there ties with them", ["tests/test_numerics.py"]),
    ("functional.py", "F.softmax(torch.where(mask, scores, -math.inf), dim=-1)", "F.softmax(scores, dim=-1)",
     "hidden keys take part in the softmax (their weight is then set to 0, the rest not renormalised)", []),
    ("masks.py", "lengths = valid_lens.reshape(-1, 1, 1) if valid_lens.dim() == 1 else valid_lens.unsqueeze(-1)",
     "lengths = valid_lens.unsqueeze(-1)", "1-D valid_lens taken as one length per query", []),
    ("modules.py", "dropout_p = self.attention.dropout.p if self.training else 0.0  # no dropout in evaluation\n"
     "        return F.scaled_dot_product_attention",
     "dropout_p = self.attention.dropout.p  # no dropout in evaluation\n        return F.scaled_dot_product_attention",
     "fused path drops out in eval mode too", []),
    ("modules.py", "dropout_p = self.dropout.p if self.training else 0.0", "dropout_p = self.dropout.p",
     "DotProductAttention drops out in eval mode too", []),
    ("_validation.py", "value_size = getattr(layer, \"value_size\", None)", "value_size = None",
     "value size unchecked", []),
    ("_validation.py", "        if queries.dtype != weight.dtype:\n", "        if False:\n",
     "inputs of another dtype than the layer accepted", []),
    ("_validation.py", "        if device is not None and attn_mask.device != device:\n", "        if False:\n",
     "attn_mask on another device accepted", []),
    ("_validation.py", "    if not isinstance(causal, bool):\n        require_bool(\"causal\", causal)", "    pass",
     "causal not checked", []),
    ("_validation.py", "if dtype.is_floating_point and valid_lens.is_cpu and valid_lens.numel():", "if False:",
     "fractional float valid_lens accepted", []),
]


def run(number: int) -> bool:
    """Apply mutant ``number``, run its tests, restore the file; True if some test failed (killed)."""
    name, original, mutant, _, extra = MUTANTS[number]
    path = ROOT / "mha_lib" / name
    source = path.read_text()
    if source.count(original) != 1:
        raise SystemExit(f"mutant {number}: the text to change occurs {source.count(original)} times in {name}")
    try:
        path.write_text(source.replace(original, mutant))
        result = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                                 *CORE_TESTS, *extra], cwd=ROOT, capture_output=True, text=True)
    finally:
        path.write_text(source)
    return result.returncode != 0


def main() -> None:
    numbers = [int(arg) for arg in sys.argv[1:]] or range(len(MUTANTS))
    survivors = []
    for number in numbers:
        killed = run(number)
        print(f"{number:2d} {'killed  ' if killed else 'SURVIVED'} {MUTANTS[number][0]:15} {MUTANTS[number][3]}",
              flush=True)
        survivors += [] if killed else [number]
    print(f"{len(numbers) - len(survivors)} of {len(numbers)} killed; survivors: {survivors or 'none'}")


if __name__ == "__main__":
    main()
