"""Argument checks: the one home for them, for the core, the chapters' helpers and the benchmarks alike.

Each check raises ``TypeError`` (wrong kind of thing) or ``ValueError`` (right kind, wrong value) with a
message that names the argument, what was expected and what came. Numbers may be Python's or NumPy's
(``numbers.Integral``, ``numbers.Real``); ``bool`` is never a number here. They run once per call, at the
public boundary: a layer's ``forward`` makes one call, :func:`require_layer_call`; the public functions of
:mod:`mha_lib.functional` check their arguments, then call the computations, which trust them.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor


def require_tensor(name: str, x: object, rank: int | None, layout: str, floating: bool = True) -> Tensor:
    """Require a tensor with ``rank`` axes (any number if None) laid out as ``layout``, floating-point if asked."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor {layout}, got {type(x).__name__}")
    if floating and not x.dtype.is_floating_point:
        raise TypeError(
            f"{name} must be a floating-point tensor, got dtype {x.dtype}; "
            f"convert it first, e.g. {name}.float()"
        )
    if rank is not None and x.dim() != rank:
        raise ValueError(f"{name} must be a {rank}-D tensor {layout}, got shape {tuple(x.shape)}")
    return x


def require_qkv(queries: object, keys: object, values: object, rank: int | None = None, *, layer: object = None,
                valid_lens: object = None, causal: object = False, attn_mask: object = None,
                need_weights: object = True) -> None:
    """Require queries, keys and values that can attend to one another; with ``layer``, everything its ``forward``
    needs checked, so that a layer makes one validating call.

    With ``rank`` None any rank >= 2 is accepted, as long as all three agree (``rank`` 3 is ``(batch_size,
    sequence, features)``, and only the sizes matter: :func:`mha_lib.attention_mask` checks its arguments with
    empty stand-ins on the ``meta`` device). A ``layer`` with ``W_q`` needs
    queries, keys and values of the sizes it was built with (``query_size``, ``key_size``, ``value_size``; a
    size that is None is not known yet, d2l 1.0's lazy form) in the dtype of its weights; one without (a
    :class:`~mha_lib.DotProductAttention`) needs queries and keys of one feature size. ``valid_lens``,
    ``causal``, ``attn_mask`` and ``need_weights`` are checked as :func:`mha_lib.attention_mask` and
    ``MultiHeadAttention.forward`` take them.
    """
    if rank is None:
        layout = "(..., sequence, features)"
        require_tensor("queries", queries, None, layout)
        if queries.dim() < 2:
            raise ValueError(f"queries must have at least 2 axes {layout}, got shape {tuple(queries.shape)}")
        rank = queries.dim()
    else:
        layout = "(batch_size, sequence, features)"
    for name, x in (("queries", queries), ("keys", keys), ("values", values)):
        require_tensor(name, x, rank, layout)
    if not queries.dtype == keys.dtype == values.dtype:
        raise TypeError(
            "queries, keys and values must share one dtype, "
            f"got {queries.dtype}, {keys.dtype} and {values.dtype}"
        )
    if not queries.shape[:-2] == keys.shape[:-2] == values.shape[:-2]:
        raise ValueError(
            "queries, keys and values must agree on the leading (batch) axes, got shapes "
            f"{tuple(queries.shape)}, {tuple(keys.shape)} and {tuple(values.shape)}"
        )
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(
            "keys and values must have the same number of key-value pairs (axis -2), "
            f"got keys {tuple(keys.shape)} and values {tuple(values.shape)}"
        )
    W_q = getattr(layer, "W_q", None)
    if layer is not None and W_q is None:  # DotProductAttention: queries meet keys in dot products
        require_qk_features(queries, keys)
    elif layer is not None:  # the sizes and the dtype the layer was built with (the checks raise only on a mismatch)
        sizes = (layer.query_size, layer.key_size, getattr(layer, "value_size", None))
        for name, x, size, size_name in zip(("queries", "keys", "values"), (queries, keys, values), sizes,
                                            ("query_size", "key_size", "value_size"), strict=True):
            if size is not None and x.shape[-1] != size:
                require_features(name, x, size, size_name)
        if queries.dtype != W_q.weight.dtype:
            require_layer_dtype("queries", queries, W_q.weight)
    batch_size, num_queries, num_kvpairs = queries.shape[0], queries.shape[1], keys.shape[1]
    if valid_lens is not None:
        require_valid_lens(valid_lens, ((batch_size,), (batch_size, num_queries)),
                           "(batch_size,) or (batch_size, num_queries)", num_kvpairs)
    if attn_mask is not None:
        require_bool_mask("attn_mask", attn_mask, (batch_size, num_queries, num_kvpairs),
                          "(batch_size, num_queries, num_kvpairs)")
    for name, flag in (("causal", causal), ("need_weights", need_weights)):
        require_bool(name, flag)


