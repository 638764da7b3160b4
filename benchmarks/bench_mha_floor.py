"""How fast can MultiHeadAttention's design be at the small size? Its own algorithm, stripped, against PyTorch.

``bench_mha.py`` times the layer as it ships. This script times the same computation with parts taken away, each
against ``torch.nn.MultiheadAttention`` in interleaved pairs, at bench_mha's small size (batch 2, 10 tokens,
100 hiddens, 5 heads, one thread, a padding mask), so that a speed goal can be checked against what the design
allows before anyone tunes for it:

- ``layer``: ``mha_lib.MultiHeadAttention`` as it ships;
- ``layer, no check``: the same call with its one argument check (``require_forward_arguments``) replaced by
  nothing;
- ``inline``: the layer's steps written out in one function: no check, no call of the layer itself, no stored
  weights, only the calls of its four ``nn.Linear`` and of mha_lib's computations (``_attention_mask``,
  ``split_heads``, ``fold_heads``, ``_dot_product_attention``, ``merge_heads``); with the weights kept this is
  d2l's fold;
- ``inline, 4-D``: as ``inline``, but the heads get an axis of their own (views) instead of d2l's fold (copies);
- ``inline, packed``: as ``inline, 4-D``, with the three input projections packed into one matrix product,
  as PyTorch packs them.

Every variant's output is first checked against PyTorch's. Medians and quartiles of the per-pair ratios
variant / PyTorch; below 1.00 the variant is faster.

    python benchmarks/bench_mha_floor.py [--pairs 30]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import torch
import torch.nn.functional as F
from torch import Tensor

import mha_lib
from mha_chapters.bench.timing import machine_summary, paired_times
from mha_lib.functional import _dot_product_attention, fold_heads, merge_heads, split_heads
from mha_lib.masks import _attention_mask

sys.path.insert(0, str(Path(__file__).parent))
from bench_mha import SIZES  # noqa: E402  (the small size of the benchmark whose goals this one checks)


def inline(mha: mha_lib.MultiHeadAttention, *, keep_weights: bool, fold: bool = True,
           packed: Tensor | None = None) -> Callable[[Tensor, Tensor], Tensor]:
    """Self-attention ``x -> mha(x, x, x, valid_lens, need_weights=keep_weights)`` as one function, without the
    layer's check and call; ``fold`` (with the weights kept) folds the heads into the batch axis as d2l does,
    ``packed`` (the three input weights stacked) projects with one matrix product."""
    heads = mha.num_heads

    def attend(x: Tensor, valid_lens: Tensor) -> Tensor:
        mask = _attention_mask(x.shape[1], x.shape[1], valid_lens, False, None, x.device)  # (batch, 1, kvpairs)
        if packed is None:
            queries, keys, values = mha.W_q(x), mha.W_k(x), mha.W_v(x)
        else:
            queries, keys, values = F.linear(x, packed).chunk(3, dim=-1)
        if keep_weights and fold:  # d2l: (batch * heads, seq, head_dim), copies
            queries, keys, values = (fold_heads(split_heads(X, heads)) for X in (queries, keys, values))
            output, _ = _dot_product_attention(queries, keys, values, mask.repeat_interleave(heads, dim=0), 0.0)
            return mha.W_o(merge_heads(output.unflatten(0, (-1, heads))))
        queries, keys, values = (X.unflatten(-1, (heads, -1)).transpose(1, 2) for X in (queries, keys, values))
        if keep_weights:  # (batch, heads, seq, head_dim), views; the mask broadcasts over the heads
            output, _ = _dot_product_attention(queries, keys, values, mask.unsqueeze(1), 0.0)
        else:
            output = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask.unsqueeze(1))
        return mha.W_o(output.transpose(1, 2).flatten(2))

    return attend


def variants(mha: mha_lib.MultiHeadAttention, x: Tensor, valid_lens: Tensor,
             keep_weights: bool) -> dict[str, Callable[[], Tensor]]:
    """The callables to time on one path; "layer, no check" runs with the check patched out."""
    packed = torch.cat([mha.W_q.weight, mha.W_k.weight, mha.W_v.weight]).detach()
    stripped = {"inline": inline(mha, keep_weights=keep_weights),
                "inline, 4-D": inline(mha, keep_weights=keep_weights, fold=False),
                "inline, packed": inline(mha, keep_weights=keep_weights, fold=False, packed=packed)}
    if not keep_weights:
        del stripped["inline, 4-D"]  # the fused path has no fold: its "inline" is 4-D already

    def layer() -> Tensor:
        return mha(x, x, x, valid_lens, need_weights=keep_weights)

    return {"layer": layer, "layer, no check": layer,
            **{name: functools.partial(attend, x, valid_lens) for name, attend in stripped.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=30, help="alternating measurements per comparison")
    args = parser.parse_args()
    size = SIZES["small"]
    mha_lib.set_seed(0)
    d, seq_len = size.num_hiddens, size.seq_len
    mha = mha_lib.MultiHeadAttention(d, d, d, d, size.num_heads).eval()
    torch_mha = mha_lib.to_torch_mha(mha).eval()
    x = torch.randn(size.batch_size, seq_len, d)
    valid_lens = torch.tensor([seq_len - 3 - i % 4 for i in range(size.batch_size)])
    padding = ~mha_lib.valid_lens_mask(valid_lens, seq_len)  # PyTorch's polarity: True = ignore
    unchecked = mock.patch("mha_lib.modules.require_forward_arguments", lambda *args, **kwargs: None)
    with mha_lib.cpu_threads(size.threads), torch.inference_mode():
        print(f"torch {torch.__version__}; {machine_summary()}; batch {size.batch_size}, seq {seq_len}, hiddens {d}, "
              f"heads {size.num_heads}, padding mask; median (quartiles) of {args.pairs} pair ratios "
              f"variant / torch.nn.MultiheadAttention")
        for keep_weights in (True, False):
            path = f"need_weights={keep_weights}"
            print(f"  {path} (goal <= {size.targets[path]:.2f}x)")
            theirs = functools.partial(torch_mha, x, x, x, key_padding_mask=padding, need_weights=keep_weights,
                                       average_attn_weights=False)
            for name, ours in variants(mha, x, valid_lens, keep_weights).items():
                with unchecked if name == "layer, no check" else contextlib.nullcontext():
                    torch.testing.assert_close(ours(), theirs()[0], rtol=1e-4, atol=1e-5)
                    ours_times, theirs_times = paired_times(ours, theirs, repeats=args.pairs, number=size.number)
                ratios = [a / b for a, b in zip(ours_times, theirs_times, strict=True)]
                low, median, high = statistics.quantiles(ratios, n=4)
                ours_us, theirs_us = statistics.median(ours_times) * 1e6, statistics.median(theirs_times) * 1e6
                print(f"    {name:<16} {median:.3f}x ({low:.3f}-{high:.3f})   "
                      f"{ours_us:6.1f} us, torch {theirs_us:6.1f} us")


if __name__ == "__main__":
    main()
