"""The interactive explorer of chapter 05: plain functions that compute, lay out and draw, and two widgets.

Everything a widget shows comes from a plain function here that returns data, an
HTML or SVG string or a ``Figure``, so it can be tested without a browser; the widgets
(:func:`explorer`, :func:`scaling_explorer`) only read their controls and call them.
The heatmaps of all heads are one SVG with a small PNG per head (:func:`heatmaps_svg`),
not a matplotlib figure: one axes per head cost most of a second at 64 heads.

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib
import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.figure import Figure
from PIL import Image
from torch import Tensor

from mha_lib import _validation
from mha_lib._validation import require_bool_mask, require_heads_divide, require_positive_int, wrong_type
from mha_lib.masks import attention_mask
from mha_lib.modules import MultiHeadAttention
from mha_lib.utils import cpu_threads

from .anatomy import (
    TraceRow,
    count_parameters,
    localized_operation,
    localized_step,
    mha_flops,
    score_bytes,
    trace_multi_head_attention,
)
from .i18n import N_, _, figure_text
from .scaling import ScoreVariance, SoftmaxSaturation, measure_score_variance, measure_softmax_saturation
from .tables import display_width, format_table

__all__ = [
    "CMAP",
    "INPUT_STD",
    "KEYS",
    "MASKED_RGB",
    "QUERIES",
    "Costs",
    "ExplorerConfig",
    "Exploration",
    "ExplorerBox",
    "cost_sweep",
    "costs_html",
    "divisors",
    "explore",
    "explorer",
    "explorer_inputs",
    "figure_to_svg",
    "format_costs",
    "heatmaps_svg",
    "mha_costs",
    "nearest_divisor",
    "plot_scaling",
    "render_explorer",
    "scaling_explorer",
    "scaling_summary",
    "score_samples",
    "sequence_inputs",
    "trace_html",
    "weight_colours",
]

CMAP = "Reds"  # the explorer's colormap: weight 0 is its lowest (almost white) colour
MASKED_RGB = (170, 170, 170)  # a masked key: grey, a colour "Reds" never takes
SCALING_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # the values the d slider offers
INPUT_STD = 3.0  # the explorer's random inputs: standard normal times 3, so the heads' weights differ visibly


# ---------------------------------------------------------------------------------------------------------------------
# Sizes and costs


def divisors(n: int) -> list[int]:
    """All positive divisors of ``n`` in increasing order: the numbers of heads ``num_hiddens = n`` allows."""
    return _validation.divisors(require_positive_int("n", n))


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
    flops: dict[str, int]  # see mha_chapters.anatomy.mha_flops
    score_bytes: int  # see mha_chapters.anatomy.score_bytes
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
    return format_table(_cost_rows(costs), COST_HEADERS)


def cost_sweep(num_hiddens: int, heads: Sequence[int], batch_size: int, num_queries: int, num_kvpairs: int) -> str:
    """A table of head_dim, parameters, FLOPs and score memory for each number of heads in ``heads``."""
    rows = []
    for num_heads in heads:
        costs = mha_costs(batch_size, num_queries, num_kvpairs, num_hiddens, num_heads)
        rows.append((num_heads, costs.head_dim, f"{costs.parameters:,}", f"{costs.flops['total']:,}",
                     f"{costs.score_bytes:,}"))
    return format_table(rows, ["num_heads", "head_dim", N_("parameters"), "FLOPs", N_("score bytes")])


COST_HEADERS = (N_("quantity"), N_("formula"), N_("value"))


def _cost_rows(costs: Costs) -> list[tuple[str, str, str]]:
    """The rows of the costs table, the quantities in the reader's language."""
    d, h = costs.num_hiddens, costs.num_heads
    b, n_q, n_kv = costs.shape
    f = costs.flops
    projections = f["W_q"] + f["W_k"] + f["W_v"] + f["W_o"]
    attention = f["scores"] + f["weights @ values"]
    element_size = costs.score_bytes // (b * h * n_q * n_kv)
    weights = 4 * d * d
    return [
        ("head_dim", f"d/h = {d}/{h}", str(costs.head_dim)),
        (_("parameters"), f"4·d² = 4·{d}²" + (" + 4·d" if costs.parameters != weights else ""),
         f"{costs.parameters:,}"),
        (_("FLOPs, projections"), f"2·b·(2·n_q + 2·n_kv)·d² = 2·{b}·(2·{n_q} + 2·{n_kv})·{d}²", f"{projections:,}"),
        (_("FLOPs, attention"), f"2·2·b·n_q·n_kv·d = 4·{b}·{n_q}·{n_kv}·{d}", f"{attention:,}"),
        (_("FLOPs, total"), _("projections + attention"), f"{f['total']:,}"),
        (_("score memory (bytes)"), f"b·h·n_q·n_kv·{element_size} = {b}·{h}·{n_q}·{n_kv}·{element_size}",
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
            template = _("valid_len must be an int in [0, num_kvpairs={num_kvpairs}], got {valid_len!r}")
            raise ValueError(template.format(num_kvpairs=self.num_kvpairs, valid_len=valid_len))
        if not isinstance(self.causal, bool):
            raise TypeError(_("causal must be True or False, got {causal!r}").format(causal=self.causal))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(_("seed must be an int >= 0, got {seed!r}").format(seed=self.seed))


@dataclass(frozen=True)
class Exploration:
    """Everything the explorer shows for one :class:`ExplorerConfig`.

    Shape:
        - weights: ``(batch_size, num_heads, num_queries, num_kvpairs)``
        - may_attend: ``(batch_size, num_queries, num_kvpairs)``, boolean, True where a query may see a key
    """

    config: ExplorerConfig
    trace: list[TraceRow]
    weights: Tensor
    may_attend: Tensor
    costs: Costs


QUERIES, KEYS = 0, 1  # the two random streams of every sequence: its queries, and its keys (= its values)


def sequence_inputs(index: int, num_tokens: int, num_hiddens: int, stream: int, seed: int = 0) -> Tensor:
    """The random token vectors of sequence ``index`` of a batch: normal, standard deviation :data:`INPUT_STD`.

    Each sequence draws from its own generator, seeded by ``(seed, stream, index, num_hiddens)`` and
    nothing else. numpy's generator draws its numbers one after another, so the first rows are the
    same for every ``num_tokens``: a sequence does not change when the batch or its length changes.

    Shape:
        - output: ``(num_tokens, num_hiddens)``
    """
    for name, value in (("index", index), ("stream", stream), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(_("{name} must be an int >= 0, got {value!r}").format(name=name, value=value))
    require_positive_int("num_tokens", num_tokens)
    require_positive_int("num_hiddens", num_hiddens)
    return _sequence_inputs(index, num_tokens, num_hiddens, stream, seed)


def _sequence_inputs(index: int, num_tokens: int, num_hiddens: int, stream: int, seed: int) -> Tensor:
    generator = np.random.default_rng([seed, stream, index, num_hiddens])
    tokens = generator.standard_normal((num_tokens, num_hiddens), dtype=np.float32)  # (num_tokens, num_hiddens)
    return INPUT_STD * torch.from_numpy(tokens)


def explorer_inputs(config: ExplorerConfig) -> tuple[Tensor, Tensor]:
    """The queries and the keys (which are also the values) of the explorer's batch, one sequence at a time.

    Shape:
        - queries: ``(batch_size, num_queries, num_hiddens)``
        - keys: ``(batch_size, num_kvpairs, num_hiddens)``
    """
    _check_type("config", config, ExplorerConfig)
    c = config
    queries = torch.stack([_sequence_inputs(i, c.num_queries, c.num_hiddens, QUERIES, c.seed)
                           for i in range(c.batch_size)])  # batch_size x (n_q, d) -> (batch_size, n_q, d)
    keys = torch.stack([_sequence_inputs(i, c.num_kvpairs, c.num_hiddens, KEYS, c.seed)
                        for i in range(c.batch_size)])  # batch_size x (n_kv, d) -> (batch_size, n_kv, d)
    return queries, keys


def explore(config: ExplorerConfig) -> Exploration:
    """Build a seeded layer and the inputs for ``config``, trace them and collect the weights, the mask and the costs.

    The layer's weights depend only on ``num_hiddens`` and the seed, not on ``num_heads``:
    changing the number of heads cuts the same four matrices into other slices. The inputs
    come from :func:`explorer_inputs`.
    """
    _check_type("config", config, ExplorerConfig)
    c = config
    d = c.num_hiddens
    # Seeded, and the caller's random numbers are left alone. (Only the CPU generator is seeded:
    # torch.manual_seed would also queue a seed for CUDA, which is slow and not needed here.)
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(c.seed)
        mha = MultiHeadAttention(d, d, d, d, c.num_heads).eval()
    queries, keys = explorer_inputs(c)
    valid_lens = torch.full((c.batch_size,), c.valid_len)
    with cpu_threads(1):
        trace = trace_multi_head_attention(mha, queries, keys, keys, valid_lens, causal=c.causal)
        with torch.no_grad():
            mha(queries, keys, keys, valid_lens, causal=c.causal)
    may_attend = attention_mask(c.batch_size, c.num_queries, c.num_kvpairs, valid_lens, causal=c.causal)
    # (batch_size or 1, n_q or 1, n_kv) -> (batch_size, n_q, n_kv)
    may_attend = may_attend.expand(c.batch_size, c.num_queries, c.num_kvpairs)
    costs = mha_costs(c.batch_size, c.num_queries, c.num_kvpairs, d, c.num_heads)
    return Exploration(config, trace, mha.attention_weights, may_attend, costs)


def trace_html(rows: Sequence[TraceRow]) -> str:
    """The trace as an HTML ``<table>``: a header row in ``<thead>``, then one ``<tr>`` per step."""
    for number, row in enumerate(rows):
        if not isinstance(row, TraceRow):
            template = _("rows must be TraceRows from trace_multi_head_attention, row {number} is a {type_name}")
            raise TypeError(template.format(number=number, type_name=type(row).__name__))
    cell = "padding:1px 10px 1px 0;text-align:left"
    body = []
    for row in rows:
        indent = "padding-left:1.2em;" if row.step.startswith(" ") else ""
        body.append(f'<tr><td style="{indent}{cell}">{html.escape(localized_step(row.step).strip())}</td>'
                    f'<td style="{cell}">{html.escape(localized_operation(row.operation))}</td>'
                    f'<td style="{cell}">{_shape(row.shape)}</td></tr>')
    head = "".join(f'<th style="{cell}">{_(name)}</th>' for name in ("step", "operation", "shape"))
    return ('<table style="border-collapse:collapse;font-family:monospace;font-size:12px">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def costs_html(costs: Costs) -> str:
    """The costs as an HTML ``<table>`` (quantity, formula, value), the same rows as :func:`format_costs`."""
    _check_type("costs", costs, Costs)
    cell = "padding:1px 10px 1px 0;text-align:left"
    body = "".join(f'<tr><td style="{cell}">{html.escape(quantity)}</td><td style="{cell}">{html.escape(formula)}</td>'
                   f'<td style="{cell};text-align:right">{value}</td></tr>' for quantity, formula, value in
                   _cost_rows(costs))
    head = "".join(f'<th style="{cell}">{_(name)}</th>' for name in COST_HEADERS)
    return ('<table style="border-collapse:collapse;font-family:monospace;font-size:12px">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


# ---------------------------------------------------------------------------------------------------------------------
# Heatmaps: one SVG, one small PNG per head, no matplotlib figure


def weight_colours(weights: Tensor, may_attend: Tensor | None = None, cmap: str = CMAP) -> np.ndarray:
    """The colour of every weight, as 8-bit RGB: ``cmap`` from 0 to 1, and :data:`MASKED_RGB` where a key is masked.

    Weight 0 has the colormap's lowest colour; a masked key is grey, a colour the colormap
    never takes, so "masked" and "allowed but close to 0" look different.

    Shape:
        - weights: ``(num_heads, num_queries, num_kvpairs)``, values in [0, 1]
        - may_attend: boolean, broadcastable to ``weights``; True where the query may see the key
        - output: ``(num_heads, num_queries, num_kvpairs, 3)``, uint8
    """
    if not isinstance(weights, Tensor) or weights.dim() != 3:
        got = tuple(weights.shape) if isinstance(weights, Tensor) else type(weights).__name__
        template = _("weights must be a 3-D tensor (num_heads, num_queries, num_kvpairs), got {got}")
        raise ValueError(template.format(got=got))
    if may_attend is not None:
        require_bool_mask("may_attend", may_attend, tuple(weights.shape), "(num_heads, num_queries, num_kvpairs)")
    values = weights.detach().to("cpu", torch.float32).clamp(0, 1).numpy()
    rgb = colormaps[cmap](values, bytes=True)[..., :3]  # (h, n_q, n_kv) -> (h, n_q, n_kv, 3)
    if may_attend is not None:
        masked = ~may_attend.to("cpu").expand(weights.shape).numpy()  # (h, n_q, n_kv)
        rgb[masked] = MASKED_RGB
    return rgb


def heatmaps_svg(weights: Tensor, may_attend: Tensor | None = None, title: str | None = None,
                 cmap: str = CMAP) -> str:
    """All heads' heatmaps as one SVG: a grid of panels (4 a row, 8 from 16 heads on), a colour bar, a legend.

    Each panel is a group ``<g id="head-<h>">`` with the head's title and one ``<image>``:
    a PNG of :func:`weight_colours` in which every query-key cell is a square of whole
    pixels, row ``i`` is query ``i`` and column ``j`` is key ``j``. The bottom-left panel
    carries the axis labels ("keys", "queries") and the tick numbers for all.

    Shape:
        - weights: ``(num_heads, num_queries, num_kvpairs)``, values in [0, 1]
        - may_attend: boolean, broadcastable to ``weights``
    """
    rgb = weight_colours(weights, may_attend, cmap)  # checks the arguments; (h, n_q, n_kv, 3)
    num_heads, num_queries, num_kvpairs = weights.shape
    if title is None:
        title = (_("Attention weights of {count} heads") if num_heads > 1 else
                 _("Attention weights of {count} head")).format(count=num_heads)
    ncols = min(num_heads, 4) if num_heads < 16 else 8
    nrows = math.ceil(num_heads / ncols)
    small = num_heads >= 16
    # Lengths in pixels. Each cell is a square of `cell` pixels, so a panel's longer side is about `target`.
    target = 110 if ncols <= 4 else 60
    cell = max(2, round(target / max(num_queries, num_kvpairs)))
    width, height = num_kvpairs * cell, num_queries * cell
    left, right, top, bottom, gap_x, gap_y = 48, 80, 44, 40, 10, 22
    grid_w = ncols * width + (ncols - 1) * gap_x
    fig_w = max(left + grid_w + right, round(7 * display_width(title)) + 20)  # wide enough for the title too
    fig_h = top + nrows * height + (nrows - 1) * gap_y + bottom
    text = 'font-size="{size}" text-anchor="{anchor}"'
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
             f'width="{fig_w}" height="{fig_h}" viewBox="0 0 {fig_w} {fig_h}" font-family="sans-serif" '
             f'style="max-width:100%;height:auto;background:white">',
             f'<text x="{fig_w / 2}" y="16" {text.format(size=13, anchor="middle")}>{html.escape(title)}</text>']
    for head in range(num_heads):
        row, col = divmod(head, ncols)
        x, y = left + col * (width + gap_x), top + row * (height + gap_y)
        name = str(head) if small else _("head {index}").format(index=head)
        parts.append(f'<g id="head-{head}">'
                     f'<text x="{x + width / 2}" y="{y - 4}" {text.format(size=10 if small else 11, anchor="middle")}>'
                     f'{name}</text>'
                     f'<image x="{x}" y="{y}" width="{width}" height="{height}" image-rendering="optimizeSpeed" '
                     f'style="image-rendering:pixelated" xlink:href="{_png_data_url(rgb[head], cell)}"/>'
                     f'<rect x="{x}" y="{y}" width="{width}" height="{height}" fill="none" stroke="#888" '
                     f'stroke-width="0.5"/></g>')  # a thin border: weight-0 cells are almost white
    # The bottom-left panel: tick numbers at the cell centres and the axis labels.
    x, y = left, top + (nrows - 1) * (height + gap_y)
    for j in _ticks(num_kvpairs):
        parts.append(f'<text x="{x + (j + 0.5) * cell}" y="{y + height + 11}" '
                     f'{text.format(size=9, anchor="middle")}>{j}</text>')
    for i in _ticks(num_queries):
        parts.append(f'<text x="{x - 3}" y="{y + (i + 0.5) * cell + 3}" {text.format(size=9, anchor="end")}>{i}</text>')
    parts.append(f'<text x="{x + width / 2}" y="{y + height + 24}" {text.format(size=11, anchor="middle")}>'
                 f'{_("keys")}</text>')
    parts.append(f'<text transform="translate({x - 18} {y + height / 2}) rotate(-90)" '
                 f'{text.format(size=11, anchor="middle")}>{_("queries")}</text>')
    # The colour bar (weight 1 at the top), and the legend of the masked colour under it.
    bar_x, bar_top, bar_bottom = left + grid_w + 16, top, fig_h - bottom
    ramp = colormaps[cmap](np.linspace(1, 0, 64)[:, None], bytes=True)[..., :3]  # (64, 1) -> (64, 1, 3)
    parts.append(f'<image x="{bar_x}" y="{bar_top}" width="10" height="{bar_bottom - bar_top}" '
                 f'preserveAspectRatio="none" xlink:href="{_png_data_url(ramp, 1)}"/>'
                 f'<rect x="{bar_x}" y="{bar_top}" width="10" height="{bar_bottom - bar_top}" fill="none" '
                 f'stroke="#888" stroke-width="0.5"/>'
                 f'<text x="{bar_x + 13}" y="{bar_top + 8}" {text.format(size=9, anchor="start")}>1</text>'
                 f'<text x="{bar_x + 13}" y="{bar_bottom}" {text.format(size=9, anchor="start")}>0</text>'
                 f'<text transform="translate({bar_x + 30} {(bar_top + bar_bottom) / 2}) rotate(-90)" '
                 f'{text.format(size=10, anchor="middle")}>{_("attention weight")}</text>'
                 f'<rect x="{bar_x}" y="{bar_bottom + 12}" width="10" height="10" fill="rgb{MASKED_RGB}"/>'
                 f'<text x="{bar_x + 14}" y="{bar_bottom + 21}" {text.format(size=10, anchor="start")}>'
                 f'{_("masked")}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _png_data_url(rgb: np.ndarray, cell: int) -> str:
    """``rgb`` as a PNG ``data:`` URL, each entry drawn as a ``cell`` x ``cell`` square of pixels."""
    pixels = rgb.repeat(cell, axis=0).repeat(cell, axis=1)  # (rows, cols, 3) -> (rows*cell, cols*cell, 3)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", compress_level=1)  # level 1: fast, and these are small
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _ticks(n: int) -> list[int]:
    """At most three whole-number ticks: the first position, the middle, the last."""
    return sorted({0, (n - 1) // 2, n - 1}) if n > 2 else list(range(n))


# ---------------------------------------------------------------------------------------------------------------------
# The explorer widget


def render_explorer(config: ExplorerConfig) -> dict[str, str]:
    """The three HTML values the explorer shows for ``config``: ``"trace"``, ``"costs"`` and ``"heatmaps"``."""
    result = explore(config)
    c = config
    masks = [_("valid_len = {valid_len} of {num_kvpairs}").format(valid_len=c.valid_len, num_kvpairs=c.num_kvpairs)]
    masks += ["causal"] if c.causal else []
    head_dim = c.num_hiddens // c.num_heads
    heads = (_("{count} heads") if c.num_heads > 1 else _("{count} head")).format(count=c.num_heads)
    features = (_("{count} features") if head_dim > 1 else _("{count} feature")).format(count=head_dim)
    title = _("Sequence 0, {heads} of {features}, {masks}").format(heads=heads, features=features,
                                                                  masks=", ".join(masks))
    return {"trace": trace_html(result.trace), "costs": costs_html(result.costs),
            "heatmaps": heatmaps_svg(result.weights[0], result.may_attend[0], title)}


class ExplorerBox(widgets.VBox):
    """The explorer: the controls with the shape trace to their right, then the costs, then the heatmaps.

    ``controls`` maps each control's description to its widget; ``trace``, ``costs`` and
    ``heatmaps`` are the ``HTML`` widgets that :meth:`update` rewrites in place.
    """

    def __init__(self, config: ExplorerConfig) -> None:
        c = config
        # continuous_update=False: a slider reports its value when it is released (or moved by a key),
        # not at every pixel of a drag, so a drag costs one update instead of a queue of them.
        common = {"style": {"description_width": "90px"}, "layout": widgets.Layout(width="320px")}
        slider = {"continuous_update": False, **common}
        self.controls: dict[str, widgets.Widget] = {
            "num_hiddens": widgets.IntSlider(value=c.num_hiddens, min=4, max=max(64, c.num_hiddens), step=4,
                                             description="num_hiddens", **slider),
            "num_heads": widgets.SelectionSlider(options=divisors(c.num_hiddens), value=c.num_heads,
                                                 description="num_heads", **slider),
            "batch_size": widgets.IntSlider(value=c.batch_size, min=1, max=max(8, c.batch_size),
                                            description="batch_size", **slider),
            "num_queries": widgets.IntSlider(value=c.num_queries, min=1, max=max(16, c.num_queries),
                                             description="num_queries", **slider),
            "num_kvpairs": widgets.IntSlider(value=c.num_kvpairs, min=1, max=max(16, c.num_kvpairs),
                                             description="num_kvpairs", **slider),
            "valid_len": widgets.IntSlider(value=c.valid_len, min=min(1, c.valid_len), max=c.num_kvpairs,
                                           description="valid_len", **slider),
            "causal": widgets.Checkbox(value=c.causal, description="causal", **common),
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
        template = _("d={d!r} was not measured in {name}, whose dims are {dims}")
        raise ValueError(template.format(d=d, name=name, dims=dims.tolist()))
    return int(matches[0, 0])


def scaling_summary(d: int, variance: ScoreVariance, saturation: SoftmaxSaturation) -> str:
    """The measured numbers for one ``d`` as a plain-text table: variance and softmax peakiness, both ways."""
    _check_type("variance", variance, ScoreVariance)
    _check_type("saturation", saturation, SoftmaxSaturation)
    i, j = _index_of(d, variance.dims, "variance"), _index_of(d, saturation.dims, "saturation")
    rows = [
        (_("variance of the scores"), f"{variance.unscaled[i].item():.2f}", f"{variance.scaled[i].item():.2f}"),
        (_("mean largest weight"), f"{saturation.unscaled.max_weight[j].item():.2f}",
         f"{saturation.scaled.max_weight[j].item():.2f}"),
        (_("mean entropy (nats)"), f"{saturation.unscaled.entropy[j].item():.2f}",
         f"{saturation.scaled.entropy[j].item():.2f}"),
    ]
    return format_table(rows, [f"d = {d}", "q·k", "q·k / sqrt(d)"])


def plot_scaling(d: int, variance: ScoreVariance, saturation: SoftmaxSaturation, num_samples: int = 2000,
                 seed: int = 0) -> Figure:
    """Left: histograms of ``q . k`` with and without scaling. Right: softmax of one row of scores, both ways.

    The numbers in the legends come from ``variance`` and ``saturation``
    (:func:`mha_chapters.scaling.measure_score_variance` and ``measure_softmax_saturation``).
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
    # Each series gets 40 bins over 4 of its own standard deviations either side, and is drawn as a density:
    # shared bins as wide as the unscaled spread would squeeze the scaled scores into a few bars.
    limit = 4 * max(math.sqrt(d), 1.0)
    left.hist(unscaled.numpy(), bins=np.linspace(-limit, limit, 41), density=True, color="tab:red", alpha=0.6,
              label=figure_text(r"$q \cdot k$, variance {variance:.1f}").format(variance=variance.unscaled[i].item()))
    left.hist(scaled.numpy(), bins=np.linspace(-4.0, 4.0, 41), density=True, color="tab:blue", alpha=0.6,
              label=figure_text(r"$q \cdot k / √d$, variance {variance:.2f}").format(
                  variance=variance.scaled[i].item()))
    left.set_xlim(-limit, limit)
    left.set_xlabel(figure_text("score"))
    left.set_ylabel(figure_text("density ({count} pairs)").format(count=num_samples))
    left.set_title(figure_text("Scores of random q, k with d = {d}").format(d=d))
    left.legend(fontsize="small", loc="upper left")
    positions = np.arange(m)
    for offset, scores, color, label, field in (
            (-0.2, row, "tab:red", N_("unscaled: mean largest weight {weight:.2f}"), saturation.unscaled),
            (0.2, row / math.sqrt(d), "tab:blue", N_("scaled: mean largest weight {weight:.2f}"), saturation.scaled)):
        right.bar(positions + offset, torch.softmax(scores, dim=-1).numpy(), width=0.4, color=color,
                  label=figure_text(label).format(weight=field.max_weight[j].item()))
    right.set_ylim(0, 1.35)  # room for the legend above the tallest bar
    right.set_yticks([0, 0.25, 0.5, 0.75, 1])
    right.set_xticks(positions)
    right.set_xlabel(figure_text("keys"))
    right.set_ylabel(figure_text("softmax weight"))
    right.set_title(figure_text("Softmax of one query's {count} scores").format(count=m))
    right.legend(fontsize="small", loc="upper left")
    fig.suptitle(figure_text(r"Without $1/√d$ the scores spread out like $√d$ and the softmax turns "
                             "one-hot"))
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


def scaling_explorer(d: int = 64, dims: Sequence[int] = SCALING_DIMS) -> widgets.VBox:
    """A ``d`` slider over ``dims`` for the sqrt(d) question: score histograms, softmax of a row and the numbers."""
    if d not in dims:
        raise ValueError(_("d must be one of dims={dims}, got {d!r}").format(dims=list(dims), d=d))
    variance = measure_score_variance(list(dims), num_samples=2000)
    saturation = measure_softmax_saturation(list(dims))
    slider = widgets.SelectionSlider(options=list(dims), value=d, description="d", continuous_update=False,
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
        raise wrong_type(name, _("a {kind}").format(kind=kind.__name__), value)