def require_qk_features(queries: Tensor, keys: Tensor) -> None:
    """Require queries and keys of one feature size d_k: their dot products need it."""
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            "queries and keys must have the same number of features d_k to take dot products, "
            f"got queries {tuple(queries.shape)} and keys {tuple(keys.shape)}"
        )


def require_features(name: str, x: Tensor, expected: int, size_name: str) -> None:
    """Require the last axis of ``x`` to match the size the layer was built with."""
    if x.shape[-1] != expected:
        raise ValueError(
            f"{name} has {x.shape[-1]} features (last axis of shape {tuple(x.shape)}) "
            f"but the layer was built with {size_name}={expected}"
        )


def require_layer_dtype(name: str, x: Tensor, weight: Tensor) -> None:
    """Require inputs in the dtype of the layer's weights, which nn.Linear needs."""
    if x.dtype != weight.dtype:
        raise TypeError(
            f"{name} has dtype {x.dtype} but the layer's weights are {weight.dtype}; "
            f"convert one of them, e.g. layer.to({x.dtype}) or {name}.to({weight.dtype})"
        )


def require_positive_int(name: str, value: object) -> int:
    """Require a whole number >= 1 (a Python or NumPy integer, not a bool); return it as an int."""
    return require_int(name, value, low=1)


def require_nonnegative_int(name: str, value: object) -> int:
    """Require a whole number >= 0 (a Python or NumPy integer, not a bool); return it as an int."""
    return require_int(name, value, low=0)


def require_int(name: str, value: object, low: int, high: int | None = None) -> int:
    """Require a whole number in ``[low, high]`` (no upper bound if None); return it as an int.

    Python's and NumPy's integers are whole numbers; ``True`` and ``1.0`` are not.
    """
    expected = {0: "an int >= 0", 1: "a positive int"}[low] if high is None else f"an int in [{low}, {high}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {expected}, got {value!r} (a {type(value).__name__})")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return int(value)


def require_positive_real(name: str, value: object) -> float:
    """Require a finite number > 0 (a Python or NumPy number, not a bool); return it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {value!r} (a {type(value).__name__})")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive, finite number, got {value!r}")
    return float(value)


def require_bool(name: str, value: object) -> bool:
    """Require True or False; a string such as "no" or None would otherwise pick a branch silently."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r} (a {type(value).__name__})")
    return value


def require_dropout(dropout: object, name: str = "dropout") -> float:
    """Require a dropout probability in [0, 1) (a Python or NumPy number, not a bool); return it as a float."""
    if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real):
        raise TypeError(f"{name} must be a probability in [0, 1), got {dropout!r} (a {type(dropout).__name__})")
    if not 0 <= dropout < 1:
        raise ValueError(f"{name} must be a probability in [0, 1), got {dropout!r}")
    return float(dropout)


