"""Chapter 09's generation you can time: a small GPT-style decoder with random weights, greedy decoding
with and without the KV cache, and tokens per second measured in pairs.

Dimension names as in :mod:`mha_lib.grouped`; in addition

    vocab_size   number of token ids
    max_len      positions the decoder has embeddings for
    num_layers   decoder blocks, each with its own attention layer and its own cache
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from mha_lib._validation import require_positive_int, wrong_type
from mha_lib.grouped import GroupedQueryAttention

from .bench.timing import interleaved_times
from .i18n import _, figure_text
from .kv_cache import KVCache, SlidingWindowKVCache, attend_with_cache

__all__ = ["DecoderBlock", "TinyDecoder", "generate_tokens", "plot_generation_speedups", "time_generation"]


class DecoderBlock(nn.Module):
    """One pre-norm block of a GPT-style decoder: causal self-attention, then an MLP, each with a residual.

    Shape:
        - x: ``(batch_size, num_new, num_hiddens)``
        - output: ``(batch_size, num_new, num_hiddens)``
    """

    def __init__(self, num_hiddens: int, num_heads: int, num_kv_heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(num_hiddens)
        self.attention = GroupedQueryAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens,
                                               num_heads, num_kv_heads)
        self.norm2 = nn.LayerNorm(num_hiddens)
        self.mlp = nn.Sequential(nn.Linear(num_hiddens, 4 * num_hiddens), nn.GELU(),
                                 nn.Linear(4 * num_hiddens, num_hiddens))

    def forward(self, x: Tensor, cache: KVCache | None = None) -> Tensor:
        y = self.norm1(x)
        if cache is None:  # every token of the sequence, from scratch
            x = x + self.attention(y, y, y, causal=True)
        else:  # only the new tokens; the earlier keys and values come from the cache
            x = x + attend_with_cache(self.attention, y, cache)
        return x + self.mlp(self.norm2(x))


class TinyDecoder(nn.Module):
    """A GPT-style decoder: token and position embeddings, ``num_layers`` blocks, a linear head to logits.

    Its weights are PyTorch's random initialisation: it writes nonsense, but it does exactly the work of a
    trained model of its size. ``forward(tokens, caches)`` reads only the new tokens and continues the
    caches (one per block); without caches it reads the whole sequence.

    Shape:
        - tokens: ``(batch_size, num_new)``, integer ids
        - output: ``(batch_size, num_new, vocab_size)``, logits
    """

    def __init__(self, vocab_size: int, num_hiddens: int, num_heads: int, num_layers: int, max_len: int,
                 num_kv_heads: int | None = None) -> None:
        super().__init__()
        for name, size in (("vocab_size", vocab_size), ("num_hiddens", num_hiddens), ("num_layers", num_layers),
                           ("max_len", max_len)):
            require_positive_int(name, size)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        self.max_len = max_len
        self.token_embedding = nn.Embedding(vocab_size, num_hiddens)
        self.position_embedding = nn.Embedding(max_len, num_hiddens)
        self.blocks = nn.ModuleList(DecoderBlock(num_hiddens, num_heads, num_kv_heads) for _ in range(num_layers))
        self.norm = nn.LayerNorm(num_hiddens)
        self.head = nn.Linear(num_hiddens, vocab_size, bias=False)

    def new_caches(self, batch_size: int, max_len: int, windows: Sequence[int | None] | None = None) -> list[KVCache]:
        """One empty cache per block, on the model's device and dtype.

        ``windows`` has one entry per block: None for a full cache of ``max_len`` tokens (a *global* layer), a
        number ``w`` for a rolling buffer of the last ``w`` tokens (a *local* layer, whose queries see only
        those). Without ``windows`` every layer is global. Gemma 2 alternates local and global layers, Gemma 3
        has five local layers per global one.
        """
        windows = [None] * len(self.blocks) if windows is None else list(windows)
        if len(windows) != len(self.blocks):
            template = _("windows must hold one entry per block ({num_blocks}), got {num_windows}")
            raise ValueError(template.format(num_blocks=len(self.blocks), num_windows=len(windows)))
        weight = self.head.weight
        attention = self.blocks[0].attention
        sizes = (batch_size, attention.num_kv_heads, attention.head_dim)
        return [KVCache(*sizes, max_len, dtype=weight.dtype, device=weight.device) if window is None else
                SlidingWindowKVCache(*sizes, window, dtype=weight.dtype, device=weight.device) for window in windows]

    def forward(self, tokens: Tensor, caches: Sequence[KVCache] | None = None) -> Tensor:
        if not isinstance(tokens, Tensor) or tokens.dtype != torch.long or tokens.dim() != 2:
            got = _("{dtype} of shape {shape}").format(dtype=tokens.dtype, shape=tuple(tokens.shape)) \
                if isinstance(tokens, Tensor) else type(tokens).__name__
            template = _("tokens must be a 2-D tensor of int64 ids, (batch_size, num_new), got {got}")
            raise TypeError(template.format(got=got))
        vocab_size = self.token_embedding.num_embeddings
        if tokens.numel() and not 0 <= tokens.min() <= tokens.max() < vocab_size:
            template = _("tokens must be ids in [0, {max_id}], got ids from {low} to {high}")
            raise ValueError(template.format(max_id=vocab_size - 1, low=tokens.min().item(), high=tokens.max().item()))
        if caches is not None and len(caches) != len(self.blocks):
            template = _("caches must hold one cache per block ({num_blocks}), got {num_caches}")
            raise ValueError(template.format(num_blocks=len(self.blocks), num_caches=len(caches)))
        start = 0 if caches is None else caches[0].seen  # the position of the first new token
        end = start + tokens.shape[1]
        if end > self.max_len:
            template = _("the decoder has positions for max_len={max_len} tokens, got {end}")
            raise ValueError(template.format(max_len=self.max_len, end=end))
        positions = torch.arange(start, end, device=tokens.device)
        x = self.token_embedding(tokens) + self.position_embedding(positions)  # -> (batch, new, num_hiddens)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])
        return self.head(self.norm(x))  # -> (batch, new, vocab_size)


def generate_tokens(model: TinyDecoder, prompt: Tensor, num_new_tokens: int, *, use_cache: bool = True,
                    caches: Sequence[KVCache] | None = None) -> Tensor:
    """Greedy decoding: append the most likely next token ``num_new_tokens`` times.

    With ``use_cache`` the prompt is read once (the prefill) and every later step reads only the newest
    token; without it every step reads the whole sequence so far. ``caches`` (from :meth:`TinyDecoder.new_caches`,
    e.g. with local layers) are the caches to fill; by default, full caches for the whole output.

    Shape:
        - prompt: ``(batch_size, prompt_len)``, integer ids
        - output: ``(batch_size, prompt_len + num_new_tokens)``
    """
    if not isinstance(model, TinyDecoder):
        raise wrong_type("model", _("a TinyDecoder"), model)
    require_positive_int("num_new_tokens", num_new_tokens)
    if caches is not None and not use_cache:
        raise ValueError(_("caches are given but use_cache=False: pass one or the other"))
    tokens = prompt
    if use_cache and caches is None:
        caches = model.new_caches(prompt.shape[0], prompt.shape[1] + num_new_tokens)
    newest = prompt
    with torch.no_grad():
        for _step in range(num_new_tokens):
            logits = model(newest, caches) if use_cache else model(tokens)
            next_token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (batch, 1): greedy
            tokens = torch.cat([tokens, next_token], dim=1)
            newest = next_token
    return tokens


def time_generation(model: TinyDecoder, prompt: Tensor, lengths: Sequence[int], repeats: int = 7,
                    num_threads: int | None = 1) -> dict[int, dict[str, list[float]]]:
    """Tokens per second with and without the cache for every number of new tokens in ``lengths``.

    Timed in this process as ``repeats`` rounds of every length, each a pair without and with the cache side
    by side (:func:`mha_chapters.bench.timing.interleaved_times`): a pair's speed-up, its time without the
    cache over its time with it, and the rates of two lengths are each measured seconds apart, so a busy
    moment of the machine does not fall on one length alone. ``num_threads``: CPU threads (None: as now); one
    by default, because a small model's matrices are too small to share out. Returns
    ``{length: {"with cache": [...], "without": [...], "speed-up": [...]}}``, one number per pair.
    """
    calls = []
    for length in lengths:
        require_positive_int("length", length)
        calls += [lambda n=length: generate_tokens(model, prompt, n, use_cache=False),
                  lambda n=length: generate_tokens(model, prompt, n, use_cache=True)]
    times = interleaved_times(calls, repeats=repeats, number=1, num_threads=num_threads)
    results = {}
    for length, uncached, cached in zip(lengths, times[0::2], times[1::2], strict=True):
        results[length] = {"with cache": [length / t for t in cached],
                           "without": [length / t for t in uncached],
                           "speed-up": [u / c for u, c in zip(uncached, cached, strict=True)]}
    return results


def plot_generation_speedups(results: dict[int, dict[str, list[float]]], title: str = "") -> Figure:
    """Left: tokens per second with and without the cache; right: the speed-up of every pair, against the length."""
    lengths = list(results)
    fig = Figure(figsize=(9, 3.6))
    speed, ratio = fig.subplots(1, 2)
    for name, style in (("with cache", "-o"), ("without", "-s")):
        lows = [min(results[n][name]) for n in lengths]
        highs = [max(results[n][name]) for n in lengths]
        line, = speed.plot(lengths, [statistics.median(results[n][name]) for n in lengths], style,
                           label=figure_text(name), markersize=4)
        speed.fill_between(lengths, lows, highs, color=line.get_color(), alpha=0.25)
    speed.set_ylabel(figure_text("tokens per second"))
    speed.set_title(figure_text("generation speed (median; band: min-max over the pairs)"), fontsize="medium")
    speed.legend(fontsize="small")
    for n in lengths:
        ratio.scatter([n] * len(results[n]["speed-up"]), results[n]["speed-up"], s=12, color="C2")
    ratio.axhline(1, color="0.5", linewidth=1)
    ratio.set_ylabel(figure_text("time without / time with cache"))
    ratio.set_title(figure_text("speed-up of each pair"), fontsize="medium")
    for ax in (speed, ratio):
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [str(n) for n in lengths])
        ax.set_xlabel(figure_text("new tokens generated"))
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    return fig
