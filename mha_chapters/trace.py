"""Shape traces: run the head-splitting reshapes one step at a time.

Each :class:`Step` keeps the code that ran and the tensor it produced, so a
notebook can print every intermediate, or lay the shapes out in a table with
:func:`shape_table`. Dimension names are those of :mod:`mha_lib.functional`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from torch import Tensor

from mha_lib._validation import require_merge_input, require_split_input

from .i18n import N_, _, figure_text
from .tables import format_table

__all__ = [
    "Step",
    "draw_transpose_qkv",
    "shape_table",
    "trace_transpose_output",
    "trace_transpose_qkv",
]

COLUMNS = (N_("step"), N_("code"), N_("shape"), N_("axes"))


@dataclass(frozen=True)
class Step:
    """One step of a trace: its name, the code that ran, the tensor it gave and what its axes mean."""

    name: str
    code: str
    output: Tensor
    axes: str = ""  # marked N_("...") for the catalogue: shape_table prints it in the reader's language

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.output.shape)


def trace_transpose_qkv(X: Tensor, num_heads: int) -> list[Step]:
    """Run :func:`mha_lib.transpose_qkv` step by step: the input, reshape, permute, reshape.

    Like ``transpose_qkv`` it accepts any dtype, so small integer examples
    print exactly. ``Step.code`` holds the call that produced
    each step from the previous one's output, named ``X``.

    Shape:
        - X: ``(batch_size, seq_len, num_hiddens)``
        - steps: ``X``, ``(batch_size, seq_len, num_heads, head_dim)``,
          ``(batch_size, num_heads, seq_len, head_dim)``, ``(batch_size * num_heads, seq_len, head_dim)``
    """
    require_split_input(X, num_heads)
    batch_size, seq_len, num_hiddens = X.shape
    head_dim = num_hiddens // num_heads
    steps = [Step(N_("input"), "X", X, N_("(batch, seq, num_hiddens)"))]
    # The same three calls, with the same arguments, as mha_lib.transpose_qkv.
    for name, method, args, axes in (
        (N_("split features into heads"), "reshape", (batch_size, seq_len, num_heads, head_dim),
         N_("(batch, seq, heads, head_dim)")),  # (b, n, h*d) -> (b, n, h, d)
        (N_("move heads before tokens"), "permute", (0, 2, 1, 3),
         N_("(batch, heads, seq, head_dim)")),  # (b, n, h, d) -> (b, h, n, d)
        (N_("fold heads into the batch"), "reshape", (batch_size * num_heads, seq_len, head_dim),
         N_("(batch*heads, seq, head_dim)")),  # (b, h, n, d) -> (b*h, n, d)
    ):
        steps.append(_run(steps[-1].output, name, method, args, axes))
    return steps


def trace_transpose_output(X: Tensor, num_heads: int) -> list[Step]:
    """Run :func:`mha_lib.transpose_output` step by step: the input, reshape, permute, reshape.

    Accepts any dtype, like :func:`trace_transpose_qkv`.

    Shape:
        - X: ``(batch_size * num_heads, seq_len, head_dim)``
        - steps: ``X``, ``(batch_size, num_heads, seq_len, head_dim)``,
          ``(batch_size, seq_len, num_heads, head_dim)``, ``(batch_size, seq_len, num_heads * head_dim)``
    """
    require_merge_input(X, num_heads)
    folded, seq_len, head_dim = X.shape
    batch_size = folded // num_heads
    steps = [Step(N_("input"), "X", X, N_("(batch*heads, seq, head_dim)"))]
    # The same three calls, with the same arguments, as mha_lib.transpose_output.
    for name, method, args, axes in (
        (N_("unfold heads from the batch"), "reshape", (batch_size, num_heads, seq_len, head_dim),
         N_("(batch, heads, seq, head_dim)")),  # (b*h, n, d) -> (b, h, n, d)
        (N_("move tokens before heads"), "permute", (0, 2, 1, 3),
         N_("(batch, seq, heads, head_dim)")),  # (b, h, n, d) -> (b, n, h, d)
        (N_("concatenate the heads"), "reshape", (batch_size, seq_len, num_heads * head_dim),
         N_("(batch, seq, num_hiddens)")),  # (b, n, h, d) -> (b, n, h*d)
    ):
        steps.append(_run(steps[-1].output, name, method, args, axes))
    return steps


def shape_table(steps: Sequence[Step], columns: Sequence[str] = COLUMNS) -> str:
    """Lay out a trace as a plain-text table with the chosen columns: step, code, shape, axes."""
    unknown = [column for column in columns if column not in COLUMNS]
    if unknown or not columns:
        template = _("columns must be chosen from {allowed}, got {columns}")
        raise ValueError(template.format(allowed=COLUMNS, columns=tuple(columns)))
    rows = [[{"step": _(s.name), "code": s.code, "shape": s.shape, "axes": _(s.axes)}[c] for c in columns]
            for s in steps]
    return format_table(rows, headers=columns)


def draw_transpose_qkv(X: Tensor, num_heads: int) -> Figure:
    """Draw a small tensor before and after :func:`mha_lib.transpose_qkv`, every number coloured by its head.

    Meant for small examples (a few sentences, tokens and features): every
    element is written in its cell.

    Shape:
        - X: ``(batch_size, seq_len, num_hiddens)``
    """
    steps = trace_transpose_qkv(X, num_heads)  # checks X and num_heads
    batch_size, seq_len, num_hiddens = X.shape
    head_dim = num_hiddens // num_heads
    folded = steps[-1].output
    # The head each element belongs to: feature f of a token goes to head f // head_dim.
    head_before = (torch.arange(num_hiddens) // head_dim).expand(batch_size * seq_len, num_hiddens)
    head_after = (torch.arange(batch_size * num_heads) % num_heads).repeat_interleave(seq_len)
    head_after = head_after.unsqueeze(1).expand(-1, head_dim)  # (b*h*n,) -> (b*h*n, d)

    colours = ListedColormap([f"C{h % 10}" for h in range(num_heads)])
    fig = Figure(figsize=(9, 1.6 + 0.4 * batch_size * num_heads * seq_len), layout="constrained")
    before, after = fig.subplots(1, 2, width_ratios=[num_hiddens, 2 * head_dim])
    panels = (
        (before, X.reshape(batch_size * seq_len, num_hiddens), head_before,
         [figure_text("sentence {b}, token {t}").format(b=b, t=t) for b in range(batch_size) for t in range(seq_len)],
         figure_text("before: X\nshape {shape}").format(shape=tuple(X.shape)), figure_text("feature"),
         figure_text("sentence, token")),
        (after, folded.reshape(-1, head_dim), head_after,
         [figure_text("token {t}").format(t=t) for _sample in range(batch_size * num_heads) for t in range(seq_len)],
         figure_text("after: transpose_qkv(X, {num_heads})\nshape {shape}").format(num_heads=num_heads,
                                                                                  shape=tuple(folded.shape)),
         figure_text("feature of the head"), figure_text("folded sample, token")),
    )
    for ax, values, heads, labels, title, xlabel, ylabel in panels:
        ax.imshow(heads.numpy(), cmap=colours, vmin=-0.5, vmax=num_heads - 0.5, alpha=0.35)
        for row, row_values in enumerate(values.tolist()):
            for column, value in enumerate(row_values):
                ax.text(column, row, f"{value:g}", ha="center", va="center", fontsize=11)
        for edge in range(seq_len, values.shape[0], seq_len):  # a line between sentences / folded samples
            ax.axhline(edge - 0.5, color="black", linewidth=1.5)
        ax.set_xticks(range(values.shape[1]))
        ax.set_yticks(range(values.shape[0]), labels)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    for i in range(batch_size * num_heads):  # name each folded sample to the right of its block
        label = figure_text("sample {i} = sentence {sentence}, head {head}").format(i=i, sentence=i // num_heads,
                                                                                    head=i % num_heads)
        after.text(head_dim - 0.3, (i + 0.5) * seq_len - 0.5, label, va="center", ha="left", fontsize=10)
    fig.suptitle(figure_text("transpose_qkv moves every head's numbers into a sample of its own"))
    fig.legend(handles=[Patch(color=f"C{h % 10}", alpha=0.35, label=figure_text("head {index}").format(index=h))
                        for h in range(num_heads)],
               loc="outside lower center", ncols=num_heads)
    return fig


def _run(X: Tensor, name: str, method: str, args: tuple[int, ...], axes: str) -> Step:
    """Call ``X.<method>(*args)`` and record the call as code."""
    code = f"X.{method}({', '.join(str(arg) for arg in args)})"
    return Step(name, code, getattr(X, method)(*args), axes)
