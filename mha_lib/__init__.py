"""mha_lib: the canonical multi-head attention of the mha-notebooks collection.

The names and signatures are those of the d2l book's Chinese edition 2.0 (the ``d2l`` 0.17 package):
d2l 0.17's and d2l 1.0's own Transformer and BERT code runs unchanged with ``mha_lib.MultiHeadAttention`` in place
of d2l's. ``set_language("zh_CN")`` makes the library's errors Chinese.
Read the implementation in the order ``masks`` (the boolean masks, True = may attend), ``functional`` (the masked
softmax, attention, the head split and merge), ``modules`` (the layers: ``MultiHeadAttention.forward`` reads top to
bottom), then ``grouped`` (grouped-query attention, a subclass that shares key-value heads), ``kv_cache`` (decoding
with a cache), ``rope`` (rotary position embedding), ``latent`` (MLA) and ``flex``; ``_validation`` holds the
argument checks they share, ``utils`` the seed, device and conversion helpers, ``i18n`` the language of the errors.
The chapters' helpers, figures, exercises and benchmarks are another package, ``mha_chapters``, built on this one.
"""

from .functional import dot_product_attention, masked_softmax, transpose_output, transpose_qkv
from .grouped import GroupedQueryAttention, kv_head_of, mha_to_gqa, repeat_kv_heads
from .i18n import get_language, set_language
from .kv_cache import KVCache, SlidingWindowKVCache, attend_with_cache, generate
from .latent import MultiHeadLatentAttention
from .masks import attention_mask, causal_mask, sequence_mask, valid_lens_mask
from .modules import AdditiveAttention, DotProductAttention, GeneralMultiHeadAttention, MultiHeadAttention
from .rope import (
    RotaryEmbedding,
    apply_rope,
    halves_to_interleaved,
    interleaved_to_halves,
    rope_frequencies,
    rotate_half,
    rotate_pairs,
)
from .utils import cpu_threads, pick_device, set_seed, to_torch_mha

__version__ = "2026.11.0.post0.dev0"  # the one source (pyproject reads it); docs/maintaining.md: how it moves


__all__ = [
    "AdditiveAttention",
    "DotProductAttention",
    "GeneralMultiHeadAttention",
    "GroupedQueryAttention",
    "KVCache",
    "MultiHeadAttention",
    "MultiHeadLatentAttention",
    "RotaryEmbedding",
    "SlidingWindowKVCache",
    "apply_rope",
    "attend_with_cache",
    "attention_mask",
    "causal_mask",
    "cpu_threads",
    "dot_product_attention",
    "generate",
    "get_language",
    "halves_to_interleaved",
    "interleaved_to_halves",
    "kv_head_of",
    "masked_softmax",
    "mha_to_gqa",
    "pick_device",
    "repeat_kv_heads",
    "rope_frequencies",
    "rotate_half",
    "rotate_pairs",
    "set_language",
    "sequence_mask",
    "set_seed",
    "to_torch_mha",
    "transpose_output",
    "transpose_qkv",
    "valid_lens_mask",
]
