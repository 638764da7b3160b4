import math

import pytest
import torch
from matplotlib.figure import Figure

from mha_chapters.scaling import (
    measure_score_variance,
    measure_softmax_saturation,
    plot_score_variance,
    plot_softmax_gradients,
    plot_softmax_saturation,
    softmax_row_stats,
)

DIMS = [1, 4, 64, 256]


# softmax_row_stats: exact values on rows whose softmax is known


def test_softmax_row_stats_of_equal_scores_is_the_uniform_distribution():
    stats = softmax_row_stats(torch.zeros(3, 2))  # three rows, two keys: weights 1/2, 1/2
    assert torch.equal(stats["max_weight"], torch.full((3,), 0.5))
    torch.testing.assert_close(stats["entropy"], torch.full((3,), math.log(2)))
    # Jacobian diag(p) - p p^T = [[1/4, -1/4], [-1/4, 1/4]], Frobenius norm sqrt(4/16) = 1/2
    torch.testing.assert_close(stats["grad_norm"], torch.full((3,), 0.5))


def test_softmax_row_stats_of_a_one_hot_row_has_zero_entropy_and_zero_gradient():
    stats = softmax_row_stats(torch.tensor([[0.0, -math.inf, -math.inf]]))
    assert stats["max_weight"].tolist() == [1.0]
    assert stats["entropy"].tolist() == [0.0]  # not NaN: 0 log 0 counts as 0
    assert stats["grad_norm"].tolist() == [0.0]


def test_softmax_row_stats_grad_norm_is_the_norm_of_the_autograd_jacobian():
    scores = torch.tensor([1.0, -0.5, 2.0, 0.25])
    jacobian = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, dim=-1), scores)
    torch.testing.assert_close(softmax_row_stats(scores)["grad_norm"], torch.linalg.matrix_norm(jacobian))


def test_softmax_row_stats_keeps_the_leading_axes_and_the_dtype():
    stats = softmax_row_stats(torch.randn(2, 3, 5))
    assert {name: tuple(value.shape) for name, value in stats.items()} == {
        "max_weight": (2, 3), "entropy": (2, 3), "grad_norm": (2, 3)}
    assert {value.dtype for value in stats.values()} == {torch.float32}


def test_softmax_row_stats_resolves_the_tiny_gradient_of_a_nearly_one_hot_row():
    # weights (1 - e, e) with e = 1/(1 + exp(30)): Jacobian norm 2 e (1 - e), about 1.9e-13; float32
    # arithmetic on the weights would round 1 - e to 1 and give 0.
    expected = 2 * math.exp(-30) / (1 + math.exp(-30)) ** 2
    grad_norm = softmax_row_stats(torch.tensor([30.0, 0.0]))["grad_norm"]
    assert grad_norm.item() == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(("bad", "error", "message"), [
    (torch.tensor(1.0), ValueError, "scores must have at least 1 axis"),
    (torch.tensor([1, 2]), TypeError, "scores must be a floating-point tensor, got dtype torch.int64"),
    ([1.0, 2.0], TypeError, "scores must be a torch.Tensor"),
])
def test_softmax_row_stats_rejects_bad_scores(bad, error, message):
    with pytest.raises(error, match=message):
        softmax_row_stats(bad)


# measure_score_variance


def test_score_variance_is_close_to_d_unscaled_and_to_1_scaled():
    result = measure_score_variance(DIMS, num_samples=20_000)
    assert result.dims.tolist() == DIMS and result.num_samples == 20_000
    assert result.unscaled.shape == result.scaled.shape == (len(DIMS),)
    torch.testing.assert_close(result.unscaled, torch.tensor(DIMS, dtype=torch.float32), rtol=0.05, atol=0)
    torch.testing.assert_close(result.scaled, torch.ones(len(DIMS)), rtol=0.05, atol=0)
    torch.testing.assert_close(result.scaled * result.dims, result.unscaled)


def test_score_variance_is_reproducible_and_leaves_the_global_generator_alone():
    torch.manual_seed(0)
    expected_next = torch.rand(3)
    torch.manual_seed(0)
    first = measure_score_variance(DIMS, num_samples=100, seed=1)
    assert torch.equal(torch.rand(3), expected_next)
    assert torch.equal(measure_score_variance(DIMS, num_samples=100, seed=1).unscaled, first.unscaled)
    assert not torch.equal(measure_score_variance(DIMS, num_samples=100, seed=2).unscaled, first.unscaled)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dims": []}, r"dims must be a non-empty sequence of positive ints, got \[\]"),
    ({"dims": 8}, "dims must be a non-empty sequence of positive ints, got 8"),
    ({"dims": [4, 0]}, r"dims must hold positive ints, got 0 in \[4, 0\]"),
    ({"dims": [4, 2.5]}, r"dims must hold positive ints, got 2.5"),
    ({"dims": [4], "num_samples": 0}, "num_samples must be a positive int, got 0"),
    ({"dims": [4], "num_samples": 1}, "num_samples must be at least 2 to measure a variance, got 1"),
])
def test_measure_score_variance_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        measure_score_variance(**kwargs)


# measure_softmax_saturation


