import pytest
import torch
from matplotlib.figure import Figure

from mha_chapters.i18n import set_language
from mha_chapters.layout import MAX_CELLS, draw_memory, draw_side_by_side, draw_tensor, permuted_axis_names


def panels_of(fig: Figure) -> list:
    """Every Axes of the figure, subfigures included, in drawing order."""
    return [ax for subfig in (fig.subfigs or [fig]) for ax in subfig.axes]


def numbers_in(ax) -> list[int]:
    return [int(text.get_text()) for text in ax.texts]


def test_draw_tensor_draws_one_panel_per_index_of_axis_0_of_a_3d_tensor():
    X = torch.arange(24).reshape(2, 3, 4)
    fig = draw_tensor(X, "X", ("batch", "tokens", "features"))
    assert isinstance(fig, Figure)
    panels = panels_of(fig)
    assert len(panels) == 2
    assert [ax.get_title() for ax in panels] == ["batch = 0", "batch = 1"]
    assert [ax.get_xlabel() for ax in panels] == ["features", "features"]
    assert panels[0].get_ylabel() == "tokens"
    assert fig.get_suptitle() == "X"


def test_draw_tensor_writes_each_value_in_its_cell_and_colours_the_cells_by_value():
    X = torch.tensor([[[3, 1], [4, 1]], [[5, 9], [2, 6]], [[5, 3], [5, 8]]])
    panels = panels_of(draw_tensor(X, "digits of pi"))
    for ax, grid in zip(panels, X, strict=True):
        assert numbers_in(ax) == grid.flatten().tolist()
        assert ax.get_images()[0].get_array().tolist() == grid.tolist()
        assert [(text.get_position()) for text in ax.texts[:2]] == [(0, 0), (1, 0)]  # (column, row)


def test_draw_tensor_lays_a_4d_tensor_out_as_rows_and_columns_of_panels():
    X = torch.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2)
    panels = panels_of(draw_tensor(X, "heads", ("batch", "head", "tokens", "features")))
    assert len(panels) == 6
    assert panels[4].get_title() == "batch = 1\nhead = 1"
    assert numbers_in(panels[4]) == X[1, 1].flatten().tolist()
    assert [bool(ax.get_ylabel()) for ax in panels] == [True, False, False, True, False, False]
    assert [ax.get_xlabel() for ax in panels[3:]] == ["features"] * 3 and panels[0].get_xlabel() == ""


@pytest.mark.parametrize("X", [torch.arange(5), torch.arange(6).reshape(2, 3)])
def test_draw_tensor_draws_1d_and_2d_tensors_in_one_untitled_panel_with_default_axis_names(X):
    fig = draw_tensor(X, "small")
    (ax,) = panels_of(fig)
    assert ax.get_title() == ""
    assert numbers_in(ax) == X.flatten().tolist()
    assert ax.get_xlabel() == f"axis {X.dim() - 1}"
    assert ax.get_ylabel() == ("axis 0" if X.dim() == 2 else "")


def test_draw_tensor_reads_non_contiguous_tensors_by_index():
    X = torch.arange(6).reshape(2, 3).T
    (ax,) = panels_of(draw_tensor(X, "transposed"))
    assert numbers_in(ax) == [0, 3, 1, 4, 2, 5]


def test_draw_tensor_accepts_floats_that_are_whole_numbers():
    (ax,) = panels_of(draw_tensor(torch.tensor([[1.0, -2.0], [30.0, 4.0]]), "floats"))
    assert numbers_in(ax) == [1, -2, 30, 4]


def test_draw_side_by_side_titles_each_tensor_and_shares_one_colour_scale():
    X = torch.arange(12).reshape(3, 4)
    fig = draw_side_by_side([X, X.T, X[:1]], ["X", "X.T", "X[:1]"], "before and after",
                            [("rows", "columns"), ("columns", "rows"), None])
    assert [subfig.get_suptitle() for subfig in fig.subfigs] == ["X", "X.T", "X[:1]"]
    assert fig.get_suptitle() == "before and after"
    panels = panels_of(fig)
    assert len(panels) == 3
    assert [ax.get_ylabel() for ax in panels] == ["rows", "columns", "axis 0"]
    assert {ax.get_images()[0].get_clim() for ax in panels} == {(0.0, 11.0)}
    assert numbers_in(panels[1]) == X.T.flatten().tolist()


def test_draw_memory_shows_the_storage_and_where_each_element_is_read_from():
    X = torch.arange(6).reshape(2, 3).T  # not contiguous: (3, 2) with strides (1, 3)
    fig = draw_memory(X, "X.T")
    memory, elements = fig.axes
    assert fig.get_suptitle() == "X.T"
    assert numbers_in(memory) == [0, 1, 2, 3, 4, 5]
    assert numbers_in(elements) == [0, 3, 1, 4, 2, 5]
    assert [label.get_text() for label in elements.get_xticklabels()] == ["0", "3", "1", "4", "2", "5"]
    assert "False" in elements.get_title() and memory.get_xlabel() == "storage position"


