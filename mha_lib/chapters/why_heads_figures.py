"""Figures for the why-heads example of chapters 00 and 04 (:mod:`mha_lib.chapters.why_heads`).

    draw_head_weights    the query's attention weights over the four positions: one head, then each of two heads
    draw_one_head_bound  every output one head can give with the example's W_v and W_o, against what is needed
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Polygon
from torch import Tensor

from .._validation import wrong_type
from ..i18n import _, figure_text

__all__ = ["draw_head_weights", "draw_one_head_bound"]


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


def draw_one_head_bound(contents: Tensor, needed: Tensor, reached: Tensor,
                        figsize: tuple[float, float] = (5.2, 4.4)) -> Figure:
    """Every output ``(a, b, a, b)`` one head can give, as the plane of ``(a, b)``, with its distance from ``needed``.

    With the example's ``W_v`` (content ``(a, b)`` copied into both halves) and ``W_o = I``, one head outputs
    the blend ``(a, b) = sum_j a_j c_j`` of the contents, written twice. Its distance from
    ``needed = (p, 0, 0, p)`` is ``sqrt(2 (a - p/2)^2 + 2 (b - p/2)^2 + p^2 / 2)``, so at least ``p / sqrt 2``.

    Shape:
        - contents: ``(num_kvpairs, 2)``, each position's content
        - needed: ``(4,)``
        - reached: ``(2,)``, the ``(a, b)`` the query's own attention weights give
    """
    contents = torch.as_tensor(contents, dtype=torch.float64)
    needed = torch.as_tensor(needed, dtype=torch.float64)
    reached = torch.as_tensor(reached, dtype=torch.float64)
    if contents.dim() != 2 or contents.shape[1] != 2 or needed.shape != (4,) or reached.shape != (2,):
        template = _("contents must be (num_kvpairs, 2), needed (4,) and reached "
                     "(2,), got {contents_shape}, {needed_shape} and {reached_shape}")
        raise ValueError(template.format(contents_shape=tuple(contents.shape), needed_shape=tuple(needed.shape),
                                         reached_shape=tuple(reached.shape)))
    top = float(contents.abs().max()) * 1.15
    grid = torch.linspace(-0.05 * top, top, 201, dtype=torch.float64)
    a, b = torch.meshgrid(grid, grid, indexing="xy")
    outputs = torch.stack([a, b, a, b], dim=-1)  # (201, 201, 4): what one head writes for each (a, b)
    distance = (outputs - needed).norm(dim=-1)
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    lines = ax.contour(a.numpy(), b.numpy(), distance.numpy(), levels=[8.5, 9, 10, 11, 12], colors="0.6",
                       linewidths=0.8)
    ax.clabel(lines, fmt="%g", fontsize=8)
    points = contents.numpy()
    centre = points.mean(axis=0)  # the corners of the region, in order of their angle around its centre
    hull = points[np.argsort(np.arctan2(*(points - centre).T[::-1]))]
    ax.add_patch(Polygon(hull, closed=True, alpha=0.25, color="C0",
                         label=figure_text("blends one softmax can make")))
    ax.scatter(points[:, 0], points[:, 1], color="C0", zorder=3)
    for j, (x, y) in enumerate(points):
        ax.annotate(figure_text("position {j}").format(j=j), (x, y), textcoords="offset points", xytext=(5, 4),
                    fontsize=8)
    best = torch.full((2,), float(needed.abs().max()) / 2, dtype=torch.float64)
    ax.scatter(*best.numpy(), marker="*", s=160, color="C3", zorder=4,
               label=figure_text("closest possible: distance {d:.2f}").format(
                   d=float((torch.cat([best, best]) - needed).norm())))
    ax.scatter(*reached.numpy(), marker="x", s=60, color="black", zorder=5,
               label=figure_text("the query's weights: distance {d:.2f}").format(
                   d=float((torch.cat([reached, reached]) - needed).norm())))
    ax.set_xlim(float(grid[0]), float(grid[-1]))
    ax.set_ylim(float(grid[0]), float(grid[-1]))
    ax.set_aspect("equal")
    ax.set_xlabel(figure_text("a (first feature of the blend)"))
    ax.set_ylabel(figure_text("b (second feature of the blend)"))
    ax.set_title(figure_text("One head outputs (a, b, a, b): grey lines, distance from (8, 0, 0, 8)"), fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    return fig


def _weights(name: str, weights: object, rows: int) -> Tensor:
    if not isinstance(weights, Tensor):
        raise wrong_type(name, _("a tensor"), weights)
    weights = weights.detach().double().reshape(-1, weights.shape[-1]) if weights.dim() else weights
    if weights.dim() != 2 or weights.shape[0] != rows:
        template = _("{name} must hold {rows} row(s) of attention weights, got shape {shape}")
        raise ValueError(template.format(name=name, rows=rows, shape=tuple(weights.shape)))
    return weights
