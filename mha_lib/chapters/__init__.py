"""The chapters' helpers: drawings, traces, widgets and experiments that the notebooks call.

They build on the canonical implementation one level up (``mha_lib.masks``, ``mha_lib.functional``,
``mha_lib.modules``) and add nothing to it. One module per chapter, plus a table formatter:

    why_heads 00, 04  one query that needs two positions: one head blends them, two heads pick one each
    diagram   00, 04  the block diagram of the layer, labelled with the shapes of the sizes given
    layout    01  drawings of how a tensor's elements sit in memory
    scaling   02  the 1/sqrt(d) measurement and the softmax saturation it prevents
    trace     03  transpose_qkv and transpose_output one step at a time
    anatomy   04  the whole layer's shape trace, parameter and FLOP counts
    explorer  05  the interactive explorer (sliders for heads and hidden size)
    toy       06  a toy task and model, trained in seconds, to see what heads learn
    batching  07  loops against batches, what a CPU core offers, CPU against GPU (harness: mha_lib._bench)
    tables    aligned plain-text tables
"""
