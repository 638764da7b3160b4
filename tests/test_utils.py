"""mha_lib.utils: devices, seeds and the CPU thread count."""

import pytest
import torch

from mha_lib import cpu_threads, pick_device, set_seed


def test_cpu_threads_sets_the_number_inside_the_block_and_restores_it():
    before = torch.get_num_threads()
    with cpu_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_cpu_threads_restores_the_number_when_the_block_raises():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="inside"), cpu_threads(1):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before


def test_cpu_threads_none_leaves_the_number_alone():
    before = torch.get_num_threads()
    with cpu_threads(None):
        assert torch.get_num_threads() == before


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_cpu_threads_rejects_a_number_that_is_not_a_positive_int(bad):
    with pytest.raises(ValueError if bad in (0, -1) and not isinstance(bad, bool) else TypeError,
                       match="num_threads must be a positive int"):
        with cpu_threads(bad):
            pass


def test_set_seed_makes_random_numbers_repeat():
    set_seed(3)
    first = torch.randn(4)
    set_seed(3)
    assert torch.equal(first, torch.randn(4))


def test_pick_device_returns_a_device_that_works():
    device = pick_device()
    assert torch.ones(2, device=device).sum().item() == 2
