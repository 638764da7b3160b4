"""The block diagram of the layer (mha_chapters.diagram) and the why-heads example (mha_chapters.why_heads)."""

import pytest
import torch
from matplotlib.figure import Figure

from mha_chapters.anatomy import count_parameters
from mha_chapters.diagram import HEAD_BOX, MAX_HEADS_DRAWN, draw_multi_head_attention, heads_drawn
from mha_chapters.why_heads import NEEDED, two_place_inputs, two_place_layer
from mha_lib import MultiHeadAttention, transpose_qkv


def texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [ax.get_title() for ax in fig.axes]


def head_boxes(fig: Figure) -> list:
    return [p for ax in fig.axes for p in ax.patches if p.get_gid() == HEAD_BOX]


def test_the_diagram_is_a_figure_labelled_with_the_shapes_the_layer_produces():
    fig = draw_multi_head_attention(2, 4, 6, 100, 5)
    assert isinstance(fig, Figure)
    words = "\n".join(texts(fig))
    mha = MultiHeadAttention(100, 100, 100, 100, 5)
    queries, keys = torch.randn(2, 4, 100), torch.randn(2, 6, 100)
    output = mha(queries, keys, keys)
    weights = mha.attention_weights  # (batch_size, num_heads, num_queries, num_kvpairs)
    shapes = [queries.shape, keys.shape, mha.W_q(queries).shape, transpose_qkv(mha.W_q(queries), 5).shape,
              transpose_qkv(mha.W_k(keys), 5).shape, weights[:, 0].shape, output.shape]
    for shape in shapes:  # the shapes of the real forward pass appear on the drawing
        assert str(tuple(shape)) in words, shape
    assert "(2, 4, 20)" in words  # one head's output: (batch_size, num_queries, head_dim)
    for expected in ("W_q", "W_k", "W_v", "W_o", "concatenate", "h = 5", "√{20}"):
        assert expected in words


def test_the_diagram_uses_the_input_sizes_when_they_differ_from_num_hiddens():
    words = "\n".join(texts(draw_multi_head_attention(3, 2, 5, 40, 4, query_size=12, key_size=16, value_size=24)))
    for shape in ("(3, 2, 12)", "(3, 5, 16)", "(3, 5, 24)", "(3, 2, 40)", "(12, 2, 10)", "(3, 2, 5)"):
        assert shape in words


@pytest.mark.parametrize("num_heads", [1, 2, 3, MAX_HEADS_DRAWN])
def test_one_attention_box_per_head_for_few_heads(num_heads):
    fig = draw_multi_head_attention(1, 3, 3, 12 * num_heads, num_heads)
    assert len(head_boxes(fig)) == num_heads
    words = "\n".join(texts(fig))
    assert all(f"head {i}\n" in words for i in range(num_heads)) and "…" not in [t for t in texts(fig)]


@pytest.mark.parametrize("num_heads", [MAX_HEADS_DRAWN + 1, 8, 96])
def test_many_heads_are_drawn_as_the_first_two_an_ellipsis_and_the_last(num_heads):
    fig = draw_multi_head_attention(1, 3, 3, 2 * num_heads, num_heads)
    assert len(head_boxes(fig)) == 3
    words = texts(fig)
    assert "…" in words and any(w.startswith(f"head {num_heads - 1}\n") for w in words)
    assert not any(w.startswith("head 2\n") for w in words)
    assert heads_drawn(num_heads) == [0, 1, None, num_heads - 1]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"num_heads": 3}, ValueError, "num_heads=3 must divide num_hiddens=100"),
    ({"num_heads": 0}, ValueError, "num_heads must be a positive int, got 0"),
    ({"batch_size": 2.0}, TypeError, "batch_size must be a positive int, got 2.0"),
    ({"num_kvpairs": -1}, ValueError, "num_kvpairs must be a positive int, got -1"),
    ({"query_size": True}, TypeError, "query_size must be a positive int, got True"),
])
def test_the_diagram_rejects_bad_sizes_naming_the_argument(kwargs, error, message):
    sizes = {"batch_size": 2, "num_queries": 4, "num_kvpairs": 6, "num_hiddens": 100, "num_heads": 5} | kwargs
    with pytest.raises(error, match=message):
        draw_multi_head_attention(**sizes)


def test_one_head_must_blend_the_two_positions_it_needs():
    layer = two_place_layer(1)
    output = layer(*two_place_inputs())
    weights = layer.attention_weights[0, 0, 0]
    assert weights[list(NEEDED)].tolist() == pytest.approx([0.4967, 0.4967], abs=1e-4)
    torch.testing.assert_close(output[0, 0, :2], output[0, 0, 2:])  # both halves hold the same blend
    torch.testing.assert_close(output.detach(), torch.full((1, 1, 4), 3.98), atol=0.01, rtol=0)


def test_two_heads_each_pick_one_position_and_recover_both_values():
    layer = two_place_layer(2)
    queries, keys, values = two_place_inputs()
    output = layer(queries, keys, values)
    weights = layer.attention_weights[0, :, 0]  # (num_heads, num_kvpairs)
    assert weights[0, NEEDED[0]] >= 0.99 and weights[1, NEEDED[1]] >= 0.99
    expected = torch.cat([values[0, NEEDED[0], :2], values[0, NEEDED[1], :2]])  # (8, 0) next to (0, 8)
    torch.testing.assert_close(output[0, 0].detach(), expected, atol=0.03, rtol=0)


def test_both_readings_are_the_same_parameters():
    one, two = two_place_layer(1), two_place_layer(2)
    assert count_parameters(one) == count_parameters(two) == 4 * 4**2
    for a, b in zip(one.parameters(), two.parameters(), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("bad", [0, 3, 4, True, 2.0])
def test_the_example_has_one_or_two_heads(bad):
    with pytest.raises(ValueError, match="num_heads must be 1 or 2"):
        two_place_layer(bad)
