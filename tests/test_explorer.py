"""Chapter 05's explorer: sizes and costs, its inputs, the heatmap SVG and the widgets, driven without a browser."""

import base64
import gc
import io
import json
import re
import tracemalloc
import xml.etree.ElementTree as ET
from importlib.resources import files

import matplotlib.figure
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib import colormaps
from matplotlib.figure import Figure
from PIL import Image

from mha_chapters.anatomy import count_parameters
from mha_chapters.explorer import (
    CMAP,
    INPUT_STD,
    KEYS,
    MASKED_RGB,
    QUERIES,
    ExplorerConfig,
    cost_sweep,
    costs_html,
    divisors,
    explore,
    explorer,
    explorer_inputs,
    figure_to_svg,
    format_costs,
    heatmaps_svg,
    mha_costs,
    nearest_divisor,
    plot_scaling,
    render_explorer,
    scaling_explorer,
    scaling_summary,
    score_samples,
    sequence_inputs,
    trace_html,
    weight_colours,
)
from mha_chapters.scaling import measure_score_variance, measure_softmax_saturation
from mha_lib import MultiHeadAttention

ZERO_COLOUR = tuple(int(round(255 * c)) for c in colormaps[CMAP](0.0))  # RGBA of weight 0
MASKED_COLOUR = (*MASKED_RGB, 255)  # RGBA of a masked key


def head_images(svg: str) -> dict[int, np.ndarray]:
    """Decode every head's heatmap from an SVG of ``heatmaps_svg``: head number -> RGBA pixels, row i = query i.

    Shape:
        - each value: ``(height, width, 4)``, uint8
    """
    pattern = re.compile(r'<g id="head-(\d+)">.*?<image\b[^>]*?href="data:image/png;base64,([^"]+)"', re.S)
    images = {int(head): np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGBA"))
              for head, data in pattern.findall(svg)}
    assert images, "the SVG holds no <g id=\"head-N\"> group with a PNG image"
    return images


