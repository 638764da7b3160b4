"""Argument checks shared by the core, the chapters' helpers and the benchmarks.

Each check raises ``TypeError`` (wrong kind of thing) or ``ValueError`` (right kind, wrong value, wrong device)
with a message that names the argument, what was expected and what came. Numbers and flags may be Python's or
NumPy's (``numbers.Integral``, ``numbers.Real``, ``numpy.bool_``); a flag is never a number here. The checks run
once per call, at the public boundary: a layer's ``forward`` makes one call, :func:`require_forward_arguments`;
the public functions of :mod:`mha_lib.functional` check their arguments, then call the computations, which
trust them. A check that only one module needs (the shape of a ``KVCache``, of a FlexAttention ``mask_mod``)
sits in that module, written with the helpers here.

Every message, here and wherever mha_lib raises, is a template in the message catalogue with named fields,
``_("num_heads={num_heads} must divide ...").format(num_heads=num_heads)``, so that it reads in the language chosen
with :func:`mha_lib.set_language` (see :mod:`mha_lib.i18n`); the words a caller puts into one (``layout``,
``shape_names``) are marked with ``N_`` where they are written.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from torch import Tensor

from .i18n import N_, _

# The shapes that valid lengths may have, as a message says them: one length per sample or per query.
VALID_LENS_SHAPES = N_("(batch_size,) or (batch_size, num_queries)")


def wrong_type(name: str, expected: str, value: object) -> TypeError:
    """The error for an argument of the wrong kind: ``raise wrong_type("mha", _("an mha_lib.MultiHeadAttention"),
    mha)`` says ``mha must be an mha_lib.MultiHeadAttention, got Linear``. ``expected`` comes translated already."""
    template = _("{name} must be {expected}, got {type_name}")
    return TypeError(template.format(name=name, expected=expected, type_name=type(value).__name__))


def mixed_dtypes(queries: Tensor, keys: Tensor, values: Tensor) -> TypeError:
    """The error for queries, keys and values of more than one dtype: their products need one."""
    template = _("queries, keys and values must share one dtype, got {queries_dtype}, {keys_dtype} and {values_dtype}")
    return TypeError(template.format(queries_dtype=queries.dtype, keys_dtype=keys.dtype, values_dtype=values.dtype))


def require_tensor(name: str, x: object, rank: int | None, layout: str, floating: bool = True) -> Tensor:
    """Require a tensor with ``rank`` axes (any number if None) laid out as ``layout``, floating-point if asked."""
    if not isinstance(x, Tensor):
        template = _("{name} must be a torch.Tensor {layout}, got {type_name}")
        raise TypeError(template.format(name=name, layout=_(layout), type_name=type(x).__name__))
    if floating and not x.dtype.is_floating_point:
        template = _("{name} must be a floating-point tensor, got dtype "
                     "{dtype}; convert it first, e.g. {name}.float()")
        raise TypeError(template.format(name=name, dtype=x.dtype))
    if rank is not None and x.dim() != rank:
        template = _("{name} must be a {rank}-D tensor {layout}, got shape {shape}")
        raise ValueError(template.format(name=name, rank=rank, layout=_(layout), shape=tuple(x.shape)))
    return x


def require_qkv(queries: object, keys: object, values: object, rank: int | None = None) -> None:
    """Require queries, keys and values that can attend to one another, all on the device of the queries.

    With ``rank`` None any rank >= 2 is accepted, as long as all three agree (``rank`` 3 is ``(batch_size,
    sequence, features)``).
    """
    if rank is None:
        layout = "(..., sequence, features)"
        require_tensor("queries", queries, None, layout)
        if queries.dim() < 2:
            template = _("queries must have at least 2 axes {layout}, got shape {shape}")
            raise ValueError(template.format(layout=_(layout), shape=tuple(queries.shape)))
        rank = queries.dim()
    else:
        layout = "(batch_size, sequence, features)"
    for name, x in (("queries", queries), ("keys", keys), ("values", values)):
        if not (isinstance(x, Tensor) and x.dtype.is_floating_point and x.dim() == rank):
            require_tensor(name, x, rank, layout)  # says what is wrong
    q_shape, k_shape, v_shape, device = queries.shape, keys.shape, values.shape, queries.device
    if not queries.dtype == keys.dtype == values.dtype:
        raise mixed_dtypes(queries, keys, values)
    if not q_shape[:-2] == k_shape[:-2] == v_shape[:-2]:
        template = _("queries, keys and values must agree on the leading (batch) axes, "
                     "got shapes {queries_shape}, {keys_shape} and {values_shape}")
        raise ValueError(template.format(queries_shape=tuple(queries.shape), keys_shape=tuple(keys.shape),
                                         values_shape=tuple(values.shape)))
    if k_shape[-2] != v_shape[-2]:
        template = _("keys and values must have the same number of key-value pairs "
                     "(axis -2), got keys {keys_shape} and values {values_shape}")
        raise ValueError(template.format(keys_shape=tuple(keys.shape), values_shape=tuple(values.shape)))
    for name, x in (("keys", keys), ("values", values)):
        if x.device != device:
            require_device(name, x, device)


def require_forward_arguments(layer: object, queries: object, keys: object, values: object, valid_lens: object = None,
                              causal: object = False, attn_mask: object = None, need_weights: object = True) -> None:
    """Require everything a layer's ``forward`` takes, so that it makes one validating call.

    Queries, keys and values as :func:`require_qkv` takes them, 3-D. A ``layer`` with ``W_q`` needs them in the
    sizes it was built with (``query_size``, ``key_size``, ``value_size``; a size that is None is not known yet,
    d2l 1.0's lazy form) and in the dtype and on the device of its weights; one without (a
    :class:`~mha_lib.DotProductAttention`) needs queries and keys of one feature size. ``valid_lens``,
    ``causal`` and ``attn_mask`` are checked as :func:`mha_lib.attention_mask` takes them, on the device of the
    queries, and ``need_weights`` as ``MultiHeadAttention.forward`` takes it.
    """
    require_qkv(queries, keys, values, 3)
    q_shape, k_shape, v_shape = queries.shape, keys.shape, values.shape
    W_q = getattr(layer, "W_q", None)
    if W_q is None:  # DotProductAttention: queries meet keys in dot products
        require_qk_features(queries, keys)
    else:  # its sizes (None: not known yet, d2l 1.0's lazy form), its weights' dtype and device
        query_size, key_size = layer.query_size, layer.key_size
        value_size = getattr(layer, "value_size", None)  # AdditiveAttention takes values of any width
        if query_size is not None and q_shape[-1] != query_size:
            require_features("queries", queries, query_size, "query_size")
        if key_size is not None and k_shape[-1] != key_size:
            require_features("keys", keys, key_size, "key_size")
        if value_size is not None and v_shape[-1] != value_size:
            require_features("values", values, value_size, "value_size")
        weight = W_q.weight
        if queries.dtype != weight.dtype:
            require_layer_dtype("queries", queries, weight)
        if queries.device != weight.device:
            require_layer_device("queries", queries, weight)
    require_masks(q_shape[0], q_shape[1], k_shape[1], valid_lens, causal, attn_mask, device=queries.device)
    if not isinstance(need_weights, bool):
        require_bool("need_weights", need_weights)  # NumPy's bool is fine too


def require_masks(batch_size: int, num_queries: int, num_kvpairs: int, valid_lens: object, causal: object,
                  attn_mask: object, device: torch.device | None = None) -> None:
    """Require ``valid_lens``, ``causal`` and ``attn_mask`` as :func:`mha_lib.attention_mask` takes them, the two
    tensors on one device: with ``device`` (that of the queries), on it."""
    if valid_lens is not None:
        require_valid_lens(valid_lens, ((batch_size,), (batch_size, num_queries)), VALID_LENS_SHAPES)
        if device is not None and valid_lens.device != device:
            require_device("valid_lens", valid_lens, device)
    if attn_mask is not None:
        require_bool_mask("attn_mask", attn_mask, (batch_size, num_queries, num_kvpairs),
                          "(batch_size, num_queries, num_kvpairs)")
        if device is not None and attn_mask.device != device:
            require_device("attn_mask", attn_mask, device)
        elif valid_lens is not None and attn_mask.device != valid_lens.device:
            require_device("attn_mask", attn_mask, valid_lens.device, other="valid_lens")
    if not isinstance(causal, bool):
        require_bool("causal", causal)  # NumPy's bool is fine too


def require_device(name: str, x: Tensor, device: torch.device, other: str = "queries") -> None:
    """Require ``x`` on ``device``, the device of the argument ``other``: kernels take all their tensors on one."""
    if x.device != device:
        template = _("{name} is on {device} but {other} is on {other_device}; move it there first, "
                     "e.g. {name}.to({other}.device)")
        raise ValueError(template.format(name=name, device=x.device, other=other, other_device=device))


def require_layer_device(name: str, x: Tensor, weight: Tensor) -> None:
    """Require inputs on the device of the layer's weights."""
    if x.device != weight.device:
        template = _("{name} is on {x_device} but the layer's weights are on {weight_device}; move one of them, "
                     "e.g. layer.to({name}.device) or {name}.to(\"{weight_device}\")")
        raise ValueError(template.format(name=name, x_device=x.device, weight_device=weight.device))