def require_int_tensor(name: str, x: object, ranks: tuple[int, ...], layout: str) -> Tensor:
    """Require a tensor of integers (not bool) with one of ``ranks`` axes."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a tensor of integers {layout}, got {type(x).__name__}")
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers (e.g. torch.long), got dtype {x.dtype}")
    if x.dim() not in ranks:
        raise ValueError(f"{name} must be a tensor {layout}, got shape {tuple(x.shape)}")
    return x


def require_bool_mask(name: str, mask: object, target: tuple[int, ...], target_name: str) -> None:
    """Require a boolean mask (True = may attend) that broadcasts to ``target``."""
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(
            f"{name} must be a boolean tensor (True = may attend), got {got}; "
            "build one with mha_lib.valid_lens_mask or mha_lib.causal_mask"
        )
    try:
        shape = torch.broadcast_shapes(mask.shape, target)
    except RuntimeError:
        shape = None
    if shape != tuple(target):
        raise ValueError(
            f"{name} must broadcast to {target_name} = {tuple(target)}, got shape {tuple(mask.shape)}"
        )


def require_valid_lens(valid_lens: object, shapes: tuple[tuple[int, ...], ...], shape_names: str,
                       num_kvpairs: int, name: str = "valid_lens", length_name: str = "the number of key-value pairs",
                       ) -> None:
    """Require valid lengths of one of ``shapes``, whole numbers in ``[0, num_kvpairs]``.

    Integer tensors are the rule; a floating-point tensor is accepted when its values are whole, because
    the d2l book's BERT makes its lengths as float32. The values are checked where that is free: on the
    CPU. On a GPU reading them back would stop the device on every call, so there a length outside the
    range is not an error (below 0 it hides every key, above ``num_kvpairs`` it hides none) and a
    fractional one counts as the next whole number.
    """
    if not isinstance(valid_lens, Tensor):
        raise TypeError(f"{name} must be a tensor of whole numbers, got {type(valid_lens).__name__}")
    if valid_lens.dtype.is_complex or valid_lens.dtype == torch.bool:
        raise TypeError(f"{name} must hold whole numbers (e.g. torch.long), got dtype {valid_lens.dtype}")
    if tuple(valid_lens.shape) not in shapes:
        raise ValueError(
            f"{name} must have shape {' or '.join(str(shape) for shape in shapes)}, "
            f"i.e. {shape_names}, got {tuple(valid_lens.shape)}"
        )
    if valid_lens.device.type == "cpu" and valid_lens.numel():
        lengths = valid_lens.reshape(-1).tolist()
        if valid_lens.dtype.is_floating_point:
            fractional = [length for length in lengths if not (math.isfinite(length) and length == int(length))]
            if fractional:
                raise ValueError(
                    f"{name} must hold whole numbers (a float tensor is fine if its values are whole), "
                    f"got {fractional[0]}: a length of {fractional[0]} key-value pairs has no meaning"
                )
        low, high = min(lengths), max(lengths)
        if low < 0 or high > num_kvpairs:
            raise ValueError(
                f"{name} must lie in [0, {num_kvpairs}] ({length_name}), "
                f"got values from {low:g} to {high:g}"
            )


def require_heads_divide(num_hiddens: int, num_heads: int) -> None:
    """Require ``num_heads`` to divide ``num_hiddens``: every head gets ``num_hiddens // num_heads`` features."""
    if num_hiddens % num_heads:
        raise ValueError(
            f"num_heads={num_heads} must divide num_hiddens={num_hiddens} evenly, so that every head gets "
            f"num_hiddens // num_heads features; the divisors of {num_hiddens} are {divisors(num_hiddens)}"
        )


def require_kv_heads_divide(num_heads: int, num_kv_heads: object) -> int:
    """Require ``num_kv_heads`` to be a positive int that divides ``num_heads``; return it."""
    num_kv_heads = require_positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_kv_heads must divide num_heads={num_heads}, so that every key-value head serves the same "
            f"number of query heads; allowed values are {divisors(num_heads)} (1 is MQA, {num_heads} is MHA), "
            f"got {num_kv_heads!r}"
        )
    return num_kv_heads


def divisors(n: int) -> list[int]:
    """The whole numbers that divide ``n`` evenly, from 1 to ``n``."""
    return [k for k in range(1, n + 1) if n % k == 0]


def require_split_input(X: object, num_heads: object) -> None:
    """Require ``X`` of shape (batch_size, seq_len, num_hiddens) with num_heads dividing num_hiddens."""
    require_tensor("X", X, 3, "(batch_size, seq_len, num_hiddens)", floating=False)
    require_positive_int("num_heads", num_heads)
    if X.shape[-1] % num_heads:
        raise ValueError(
            f"num_heads={num_heads} must divide the feature axis of X evenly, "
            f"got num_hiddens={X.shape[-1]} (X has shape {tuple(X.shape)})"
        )


def require_merge_input(X: object, num_heads: object) -> None:
    """Require ``X`` of shape (batch_size * num_heads, seq_len, head_dim)."""
    require_tensor("X", X, 3, "(batch_size * num_heads, seq_len, head_dim)", floating=False)
    require_positive_int("num_heads", num_heads)
    if X.shape[0] % num_heads:
        raise ValueError(
            f"the first axis of X must be batch_size * num_heads, a multiple of num_heads={num_heads}, "
            f"got {X.shape[0]} (X has shape {tuple(X.shape)})"
        )
