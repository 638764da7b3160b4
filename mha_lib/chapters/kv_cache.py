"""Chapter 09's helpers: a KV cache and its sliding-window (rolling-buffer) form, token-by-token generation,
multi-head latent attention (MLA), and the KV-cache memory calculator with its widget.

Dimension names as in :mod:`mha_lib.grouped`; in addition

    context_len   tokens whose keys and values the cache holds
    num_layers    attention layers of a model, each with its own cache
    kv_lora_rank  size of MLA's latent vector per token (DeepSeek-V2's d_c)
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from .._validation import (
    require_device,
    require_features,
    require_layer_device,
    require_layer_dtype,
    require_nonnegative_int,
    require_positive_int,
    require_tensor,
    wrong_type,
)
from ..functional import dot_product_attention
from ..grouped import GroupedQueryAttention, kv_head_of, mha_to_gqa
from ..i18n import N_, _, figure_text
from ..masks import attention_mask
from ..modules import MultiHeadAttention
from .explorer import figure_to_svg
from .tables import display_width

__all__ = [
    "MODELS",
    "KVCache",
    "MultiHeadLatentAttention",
    "SlidingWindowKVCache",
    "attend_with_cache",
    "conversion_error",
    "cache_curves",
    "decode_flops",
    "dtype_bytes",
    "generate",
    "kv_cache_bytes",
    "memory_calculator",
    "memory_summary",
    "mla_cache_bytes",
    "model_table",
    "plot_cache_bytes",
    "plot_head_sharing",
]

# ---------------------------------------------------------------------------------------------------------------------
# Sharing key-value heads


def plot_head_sharing(num_heads: int, kv_head_counts: Sequence[int]) -> Figure:
    """One panel per number of key-value heads: a line from every query head to the key-value head it reads."""
    fig = Figure(figsize=(3.2 * len(kv_head_counts), 2.6))
    axes = fig.subplots(1, len(kv_head_counts), squeeze=False)[0]
    for ax, num_kv_heads in zip(axes, kv_head_counts, strict=True):
        kv_x = [(k + 0.5) * num_heads / num_kv_heads - 0.5 for k in range(num_kv_heads)]  # centred under the group
        for head in range(num_heads):
            kv = kv_head_of(head, num_heads, num_kv_heads)
            ax.plot([head, kv_x[kv]], [1, 0], color=f"C{kv % 10}", linewidth=1.5)
        ax.scatter(range(num_heads), [1] * num_heads, s=120, color="white", edgecolor="black", zorder=3)
        ax.scatter(kv_x, [0] * num_kv_heads, s=220, marker="s", color=[f"C{k % 10}" for k in range(num_kv_heads)],
                   edgecolor="black", zorder=3)
        kind = "MHA" if num_kv_heads == num_heads else ("MQA" if num_kv_heads == 1 else "GQA")
        title = (figure_text("{kind}: {num_heads} query heads, {num_kv_heads} kv heads") if num_kv_heads > 1 else
                 figure_text("{kind}: {num_heads} query heads, {num_kv_heads} kv head"))
        ax.set_title(title.format(kind=kind, num_heads=num_heads, num_kv_heads=num_kv_heads), fontsize="medium")
        ax.set_yticks([0, 1], [figure_text("key-value\nheads"), figure_text("query\nheads")])  # wrapped in English only
        for head in range(num_heads):
            ax.text(head, 1.2, str(head), ha="center", fontsize="small")
        for kv, x in enumerate(kv_x):
            ax.text(x, -0.32, str(kv), ha="center", fontsize="small")
        ax.set_xticks([])
        ax.set_ylim(-0.45, 1.4)
        ax.set_xlim(-0.7, num_heads - 0.3)
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def conversion_error(mha: MultiHeadAttention, num_kv_heads: int, x: Tensor) -> float:
    """Relative change of the output, ``||gqa(x) - mha(x)|| / ||mha(x)||``, when ``mha`` is mean-pooled to GQA."""
    with torch.no_grad():
        reference = mha(x, x, x, causal=True)
        converted = mha_to_gqa(mha, num_kv_heads)(x, x, x, causal=True)
    return ((converted - reference).norm() / reference.norm()).item()


# ---------------------------------------------------------------------------------------------------------------------
# The KV cache


class KVCache:
    """The keys and values of the tokens seen so far, for one layer, in memory reserved for ``max_len`` tokens.

    Shape:
        - keys, values (each): ``(batch_size, num_kv_heads, len(cache), head_dim)``
    """

    def __init__(self, batch_size: int, num_kv_heads: int, head_dim: int, max_len: int, *,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> None:
        for name, size in (("batch_size", batch_size), ("num_kv_heads", num_kv_heads), ("head_dim", head_dim),
                           ("max_len", max_len)):
            require_positive_int(name, size)
        # Reserved once: appending writes into it, nothing is copied as the cache grows.
        self._keys = torch.zeros(batch_size, num_kv_heads, max_len, head_dim, dtype=dtype, device=device)
        self._values = torch.zeros_like(self._keys)
        self.length = 0  # tokens held
        self.seen = 0  # tokens appended so far: the position of the next token

    def __len__(self) -> int:
        return self.length

    @property
    def keys(self) -> Tensor:
        return self._keys[:, :, :self.length]  # a view of the filled part

    @property
    def values(self) -> Tensor:
        return self._values[:, :, :self.length]

    @property
    def nbytes(self) -> int:
        """Bytes of the keys and values held (the filled part)."""
        return (self.keys.numel() + self.values.numel()) * self._keys.element_size()

    def append(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Store the keys and values of new tokens; return those of every token so far, and which each new token sees.

        Shape:
            - keys, values: ``(batch_size, num_kv_heads, num_new, head_dim)``
            - returned keys, values: ``(batch_size, num_kv_heads, len(cache), head_dim)`` each
            - returned mask: ``(num_new, len(cache))``, boolean, True = may attend (causal)
        """
        num_new = self._check_new(keys, values)
        past, end = self.length, self.length + num_new
        if end > self._keys.shape[2]:
            template = _("the cache holds at most max_len={max_len} tokens; "
                         "it has {past}, and {num_new} more do not fit")
            raise ValueError(template.format(max_len=self._keys.shape[2], past=past, num_new=num_new))
        self._keys[:, :, past:end] = keys  # writes into the reserved memory
        self._values[:, :, past:end] = values
        self.length = self.seen = end
        # New token i sits at position past + i and may see positions 0 .. past + i (a causal mask shifted right).
        mask = torch.ones(num_new, end, dtype=torch.bool, device=keys.device).tril(diagonal=past)
        return self.keys, self.values, mask

    def _check_new(self, keys: Tensor, values: Tensor) -> int:
        """Check that ``keys`` and ``values`` fit this cache; return the number of new tokens."""
        batch_size, num_kv_heads, _max_len, head_dim = self._keys.shape
        layout = "(batch_size, num_kv_heads, num_new, head_dim)"
        for name, x in (("keys", keys), ("values", values)):
            require_tensor(name, x, 4, layout)
            if (x.shape[0], x.shape[1], x.shape[3]) != (batch_size, num_kv_heads, head_dim):
                template = _("{name} must have shape {layout} = ({batch_size}, {num_kv_heads}, "
                             "num_new, {head_dim}) to fit this cache, got {shape}")
                raise ValueError(template.format(name=name, layout=layout, batch_size=batch_size,
                                                 num_kv_heads=num_kv_heads, head_dim=head_dim, shape=tuple(x.shape)))
            if x.dtype != self._keys.dtype:
                template = _("{name} has dtype {dtype} but the cache holds {cache_dtype}")
                raise TypeError(template.format(name=name, dtype=x.dtype, cache_dtype=self._keys.dtype))
            if x.device != self._keys.device:
                require_device(name, x, self._keys.device, other="the cache")
        if keys.shape[2] != values.shape[2]:
            template = _("keys and values must hold the same number of new tokens, got {new_keys} and {new_values}")
            raise ValueError(template.format(new_keys=keys.shape[2], new_values=values.shape[2]))
        return keys.shape[2]


