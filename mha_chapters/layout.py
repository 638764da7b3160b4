"""Drawings of how a tensor is laid out: the grid its indices show, and the memory behind it.

Small tensors of whole numbers are drawn as coloured grids with each number written in its cell,
so a reader can follow where every number goes under ``view``, ``reshape``, ``transpose`` and
``permute``. Within one figure a number keeps its colour in every panel.

How the panels are arranged, by the number of axes:

    1-D  (n,)           one strip of n cells
    2-D  (r, c)         one grid: r rows, c columns
    3-D  (a, r, c)      a grids side by side, titled "<name of axis 0> = 0", "... = 1", ...
    4-D  (a, b, r, c)   a rows of b grids, titled "<name of axis 0> = 0" over "<name of axis 1> = 0", ...

The last axis always runs across a grid and the one before it down, so in every drawing
the next element in row-major order is the cell to the right.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure, SubFigure
from torch import Tensor

from mha_lib._validation import wrong_type

from .i18n import figure_text, tr

__all__ = ["MAX_CELLS", "draw_memory", "draw_side_by_side", "draw_tensor", "permuted_axis_names"]

MAX_CELLS = 64  # more cells than this no longer fit a page with readable numbers

_CELL = 0.42  # inches per cell when there is room
_MAX_WIDTH, _MAX_HEIGHT = 11.8, 10.0  # inches
_PANEL_MARGIN_X, _PANEL_MARGIN_Y = 0.6, 0.6  # inches around one grid for tick labels and axis labels (not titles)


def draw_tensor(X: Tensor, title: str, names: Sequence[str] | None = None, *, cmap: str = "viridis") -> Figure:
    """Draw a 1-D to 4-D tensor of whole numbers as grids of coloured cells with the numbers in them.

    ``names`` names the axes, e.g. ``("batch", "tokens", "features")``: the last two label the
    grid's axes, the others title the panels. By default the axes are called "axis 0", "axis 1", ...

    Shape:
        - X: ``(n,)``, ``(r, c)``, ``(a, r, c)`` or ``(a, b, r, c)``, at most ``MAX_CELLS`` elements
    """
    X = _whole_numbers("X", X)
    return draw_side_by_side([X], [title], title, [_axis_names("names", names, X.dim())], cmap=cmap)


def draw_side_by_side(
    tensors: Sequence[Tensor],
    titles: Sequence[str],
    title: str,
    names: Sequence[Sequence[str] | None] | None = None,
    *,
    cmap: str = "viridis",
) -> Figure:
    """Draw several tensors side by side, with one colour scale for all of them.

    Use it to show a tensor before and after an operation: equal numbers get equal colours, so the
    eye can follow each one. Each tensor is drawn as in :func:`draw_tensor`, under its own title
    from ``titles``; ``title`` heads the whole figure; ``names[i]`` names the axes of ``tensors[i]``.

    Shape:
        - tensors[i]: 1-D to 4-D, at most ``MAX_CELLS`` elements each
    """
    if isinstance(tensors, Tensor) or not isinstance(tensors, Sequence) or len(tensors) == 0:
        raise ValueError(tr("tensors must be a non-empty list of tensors, got {got}").format(got=_describe(tensors)))
    tensors = [_whole_numbers(f"tensors[{i}]", X) for i, X in enumerate(tensors)]
    if isinstance(titles, str) or len(titles) != len(tensors):
        template = tr("titles must give one title per tensor ({num_tensors}), got {titles!r}")
        raise ValueError(template.format(num_tensors=len(tensors), titles=titles))
    if names is None:
        names = [None] * len(tensors)
    if isinstance(names, str) or len(names) != len(tensors):
        template = tr("names must give the axis names of each of the {num_tensors} tensors, got {names!r}")
        raise ValueError(template.format(num_tensors=len(tensors), names=names))
    names = [_axis_names(f"names[{i}]", n, X.dim()) for i, (n, X) in enumerate(zip(names, tensors, strict=True))]

    # Sizes in inches are a * cell + b; pick the largest cell (up to _CELL) for which the figure fits.
    sizes = [_grid_size(X) for X in tensors]
    width = (sum(a for a, _, _, _ in sizes), sum(b for _, b, _, _ in sizes) + 0.2)
    height = (max(c for _, _, c, _ in sizes), max(d for _, _, _, d in sizes) + 0.7)
    cell = min(_CELL, (_MAX_WIDTH - width[1]) / width[0], (_MAX_HEIGHT - height[1]) / height[0])
    fig = Figure(figsize=(width[0] * cell + width[1], height[0] * cell + height[1]), layout="constrained")

    norm = Normalize(min(X.min().item() for X in tensors), max(X.max().item() for X in tensors))
    ratios = [a * cell + b for a, b, _, _ in sizes]
    subfigs = fig.subfigures(1, len(tensors), width_ratios=ratios, squeeze=False)[0]
    tallest = max(c * cell + d for _, _, c, d in sizes)
    for subfig, X, axis_names, subtitle, (_, _, c, d) in zip(subfigs, tensors, names, titles, sizes, strict=True):
        # A lower drawing leaves space free below it, so that every drawing starts just under its title.
        _draw_panels(subfig, X, axis_names, norm, cmap, cell, space_below=tallest - (c * cell + d))
        if len(tensors) > 1:
            subfig.suptitle(subtitle)
    fig.suptitle(title, fontweight="bold" if len(tensors) > 1 else "normal")
    return fig


def draw_memory(X: Tensor, title: str, name: str = "X", *, cmap: str = "viridis") -> Figure:
    """Draw the memory (storage) behind ``X`` as a strip, above ``X``'s elements in row-major order.

    Top strip: every element of ``X``'s storage, in the order it sits in memory; cells that ``X``
    does not use are grey. Bottom strip: the elements of ``X`` in row-major order (the order
    ``X.flatten()`` lists them), each ticked with the storage position it is read from. For a
    contiguous tensor both strips are the same and the positions count 0, 1, 2, ...
    ``name`` is what the labels call ``X``.

    Shape:
        - X: any shape; its whole storage may hold at most ``MAX_CELLS`` elements
    """
    if not isinstance(X, Tensor):
        raise wrong_type("X", tr("a torch.Tensor"), X)
    storage = X.new_empty(0).set_(X.untyped_storage())  # the whole storage as a 1-D tensor of X's dtype
    if storage.numel() > MAX_CELLS:
        template = tr("the storage behind X holds {numel} elements, too "
                      "many to draw; at most MAX_CELLS={max_cells} fit")
        raise ValueError(template.format(numel=storage.numel(), max_cells=MAX_CELLS))
    storage = _whole_numbers("X's storage", storage, rank_limit=False)
    elements = _whole_numbers("X", X, rank_limit=False).flatten()  # row-major order
    # Storage position of element (i, j, ...) = offset + i * stride[0] + j * stride[1] + ...
    positions = torch.full(X.shape, X.storage_offset(), dtype=torch.int64)
    for axis, (size, stride) in enumerate(zip(X.shape, X.stride(), strict=True)):
        shape = [1] * X.dim()
        shape[axis] = size
        positions = positions + (torch.arange(size) * stride).reshape(shape)
    positions = positions.flatten()
    used = torch.zeros(storage.numel(), dtype=torch.bool)
    used[positions] = True

    n = storage.numel()
    cell = min(_CELL, (_MAX_WIDTH - 0.4) / max(n, elements.numel()))
    fig = Figure(figsize=(max(n, elements.numel()) * cell + 0.4, 2 * cell + 2.4), layout="constrained")
    ax_memory, ax_elements = fig.subplots(2, 1)
    norm = Normalize(storage.min().item(), storage.max().item())
    _draw_grid(ax_memory, storage.reshape(1, n), norm, cmap, cell, skipped=~used.reshape(1, n))
    ax_memory.set_title(figure_text("memory (storage), in address order"))
    ax_memory.set_xlabel(figure_text("storage position"))
    _draw_grid(ax_elements, elements.reshape(1, -1), norm, cmap, cell)
    ax_elements.set_title(figure_text("elements of {name} in row-major order ({name}.is_contiguous() = {contiguous})")
                          .format(name=name, contiguous=X.is_contiguous()))
    ax_elements.set_xticks(range(elements.numel()), [str(p) for p in positions.tolist()])
    ax_elements.set_xlabel(figure_text("storage position each element is read from"))
    for ax in (ax_memory, ax_elements):
        ax.set_yticks([])
    fig.suptitle(title)
    return fig


def permuted_axis_names(dims: Sequence[int]) -> list[str]:
    """The axis names of ``X.permute(*dims)``: new axis ``k`` is old axis ``dims[k]``, and says so when they differ.

    ``permuted_axis_names((0, 2, 1))`` (a ``transpose(1, 2)``) names the axes "axis 0", "axis 1 (was 2)",
    "axis 2 (was 1)", in the reader's language.
    """
    if isinstance(dims, str) or not isinstance(dims, Sequence):
        raise wrong_type("dims", tr("a sequence of ints such as (0, 2, 1)"), dims)
    if sorted(dims) != list(range(len(dims))):
        template = tr("dims must be a permutation of 0, 1, ..., n - 1, as X.permute takes it, got {dims!r}")
        raise ValueError(template.format(dims=dims))
    return [figure_text("axis {new}").format(new=new) if old == new
            else figure_text("axis {new} (was {old})").format(new=new, old=old) for new, old in enumerate(dims)]


def _draw_panels(fig: Figure | SubFigure, X: Tensor, names: list[str], norm: Normalize, cmap: str,
                 cell: float, space_below: float = 0.0) -> None:
    """Draw ``X`` into ``fig`` as a grid of panels, one per index of its outer axes, ``space_below`` inches above
    an empty bottom margin."""
    rank = X.dim()
    # Rows of panels, columns of panels, then one grid: (n,) -> (1, 1, 1, n), (r, c) -> (1, 1, r, c),
    # (a, r, c) -> (1, a, r, c); a 4-D tensor is already laid out that way.
    panels = X.reshape((1, 1, 1, X.shape[0]) if rank == 1 else (1,) * (4 - rank) + tuple(X.shape))
    panel_rows, panel_cols = panels.shape[:2]
    _, _, height, margin = _grid_size(X)
    row_height = (height * cell + margin) / panel_rows
    if space_below > 0.05:
        grid = fig.add_gridspec(panel_rows + 1, panel_cols, height_ratios=[row_height] * panel_rows + [space_below])
    else:
        grid = fig.add_gridspec(panel_rows, panel_cols)
    for p in range(panel_rows):
        for q in range(panel_cols):
            ax = fig.add_subplot(grid[p, q])
            _draw_grid(ax, panels[p, q], norm, cmap, cell)
            if rank == 3:
                ax.set_title(f"{names[0]} = {q}")
            elif rank == 4:
                ax.set_title(f"{names[0]} = {p}\n{names[1]} = {q}")
            if p == panel_rows - 1:
                ax.set_xlabel(names[-1])
            if q == 0 and rank > 1:
                ax.set_ylabel(names[-2])
            if rank == 1:
                ax.set_yticks([])


def _draw_grid(ax: Axes, values: Tensor, norm: Normalize, cmap: str, cell: float,
               skipped: Tensor | None = None) -> None:
    """Draw one 2-D integer tensor as coloured cells with its numbers written in them."""
    colours = matplotlib.colormaps[cmap].with_extremes(bad="0.88")
    data = values.numpy().astype(float)
    if skipped is not None:
        data = np.ma.masked_array(data, mask=skipped.numpy())
    ax.imshow(data, cmap=colours, norm=norm)
    rows, cols = values.shape
    fontsize = max(6.0, min(11.0, 24 * cell))
    for r in range(rows):
        for c in range(cols):
            value = values[r, c].item()
            if skipped is not None and skipped[r, c]:
                colour = "0.55"
            else:
                red, green, blue, _ = colours(norm(value))
                colour = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"
            ax.text(c, r, str(value), ha="center", va="center", color=colour, fontsize=fontsize)
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    # White lines between the cells.
    ax.set_xticks(np.arange(cols + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(rows + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="both", length=0, labelsize=8)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _grid_size(X: Tensor) -> tuple[float, float, float, float]:
    """Width and height of ``X``'s drawing in inches, as ``(a, b, c, d)``: width = a*cell + b, height = c*cell + d."""
    rank = X.dim()
    rows, cols = (1, X.shape[0]) if rank == 1 else X.shape[-2:]
    panel_rows = X.shape[0] if rank == 4 else 1
    panel_cols = X.shape[-3] if rank >= 3 else 1
    title_lines = 2 if rank == 4 else 1
    return (panel_cols * cols, panel_cols * _PANEL_MARGIN_X,
            panel_rows * rows, panel_rows * (_PANEL_MARGIN_Y + 0.2 * title_lines))


