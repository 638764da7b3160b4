"""Issue 36: what one head cannot do is a property of all its parameters, checked against weights found by search.

mha_chapters.why_heads_fit: one query must return position 1's content next to position 3's, for random
contents in the same features. Two heads fitted by gradient descent do; one head, searched from several random
starts, stays above the floor that one plane of outputs leaves.
"""

import pytest
import torch

from mha_chapters.why_heads_fit import (
    CONTENT_SIZE,
    fit_layer,
    fit_two_place,
    one_head_floor,
    random_two_place,
)
from mha_lib import MultiHeadAttention


def test_equal_contents_leave_one_head_no_choice():
    # Every position holds the same content c: whatever W_q and W_k, the one head returns W_o W_v c.
    torch.manual_seed(0)
    layer = MultiHeadAttention(6, 4, CONTENT_SIZE, 4, 1).double()
    queries, keys, values, _ = random_two_place(8, seed=0)
    same = values[:, :1].expand_as(values)  # (8, 4, 2): position 0's content everywhere
    expected = same[:, :1] @ layer.W_v.weight.T @ layer.W_o.weight.T  # (8, 1, 4)
    for scale in (0.0, 1.0, 30.0):  # sharp, soft or uniform weights: the output does not move
        with torch.no_grad():
            layer.W_q.weight.normal_(std=scale)
        torch.testing.assert_close(layer(queries, keys, same), expected)


def test_floor_is_what_the_best_plane_leaves():
    _, _, _, targets = random_two_place(512, seed=1)
    flat = targets[:, 0] - targets[:, 0].mean(dim=0)
    _, singular, _ = torch.linalg.svd(flat, full_matrices=False)
    # The best plane of CONTENT_SIZE dimensions keeps the largest singular directions and misses the rest.
    assert one_head_floor(targets) == pytest.approx((singular[CONTENT_SIZE:] ** 2).sum().item() / flat.numel())
    assert 0.4 < one_head_floor(targets) < 0.6  # independent contents of unit variance: about half is lost


@pytest.mark.slow  # a search over one head's weights, seconds of training
def test_search_of_one_heads_weights_does_not_meet_two_heads():
    two_heads = fit_two_place(2, seed=0)
    assert two_heads.error < 1e-4
    queries, keys, values, _ = random_two_place(128, seed=0)
    with torch.no_grad():
        wanted = two_heads.layer(queries, keys, values)  # the two-head layer's outputs
    floor = one_head_floor(wanted)
    errors = [fit_layer(1, (queries, keys, values), wanted, seed=start).error for start in range(5)]
    assert min(errors) >= floor - 1e-9  # no start goes below the floor ...
    assert min(errors) > 1000 * two_heads.error  # ... and none comes near what two heads reach
    assert floor > 0.3


@pytest.mark.slow  # trains a one-head and a two-head layer for each seed
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_two_heads_fit_one_head_stays_above_floor(seed):
    one, two = fit_two_place(1, seed), fit_two_place(2, seed)
    assert one.error >= one.floor - 1e-9 and one.floor > 0.3
    assert two.error < 1e-4


def test_one_head_succeeds_when_the_contents_sit_in_separate_features():
    # Position 1's content only in feature 0, position 3's only in feature 1: one blend keeps both.
    queries, keys, values, _ = random_two_place(128, seed=0)
    values = values.clone()
    values[:, 1, 1] = 0.0
    values[:, 3, 0] = 0.0
    keys = torch.cat([keys[..., :4], values], dim=-1)
    targets = values[:, [1, 3]].reshape(128, 1, 2 * CONTENT_SIZE)
    assert one_head_floor(targets) < 1e-12  # the targets lie on one plane of 2 dimensions
    assert fit_layer(1, (queries, keys, values), targets, seed=0, steps=800).error < 1e-3


def test_values_that_carry_the_position_break_the_floor_but_not_the_limit():
    # Chapter 04's "More to try": with the keys as values (position code and content), one head's outputs leave
    # the plane, so it goes below the floor of content-only values; it still stays far from two heads.
    queries, keys, _, targets = random_two_place(128, seed=0)
    floor = one_head_floor(targets)
    one, two = (fit_layer(h, (queries, keys, keys), targets, seed=0) for h in (1, 2))
    assert one.layer.W_v.in_features == keys.shape[-1] == 6
    assert 0.1 < one.error < floor - 0.1
    assert two.error < 1e-3
