"""Why several heads (chapters 00, 04): one query that needs two positions, read by one head and by two.

Four key-value pairs; the query needs the values at positions 1 and 3. The layer's four 4 x 4 matrices are
set by hand, so the example is exact and needs no seed. Read as ONE head (``head_dim = 4``), the query
scores keys 1 and 3 equally, and its one softmax must share the weight between them: the output is their
blend. Read as TWO heads (``head_dim = 2``), the same numbers give head 0 a query that matches only key 1
and head 1 a query that matches only key 3: each head picks one position and the concatenation holds both.
"""

from __future__ import annotations

import torch
from torch import Tensor

from mha_lib.modules import MultiHeadAttention

from .i18n import _

__all__ = ["LOOK", "NEEDED", "two_place_inputs", "two_place_layer"]

LOOK = 10.0  # how sharply the query looks: the size of its projected vector in each head
NEEDED = (1, 3)  # the two positions the query needs


def two_place_inputs() -> tuple[Tensor, Tensor, Tensor]:
    """One query, four keys (one-hot positions) and four values (two features of content, padded to four).

    Shape:
        - queries: ``(1, 1, 4)``
        - keys: ``(1, 4, 4)``
        - values: ``(1, 4, 4)``
    """
    queries = torch.tensor([[[1.0, 0.0, 0.0, 0.0]]])  # (batch_size, num_queries, query_size) = (1, 1, 4)
    keys = torch.eye(4).unsqueeze(0)  # (4, 4) -> (1, 4, 4): key j says "I am position j"
    values = torch.tensor([[[2.0, 0.0, 0.0, 0.0],  # (1, 4, 4): position 0 holds (2, 0), 1 holds (8, 0), ...
                            [8.0, 0.0, 0.0, 0.0],
                            [0.0, 2.0, 0.0, 0.0],
                            [0.0, 8.0, 0.0, 0.0]]])
    return queries, keys, values


def two_place_layer(num_heads: int) -> MultiHeadAttention:
    """The layer ``MultiHeadAttention(4, 4, 4, 4, num_heads)`` with the hand-set weights, num_heads 1 or 2.

    ``nn.Linear`` stores the transpose of the matrix it multiplies by: row ``i`` of ``.weight`` makes
    output feature ``i``. Features 0-1 are head 0's and 2-3 head 1's when ``num_heads = 2``.
    """
    if type(num_heads) is not int or num_heads not in (1, 2):
        template = _("num_heads must be 1 or 2 for this example (4 features), got {num_heads!r}")
        raise ValueError(template.format(num_heads=num_heads))
    layer = MultiHeadAttention(4, 4, 4, 4, num_heads).eval()
    with torch.no_grad():
        for linear in (layer.W_q, layer.W_k, layer.W_v, layer.W_o):
            linear.weight.zero_()
        layer.W_q.weight[0, 0] = layer.W_q.weight[2, 0] = LOOK  # the query becomes (LOOK, 0, LOOK, 0)
        layer.W_k.weight[0, NEEDED[0]] = 1.0  # key 1 becomes (1, 0, 0, 0): it answers features 0 (head 0)
        layer.W_k.weight[2, NEEDED[1]] = 1.0  # key 3 becomes (0, 0, 1, 0): it answers feature 2 (head 1)
        layer.W_v.weight[0, 0] = layer.W_v.weight[2, 0] = 1.0  # value (a, b, 0, 0) becomes (a, b, a, b):
        layer.W_v.weight[1, 1] = layer.W_v.weight[3, 1] = 1.0  # every head sees the whole content
        layer.W_o.weight.copy_(torch.eye(4))  # W_o passes the concatenated heads through unchanged
    return layer
