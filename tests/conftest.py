"""Shared test setup: a figure backend with no window, and reproducible seeds."""

import matplotlib
import pytest
import torch

# Only the unit tests draw off-screen; the notebooks keep their inline backend.
matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)
