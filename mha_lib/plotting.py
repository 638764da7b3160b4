"""Figures for the chapters, built with matplotlib's object API.

Functions return a ``Figure`` that is not registered with pyplot, so drawing
many of them (e.g. from a slider) does not pile up open figures.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from torch import Tensor

__all__ = ["show_heatmaps"]


def show_heatmaps(
    matrices: Tensor,
    xlabel: str = "keys",
    ylabel: str = "queries",
    titles: Sequence[str] | None = None,
    figsize: tuple[float, float] = (2.5, 2.5),
    cmap: str = "Reds",
) -> Figure:
    """Draw a grid of heatmaps, one per matrix, sharing one colour bar (d2l's ``show_heatmaps``).

    ``figsize`` is the size of one panel. ``titles`` name the columns of the grid.

    Shape:
        - matrices: ``(num_rows, num_cols, num_queries, num_kvpairs)``
    """
    if not isinstance(matrices, Tensor) or matrices.dim() != 4:
        got = tuple(matrices.shape) if isinstance(matrices, Tensor) else type(matrices).__name__
        raise ValueError(f"matrices must be a 4-D tensor (num_rows, num_cols, num_queries, num_kvpairs), got {got}")
    num_rows, num_cols = matrices.shape[:2]
    if titles is not None and len(titles) != num_cols:
        raise ValueError(f"titles must name the {num_cols} columns, got {len(titles)} titles")
    matrices = matrices.detach().to("cpu", torch.float32)
    vmin, vmax = min(0.0, matrices.min().item()), max(matrices.max().item(), 1e-12)
    fig = Figure(figsize=(figsize[0] * num_cols + 1, figsize[1] * num_rows), layout="constrained")
    axes = fig.subplots(num_rows, num_cols, sharex=True, sharey=True, squeeze=False)
    for i in range(num_rows):
        for j in range(num_cols):
            ax = axes[i, j]
            image = ax.imshow(matrices[i, j].numpy(), cmap=cmap, vmin=vmin, vmax=vmax)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # positions are whole numbers
            ax.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles is not None and i == 0:
                ax.set_title(titles[j])
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    return fig
