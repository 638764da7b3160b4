"""Chapter 13's helpers: the repeated-span task, the attention-only model, the scores that find induction heads,
and training. Small sizes only: the chapter itself asserts what training produces."""

import math

import pytest
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from mha_chapters.induction import (
    AttentionOnlyTransformer,
    RepeatTask,
    TrainResult,
    ablate_heads,
    attention_weights,
    build_model,
    induction_keys,
    induction_score,
    plot_phase_change,
    previous_token_score,
    repeated_loss,
    train,
)
from mha_lib import MultiHeadAttention

SMALL = RepeatTask(vocab_size=8, seq_len=10, min_period=2, max_period=5)


def sample(task=SMALL, batch_size=16, seed=0):
    return task.sample(batch_size, torch.Generator().manual_seed(seed))


# ---- the task ----------------------------------------------------------------------------------------------------

def test_sample_repeats_a_span_with_the_period_its_mask_says():
    tokens, repeats = sample(batch_size=200)
    assert tokens.shape == repeats.shape == (200, 10) and tokens.dtype == torch.int64 and repeats.dtype == torch.bool
    periods = (~repeats).sum(dim=1)  # positions 0 .. period - 1 are the span itself
    assert periods.min().item() == 2 and periods.max().item() == 5  # both ends are drawn among 200 sequences
    for row, period in zip(tokens, periods.tolist(), strict=True):
        assert torch.equal(row[period:], row[:-period])  # token t is token t - period
    assert torch.equal(repeats, torch.arange(10) >= periods[:, None])
    assert 0 <= tokens.min() and tokens.max() < 8


def test_sample_is_reproducible_and_leaves_the_global_rng_alone():
    before = torch.random.get_rng_state()
    first, second = sample(seed=3), sample(seed=3)
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    assert not torch.equal(sample(seed=4)[0], first[0])
    assert torch.equal(torch.random.get_rng_state(), before)


