"""Chapter 11's helpers: two more masks, the dense-versus-block picture of a mask, and the recorded timing table.

Each returns a ``mask_mod``, data, a string or a ``Figure``, so it is tested without a browser; the notebook
only wires sliders to :func:`plot_block_mask`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from mha_lib._validation import require_positive_int
from mha_lib.flex import FULL, PARTIAL, SKIPPED, MaskMod, block_tiles, dense_mask, sliding_window_mask_mod

from .i18n import N_, _, figure_text
from .tables import Table, display_width

__all__ = ["block_counts", "document_offsets_mask_mod", "flex_cost_lines", "flex_cost_table", "load_flex_record",
           "neighborhood_mask_mod", "plot_block_mask", "plot_flex_costs"]

_LABELS = {"dense_sdpa": N_("dense SDPA"), "causal_sdpa": N_("is_causal SDPA"), "eager_flex": N_("eager flex"),
           "compiled_flex": N_("compiled flex")}
_WAY_COLOURS = {"causal_sdpa": "#2a9d8f", "eager_flex": "#e76f51", "compiled_flex": "#3c6e9f"}
_TILE_COLOURS = ListedColormap(["#f2f2f2", "#f4a259", "#3c6e9f"])  # skipped, partial, full


def document_offsets_mask_mod(lengths: list[int], inner: MaskMod) -> MaskMod:
    """Packed documents with offsets: ``inner`` applied to positions counted from each document's start.

    Tokens see only their own document, and there ``inner`` (causal, a sliding window, ...) sees the
    positions ``q_idx - start`` and ``kv_idx - start``, as if each document stood alone.
    """
    if not isinstance(lengths, (list, tuple)) or not lengths:
        template = _("lengths must be a non-empty list of document lengths, got {lengths!r}")
        raise TypeError(template.format(lengths=lengths))
    lengths = [require_positive_int("lengths[i]", length) for length in lengths]
    document = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))  # (sequence,)
    starts = torch.tensor([0, *lengths[:-1]]).cumsum(0)  # (num_documents,) each document's first position

    def document_offsets(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        q_doc, kv_doc = document[q_idx], document[kv_idx]
        return (q_doc == kv_doc) & inner(b, h, q_idx - starts[q_doc], kv_idx - starts[kv_doc])

    return document_offsets


def neighborhood_mask_mod(height: int, width: int, kernel_size: int) -> MaskMod:
    """2-D neighbourhood attention over a ``height x width`` grid of tokens in row-major order (as NATTEN).

    Each query sees the ``kernel_size x kernel_size`` keys around it; near an edge the window shifts inside the
    grid instead of shrinking, so every query sees exactly ``kernel_size ** 2`` keys (Hassani et al. 2023).
    """
    height, width = require_positive_int("height", height), require_positive_int("width", width)
    kernel_size = require_positive_int("kernel_size", kernel_size)
    if kernel_size % 2 == 0 or kernel_size > min(height, width):
        template = _("kernel_size must be odd and at most min(height, width) = {smallest_side}, got {kernel_size}")
        raise ValueError(template.format(smallest_side=min(height, width), kernel_size=kernel_size))
    radius = kernel_size // 2

    def neighborhood(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        q_row, q_col = q_idx // width, q_idx % width
        kv_row, kv_col = kv_idx // width, kv_idx % width
        centre_row = q_row.clamp(radius, height - 1 - radius)  # the window's centre, kept inside the grid
        centre_col = q_col.clamp(radius, width - 1 - radius)
        return ((kv_row - centre_row).abs() <= radius) & ((kv_col - centre_col).abs() <= radius)

    return neighborhood


def block_counts(seq_len: int, window: int, block_size: int, mask_mod: MaskMod | None = None) -> dict[str, int]:
    """How many tiles of the score matrix are full, partial and skipped for a (causal sliding-window) mask."""
    seq_len = require_positive_int("seq_len", seq_len)
    mask_mod = mask_mod if mask_mod is not None else sliding_window_mask_mod(window, causal=True)
    tiles = block_tiles(dense_mask(mask_mod, 1, 1, seq_len, seq_len)[0, 0], block_size)  # (rows, cols)
    return {"full": int((tiles == FULL).sum()), "partial": int((tiles == PARTIAL).sum()),
            "skipped": int((tiles == SKIPPED).sum()), "total": tiles.numel()}


def plot_block_mask(seq_len: int, window: int, block_size: int, mask_mod: MaskMod | None = None) -> Figure:
    """The dense mask (left) and its tiles (right: full, partial, skipped), titled with the fraction skipped.

    Without ``mask_mod`` the mask is the causal sliding window of ``window`` keys.
    """
    seq_len = require_positive_int("seq_len", seq_len)
    title = (figure_text("the given mask") if mask_mod is not None else
             figure_text("causal sliding window of {window} keys").format(window=window))
    mask_mod = mask_mod if mask_mod is not None else sliding_window_mask_mod(window, causal=True)
    mask = dense_mask(mask_mod, 1, 1, seq_len, seq_len)[0, 0]  # (queries, kvpairs)
    tiles = block_tiles(mask, block_size)  # (query tiles, key tiles)
    skipped = (tiles == SKIPPED).float().mean().item()
    fig = Figure(figsize=(9, 4.4))  # fixed margins: a constrained layout would double the time of a redraw
    fig.subplots_adjust(left=0.08, right=0.97, bottom=0.11, top=0.80, wspace=0.35)
    dense_ax, tile_ax = fig.subplots(1, 2)
    # At most 512 x 512 cells are drawn: a screen shows no more, and drawing a million costs a quarter of a
    # redraw. Each drawn cell is blue if any query in it may see any key in it, so thin bands stay visible.
    step = -(-seq_len // 512)
    shown = F.max_pool2d(mask[None].float(), step, ceil_mode=True)[0] if step > 1 else mask.float()
    dense_ax.imshow(shown.numpy(), cmap="Blues", vmin=0, vmax=1, interpolation="none",
                    extent=(-0.5, seq_len - 0.5, seq_len - 0.5, -0.5))  # axes in query and key positions
    dense_ax.set(title=figure_text("dense mask, {n} x {n} (blue: may attend)").format(n=seq_len),
                 xlabel=figure_text("keys"), ylabel=figure_text("queries"))
    edges = [x - 0.5 for x in range(0, seq_len, block_size)][1:]
    for edge in edges if len(edges) <= 16 else []:  # tile borders, where they stay readable
        dense_ax.axhline(edge, color="grey", linewidth=0.5)
        dense_ax.axvline(edge, color="grey", linewidth=0.5)
    tile_ax.imshow(tiles.numpy(), cmap=_TILE_COLOURS, vmin=0, vmax=2, interpolation="none")
    # few explicit ticks: matplotlib's automatic ticks take a third of the time of a redraw
    dense_ticks = [x for x in range(0, seq_len, block_size)][:: -(-seq_len // block_size // 4) or 1]
    tile_ticks = list(range(0, tiles.shape[-1], -(-tiles.shape[-1] // 8) or 1))
    dense_ax.set(xticks=dense_ticks, yticks=dense_ticks)
    tile_ax.set(xticks=tile_ticks, yticks=tile_ticks)
    num_skipped = int((tiles == SKIPPED).sum())
    tile_ax.set(title=figure_text("tiles of {size}: {skipped} of {total} skipped ({fraction:.0%})\n"
                                  "(grey skipped, orange partial, blue full)").format(
                    size=block_size, skipped=num_skipped, total=tiles.numel(), fraction=skipped),
                xlabel=figure_text("key tiles"), ylabel=figure_text("query tiles"))
    fig.suptitle(title)
    return fig


def load_flex_record(path: str | Path | None = None) -> dict[str, Any]:
    """The newest recording of ``benchmarks/bench_flex.py`` shipped with the package (or the one at ``path``)."""
    if path is None:
        from .bench.records import newest_recording

        try:
            path = newest_recording("flex")  # by the date in its name
        except FileNotFoundError:
            raise FileNotFoundError(_("no recording in {folder}/: run python benchmarks/bench_flex.py --record").format(
                folder="flex")) from None
    record = json.loads(Path(path).read_text())
    for key in ("device", "device_name", "machine", "threads", "torch", "date", "load_average_1min", "rows",
                "compile_s", "compile_fresh_s"):
        if key not in record:
            raise ValueError(_("the recording {file} lacks the field {key!r}").format(file=Path(path).name, key=key))
    for row in record["rows"]:
        for name in _compared(record):
            if f"{name}_over_dense_pairs" not in row:
                template = _("the recording {file} lacks the paired ratios {key!r}: record it again")
                raise ValueError(template.format(file=Path(path).name, key=f"{name}_over_dense_pairs"))
    return record


def _compared(record: dict[str, Any]) -> list[str]:
    """The ways timed against dense SDPA, in the order tables and figures show them."""
    return [name for name in ("causal_sdpa", "eager_flex", "compiled_flex") if f"{name}_ms" in record["rows"][0]]


def _ratio_text(row: dict[str, Any], name: str) -> str:
    """``median (min-max)`` of one way's paired ratios to dense SDPA, three significant digits."""
    low, high = row[f"{name}_over_dense_range"]
    return f"{row[f'{name}_over_dense']:.3g} ({low:.3g}-{high:.3g})"


