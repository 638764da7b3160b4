"""The interactive explorer of chapter 05: plain functions that compute, lay out and draw, and two widgets.

Everything a widget shows comes from a plain function here that returns data, an
HTML string or a ``Figure``, so it can be tested without a browser; the widgets
(:func:`explorer`, :func:`scaling_explorer`) only read their controls and call them.

Dimension names are those of :mod:`mha_lib.functional`; ``d`` is ``num_hiddens``
and ``h`` is ``num_heads``. Costs count multiply-adds as 2 floating-point
operations (FLOPs) and only the matrix products, which are nearly all the work.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator
from PIL import Image
from torch import Tensor

from .._validation import require_heads_divide, require_positive_int
from ..modules import MultiHeadAttention
from ..utils import cpu_threads
from .anatomy import TraceRow, count_parameters, mha_flops, score_bytes, trace_multi_head_attention
from .scaling import ScoreVariance, SoftmaxSaturation, measure_score_variance, measure_softmax_saturation
from .tables import format_table

__all__ = [
    "CMAP",
    "INPUT_STD",
    "Costs",
    "ExplorerConfig",
    "Exploration",
    "ExplorerBox",
    "cost_sweep",
    "costs_html",
    "divisors",
    "explore",
    "explorer",
    "figure_to_svg",
    "format_costs",
    "head_images",
    "mha_costs",
    "nearest_divisor",
    "plot_head_weights",
    "plot_scaling",
    "render_explorer",
    "scaling_explorer",
    "scaling_summary",
    "score_samples",
    "trace_html",
]

CMAP = "Reds"  # the explorer's colormap: weight 0 is its lowest (almost white) colour
SCALING_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # the values the d slider offers
INPUT_STD = 3.0  # the explorer's random inputs: wide enough that each head's weights differ visibly


# ---------------------------------------------------------------------------------------------------------------------
# Sizes and costs


def divisors(n: int) -> list[int]:
    """All positive divisors of ``n`` in increasing order: the numbers of heads ``num_hiddens = n`` allows."""
    require_positive_int("n", n)
    return [k for k in range(1, n + 1) if n % k == 0]


def nearest_divisor(n: int, value: int) -> int:
    """``value`` if it divides ``n``, else the divisor of ``n`` closest to it (the smaller one on a tie)."""
    require_positive_int("value", value)
    return min(divisors(n), key=lambda k: (abs(k - value), k))


@dataclass(frozen=True)
class Costs:
    """What one ``MultiHeadAttention(d, d, d, d, h)`` layer costs for one batch."""

    num_hiddens: int
    num_heads: int
    head_dim: int
    parameters: int  # counted on the layer, 4*d^2 (+ 4*d with bias)
    flops: dict[str, int]  # see mha_lib.chapters.anatomy.mha_flops
    score_bytes: int  # see mha_lib.chapters.anatomy.score_bytes
    shape: tuple[int, int, int]  # (batch_size, num_queries, num_kvpairs)


def mha_costs(batch_size: int, num_queries: int, num_kvpairs: int, num_hiddens: int, num_heads: int,
              bias: bool = False, dtype: torch.dtype = torch.float32) -> Costs:
    """Parameters, FLOPs and score memory of ``MultiHeadAttention(d, d, d, d, h, bias=bias)`` on one batch.

    The layer is built on the "meta" device (shapes, no numbers), so even a huge one costs nothing.
    """
    flops = mha_flops(batch_size, num_queries, num_kvpairs, num_hiddens, num_heads)
    with torch.device("meta"):
        layer = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, bias=bias)
    return Costs(num_hiddens, num_heads, layer.head_dim, count_parameters(layer), flops,
                 score_bytes(batch_size, num_heads, num_queries, num_kvpairs, dtype),
                 (batch_size, num_queries, num_kvpairs))


def format_costs(costs: Costs) -> str:
    """The costs as a plain-text table, one row per quantity, with the formula and its numbers."""
    _check_type("costs", costs, Costs)
    return format_table(_cost_rows(costs), ["quantity", "formula", "value"])


def cost_sweep(num_hiddens: int, heads: Sequence[int], batch_size: int, num_queries: int, num_kvpairs: int) -> str:
    """A table of head_dim, parameters, FLOPs and score memory for each number of heads in ``heads``."""
    rows = []
    for num_heads in heads:
        costs = mha_costs(batch_size, num_queries, num_kvpairs, num_hiddens, num_heads)
        rows.append((num_heads, costs.head_dim, f"{costs.parameters:,}", f"{costs.flops['total']:,}",
                     f"{costs.score_bytes:,}"))
    return format_table(rows, ["num_heads", "head_dim", "parameters", "FLOPs", "score bytes"])


def _cost_rows(costs: Costs) -> list[tuple[str, str, str]]:
    d, h = costs.num_hiddens, costs.num_heads
    b, n_q, n_kv = costs.shape
    f = costs.flops
    projections = f["W_q"] + f["W_k"] + f["W_v"] + f["W_o"]
    attention = f["scores"] + f["weights @ values"]
    element_size = costs.score_bytes // (b * h * n_q * n_kv)
    weights = 4 * d * d
    return [
        ("head_dim", f"d/h = {d}/{h}", str(costs.head_dim)),
        ("parameters", f"4·d² = 4·{d}²" + (" + 4·d" if costs.parameters != weights else ""),
         f"{costs.parameters:,}"),
        ("FLOPs, projections", f"2·b·(2·n_q + 2·n_kv)·d² = 2·{b}·(2·{n_q} + 2·{n_kv})·{d}²", f"{projections:,}"),
        ("FLOPs, attention", f"2·2·b·n_q·n_kv·d = 4·{b}·{n_q}·{n_kv}·{d}", f"{attention:,}"),
        ("FLOPs, total", "projections + attention", f"{f['total']:,}"),
        ("score memory (bytes)", f"b·h·n_q·n_kv·{element_size} = {b}·{h}·{n_q}·{n_kv}·{element_size}",
         f"{costs.score_bytes:,}"),
    ]


# ---------------------------------------------------------------------------------------------------------------------
# One state of the explorer


@dataclass(frozen=True)
class ExplorerConfig:
    """The values of the explorer's controls; every sequence of the batch has ``valid_len`` valid keys."""

    num_hiddens: int = 32
    num_heads: int = 4
    batch_size: int = 2
    num_queries: int = 6
    num_kvpairs: int = 8
    valid_len: int = 5
    causal: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("num_hiddens", "num_heads", "batch_size", "num_queries", "num_kvpairs"):
            require_positive_int(name, getattr(self, name))
        require_heads_divide(self.num_hiddens, self.num_heads)
        valid_len = self.valid_len
        if isinstance(valid_len, bool) or not isinstance(valid_len, int) or not 0 <= valid_len <= self.num_kvpairs:
            raise ValueError(f"valid_len must be an int in [0, num_kvpairs={self.num_kvpairs}], got {valid_len!r}")
        if not isinstance(self.causal, bool):
            raise TypeError(f"causal must be True or False, got {self.causal!r}")


