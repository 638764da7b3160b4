"""The anatomy of multi-head attention (chapter 04): a shape trace, parameter and FLOP counts.

Dimension names are those of :mod:`mha_lib.functional`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from mha_lib._validation import require_heads_divide, require_positive_int, wrong_type
from mha_lib.modules import MultiHeadAttention

from .i18n import N_, _
from .tables import format_table

__all__ = [
    "TraceRow",
    "count_parameters",
    "format_trace",
    "mha_flops",
    "score_bytes",
    "trace_multi_head_attention",
]


# The names of the steps and the worded operations of a traced forward pass, marked for the catalogue:
# format_trace and the explorer print them in the reader's language.
STEP_NAMES = (N_("input"), N_("mask"), N_("1 project"), N_("split heads"), N_("2 score, 3 softmax"),
              N_("3 weighted sum"), N_("4 concatenate"), N_("5 output projection"), N_("mask, repeated per head"))
OPERATIONS = (N_("W_q(queries)"), N_("W_k(keys)"), N_("W_v(values)"), N_("W_o(concatenated)"),
              N_("transpose_qkv(queries)"), N_("transpose_qkv(keys)"), N_("transpose_qkv(values)"),
              N_("weights @ values"), N_("transpose_output(output)"),
              N_("valid_lens -> mask"), N_("causal -> mask"), N_("valid_lens & causal -> mask"))
SCORES = N_("softmax(queries @ keys^T / sqrt({head_dim}))")  # the one operation with a number in it
PROJECTIONS = {"W_q": ("1 project", "W_q(queries)"), "W_k": ("1 project", "W_k(keys)"),
               "W_v": ("1 project", "W_v(values)"), "W_o": ("5 output projection", "W_o(concatenated)")}


class TraceRow(NamedTuple):
    """One step of a traced forward pass: where it is in the five steps, what it computes, and its result."""

    step: str
    operation: str
    shape: tuple[int, ...]
    tensor: Tensor


class _Watcher(TorchFunctionMode):
    """Sees every tensor operation of a forward pass (the core knows nothing of it) and keeps those that make
    a step of the five: the mask, the heads split and folded, the weights, their sum, the heads concatenated.

    The steps are told apart by the order in which they come and by what the operations make: the mask is the
    last boolean tensor before the first projection; a head split or a concatenation is a ``reshape`` from 4
    axes to 3 (three splits, queries, keys and values, then one concatenation); the weights come from
    ``softmax`` (and the ``where`` that zeroes the masked ones), the weighted sum is the product that follows.
    """

    def __init__(self, rows: list[tuple[str, str, Tensor]]) -> None:
        super().__init__()
        self.rows, self.mask, self.splits, self.weights, self.summed = rows, None, [], None, False

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 (PyTorch's protocol)
        result = func(*args, **(kwargs or {}))
        if not isinstance(result, Tensor):
            return result
        name, projected = func.__name__, any(step == "1 project" for step, _, _ in self.rows)
        if not projected and result.dtype == torch.bool:
            self.mask = result
        elif name == "repeat_interleave" and result.dtype == torch.bool:
            self.rows.append(("  split heads", "mask, repeated per head", result))
        elif name == "reshape" and args[0].dim() == 4 and result.dim() == 3 and self.weights is None:
            which = ("queries", "keys", "values")[len(self.splits)]
            self.splits.append(result)
            self.rows.append(("  split heads", f"transpose_qkv({which})", result))
        elif name in ("softmax", "where") and self.splits and not self.summed:
            self.weights = result  # the where after the softmax zeroes the masked weights
        elif name in ("matmul", "__matmul__") and self.weights is not None and not self.summed:
            self.summed = True
            head_dim = self.splits[0].shape[-1]
            self.rows.append(("2 score, 3 softmax", SCORES.format(head_dim=head_dim), self.weights))
            self.rows.append(("3 weighted sum", "weights @ values", result))
        elif name == "reshape" and args[0].dim() == 4 and result.dim() == 3 and self.summed:
            self.rows.append(("4 concatenate", "transpose_output(output)", result))
        return result


def trace_multi_head_attention(
    mha: MultiHeadAttention,
    queries: Tensor,
    keys: Tensor,
    values: Tensor,
    valid_lens: Tensor | None = None,
    causal: bool = False,
) -> list[TraceRow]:
    """Run ``mha(queries, keys, values, valid_lens, causal=causal)`` and record every step with its shape.

    The layer is watched from outside, as ``torch.utils.flop_counter.FlopCounterMode`` watches a model:
    forward hooks see what each projection returns, and a ``torch.overrides.TorchFunctionMode`` sees every
    tensor operation in between. The rows are the tensors the layer's own forward pass computes
    (``need_weights=True``, the path that folds the heads into the batch axis), so the last row holds the
    layer's output. The trace runs without gradients and leaves ``mha.attention_weights`` as it was.

    Shape:
        - queries: ``(batch_size, num_queries, query_size)``
        - keys: ``(batch_size, num_kvpairs, key_size)``
        - values: ``(batch_size, num_kvpairs, value_size)``
        - valid_lens: None, ``(batch_size,)`` or ``(batch_size, num_queries)``, integer
        - last row's tensor: ``(batch_size, num_queries, num_hiddens)``
    """
    if not isinstance(mha, MultiHeadAttention):
        raise wrong_type("mha", _("an mha_lib.MultiHeadAttention"), mha)
    rows = [("input", name, X) for name, X in (("queries", queries), ("keys", keys), ("values", values))]
    watcher = _Watcher(rows)

    def projected(name: str) -> Callable:
        def hook(module: nn.Module, inputs: tuple, output: Tensor) -> None:
            if name == "W_q" and watcher.mask is not None:  # the mask was built before the projections
                rows.append(("  mask", "", watcher.mask))
            rows.append((*PROJECTIONS[name], output))
        return hook

    hooks = [getattr(mha, name).register_forward_hook(projected(name)) for name in PROJECTIONS]
    weights_before = mha.attention.attention_weights
    try:
        with torch.no_grad(), watcher:
            mha(queries, keys, values, valid_lens, causal=causal, need_weights=True)
    finally:
        for hook in hooks:
            hook.remove()
        mha.attention.attention_weights = weights_before
    # The mask's sources: here we know which ones were given.
    sources = " & ".join(name for name, given in (("valid_lens", valid_lens is not None), ("causal", causal)) if given)
    return [TraceRow(step, f"{sources} -> mask" if step == "  mask" else operation, tuple(tensor.shape), tensor)
            for step, operation, tensor in rows]


def format_trace(rows: list[TraceRow]) -> str:
    """Lay out a trace from :func:`trace_multi_head_attention` as a table of step, operation and shape."""
    for number, row in enumerate(rows):
        if not isinstance(row, TraceRow):
            template = _("rows must be TraceRows from trace_multi_head_attention, row {number} is a {type_name}")
            raise TypeError(template.format(number=number, type_name=type(row).__name__))
    return format_table([(localized_step(row.step), localized_operation(row.operation), row.shape) for row in rows],
                        [N_("step"), N_("operation"), N_("shape")])


def localized_step(step: str) -> str:
    """A step's name in the reader's language, keeping its indentation (a sub-step starts with two spaces)."""
    name = step.lstrip(" ")
    return step[:len(step) - len(name)] + _(name)


def localized_operation(operation: str) -> str:
    """A traced operation in the reader's language: the worded operands (queries, keys, ...) are translated."""
    scores = re.fullmatch(r"softmax\(queries @ keys\^T / sqrt\((\d+)\)\)", operation)
    return _(SCORES).format(head_dim=scores[1]) if scores else _(operation)