def flex_cost_lines(record: dict[str, Any]) -> list[str]:
    """The recorded table as aligned lines: dense SDPA's time per call, then each way's paired ratios to it."""
    return str(flex_cost_table(record)).splitlines()


def flex_cost_table(record: dict[str, Any]) -> Table:
    """The recorded table as text and, in a notebook, as HTML: dense SDPA's time per call, then each way's paired
    ratios to it."""
    def right(text: str, width: int) -> str:  # right-aligned by display width: a Chinese header is 2 columns a char
        return " " * (width - display_width(text)) + text

    names = _compared(record)
    columns = [("n", 5), (_("window"), 6), (_("skipped"), 7), (_("dense SDPA"), 10)]
    columns += [(_(_LABELS[name]), 18) for name in names]
    wider = [max(0, display_width(label) - width) for label, width in columns]  # a longer (translated) header
    lines = [" ".join(right(label, width + more) for (label, width), more in zip(columns, wider, strict=True))]
    rows = []
    for row in record["rows"]:
        fields = [f"{row['seq_len']:5d}", f"{row['window']:6d}", f"{row['skipped_tiles']:7.0%}",
                  f"{row['dense_sdpa_ms']:7.2f} ms"] + [f"{_ratio_text(row, name):>18}" for name in names]
        lines.append(" ".join(" " * more + field for field, more in zip(fields, wider, strict=True)))
        rows.append([" ".join(field.split()) for field in fields])
    return Table("\n".join(lines), [label for label, _width in columns], rows)