def require_head_split(layer: object, queries: object, keys: object, values: object, mask: object,
                       need_weights: object) -> None:
    """Require what ``GroupedQueryAttention.attend`` takes: projected tensors with the heads on axis 1, in the
    layer's head counts and widths, a boolean mask that broadcasts to the scores, all on the device of ``queries``.
    """
    layouts = {"queries": N_("(batch_size, num_heads, num_queries, head_dim)"),
               "keys": N_("(batch_size, num_kv_heads, num_kvpairs, head_dim)"),
               "values": N_("(batch_size, num_kv_heads, num_kvpairs, v_head_dim)")}
    for name, x in (("queries", queries), ("keys", keys), ("values", values)):
        require_tensor(name, x, 4, layouts[name])
    batch_size, num_queries, num_kvpairs = queries.shape[0], queries.shape[2], keys.shape[2]
    expected = {"queries": (batch_size, layer.num_heads, num_queries, layer.head_dim),
                "keys": (batch_size, layer.num_kv_heads, num_kvpairs, layer.head_dim),
                "values": (batch_size, layer.num_kv_heads, num_kvpairs, layer.v_head_dim)}
    for name, x in (("queries", queries), ("keys", keys), ("values", values)):
        if tuple(x.shape) != expected[name]:
            template = _("{name} must have shape {layout} = {expected} for this layer, got {shape}")
            raise ValueError(template.format(name=name, layout=_(layouts[name]), expected=expected[name],
                                             shape=tuple(x.shape)))
        if x.dtype != queries.dtype:
            raise mixed_dtypes(queries, keys, values)
        require_device(name, x, queries.device)
    if mask is not None:
        require_bool_mask("mask", mask, (batch_size, layer.num_heads, num_queries, num_kvpairs),
                          N_("(batch_size, num_heads, num_queries, num_kvpairs)"))
        require_device("mask", mask, queries.device)
    require_bool("need_weights", need_weights)


