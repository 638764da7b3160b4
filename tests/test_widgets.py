import gc
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib import colormaps
from matplotlib.figure import Figure

from mha_lib import MultiHeadAttention
from mha_lib.chapters.anatomy import count_parameters
from mha_lib.chapters.explorer import (
    CMAP,
    ExplorerConfig,
    cost_sweep,
    costs_html,
    divisors,
    explore,
    explorer,
    figure_to_svg,
    format_costs,
    head_images,
    mha_costs,
    nearest_divisor,
    plot_head_weights,
    plot_scaling,
    render_explorer,
    scaling_explorer,
    scaling_summary,
    score_samples,
    trace_html,
)
from mha_lib.chapters.scaling import measure_score_variance, measure_softmax_saturation

ZERO_COLOUR = tuple(int(round(255 * c)) for c in colormaps[CMAP](0.0))  # RGBA of weight 0


# divisors and the head slider


def test_divisors():
    assert divisors(1) == [1]
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36]


@pytest.mark.parametrize(("n", "value", "expected"), [
    (32, 4, 4),  # still divides: kept
    (36, 8, 9),  # 9 is nearer than 6
    (20, 3, 2),  # 2 and 4 are equally near: the smaller
    (28, 16, 14),
])
def test_nearest_divisor(n, value, expected):
    assert nearest_divisor(n, value) == expected


# costs


def test_flops_and_parameters_do_not_depend_on_num_heads_but_score_memory_does():
    costs = [mha_costs(2, 6, 8, 64, h) for h in (1, 2, 4, 8, 16)]
    assert {c.parameters for c in costs} == {4 * 64**2}
    assert len({c.flops["total"] for c in costs}) == 1
    assert [c.head_dim for c in costs] == [64, 32, 16, 8, 4]
    assert [c.score_bytes for c in costs] == [2 * h * 6 * 8 * 4 for h in (1, 2, 4, 8, 16)]
    assert mha_costs(2, 6, 8, 64, 4, bias=True).parameters == 4 * 64**2 + 4 * 64


def test_score_memory_is_the_size_of_the_traced_score_tensor():
    result = explore(ExplorerConfig(num_hiddens=24, num_heads=3, batch_size=2, num_queries=5, num_kvpairs=7,
                                    valid_len=7))
    scores = next(row.tensor for row in result.trace if row.step == "2 score, 3 softmax")
    assert mha_costs(2, 5, 7, 24, 3).score_bytes == scores.nelement() * scores.element_size() == 840
    assert mha_costs(2, 5, 7, 24, 3, dtype=torch.float16).score_bytes == 420


def test_format_costs_and_cost_sweep():
    text = format_costs(mha_costs(2, 6, 8, 32, 4))
    assert "4·d² = 4·32²" in text and "4,096" in text and "1,536" in text
    sweep = cost_sweep(64, [1, 16], 2, 6, 8)
    lines = sweep.splitlines()
    assert lines[0].split() == ["num_heads", "head_dim", "parameters", "FLOPs", "score", "bytes"]
    assert lines[2].split() == ["1", "64", "16,384", "483,328", "384"]
    assert lines[3].split() == ["16", "4", "16,384", "483,328", "6,144"]


# one state of the explorer


def test_explore_weights_are_the_layers_and_respect_both_masks():
    config = ExplorerConfig(num_hiddens=32, num_heads=4, batch_size=2, num_queries=6, num_kvpairs=8, valid_len=5,
                            causal=True)
    result = explore(config)
    assert result.weights.shape == (2, 4, 6, 8)
    assert torch.all(result.weights[..., 5:] == 0)  # padding
    assert torch.all(result.weights.triu(diagonal=1) == 0)  # the future
    softmax = next(row.tensor for row in result.trace if row.step == "2 score, 3 softmax")
    torch.testing.assert_close(softmax.reshape(2, 4, 6, 8), result.weights)
    assert result.costs.parameters == 4 * 32**2


