"""Chapter 03's four-panel picture of ``transpose_qkv``: X -> reshape -> permute -> fold.

Every number is written in its cell. The cell's colour is the head the number belongs to, and a black outline
surrounds each sentence, so a reader sees that the reshape only cuts the features into heads, the permute
brings each head's rows of one sentence together, and the fold renames (sentence, head) as one sample.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from torch import Tensor

from .i18n import _, figure_text

__all__ = ["draw_fold_steps", "fold_steps"]


def fold_steps(X: Tensor, num_heads: int) -> list[tuple[str, Tensor]]:
    """The three steps of ``transpose_qkv`` on ``X``, each with the code that made it.

    Shape:
        - X: ``(batch_size, seq_len, num_hiddens)``
        - output: ``(b, n, d)``, ``(b, n, h, d/h)``, ``(b, h, n, d/h)``, ``(b*h, n, d/h)``
    """
    if not isinstance(X, Tensor) or X.dim() != 3:
        got = tuple(X.shape) if isinstance(X, Tensor) else type(X).__name__
        raise ValueError(_("X must be a tensor of shape (batch_size, seq_len, num_hiddens), got {got}").format(got=got))
    if type(num_heads) is not int or num_heads < 1 or X.shape[2] % num_heads:
        template = _("num_heads must be a positive divisor of num_hiddens={num_hiddens}, got {num_heads!r}")
        raise ValueError(template.format(num_hiddens=X.shape[2], num_heads=num_heads))
    batch_size, seq_len, num_hiddens = X.shape
    split = X.reshape(batch_size, seq_len, num_heads, num_hiddens // num_heads)  # (b, n, h, d/h)
    moved = split.permute(0, 2, 1, 3)  # (b, n, h, d/h) -> (b, h, n, d/h)
    folded = moved.reshape(batch_size * num_heads, seq_len, -1)  # (b, h, n, d/h) -> (b*h, n, d/h)
    head_dim = num_hiddens // num_heads  # the sizes written out, as in shape_table's code column
    return [("X", X), (f"X.reshape({batch_size}, {seq_len}, {num_heads}, {head_dim})", split),
            ("X.permute(0, 2, 1, 3)", moved), (f"X.reshape({batch_size * num_heads}, {seq_len}, {head_dim})", folded)]


def draw_fold_steps(X: Tensor, num_heads: int, figsize: tuple[float, float] = (11.0, 3.6)) -> Figure:
    """Draw the four stages of :func:`fold_steps`; colour = head, black outline = sentence.

    Meant for a few sentences, tokens and features: every number is written in its cell.

    Shape:
        - X: ``(batch_size, seq_len, num_hiddens)``
    """
    steps = fold_steps(X, num_heads)
    batch_size, seq_len, num_hiddens = X.shape
    head_dim = num_hiddens // num_heads
    sentence = torch.arange(batch_size).view(-1, 1, 1).expand(X.shape)  # which sentence each element is in
    head = (torch.arange(num_hiddens) // head_dim).expand(X.shape)  # which head each element goes to
    split_labels = [figure_text("s{b} t{t}").format(b=b, t=t) for b in range(batch_size) for t in range(seq_len)]
    moved_labels = [figure_text("s{b} h{h} t{t}").format(b=b, h=h, t=t)
                    for b in range(batch_size) for h in range(num_heads) for t in range(seq_len)]
    folded_labels = [figure_text("sample {i}, t{t}").format(i=i, t=t)
                     for i in range(batch_size * num_heads) for t in range(seq_len)]
    # Each panel as a grid: rows down, features across (heads side by side with a gap where they are split).
    panels = [
        (steps[0], X.reshape(-1, num_hiddens), head.reshape(-1, num_hiddens), sentence.reshape(-1, num_hiddens),
         split_labels, 0),
        (steps[1], X.reshape(-1, num_hiddens), head.reshape(-1, num_hiddens), sentence.reshape(-1, num_hiddens),
         split_labels, head_dim),
        (steps[2], *_rows(steps[2][1], head, sentence, num_heads, head_dim), moved_labels, 0),
        (steps[3], *_rows(steps[2][1], head, sentence, num_heads, head_dim), folded_labels, 0),
    ]
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(1, 4, width_ratios=[num_hiddens + 1, num_hiddens + num_heads, head_dim + 1, head_dim + 1])
    for ax, ((code, tensor), values, heads, sentences, labels, gap) in zip(axes, panels, strict=True):
        _draw_grid(ax, values, heads, sentences, gap)
        ax.set_yticks(range(values.shape[0]), labels, fontsize=8)
        ax.set_title(f"{code}\n{tuple(tensor.shape)}", fontsize=9, family="monospace")
    fig.suptitle(figure_text("transpose_qkv in three steps: colour = head, outline = sentence"))
    fig.legend(handles=[Patch(color=f"C{h % 10}", alpha=0.4, label=figure_text("head {index}").format(index=h))
                        for h in range(num_heads)], loc="outside lower center", ncols=num_heads)
    return fig


def _rows(moved: Tensor, head: Tensor, sentence: Tensor, num_heads: int, head_dim: int) -> tuple[Tensor, ...]:
    """The permuted tensor as rows (sentence, head, token) of head_dim features, with its heads and sentences."""
    batch_size, seq_len, _ = head.shape

    def arrange(t: Tensor) -> Tensor:  # (b, n, d) -> (b, n, h, d/h) -> (b, h, n, d/h) -> (b*h*n, d/h)
        return t.reshape(batch_size, seq_len, num_heads, head_dim).permute(0, 2, 1, 3).reshape(-1, head_dim)

    return moved.reshape(-1, head_dim), arrange(head), arrange(sentence)


def _draw_grid(ax: Axes, values: Tensor, heads: Tensor, sentences: Tensor, gap: int) -> None:
    """Cells coloured by head, numbers written in, a gap of one cell after every ``gap`` columns, sentences outlined."""
    rows, columns = values.shape
    x = np.arange(columns) + (np.arange(columns) // gap if gap else 0)  # where each column is drawn
    for r in range(rows):
        for c in range(columns):
            ax.add_patch(Rectangle((x[c] - 0.5, r - 0.5), 1, 1, color=f"C{int(heads[r, c]) % 10}", alpha=0.4,
                                   linewidth=0))
            ax.text(x[c], r, f"{values[r, c].item():g}", ha="center", va="center", fontsize=8)
    for s in sentences[:, 0].unique().tolist():  # one outline around each sentence's rows
        where = (sentences[:, 0] == s).nonzero().flatten()
        ax.add_patch(Rectangle((-0.5, where.min().item() - 0.5), x[-1] + 1, len(where), fill=False,
                               edgecolor="black", linewidth=1.6))
    ax.set_xlim(-0.6, x[-1] + 0.6)
    ax.set_ylim(rows - 0.4, -0.6)
    ax.set_xticks(x, [str(c % gap if gap else c) for c in range(columns)], fontsize=8)
    ax.set_xlabel(figure_text("feature"))
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