class SlidingWindowKVCache(KVCache):
    """A rolling buffer of the keys and values of the last ``window`` tokens (Mistral 7B's sliding-window cache).

    The token at position i sees the ``window`` positions j with ``i - window < j <= i``, itself included,
    as ``mha_lib.flex.sliding_window_mask_mod(window, causal=True)``. Position p is stored in slot
    ``p % window``, overwriting position ``p - window``, which no later token sees: the memory stops growing.

    Shape:
        - keys, values (each): ``(batch_size, num_kv_heads, min(seen, window), head_dim)``, in slot order
    """

    def __init__(self, batch_size: int, num_kv_heads: int, head_dim: int, window: int, *,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> None:
        self.window = require_positive_int("window", window)
        super().__init__(batch_size, num_kv_heads, head_dim, window, dtype=dtype, device=device)
        self._positions = torch.full((window,), -1, device=self._keys.device)  # the position in each slot

    @property
    def positions(self) -> Tensor:
        """The position of the token in each filled slot: ``(min(seen, window),)``."""
        return self._positions[:self.length]

    def append(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Keys and values of the buffered and the new tokens, and which of them each new token sees.

        Shape:
            - keys, values: ``(batch_size, num_kv_heads, num_new, head_dim)``
            - returned keys, values: ``(batch_size, num_kv_heads, min(seen, window) + num_new, head_dim)``,
              buffered tokens first (in slot order), then the new ones
            - returned mask: ``(num_new, min(seen, window) + num_new)``, boolean, True = may attend
        """
        num_new = self._check_new(keys, values)
        new_positions = torch.arange(self.seen, self.seen + num_new, device=self._keys.device)
        key_positions = torch.cat([self.positions, new_positions])
        all_keys = torch.cat([self.keys, keys], dim=2)  # a copy: the buffer is overwritten below
        all_values = torch.cat([self.values, values], dim=2)
        distance = new_positions[:, None] - key_positions[None, :]  # (num_new, keys): query minus key position
        mask = (distance >= 0) & (distance < self.window)
        keep = slice(max(0, num_new - self.window), num_new)  # of the new tokens, only the last `window` stay
        slots = new_positions[keep] % self.window
        self._keys[:, :, slots] = keys[:, :, keep]
        self._values[:, :, slots] = values[:, :, keep]
        self._positions[slots] = new_positions[keep]
        self.seen += num_new
        self.length = min(self.seen, self.window)
        return all_keys, all_values, mask


def attend_with_cache(layer: GroupedQueryAttention, x: Tensor, cache: KVCache) -> Tensor:
    """Causal self-attention of new tokens over the cached ones and themselves; their keys and values join the cache.

    Only the new tokens are projected: the keys and values of the earlier ones come from the cache, and
    the cache says which of them each new token may see.

    Shape:
        - x: ``(batch_size, num_new, query_size)``
        - output: ``(batch_size, num_new, num_hiddens)``
    """
    if not isinstance(layer, GroupedQueryAttention):
        raise wrong_type("layer", _("an mha_lib.GroupedQueryAttention"), layer)
    if not isinstance(cache, KVCache):
        raise wrong_type("cache", _("a KVCache"), cache)
    require_tensor("x", x, 3, "(batch_size, num_new, query_size)")
    cache_heads, cache_head_dim = cache.keys.shape[1], cache.keys.shape[3]
    if (cache_heads, cache_head_dim) != (layer.num_kv_heads, layer.head_dim):
        template = _("cache holds {cache_heads} key-value heads of {cache_head_dim} features, but layer has "
                     "num_kv_heads={num_kv_heads} and head_dim={head_dim}; build the cache with the layer's sizes")
        raise ValueError(template.format(cache_heads=cache_heads, cache_head_dim=cache_head_dim,
                                         num_kv_heads=layer.num_kv_heads, head_dim=layer.head_dim))
    for name in ("W_q", "W_k", "W_v"):
        require_features("x", x, getattr(layer, name).in_features, f"{name}.in_features")
    require_layer_dtype("x", x, layer.W_q.weight)
    if x.device != layer.W_q.weight.device:
        require_layer_device("x", x, layer.W_q.weight)
    heads, kv_heads, head_dim = layer.num_heads, layer.num_kv_heads, layer.head_dim
    queries = layer.W_q(x).unflatten(-1, (heads, head_dim)).transpose(1, 2)  # -> (batch, heads, new, head_dim)
    keys = layer.W_k(x).unflatten(-1, (kv_heads, head_dim)).transpose(1, 2)  # -> (batch, kv_heads, new, head_dim)
    values = layer.W_v(x).unflatten(-1, (kv_heads, head_dim)).transpose(1, 2)
    keys, values, mask = cache.append(keys, values)  # -> (batch, kv_heads, past + new, head_dim), (new, past + new)
    output = layer.attend(queries, keys, values, mask)  # (batch, heads, new, head_dim)
    return layer.W_o(output.transpose(1, 2).flatten(2))  # -> (batch, new, num_hiddens)


def generate(layer: GroupedQueryAttention, prompt: Tensor, num_new_tokens: int, *, use_cache: bool = True) -> Tensor:
    """Extend ``prompt`` token by token: each new token is the layer's causal output at the last position.

    With ``use_cache`` the prompt is read once (filling the cache) and every later step projects only
    the newest token; without it every step runs the layer over the whole sequence so far.

    Shape:
        - prompt: ``(batch_size, prompt_len, num_hiddens)``
        - output: ``(batch_size, prompt_len + num_new_tokens, num_hiddens)``
    """
    if not isinstance(layer, GroupedQueryAttention):
        raise wrong_type("layer", _("an mha_lib.GroupedQueryAttention"), layer)
    num_hiddens = layer.W_o.out_features
    sizes = (layer.W_q.in_features, layer.W_k.in_features, layer.W_v.in_features)
    if sizes != (num_hiddens,) * 3:
        template = _("generate feeds each output back in, so query_size, key_size and "
                     "value_size must equal num_hiddens={num_hiddens}, got {sizes}")
        raise ValueError(template.format(num_hiddens=num_hiddens, sizes=sizes))
    require_tensor("prompt", prompt, 3, "(batch_size, prompt_len, num_hiddens)")
    require_features("prompt", prompt, num_hiddens, "num_hiddens")
    require_positive_int("num_new_tokens", num_new_tokens)
    sequence = prompt
    if use_cache:
        cache = KVCache(prompt.shape[0], layer.num_kv_heads, layer.head_dim, prompt.shape[1] + num_new_tokens,
                        dtype=prompt.dtype, device=prompt.device)
        newest = prompt  # the first step reads the whole prompt (the "prefill")
        for _step in range(num_new_tokens):
            newest = attend_with_cache(layer, newest, cache)[:, -1:]  # (batch, 1, num_hiddens)
            sequence = torch.cat([sequence, newest], dim=1)
    else:
        for _step in range(num_new_tokens):
            newest = layer(sequence, sequence, sequence, causal=True)[:, -1:]  # recomputes every position
            sequence = torch.cat([sequence, newest], dim=1)
    return sequence


def decode_flops(batch_size: int, context_len: int, num_hiddens: int, num_heads: int, num_kv_heads: int, *,
                 use_cache: bool) -> dict[str, int]:
    """FLOPs (a multiply-add counts 2) of the step that produces the output at position ``context_len - 1``.

    With the cache only the newest token is projected and its one query meets ``context_len`` keys;
    without it the layer projects all ``context_len`` tokens again and builds the whole
    ``context_len x context_len`` score matrix (the causal mask hides half of it, but it is computed).
    """
    for name, value in (("batch_size", batch_size), ("context_len", context_len), ("num_hiddens", num_hiddens),
                        ("num_heads", num_heads), ("num_kv_heads", num_kv_heads)):
        require_positive_int(name, value)
    head_dim = num_hiddens // num_heads
    tokens = 1 if use_cache else context_len  # tokens projected and queries asked in this step
    kv_features = num_kv_heads * head_dim
    return {
        "projections": 2 * batch_size * tokens * num_hiddens * (num_hiddens + 2 * kv_features),  # W_q, W_k, W_v
        "scores": 2 * batch_size * num_heads * tokens * context_len * head_dim,
        "weights @ values": 2 * batch_size * num_heads * tokens * context_len * head_dim,
        "output projection": 2 * batch_size * tokens * num_hiddens * num_hiddens,
    }


# ---------------------------------------------------------------------------------------------------------------------
# Multi-head latent attention


class MultiHeadLatentAttention(nn.Module):
    """Self-attention whose keys and values are read from one small latent vector per token (DeepSeek-V2's MLA).

    ``W_dkv`` compresses each token to ``kv_lora_rank`` features; ``W_uk`` and ``W_uv``
    expand that latent into every head's key and value. Only the latent needs caching. The
    decoupled rotary part of DeepSeek-V2 and its compressed queries are left out.
    ``forward(x, absorbed=True)`` computes the same output without ever forming keys or values:
    ``W_uk`` is folded into the query side and ``W_uv`` into ``W_o``.

    Shape:
        - x: ``(batch_size, seq_len, num_hiddens)``
        - output: ``(batch_size, seq_len, num_hiddens)``
    """

    def __init__(self, num_hiddens: int, num_heads: int, head_dim: int, kv_lora_rank: int) -> None:
        super().__init__()
        for name, size in (("num_hiddens", num_hiddens), ("num_heads", num_heads), ("head_dim", head_dim),
                           ("kv_lora_rank", kv_lora_rank)):
            require_positive_int(name, size)
        self.num_heads, self.head_dim, self.kv_lora_rank = num_heads, head_dim, kv_lora_rank
        self.W_q = nn.Linear(num_hiddens, num_heads * head_dim, bias=False)
        self.W_dkv = nn.Linear(num_hiddens, kv_lora_rank, bias=False)  # down: token -> latent (cached)
        self.W_uk = nn.Linear(kv_lora_rank, num_heads * head_dim, bias=False)  # up: latent -> keys of all heads
        self.W_uv = nn.Linear(kv_lora_rank, num_heads * head_dim, bias=False)  # up: latent -> values of all heads
        self.W_o = nn.Linear(num_heads * head_dim, num_hiddens, bias=False)

    def forward(self, x: Tensor, valid_lens: Tensor | None = None, *, causal: bool = False,
                absorbed: bool = False) -> Tensor:
        require_tensor("x", x, 3, "(batch_size, seq_len, num_hiddens)")
        require_features("x", x, self.W_q.in_features, "num_hiddens")
        require_layer_dtype("x", x, self.W_q.weight)
        batch_size, seq_len, _features = x.shape
        mask = attention_mask(batch_size, seq_len, seq_len, valid_lens, causal=causal, device=x.device)
        if mask is not None:
            mask = mask.unsqueeze(1)  # (batch or 1, queries or 1, kvpairs) -> (..., 1, ...): one mask for all heads
        latent = self.W_dkv(x)  # (batch, seq, num_hiddens) -> (batch, seq, kv_lora_rank): all that is cached
        return self._absorbed(x, latent, mask) if absorbed else self._explicit(x, latent, mask)

    def _explicit(self, x: Tensor, latent: Tensor, mask: Tensor | None) -> Tensor:
        """Expand the latent into keys and values, then ordinary multi-head attention."""
        heads, head_dim = self.num_heads, self.head_dim
        queries = self.W_q(x).unflatten(-1, (heads, head_dim)).transpose(1, 2)  # -> (batch, heads, seq, head_dim)
        keys = self.W_uk(latent).unflatten(-1, (heads, head_dim)).transpose(1, 2)  # -> (batch, heads, seq, head_dim)
        values = self.W_uv(latent).unflatten(-1, (heads, head_dim)).transpose(1, 2)
        output, _weights = dot_product_attention(queries, keys, values, mask)  # (batch, heads, seq, head_dim)
        return self.W_o(output.transpose(1, 2).flatten(2))  # -> (batch, seq, num_hiddens)

    def absorbed_weights(self) -> tuple[Tensor, Tensor]:
        """The folded matrices: per head ``W_uk_h^T W_q_h`` (query side) and ``W_o_h W_uv_h`` (output side).

        Shape:
            - query side: ``(num_heads, kv_lora_rank, num_hiddens)``
            - output side: ``(num_hiddens, num_heads, kv_lora_rank)``
        """
        heads, head_dim = self.num_heads, self.head_dim
        W_q = self.W_q.weight.unflatten(0, (heads, head_dim))  # (heads*head_dim, hiddens) -> (heads, head_dim, hiddens)
        W_uk = self.W_uk.weight.unflatten(0, (heads, head_dim))  # -> (heads, head_dim, kv_lora_rank)
        W_uv = self.W_uv.weight.unflatten(0, (heads, head_dim))  # -> (heads, head_dim, kv_lora_rank)
        W_o = self.W_o.weight.unflatten(1, (heads, head_dim))  # (hiddens, heads*head_dim) -> (hiddens, heads, head_dim)
        query_side = W_uk.transpose(1, 2) @ W_q  # (h, rank, head_dim) @ (h, head_dim, hiddens) -> (h, rank, hiddens)
        output_side = torch.einsum("ohd,hdr->ohr", W_o, W_uv)  # -> (hiddens, heads, kv_lora_rank)
        return query_side, output_side

    def _absorbed(self, x: Tensor, latent: Tensor, mask: Tensor | None) -> Tensor:
        """Attend to the latent itself: it is the one shared key and the one shared value of every head."""
        query_side, output_side = self.absorbed_weights()
        # q_h . k_h = (W_q_h x) . (W_uk_h c) = (W_uk_h^T W_q_h x) . c: a query that lives in the latent space.
        queries = torch.einsum("hrm,bnm->bhnr", query_side, x)  # (batch, seq, hiddens) -> (batch, heads, seq, rank)
        # dot_product_attention divides by sqrt(kv_lora_rank); the explicit layer divides by sqrt(head_dim).
        queries = queries * math.sqrt(self.kv_lora_rank / self.head_dim)
        # (batch, seq, rank) -> (batch, heads, seq, rank): one latent shared by all heads (expand is a view, no copy)
        latent = latent.unsqueeze(1).expand(-1, self.num_heads, -1, -1)
        mixed, _weights = dot_product_attention(queries, latent, latent, mask)  # (batch, heads, seq, rank)
        # W_o_h (W_uv_h (weights @ c)) = (W_o_h W_uv_h) (weights @ c): the value up-projection joins W_o.
        return torch.einsum("ohr,bhnr->bno", output_side, mixed)  # -> (batch, seq, num_hiddens)


# ---------------------------------------------------------------------------------------------------------------------
# The memory calculator

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "float8_e4m3fn": torch.float8_e4m3fn}


def dtype_bytes(dtype: torch.dtype | str) -> int:
    """Bytes per element of ``dtype`` (a torch.dtype or its name, e.g. ``"bfloat16"``)."""
    if isinstance(dtype, str):
        if dtype not in DTYPES:
            template = _("dtype must be one of {dtypes} or a torch.dtype, got {dtype!r}")
            raise ValueError(template.format(dtypes=list(DTYPES), dtype=dtype))
        dtype = DTYPES[dtype]
    if not isinstance(dtype, torch.dtype):
        raise wrong_type("dtype", _("a torch.dtype or its name"), dtype)
    return torch.empty((), dtype=dtype).element_size()


def kv_cache_bytes(num_layers: int, num_kv_heads: int, head_dim: int, context_len: int, batch_size: int = 1,
                   dtype: torch.dtype | str = torch.float16) -> int:
    """Bytes of the keys and values of ``context_len`` tokens: ``2 * layers * kv_heads * head_dim * tokens * batch``."""
    for name, value in (("num_layers", num_layers), ("num_kv_heads", num_kv_heads), ("head_dim", head_dim),
                        ("context_len", context_len), ("batch_size", batch_size)):
        require_positive_int(name, value)
    keys_and_values = 2
    return keys_and_values * num_layers * num_kv_heads * head_dim * context_len * batch_size * dtype_bytes(dtype)


def mla_cache_bytes(num_layers: int, kv_lora_rank: int, context_len: int, batch_size: int = 1,
                    dtype: torch.dtype | str = torch.float16, rope_head_dim: int = 0) -> int:
    """Bytes of MLA's cache: one latent of ``kv_lora_rank`` (plus the shared rotary key, if any) per token and layer."""
    for name, value in (("num_layers", num_layers), ("kv_lora_rank", kv_lora_rank), ("context_len", context_len),
                        ("batch_size", batch_size)):
        require_positive_int(name, value)
    require_nonnegative_int("rope_head_dim", rope_head_dim)
    return num_layers * (kv_lora_rank + rope_head_dim) * context_len * batch_size * dtype_bytes(dtype)


def cache_curves(context_lens: Sequence[int], *, num_layers: int, num_heads: int, num_kv_heads: int, head_dim: int,
                 kv_lora_rank: int, batch_size: int = 1, dtype: torch.dtype | str = torch.float16
                 ) -> dict[str, list[int]]:
    """Cache bytes per context length for MHA, GQA (``num_kv_heads``), MQA and MLA (``kv_lora_rank``) of one size.

    The keys are the designs' names as a figure's legend shows them (:func:`mha_lib.i18n.figure_text`).
    """
    if num_heads % num_kv_heads:
        template = _("num_kv_heads={num_kv_heads} must divide num_heads={num_heads}")
        raise ValueError(template.format(num_kv_heads=num_kv_heads, num_heads=num_heads))
    mha, gqa, mqa, mla = _design_names(num_kv_heads, kv_lora_rank, figure_text)  # the figure's legend
    kinds = {mha: num_heads, gqa: num_kv_heads, mqa: 1}
    curves = {name: [kv_cache_bytes(num_layers, kv, head_dim, n, batch_size, dtype) for n in context_lens]
              for name, kv in kinds.items()}
    curves[mla] = [mla_cache_bytes(num_layers, kv_lora_rank, n, batch_size, dtype) for n in context_lens]
    return curves


_GQA_NAME, _MLA_NAME = N_("GQA ({num_kv_heads} kv heads)"), N_("MLA (latent {kv_lora_rank})")


def _design_names(num_kv_heads: int, kv_lora_rank: int, translate: Callable[[str], str]) -> tuple[str, ...]:
    """The names of MHA, GQA, MQA and MLA of these sizes, in the reader's language (``_`` or ``figure_text``)."""
    return ("MHA", translate(_GQA_NAME).format(num_kv_heads=num_kv_heads), "MQA",
            translate(_MLA_NAME).format(kv_lora_rank=kv_lora_rank))


def plot_cache_bytes(context_lens: Sequence[int], curves: dict[str, list[int]], title: str = "",
                     references: Mapping[str, float] | None = None) -> Figure:
    """KV-cache GiB against context length, one line per design, computed from the formulas (nothing measured).

    ``references``: horizontal lines to compare with, a label and a number of bytes each (e.g. the weights).
    """
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    for (name, values), style in zip(curves.items(), ("-o", "-s", "-^", "-D"), strict=False):
        ax.plot(context_lens, [v / 2**30 for v in values], style, label=name, markersize=4)
    for label, nbytes in (references or {}).items():
        ax.axhline(nbytes / 2**30, color="0.4", linestyle="--", linewidth=1)
        ax.text(context_lens[0], nbytes / 2**30 * 1.15, label, fontsize="small", color="0.3")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    if references:  # room above the highest line for its label
        highest = max(*references.values(), *(max(values) for values in curves.values()))
        ax.set_ylim(top=2 * highest / 2**30)
    ax.set_xlabel(figure_text("context length (tokens)"))
    ax.set_ylabel(figure_text("KV cache (GiB, computed)"))
    ax.set_title(title or figure_text("KV-cache memory against context length"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    return fig


def memory_summary(*, num_layers: int, num_heads: int, num_kv_heads: int, head_dim: int, kv_lora_rank: int,
                   context_len: int, batch_size: int, dtype: str) -> str:
    """The calculator's numbers as text: bytes per token and in all, for MHA, GQA, MQA and MLA."""
    curves = cache_curves([1, context_len], num_layers=num_layers, num_heads=num_heads, num_kv_heads=num_kv_heads,
                          head_dim=head_dim, kv_lora_rank=kv_lora_rank, batch_size=1, dtype=dtype)
    lines = [_("{num_layers} layers, {num_heads} query heads of {head_dim}, {context_len} tokens, batch {batch_size}, "
               "{dtype}").format(num_layers=num_layers, num_heads=num_heads, head_dim=head_dim, context_len=context_len,
                                 batch_size=batch_size, dtype=dtype)]
    names = _design_names(num_kv_heads, kv_lora_rank, _)  # printed text: translated even without a CJK font
    for name, (per_token, _total) in zip(names, curves.values(), strict=True):
        total = per_token * context_len * batch_size
        lines.append(_("  {name} {per_token:>9,} bytes per token   {total:10.3f} GiB in all").format(
            name=name + " " * (22 - display_width(name)), per_token=per_token, total=total / 2**30))  # CJK: 2 columns
    return "\n".join(lines)


def memory_calculator(**initial: int | str) -> widgets.VBox:
    """Sliders for the model's sizes; the figure and the numbers follow every change."""
    values = {"num_layers": 32, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128, "kv_lora_rank": 512,
              "context_len": 8192, "batch_size": 1, "dtype": "bfloat16"} | initial
    layout, style = widgets.Layout(width="360px"), {"description_width": "110px"}
    pow2 = [2**k for k in range(7, 18)]
    controls = {
        "num_layers": widgets.IntSlider(value=values["num_layers"], min=1, max=128, description=_("layers")),
        "num_heads": widgets.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128], value=values["num_heads"],
                                             description=_("query heads")),
        "num_kv_heads": widgets.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128], value=values["num_kv_heads"],
                                                description=_("kv heads (GQA)")),
        "head_dim": widgets.SelectionSlider(options=[32, 64, 96, 128, 192, 256], value=values["head_dim"],
                                            description=_("head size")),
        "kv_lora_rank": widgets.SelectionSlider(options=[64, 128, 256, 512, 1024], value=values["kv_lora_rank"],
                                                description=_("latent (MLA)")),
        "context_len": widgets.SelectionSlider(options=pow2, value=values["context_len"],
                                               description=_("context")),
        "batch_size": widgets.IntSlider(value=values["batch_size"], min=1, max=64, description=_("batch")),
        "dtype": widgets.Dropdown(options=list(DTYPES), value=values["dtype"], description="dtype"),
    }
    for control in controls.values():
        control.layout, control.style = layout, style
    numbers, figure = widgets.HTML(), widgets.HTML()

    def update(change: dict | None = None) -> None:
        sizes = {name: control.value for name, control in controls.items()}
        if sizes["num_heads"] % sizes["num_kv_heads"]:
            message = _("kv heads ({num_kv_heads}) must divide query heads ({num_heads})").format(
                num_kv_heads=sizes["num_kv_heads"], num_heads=sizes["num_heads"])
            numbers.value = f"<pre>{html.escape(message)}</pre>"
            return
        numbers.value = f"<pre>{html.escape(memory_summary(**sizes))}</pre>"
        lens = [n for n in pow2 if n <= max(pow2)]
        curves = cache_curves(lens, **{k: v for k, v in sizes.items() if k != "context_len"})
        figure.value = figure_to_svg(plot_cache_bytes(lens, curves))

    for control in controls.values():
        control.observe(update, names="value")
    update()
    return widgets.VBox([widgets.HBox([widgets.VBox(list(controls.values())), numbers]), figure])


# ---------------------------------------------------------------------------------------------------------------------
# Real models. Every number is a field of the model's public config.json (or its paper), named as it is there;
# head_dim is computed as hidden_size // num_attention_heads, as the models do.

MODELS: list[dict] = [
    {"model": "Llama 2 7B", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
     "num_key_value_heads": 32, "source": "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"},
    {"model": "Llama 2 70B", "num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
     "num_key_value_heads": 8, "source": "https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json"},
    {"model": "Llama 3 8B", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
     "num_key_value_heads": 8, "source": "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"},
    {"model": "Mistral 7B", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
     "num_key_value_heads": 8, "source": "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json"},
    # Falcon's config says multi_query: true, i.e. one key-value head.
    {"model": "Falcon 7B", "num_hidden_layers": 32, "hidden_size": 4544, "num_attention_heads": 71,
     "num_key_value_heads": 1, "source": "https://huggingface.co/tiiuae/falcon-7b/blob/main/config.json"},
    # MLA: the cache holds kv_lora_rank latent features plus one shared rotary key of qk_rope_head_dim per token.
    {"model": "DeepSeek-V3", "num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
     "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
     "source": "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json"},
]


def model_table(context_len: int = 4096, batch_size: int = 1, dtype: torch.dtype | str = torch.bfloat16
                ) -> list[tuple]:
    """One row per model in :data:`MODELS`: kind, sizes, cache bytes per token and GiB for ``context_len`` tokens."""
    rows = []
    for m in MODELS:
        layers, heads = m["num_hidden_layers"], m["num_attention_heads"]
        if "kv_lora_rank" in m:
            kind, kv = "MLA", _("latent {rank}+{rope}").format(rank=m["kv_lora_rank"], rope=m["qk_rope_head_dim"])
            per_token = mla_cache_bytes(layers, m["kv_lora_rank"], 1, 1, dtype, m["qk_rope_head_dim"])
        else:
            kv_heads = m["num_key_value_heads"]
            kind = "MHA" if kv_heads == heads else ("MQA" if kv_heads == 1 else "GQA")
            kv = kv_heads
            per_token = kv_cache_bytes(layers, kv_heads, m["hidden_size"] // heads, 1, 1, dtype)
        head_dim = m["hidden_size"] // heads if "kv_lora_rank" not in m else "-"
        rows.append((m["model"], kind, layers, heads, kv, head_dim, f"{per_token:,}",
                     f"{per_token * context_len * batch_size / 2**30:.2f}"))
    return rows