def cell_colours(pixels: np.ndarray, num_queries: int, num_kvpairs: int) -> np.ndarray:
    """The centre pixel of every query-key cell of one head's image, shape (num_queries, num_kvpairs, 4)."""
    cell = pixels.shape[0] // num_queries
    return pixels[cell // 2::cell, cell // 2::cell]


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


def test_format_costs_and_cost_sweep():
    text = format_costs(mha_costs(2, 6, 8, 32, 4))
    assert "4·d² = 4·32²" in text and "4,096" in text and "1,536" in text
    sweep = cost_sweep(64, [1, 16], 2, 6, 8)
    lines = sweep.splitlines()
    assert lines[0].split() == ["num_heads", "head_dim", "parameters", "FLOPs", "score", "bytes"]
    assert lines[2].split() == ["1", "64", "16,384", "483,328", "384"]
    assert lines[3].split() == ["16", "4", "16,384", "483,328", "6,144"]


# one state of the explorer


def reference_weights(config: ExplorerConfig) -> torch.Tensor:
    """The explorer's weights recomputed by hand from its layer and inputs: (batch, heads, queries, keys)."""
    c = config
    torch.manual_seed(c.seed)
    layer = MultiHeadAttention(c.num_hiddens, c.num_hiddens, c.num_hiddens, c.num_hiddens, c.num_heads)
    queries, keys = explorer_inputs(c)
    head_dim = c.num_hiddens // c.num_heads
    with torch.no_grad():
        q = layer.W_q(queries).reshape(c.batch_size, c.num_queries, c.num_heads, head_dim).transpose(1, 2)
        k = layer.W_k(keys).reshape(c.batch_size, c.num_kvpairs, c.num_heads, head_dim).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / head_dim**0.5  # (batch, heads, queries, keys)
    may_attend = (torch.arange(c.num_kvpairs) < c.valid_len).expand(c.num_queries, c.num_kvpairs)
    if c.causal:
        may_attend = may_attend & torch.ones(c.num_queries, c.num_kvpairs, dtype=torch.bool).tril()
    return scores.masked_fill(~may_attend, float("-inf")).softmax(dim=-1)


@pytest.mark.parametrize("config", [
    ExplorerConfig(num_hiddens=32, num_heads=4, batch_size=2, num_queries=6, num_kvpairs=8, valid_len=5, causal=True),
    ExplorerConfig(num_hiddens=24, num_heads=3, batch_size=3, num_queries=5, num_kvpairs=7, valid_len=7),
    ExplorerConfig(num_hiddens=64, num_heads=64, batch_size=1, num_queries=16, num_kvpairs=3, valid_len=2, seed=4),
])
def test_explore_weights_are_the_layers_and_respect_both_masks(config):
    result = explore(config)
    c = config
    assert result.weights.shape == (c.batch_size, c.num_heads, c.num_queries, c.num_kvpairs)
    torch.testing.assert_close(result.weights, reference_weights(config))
    may_attend = (torch.arange(c.num_kvpairs) < c.valid_len).expand(c.num_queries, -1)
    if c.causal:
        may_attend = may_attend & torch.ones(c.num_queries, c.num_kvpairs, dtype=torch.bool).tril()
    assert torch.equal(result.may_attend, may_attend.expand(c.batch_size, -1, -1))
    assert torch.equal(result.weights == 0, ~may_attend.expand_as(result.weights))  # 0 exactly where masked
    assert result.costs.parameters == 4 * c.num_hiddens**2


def test_explore_is_seeded_and_leaves_the_global_generator_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a, b = explore(ExplorerConfig()), explore(ExplorerConfig())
    assert torch.equal(a.weights, b.weights)
    assert torch.equal(torch.get_rng_state(), before)
    assert not torch.equal(explore(ExplorerConfig(seed=1)).weights, a.weights)


def test_score_memory_is_the_size_of_the_weights():
    result = explore(ExplorerConfig(num_hiddens=24, num_heads=3, batch_size=2, num_queries=5, num_kvpairs=7,
                                    valid_len=7))
    weights = result.weights  # as many numbers as the scores, in the same dtype
    assert mha_costs(2, 5, 7, 24, 3).score_bytes == weights.nelement() * weights.element_size() == 840
    assert mha_costs(2, 5, 7, 24, 3, dtype=torch.float16).score_bytes == 420


# the inputs: each sequence depends only on its index and the feature size


def test_sequence_inputs_depend_only_on_seed_stream_index_and_features():
    first = sequence_inputs(0, 6, 32, QUERIES)
    assert first.shape == (6, 32) and first.dtype == torch.float32
    assert torch.equal(first, sequence_inputs(0, 9, 32, QUERIES)[:6])  # a longer sequence starts the same
    assert torch.equal(first[:2], sequence_inputs(0, 2, 32, QUERIES))
    for other in (sequence_inputs(1, 6, 32, QUERIES), sequence_inputs(0, 6, 32, KEYS),
                  sequence_inputs(0, 6, 32, QUERIES, seed=1), sequence_inputs(0, 6, 36, QUERIES)[:, :32]):
        assert not torch.equal(first, other)


def test_inputs_are_normal_with_the_stated_scale():
    tokens = sequence_inputs(0, 2000, 64, QUERIES)  # 128,000 numbers
    assert abs(tokens.mean().item()) < 0.05
    assert abs(tokens.std().item() - INPUT_STD) < 0.05
    assert INPUT_STD == 3.0


@pytest.mark.parametrize("change", [{"batch_size": 5}, {"batch_size": 1}, {"num_queries": 11}, {"num_queries": 2},
                                   {"valid_len": 5, "batch_size": 8, "num_queries": 16}])
def test_sequence_0_does_not_move_when_the_batch_or_the_number_of_queries_changes(change):
    base = ExplorerConfig()
    changed = ExplorerConfig(**{**vars(base), **change})
    rows = min(base.num_queries, changed.num_queries)
    (queries_a, keys_a), (queries_b, keys_b) = explorer_inputs(base), explorer_inputs(changed)
    assert torch.equal(queries_a[0, :rows], queries_b[0, :rows]) and torch.equal(keys_a[0], keys_b[0])
    # The weights agree up to float rounding: a matrix product with more rows may add in another order.
    a, b = explore(base), explore(changed)
    torch.testing.assert_close(a.weights[0, :, :rows], b.weights[0, :, :rows], rtol=1e-5, atol=1e-6)
    # and the heatmap shows it: the panels' first rows have the same colours (a rounding may move one colour step)
    before, after = render_explorer(base)["heatmaps"], render_explorer(changed)["heatmaps"]
    for head, pixels in head_images(before).items():
        cells = cell_colours(pixels, base.num_queries, base.num_kvpairs)[:rows].astype(int)
        other = cell_colours(head_images(after)[head], changed.num_queries, changed.num_kvpairs)[:rows]
        assert np.abs(cells - other).max() <= 4


def test_every_sequence_of_the_batch_is_its_own():
    queries, keys = explorer_inputs(ExplorerConfig(batch_size=3))
    assert queries.shape == (3, 6, 32) and keys.shape == (3, 8, 32)
    for i in range(3):
        assert torch.equal(queries[i], sequence_inputs(i, 6, 32, QUERIES))
        assert torch.equal(keys[i], sequence_inputs(i, 8, 32, KEYS))
    assert not torch.equal(queries[0], queries[1])


def test_num_heads_does_not_change_the_inputs_or_the_layer():
    four, eight = ExplorerConfig(num_heads=4), ExplorerConfig(num_heads=8)
    for a, b in zip(explorer_inputs(four), explorer_inputs(eight), strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(explore(four).weights[:, :4], explore(eight).weights[:, :4])  # other slices


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"num_heads": 5}, ValueError,
     "num_heads=5 must divide num_hiddens=32 evenly, .* the divisors of 32 are [1, 2, 4, 8, 16, 32]"),
    ({"valid_len": 9}, ValueError, "valid_len must be an int in [0, num_kvpairs=8], got 9"),
    ({"batch_size": 0}, ValueError, "batch_size must be a positive int, got 0"),
    ({"causal": 1}, TypeError, "causal must be True or False, got 1"),
    ({"seed": -1}, ValueError, "seed must be an int >= 0, got -1"),
])
def test_explorer_config_rejects_bad_values(kwargs, error, message):
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        ExplorerConfig(**kwargs)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="n must be a positive int, got 0"):
        divisors(0)
    with pytest.raises(TypeError, match="costs must be a Costs, got dict"):
        format_costs({})
    with pytest.raises(TypeError, match="config must be a ExplorerConfig, got dict"):
        explorer_inputs({})
    with pytest.raises(ValueError, match="index must be an int >= 0, got -1"):
        sequence_inputs(-1, 6, 32, QUERIES)
    with pytest.raises(ValueError, match="num_tokens must be a positive int, got 0"):
        sequence_inputs(0, 0, 32, QUERIES)
    with pytest.raises(TypeError, match="rows must be TraceRows"):
        trace_html([("input", "queries", (1, 2, 3))])
    with pytest.raises(ValueError, match=r"weights must be a 3-D tensor \(num_heads, num_queries, num_kvpairs\)"):
        heatmaps_svg(torch.zeros(2, 2))
    with pytest.raises(TypeError, match="may_attend must be a boolean tensor"):
        weight_colours(torch.zeros(2, 3, 4), torch.ones(3, 4))
    with pytest.raises(ValueError, match=r"may_attend must broadcast to .* = \(2, 3, 4\), got shape \(3, 5\)"):
        heatmaps_svg(torch.zeros(2, 3, 4), torch.ones(3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="d must be one of dims"):
        scaling_explorer(d=3)


# HTML and the heatmaps


def test_trace_html_has_one_row_per_step_with_the_shapes():
    result = explore(ExplorerConfig())
    text = trace_html(result.trace)
    assert text.count("<tr>") == len(result.trace) + 1 and text.count("<thead>") == 1
    assert "(8, 6, 8)" in text and "(8, 8, 8)" in text  # split heads: (batch_size*num_heads, n, head_dim)
    assert "<td" in text and ">" not in "".join(re.findall(r"<td[^>]*>([^<]*)</td>", text))  # escaped


def test_costs_html_shows_the_same_numbers_as_the_text_table():
    costs = mha_costs(2, 6, 8, 32, 4)
    text = costs_html(costs)
    for value in ("4,096", "126,976", "1,536"):
        assert value in text and value in format_costs(costs)


def test_weight_colours_follow_the_colormap_and_paint_masked_keys_grey():
    weights = torch.tensor([[[0.0, 0.001, 0.5, 1.0]]])  # (1 head, 1 query, 4 keys)
    may_attend = torch.tensor([[False, True, True, True]])
    rgb = weight_colours(weights, may_attend)
    assert rgb.shape == (1, 1, 4, 3) and rgb.dtype == np.uint8
    assert tuple(rgb[0, 0, 0]) == MASKED_RGB
    expected = colormaps[CMAP](weights[0, 0, 1:].numpy(), bytes=True)[:, :3]
    np.testing.assert_array_equal(rgb[0, 0, 1:], expected)
    assert tuple(rgb[0, 0, 1]) != MASKED_RGB  # allowed but almost 0 is not the masked colour
    # grey is a colour the colormap never takes, so masked and near-zero cannot be confused
    ramp = colormaps[CMAP](np.linspace(0, 1, 256), bytes=True)[:, :3]
    assert np.abs(ramp.astype(int) - np.array(MASKED_RGB)).sum(axis=1).min() > 60
    np.testing.assert_array_equal(weight_colours(weights)[0, 0, 0], ZERO_COLOUR[:3])  # no mask: weight 0


@pytest.mark.parametrize(("num_heads", "rows", "cols"), [(1, 1, 1), (4, 1, 4), (6, 2, 4), (16, 2, 8), (64, 8, 8)])
def test_heatmaps_svg_grid(num_heads, rows, cols):
    weights = torch.rand(num_heads, 3, 5, generator=torch.Generator().manual_seed(0))
    svg = heatmaps_svg(weights, title="A & B <test>")
    root = ET.fromstring(svg)  # well-formed XML, so it also works as an image/svg+xml output
    ns = {"svg": "http://www.w3.org/2000/svg"}
    groups = root.findall("svg:g", ns)
    assert [g.get("id") for g in groups] == [f"head-{h}" for h in range(num_heads)]
    images = [g.findall("svg:image", ns) for g in groups]
    assert all(len(found) == 1 for found in images)
    for group, found in zip(groups, images, strict=True):  # each panel has a border around its image
        border = group.find("svg:rect", ns)
        assert border is not None and border.get("fill") == "none"
        assert [border.get(k) for k in ("x", "y", "width", "height")] == [
            found[0].get(k) for k in ("x", "y", "width", "height")]
    assert len({float(found[0].get("x")) for found in images}) == cols
    assert len({float(found[0].get("y")) for found in images}) == rows
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts[0] == "A & B <test>"  # the title, escaped in the SVG and read back
    assert texts.count("keys") == texts.count("queries") == 1  # only the bottom-left panel is labelled
    assert "attention weight" in texts and "masked" in texts
    assert float(root.get("width")) <= 1100
    for head, pixels in head_images(svg).items():
        expected = colormaps[CMAP](weights[head].numpy(), bytes=True)
        np.testing.assert_array_equal(cell_colours(pixels, 3, 5), expected)


def test_svg_has_one_group_and_one_image_per_head_and_pixels_are_whole_cells():
    config = ExplorerConfig(num_heads=8, num_queries=6, num_kvpairs=8, valid_len=5, causal=True)
    svg = render_explorer(config)["heatmaps"]
    assert svg.startswith("<svg ") and "<?xml" not in svg and "DOCTYPE" not in svg
    assert svg.count('<g id="head-') == 8
    images = head_images(svg)
    assert sorted(images) == list(range(8))
    weights = explore(config).weights[0]
    masked = ~(torch.ones(6, 8).tril().bool() & (torch.arange(8) < 5))
    for head, pixels in images.items():
        height, width = pixels.shape[:2]
        assert height % 6 == 0 and width % 8 == 0 and height // 6 == width // 8  # square cells, whole pixels
        cell = height // 6
        cells = cell_colours(pixels, 6, 8)  # (6, 8, 4)
        blocks = pixels.reshape(6, cell, 8, cell, 4)
        assert np.all(blocks == cells[:, None, :, None, :])  # every pixel of a cell has the cell's colour
        assert np.all(cells[masked.numpy()] == MASKED_COLOUR)
        assert not np.any(np.all(cells[~masked.numpy()] == MASKED_COLOUR, axis=-1))
        assert torch.equal(masked, weights[head] == 0)  # and nothing else is exactly 0
        expected = colormaps[CMAP](weights[head].numpy(), bytes=True)
        np.testing.assert_array_equal(cells[~masked.numpy()], expected[~masked.numpy()])


def test_heatmaps_are_reproducible():
    weights = torch.rand(2, 3, 4)
    assert heatmaps_svg(weights) == heatmaps_svg(weights)


def test_an_update_draws_no_matplotlib_figure(monkeypatch):
    box = explorer()
    made = []
    original = matplotlib.figure.Figure.__init__
    monkeypatch.setattr(matplotlib.figure.Figure, "__init__", lambda self, *a, **k: (made.append(1),
                                                                                      original(self, *a, **k))[1])
    box.controls["num_hiddens"].value = 64
    for num_heads in box.controls["num_heads"].options:
        box.controls["num_heads"].value = num_heads
    assert box.heatmaps.value.count('<g id="head-') == 64
    assert made == []  # one figure per head was what made 64 heads take most of a second


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


def test_sliders_update_only_when_released():
    box = explorer()
    sliders = [control for name, control in box.controls.items() if name != "causal"]
    assert len(sliders) == 6 and all(slider.continuous_update is False for slider in sliders)
    d_slider = scaling_explorer(d=4, dims=[4, 256]).children[0]
    assert d_slider.continuous_update is False


def test_changing_num_heads_updates_trace_costs_and_heatmaps_in_place():
    box = explorer()
    children = list(box.children)
    assert box.heatmaps.value.count('<g id="head-') == 4 and "(8, 6, 8)" in box.trace.value
    box.controls["num_heads"].value = 8
    assert box.heatmaps.value.count('<g id="head-') == 8
    assert "(16, 6, 4)" in box.trace.value and "(8, 6, 8)" not in box.trace.value
    assert "d/h = 32/8" in box.costs.value and "4,096" in box.costs.value
    assert list(box.children) == children  # rewritten in place, nothing appended


def test_toggling_causal_masks_the_upper_triangle_in_every_head():
    box = explorer(valid_len=8)
    upper = torch.ones(6, 8).triu(diagonal=1).bool().numpy()
    before = head_images(box.heatmaps.value)
    assert all(not np.any(np.all(cell_colours(pixels, 6, 8) == MASKED_COLOUR, axis=-1)) for pixels in before.values())
    box.controls["causal"].value = True
    after = head_images(box.heatmaps.value)
    assert sorted(after) == [0, 1, 2, 3]
    for pixels in after.values():
        cells = cell_colours(pixels, 6, 8)
        assert np.all(cells[upper] == MASKED_COLOUR) and not np.any(np.all(cells[~upper] == MASKED_COLOUR, axis=-1))


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
    cells = cell_colours(images[0], 6, 12)
    assert np.all(cells[:, 3:] == MASKED_COLOUR) and not np.any(np.all(cells[:, :3] == MASKED_COLOUR, axis=-1))


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
    for value in (2, 8, 4) * 2:  # warm up caches (colormaps)
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


def test_figure_to_svg_is_reproducible():
    dims = [4]
    variance, saturation = measure_score_variance(dims, num_samples=200), measure_softmax_saturation(dims)
    assert figure_to_svg(plot_scaling(4, variance, saturation)) == figure_to_svg(plot_scaling(4, variance, saturation))


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
    # each histogram has 40 bins of its own: the scaled scores' bins are sqrt(64) = 8 times narrower
    widths = [patch.get_width() for patch in left.patches]
    assert len(widths) == 80
    assert widths[0] == pytest.approx(8 * widths[-1])
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


def test_the_browser_recording_is_complete():
    """results/explorer/: what tests/browser/test_explorer_latency.py wrote, quoted in benchmarks/README.md."""
    recordings = sorted(files("mha_chapters.bench").joinpath("results/explorer").iterdir(), key=lambda path: path.name)
    assert recordings, "benchmarks/README.md quotes the latest recording; there is none"
    for path in recordings:
        recording = json.loads(path.read_text())
        rows = recording["per_num_heads"]
        assert [int(heads) for heads in rows] == divisors(recording["num_hiddens"])
        assert sum(row["changes"] for row in rows.values()) == recording["changes"]
        assert max(row["worst_ms"] for row in rows.values()) == recording["worst_ms"]
        assert 0 < recording["median_until_new_svg_ms"] <= recording["median_ms"] <= recording["worst_ms"]
        assert recording["machine"] and recording["browser"] and len(recording["load_average_1min"]) == 2
        # a change over the target was timed twice more and counts by the median of its three timings
        target, retimed = recording["target_worst_ms"], recording["retimed"]
        assert all(len(change["ms"]) == 3 and change["ms"][0] > target for change in retimed)
        if retimed:
            assert recording["worst_ms"] == max(change["ms"][0] for change in retimed)
            assert recording["worst_confirmed_ms"] >= max(sorted(change["ms"])[1] for change in retimed)
        else:
            assert recording["worst_confirmed_ms"] == recording["worst_ms"] <= target
