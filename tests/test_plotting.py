import matplotlib.pyplot as plt
import nbformat
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from nbclient import NotebookClient

from mha_chapters.plotting import MASKED_COLOUR
from mha_chapters.plotting import show_heatmaps as d2l_show_heatmaps
from mha_lib import valid_lens_mask


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def show_heatmaps(*args, **kwargs):
    """Call show_heatmaps as d2l does (it returns nothing) and hand back the figure it drew with pyplot."""
    figures_before = plt.get_fignums()
    assert d2l_show_heatmaps(*args, **kwargs) is None
    assert len(plt.get_fignums()) == len(figures_before) + 1
    return plt.gcf()


@pytest.mark.slow  # executes a notebook in a fresh kernel
@pytest.mark.parametrize("last_line", [False, True], ids=["call-then-more-code", "call-on-the-last-line"])
def test_show_heatmaps_draws_once_where_it_is_called_in_a_notebook(last_line):
    call = "show_heatmaps(torch.rand(1, 2, 3, 4), 'Keys', 'Queries', titles=['a', 'b'], figsize=(4, 2))"
    more = "" if last_line else "\nx = 1"
    source = f"%matplotlib inline\nimport torch\nfrom mha_chapters import show_heatmaps\n{call}{more}"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    images = [output for output in nb.cells[0].outputs if "image/png" in output.get("data", {})]
    assert len(images) == 1, nb.cells[0].outputs


def test_figsize_is_the_size_of_the_whole_figure_as_in_d2l():
    fig = show_heatmaps(torch.rand(2, 4, 3, 3), figsize=(7, 3.5), suptitle="four heads")
    assert tuple(fig.get_size_inches()) == (7, 3.5) and fig.get_suptitle() == "four heads"


def test_show_heatmaps_draws_one_labelled_panel_per_matrix_and_a_colour_bar():
    fig = show_heatmaps(torch.rand(2, 3, 4, 5), titles=["head 0", "head 1", "head 2"])
    panels, colour_bars = fig.axes[:6], fig.axes[6:]
    assert len(panels) == 6 and len(colour_bars) == 1
    assert [ax.get_title() for ax in panels[:3]] == ["head 0", "head 1", "head 2"]
    assert {ax.get_xlabel() for ax in panels[3:]} == {"keys"} and panels[0].get_ylabel() == "queries"
    assert panels[4].get_images()[0].get_array().shape == (4, 5)


def test_show_heatmaps_ticks_only_whole_positions():
    fig = show_heatmaps(torch.rand(1, 1, 1, 3))  # a single query: no tick at -0.5 or 0.5
    fig.canvas.draw()
    ax = fig.axes[0]
    assert [t for t in ax.get_yticks() if -0.5 <= t <= 0.5] == [0]
    assert all(float(t).is_integer() for t in ax.get_xticks())


def test_show_heatmaps_keeps_zero_at_the_bottom_of_the_colour_scale():
    fig = show_heatmaps(torch.full((1, 1, 2, 2), 0.5))
    assert fig.axes[0].get_images()[0].get_clim() == (0.0, 0.5)


@pytest.mark.parametrize(("bad", "error", "message"), [
    (torch.rand(3, 4, 5), ValueError, "matrices must be a 4-D tensor"),
    ([[0.5]], TypeError, "matrices must be a torch.Tensor"),
    (torch.rand(1, 1, 2, 2, dtype=torch.complex64), TypeError, "matrices must hold real numbers"),
    (torch.rand(1, 1, 0, 3), ValueError, "matrices must have at least one cell"),
])
def test_show_heatmaps_rejects_anything_but_a_4d_real_nonempty_tensor(bad, error, message):
    with pytest.raises(error, match=message):
        d2l_show_heatmaps(bad)


def test_a_nan_cell_keeps_the_colour_scale_of_the_finite_ones():  # review D5
    matrices = torch.tensor([0.2, 0.4, 0.6, float("nan")]).reshape(1, 1, 2, 2)
    fig = show_heatmaps(matrices)
    assert fig.axes[0].get_images()[0].get_clim() == pytest.approx((0.0, 0.6))


def test_show_heatmaps_wants_one_title_per_column():
    with pytest.raises(ValueError, match="titles must name the 3 columns, got 2"):
        d2l_show_heatmaps(torch.rand(1, 3, 2, 2), titles=["a", "b"])


def pixel(fig, ax, row: int, col: int) -> tuple[int, int, int]:
    """The colour drawn at the centre of cell (row, col) of a heatmap panel."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    x, y = ax.transData.transform((col, row))
    rgba = np.asarray(canvas.buffer_rgba())
    return tuple(int(c) for c in rgba[rgba.shape[0] - int(round(y)), int(round(x)), :3])


def legend_texts(fig) -> list[str]:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def test_a_masked_key_looks_different_from_a_near_zero_weight():
    weights = torch.tensor([[[[0.999, 0.001, 0.0]]]])  # key 1 may attend but gets ~0; key 2 is masked
    mask = torch.tensor([True, True, False])  # broadcasts to (1, 1, 1, 3)
    fig = show_heatmaps(weights, mask=mask)
    ax = fig.axes[0]
    near_zero, masked = pixel(fig, ax, 0, 1), pixel(fig, ax, 0, 2)
    assert min(near_zero) >= 235  # almost white: "Reds" starts at (255, 245, 240)
    grey = tuple(round(255 * c) for c in to_rgb(MASKED_COLOUR))
    assert all(abs(a - b) <= 2 for a, b in zip(masked, grey, strict=True)), (masked, grey)
    assert legend_texts(fig) == ["masked"]


def test_without_a_mask_a_zero_weight_is_drawn_like_any_other_and_there_is_no_legend():
    weights = torch.tensor([[[[0.999, 0.001, 0.0]]]])
    fig = show_heatmaps(weights)
    assert min(pixel(fig, fig.axes[0], 0, 2)) >= 235 and legend_texts(fig) == []


def test_the_mask_broadcasts_over_heads_and_marks_exactly_the_masked_cells():
    valid_lens = torch.tensor([3, 2])
    mask = valid_lens_mask(valid_lens, 6)[:, None, None, :]  # (2, 1, 1, 6) -> (2, 5, 4, 6)
    fig = show_heatmaps(torch.rand(2, 5, 4, 6), mask=mask)
    for i in range(2):
        for j in range(5):
            hidden = fig.axes[5 * i + j].get_images()[0].get_array().mask
            assert hidden.shape == (4, 6) and hidden.sum(axis=1).tolist() == [6 - valid_lens[i].item()] * 4
            assert not hidden[:, : valid_lens[i]].any()


@pytest.mark.parametrize("bad, error, message", [
    (torch.ones(1, 1, 2, 2), TypeError, "mask must be a boolean tensor"),
    (torch.ones(3, dtype=torch.bool), ValueError, r"mask must broadcast to matrices.shape = \(1, 1, 2, 2\)"),
    ([[True, False]], TypeError, "mask must be a boolean tensor"),
])
def test_show_heatmaps_rejects_a_mask_that_is_not_boolean_or_does_not_broadcast(bad, error, message):
    with pytest.raises(error, match=message):
        d2l_show_heatmaps(torch.rand(1, 1, 2, 2), mask=bad)
