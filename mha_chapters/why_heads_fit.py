"""Why several heads, with every parameter free (chapters 00, 04): fit one head and two heads by gradient descent.

The task: four positions, each holding a random content ``c_j`` of ``CONTENT_SIZE`` features (the same features at
every position); one query must return ``(c_1, c_3)``, position 1's content in the first half of the output and
position 3's in the second. The keys carry each position's one-hot code *and* its content, so the attention
weights may depend on the contents; the values carry the contents only.

Per query one head returns ``W_o W_v c_bar`` (plus a constant from the biases), with ``c_bar = sum_j a_j c_j``
one blend of the contents: every output of the head lies on one plane of ``CONTENT_SIZE`` dimensions in the
output space, whatever ``W_q, W_k, W_v, W_o`` are. :func:`one_head_floor` is the mean squared error the best such
plane leaves on the targets (principal component analysis), a floor no one-head layer goes below.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from mha_lib.modules import MultiHeadAttention

__all__ = ["CONTENT_SIZE", "NUM_POSITIONS", "FitResult", "fit_layer", "fit_two_place", "one_head_floor",
           "random_two_place"]

NUM_POSITIONS = 4
CONTENT_SIZE = 2  # features of content per position; the output has 2 * CONTENT_SIZE = 4 features
NEEDED = (1, 3)  # the query returns (content of position 1, content of position 3)


def random_two_place(num_samples: int, seed: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Queries, keys, values and targets of ``num_samples`` inputs with standard normal contents, in float64.

    Shape:
        - queries: ``(num_samples, 1, NUM_POSITIONS)``, the same one-hot query for every input
        - keys: ``(num_samples, NUM_POSITIONS, NUM_POSITIONS + CONTENT_SIZE)``, position code and content
        - values: ``(num_samples, NUM_POSITIONS, CONTENT_SIZE)``, the contents ``c_j``
        - targets: ``(num_samples, 1, 2 * CONTENT_SIZE)``, ``(c_1, c_3)``
    """
    generator = torch.Generator().manual_seed(seed)
    contents = torch.randn(num_samples, NUM_POSITIONS, CONTENT_SIZE, generator=generator, dtype=torch.float64)
    positions = torch.eye(NUM_POSITIONS, dtype=torch.float64).expand(num_samples, -1, -1)  # (n, 4, 4)
    keys = torch.cat([positions, contents], dim=-1)  # (n, 4, 4) + (n, 4, 2) -> (n, 4, 6)
    queries = torch.zeros(num_samples, 1, NUM_POSITIONS, dtype=torch.float64)
    queries[:, 0, 0] = 1.0
    targets = contents[:, list(NEEDED)].reshape(num_samples, 1, 2 * CONTENT_SIZE)  # (n, 2, 2) -> (n, 1, 4)
    return queries, keys, contents, targets


def one_head_floor(targets: Tensor) -> float:
    """The least mean squared error (per output feature) of any map whose outputs lie on one plane of
    ``CONTENT_SIZE`` dimensions: the sum of the smallest eigenvalues of the targets' covariance, divided by the
    number of output features. One head's outputs lie on such a plane, so it cannot do better.

    Shape:
        - targets: ``(num_samples, 1, 2 * CONTENT_SIZE)``
    """
    flat = targets.reshape(-1, targets.shape[-1]).double()  # (num_samples, 4)
    centred = flat - flat.mean(dim=0)
    covariance = centred.T @ centred / flat.shape[0]  # (4, 4)
    eigenvalues = torch.linalg.eigvalsh(covariance)  # ascending
    left_out = flat.shape[-1] - CONTENT_SIZE  # the plane keeps CONTENT_SIZE directions, misses the rest
    return eigenvalues[:left_out].sum().item() / flat.shape[-1]


@dataclass(frozen=True)
class FitResult:
    """A layer fitted to :func:`random_two_place`: its final mean squared error and the floor of one head."""

    layer: MultiHeadAttention
    error: float
    floor: float


def fit_two_place(num_heads: int, seed: int, num_samples: int = 128, steps: int = 400, lr: float = 0.05,
                  bias: bool = True) -> FitResult:
    """Fit ``MultiHeadAttention(6, 4, CONTENT_SIZE, 4, num_heads, bias=bias)``, every parameter free, to
    :func:`random_two_place` by full-batch Adam on the mean squared error; ``seed`` draws the contents and the
    initial weights. Float64 throughout.
    """
    queries, keys, values, targets = random_two_place(num_samples, seed)
    return fit_layer(num_heads, (queries, keys, values), targets, seed, steps, lr, bias)


def fit_layer(num_heads: int, inputs: tuple[Tensor, Tensor, Tensor], targets: Tensor, seed: int, steps: int = 400,
              lr: float = 0.05, bias: bool = True) -> FitResult:
    """Fit a layer of :func:`fit_two_place`'s sizes to any ``targets`` from initial weights drawn with ``seed``.

    The layer's ``value_size`` is that of the values given: pass the keys as values, and the values carry each
    position's code next to its content (chapter 04's "More to try"), so :func:`one_head_floor` no longer binds.

    Shape:
        - inputs: queries, keys and values as :func:`random_two_place` returns them; values may be the keys,
          ``(num_samples, NUM_POSITIONS, NUM_POSITIONS + CONTENT_SIZE)``
        - targets: ``(num_samples, 1, 2 * CONTENT_SIZE)``
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread is fastest, and sums in the same order on every machine
    try:
        torch.manual_seed(seed)
        value_size = inputs[2].shape[-1]  # CONTENT_SIZE for the contents alone
        layer = MultiHeadAttention(NUM_POSITIONS + CONTENT_SIZE, NUM_POSITIONS, value_size, 2 * CONTENT_SIZE,
                                   num_heads, bias=bias).double()
        optimizer = torch.optim.Adam(layer.parameters(), lr=lr)
        for _ in range(steps):
            optimizer.zero_grad()
            loss = ((layer(*inputs) - targets) ** 2).mean()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            error = ((layer(*inputs) - targets) ** 2).mean().item()
    finally:
        torch.set_num_threads(threads)
    return FitResult(layer.eval(), error, one_head_floor(targets))
