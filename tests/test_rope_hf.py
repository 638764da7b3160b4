"""Rotary position embedding and checkpoint conversion against Hugging Face transformers' own Llama code.

An independent implementation: ``apply_rotary_pos_emb``, ``LlamaRotaryEmbedding`` and ``LlamaAttention`` from
``transformers.models.llama.modeling_llama``, on a small random Llama-style config with grouped-query attention
(4 query heads, 2 key-value heads) and biased projections (``attention_bias=True``, as Qwen2's q/k/v). Nothing is
downloaded: the config is written here and the weights are random. transformers is a test-only extra
(``pip install -e .[parity]``); without it this file is skipped.

- halves: mha_lib's ``GroupedQueryAttention(rope="halves")`` and HF's ``LlamaAttention`` with the same weights give
  the same output.
- interleaved: an interleaved layer converted with ``interleaved_to_halves`` (``W_q`` and its bias with
  ``num_heads``, ``W_k`` and its bias with ``num_kv_heads``) gives, in HF's ``LlamaAttention``, the interleaved
  layer's output; converting ``W_k`` with ``num_heads``, or leaving the biases, does not.
"""

import pytest
import torch

from mha_lib import GroupedQueryAttention, apply_rope, interleaved_to_halves

modeling_llama = pytest.importorskip("transformers.models.llama.modeling_llama")
LlamaConfig = pytest.importorskip("transformers").LlamaConfig

NUM_HIDDENS, NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BASE = 32, 4, 2, 8, 10000.0
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}  # float32 throughout: HF computes its angles in float32


def llama_config(base: float = BASE) -> LlamaConfig:
    config = LlamaConfig(hidden_size=NUM_HIDDENS, num_attention_heads=NUM_HEADS, num_key_value_heads=NUM_KV_HEADS,
                         head_dim=HEAD_DIM, intermediate_size=64, num_hidden_layers=1, vocab_size=16,
                         max_position_embeddings=256, rope_theta=base, attention_bias=True)
    config._attn_implementation = "eager"
    return config


def hf_attention(config: LlamaConfig, state: dict) -> torch.nn.Module:
    """HF's LlamaAttention holding mha_lib's weights (W_q -> q_proj, ..., W_o -> o_proj)."""
    layer = modeling_llama.LlamaAttention(config, layer_idx=0).eval()
    names = {"W_q": "q_proj", "W_k": "k_proj", "W_v": "v_proj", "W_o": "o_proj"}
    layer.load_state_dict({f"{names[key.split('.')[0]]}.{key.split('.')[1]}": value for key, value in state.items()})
    return layer


def hf_forward(layer: torch.nn.Module, config: LlamaConfig, x: torch.Tensor, position_ids: torch.Tensor):
    """HF's attention over x at position_ids, causal through an additive mask (0 or the dtype's minimum)."""
    cos, sin = modeling_llama.LlamaRotaryEmbedding(config)(x, position_ids)
    seq_len = x.shape[1]
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
    mask = torch.zeros(seq_len, seq_len).masked_fill(~causal, torch.finfo(torch.float32).min)
    output, _ = layer(x, (cos, sin), mask.expand(x.shape[0], 1, seq_len, seq_len))
    return output


def gqa(rope: str, seed: int) -> GroupedQueryAttention:
    torch.manual_seed(seed)
    return GroupedQueryAttention(NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, num_heads=NUM_HEADS,
                                 num_kv_heads=NUM_KV_HEADS, bias=True, rope=rope).eval()


def converted(state: dict, heads: dict) -> dict:
    """An interleaved checkpoint's state for the halves convention, each projection with its own heads."""
    state = dict(state)
    for name, num_heads in heads.items():
        for part in ("weight", "bias"):
            state[f"{name}.{part}"] = interleaved_to_halves(state[f"{name}.{part}"], num_heads)
    return state


@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_apply_rope_halves_equals_hf_apply_rotary_pos_emb(base):
    torch.manual_seed(0)
    q, k = torch.randn(2, NUM_HEADS, 9, HEAD_DIM), torch.randn(2, NUM_KV_HEADS, 9, HEAD_DIM)
    position_ids = torch.arange(3, 12).expand(2, 9)  # a prompt that starts at position 3, as after a cache
    cos, sin = modeling_llama.LlamaRotaryEmbedding(llama_config(base))(q, position_ids)
    hf_q, hf_k = modeling_llama.apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(apply_rope(q, torch.arange(3, 12), convention="halves", base=base), hf_q, **TOLERANCE)
    torch.testing.assert_close(apply_rope(k, torch.arange(3, 12), convention="halves", base=base), hf_k, **TOLERANCE)
    assert torch.equal(modeling_llama.rotate_half(q), torch.cat([-q[..., HEAD_DIM // 2:], q[..., :HEAD_DIM // 2]], -1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_halves_layer_equals_hf_llama_attention_with_gqa_and_biases(seed):
    config, layer = llama_config(), gqa("halves", seed)
    x = torch.randn(2, 7, NUM_HIDDENS)
    with torch.no_grad():
        expected = hf_forward(hf_attention(config, layer.state_dict()), config, x, torch.arange(7).expand(2, 7))
        torch.testing.assert_close(layer(x, x, x, causal=True), expected, **TOLERANCE)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interleaved_checkpoint_converted_per_projection_runs_in_hf_llama_attention(seed):
    config, layer = llama_config(), gqa("interleaved", seed)
    x = torch.randn(2, 7, NUM_HIDDENS)
    positions = torch.arange(7).expand(2, 7)
    with torch.no_grad():
        expected = layer(x, x, x, causal=True)  # the interleaved model, Meta's convention

        def hf_output(state):
            return hf_forward(hf_attention(config, state), config, x, positions)

        right = converted(layer.state_dict(), {"W_q": NUM_HEADS, "W_k": NUM_KV_HEADS})
        torch.testing.assert_close(hf_output(right), expected, **TOLERANCE)
        k_with_num_heads = converted(layer.state_dict(), {"W_q": NUM_HEADS, "W_k": NUM_HEADS})
        assert (hf_output(k_with_num_heads) - expected).abs().max() > 1e-3  # silently other outputs
        weights_only = dict(right, **{name: layer.state_dict()[name] for name in ("W_q.bias", "W_k.bias")})
        assert (hf_output(weights_only) - expected).abs().max() > 1e-3
        assert (hf_output(layer.state_dict()) - expected).abs().max() > 1e-3  # loaded as is


def test_linear_position_interpolation_equals_hf_linear_rope_scaling():
    """The chapter's distance_scores(factor=4) against HF's rope_scaling {"rope_type": "linear", "factor": 4}."""
    from mha_chapters.rope import distance_scores
    config = LlamaConfig(hidden_size=64 * 2, num_attention_heads=2, num_key_value_heads=1, head_dim=64,
                         max_position_embeddings=4096, rope_theta=BASE,
                         rope_scaling={"rope_type": "linear", "factor": 4.0})
    x = torch.zeros(1, 1025, 64)
    cos, _ = modeling_llama.LlamaRotaryEmbedding(config)(x, torch.arange(1025)[None])
    # a query of ones at distance d from a key of ones: its score / head_dim is the mean of cos(d * theta_i / 4)
    torch.testing.assert_close(distance_scores(BASE, 64, 1024, factor=4.0).float(), cos[0].mean(-1), **TOLERANCE)
    assert (distance_scores(BASE, 64, 1024).float() - cos[0].mean(-1)).abs().max() > 0.1  # unscaled: other scores