def require_qk_features(queries: Tensor, keys: Tensor) -> None:
    """Require queries and keys of one feature size d_k >= 1: their dot products need it, and the scale 1/sqrt(d_k)."""
    if queries.shape[-1] != keys.shape[-1]:
        template = _("queries and keys must have the same number of features d_k to take "
                     "dot products, got queries {queries_shape} and keys {keys_shape}")
        raise ValueError(template.format(queries_shape=tuple(queries.shape), keys_shape=tuple(keys.shape)))
    if queries.shape[-1] == 0:
        template = _("queries and keys must have at least 1 feature d_k, since the scores are divided by "
                     "sqrt(d_k), got queries {queries_shape} and keys {keys_shape}")
        raise ValueError(template.format(queries_shape=tuple(queries.shape), keys_shape=tuple(keys.shape)))


def require_features(name: str, x: Tensor, expected: int, size_name: str) -> None:
    """Require the last axis of ``x`` to match the size the layer was built with."""
    if x.shape[-1] != expected:
        template = _("{name} has {features} features (last axis of shape {shape}) "
                     "but the layer was built with {size_name}={expected}")
        raise ValueError(template.format(name=name, features=x.shape[-1], shape=tuple(x.shape), size_name=size_name,
                                         expected=expected))


def require_layer_dtype(name: str, x: Tensor, weight: Tensor) -> None:
    """Require inputs in the dtype of the layer's weights, which nn.Linear needs."""
    if x.dtype != weight.dtype:
        template = _("{name} has dtype {x_dtype} but the layer's weights are {weight_dtype}; "
                     "convert one of them, e.g. layer.to({x_dtype}) or {name}.to({weight_dtype})")
        raise TypeError(template.format(name=name, x_dtype=x.dtype, weight_dtype=weight.dtype))


