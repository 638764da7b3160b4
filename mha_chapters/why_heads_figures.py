"""Figures for the why-heads example of chapters 00 and 04 (:mod:`mha_chapters.why_heads`).

    draw_head_weights    the query's attention weights over the four positions: one head, then each of two heads
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from torch import Tensor

from mha_lib._validation import wrong_type

from .i18n import _, figure_text

__all__ = ["draw_head_weights"]


def draw_head_weights(one_head: Tensor, two_heads: Tensor, figsize: tuple[float, float] = (8.0, 2.6)) -> Figure:
    """Bars of one query's attention weights: one head's softmax beside each of two heads' softmaxes.

    Shape:
        - one_head: ``(num_kvpairs,)``
        - two_heads: ``(2, num_kvpairs)``
    """
    one_head, two_heads = _weights("one_head", one_head, 1), _weights("two_heads", two_heads, 2)
    if one_head.shape[-1] != two_heads.shape[-1]:
        template = _("one_head and two_heads must weigh the same positions, "
                     "got {one_head_positions} and {two_heads_positions}")
        raise ValueError(template.format(one_head_positions=one_head.shape[-1],
                                         two_heads_positions=two_heads.shape[-1]))
    positions = np.arange(one_head.shape[-1])
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(1, 3, sharey=True)
    panels = [(figure_text("one head"), one_head[0], "C7")]
    panels += [(figure_text("two heads: head {index}").format(index=h), two_heads[h], f"C{h}") for h in range(2)]
    for ax, (title, weights, colour) in zip(axes, panels, strict=True):
        ax.bar(positions, weights.numpy(), color=colour)
        for position, weight in zip(positions, weights.tolist(), strict=True):
            ax.text(position, weight + 0.03, f"{weight:.2f}", ha="center", fontsize=9)
        ax.set_xticks(positions)
        ax.set_xlabel(figure_text("key position"))
        ax.set_title(title)
        ax.set_ylim(0, 1.15)
    axes[0].set_ylabel(figure_text("attention weight"))
    fig.suptitle(figure_text("One softmax shares its weight; each head's softmax picks one position"))
    return fig


def _weights(name: str, weights: object, rows: int) -> Tensor:
    if not isinstance(weights, Tensor):
        raise wrong_type(name, _("a tensor"), weights)
    weights = weights.detach().double().reshape(-1, weights.shape[-1]) if weights.dim() else weights
    if weights.dim() != 2 or weights.shape[0] != rows:
        template = _("{name} must hold {rows} row(s) of attention weights, got shape {shape}")
        raise ValueError(template.format(name=name, rows=rows, shape=tuple(weights.shape)))
    return weights