@pytest.mark.parametrize(("kwargs", "error", "phrase"), [
    ({"min_period": 5, "max_period": 4}, ValueError, "min_period <= max_period < seq_len=24"),
    ({"max_period": 24}, ValueError, "max_period=24"),
    ({"vocab_size": 0}, ValueError, "vocab_size"),
    ({"seq_len": 2.5}, TypeError, "seq_len"),
])
def test_a_task_with_bad_sizes_is_refused(kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        RepeatTask(**kwargs)


def test_sample_refuses_a_missing_generator():
    with pytest.raises(TypeError, match="generator must be a torch.Generator, got int"):
        SMALL.sample(4, 0)


# ---- the model ---------------------------------------------------------------------------------------------------

def test_the_model_predicts_a_next_token_at_every_position_and_is_causal():
    model = build_model(SMALL, num_layers=2, num_hiddens=8, num_heads=2, seed=0)
    tokens, _ = sample(batch_size=3)
    logits = model(tokens)
    assert logits.shape == (3, 10, 8) and logits.dtype == torch.float64
    changed = tokens.clone()
    changed[:, 6] = (changed[:, 6] + 1) % 8
    assert torch.equal(model(changed)[:, :6], logits[:, :6])  # no position sees a later token
    assert not torch.allclose(model(changed)[:, 6:], logits[:, 6:])


def test_the_layers_add_to_a_residual_stream():
    model = build_model(SMALL, num_layers=2, num_hiddens=8, num_heads=2, seed=1)
    tokens, _ = sample(batch_size=2)
    with ablate_heads(model.layers[0], [0, 1]), ablate_heads(model.layers[1], [0, 1]):  # W_o has no bias: adds 0
        logits = model(tokens)
    embeddings = model.token_embedding(tokens) + model.position_embedding.weight
    torch.testing.assert_close(logits, model.readout(embeddings), rtol=0, atol=0)


def test_build_model_draws_float64_weights_from_its_seed_only():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a, b = build_model(SMALL, 2, 8, 2, seed=5), build_model(SMALL, 2, 8, 2, seed=5)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert torch.get_default_dtype() == torch.float32  # restored
    assert all(p.dtype == torch.float64 for p in a.parameters())
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(build_model(SMALL, 2, 8, 2, seed=6).readout.weight, a.readout.weight)
    assert isinstance(a, AttentionOnlyTransformer) and len(a.layers) == 2
    assert all(isinstance(layer, MultiHeadAttention) and layer.num_heads == 2 for layer in a.layers)


@pytest.mark.parametrize(("kwargs", "error", "phrase"), [
    ({"task": "task"}, TypeError, "task must be a RepeatTask, got str"),
    ({"num_layers": 0}, ValueError, "num_layers"),
    ({"num_heads": True}, TypeError, "num_heads"),
])
def test_build_model_refuses_bad_arguments(kwargs, error, phrase):
    arguments = {"task": SMALL, "num_layers": 1, "num_hiddens": 8, "num_heads": 2} | kwargs
    with pytest.raises(error, match=phrase):
        build_model(**arguments)
    assert torch.get_default_dtype() == torch.float32


# ---- the measurements --------------------------------------------------------------------------------------------

def test_repeated_loss_is_the_mean_cross_entropy_where_the_current_token_repeats():
    model = build_model(SMALL, 1, 8, 2, seed=0)
    tokens, repeats = sample(batch_size=5)
    logits = model(tokens)
    expected = [F.cross_entropy(logits[b, t], tokens[b, t + 1]).item()
                for b in range(5) for t in range(9) if repeats[b, t]]
    assert repeated_loss(model, tokens, repeats) == pytest.approx(sum(expected) / len(expected), rel=1e-12)
    for mode in (True, False):  # measured in eval mode, and the model is left in the mode it was in
        model.train(mode)
        repeated_loss(model, tokens, repeats)
        assert model.training is mode


def test_previous_token_score_reads_one_below_the_diagonal():
    seq_len = 5
    on_previous = torch.zeros(1, 1, seq_len, seq_len, dtype=torch.float64)
    on_previous[0, 0, 0, 0] = 1.0
    on_previous[0, 0, torch.arange(1, seq_len), torch.arange(seq_len - 1)] = 1.0  # query t on key t - 1
    uniform = torch.ones(seq_len, seq_len).tril()
    uniform = (uniform / uniform.sum(-1, keepdim=True))[None, None]  # query t: 1 / (t + 1) on each key
    weights = torch.cat([on_previous, uniform.double()], dim=1)  # (1, 2 heads, 5, 5)
    expected_uniform = sum(1 / (t + 1) for t in range(1, seq_len)) / (seq_len - 1)
    torch.testing.assert_close(previous_token_score(weights), torch.tensor([1.0, expected_uniform],
                                                                           dtype=torch.float64))


def test_induction_keys_by_hand():
    tokens = torch.tensor([[4, 7, 4, 7, 9]])
    keys = induction_keys(tokens)[0]
    # query 2 (token 4): 4 was at 0, key 1 follows it; query 3 (token 7): key 2; query 4 (9): none
    expected = torch.zeros(5, 5, dtype=torch.bool)
    expected[2, 1] = expected[3, 2] = True
    assert torch.equal(keys, expected)


def loop_induction_score(weights, tokens):
    batch_size, num_heads, seq_len, _ = weights.shape
    totals, count = torch.zeros(num_heads, dtype=weights.dtype), 0
    for b in range(batch_size):
        for t in range(seq_len):
            keys = [s + 1 for s in range(t) if tokens[b, s] == tokens[b, t]]
            if keys:
                totals += weights[b, :, t, keys].sum(dim=-1)
                count += 1
    return totals / count


def test_induction_score_agrees_with_a_loop():
    tokens, _ = sample(batch_size=6, seed=2)
    scores = torch.randn(6, 3, 10, 10, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    weights = scores.masked_fill(~torch.ones(10, 10, dtype=torch.bool).tril(), -math.inf).softmax(-1)
    torch.testing.assert_close(induction_score(weights, tokens), loop_induction_score(weights, tokens))


def test_a_perfect_induction_head_scores_one():
    tokens, _ = sample(batch_size=4, seed=1)
    keys = induction_keys(tokens).double()  # (batch, queries, keys)
    spread = keys / keys.sum(-1, keepdim=True).clamp(min=1)  # all weight on the induction keys, where there are any
    weights = torch.where(keys.any(-1, keepdim=True), spread, torch.eye(10, dtype=torch.float64))[:, None]
    torch.testing.assert_close(induction_score(weights, tokens), torch.ones(1, dtype=torch.float64))


@pytest.mark.parametrize(("weights", "tokens", "error", "phrase"), [
    (torch.ones(2, 1, 4, 4), torch.zeros(2, 5, dtype=torch.int64), ValueError, "tokens must have shape (2, 4)"),
    (torch.ones(2, 1, 4, 4), torch.zeros(2, 4), TypeError, "tokens must be a 2-D integer tensor"),
    (torch.ones(1, 4, 4), torch.zeros(1, 4, dtype=torch.int64), TypeError, "weights must be a floating-point"),
    (torch.ones(1, 1, 4, 3), torch.zeros(1, 4, dtype=torch.int64), TypeError, "(batch_size, num_heads, seq_len"),
])
def test_induction_score_refuses_bad_input(weights, tokens, error, phrase):
    with pytest.raises(error, match=phrase.replace("(", r"\(").replace(")", r"\)")):
        induction_score(weights, tokens)


def test_attention_weights_returns_each_layers_weights():
    model = build_model(SMALL, 2, 8, 2, seed=0)
    tokens, _ = sample(batch_size=3)
    weights = attention_weights(model, tokens)
    assert [w.shape for w in weights] == [(3, 2, 10, 10)] * 2
    torch.testing.assert_close(weights[1].sum(-1), torch.ones(3, 2, 10, dtype=torch.float64))
    assert torch.equal(weights[0], weights[0].tril())  # causal


def test_zeroing_the_layer_1_heads_changes_what_layer_2_sees():
    model = build_model(SMALL, 2, 8, 2, seed=0)
    tokens, _ = sample(batch_size=3)
    before = attention_weights(model, tokens)[1]
    with ablate_heads(model.layers[0], [0]):
        during = attention_weights(model, tokens)[1]
    assert not torch.allclose(before, during)
    assert torch.equal(attention_weights(model, tokens)[1], before)  # the hook is gone afterwards


# ---- training ----------------------------------------------------------------------------------------------------

def test_train_records_the_held_out_loss_and_is_reproducible():
    held_out = sample(batch_size=32, seed=100)
    runs = []
    for _ in range(2):
        model = build_model(SMALL, 2, 8, 2, seed=0)
        seen = []
        result = train(model, SMALL, held_out, steps=30, batch_size=8, seed=0, eval_every=10,
                       callback=lambda step, loss, seen=seen: seen.append(step))
        runs.append(result)
        assert seen == [10, 20, 30] and [step for step, _ in result.history] == seen
        assert result.final_loss == pytest.approx(repeated_loss(model, *held_out), rel=1e-12)
    assert runs[0].history == runs[1].history
    assert runs[0].final_loss < math.log(8) + 0.5


@pytest.mark.parametrize(("kwargs", "error", "phrase"), [
    ({"steps": 0}, ValueError, "steps"),
    ({"lr": 0.0}, ValueError, "lr must be a positive learning rate"),
    ({"model": torch.nn.Linear(2, 2)}, TypeError, "model must be an AttentionOnlyTransformer, got Linear"),
])
def test_train_refuses_bad_arguments(kwargs, error, phrase):
    arguments = {"model": build_model(SMALL, 1, 8, 2), "task": SMALL, "held_out": sample(batch_size=4)} | kwargs
    with pytest.raises(error, match=phrase):
        train(**arguments)


def test_step_below_and_largest_fall():
    result = TrainResult([(10, 3.4), (20, 3.3), (30, 2.0), (40, 1.2), (50, 1.1), (60, 0.5)])
    assert result.step_below(1.5) == 40 and result.step_below(0.1) is None
    assert result.largest_fall(within=10) == pytest.approx(1.3)  # 3.3 -> 2.0
    assert result.largest_fall(within=20) == pytest.approx(2.1)  # 3.3 -> 1.2
    assert result.largest_fall(within=5) == 0.0
    assert result.final_loss == 0.5


def test_plot_phase_change_draws_one_line_per_run():
    runs = {"one layer": [TrainResult([(10, 3.0), (20, 2.5)])] * 2, "two layers": [TrainResult([(10, 3.0), (20, 1.0)])]}
    fig = plot_phase_change(runs, chance=math.log(32))
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert len(ax.lines) == 4  # three runs and the dashed uniform guess
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["one layer", "two layers", "uniform guess"]
    assert ax.get_xlabel() == "training step" and ax.get_ylim() == (0.0, 4.0)
    with pytest.raises(ValueError, match="at least one TrainResult"):
        plot_phase_change({"one layer": []})


# ---- the second edition's measurements: copying, composition, paths, the bag-of-context level ----------------------

from mha_chapters.induction import (  # noqa: E402
    bag_of_context_loss,
    composition_baseline,
    composition_scores,
    copying_score,
    ov_circuit,
    path_ablation,
    plot_two_heads,
)


def test_bag_of_context_is_the_log_of_the_distinct_tokens_seen():
    tokens = torch.tensor([[1, 2, 1, 2, 1, 2]])
    repeats = torch.tensor([[False, False, True, True, True, True]])
    assert bag_of_context_loss(tokens, repeats) == pytest.approx(math.log(2))  # positions 2, 3, 4: two distinct
    tokens = torch.tensor([[1, 2, 3, 1, 2, 3]])
    repeats = torch.tensor([[False, False, False, True, True, True]])
    assert bag_of_context_loss(tokens, repeats) == pytest.approx(math.log(3))
    with pytest.raises(TypeError, match="repeats must be a boolean tensor"):
        bag_of_context_loss(tokens, repeats.int())


def test_the_ov_circuit_is_the_product_of_the_heads_matrices_and_a_copying_head_scores_1():
    model = build_model(SMALL, num_layers=2, num_hiddens=8, num_heads=2, seed=0)
    mha = model.layers[1]
    d = mha.v_head_dim
    expected = model.readout.weight @ mha.W_o.weight[:, d:] @ mha.W_v.weight[d:] @ model.token_embedding.weight.T
    torch.testing.assert_close(ov_circuit(model, 1, 1), expected.detach())
    with torch.no_grad():  # make head 1 of layer 2 copy: readout = embedding^T, W_o W_v = identity on its slice
        model.token_embedding.weight.copy_(torch.eye(8))
        model.readout.weight.copy_(torch.eye(8))
        mha.W_v.weight.zero_()
        mha.W_o.weight.zero_()
        mha.W_v.weight[d:, :d] = torch.eye(d)
        mha.W_o.weight[:d, d:] = torch.eye(d)
    scores = copying_score(model)
    assert scores.shape == (2, 2) and scores[1, 1] == d / 8 and scores[1, 0] < 1  # the first d tokens are copied
    with pytest.raises(ValueError, match="head must be a head number in"):
        ov_circuit(model, 1, 2)


def test_composition_scores_are_1_for_aligned_matrices_and_smaller_for_unrelated_ones():
    model = build_model(SMALL, num_layers=2, num_hiddens=8, num_heads=2, seed=1)
    scores = composition_scores(model, 0)
    assert set(scores) == {"Q", "K", "V"} and all(s.shape == (2,) for s in scores.values())
    assert all(((0 < s) & (s <= 1)).all() for s in scores.values())
    with torch.no_grad():  # layer 2's head 0 reads its values from exactly what layer 1's head 0 writes
        first, second = model.layers
        second.W_v.weight[:4] = first.W_o.weight[:, :4].T
        second.W_o.weight[:, :4] = first.W_v.weight[:4].T
    aligned = composition_scores(model, 0)["V"]
    assert aligned[0] > scores["V"][0]


def test_the_composition_baseline_is_what_untrained_models_score():
    model = build_model(SMALL, num_layers=2, num_hiddens=8, num_heads=2, seed=0)
    baseline = composition_baseline(model, draws=300, seed=0)
    assert set(baseline) == {"Q", "K", "V"} and all(s.shape == (300,) for s in baseline.values())
    torch.testing.assert_close(composition_baseline(model, draws=300, seed=0)["K"], baseline["K"])  # seeded
    assert not torch.equal(composition_baseline(model, draws=300, seed=1)["K"], baseline["K"])
    untrained = {"Q": [], "K": [], "V": []}  # independent initialisations are random matrices of the same shapes
    for seed in range(50):
        fresh = build_model(SMALL, num_layers=2, num_hiddens=8, num_heads=2, seed=seed)
        for head in range(2):
            for kind, scores in composition_scores(fresh, head).items():
                untrained[kind] += scores.tolist()
    for kind, scores in baseline.items():
        assert scores.mean().item() == pytest.approx(sum(untrained[kind]) / len(untrained[kind]), abs=0.02)
    wider = composition_baseline(build_model(SMALL, 2, num_hiddens=32, num_heads=2, seed=0), draws=300)
    assert wider["K"].mean() < baseline["K"].mean() - 0.1  # larger matrices overlap less by chance
    with pytest.raises(ValueError, match="draws"):
        composition_baseline(model, draws=0)
    with pytest.raises(ValueError, match="seed"):
        composition_baseline(model, seed=-1)
    with pytest.raises(ValueError, match="model must have 2 layers"):
        composition_baseline(build_model(SMALL, num_layers=1, num_hiddens=8, num_heads=2, seed=0))


def test_path_ablation_of_nothing_is_the_model_itself_and_each_path_changes_only_its_input():
    model = build_model(SMALL, num_layers=2, num_hiddens=8, num_heads=2, seed=0)
    held_out = sample(batch_size=32, seed=5)
    loss, scores = path_ablation(model, held_out, 0, "none")
    assert loss == pytest.approx(repeated_loss(model, *held_out))
    torch.testing.assert_close(scores, induction_score(attention_weights(model, held_out[0])[1], held_out[0]))
    _, value_scores = path_ablation(model, held_out, 0, "V")
    torch.testing.assert_close(value_scores, scores)  # the values do not change the weights
    key_loss, key_scores = path_ablation(model, held_out, 0, "K")
    assert not torch.allclose(key_scores, scores)
    with ablate_heads(model.layers[0], [0]):
        assert repeated_loss(model, *held_out) != pytest.approx(key_loss)  # one path is not the whole head
    with pytest.raises(ValueError, match="path must be one of none, Q, K, V, got 'X'"):
        path_ablation(model, held_out, 0, "X")


def test_training_records_every_heads_scores_and_the_figures_draw_them():
    model = build_model(SMALL, num_layers=2, num_hiddens=8, num_heads=2, seed=0)
    held_out = sample(batch_size=16, seed=9)
    result = train(model, SMALL, held_out, steps=20, eval_every=10)
    assert [entry[0] for entry in result.scores] == [10, 20]
    assert all(p.shape == i.shape == (2, 2) for _, p, i in result.scores)
    torch.testing.assert_close(result.scores[-1][2][1], induction_score(attention_weights(model, held_out[0])[1],
                                                                        held_out[0]))
    assert [step for step, _ in result.score_history(1, "induction")] == [10, 20]
    with pytest.raises(ValueError, match="kind must be"):
        result.score_history(0, "copying")
    fig = plot_phase_change({"two": [result]}, chance=math.log(8), bag_of_context=1.0, scores_of="two")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    with pytest.raises(ValueError, match="scores_of must be one of the labels"):
        plot_phase_change({"two": [result]}, scores_of="three")
    weights = attention_weights(model, held_out[0][:1])
    fig = plot_two_heads(weights[0][0, 0], weights[1][0, 0], held_out[0][0], titles=["a", "b"])
    outlined = [len(ax.patches) for ax in fig.axes[:2]]
    assert outlined == [9, int(induction_keys(held_out[0][:1]).sum())]  # key t - 1 for t = 1 .. 9
