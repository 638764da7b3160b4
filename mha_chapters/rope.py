"""Chapter 12's helpers: how a score under rotary position embedding changes with the distance, how fast each
feature pair turns, the figure of both, and the sliders for the base and the head size.

Each computes with :mod:`mha_lib.rope` and returns data or a ``Figure``, so it is tested without a browser; the
widget only reads its sliders and draws :func:`plot_rope`.
"""

from __future__ import annotations

import math

import ipywidgets as widgets
import torch
from IPython.display import display
from matplotlib.figure import Figure
from torch import Tensor

from mha_lib._validation import require_nonnegative_int, require_positive_int, require_positive_real
from mha_lib.rope import _apply_rope, _require_even, _rope_frequencies

from .i18n import figure_text

__all__ = ["BASES", "HEAD_DIMS", "distance_scores", "plot_rope", "rope_explorer", "unrelated_scores", "wavelengths"]

BASES = (100.0, 1000.0, 10000.0, 500000.0)  # 10000: RoFormer, Llama 1 and 2; 500000: Llama 3
HEAD_DIMS = (8, 16, 32, 64, 128)


def distance_scores(base: float, head_dim: int, max_distance: int, factor: float = 1.0) -> Tensor:
    """The score of a query and a key that are the same all-ones vector, at distances 0 .. max_distance, divided by
    ``head_dim``: 1 at distance 0, then the mean of ``cos(distance * theta_i / factor)`` over the pairs (either
    convention). ``factor`` > 1 divides every position by it: linear position interpolation (Chen et al., 2023,
    arXiv:2306.15595), ``rope_scaling = {"rope_type": "linear", "factor": factor}`` in a Hugging Face config.

    Shape:
        - output: ``(max_distance + 1,)``, float64
    """
    head_dim = require_positive_int("head_dim", head_dim)
    _require_even("head_dim", head_dim)
    base = require_positive_real("base", base)
    factor = require_positive_real("factor", factor)
    ones = torch.ones(require_positive_int("max_distance", max_distance) + 1, head_dim, dtype=torch.float64)
    positions = torch.arange(max_distance + 1, dtype=torch.float64) / factor
    queries = _apply_rope(ones, positions, "halves", base)  # query at position d / factor
    key = ones[0]  # the key at position 0: turned by nothing
    return queries @ key / head_dim


def unrelated_scores(base: float, head_dim: int, max_distance: int, num_pairs: int = 2048, seed: int = 0) -> Tensor:
    """The mean score of ``num_pairs`` unrelated queries and keys (independent, standard normal), the query at
    distance 0 .. max_distance from the key, divided by ``head_dim``: about 0 at every distance, unlike
    :func:`distance_scores`, where the query and the key are the same vector.

    Shape:
        - output: ``(max_distance + 1,)``, float64
    """
    head_dim = require_positive_int("head_dim", head_dim)
    _require_even("head_dim", head_dim)
    base = require_positive_real("base", base)
    max_distance = require_positive_int("max_distance", max_distance)
    generator = torch.Generator().manual_seed(require_nonnegative_int("seed", seed))
    queries, keys = torch.randn(2, require_positive_int("num_pairs", num_pairs), head_dim, generator=generator,
                                dtype=torch.float64)
    # A score (R_d q) . k is linear in q k^T, so its mean over the pairs is that of the mean of q k^T:
    outer = queries.T @ keys / num_pairs  # (head_dim, head_dim): mean of q_j k_f over the pairs
    basis = torch.eye(head_dim, dtype=torch.float64)[:, None, :].expand(head_dim, max_distance + 1, head_dim)
    turned = _apply_rope(basis, torch.arange(max_distance + 1), "halves", base)  # [j, d] = R_d e_j
    return torch.einsum("jdf,jf->d", turned, outer) / head_dim  # mean over the pairs of (R_d q) . k / head_dim


def wavelengths(base: float, head_dim: int) -> Tensor:
    """Positions per full turn of each feature pair, ``2 pi / theta_i``: from 6.28 (pair 0) to almost ``2 pi base``.

    Shape:
        - output: ``(head_dim // 2,)``, float64
    """
    head_dim = require_positive_int("head_dim", head_dim)
    _require_even("head_dim", head_dim)
    return 2 * math.pi / _rope_frequencies(head_dim, require_positive_real("base", base), torch.float64, None)


def plot_rope(base: float = 10000.0, head_dim: int = 64, max_distance: int = 1024,
              compare_base: float | None = None) -> Figure:
    """Left: the score of one vector against itself by distance. Right: the positions per turn of each pair."""
    fig = Figure(figsize=(10, 3.8))
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.15, top=0.84, wspace=0.28)
    score_ax, turn_ax = fig.subplots(1, 2)
    bases = [base] if compare_base is None else [base, compare_base]
    for b, style in zip(bases, ("-", "--"), strict=False):
        label = figure_text("base {base:,g}").format(base=b)
        score_ax.plot(distance_scores(b, head_dim, max_distance).numpy(), style, linewidth=1.2, label=label)
        turn_ax.semilogy(wavelengths(b, head_dim).numpy(), style, marker=".", label=label)
    score_ax.plot(unrelated_scores(base, head_dim, max_distance).numpy(), ":", color="grey", linewidth=1.0,
                  label=figure_text("unrelated q, k (mean of 2,048), base {base:,g}").format(base=base))
    score_ax.axhline(0, color="grey", linewidth=0.6)
    score_ax.set(title=figure_text("score of a vector with itself, head_dim {head_dim}").format(head_dim=head_dim),
                 xlabel=figure_text("distance m - n (positions)"), ylabel=figure_text("score / head_dim"),
                 ylim=(-0.3, 1.05))
    turn_ax.set(title=figure_text("how fast each feature pair turns"), xlabel=figure_text("pair i"),
                ylabel=figure_text("positions per full turn"))
    for ax in (score_ax, turn_ax):
        ax.legend(loc="upper right" if ax is score_ax else "lower right")
    fig.suptitle(figure_text("rotary position embedding: θ_i = base^(-2i / head_dim)"))
    return fig


def rope_explorer(base: float = 10000.0, head_dim: int = 64) -> widgets.VBox:
    """Sliders for the base and the head size; the figure of :func:`plot_rope` follows them."""
    base_slider = widgets.SelectionSlider(options=[(f"{b:,g}", b) for b in BASES], value=base, description="base",
                                          continuous_update=False, layout=widgets.Layout(width="420px"))
    dim_slider = widgets.SelectionSlider(options=list(HEAD_DIMS), value=head_dim, description="head_dim",
                                         continuous_update=False, layout=widgets.Layout(width="420px"))
    output = widgets.Output()

    def update(change: dict | None = None) -> None:
        output.clear_output(wait=True)
        with output:
            display(plot_rope(base_slider.value, dim_slider.value))

    base_slider.observe(update, names="value")
    dim_slider.observe(update, names="value")
    update()
    return widgets.VBox([base_slider, dim_slider, output])
