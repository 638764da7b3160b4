"""The block diagram of multi-head attention, drawn from code with the shapes of the sizes given (chapters 00, 04).

Project -> split into ``num_heads`` heads -> ``num_heads`` attentions side by side -> concatenate -> ``W_o``,
the picture of Vaswani et al. (2017, figure 2), labelled with the shapes the layer really produces.
Dimension names are those of :mod:`mha_lib.functional`.
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from mha_lib._validation import require_heads_divide, require_positive_int

from .i18n import figure_text

__all__ = ["HEAD_BOX", "MAX_HEADS_DRAWN", "draw_multi_head_attention", "heads_drawn"]

HEAD_BOX = "head"  # the gid of each attention box, so tests and readers can find them among the patches
MAX_HEADS_DRAWN = 6  # more heads than this: the first two, "…", the last one

_COLOURS = {"input": "#f2f2f2", "project": "#cfe2f3", "head": "#fce5cd", "merge": "#d9ead3", "output": "#f2f2f2"}


def heads_drawn(num_heads: int) -> list[int | None]:
    """The heads the diagram draws, in order; None stands for the "…" between them."""
    num_heads = require_positive_int("num_heads", num_heads)
    if num_heads <= MAX_HEADS_DRAWN:
        return list(range(num_heads))
    return [0, 1, None, num_heads - 1]


def draw_multi_head_attention(
    batch_size: int,
    num_queries: int,
    num_kvpairs: int,
    num_hiddens: int,
    num_heads: int,
    *,
    query_size: int | None = None,
    key_size: int | None = None,
    value_size: int | None = None,
    figsize: tuple[float, float] = (9.0, 6.0),
) -> Figure:
    """Draw the layer as blocks (project, split, h attentions, concatenate, W_o), each labelled with its shape.

    The sizes are those of ``MultiHeadAttention(key_size, query_size, value_size, num_hiddens, num_heads)``
    called on ``batch_size`` sequences; ``query_size``, ``key_size`` and ``value_size`` default to
    ``num_hiddens``. Up to ``MAX_HEADS_DRAWN`` heads are drawn one box each; more are drawn as the first
    two, "…" and the last.

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_size)``
        - output: ``(batch_size, num_queries, num_hiddens)``
    """
    sizes = {name: require_positive_int(name, value) for name, value in (
        ("batch_size", batch_size), ("num_queries", num_queries), ("num_kvpairs", num_kvpairs),
        ("num_hiddens", num_hiddens), ("num_heads", num_heads))}
    require_heads_divide(num_hiddens, num_heads)
    query_size, key_size, value_size = (num_hiddens if size is None else require_positive_int(name, size)
                                        for name, size in (("query_size", query_size), ("key_size", key_size),
                                                           ("value_size", value_size)))
    b, n_q, n_kv, d, h = sizes.values()
    d_k = d // h
    columns = heads_drawn(h)
    width = max(3, len(columns)) * 3.0  # data units; one head box is 2.6 wide
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    ax.set_xlim(0, width)
    ax.set_ylim(0.8, 12.0)
    ax.set_axis_off()
    ax.set_title(figure_text("Multi-head attention: $b = {b}$, $n_q = {n_q}$, $n_{{kv}} = {n_kv}$, $d = {d}$, "
                             "$h = {h}$, $d_k = d_v = {d_k}$").format(b=b, n_q=n_q, n_kv=n_kv, d=d, h=h, d_k=d_k))

    # rows, top to bottom: inputs, projections, split, heads, concatenate, output projection
    inputs = [(figure_text("queries"), (b, n_q, query_size)), (figure_text("keys"), (b, n_kv, key_size)),
              (figure_text("values"), (b, n_kv, value_size))]
    thirds = [width * (2 * i + 1) / 6 for i in range(3)]
    for x, (name, shape) in zip(thirds, inputs, strict=True):
        _box(ax, x, 11.3, 2.6, f"{name}\n{shape}", "input")
        _arrow(ax, x, 10.85, x, 10.15)
    for x, (name, rows) in zip(thirds, [("$W_q$", n_q), ("$W_k$", n_kv), ("$W_v$", n_kv)], strict=True):
        _box(ax, x, 9.7, 2.6, figure_text("{name}: project\n{shape}").format(name=name, shape=(b, rows, d)),
             "project")
    ax.text(width / 2, 8.6, figure_text("split into h = {h} heads (transpose_qkv): head i takes features i·{d_k} … "
                                        "(i+1)·{d_k} - 1,\nfolded into the batch axis: {queries}, {keys}").format(
                h=h, d_k=d_k, queries=(b * h, n_q, d_k), keys=(b * h, n_kv, d_k)),
            ha="center", va="center", fontsize=8.5, style="italic")
    head_centres = [width * (2 * i + 1) / (2 * len(columns)) for i in range(len(columns))]
    for x in thirds:
        _arrow(ax, x, 9.25, x, 8.95)
    for x, head in zip(head_centres, columns, strict=True):
        _arrow(ax, x, 8.15, x, 7.65)
        if head is None:
            ax.text(x, 6.9, "…", ha="center", va="center", fontsize=20)
            continue
        formula = rf"$\mathrm{{softmax}}(Q_{{{head}}} K_{{{head}}}^\top / √{{{d_k}}})\, V_{{{head}}}$"
        _box(ax, x, 6.9, 2.6, figure_text("head {head}\n{formula}\nweights {weights}\noutput {output}").format(
            head=head, formula=formula, weights=(b, n_q, n_kv), output=(b, n_q, d_k)), "head", gid=HEAD_BOX)
        _arrow(ax, x, 6.15, width / 2, 5.05)
    _box(ax, width / 2, 4.6, 5.2, figure_text("concatenate (transpose_output)\n{folded} → {merged}").format(
        folded=(b * h, n_q, d_k), merged=(b, n_q, d)), "merge")
    _arrow(ax, width / 2, 4.15, width / 2, 3.45)
    _box(ax, width / 2, 3.0, 5.2, figure_text("$W_o$: output projection\n{shape}").format(shape=(b, n_q, d)),
         "project")
    _arrow(ax, width / 2, 2.55, width / 2, 1.85)
    _box(ax, width / 2, 1.4, 5.2, figure_text("output\n{shape}").format(shape=(b, n_q, d)), "output")
    return fig


def _box(ax: Axes, x: float, y: float, width: float, text: str, kind: str, gid: str | None = None) -> None:
    lines = text.count("\n") + 1
    height = 0.3 + 0.3 * lines
    patch = FancyBboxPatch((x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.05",
                           facecolor=_COLOURS[kind], edgecolor="#444444", linewidth=1.0)
    if gid is not None:
        patch.set_gid(gid)
    ax.add_patch(patch)
    ax.text(x, y, text, ha="center", va="center", fontsize=8.5)


def _arrow(ax: Axes, x0: float, y0: float, x1: float, y1: float) -> None:
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={"arrowstyle": "->", "color": "#444444"})