def test_explore_is_seeded_and_leaves_the_global_generator_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a, b = explore(ExplorerConfig()), explore(ExplorerConfig())
    assert torch.equal(a.weights, b.weights)
    assert torch.equal(torch.get_rng_state(), before)
    assert not torch.equal(explore(ExplorerConfig(seed=1)).weights, a.weights)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"num_heads": 5}, ValueError,
     "num_heads=5 must divide num_hiddens=32 evenly, .* the divisors of 32 are [1, 2, 4, 8, 16, 32]"),
    ({"valid_len": 9}, ValueError, "valid_len must be an int in [0, num_kvpairs=8], got 9"),
    ({"batch_size": 0}, ValueError, "batch_size must be a positive int, got 0"),
    ({"causal": 1}, TypeError, "causal must be True or False, got 1"),
])
def test_explorer_config_rejects_bad_values(kwargs, error, message):
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        ExplorerConfig(**kwargs)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="n must be a positive int, got 0"):
        divisors(0)
    with pytest.raises(TypeError, match="costs must be a Costs, got dict"):
        format_costs({})
    with pytest.raises(TypeError, match="rows must be TraceRows"):
        trace_html([("input", "queries", (1, 2, 3))])
    with pytest.raises(ValueError, match=r"weights must be a 3-D tensor \(num_heads, num_queries, num_kvpairs\)"):
        plot_head_weights(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="svg holds no"):
        head_images("<svg></svg>")
    with pytest.raises(ValueError, match="d must be one of dims"):
        scaling_explorer(d=3)


# HTML and figures


def test_trace_html_has_one_row_per_step_with_the_shapes():
    result = explore(ExplorerConfig())
    text = trace_html(result.trace)
    assert text.count("<tr>") == len(result.trace) + 1 and text.count("<thead>") == 1
    assert "(8, 6, 8)" in text and "(8, 8, 8)" in text  # split heads: (batch_size*num_heads, n, head_dim)
    assert "valid_lens -&gt; mask" in text and "mask, repeated per head" in text  # escaped


def test_costs_html_shows_the_same_numbers_as_the_text_table():
    costs = mha_costs(2, 6, 8, 32, 4)
    text = costs_html(costs)
    for value in ("4,096", "126,976", "1,536"):
        assert value in text and value in format_costs(costs)


@pytest.mark.parametrize(("num_heads", "rows", "cols"), [(1, 1, 1), (4, 1, 4), (6, 2, 4), (16, 2, 8)])
def test_plot_head_weights_grid(num_heads, rows, cols):
    weights = torch.rand(num_heads, 3, 5)
    fig = plot_head_weights(weights)
    assert isinstance(fig, Figure)
    heads = [ax for ax in fig.axes if (ax.get_gid() or "").startswith("head-")]
    assert [ax.get_gid() for ax in heads] == [f"head-{h}" for h in range(num_heads)]
    assert len(fig.axes) == num_heads + 1  # and a colour bar
    assert len({round(ax.get_position().x0, 6) for ax in heads}) == cols
    assert len({round(ax.get_position().y0, 6) for ax in heads}) == rows
    assert fig.get_figwidth() <= 11
    corner = heads[(rows - 1) * cols]  # bottom left: the only panel with labels and tick numbers
    assert (corner.get_xlabel(), corner.get_ylabel()) == ("keys", "queries")
    others = [ax for ax in heads if ax is not corner]
    assert all(ax.get_xlabel() == ax.get_ylabel() == "" and not ax.get_xticks().size for ax in others)
    for h, ax in enumerate(heads):
        image = ax.get_images()[0]
        assert image.get_clim() == (0, 1) and image.get_cmap().name == CMAP
        np.testing.assert_array_equal(image.get_array(), weights[h].numpy())


