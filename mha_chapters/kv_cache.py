"""Chapter 09's helpers: the KV-cache memory calculator with its widget, the table of real models, and the FLOPs of
one decoding step. The cache itself, ``generate`` and MLA are the library's (:mod:`mha_lib.kv_cache`,
:mod:`mha_lib.latent`); this module names them too, for the chapter's ``from mha_chapters.kv_cache import ...``.

Dimension names as in :mod:`mha_lib.grouped`; in addition

    context_len   tokens whose keys and values the cache holds
    num_layers    attention layers of a model, each with its own cache
    kv_lora_rank  size of MLA's latent vector per token (DeepSeek-V2's d_c)
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure
from torch import Tensor

from mha_lib._validation import (
    require_nonnegative_int,
    require_positive_int,
    wrong_type,
)
from mha_lib.grouped import kv_head_of, mha_to_gqa
from mha_lib.kv_cache import KVCache, SlidingWindowKVCache, attend_with_cache, generate
from mha_lib.latent import MultiHeadLatentAttention
from mha_lib.modules import MultiHeadAttention

from .explorer import figure_to_svg
from .i18n import N_, _, figure_text
from .tables import Table, display_width

__all__ = [
    "MODELS",
    "KVCache",
    "MultiHeadLatentAttention",
    "SlidingWindowKVCache",
    "attend_with_cache",
    "conversion_error",
    "cache_curves",
    "decode_flops",
    "dtype_bytes",
    "generate",
    "kv_cache_bytes",
    "memory_calculator",
    "memory_summary",
    "mla_cache_bytes",
    "model_table",
    "plot_cache_bytes",
    "plot_head_sharing",
    "storage_bytes",
]

# ---------------------------------------------------------------------------------------------------------------------
# Sharing key-value heads


def plot_head_sharing(num_heads: int, kv_head_counts: Sequence[int]) -> Figure:
    """One panel per number of key-value heads: a line from every query head to the key-value head it reads."""
    fig = Figure(figsize=(3.2 * len(kv_head_counts), 2.6))
    axes = fig.subplots(1, len(kv_head_counts), squeeze=False)[0]
    for ax, num_kv_heads in zip(axes, kv_head_counts, strict=True):
        kv_x = [(k + 0.5) * num_heads / num_kv_heads - 0.5 for k in range(num_kv_heads)]  # centred under the group
        for head in range(num_heads):
            kv = kv_head_of(head, num_heads, num_kv_heads)
            ax.plot([head, kv_x[kv]], [1, 0], color=f"C{kv % 10}", linewidth=1.5)
        ax.scatter(range(num_heads), [1] * num_heads, s=120, color="white", edgecolor="black", zorder=3)
        ax.scatter(kv_x, [0] * num_kv_heads, s=220, marker="s", color=[f"C{k % 10}" for k in range(num_kv_heads)],
                   edgecolor="black", zorder=3)
        kind = "MHA" if num_kv_heads == num_heads else ("MQA" if num_kv_heads == 1 else "GQA")
        title = (figure_text("{kind}: {num_heads} query heads, {num_kv_heads} kv heads") if num_kv_heads > 1 else
                 figure_text("{kind}: {num_heads} query heads, {num_kv_heads} kv head"))
        ax.set_title(title.format(kind=kind, num_heads=num_heads, num_kv_heads=num_kv_heads), fontsize="medium")
        ax.set_yticks([0, 1], [figure_text("key-value\nheads"), figure_text("query\nheads")])  # wrapped in English only
        for head in range(num_heads):
            ax.text(head, 1.2, str(head), ha="center", fontsize="small")
        for kv, x in enumerate(kv_x):
            ax.text(x, -0.32, str(kv), ha="center", fontsize="small")
        ax.set_xticks([])
        ax.set_ylim(-0.45, 1.4)
        ax.set_xlim(-0.7, num_heads - 0.3)
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def conversion_error(mha: MultiHeadAttention, num_kv_heads: int, x: Tensor) -> float:
    """Relative change of the output, ``||gqa(x) - mha(x)|| / ||mha(x)||``, when ``mha`` is mean-pooled to GQA."""
    with torch.no_grad():
        reference = mha(x, x, x, causal=True)
        converted = mha_to_gqa(mha, num_kv_heads)(x, x, x, causal=True)
    return ((converted - reference).norm() / reference.norm()).item()


# ---------------------------------------------------------------------------------------------------------------------
# Decoding with a cache: the cache, attend_with_cache and generate live in mha_lib.kv_cache


def decode_flops(batch_size: int, context_len: int, num_hiddens: int, num_heads: int, num_kv_heads: int, *,
                 use_cache: bool) -> dict[str, int]:
    """FLOPs (a multiply-add counts 2) of the step that produces the output at position ``context_len - 1``.

    With the cache only the newest token is projected and its one query meets ``context_len`` keys;
    without it the layer projects all ``context_len`` tokens again and builds the whole
    ``context_len x context_len`` score matrix (the causal mask hides half of it, but it is computed).
    """
    for name, value in (("batch_size", batch_size), ("context_len", context_len), ("num_hiddens", num_hiddens),
                        ("num_heads", num_heads), ("num_kv_heads", num_kv_heads)):
        require_positive_int(name, value)
    head_dim = num_hiddens // num_heads
    tokens = 1 if use_cache else context_len  # tokens projected and queries asked in this step
    kv_features = num_kv_heads * head_dim
    return {
        "projections": 2 * batch_size * tokens * num_hiddens * (num_hiddens + 2 * kv_features),  # W_q, W_k, W_v
        "scores": 2 * batch_size * num_heads * tokens * context_len * head_dim,
        "weights @ values": 2 * batch_size * num_heads * tokens * context_len * head_dim,
        "output projection": 2 * batch_size * tokens * num_hiddens * num_hiddens,
    }


# ---------------------------------------------------------------------------------------------------------------------
# The memory calculator

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "float8_e4m3fn": torch.float8_e4m3fn}


def dtype_bytes(dtype: torch.dtype | str) -> int:
    """Bytes per element of ``dtype`` (a torch.dtype or its name, e.g. ``"bfloat16"``)."""
    if isinstance(dtype, str):
        if dtype not in DTYPES:
            template = _("dtype must be one of {dtypes} or a torch.dtype, got {dtype!r}")
            raise ValueError(template.format(dtypes=list(DTYPES), dtype=dtype))
        dtype = DTYPES[dtype]
    if not isinstance(dtype, torch.dtype):
        raise wrong_type("dtype", _("a torch.dtype or its name"), dtype)
    return torch.empty((), dtype=dtype).element_size()


def kv_cache_bytes(num_layers: int, num_kv_heads: int, head_dim: int, context_len: int, batch_size: int = 1,
                   dtype: torch.dtype | str = torch.float16) -> int:
    """Bytes of the keys and values of ``context_len`` tokens: ``2 * layers * kv_heads * head_dim * tokens * batch``."""
    for name, value in (("num_layers", num_layers), ("num_kv_heads", num_kv_heads), ("head_dim", head_dim),
                        ("context_len", context_len), ("batch_size", batch_size)):
        require_positive_int(name, value)
    keys_and_values = 2
    return keys_and_values * num_layers * num_kv_heads * head_dim * context_len * batch_size * dtype_bytes(dtype)


def storage_bytes(tensors: Iterable[Tensor]) -> int:
    """Measured bytes of the memory behind ``tensors``: each distinct storage once, as PyTorch reserved it.

    A view (``cache.keys`` is one) reports the whole storage it looks into, the reserved slots included,
    so this counts what the process holds, not what the view shows.
    """
    storages = {}
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            raise wrong_type("tensors", _("an iterable of tensors"), tensor)
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()  # two views of one storage count once
    return sum(storages.values())


def mla_cache_bytes(num_layers: int, kv_lora_rank: int, context_len: int, batch_size: int = 1,
                    dtype: torch.dtype | str = torch.float16, rope_head_dim: int = 0) -> int:
    """Bytes of MLA's cache: one latent of ``kv_lora_rank`` (plus the shared rotary key, if any) per token and layer."""
    for name, value in (("num_layers", num_layers), ("kv_lora_rank", kv_lora_rank), ("context_len", context_len),
                        ("batch_size", batch_size)):
        require_positive_int(name, value)
    require_nonnegative_int("rope_head_dim", rope_head_dim)
    return num_layers * (kv_lora_rank + rope_head_dim) * context_len * batch_size * dtype_bytes(dtype)


