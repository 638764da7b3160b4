import pytest
import torch
from matplotlib.figure import Figure

from mha_chapters.trace import (
    Step,
    draw_transpose_qkv,
    shape_table,
    trace_transpose_output,
    trace_transpose_qkv,
)
from mha_lib import set_language, transpose_output, transpose_qkv

# The 10..27 example of chapter 03: 2 sentences, 2 tokens, 4 features, 2 heads.
X = torch.tensor([[[10, 11, 12, 13], [14, 15, 16, 17]],
                  [[20, 21, 22, 23], [24, 25, 26, 27]]])
X_RESHAPED = torch.tensor([[[[10, 11], [12, 13]], [[14, 15], [16, 17]]],
                           [[[20, 21], [22, 23]], [[24, 25], [26, 27]]]])
X_PERMUTED = torch.tensor([[[[10, 11], [14, 15]], [[12, 13], [16, 17]]],
                           [[[20, 21], [24, 25]], [[22, 23], [26, 27]]]])
X_FINAL = torch.tensor([[[10, 11], [14, 15]], [[12, 13], [16, 17]],
                        [[20, 21], [24, 25]], [[22, 23], [26, 27]]])

SHAPES = [(2, 2, 4, 2), (2, 10, 100, 5), (1, 3, 6, 3), (3, 1, 8, 1), (2, 5, 8, 8)]


def test_trace_transpose_qkv_matches_the_hand_worked_steps():
    steps = trace_transpose_qkv(X, num_heads=2)
    assert [step.code for step in steps] == [
        "X", "X.reshape(2, 2, 2, 2)", "X.permute(0, 2, 1, 3)", "X.reshape(4, 2, 2)"]
    for step, expected in zip(steps, (X, X_RESHAPED, X_PERMUTED, X_FINAL), strict=True):
        assert torch.equal(step.output, expected), step.name


def test_trace_transpose_output_walks_the_steps_backwards():
    steps = trace_transpose_output(X_FINAL, num_heads=2)
    assert [step.code for step in steps] == [
        "X", "X.reshape(2, 2, 2, 2)", "X.permute(0, 2, 1, 3)", "X.reshape(2, 2, 4)"]
    for step, expected in zip(steps, (X_FINAL, X_PERMUTED, X_RESHAPED, X), strict=True):
        assert torch.equal(step.output, expected), step.name


@pytest.mark.parametrize(("batch_size", "seq_len", "num_hiddens", "num_heads"), SHAPES)
def test_traces_end_where_the_library_functions_end(batch_size, seq_len, num_hiddens, num_heads):
    X = torch.randn(batch_size, seq_len, num_hiddens)
    forward = trace_transpose_qkv(X, num_heads)
    assert torch.equal(forward[-1].output, transpose_qkv(X, num_heads))
    backward = trace_transpose_output(forward[-1].output, num_heads)
    assert torch.equal(backward[-1].output, transpose_output(forward[-1].output, num_heads))
    assert torch.equal(backward[-1].output, X)
    head_dim = num_hiddens // num_heads
    assert [step.shape for step in forward] == [
        (batch_size, seq_len, num_hiddens),
        (batch_size, seq_len, num_heads, head_dim),
        (batch_size, num_heads, seq_len, head_dim),
        (batch_size * num_heads, seq_len, head_dim),
    ]


@pytest.mark.parametrize("trace", [trace_transpose_qkv, trace_transpose_output])
def test_each_step_code_run_on_the_previous_output_gives_the_step(trace):
    steps = trace(torch.arange(2 * 3 * 6).reshape(2, 3, 6), 2)
    for previous, step in zip(steps[:-1], steps[1:], strict=True):
        assert torch.equal(eval(step.code, {"X": previous.output}), step.output), step.code