def plot_flex_costs(record: dict[str, Any]) -> Figure:
    """Each way's paired ratios to dense SDPA, one group per (length, window): every round a dot, the median a
    bar, the min-max a line. Below 1 is faster than dense SDPA with the boolean mask (log scale)."""
    rows, names = record["rows"], _compared(record)
    fig = Figure(figsize=(8.6, 3.8), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        colour = _WAY_COLOURS[name]
        for j, row in enumerate(rows):
            x = j + (i - (len(names) - 1) / 2) * width
            ratios = row[f"{name}_over_dense_pairs"]
            spread = torch.linspace(-0.25, 0.25, len(ratios)).mul(width).tolist()  # rounds side by side
            ax.plot([x + dx for dx in spread], ratios, "o", color=colour, markersize=2.5, alpha=0.6)
            ax.vlines(x, *row[f"{name}_over_dense_range"], color=colour, linewidth=1)
            ax.hlines(row[f"{name}_over_dense"], x - width * 0.4, x + width * 0.4, color=colour, linewidth=2.5,
                      label=figure_text(_LABELS[name]) if j == 0 else None)
    ax.axhline(1, color="black", linestyle="--", linewidth=1, label=figure_text("dense SDPA (boolean mask) = 1"))
    ticks = [figure_text("n={n}\nwindow {window}").format(n=row["seq_len"], window=row["window"]) for row in rows]
    ax.set_xticks(range(len(rows)), ticks)
    ax.set_yscale("log")
    low, high = ax.get_ylim()
    steps = [m * 10.0**e for e in range(-3, 4) for m in (1, 3)]  # 0.001, 0.003, ..., 1, 3, 10, ...: plain numbers
    ax.set_yticks([y for y in steps if low <= y <= high], [f"{y:g}" for y in steps if low <= y <= high])
    ax.minorticks_off()
    ax.set_ylim(low, high)
    ax.set(ylabel=figure_text("time / time of dense SDPA\n(each round; bar: median)"),
           title=(figure_text("CPU (1 thread), torch {torch}, {date}") if record["threads"] == 1 else
                  figure_text("CPU ({threads} threads), torch {torch}, {date}")).format(
               threads=record["threads"], torch=record["torch"], date=record["date"]))
    fig.legend(loc="outside right upper", fontsize=8)
    return fig