def cache_curves(context_lens: Sequence[int], *, num_layers: int, num_heads: int, num_kv_heads: int, head_dim: int,
                 kv_lora_rank: int, rope_head_dim: int = 0, batch_size: int = 1,
                 dtype: torch.dtype | str = torch.float16) -> dict[str, list[int]]:
    """Cache bytes per context length for MHA, GQA (``num_kv_heads``), MQA and MLA (``kv_lora_rank``) of one size.

    MLA caches its latent and, with ``rope_head_dim`` > 0, the decoupled rotary key next to it (DeepSeek-V2's
    ``qk_rope_head_dim``); its name says which. The keys are the designs' names as a figure's legend shows them
    (:func:`mha_chapters.i18n.figure_text`).
    """
    if num_heads % num_kv_heads:
        template = _("num_kv_heads={num_kv_heads} must divide num_heads={num_heads}")
        raise ValueError(template.format(num_kv_heads=num_kv_heads, num_heads=num_heads))
    mha, gqa, mqa, mla = _design_names(num_kv_heads, kv_lora_rank, figure_text, rope_head_dim)  # the legend
    kinds = {mha: num_heads, gqa: num_kv_heads, mqa: 1}
    curves = {name: [kv_cache_bytes(num_layers, kv, head_dim, n, batch_size, dtype) for n in context_lens]
              for name, kv in kinds.items()}
    curves[mla] = [mla_cache_bytes(num_layers, kv_lora_rank, n, batch_size, dtype, rope_head_dim) for n in context_lens]
    return curves


