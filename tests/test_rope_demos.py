"""Chapter 12's long-term-decay demo helpers (mha_chapters/rope.py): their arguments checked once, at the entry."""

import pytest
import torch

from mha_chapters.rope import distance_scores, unrelated_scores


def test_unrelated_scores_names_the_seed_it_was_given():
    with pytest.raises(ValueError, match=r"seed.*-5"):
        unrelated_scores(10000.0, 8, 4, seed=-5)
    with pytest.raises(TypeError, match="seed"):
        unrelated_scores(10000.0, 8, 4, seed="0")


def test_unrelated_scores_take_seed_0_and_repeat_with_it():
    first = unrelated_scores(10000.0, 8, 4, num_pairs=64, seed=0)
    assert first.shape == (5,) and first.dtype == torch.float64
    assert torch.equal(first, unrelated_scores(10000.0, 8, 4, num_pairs=64, seed=0))
    assert not torch.equal(first, unrelated_scores(10000.0, 8, 4, num_pairs=64, seed=1))


def test_unrelated_pairs_score_near_0_where_a_vector_with_itself_scores_1():
    unrelated = unrelated_scores(10000.0, 16, 8, num_pairs=4096, seed=0)
    assert unrelated.abs().max() < 0.05
    assert distance_scores(10000.0, 16, 8)[0].item() == pytest.approx(1.0)
