"""d2l's ``show_heatmaps``, the one figure of the library proper.

The chapters' own figures live in :mod:`mha_chapters`; they return a ``Figure`` that is not
registered with pyplot, so that redrawing one from a slider does not pile up open figures.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from torch import Tensor

from mha_lib._validation import require_bool_mask, require_tensor

from .i18n import _, figure_text

__all__ = ["MASKED_COLOUR", "show_heatmaps"]

MASKED_COLOUR = "#9e9e9e"  # a grey that no colour map of weights uses for 0: masked is not "almost nothing"


def show_heatmaps(
    matrices: Tensor,
    xlabel: str | None = None,
    ylabel: str | None = None,
    titles: Sequence[str] | None = None,
    figsize: tuple[float, float] = (2.5, 2.5),
    cmap: str = "Reds",
    *,
    mask: Tensor | None = None,
    suptitle: str | None = None,
) -> None:
    """Draw a grid of heatmaps, one per matrix, sharing one colour bar: d2l's ``show_heatmaps``.

    The arguments are d2l's (``figsize`` is the size of the whole figure), and so is the behaviour: the
    figure is made with pyplot, so Jupyter shows it at the end of the cell wherever the call stands, and
    nothing is returned (a returned figure would be shown twice). The axis labels default to "keys" and
    "queries", in the language of :func:`mha_lib.set_language` where a font can draw it. ``titles`` name
    the columns of the grid.
    Two keyword arguments are mha_lib's own: ``suptitle`` titles the whole figure, and with ``mask``
    (boolean, True = may attend) the cells a query may not attend to are drawn grey and a legend says
    "masked", so that a masked key looks different from a weight that is merely close to 0.

    Shape:
        - matrices: ``(num_rows, num_cols, num_queries, num_kvpairs)``
        - mask: broadcastable to ``matrices``, e.g. ``(num_rows, 1, num_queries, num_kvpairs)``
    """
    require_tensor("matrices", matrices, 4, "(num_rows, num_cols, num_queries, num_kvpairs)", floating=False)
    if matrices.dtype.is_complex:
        template = _("matrices must hold real numbers, got dtype {dtype}: a heatmap "
                     "cannot show an imaginary part; pass matrices.real or matrices.abs()")
        raise TypeError(template.format(dtype=matrices.dtype))
    if matrices.numel() == 0:
        template = _("matrices must have at least one cell to draw, got shape {shape}")
        raise ValueError(template.format(shape=tuple(matrices.shape)))
    num_rows, num_cols = matrices.shape[:2]
    xlabel = figure_text("keys") if xlabel is None else xlabel
    ylabel = figure_text("queries") if ylabel is None else ylabel
    if titles is not None and len(titles) != num_cols:
        template = _("titles must name the {num_cols} columns, got {num_titles} titles")
        raise ValueError(template.format(num_cols=num_cols, num_titles=len(titles)))
    if mask is not None:
        require_bool_mask("mask", mask, tuple(matrices.shape), "matrices.shape")
        hidden = (~mask).to("cpu").expand(matrices.shape).numpy()
    matrices = matrices.detach().to("cpu", torch.float32)
    colours = colormaps[cmap].with_extremes(bad=MASKED_COLOUR)
    finite = matrices[matrices.isfinite()]  # a NaN or inf cell must not take the colour scale with it
    vmin = min(0.0, finite.min().item()) if finite.numel() else 0.0
    vmax = max(finite.max().item(), 1e-12) if finite.numel() else 1.0
    fig = plt.figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(num_rows, num_cols, sharex=True, sharey=True, squeeze=False)
    for i in range(num_rows):
        for j in range(num_cols):
            ax = axes[i, j]
            cells = matrices[i, j].numpy()
            if mask is not None:  # masked cells become "bad" values, which the colour map draws grey
                cells = np.ma.masked_array(cells, mask=hidden[i, j])
            image = ax.imshow(cells, cmap=colours, vmin=vmin, vmax=vmax)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # positions are whole numbers
            ax.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles is not None and i == 0:
                ax.set_title(titles[j])
    colour_bar = fig.colorbar(image, ax=axes, shrink=0.8, label=figure_text("attention weight"))
    if mask is not None:  # the legend sits under the colour bar
        masked = Patch(facecolor=MASKED_COLOUR, edgecolor="black", label=figure_text("masked"))
        colour_bar.ax.legend(handles=[masked], loc="upper left", bbox_to_anchor=(-0.5, -0.04), fontsize="small",
                             frameon=False, handlelength=1.0)
    if suptitle is not None:
        fig.suptitle(suptitle)
