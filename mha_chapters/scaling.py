"""Why scaled dot-product attention divides the scores by sqrt(d_k): measurements and their figures.

Each ``measure_*`` function draws its own seeded random numbers (the global
generator is left alone) and returns plain tensors in a dataclass; each
``plot_*`` function turns such a result into a ``Figure``.

Names: ``d`` (``d_k`` in the chapters, ``head_dim`` in a multi-head layer) is the number of
features of each query and key; ``num_kvpairs`` the number of keys each query scores; a *row*
is the scores of one query.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator
from torch import Tensor

from mha_lib._validation import require_positive_int, require_tensor, wrong_type

from .i18n import N_, _, figure_text

__all__ = [
    "ScoreVariance",
    "SoftmaxSaturation",
    "SoftmaxSummary",
    "measure_score_variance",
    "measure_softmax_saturation",
    "plot_score_variance",
    "plot_softmax_gradients",
    "plot_softmax_saturation",
    "softmax_row_stats",
]


@dataclass(frozen=True)
class ScoreVariance:
    """Variance of the score ``q . k`` over random queries and keys, one value per ``d``.

    Shape:
        - dims, unscaled, scaled: ``(num_dims,)``
    """

    dims: Tensor  # the values of d, integer
    unscaled: Tensor  # variance of q . k
    scaled: Tensor  # variance of q . k / sqrt(d)
    num_samples: int


@dataclass(frozen=True)
class SoftmaxSummary:
    """How peaked the softmax of the scores is, and how much gradient it passes back, one value per ``d``.

    Shape:
        - every field: ``(num_dims,)``
    """

    max_weight: Tensor  # mean over rows of the largest weight in the row
    entropy: Tensor  # mean over rows of the entropy of the weights, in nats
    grad_norm: Tensor  # median over rows of the norm of the softmax's Jacobian
    vanishing: Tensor  # fraction of rows whose Jacobian norm is below the threshold


@dataclass(frozen=True)
class SoftmaxSaturation:
    """The softmax of unscaled and of scaled scores side by side (see :class:`SoftmaxSummary`)."""

    dims: Tensor  # (num_dims,), integer
    num_kvpairs: int
    threshold: float
    unscaled: SoftmaxSummary  # softmax(q . k)
    scaled: SoftmaxSummary  # softmax(q . k / sqrt(d))


def softmax_row_stats(scores: Tensor) -> dict[str, Tensor]:
    """Largest weight, entropy and Jacobian norm of the softmax of each row of ``scores``.

    The Jacobian of ``p = softmax(s)`` is ``diag(p) - p p^T``; its (Frobenius) norm
    says how much the weights move when the scores move, i.e. how much gradient
    flows back through the softmax. It is 0 when ``p`` is one-hot.

    Shape:
        - scores: ``(..., num_kvpairs)``
        - each output (``"max_weight"``, ``"entropy"``, ``"grad_norm"``): ``(...)``, in the dtype of ``scores``
    """
    require_tensor("scores", scores, None, "(..., num_kvpairs)")
    if scores.dim() == 0:
        raise ValueError(_("scores must have at least 1 axis (..., num_kvpairs), got a 0-D tensor"))
    # In float64, so that a tiny 1 - p (a nearly one-hot row) is not lost in rounding.
    weights = torch.softmax(scores.double(), dim=-1)
    # (..., kvpairs) -> (..., kvpairs, kvpairs)
    jacobian = torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)
    stats = {
        "max_weight": weights.amax(dim=-1),
        "entropy": torch.special.entr(weights).sum(dim=-1),  # entr(p) = -p log p, and 0 at p = 0
        "grad_norm": torch.linalg.matrix_norm(jacobian),  # (..., kvpairs, kvpairs) -> (...)
    }
    return {name: value.to(scores.dtype) for name, value in stats.items()}


def measure_score_variance(dims: Sequence[int], num_samples: int = 10_000, seed: int = 0) -> ScoreVariance:
    """Measure the variance of ``q . k`` and of ``q . k / sqrt(d)`` for each ``d`` in ``dims``.

    The components of ``q`` and ``k`` are independent standard normal numbers
    (mean 0, variance 1), so theory says ``Var(q . k) = d``.
    """
    dims = _check_dims(dims)
    require_positive_int("num_samples", num_samples)
    if num_samples < 2:
        template = _("num_samples must be at least 2 to measure a variance, got {num_samples}")
        raise ValueError(template.format(num_samples=num_samples))
    generator = torch.Generator().manual_seed(seed)
    unscaled, scaled = [], []
    for d in dims:
        queries = torch.randn(num_samples, d, generator=generator)
        keys = torch.randn(num_samples, d, generator=generator)
        scores = (queries * keys).sum(dim=-1)  # one q . k per sample: (num_samples, d) -> (num_samples,)
        unscaled.append(scores.var())
        scaled.append((scores / math.sqrt(d)).var())
    return ScoreVariance(torch.tensor(dims), torch.stack(unscaled), torch.stack(scaled), num_samples)


def measure_softmax_saturation(
    dims: Sequence[int],
    num_kvpairs: int = 10,
    num_rows: int = 2_000,
    threshold: float = 1e-3,
    seed: int = 0,
) -> SoftmaxSaturation:
    """Measure how peaked ``softmax(q . k)`` and ``softmax(q . k / sqrt(d))`` are for each ``d`` in ``dims``.

    Each of ``num_rows`` random queries scores ``num_kvpairs`` random keys; all
    components are standard normal. A row counts as *vanishing* when the norm of
    its softmax Jacobian is below ``threshold``.
    """
    dims = _check_dims(dims)
    require_positive_int("num_kvpairs", num_kvpairs)
    require_positive_int("num_rows", num_rows)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold <= 0:
        raise ValueError(_("threshold must be a positive number, got {threshold!r}").format(threshold=threshold))
    generator = torch.Generator().manual_seed(seed)
    rows: dict[str, list[dict[str, Tensor]]] = {"unscaled": [], "scaled": []}
    for d in dims:
        queries = torch.randn(num_rows, 1, d, generator=generator)
        keys = torch.randn(num_rows, num_kvpairs, d, generator=generator)
        scores = (queries * keys).sum(dim=-1)  # (rows, 1, d) * (rows, kvpairs, d) -> (rows, kvpairs)
        rows["unscaled"].append(softmax_row_stats(scores))
        rows["scaled"].append(softmax_row_stats(scores / math.sqrt(d)))

    def summarise(stats: list[dict[str, Tensor]]) -> SoftmaxSummary:
        return SoftmaxSummary(
            max_weight=torch.stack([s["max_weight"].mean() for s in stats]),
            entropy=torch.stack([s["entropy"].mean() for s in stats]),
            grad_norm=torch.stack([s["grad_norm"].median() for s in stats]),
            vanishing=torch.stack([(s["grad_norm"] < threshold).float().mean() for s in stats]),
        )

    return SoftmaxSaturation(torch.tensor(dims), num_kvpairs, float(threshold),
                             summarise(rows["unscaled"]), summarise(rows["scaled"]))


def plot_score_variance(result: ScoreVariance, figsize: tuple[float, float] = (5.5, 4.0)) -> Figure:
    """Plot the measured variances over ``d`` on log-log axes, next to the lines ``y = d`` and ``y = 1``."""
    _check_result("result", result, ScoreVariance)
    dims = result.dims.numpy()
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    ax.plot(dims, dims, "--", color="grey", label="$y = d_k$")
    ax.plot(dims, [1.0] * len(dims), ":", color="grey", label="$y = 1$")
    ax.plot(dims, result.unscaled.numpy(), "o", color="tab:red", label=figure_text(r"$q \cdot k$ (unscaled)"))
    ax.plot(dims, result.scaled.numpy(), "s", color="tab:blue", label=figure_text(r"$q \cdot k / √d_k$ (scaled)"))
    _log2_axis(ax, dims)
    ax.set_yscale("log")
    ax.set_xlabel(figure_text("$d_k$ (features per query and key)"))
    ax.set_ylabel(figure_text("variance over {count} samples").format(count=result.num_samples))
    ax.set_title(figure_text("The variance of a dot product grows like $d_k$"))
    ax.legend()
    return fig


def plot_softmax_saturation(result: SoftmaxSaturation, figsize: tuple[float, float] = (10.0, 3.8)) -> Figure:
    """Plot the mean largest weight and the mean entropy over ``d``, with and without scaling."""
    _check_result("result", result, SoftmaxSaturation)
    dims, m = result.dims.numpy(), result.num_kvpairs
    fig = Figure(figsize=figsize, layout="constrained")
    left, right = fig.subplots(1, 2)
    panels = (
        (left, "max_weight", N_("mean largest weight in a row"), N_("The largest weight goes to 1"), (1.0, 1 / m)),
        (right, "entropy", N_("mean entropy of a row (nats)"), N_("The entropy goes to 0"), (0.0, math.log(m))),
    )
    for ax, field, ylabel, title, (one_hot, uniform) in panels:
        ax.axhline(one_hot, linestyle="--", color="grey", label=figure_text("one-hot (all weight on one key)"))
        ax.axhline(uniform, linestyle=":", color="grey", label=figure_text("uniform (1/{m} on each key)").format(m=m))
        ax.plot(dims, getattr(result.unscaled, field).numpy(), "o-", color="tab:red",
                label=figure_text("unscaled scores"))
        ax.plot(dims, getattr(result.scaled, field).numpy(), "s-", color="tab:blue",
                label=figure_text(r"scaled by $1/√d_k$"))
        _log2_axis(ax, dims)
        ax.set_xlabel(figure_text("$d_k$ (features per query and key)"))
        ax.set_ylabel(figure_text(ylabel))
        ax.set_title(figure_text(title))
    handles, labels = right.get_legend_handles_labels()  # the same four lines in both panels: one legend below
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize="small")
    fig.suptitle(figure_text("Softmax over {m} keys: without scaling it saturates as $d_k$ grows").format(m=m))
    return fig


def plot_softmax_gradients(result: SoftmaxSaturation, figsize: tuple[float, float] = (10.0, 3.8)) -> Figure:
    """Plot the median Jacobian norm of the softmax and the fraction of vanishing rows over ``d``."""
    _check_result("result", result, SoftmaxSaturation)
    dims = result.dims.numpy()
    fig = Figure(figsize=figsize, layout="constrained")
    left, right = fig.subplots(1, 2)
    for summary, style, color, label in ((result.unscaled, "o-", "tab:red", N_("unscaled scores")),
                                         (result.scaled, "s-", "tab:blue", N_(r"scaled by $1/√d_k$"))):
        left.plot(dims, summary.grad_norm.numpy(), style, color=color, label=figure_text(label))
        right.plot(dims, summary.vanishing.numpy(), style, color=color, label=figure_text(label))
    left.set_yscale("log")
    left.set_ylabel(figure_text("median Jacobian norm of a row"))
    left.set_title(figure_text("Gradient through the softmax (typical row)"))
    right.set_ylim(-0.03, 1.03)
    right.set_ylabel(figure_text("fraction of rows with norm < {threshold:g}").format(threshold=result.threshold))
    right.set_title(figure_text("Rows that pass back almost no gradient"))
    for ax in (left, right):
        _log2_axis(ax, dims)
        ax.set_xlabel(figure_text("$d_k$ (features per query and key)"))
        ax.legend()
    fig.suptitle(figure_text("Saturated softmax, vanishing gradient"))
    return fig


def _check_dims(dims: object) -> list[int]:
    if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence) or len(dims) == 0:
        raise ValueError(_("dims must be a non-empty sequence of positive ints, got {dims!r}").format(dims=dims))
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ValueError(_("dims must hold positive ints, got {d!r} in {dims}").format(d=d, dims=list(dims)))
    return list(dims)


def _check_result(name: str, result: object, kind: type) -> None:
    if not isinstance(result, kind):
        raise wrong_type(name, _("a {kind} (from measure_...)").format(kind=kind.__name__), result)


def _log2_axis(ax: Axes, dims: Sequence[int]) -> None:
    """Log scale on x with one tick per measured d, labelled 1, 2, 4, ..."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(dims, [str(d) for d in dims])
    ax.xaxis.set_minor_locator(NullLocator())