def require_called(mha: object) -> None:
    """Require a layer whose input sizes are known: one built in d2l 1.0's form learns them from its first call."""
    if mha.query_size is None:
        raise ValueError(_("mha was built in d2l 1.0's form and has not been called yet, so its input sizes and "
                           "weights do not exist; call it once on inputs of the right sizes, then convert it"))


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
    if high is None:
        expected = {0: _("an int >= 0"), 1: _("a positive int")}[low]
    else:
        expected = _("an int in [{low}, {high}]").format(low=low, high=high)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        template = _("{name} must be {expected}, got {value!r} (a {type_name})")
        raise TypeError(template.format(name=name, expected=expected, value=value, type_name=type(value).__name__))
    if value < low or (high is not None and value > high):
        template = _("{name} must be {expected}, got {value!r}")
        raise ValueError(template.format(name=name, expected=expected, value=value))
    return int(value)


def require_positive_real(name: str, value: object) -> float:
    """Require a finite number > 0 (a Python or NumPy number, not a bool); return it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        template = _("{name} must be a positive number, got {value!r} (a {type_name})")
        raise TypeError(template.format(name=name, value=value, type_name=type(value).__name__))
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(_("{name} must be a positive, finite number, got {value!r}").format(name=name, value=value))
    return float(value)


def require_bool(name: str, value: object) -> bool:
    """Require True or False, Python's or NumPy's; return it as a bool. A string such as "no", None or the number 1
    would otherwise pick a branch silently."""
    if not isinstance(value, (bool, np.bool_)):
        template = _("{name} must be True or False, got {value!r} (a {type_name})")
        raise TypeError(template.format(name=name, value=value, type_name=type(value).__name__))
    return bool(value)


def require_dropout(dropout: object, name: str = "dropout") -> float:
    """Require a dropout probability in [0, 1) (a Python or NumPy number, not a bool); return it as a float."""
    if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real):
        template = _("{name} must be a probability in [0, 1), got {dropout!r} (a {type_name})")
        raise TypeError(template.format(name=name, dropout=dropout, type_name=type(dropout).__name__))
    if not 0 <= dropout < 1:
        template = _("{name} must be a probability in [0, 1), got {dropout!r}")
        raise ValueError(template.format(name=name, dropout=dropout))
    return float(dropout)


def require_int_tensor(name: str, x: object, ranks: tuple[int, ...], layout: str) -> Tensor:
    """Require a tensor of integers (not bool) with one of ``ranks`` axes."""
    if not isinstance(x, Tensor):
        template = _("{name} must be a tensor of integers {layout}, got {type_name}")
        raise TypeError(template.format(name=name, layout=_(layout), type_name=type(x).__name__))
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        template = _("{name} must hold integers (e.g. torch.long), got dtype {dtype}")
        raise TypeError(template.format(name=name, dtype=x.dtype))
    if x.dim() not in ranks:
        template = _("{name} must be a tensor {layout}, got shape {shape}")
        raise ValueError(template.format(name=name, layout=_(layout), shape=tuple(x.shape)))
    return x


def require_bool_mask(name: str, mask: object, target: tuple[int, ...], target_name: str) -> None:
    """Require a boolean mask (True = may attend) that broadcasts to ``target``."""
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        template = _("{name} must be a boolean tensor (True = may attend), got {got}; "
                     "build one with mha_lib.valid_lens_mask or mha_lib.causal_mask")
        raise TypeError(template.format(name=name, got=got))
    try:
        shape = torch.broadcast_shapes(mask.shape, target)
    except RuntimeError:
        shape = None
    if shape != tuple(target):
        template = _("{name} must broadcast to {target_name} = {target}, got shape {shape}")
        raise ValueError(template.format(name=name, target_name=_(target_name), target=tuple(target),
                                         shape=tuple(mask.shape)))


def require_valid_lens(valid_lens: object, shapes: tuple[tuple[int, ...], ...], shape_names: str,
                       name: str = "valid_lens") -> None:
    """Require valid lengths of one of ``shapes``, whole numbers.

    Integer tensors are the rule; a floating-point tensor is accepted when its values are whole, because
    the d2l book's BERT makes its lengths as float32. The values are not bounded: the masks count a length as if
    clamped to ``[0, num_kvpairs]``, as d2l does (d2l 0.17's ``predict_seq2seq`` passes lengths above the number
    of steps), on every device. Whether a float length is whole is checked where that is free, on the CPU; on a
    GPU reading it back would stop the device on every call, and a fractional one counts as the next whole
    number. ``shape_names`` describes the shapes in the message; a caller marks its words with ``N_``.
    """
    if not isinstance(valid_lens, Tensor):
        raise wrong_type(name, _("a tensor of whole numbers"), valid_lens)
    dtype = valid_lens.dtype
    if dtype.is_complex or dtype == torch.bool:
        template = _("{name} must hold whole numbers (e.g. torch.long), got dtype {dtype}")
        raise TypeError(template.format(name=name, dtype=dtype))
    if valid_lens.shape not in shapes:  # a torch.Size is a tuple
        template = _("{name} must have shape {shapes}, i.e. {shape_names}, got {shape}")
        raise ValueError(template.format(name=name, shapes=_(" or ").join(str(shape) for shape in shapes),
                                         shape_names=_(shape_names), shape=tuple(valid_lens.shape)))
    if dtype.is_floating_point and valid_lens.is_cpu and valid_lens.numel():
        lengths = valid_lens.reshape(-1).tolist()
        fractional = [length for length in lengths if not (math.isfinite(length) and length == int(length))]
        if fractional:
            template = _("{name} must hold whole numbers (a float tensor is fine if its values are "
                         "whole), got {length}: a length of {length} has no meaning")
            raise ValueError(template.format(name=name, length=fractional[0]))


def require_heads_divide(num_hiddens: int, num_heads: int) -> None:
    """Require ``num_heads`` to divide ``num_hiddens``: every head gets ``num_hiddens // num_heads`` features."""
    if num_hiddens % num_heads:
        template = _("num_heads={num_heads} must divide num_hiddens={num_hiddens} evenly, so that every head "
                     "gets num_hiddens // num_heads features; the divisors of {num_hiddens} are {divisors}")
        raise ValueError(template.format(num_heads=num_heads, num_hiddens=num_hiddens, divisors=divisors(num_hiddens)))