def test_svg_has_one_group_and_one_image_per_head_and_pixels_are_whole_cells():
    config = ExplorerConfig(num_heads=8, num_queries=6, num_kvpairs=8, valid_len=5, causal=True)
    svg = render_explorer(config)["heatmaps"]
    assert svg.startswith("<svg ") and "<?xml" not in svg and "DOCTYPE" not in svg
    assert svg.count('<g id="head-') == 8
    images = head_images(svg)
    assert sorted(images) == list(range(8))
    weights = explore(config).weights[0]
    for head, pixels in images.items():
        height, width = pixels.shape[:2]
        assert height % 6 == 0 and width % 8 == 0 and height // 6 == width // 8  # square cells, whole pixels
        cell = height // 6
        cells = pixels[cell // 2::cell, cell // 2::cell]  # the centre pixel of every cell, (6, 8, 4)
        blocks = pixels.reshape(6, cell, 8, cell, 4)
        assert np.all(blocks == cells[:, None, :, None, :])  # every pixel of a cell has the cell's colour
        masked = ~(torch.ones(6, 8).tril().bool() & (torch.arange(8) < 5))
        assert np.all(cells[masked.numpy()] == ZERO_COLOUR)
        assert torch.equal(masked, weights[head] == 0)  # and nothing else is exactly 0
        expected = (colormaps[CMAP](weights[head].numpy()) * 255).round().astype(np.uint8)
        assert np.abs(cells.astype(int) - expected.astype(int)).max() <= 1


def test_figure_to_svg_is_reproducible():
    weights = torch.rand(2, 3, 4)
    assert figure_to_svg(plot_head_weights(weights)) == figure_to_svg(plot_head_weights(weights))


# the widgets, driven without a browser


def test_explorer_widget_structure():
    box = explorer()
    assert "mha-explorer" in box._dom_classes
    names = ["num_hiddens", "num_heads", "batch_size", "num_queries", "num_kvpairs", "valid_len", "causal"]
    assert list(box.controls) == names
    for name, control in box.controls.items():
        assert control.description == name and f"mha-control-{name}" in control._dom_classes
    assert type(box.controls["num_heads"]).__name__ == "SelectionSlider"
    assert type(box.controls["causal"]).__name__ == "Checkbox"
    assert list(box.controls["num_heads"].options) == [1, 2, 4, 8, 16, 32]
    assert "mha-trace" in box.trace._dom_classes and "mha-costs" in box.costs._dom_classes
    assert "mha-heatmaps" in box.heatmaps._dom_classes


def test_changing_num_heads_updates_trace_costs_and_heatmaps_in_place():
    box = explorer()
    children = list(box.children)
    assert box.heatmaps.value.count('<g id="head-') == 4 and "(8, 6, 8)" in box.trace.value
    box.controls["num_heads"].value = 8
    assert box.heatmaps.value.count('<g id="head-') == 8
    assert "(16, 6, 4)" in box.trace.value and "(8, 6, 8)" not in box.trace.value
    assert "d/h = 32/8" in box.costs.value and "4,096" in box.costs.value
    assert list(box.children) == children  # rewritten in place, nothing appended


def test_toggling_causal_zeroes_the_upper_triangle_in_every_head():
    box = explorer(valid_len=8)
    upper = torch.ones(6, 8).triu(diagonal=1).bool().numpy()

    def cells(pixels):
        cell = pixels.shape[0] // 6
        return pixels[cell // 2::cell, cell // 2::cell]  # the centre pixel of every cell

    before = head_images(box.heatmaps.value)
    assert all((cells(pixels)[upper] != ZERO_COLOUR).any(axis=-1).sum() > 10 for pixels in before.values())
    box.controls["causal"].value = True
    assert "valid_lens &amp; causal -&gt; mask" in box.trace.value
    after = head_images(box.heatmaps.value)
    assert sorted(after) == [0, 1, 2, 3]
    for pixels in after.values():
        assert np.all(cells(pixels)[upper] == ZERO_COLOUR)


def test_num_hiddens_changes_the_head_options_and_keeps_or_moves_the_value():
    box = explorer()
    heads = box.controls["num_heads"]
    box.controls["num_hiddens"].value = 48
    assert list(heads.options) == divisors(48) and heads.value == 4  # 4 still divides
    heads.value = 16
    box.controls["num_hiddens"].value = 36
    assert list(heads.options) == divisors(36) and heads.value == 18  # the nearest divisor of 36
    assert box.heatmaps.value.count('<g id="head-') == 18 and "d/h = 36/18" in box.costs.value


def test_valid_len_follows_num_kvpairs():
    box = explorer()
    valid_len = box.controls["valid_len"]
    box.controls["num_kvpairs"].value = 3
    assert valid_len.max == 3 and valid_len.value == 3
    assert "(2, 3, 32)" in box.trace.value
    box.controls["num_kvpairs"].value = 12
    assert valid_len.max == 12 and valid_len.value == 3
    images = head_images(box.heatmaps.value)
    cell = images[0].shape[1] // 12
    assert np.all(images[0][:, 3 * cell:] == ZERO_COLOUR)


def test_one_change_means_one_update():
    box = explorer()
    calls = []
    original = box.update
    box.update = lambda: (calls.append(1), original())
    box.controls["num_hiddens"].value = 36
    box.controls["num_kvpairs"].value = 2
    assert len(calls) == 2


def test_repeated_updates_keep_no_figures_and_do_not_grow_memory():
    box = explorer()
    heads = box.controls["num_heads"]
    for value in (2, 8, 4) * 2:  # warm up caches (fonts, colormaps)
        heads.value = value
    gc.collect()
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()
    for value in (2, 8, 4) * 5:
        heads.value = value
    gc.collect()
    end, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert plt.get_fignums() == []
    assert not [obj for obj in gc.get_objects() if type(obj) is Figure]
    assert end - start < 1_000_000, f"memory grew by {end - start} bytes over 15 updates"


# the sqrt(d) widget


def test_score_samples_are_seeded_and_scaled():
    unscaled, scaled = score_samples(16, num_samples=500, seed=3)
    assert unscaled.shape == scaled.shape == (500,)
    torch.testing.assert_close(scaled, unscaled / 4)
    assert torch.equal(unscaled, score_samples(16, num_samples=500, seed=3)[0])


def test_scaling_summary_and_figure():
    dims = [4, 64]
    variance, saturation = measure_score_variance(dims, num_samples=2000), measure_softmax_saturation(dims)
    lines = scaling_summary(64, variance, saturation).splitlines()
    assert lines[0].split()[:3] == ["d", "=", "64"]
    assert lines[2].startswith("variance of the scores") and len(lines) == 5
    assert f"{variance.unscaled[1].item():.2f}" in lines[2]
    fig = plot_scaling(64, variance, saturation)
    left, right = fig.axes
    assert left.get_title() == "Scores of random q, k with d = 64" and right.get_xlabel() == "keys"
    assert len(right.patches) == 2 * saturation.num_kvpairs
    with pytest.raises(ValueError, match="d=8 was not measured"):
        plot_scaling(8, variance, saturation)


def test_scaling_explorer_redraws_when_d_changes():
    box = scaling_explorer(d=4, dims=[4, 256])
    slider, numbers, figure = box.children
    assert "mha-scaling" in box._dom_classes and slider.description == "d"
    before = (numbers.value, figure.value)
    assert "d = 4" in numbers.value
    slider.value = 256
    assert "d = 256" in numbers.value and figure.value != before[1]
    assert "d = 256" in figure.value


def test_count_parameters_matches_the_costs_of_a_real_layer():
    layer = MultiHeadAttention(24, 24, 24, 24, 6, bias=True)
    assert count_parameters(layer) == mha_costs(1, 1, 1, 24, 6, bias=True).parameters