_GQA_NAME, _MLA_NAME = N_("GQA ({num_kv_heads} kv heads)"), N_("MLA (latent {kv_lora_rank})")
_MLA_ROPE_NAME = N_("MLA (latent {kv_lora_rank} + rotary {rope_head_dim})")


def _design_names(num_kv_heads: int, kv_lora_rank: int, translate: Callable[[str], str],
                  rope_head_dim: int = 0) -> tuple[str, ...]:
    """The names of MHA, GQA, MQA and MLA of these sizes, in the reader's language (``_`` or ``figure_text``).

    MLA's name says what its row counts: the latent alone, or the latent and the rotary key.
    """
    mla = (translate(_MLA_ROPE_NAME).format(kv_lora_rank=kv_lora_rank, rope_head_dim=rope_head_dim) if rope_head_dim
           else translate(_MLA_NAME).format(kv_lora_rank=kv_lora_rank))
    return "MHA", translate(_GQA_NAME).format(num_kv_heads=num_kv_heads), "MQA", mla


def plot_cache_bytes(context_lens: Sequence[int], curves: dict[str, list[int]], title: str = "",
                     references: Mapping[str, float] | None = None) -> Figure:
    """KV-cache GiB against context length, one line per design, computed from the formulas (nothing measured).

    ``references``: horizontal lines to compare with, a label and a number of bytes each (e.g. the weights).
    """
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    for (name, values), style in zip(curves.items(), ("-o", "-s", "-^", "-D"), strict=False):
        ax.plot(context_lens, [v / 2**30 for v in values], style, label=name, markersize=4)
    for label, nbytes in (references or {}).items():
        ax.axhline(nbytes / 2**30, color="0.4", linestyle="--", linewidth=1)
        ax.text(context_lens[0], nbytes / 2**30 * 1.15, label, fontsize="small", color="0.3")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    if references:  # room above the highest line for its label
        highest = max(*references.values(), *(max(values) for values in curves.values()))
        ax.set_ylim(top=2 * highest / 2**30)
    ax.set_xlabel(figure_text("context length (tokens)"))
    ax.set_ylabel(figure_text("KV cache (GiB, computed)"))
    ax.set_title(title or figure_text("KV-cache memory against context length"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    return fig


def memory_summary(*, num_layers: int, num_heads: int, num_kv_heads: int, head_dim: int, kv_lora_rank: int,
                   context_len: int, batch_size: int, dtype: str, rope_head_dim: int = 0) -> Table:
    """The calculator's numbers: bytes per token and in all, for MHA, GQA, MQA and MLA, as text and as HTML."""
    curves = cache_curves([1, context_len], num_layers=num_layers, num_heads=num_heads, num_kv_heads=num_kv_heads,
                          head_dim=head_dim, kv_lora_rank=kv_lora_rank, rope_head_dim=rope_head_dim, batch_size=1,
                          dtype=dtype)
    lines = [_("{num_layers} layers, {num_heads} query heads of {head_dim}, {context_len} tokens, batch {batch_size}, "
               "{dtype}").format(num_layers=num_layers, num_heads=num_heads, head_dim=head_dim, context_len=context_len,
                                 batch_size=batch_size, dtype=dtype)]
    names = _design_names(num_kv_heads, kv_lora_rank, _, rope_head_dim)  # printed: translated without a CJK font
    rows, width = [], max(display_width(name) for name in names) + 1
    for name, (per_token, _total) in zip(names, curves.values(), strict=True):
        total = per_token * context_len * batch_size
        lines.append(_("  {name} {per_token:>9,} bytes per token   {total:10.3f} GiB in all").format(
            name=name + " " * (max(22, width) - display_width(name)),  # CJK: 2 columns
            per_token=per_token, total=total / 2**30))
        rows.append((name, f"{per_token:,}", f"{total / 2**30:.3f} GiB"))
    return Table("\n".join(lines), [_("kind"), _("bytes per token"), _("in all")], rows, caption=lines[0])


def memory_calculator(**initial: int | str) -> widgets.VBox:
    """Sliders for the model's sizes; the figure and the numbers follow every change."""
    values = {"num_layers": 32, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128, "kv_lora_rank": 512,
              "rope_head_dim": 64, "context_len": 8192, "batch_size": 1, "dtype": "bfloat16"} | initial
    layout, style = widgets.Layout(width="360px"), {"description_width": "110px"}
    pow2 = [2**k for k in range(7, 18)]
    controls = {
        "num_layers": widgets.IntSlider(value=values["num_layers"], min=1, max=128, description=_("layers")),
        "num_heads": widgets.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128], value=values["num_heads"],
                                             description=_("query heads")),
        "num_kv_heads": widgets.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128], value=values["num_kv_heads"],
                                                description=_("kv heads (GQA)")),
        "head_dim": widgets.SelectionSlider(options=[32, 64, 96, 128, 192, 256], value=values["head_dim"],
                                            description=_("head size")),
        "kv_lora_rank": widgets.SelectionSlider(options=[64, 128, 256, 512, 1024], value=values["kv_lora_rank"],
                                                description=_("latent (MLA)")),
        "rope_head_dim": widgets.SelectionSlider(options=[0, 32, 64, 128], value=values["rope_head_dim"],
                                                 description=_("rotary key (MLA)")),
        "context_len": widgets.SelectionSlider(options=pow2, value=values["context_len"],
                                               description=_("context")),
        "batch_size": widgets.IntSlider(value=values["batch_size"], min=1, max=64, description=_("batch")),
        "dtype": widgets.Dropdown(options=list(DTYPES), value=values["dtype"], description="dtype"),
    }
    for control in controls.values():
        control.layout, control.style = layout, style
    numbers, figure = widgets.HTML(), widgets.HTML()

    def update(change: dict | None = None) -> None:
        sizes = {name: control.value for name, control in controls.items()}
        if sizes["num_heads"] % sizes["num_kv_heads"]:
            message = _("kv heads ({num_kv_heads}) must divide query heads ({num_heads})").format(
                num_kv_heads=sizes["num_kv_heads"], num_heads=sizes["num_heads"])
            numbers.value = f"<pre>{html.escape(message)}</pre>"
            return
        numbers.value = memory_summary(**sizes)._repr_html_()  # a table: columns that line up in any font
        lens = [n for n in pow2 if n <= max(pow2)]
        curves = cache_curves(lens, **{k: v for k, v in sizes.items() if k != "context_len"})
        figure.value = figure_to_svg(plot_cache_bytes(lens, curves))

    for control in controls.values():
        control.observe(update, names="value")
    update()
    return widgets.VBox([widgets.HBox([widgets.VBox(list(controls.values())), numbers]), figure])