@dataclass(frozen=True)
class Exploration:
    """Everything the explorer shows for one :class:`ExplorerConfig`.

    Shape:
        - weights: ``(batch_size, num_heads, num_queries, num_kvpairs)``
    """

    config: ExplorerConfig
    trace: list[TraceRow]
    weights: Tensor
    costs: Costs


def explore(config: ExplorerConfig) -> Exploration:
    """Build a seeded layer and random inputs for ``config``, trace them and collect the weights and costs.

    The inputs are normal random numbers with standard deviation :data:`INPUT_STD`.

    The layer's weights depend only on ``num_hiddens`` and the seed, not on ``num_heads``:
    changing the number of heads cuts the same four matrices into other slices.
    """
    _check_type("config", config, ExplorerConfig)
    c = config
    d = c.num_hiddens
    # Seeded, and the caller's random numbers are left alone. (Only the CPU generator is seeded:
    # torch.manual_seed would also queue a seed for CUDA, which is slow and not needed here.)
    with cpu_threads(1), torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(c.seed)
        mha = MultiHeadAttention(d, d, d, d, c.num_heads).eval()
        queries = INPUT_STD * torch.randn(c.batch_size, c.num_queries, d)
        keys = values = INPUT_STD * torch.randn(c.batch_size, c.num_kvpairs, d)  # one sequence gives both
        valid_lens = torch.full((c.batch_size,), c.valid_len)
        trace = trace_multi_head_attention(mha, queries, keys, values, valid_lens, causal=c.causal)
        with torch.no_grad():
            mha(queries, keys, values, valid_lens, causal=c.causal)
    costs = mha_costs(c.batch_size, c.num_queries, c.num_kvpairs, d, c.num_heads)
    return Exploration(config, trace, mha.attention_weights, costs)


