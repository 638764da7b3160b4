"""mha_chapters: what the chapters of mha-notebooks need beyond the library: helpers, figures, widgets,
experiments, the self-checking exercises, the benchmark harness and the chapters' language.

It builds on the canonical implementation, the package ``mha_lib`` (which never imports this one), and adds
nothing to it. One module (or two) per chapter, then the packages and modules that several chapters share:

    why_heads 00, 04  one query that needs two positions: one head blends them, two heads pick one each
    why_heads_figures 00, 04  its attention weights as bars, and the two-line bound on one head drawn
    diagram   00, 04  the block diagram of the layer, labelled with the shapes of the sizes given
    layout    01  drawings of how a tensor's elements sit in memory
    scaling   02  the 1/sqrt(d) measurement and the softmax saturation it prevents
    trace     03  transpose_qkv and transpose_output one step at a time
    fold_figure 03  the four-panel picture of transpose_qkv: X -> reshape -> permute -> fold
    source    03  a library function's own source with the helpers it calls, for printing
    anatomy   04  the whole layer's shape trace, parameter and FLOP counts
    explorer  05  the interactive explorer (sliders for heads and hidden size)
    toy       06  a toy task and model, trained in seconds, to see what heads learn
    batching  07  loops against batches, what a CPU core offers, CPU against GPU (harness: bench)
    kv_cache  09  the KV-cache memory calculator, real models' cache sizes, the FLOPs of one decoding step
              (the cache, generate and MLA themselves are the library's: mha_lib.kv_cache, mha_lib.latent)
    generation 09  a small decoder with random weights, timed with and without the cache
    tiled     10  online softmax and tiled (flash-style) attention, its memory and a tile figure
    flex      11  two more masks, the dense-versus-block picture of a mask, the recorded timings
    induction 13  a repeated-span task, an attention-only model, the scores and ablations of induction heads
    tables    aligned plain-text tables
    plotting  show_heatmaps, d2l's heatmap grid of attention weights
    i18n      the language: tr for a code cell's printed text, figure_text for a figure's, set_language
    exercises the self-checking exercises, one module per chapter, and the engine that grades them
    bench     the benchmark harness of chapter 07 and benchmarks/ (timing, recorded results, sweeps)
"""

from .i18n import _, figure_text, get_language, set_language, tr

__all__ = ["figure_text", "get_language", "set_language", "show_heatmaps", "tr"]


def __getattr__(name: str) -> object:
    """``show_heatmaps``, imported on first use (PEP 562): the benchmark harness and its recorders import this
    package on machines without matplotlib, such as a GPU machine that carries only PyTorch."""
    if name == "show_heatmaps":
        from .plotting import show_heatmaps

        return show_heatmaps
    raise AttributeError(_("module {module!r} has no attribute {name!r}").format(module=__name__, name=name))