def test_draw_memory_of_a_contiguous_copy_reads_positions_in_order():
    Y = torch.arange(6).reshape(2, 3).T.contiguous()
    memory, elements = draw_memory(Y, "copy", name="Y").axes
    assert numbers_in(memory) == numbers_in(elements) == [0, 3, 1, 4, 2, 5]
    assert [label.get_text() for label in elements.get_xticklabels()] == ["0", "1", "2", "3", "4", "5"]
    assert elements.get_title() == "elements of Y in row-major order (Y.is_contiguous() = True)"


def test_draw_memory_greys_out_the_storage_a_slice_does_not_use():
    X = torch.arange(8).reshape(2, 4)[:, 1:3]  # uses storage positions 1, 2, 5, 6
    memory, elements = draw_memory(X, "slice").axes
    assert memory.get_images()[0].get_array().mask.tolist() == [[True, False, False, True, True, False, False, True]]
    assert [label.get_text() for label in elements.get_xticklabels()] == ["1", "2", "5", "6"]


@pytest.mark.parametrize(
    ("X", "message"),
    [
        (torch.tensor([[0.5, 1.25]]), r"X must hold whole numbers, which can be written in a cell, got 0\.5"),
        (torch.tensor([1.0, float("nan")]), "X must hold whole numbers"),
        (torch.zeros(1, 1, 1, 1, 2), r"X must have 1 to 4 axes to be drawn as grids, got shape \(1, 1, 1, 1, 2\)"),
        (torch.tensor(7), r"X must have 1 to 4 axes to be drawn as grids, got shape \(\)"),
        (torch.zeros(0, 3), "X must have 1 to MAX_CELLS=64 elements"),
        (torch.zeros(MAX_CELLS + 1), r"elements to be drawn readably, got 65 \(shape \(65,\)\)"),
    ],
)
def test_draw_tensor_rejects_what_it_cannot_draw_readably(X, message):
    with pytest.raises(ValueError, match=message):
        draw_tensor(X, "bad")


@pytest.mark.parametrize(("X", "got"), [([[1, 2]], "list"), (torch.tensor([True, False]), "torch.bool")])
def test_draw_tensor_wants_a_tensor_of_numbers(X, got):
    with pytest.raises(TypeError, match=f"X must .*got .*{got}"):
        draw_tensor(X, "bad")


def test_draw_tensor_wants_one_name_per_axis():
    with pytest.raises(ValueError, match=r"names must give one name \(a string\) per axis, 3 in all"):
        draw_tensor(torch.zeros(1, 2, 3), "bad", ("tokens", "features"))


def test_draw_side_by_side_checks_its_lists():
    X = torch.arange(4)
    with pytest.raises(ValueError, match="tensors must be a non-empty list of tensors, got a tensor of shape"):
        draw_side_by_side(X, ["X"], "bad")
    with pytest.raises(ValueError, match=r"titles must give one title per tensor \(2\)"):
        draw_side_by_side([X, X], ["only one"], "bad")
    with pytest.raises(ValueError, match="names must give the axis names of each of the 2 tensors"):
        draw_side_by_side([X, X], ["a", "b"], "bad", [("axis",)])
    with pytest.raises(ValueError, match=r"tensors\[1\] must hold whole numbers"):
        draw_side_by_side([X, X / 3], ["a", "b"], "bad")


def test_draw_memory_rejects_a_storage_too_large_to_draw():
    with pytest.raises(ValueError, match="the storage behind X holds 100 elements, too many to draw"):
        draw_memory(torch.arange(100)[:4], "a small view of a large storage")
    with pytest.raises(TypeError, match="X must be a torch.Tensor, got list"):
        draw_memory([1, 2], "bad")


def test_permuted_axis_names_say_where_each_new_axis_came_from():
    assert permuted_axis_names((0, 2, 1)) == ["axis 0", "axis 1 (was 2)", "axis 2 (was 1)"]
    assert permuted_axis_names((2, 0, 1)) == ["axis 0 (was 2)", "axis 1 (was 0)", "axis 2 (was 1)"]
    assert permuted_axis_names(range(2)) == ["axis 0", "axis 1"]
    for bad in [(0, 0, 1), (1, 2)]:
        with pytest.raises(ValueError, match="dims must be a permutation of 0, 1, ..., n - 1"):
            permuted_axis_names(bad)
    for bad in ["01", 3]:
        with pytest.raises(TypeError, match="dims must be a sequence of ints"):
            permuted_axis_names(bad)


@pytest.mark.skipif(__import__("mha_chapters").i18n.cjk_font() is None, reason="no CJK font: figures stay English")
def test_default_axis_names_and_panel_titles_are_chinese_in_chinese():
    set_language("zh_CN")
    try:
        panels = panels_of(draw_side_by_side([torch.arange(8).reshape(2, 2, 2)], ["X"], "X",
                                             [permuted_axis_names((2, 0, 1))]))
        assert [ax.get_title() for ax in panels] == ["轴 0（原轴 2） = 0", "轴 0（原轴 2） = 1"]
        assert panels[0].get_xlabel() == "轴 2（原轴 1）"
        (ax,) = panels_of(draw_tensor(torch.arange(6).reshape(2, 3), "X"))
        assert (ax.get_ylabel(), ax.get_xlabel()) == ("轴 0", "轴 1")
    finally:
        set_language("en")
