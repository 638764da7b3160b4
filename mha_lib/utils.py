"""Devices, seeds and a bridge to ``torch.nn.MultiheadAttention``."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import numpy as np
import torch
from torch import nn

from ._validation import require_called, require_positive_int, wrong_type
from .grouped import GroupedQueryAttention
from .i18n import _
from .modules import MultiHeadAttention

__all__ = ["cpu_threads", "pick_device", "set_seed", "to_torch_mha"]


def pick_device() -> torch.device:
    """The fastest device present: an NVIDIA GPU (cuda), then Apple's GPU (mps), then the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


@contextlib.contextmanager
def cpu_threads(num_threads: int | None) -> Iterator[None]:
    """Let PyTorch use ``num_threads`` CPU threads inside the ``with`` block, then restore the old number.

    ``None`` leaves the number as it is. Small tensors (a toy model, one slider update)
    run fastest on one thread: a second thread mostly waits for the first, and on a
    busy machine it waits for a free core too.
    """
    if num_threads is not None:
        require_positive_int("num_threads", num_threads)
    before = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def set_seed(seed: int = 0) -> None:
    """Seed Python's, NumPy's and PyTorch's (CPU and GPU) random generators, for reproducible runs."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def to_torch_mha(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """Build a ``torch.nn.MultiheadAttention(batch_first=True)`` holding copies of ``mha``'s weights.

    With the same inputs both compute the same output. Note the mask polarity
    there: a boolean ``key_padding_mask`` or ``attn_mask`` marks with True what
    must be *ignored*.
    """
    if not isinstance(mha, MultiHeadAttention):
        raise wrong_type("mha", _("an mha_lib.MultiHeadAttention"), mha)
    require_called(mha)
    if isinstance(mha, GroupedQueryAttention) and mha.num_kv_heads != mha.num_heads:
        template = _("nn.MultiheadAttention has one key-value head per query head; "
                     "mha has num_kv_heads={num_kv_heads} for num_heads={num_heads}")
        raise ValueError(template.format(num_kv_heads=mha.num_kv_heads, num_heads=mha.num_heads))
    if mha.rotary is not None:
        template = _("nn.MultiheadAttention has no rotary position embedding; mha was built with rope={rope!r}")
        raise ValueError(template.format(rope=mha.rotary.convention))
    num_hiddens = mha.W_o.out_features
    sizes = {"query_size": mha.W_q.in_features, "num_heads * head_dim": mha.W_q.out_features,
             "num_heads * v_head_dim": mha.W_v.out_features}
    if any(size != num_hiddens for size in sizes.values()):
        template = _("nn.MultiheadAttention needs query_size, num_heads * head_dim and num_heads * v_head_dim "
                     "all equal to num_hiddens={num_hiddens}, got {sizes}")
        raise ValueError(template.format(num_hiddens=num_hiddens,
                                         sizes=", ".join(f"{name}={size}" for name, size in sizes.items())))
    bias = mha.W_q.bias is not None
    reference = nn.MultiheadAttention(
        num_hiddens, mha.num_heads, dropout=mha.dropout.p, bias=bias, batch_first=True,
        kdim=mha.W_k.in_features, vdim=mha.W_v.in_features,
        device=mha.W_o.weight.device, dtype=mha.W_o.weight.dtype,
    )
    projections = (mha.W_q, mha.W_k, mha.W_v)
    with torch.no_grad():
        if reference._qkv_same_embed_dim:  # one stacked (3*num_hiddens, num_hiddens) matrix
            reference.in_proj_weight.copy_(torch.cat([W.weight for W in projections]))
        else:
            reference.q_proj_weight.copy_(mha.W_q.weight)
            reference.k_proj_weight.copy_(mha.W_k.weight)
            reference.v_proj_weight.copy_(mha.W_v.weight)
        reference.out_proj.weight.copy_(mha.W_o.weight)
        if bias:
            reference.in_proj_bias.copy_(torch.cat([W.bias for W in projections]))
            reference.out_proj.bias.copy_(mha.W_o.bias)
    return reference.train(mha.training)