# ---------------------------------------------------------------------------------------------------------------------
# Real models. Every number is a field of the model's public config.json (or its paper), named as it is there;
# head_dim is computed as hidden_size // num_attention_heads, as the models do.

MODELS: list[dict] = [
    {"model": "Llama 2 7B", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
     "num_key_value_heads": 32, "source": "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"},
    {"model": "Llama 2 70B", "num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
     "num_key_value_heads": 8, "source": "https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json"},
    {"model": "Llama 3 8B", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
     "num_key_value_heads": 8, "source": "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"},
    {"model": "Mistral 7B", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
     "num_key_value_heads": 8, "source": "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json"},
    # Falcon's config says multi_query: true, i.e. one key-value head.
    {"model": "Falcon 7B", "num_hidden_layers": 32, "hidden_size": 4544, "num_attention_heads": 71,
     "num_key_value_heads": 1, "source": "https://huggingface.co/tiiuae/falcon-7b/blob/main/config.json"},
    # MLA: the cache holds kv_lora_rank latent features plus one shared rotary key of qk_rope_head_dim per token.
    {"model": "DeepSeek-V3", "num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
     "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
     "source": "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json"},
]


def model_table(context_len: int = 4096, batch_size: int = 1, dtype: torch.dtype | str = torch.bfloat16
                ) -> list[tuple]:
    """One row per model in :data:`MODELS`: kind, sizes, cache bytes per token and GiB for ``context_len`` tokens."""
    rows = []
    for m in MODELS:
        layers, heads = m["num_hidden_layers"], m["num_attention_heads"]
        if "kv_lora_rank" in m:
            kind, kv = "MLA", _("latent {rank}+{rope}").format(rank=m["kv_lora_rank"], rope=m["qk_rope_head_dim"])
            per_token = mla_cache_bytes(layers, m["kv_lora_rank"], 1, 1, dtype, m["qk_rope_head_dim"])
        else:
            kv_heads = m["num_key_value_heads"]
            kind = "MHA" if kv_heads == heads else ("MQA" if kv_heads == 1 else "GQA")
            kv = kv_heads
            per_token = kv_cache_bytes(layers, kv_heads, m["hidden_size"] // heads, 1, 1, dtype)
        head_dim = m["hidden_size"] // heads if "kv_lora_rank" not in m else "-"
        rows.append((m["model"], kind, layers, heads, kv, head_dim, f"{per_token:,}",
                     f"{per_token * context_len * batch_size / 2**30:.2f}"))
    return rows