def test_scaled_scores_keep_the_softmax_spread_while_unscaled_ones_saturate():
    result = measure_softmax_saturation(DIMS, num_kvpairs=10, num_rows=1_000)
    assert result.dims.tolist() == DIMS and result.num_kvpairs == 10 and result.threshold == 1e-3
    for summary in (result.unscaled, result.scaled):
        for field in ("max_weight", "entropy", "grad_norm", "vanishing"):
            assert getattr(summary, field).shape == (len(DIMS),)
    # d = 1: dividing by sqrt(1) changes nothing
    for field in ("max_weight", "entropy", "grad_norm", "vanishing"):
        assert getattr(result.unscaled, field)[0] == getattr(result.scaled, field)[0]
    # unscaled: the largest weight grows towards 1, the entropy and the gradient shrink towards 0
    assert torch.all(result.unscaled.max_weight.diff() > 0) and result.unscaled.max_weight[-1] > 0.9
    assert torch.all(result.unscaled.entropy.diff() < 0) and result.unscaled.entropy[-1] < 0.2
    assert result.unscaled.grad_norm[-1] < 0.01 and result.unscaled.vanishing[-1] > 0.3
    # scaled: the same spread for every d
    assert torch.all((result.scaled.max_weight - result.scaled.max_weight[0]).abs() < 0.1)
    assert torch.all(result.scaled.grad_norm > 0.25) and torch.all(result.scaled.vanishing == 0)


def test_softmax_saturation_is_reproducible_for_a_seed():
    first = measure_softmax_saturation([2, 8], num_rows=50, seed=3)
    again = measure_softmax_saturation([2, 8], num_rows=50, seed=3)
    assert torch.equal(first.unscaled.entropy, again.unscaled.entropy)
    assert not torch.equal(first.unscaled.entropy, measure_softmax_saturation([2, 8], num_rows=50).unscaled.entropy)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dims": ()}, "dims must be a non-empty sequence"),
    ({"dims": [2], "num_kvpairs": 0}, "num_kvpairs must be a positive int, got 0"),
    ({"dims": [2], "num_rows": -5}, "num_rows must be a positive int, got -5"),
    ({"dims": [2], "threshold": 0}, "threshold must be a positive number, got 0"),
    ({"dims": [2], "threshold": "small"}, "threshold must be a positive number, got 'small'"),
])
def test_measure_softmax_saturation_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        measure_softmax_saturation(**kwargs)


# figures


def _lines_with_data(ax) -> list:
    return [line for line in ax.get_lines() if len(line.get_xdata()) > 0]


def test_plot_score_variance_draws_the_measurements_next_to_y_equals_d():
    result = measure_score_variance(DIMS, num_samples=100)
    fig = plot_score_variance(result)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel().startswith("$d_k$ ") and ax.get_ylabel() == "variance over 100 samples"
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["$y = d_k$"].get_ydata()) == DIMS
    assert list(lines[r"$q \cdot k$ (unscaled)"].get_ydata()) == result.unscaled.tolist()
    assert list(lines[r"$q \cdot k / √d_k$ (scaled)"].get_ydata()) == result.scaled.tolist()
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["1", "4", "64", "256"]


def test_plot_softmax_saturation_has_two_labelled_panels_with_the_measured_curves():
    result = measure_softmax_saturation(DIMS, num_rows=100)
    fig = plot_softmax_saturation(result)
    assert len(fig.axes) == 2 and fig.get_suptitle()
    for ax, field in zip(fig.axes, ("max_weight", "entropy"), strict=True):
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel() and ax.get_xscale() == "log"
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert list(lines["unscaled scores"].get_ydata()) == getattr(result.unscaled, field).tolist()
        assert list(lines[r"scaled by $1/√d_k$"].get_ydata()) == getattr(result.scaled, field).tolist()
    # the reference lines: uniform weights 1/10 and entropy log(10)
    assert fig.axes[0].get_lines()[1].get_ydata()[0] == pytest.approx(0.1)
    assert fig.axes[1].get_lines()[1].get_ydata()[0] == pytest.approx(math.log(10))


def test_plot_softmax_gradients_shows_the_median_norm_on_a_log_axis_and_the_vanishing_fraction():
    result = measure_softmax_saturation(DIMS, num_rows=100)
    fig = plot_softmax_gradients(result)
    left, right = fig.axes
    assert left.get_yscale() == "log" and right.get_yscale() == "linear"
    assert all(ax.get_title() and ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes)
    assert right.get_ylabel() == "fraction of rows with norm < 0.001"
    assert list(_lines_with_data(left)[0].get_ydata()) == result.unscaled.grad_norm.tolist()
    assert list(_lines_with_data(right)[1].get_ydata()) == result.scaled.vanishing.tolist()


@pytest.mark.parametrize(("plot", "wrong"), [
    (plot_score_variance, lambda: measure_softmax_saturation([2], num_rows=4)),
    (plot_softmax_saturation, lambda: measure_score_variance([2], num_samples=4)),
    (plot_softmax_gradients, lambda: measure_score_variance([2], num_samples=4)),
])
def test_plots_reject_anything_but_their_measurement(plot, wrong):
    result = wrong()
    with pytest.raises(TypeError, match=f"result must be a .* got {type(result).__name__}"):
        plot(result)