def test_folded_index_is_sentence_times_num_heads_plus_head():
    X = torch.arange(3 * 4 * 12).reshape(3, 4, 12)
    folded = trace_transpose_qkv(X, 3)[-1].output
    for b in range(3):
        for h in range(3):
            assert torch.equal(folded[b * 3 + h], X[b, :, h * 4:(h + 1) * 4])


def test_shape_table_lays_out_the_chosen_columns():
    table = shape_table(trace_transpose_qkv(X, 2), columns=("step", "shape"))
    assert table.splitlines() == [
        "step                       shape",
        "-------------------------  ------------",
        "input                      (2, 2, 4)",
        "split features into heads  (2, 2, 2, 2)",
        "move heads before tokens   (2, 2, 2, 2)",
        "fold heads into the batch  (4, 2, 2)",
    ]
    full = shape_table([Step("input", "X", X, "(batch, seq, num_hiddens)")]).splitlines()
    assert full[0].split() == ["step", "code", "shape", "axes"]
    assert full[2] == "input  X     (2, 2, 4)  (batch, seq, num_hiddens)"


def test_shape_table_names_the_steps_and_the_axes_in_the_readers_language():
    set_language("zh_CN")
    try:
        lines = shape_table(trace_transpose_output(transpose_qkv(X, 2), 2)).splitlines()
    finally:
        set_language("en")
    assert lines[2].split() == ["输入", "X", "(4,", "2,", "2)", "(批量*头,", "序列,", "head_dim)"]
    assert lines[-1].split()[0] == "拼接各个头" and lines[-1].endswith("(批量, 序列, num_hiddens)")


@pytest.mark.parametrize("columns", [(), ("step", "size")])
def test_shape_table_rejects_unknown_columns(columns):
    with pytest.raises(ValueError, match=r"columns must be chosen from \('step', 'code', 'shape', 'axes'\)"):
        shape_table(trace_transpose_qkv(X, 2), columns=columns)


@pytest.mark.parametrize("trace", [trace_transpose_qkv, trace_transpose_output])
def test_traces_reject_bad_input(trace):
    with pytest.raises(TypeError, match="X must be a torch.Tensor .* got list"):
        trace([[1, 2], [3, 4]], 2)
    with pytest.raises(ValueError, match=r"X must be a 3-D tensor .* got shape \(2, 4\)"):
        trace(torch.ones(2, 4), 2)
    with pytest.raises(ValueError, match="num_heads must be a positive int, got 0"):
        trace(torch.ones(2, 2, 4), 0)
    with pytest.raises(ValueError, match="num_heads=3"):
        trace(torch.ones(2, 2, 4), 3)


def test_draw_transpose_qkv_writes_every_number_in_both_panels():
    fig = draw_transpose_qkv(X, 2)
    assert isinstance(fig, Figure)
    before, after = fig.axes
    assert before.get_title() == "before: X\nshape (2, 2, 4)"
    assert after.get_title() == "after: transpose_qkv(X, 2)\nshape (4, 2, 2)"
    assert fig.get_suptitle()
    for ax in (before, after):
        assert ax.get_xlabel() and ax.get_ylabel()
    numbers = [[int(t.get_text()) for t in ax.texts if t.get_text().isdigit()] for ax in (before, after)]
    assert numbers == [X.flatten().tolist(), X_FINAL.flatten().tolist()]
    # Colours = heads: before, features 0-1 are head 0 and 2-3 head 1; after, samples alternate heads.
    assert before.images[0].get_array().tolist() == [[0, 0, 1, 1]] * 4
    assert after.images[0].get_array().tolist() == [[0, 0], [0, 0], [1, 1], [1, 1]] * 2
    labels = [t.get_text() for t in after.texts if t.get_text().startswith("sample")]
    assert labels[1] == "sample 1 = sentence 0, head 1"
    assert [text.get_text() for text in fig.legends[0].get_texts()] == ["head 0", "head 1"]


def test_draw_transpose_qkv_checks_its_input():
    with pytest.raises(ValueError, match="num_heads=3"):
        draw_transpose_qkv(X, 3)
