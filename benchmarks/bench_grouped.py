"""Time grouped-query attention and the KV cache on the CPU, as ratios within one process.

1. Attention with 32 query heads and 8 key-value heads (batch 2, 256 queries and keys, head_dim 64,
   float32, causal): three ways of computing the same output, each against
   ``F.scaled_dot_product_attention(q, k, v, enable_gqa=True)``:
   - ``repeat_kv_heads`` + ``mha_lib.dot_product_attention`` (the explicit path of GroupedQueryAttention),
   - ``repeat_interleave`` of the key-value heads + SDPA (what a kernel without GQA support needs).
2. Generation: ``mha_chapters.kv_cache.generate`` with the cache against without it (a 256-hidden layer,
   8 heads, 2 key-value heads, a 16-token prompt, 128 new tokens, float32).

Each pair is timed back to back, alternating which goes first, and the printed ratio is the median of
the per-pair ratios (above 1.00 means the first is slower than the reference).

    python benchmarks/bench_grouped.py [--pairs 15] [--number 3]
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F

import mha_lib
from mha_chapters.bench.timing import paired_times
from mha_chapters.kv_cache import generate
from mha_lib import GroupedQueryAttention, dot_product_attention, repeat_kv_heads

BATCH_SIZE, SEQ_LEN, NUM_HEADS, NUM_KV_HEADS, HEAD_DIM = 2, 256, 32, 8, 64
GEN_HIDDENS, GEN_HEADS, GEN_KV_HEADS, PROMPT_LEN, NEW_TOKENS = 256, 8, 2, 16, 128


def paired_ratios(fn, reference, pairs: int, number: int) -> tuple[float, float, float]:
    """Median seconds per call of ``fn`` and ``reference``, and the median of their per-pair ratios."""
    times, reference_times = paired_times(fn, reference, repeats=pairs, number=number)
    ratios = [a / b for a, b in zip(times, reference_times, strict=True)]
    return statistics.median(times), statistics.median(reference_times), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=15, help="alternating measurements per comparison")
    parser.add_argument("--number", type=int, default=3, help="calls per measurement")
    args = parser.parse_args()
    mha_lib.set_seed(0)
    groups = NUM_HEADS // NUM_KV_HEADS
    q = torch.randn(BATCH_SIZE, NUM_HEADS, SEQ_LEN, HEAD_DIM)
    k, v = (torch.randn(BATCH_SIZE, NUM_KV_HEADS, SEQ_LEN, HEAD_DIM) for _ in range(2))
    causal = torch.ones(SEQ_LEN, SEQ_LEN, dtype=torch.bool).tril()

    def sdpa_gqa():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal, enable_gqa=True)

    attention = {
        "repeat_kv_heads + dot_product_attention": lambda: dot_product_attention(
            q, repeat_kv_heads(k, groups), repeat_kv_heads(v, groups), causal)[0],
        "repeat_interleave + SDPA": lambda: F.scaled_dot_product_attention(
            q, k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1), attn_mask=causal),
    }
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, inference")
    print(f"attention: batch {BATCH_SIZE}, {SEQ_LEN} tokens, {NUM_HEADS} query heads, {NUM_KV_HEADS} kv heads, "
          f"head_dim {HEAD_DIM}, causal; reference SDPA(enable_gqa=True)")
    with torch.inference_mode():
        reference = sdpa_gqa()
        for fn in attention.values():
            torch.testing.assert_close(fn(), reference, rtol=1e-4, atol=1e-5)
        for name, fn in attention.items():
            ours, theirs, ratio = paired_ratios(fn, sdpa_gqa, args.pairs, args.number)
            print(f"  {name:<40} {ours * 1e3:8.2f} ms  vs {theirs * 1e3:7.2f} ms   ratio {ratio:.2f}x")

        gen_layer = GroupedQueryAttention(GEN_HIDDENS, GEN_HIDDENS, GEN_HIDDENS, GEN_HIDDENS, GEN_HEADS,
                                          GEN_KV_HEADS).eval()
        prompt = torch.randn(1, PROMPT_LEN, GEN_HIDDENS)
        torch.testing.assert_close(generate(gen_layer, prompt, 8), generate(gen_layer, prompt, 8, use_cache=False),
                                   rtol=1e-4, atol=1e-5)
        print(f"generation: {GEN_HIDDENS} hiddens, {GEN_HEADS} heads, {GEN_KV_HEADS} kv heads, "
              f"prompt {PROMPT_LEN}, {NEW_TOKENS} new tokens, batch 1")
        cached, uncached, ratio = paired_ratios(lambda: generate(gen_layer, prompt, NEW_TOKENS, use_cache=False),
                                                lambda: generate(gen_layer, prompt, NEW_TOKENS, use_cache=True),
                                                max(3, args.pairs // 3), 1)
        print(f"  without cache {cached * 1e3:8.1f} ms  with cache {uncached * 1e3:7.1f} ms   "
              f"uncached / cached {ratio:.2f}x")


if __name__ == "__main__":
    main()
