"""Boolean attention masks: True means "this query may attend to this key".

That is the polarity of ``torch.nn.functional.scaled_dot_product_attention``.
``torch.nn.MultiheadAttention`` uses the opposite one for its boolean
``key_padding_mask`` and ``attn_mask`` (True = ignore); pass ``~mask`` there.

The masks are built in :mod:`mha_lib.functional`, next to the softmax that applies them; this module names
the builders for ``from mha_lib.masks import ...``.
"""

from .functional import attention_mask, causal_mask, sequence_mask, valid_lens_mask

__all__ = ["attention_mask", "causal_mask", "sequence_mask", "valid_lens_mask"]
