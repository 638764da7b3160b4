"""The helpers chapters 00-04 gained in their third edition: why-heads figures, the fold figure, printed source."""

import pytest
import torch
from matplotlib.figure import Figure

from mha_chapters.fold_figure import draw_fold_steps, fold_steps
from mha_chapters.source import source_with_helpers
from mha_chapters.why_heads import two_place_inputs, two_place_layer
from mha_chapters.why_heads_figures import draw_head_weights
from mha_lib import transpose_qkv

X = torch.stack([torch.arange(10, 18).reshape(2, 4), torch.arange(20, 28).reshape(2, 4)])


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_fold_steps_end_in_transpose_qkv(num_heads):
    steps = fold_steps(X, num_heads)
    assert [code for code, _ in steps][2] == "X.permute(0, 2, 1, 3)"
    assert steps[1][1].shape == (2, 2, num_heads, 4 // num_heads)
    assert torch.equal(steps[-1][1], transpose_qkv(X, num_heads))


def test_fold_steps_rejects_bad_input():
    with pytest.raises(ValueError, match="num_heads"):
        fold_steps(X, 3)
    with pytest.raises(ValueError, match="X must be"):
        fold_steps(X[0], 2)


def test_draw_fold_steps_writes_every_number_in_every_panel():
    fig = draw_fold_steps(X, 2)
    assert isinstance(fig, Figure) and len(fig.axes) == 4
    for ax in fig.axes:
        written = sorted(int(text.get_text()) for text in ax.texts)
        assert written == list(range(10, 18)) + list(range(20, 28))
        assert sum(not patch.get_fill() for patch in ax.patches) == 2  # one outline per sentence


def test_head_weights_figure_shows_the_layers_weights():
    queries, keys, values = two_place_inputs()
    one, two = two_place_layer(1), two_place_layer(2)
    one(queries, keys, values)
    two(queries, keys, values)
    fig = draw_head_weights(one.attention_weights[0, 0, 0], two.attention_weights[0, :, 0])
    heights = [[bar.get_height() for bar in ax.patches] for ax in fig.axes]
    torch.testing.assert_close(torch.tensor(heights[1:], dtype=torch.float64),
                               two.attention_weights[0, :, 0].double())
    assert max(heights[0]) < 0.5 and min(max(h) for h in heights[1:]) > 0.9


def test_head_weights_figure_checks_its_input():
    with pytest.raises(TypeError, match="one_head"):
        draw_head_weights([0.5, 0.5], torch.zeros(2, 2))
    with pytest.raises(ValueError, match="two_heads"):
        draw_head_weights(torch.zeros(4), torch.zeros(3, 4))
    with pytest.raises(ValueError, match="same positions"):
        draw_head_weights(torch.zeros(4), torch.zeros(2, 3))


def test_source_with_helpers_follows_calls_into_the_same_module():
    source = source_with_helpers(transpose_qkv)
    assert source.startswith("def transpose_qkv(")
    # the code that really moves the numbers, wherever it lives: the head split every layer uses, then the fold
    assert "def split_heads(" in source and ".permute(0, 2, 1, 3)" in source and "def fold_heads(" in source
    assert "def require_" not in source  # argument checks from another module are not printed
    with pytest.raises(TypeError, match="function"):
        source_with_helpers(len)