def trace_html(rows: Sequence[TraceRow]) -> str:
    """The trace as an HTML ``<table>``: a header row in ``<thead>``, then one ``<tr>`` per step."""
    for number, row in enumerate(rows):
        if not isinstance(row, TraceRow):
            raise TypeError(f"rows must be TraceRows from trace_multi_head_attention, row {number} is a "
                            f"{type(row).__name__}")
    cell = "padding:1px 10px 1px 0;text-align:left"
    body = []
    for row in rows:
        indent = "padding-left:1.2em;" if row.step.startswith(" ") else ""
        body.append(f'<tr><td style="{indent}{cell}">{html.escape(row.step.strip())}</td>'
                    f'<td style="{cell}">{html.escape(row.operation)}</td>'
                    f'<td style="{cell}">{_shape(row.shape)}</td></tr>')
    head = "".join(f'<th style="{cell}">{name}</th>' for name in ("step", "operation", "shape"))
    return ('<table style="border-collapse:collapse;font-family:monospace;font-size:12px">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def costs_html(costs: Costs) -> str:
    """The costs as an HTML ``<table>`` (quantity, formula, value), the same rows as :func:`format_costs`."""
    _check_type("costs", costs, Costs)
    cell = "padding:1px 10px 1px 0;text-align:left"
    body = "".join(f'<tr><td style="{cell}">{html.escape(quantity)}</td><td style="{cell}">{html.escape(formula)}</td>'
                   f'<td style="{cell};text-align:right">{value}</td></tr>' for quantity, formula, value in
                   _cost_rows(costs))
    head = "".join(f'<th style="{cell}">{name}</th>' for name in ("quantity", "formula", "value"))
    return ('<table style="border-collapse:collapse;font-family:monospace;font-size:12px">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


# ---------------------------------------------------------------------------------------------------------------------
# Heatmaps


def plot_head_weights(weights: Tensor, title: str | None = None, cmap: str = CMAP) -> Figure:
    """One heatmap panel per head, up to 4 panels a row (8 from 16 heads on), with one colour bar.

    The bottom-left panel carries the axis labels ("keys", "queries") and the tick numbers for all.

    Each panel is an axes with gid ``head-<h>`` drawn by ``imshow(vmin=0, vmax=1)``, so
    weight 0 has the colormap's lowest colour in every panel. The panels are laid out
    by hand in whole points, each cell a square of ``cell`` points, so that in an SVG
    (72 points to the inch) every cell is exactly ``cell`` x ``cell`` image pixels.

    Shape:
        - weights: ``(num_heads, num_queries, num_kvpairs)``, values in [0, 1]
    """
    if not isinstance(weights, Tensor) or weights.dim() != 3:
        got = tuple(weights.shape) if isinstance(weights, Tensor) else type(weights).__name__
        raise ValueError(f"weights must be a 3-D tensor (num_heads, num_queries, num_kvpairs), got {got}")
    num_heads, num_queries, num_kvpairs = weights.shape
    weights = weights.detach().to("cpu", torch.float32).numpy()
    ncols = min(num_heads, 4) if num_heads < 16 else 8
    nrows = math.ceil(num_heads / ncols)
    # Whole points everywhere: the panel's size, the margins and the gaps.
    target = 110 if ncols <= 4 else 60  # points along the longer side of a panel
    cell = max(1, round(target / max(num_queries, num_kvpairs)))
    width, height = num_kvpairs * cell, num_queries * cell
    left, right, top, bottom = 48, 76, 44, 38
    gap_x, gap_y = 10, 22
    fig_w = left + ncols * width + (ncols - 1) * gap_x + right
    fig_h = top + nrows * height + (nrows - 1) * gap_y + bottom
    small = num_heads >= 16
    # Sizes set before the axes exist: changing them afterwards (tick_params) rebuilds every tick.
    style = {"xtick.labelsize": 7, "ytick.labelsize": 7, "xtick.major.size": 2, "ytick.major.size": 2,
             "xtick.major.pad": 1.5, "ytick.major.pad": 1.5, "axes.labelsize": 8, "axes.labelpad": 1,
             "axes.titlesize": 8 if small else 9, "axes.titlepad": 2}
    with matplotlib.rc_context(style):
        fig = Figure(figsize=(fig_w / 72, fig_h / 72))
        for head in range(num_heads):
            row, col = divmod(head, ncols)
            x0 = left + col * (width + gap_x)
            y0 = fig_h - top - (row + 1) * height - row * gap_y
            ax = fig.add_axes((x0 / fig_w, y0 / fig_h, width / fig_w, height / fig_h))
            ax.set_gid(f"head-{head}")
            image = ax.imshow(weights[head], vmin=0, vmax=1, interpolation="nearest", cmap=cmap, aspect="auto")
            # A title placed by hand (y given) skips matplotlib's costly search for a free spot.
            ax.set_title(str(head) if small else f"head {head}", y=1.0)
            # All panels have the same axes, so only the bottom-left one is numbered (each tick is costly to draw).
            corner = head == (nrows - 1) * ncols
            ax.xaxis.set_major_locator(FixedLocator(_ticks(num_kvpairs) if corner else []))
            ax.yaxis.set_major_locator(FixedLocator(_ticks(num_queries) if corner else []))
            if corner:
                ax.set_xlabel("keys")
                ax.set_ylabel("queries")
        colorbar_axes = fig.add_axes(((fig_w - right + 14) / fig_w, bottom / fig_h, 10 / fig_w,
                                      (fig_h - top - bottom) / fig_h))
        fig.colorbar(image, cax=colorbar_axes, ticks=[0, 1], label="attention weight")
        fig.suptitle(title or f"Attention weights of {num_heads} head{'s' if num_heads > 1 else ''}",
                     y=1 - 10 / fig_h, fontsize=10)
    return fig


def figure_to_svg(fig: Figure) -> str:
    """Render ``fig`` as an inline SVG string (no XML preamble), with text kept as text.

    The figure is not registered with pyplot, so once the caller drops it nothing keeps it
    alive. (``fig.clear()`` is not needed for that, and would cost as much as drawing.)
    """
    _check_type("fig", fig, Figure)
    buffer = io.StringIO()
    # Text as <text> (not glyph paths) is smaller and faster; a fixed salt and no date make the SVG reproducible.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mha-notebooks"}):
        fig.savefig(buffer, format="svg", dpi=72, metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]
    return svg.replace("<svg ", '<svg style="max-width:100%;height:auto" ', 1)


def head_images(svg: str) -> dict[int, np.ndarray]:
    """Decode the heatmap of every head from an SVG of :func:`plot_head_weights`, one RGBA pixel per cell.

    matplotlib stores an image's rows bottom-up in the SVG (and flips them back when
    drawing), so the decoded rows are flipped here: row ``i`` is query ``i``.

    Shape:
        - each value: ``(num_queries, num_kvpairs, 4)``, uint8
    """
    if not isinstance(svg, str):
        raise TypeError(f"svg must be a str from figure_to_svg, got {type(svg).__name__}")
    pattern = re.compile(r'<g id="head-(\d+)">.*?<image\b[^>]*?xlink:href="data:image/png;base64,\s*([^"]+)"', re.S)
    images = {}
    for head, data in pattern.findall(svg):
        pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGBA"))[::-1]
        images[int(head)] = pixels
    if not images:
        raise ValueError("svg holds no <g id=\"head-N\"> group with an image; make it with plot_head_weights")
    return images


def _ticks(n: int) -> list[int]:
    """At most three whole-number ticks: the first position, the middle, the last."""
    return sorted({0, (n - 1) // 2, n - 1}) if n > 2 else list(range(n))


# ---------------------------------------------------------------------------------------------------------------------
# The explorer widget


def render_explorer(config: ExplorerConfig) -> dict[str, str]:
    """The three HTML values the explorer shows for ``config``: ``"trace"``, ``"costs"`` and ``"heatmaps"``."""
    result = explore(config)
    c = config
    masks = [f"valid_len = {c.valid_len} of {c.num_kvpairs}"] + (["causal"] if c.causal else [])
    fig = plot_head_weights(result.weights[0], title=f"Sequence 0, {c.num_heads} head{'s' * (c.num_heads > 1)} "
                                                     f"of {c.num_hiddens // c.num_heads} features, "
                                                     + ", ".join(masks))
    return {"trace": trace_html(result.trace), "costs": costs_html(result.costs), "heatmaps": figure_to_svg(fig)}


class ExplorerBox(widgets.VBox):
    """The explorer: the controls with the shape trace to their right, then the costs, then the heatmaps.

    ``controls`` maps each control's description to its widget; ``trace``, ``costs`` and
    ``heatmaps`` are the ``HTML`` widgets that :meth:`update` rewrites in place.
    """

    def __init__(self, config: ExplorerConfig) -> None:
        style = {"description_width": "90px"}
        layout = widgets.Layout(width="320px")
        c = config
        self.controls: dict[str, widgets.Widget] = {
            "num_hiddens": widgets.IntSlider(value=c.num_hiddens, min=4, max=max(64, c.num_hiddens), step=4,
                                             description="num_hiddens", style=style, layout=layout),
            "num_heads": widgets.SelectionSlider(options=divisors(c.num_hiddens), value=c.num_heads,
                                                 description="num_heads", style=style, layout=layout),
            "batch_size": widgets.IntSlider(value=c.batch_size, min=1, max=max(8, c.batch_size),
                                            description="batch_size", style=style, layout=layout),
            "num_queries": widgets.IntSlider(value=c.num_queries, min=1, max=max(16, c.num_queries),
                                             description="num_queries", style=style, layout=layout),
            "num_kvpairs": widgets.IntSlider(value=c.num_kvpairs, min=1, max=max(16, c.num_kvpairs),
                                             description="num_kvpairs", style=style, layout=layout),
            "valid_len": widgets.IntSlider(value=c.valid_len, min=min(1, c.valid_len), max=c.num_kvpairs,
                                           description="valid_len", style=style, layout=layout),
            "causal": widgets.Checkbox(value=c.causal, description="causal", style=style, layout=layout),
        }
        for name, control in self.controls.items():
            control.add_class(f"mha-control-{name}")
        self.trace = widgets.HTML().add_class("mha-trace")
        self.costs = widgets.HTML().add_class("mha-costs")
        self.heatmaps = widgets.HTML().add_class("mha-heatmaps")
        self._seed = c.seed
        self._paused = False
        controls = widgets.VBox(list(self.controls.values()), layout=widgets.Layout(margin="0 24px 0 0"))
        super().__init__([widgets.HBox([controls, self.trace]), self.costs, self.heatmaps])
        self.add_class("mha-explorer")
        self.controls["num_hiddens"].observe(self._on_num_hiddens, names="value")
        self.controls["num_kvpairs"].observe(self._on_num_kvpairs, names="value")
        for name, control in self.controls.items():
            if name not in ("num_hiddens", "num_kvpairs"):
                control.observe(self._on_change, names="value")
        self.update()

    def config(self) -> ExplorerConfig:
        """The current values of the controls."""
        values = {name: control.value for name, control in self.controls.items()}
        return ExplorerConfig(**values, seed=self._seed)

    def update(self) -> None:
        """Recompute everything for the current controls and rewrite the three HTML widgets in place."""
        values = render_explorer(self.config())
        self.trace.value = values["trace"]
        self.costs.value = values["costs"]
        self.heatmaps.value = values["heatmaps"]

    @contextlib.contextmanager
    def _quiet(self) -> Iterator[None]:
        """Change several controls without an update after each change."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def _on_change(self, change: dict) -> None:
        if not self._paused:
            self.update()

    def _on_num_hiddens(self, change: dict) -> None:
        heads = self.controls["num_heads"]
        with self._quiet():
            keep = nearest_divisor(change["new"], heads.value)  # read before new options reset the value
            heads.options = divisors(change["new"])
            heads.value = keep
        self.update()

    def _on_num_kvpairs(self, change: dict) -> None:
        with self._quiet():
            self.controls["valid_len"].max = change["new"]  # a larger valid_len is clamped to the new max
        self.update()


def explorer(**initial: int | bool) -> ExplorerBox:
    """The interactive explorer of multi-head attention (a ``VBox``), started at ``ExplorerConfig(**initial)``."""
    return ExplorerBox(ExplorerConfig(**initial))


# ---------------------------------------------------------------------------------------------------------------------
# The sqrt(d) widget


def score_samples(d: int, num_samples: int = 2000, seed: int = 0) -> tuple[Tensor, Tensor]:
    """``q . k`` and ``q . k / sqrt(d)`` for ``num_samples`` pairs of standard normal vectors of ``d`` features.

    Shape:
        - each output: ``(num_samples,)``
    """
    require_positive_int("d", d)
    require_positive_int("num_samples", num_samples)
    generator = torch.Generator().manual_seed(seed)
    queries = torch.randn(num_samples, d, generator=generator)
    keys = torch.randn(num_samples, d, generator=generator)
    scores = (queries * keys).sum(dim=-1)  # (num_samples, d) -> (num_samples,)
    return scores, scores / math.sqrt(d)


def _index_of(d: int, dims: Tensor, name: str) -> int:
    matches = (dims == d).nonzero()
    if len(matches) == 0:
        raise ValueError(f"d={d!r} was not measured in {name}, whose dims are {dims.tolist()}")
    return int(matches[0, 0])


def scaling_summary(d: int, variance: ScoreVariance, saturation: SoftmaxSaturation) -> str:
    """The measured numbers for one ``d`` as a plain-text table: variance and softmax peakiness, both ways."""
    _check_type("variance", variance, ScoreVariance)
    _check_type("saturation", saturation, SoftmaxSaturation)
    i, j = _index_of(d, variance.dims, "variance"), _index_of(d, saturation.dims, "saturation")
    rows = [
        ("variance of the scores", f"{variance.unscaled[i].item():.2f}", f"{variance.scaled[i].item():.2f}"),
        ("mean largest weight", f"{saturation.unscaled.max_weight[j].item():.2f}",
         f"{saturation.scaled.max_weight[j].item():.2f}"),
        ("mean entropy (nats)", f"{saturation.unscaled.entropy[j].item():.2f}",
         f"{saturation.scaled.entropy[j].item():.2f}"),
    ]
    return format_table(rows, [f"d = {d}", "q·k", "q·k / sqrt(d)"])


def plot_scaling(d: int, variance: ScoreVariance, saturation: SoftmaxSaturation, num_samples: int = 2000,
                 seed: int = 0) -> Figure:
    """Left: histograms of ``q . k`` with and without scaling. Right: softmax of one row of scores, both ways.

    The numbers in the legends come from ``variance`` and ``saturation``
    (:func:`mha_lib.chapters.scaling.measure_score_variance` and ``measure_softmax_saturation``).
    """
    _check_type("variance", variance, ScoreVariance)
    _check_type("saturation", saturation, SoftmaxSaturation)
    i, j = _index_of(d, variance.dims, "variance"), _index_of(d, saturation.dims, "saturation")
    unscaled, scaled = score_samples(d, num_samples, seed)
    m = saturation.num_kvpairs
    generator = torch.Generator().manual_seed(seed + 1)
    row = (torch.randn(1, d, generator=generator) * torch.randn(m, d, generator=generator)).sum(dim=-1)  # (m,)
    fig = Figure(figsize=(10.0, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    limit = 4 * max(math.sqrt(d), 1.0)
    bins = np.linspace(-limit, limit, 41)
    left.hist(unscaled.numpy(), bins=bins, color="tab:red", alpha=0.6,
              label=rf"$q \cdot k$, variance {variance.unscaled[i].item():.1f}")
    left.hist(scaled.clamp(-limit, limit).numpy(), bins=bins, color="tab:blue", alpha=0.6,
              label=rf"$q \cdot k / \sqrt{{d}}$, variance {variance.scaled[i].item():.2f}")
    left.set_xlabel("score")
    left.set_ylabel(f"count of {num_samples} pairs")
    left.set_title(f"Scores of random q, k with d = {d}")
    left.legend(fontsize="small", loc="upper left")
    positions = np.arange(m)
    for offset, scores, color, name, field in ((-0.2, row, "tab:red", "unscaled", saturation.unscaled),
                                               (0.2, row / math.sqrt(d), "tab:blue", "scaled", saturation.scaled)):
        right.bar(positions + offset, torch.softmax(scores, dim=-1).numpy(), width=0.4, color=color,
                  label=f"{name}: mean largest weight {field.max_weight[j].item():.2f}")
    right.set_ylim(0, 1.35)  # room for the legend above the tallest bar
    right.set_yticks([0, 0.25, 0.5, 0.75, 1])
    right.set_xticks(positions)
    right.set_xlabel("keys")
    right.set_ylabel("softmax weight")
    right.set_title(f"Softmax of one query's {m} scores")
    right.legend(fontsize="small", loc="upper left")
    fig.suptitle(r"Without $1/\sqrt{d}$ the scores spread out like $\sqrt{d}$ and the softmax turns one-hot")
    return fig


def scaling_explorer(d: int = 64, dims: Sequence[int] = SCALING_DIMS) -> widgets.VBox:
    """A ``d`` slider over ``dims`` for the sqrt(d) question: score histograms, softmax of a row and the numbers."""
    if d not in dims:
        raise ValueError(f"d must be one of dims={list(dims)}, got {d!r}")
    variance = measure_score_variance(list(dims), num_samples=2000)
    saturation = measure_softmax_saturation(list(dims))
    slider = widgets.SelectionSlider(options=list(dims), value=d, description="d",
                                     layout=widgets.Layout(width="420px")).add_class("mha-control-d")
    figure = widgets.HTML().add_class("mha-scaling-figure")
    numbers = widgets.HTML().add_class("mha-scaling-numbers")

    def update(change: dict | None = None) -> None:
        figure.value = figure_to_svg(plot_scaling(slider.value, variance, saturation))
        numbers.value = f"<pre>{html.escape(scaling_summary(slider.value, variance, saturation))}</pre>"

    slider.observe(update, names="value")
    update()
    return widgets.VBox([slider, numbers, figure]).add_class("mha-scaling")


# ---------------------------------------------------------------------------------------------------------------------
# Small helpers


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _check_type(name: str, value: object, kind: type) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