def require_kv_heads_divide(num_heads: int, num_kv_heads: object) -> int:
    """Require ``num_kv_heads`` to be a positive int that divides ``num_heads``; return it."""
    num_kv_heads = require_positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        template = _("num_kv_heads must divide num_heads={num_heads}, so that every "
                     "key-value head serves the same number of query heads; allowed values "
                     "are {divisors} (1 is MQA, {num_heads} is MHA), got {num_kv_heads!r}")
        raise ValueError(template.format(num_heads=num_heads, divisors=divisors(num_heads), num_kv_heads=num_kv_heads))
    return num_kv_heads


def divisors(n: int) -> list[int]:
    """The whole numbers that divide ``n`` evenly, from 1 to ``n``."""
    return [k for k in range(1, n + 1) if n % k == 0]


def require_split_input(X: object, num_heads: object) -> None:
    """Require ``X`` of shape (batch_size, seq_len, num_hiddens) with num_heads dividing num_hiddens."""
    require_tensor("X", X, 3, "(batch_size, seq_len, num_hiddens)", floating=False)
    require_positive_int("num_heads", num_heads)
    if X.shape[-1] % num_heads:
        template = _("num_heads={num_heads} must divide the feature axis of X "
                     "evenly, got num_hiddens={num_hiddens} (X has shape {shape})")
        raise ValueError(template.format(num_heads=num_heads, num_hiddens=X.shape[-1], shape=tuple(X.shape)))


def require_merge_input(X: object, num_heads: object) -> None:
    """Require ``X`` of shape (batch_size * num_heads, seq_len, head_dim)."""
    require_tensor("X", X, 3, "(batch_size * num_heads, seq_len, head_dim)", floating=False)
    require_positive_int("num_heads", num_heads)
    if X.shape[0] % num_heads:
        template = _("the first axis of X must be batch_size * num_heads, a multiple "
                     "of num_heads={num_heads}, got {first_axis} (X has shape {shape})")
        raise ValueError(template.format(num_heads=num_heads, first_axis=X.shape[0], shape=tuple(X.shape)))