def count_parameters(module: nn.Module) -> int:
    """The number of numbers a module learns: all its weights and biases (works on the "meta" device too)."""
    if not isinstance(module, nn.Module):
        raise wrong_type("module", _("a torch.nn.Module"), module)
    return sum(parameter.numel() for parameter in module.parameters())


def mha_flops(batch_size: int, num_queries: int, num_kvpairs: int, num_hiddens: int, num_heads: int) -> dict[str, int]:
    """FLOPs of the matrix products of one forward pass of ``MultiHeadAttention(d, d, d, d, h)``, step by step.

    A product of an ``(m, k)`` and a ``(k, n)`` matrix has ``m*n*k`` multiply-adds,
    counted as ``2*m*n*k`` FLOPs, as ``torch.utils.flop_counter`` counts them. Queries,
    keys and values all have ``num_hiddens`` features. The softmax, the scaling and the
    masking are left out: a few operations per score, small next to the products.
    The key ``"total"`` holds the sum.
    """
    for name, value in (("batch_size", batch_size), ("num_queries", num_queries), ("num_kvpairs", num_kvpairs),
                        ("num_hiddens", num_hiddens), ("num_heads", num_heads)):
        require_positive_int(name, value)
    require_heads_divide(num_hiddens, num_heads)
    b, n_q, n_kv, d, head_dim = batch_size, num_queries, num_kvpairs, num_hiddens, num_hiddens // num_heads
    flops = {
        "W_q": 2 * b * n_q * d * d,  # (b*n_q, d) @ (d, d)
        "W_k": 2 * b * n_kv * d * d,  # (b*n_kv, d) @ (d, d)
        "W_v": 2 * b * n_kv * d * d,
        "scores": 2 * b * num_heads * n_q * n_kv * head_dim,  # (b*h, n_q, head_dim) @ (b*h, head_dim, n_kv)
        "weights @ values": 2 * b * num_heads * n_q * n_kv * head_dim,  # (b*h, n_q, n_kv) @ (b*h, n_kv, head_dim)
        "W_o": 2 * b * n_q * d * d,
    }
    flops["total"] = sum(flops.values())
    return flops


def score_bytes(batch_size: int, num_heads: int, num_queries: int, num_kvpairs: int,
                dtype: torch.dtype = torch.float32) -> int:
    """Bytes of one score tensor ``(batch_size * num_heads, num_queries, num_kvpairs)`` in ``dtype``.

    The weights after the softmax take as many again; PyTorch's fused kernel stores neither.
    """
    for name, value in (("batch_size", batch_size), ("num_heads", num_heads), ("num_queries", num_queries),
                        ("num_kvpairs", num_kvpairs)):
        require_positive_int(name, value)
    if not isinstance(dtype, torch.dtype):
        raise wrong_type("dtype", _("a torch.dtype"), dtype)
    return batch_size * num_heads * num_queries * num_kvpairs * dtype.itemsize
