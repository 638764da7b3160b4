import pytest
import torch
from matplotlib.figure import Figure

from mha_lib.plotting import show_heatmaps


def test_show_heatmaps_draws_one_labelled_panel_per_matrix_and_a_colour_bar():
    fig = show_heatmaps(torch.rand(2, 3, 4, 5), titles=["head 0", "head 1", "head 2"])
    assert isinstance(fig, Figure)
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


@pytest.mark.parametrize("bad", [torch.rand(3, 4, 5), [[0.5]]])
def test_show_heatmaps_rejects_anything_but_a_4d_tensor(bad):
    with pytest.raises(ValueError, match="matrices must be a 4-D tensor"):
        show_heatmaps(bad)


def test_show_heatmaps_wants_one_title_per_column():
    with pytest.raises(ValueError, match="titles must name the 3 columns, got 2"):
        show_heatmaps(torch.rand(1, 3, 2, 2), titles=["a", "b"])
