"""Multi-head latent attention (DeepSeek-V2's MLA): keys and values read from one small latent per token.

Dimension names as in :mod:`mha_lib.functional`; in addition

    kv_lora_rank  size of MLA's latent vector per token (DeepSeek-V2's d_c)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ._validation import (
    require_bool,
    require_device,
    require_features,
    require_layer_device,
    require_layer_dtype,
    require_masks,
    require_positive_int,
    require_tensor,
)
from .functional import _dot_product_attention, merge_heads, split_heads
from .masks import _attention_mask

__all__ = ["MultiHeadLatentAttention"]


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
        num_hiddens, num_heads, head_dim, kv_lora_rank = (require_positive_int(name, size) for name, size in (
            ("num_hiddens", num_hiddens), ("num_heads", num_heads), ("head_dim", head_dim),
            ("kv_lora_rank", kv_lora_rank)))
        self.num_heads, self.head_dim, self.kv_lora_rank = num_heads, head_dim, kv_lora_rank
        self.W_q = nn.Linear(num_hiddens, num_heads * head_dim, bias=False)
        self.W_dkv = nn.Linear(num_hiddens, kv_lora_rank, bias=False)  # down: token -> latent (cached)
        self.W_uk = nn.Linear(kv_lora_rank, num_heads * head_dim, bias=False)  # up: latent -> keys of all heads
        self.W_uv = nn.Linear(kv_lora_rank, num_heads * head_dim, bias=False)  # up: latent -> values of all heads
        self.W_o = nn.Linear(num_heads * head_dim, num_hiddens, bias=False)

    def forward(self, x: Tensor, valid_lens: Tensor | None = None, *, causal: bool = False,
                absorbed: bool = False) -> Tensor:
        # the checks of the other layers' require_forward_arguments, x named x: everything below trusts the arguments
        require_tensor("x", x, 3, "(batch_size, seq_len, num_hiddens)")
        require_features("x", x, self.W_q.in_features, "num_hiddens")
        require_layer_dtype("x", x, self.W_q.weight)
        require_layer_device("x", x, self.W_q.weight)
        batch_size, seq_len, _features = x.shape
        require_masks(batch_size, seq_len, seq_len, valid_lens, causal, None)
        if valid_lens is not None:
            require_device("valid_lens", valid_lens, x.device, other="x")
        absorbed = require_bool("absorbed", absorbed)
        mask = _attention_mask(seq_len, seq_len, valid_lens, causal, None, x.device)
        if mask is not None:
            mask = mask.unsqueeze(1)  # (batch or 1, queries or 1, kvpairs) -> (..., 1, ...): one mask for all heads
        latent = self.W_dkv(x)  # (batch, seq, num_hiddens) -> (batch, seq, kv_lora_rank): all that is cached
        return self._absorbed(x, latent, mask) if absorbed else self._explicit(x, latent, mask)

    def _explicit(self, x: Tensor, latent: Tensor, mask: Tensor | None) -> Tensor:
        """Expand the latent into keys and values, then ordinary multi-head attention."""
        queries = split_heads(self.W_q(x), self.num_heads)  # (batch, seq, heads * head_dim) -> (batch, heads, seq, ...)
        keys = split_heads(self.W_uk(latent), self.num_heads)  # (batch, seq, heads * head_dim) from the latent
        values = split_heads(self.W_uv(latent), self.num_heads)
        output, _weights = _dot_product_attention(queries, keys, values, mask, 0.0)  # (batch, heads, seq, head_dim)
        return self.W_o(merge_heads(output))  # -> (batch, seq, num_hiddens)

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
        # _dot_product_attention divides by sqrt(kv_lora_rank); the explicit layer divides by sqrt(head_dim).
        queries = queries * math.sqrt(self.kv_lora_rank / self.head_dim)
        # (batch, seq, rank) -> (batch, heads, seq, rank): one latent shared by all heads (expand is a view, no copy)
        latent = latent.unsqueeze(1).expand(-1, self.num_heads, -1, -1)
        mixed, _weights = _dot_product_attention(queries, latent, latent, mask, 0.0)  # (batch, heads, seq, rank)
        # W_o_h (W_uv_h (weights @ c)) = (W_o_h W_uv_h) (weights @ c): the value up-projection joins W_o.
        return torch.einsum("ohr,bhnr->bno", output_side, mixed)  # -> (batch, seq, num_hiddens)