def _whole_numbers(name: str, X: object, rank_limit: bool = True) -> Tensor:
    """Check that ``X`` is a drawable tensor of whole numbers; return it as a CPU int64 tensor."""
    if not isinstance(X, Tensor):
        raise wrong_type(name, tr("a torch.Tensor"), X)
    if X.dtype == torch.bool or X.dtype.is_complex:
        template = tr("{name} must hold whole numbers (an integer or floating-point dtype), got dtype {dtype}")
        raise TypeError(template.format(name=name, dtype=X.dtype))
    if rank_limit and not 1 <= X.dim() <= 4:
        template = tr("{name} must have 1 to 4 axes to be drawn as grids, got shape {shape}")
        raise ValueError(template.format(name=name, shape=tuple(X.shape)))
    if X.numel() == 0 or X.numel() > MAX_CELLS:
        template = tr("{name} must have 1 to MAX_CELLS={max_cells} elements "
                      "to be drawn readably, got {numel} (shape {shape})")
        raise ValueError(template.format(name=name, max_cells=MAX_CELLS, numel=X.numel(), shape=tuple(X.shape)))
    X = X.detach().cpu()
    if X.dtype.is_floating_point:
        fractional = ~torch.isfinite(X) | (X != X.round())
        if fractional.any():
            template = tr("{name} must hold whole numbers, which can be written in a cell, got "
                          "{value!r}; draw e.g. {name}.round() or (10 * {name}).round() instead")
            raise ValueError(template.format(name=name, value=X[fractional][0].item()))
    return X.to(torch.int64)


def _axis_names(name: str, names: Sequence[str] | None, rank: int) -> list[str]:
    """Check ``names`` (one string per axis) or make the default "axis 0", "axis 1", ... (in the reader's language)"""
    if names is None:
        return permuted_axis_names(range(rank))
    if isinstance(names, str) or len(names) != rank or not all(isinstance(n, str) for n in names):
        template = tr("{name} must give one name (a string) per axis, {rank} in all, got {names!r}")
        raise ValueError(template.format(name=name, rank=rank, names=names))
    return list(names)


def _describe(x: object) -> str:
    return tr("a tensor of shape {shape}").format(shape=tuple(x.shape)) if isinstance(x, Tensor) else repr(x)
