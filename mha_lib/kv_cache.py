"""A KV cache and its sliding-window (rolling-buffer) form, attention of new tokens over a cache, and
token-by-token generation: what a decoder keeps between steps.

Dimension names as in :mod:`mha_lib.grouped`; in addition

    context_len   tokens whose keys and values the cache holds
    num_new       tokens appended in one step (the whole prompt at first, then one at a time)
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._validation import (
    require_device,
    require_features,
    require_layer_device,
    require_layer_dtype,
    require_positive_int,
    require_tensor,
    wrong_type,
)
from .functional import _dot_product_attention, merge_heads, split_heads
from .grouped import _repeat_kv_heads
from .i18n import _
from .modules import MultiHeadAttention

__all__ = ["KVCache", "SlidingWindowKVCache", "attend_with_cache", "generate"]


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
        if not isinstance(dtype, torch.dtype):
            raise wrong_type("dtype", _("a torch.dtype, e.g. torch.float16"), dtype)
        if not dtype.is_floating_point:
            raise ValueError(_("dtype must be a floating-point torch.dtype, got {dtype}").format(dtype=dtype))
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


def attend_with_cache(layer: MultiHeadAttention, x: Tensor, cache: KVCache) -> Tensor:
    """Causal self-attention of new tokens over the cached ones and themselves; their keys and values join the cache.

    Only the new tokens are projected: the keys and values of the earlier ones come from the cache, and
    the cache says which of them each new token may see. With rotary position embedding (``layer.rotary``)
    the new queries and keys are turned by their own positions, from ``cache.seen`` on, before the keys are stored.
    The cache holds the layer's key-value heads: ``num_heads`` of them, or a :class:`~mha_lib.GroupedQueryAttention`'s
    fewer ``num_kv_heads``, each repeated for its group only to attend.

    Shape:
        - x: ``(batch_size, num_new, query_size)``
        - output: ``(batch_size, num_new, num_hiddens)``
    """
    if not isinstance(layer, MultiHeadAttention):
        raise wrong_type("layer", _("an mha_lib.MultiHeadAttention"), layer)
    if not isinstance(cache, KVCache):
        raise wrong_type("cache", _("a KVCache"), cache)
    require_tensor("x", x, 3, "(batch_size, num_new, query_size)")
    heads, head_dim = layer.num_heads, layer.head_dim
    kv_heads = layer.W_k.out_features // head_dim  # num_heads, or a GroupedQueryAttention's num_kv_heads
    cache_heads, cache_head_dim = cache.keys.shape[1], cache.keys.shape[3]
    if (cache_heads, cache_head_dim) != (kv_heads, head_dim):
        template = _("cache holds {cache_heads} key-value heads of {cache_head_dim} features, but layer has "
                     "num_kv_heads={num_kv_heads} and head_dim={head_dim}; build the cache with the layer's sizes")
        raise ValueError(template.format(cache_heads=cache_heads, cache_head_dim=cache_head_dim,
                                         num_kv_heads=kv_heads, head_dim=head_dim))
    for name in ("W_q", "W_k", "W_v"):
        require_features("x", x, getattr(layer, name).in_features, f"{name}.in_features")
    require_layer_dtype("x", x, layer.W_q.weight)
    if x.device != layer.W_q.weight.device:
        require_layer_device("x", x, layer.W_q.weight)
    queries = split_heads(layer.W_q(x), heads)  # (batch, new, heads * head_dim) -> (batch, heads, new, head_dim)
    keys, values = split_heads(layer.W_k(x), kv_heads), split_heads(layer.W_v(x), kv_heads)  # kv_heads heads
    if layer.rotary is not None:  # new tokens sit at positions seen, seen + 1, ...: the cache keeps rotated keys
        queries, keys = layer.rotary(queries, keys, start=cache.seen)
    keys, values, mask = cache.append(keys, values)  # -> (batch, kv_heads, past + new, head_dim), (new, past + new)
    keys, values = _repeat_kv_heads(keys, heads // kv_heads), _repeat_kv_heads(values, heads // kv_heads)
    dropout_p = layer.dropout.p if layer.training else 0.0  # no dropout in evaluation
    output, _weights = _dot_product_attention(queries, keys, values, mask, dropout_p)  # (batch, heads, new, head_dim)
    return layer.W_o(merge_heads(output))  # -> (batch, new, num_hiddens)


def generate(layer: MultiHeadAttention, prompt: Tensor, num_new_tokens: int, *, use_cache: bool = True) -> Tensor:
    """Extend ``prompt`` token by token: each new token is the layer's causal output at the last position.

    With ``use_cache`` the prompt is read once (filling the cache) and every later step projects only
    the newest token; without it every step runs the layer over the whole sequence so far.

    Shape:
        - prompt: ``(batch_size, prompt_len, num_hiddens)``
        - output: ``(batch_size, prompt_len + num_new_tokens, num_hiddens)``
    """
    if not isinstance(layer, MultiHeadAttention):
        raise wrong_type("layer", _("an mha_lib.MultiHeadAttention"), layer)
    num_hiddens = layer.W_o.out_features
    sizes = (layer.W_q.in_features, layer.W_k.in_features, layer.W_v.in_features)
    if sizes != (num_hiddens,) * 3:
        template = _("generate feeds each output back in, so query_size, key_size and "
                     "value_size must equal num_hiddens={num_hiddens}, got {sizes}")
        raise ValueError(template.format(num_hiddens=num_hiddens, sizes=sizes))
    require_tensor("prompt", prompt, 3, "(batch_size, prompt_len, num_hiddens)")
    require_features("prompt", prompt, num_hiddens, "num_hiddens")
    if prompt.shape[1] == 0:  # each new token is the output at the last position: there must be one
        template = _("prompt must hold at least one token to continue from (prompt_len >= 1), got shape {shape}")
        raise ValueError(template.format(shape=tuple(prompt.shape)))
    require_positive_int("num_new_tokens", num_new_tokens)
    sequence = prompt
    if use_cache:
        kv_heads = layer.W_k.out_features // layer.head_dim  # num_heads, or a GroupedQueryAttention's num_kv_heads
        cache = KVCache(prompt.shape[0], kv_heads, layer.head_dim, prompt.shape[1] + num_new_tokens,
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
