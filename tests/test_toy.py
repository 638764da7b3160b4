"""The toy task, the tiny model, its training loop and the tools that look inside it."""

import math

import pytest
import torch
import torch.nn.functional as F

from mha_chapters.toy import (
    IGNORE,
    TwoLookupTask,
    ablate_heads,
    ablation_rows,
    attention_profile,
    build_model,
    evaluate,
    head_subspace,
    mean_pair_cosine,
    plot_ablation,
    plot_history,
    plot_steps_to_reach,
    plot_subspace_cosines,
    principal_cosines,
    print_progress,
    random_heads_cosines,
    subspace_cosines,
    train,
)
from mha_lib import GeneralMultiHeadAttention, MultiHeadAttention


def small_task_and_data(seed: int = 1):
    task = TwoLookupTask(vocab_size=5, seq_len=6)
    return task, task.sample(40, torch.Generator().manual_seed(seed))


# --- the task -------------------------------------------------------------------------------


def test_targets_on_a_hand_checked_example():
    task = TwoLookupTask(vocab_size=3, seq_len=4)
    tokens = torch.tensor([[2, 0, 1, 1], [0, 2, 2, 1]])
    # position t: (token at t-1) * 3 + (token at 0); position 0 has no previous token
    expected = torch.tensor([[IGNORE, 2 * 3 + 2, 0 * 3 + 2, 1 * 3 + 2], [IGNORE, 0, 2 * 3, 2 * 3]])
    assert torch.equal(task.targets(tokens), expected)
    local, first = task.split(expected)
    assert torch.equal(local, torch.tensor([[IGNORE, 2, 0, 1], [IGNORE, 0, 2, 2]]))
    assert torch.equal(first, torch.tensor([[IGNORE, 2, 2, 2], [IGNORE, 0, 0, 0]]))


def test_offset_moves_the_local_look_up():
    task = TwoLookupTask(vocab_size=10, seq_len=5, offset=2)
    tokens = torch.tensor([[1, 2, 3, 4, 5]])
    assert torch.equal(task.targets(tokens), torch.tensor([[IGNORE, IGNORE, 11, 21, 31]]))
    assert task.num_classes == 100


def test_sample_is_reproducible_and_in_range():
    task = TwoLookupTask(vocab_size=7, seq_len=9)
    tokens, targets = task.sample(30, torch.Generator().manual_seed(3))
    again, _ = task.sample(30, torch.Generator().manual_seed(3))
    other, _ = task.sample(30, torch.Generator().manual_seed(4))
    assert tokens.shape == targets.shape == (30, 9)
    assert torch.equal(tokens, again) and not torch.equal(tokens, other)
    assert tokens.min() >= 0 and tokens.max() < 7
    assert torch.equal(targets, task.targets(tokens))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"vocab_size": 0}, "vocab_size"), ({"seq_len": 1.5}, "seq_len"), ({"seq_len": 4, "offset": 4}, "offset")],
)
def test_task_rejects_bad_sizes(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        TwoLookupTask(**kwargs)


def test_targets_reject_bad_tokens():
    task = TwoLookupTask(vocab_size=3, seq_len=4)
    with pytest.raises(TypeError, match="integer tensor"):
        task.targets(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"shape \(batch_size, 4\)"):
        task.targets(torch.zeros(1, 5, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        task.targets(torch.tensor([[0, 1, 2, 3]]))
    with pytest.raises(TypeError, match="torch.Generator"):
        task.sample(2, generator=0)


# --- the model and training -------------------------------------------------------------------


def test_model_output_shape_and_causality():
    task = TwoLookupTask(vocab_size=5, seq_len=6)
    model = build_model(task, num_hiddens=8, num_heads=2).eval()
    tokens = torch.tensor([[0, 1, 2, 3, 4, 0]])
    logits = model(tokens)
    assert logits.shape == (1, 6, 25)
    changed = tokens.clone()
    changed[0, 4] = 1  # a later token must not change earlier outputs
    torch.testing.assert_close(model(changed)[:, :4], logits[:, :4])
    assert model.attention.attention_weights.shape == (1, 2, 6, 6)


def test_build_model_is_seeded_and_leaves_the_global_generator_alone():
    task = TwoLookupTask(vocab_size=5, seq_len=6)
    state = torch.random.get_rng_state()
    a, b, c = build_model(task, 8, 2, seed=0), build_model(task, 8, 2, seed=0), build_model(task, 8, 2, seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(a.readout.weight, b.readout.weight)
    assert not torch.equal(a.readout.weight, c.readout.weight)


def test_a_few_steps_reduce_the_loss_and_are_reproducible():
    task, held_out = small_task_and_data()
    seen = []
    model = build_model(task, 8, 2)
    tokens, targets = held_out
    before = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=IGNORE).item()
    result = train(model, task, held_out, steps=30, eval_every=10, callback=lambda *args: seen.append(args))
    after = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=IGNORE).item()
    assert after < 0.8 * before
    assert [step for step, _, _ in seen] == [10, 20, 30] and seen == result.history
    again = train(build_model(task, 8, 2), task, held_out, steps=30, eval_every=10)
    assert again.history == result.history


def test_train_result_steps_to_reach():
    task, held_out = small_task_and_data()
    result = train(build_model(task, 8, 2), task, held_out, steps=4, eval_every=2)
    result.history[:] = [(2, 1.0, 0.5), (4, 0.5, 0.96)]
    assert result.steps_to_reach(0.95) == 4 and result.steps_to_reach(0.99) is None
    assert result.final_accuracy == 0.96


def test_train_rejects_bad_arguments():
    task, held_out = small_task_and_data()
    model = build_model(task, 8, 2)
    with pytest.raises(ValueError, match="steps"):
        train(model, task, held_out, steps=0)
    with pytest.raises(ValueError, match="lr"):
        train(model, task, held_out, lr=0.0)


def test_print_progress_prints_every_n_steps(capsys):
    callback = print_progress(every=2)
    for step in (1, 2, 3, 4):
        callback(step, 0.5, 0.25)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].split()[:2] == ["step", "2"] and "0.250" in lines[1]


def test_evaluate_counts_only_positions_with_a_target():
    task, (tokens, targets) = small_task_and_data()
    model = build_model(task, 8, 2)
    predictions = model.eval()(tokens).argmax(-1)
    keep = targets != IGNORE
    accuracy = evaluate(model, task, tokens, targets)
    assert accuracy.pair == pytest.approx((predictions == targets)[keep].float().mean().item())
    assert keep.sum() == 40 * 5


# --- ablation ---------------------------------------------------------------------------------


def test_ablating_nothing_changes_nothing_and_the_hook_is_removed():
    mha = MultiHeadAttention(8, 8, 8, 8, 2, bias=True).eval()
    X = torch.randn(2, 5, 8)
    expected = mha(X, X, X)
    with ablate_heads(mha, []):
        torch.testing.assert_close(mha(X, X, X), expected, rtol=0, atol=0)
    with ablate_heads(mha, [0, 1]):
        pass
    torch.testing.assert_close(mha(X, X, X), expected, rtol=0, atol=0)
    assert not mha.W_o._forward_pre_hooks


def test_ablating_all_heads_leaves_only_the_output_bias():
    mha = MultiHeadAttention(8, 8, 8, 8, 4, bias=True).eval()
    X = torch.randn(2, 5, 8)
    with ablate_heads(mha, range(4)):
        output = mha(X, X, X)
    torch.testing.assert_close(output, mha.W_o.bias.expand(2, 5, 8), rtol=0, atol=0)


def test_ablating_one_head_equals_removing_its_columns_of_W_o():
    mha = MultiHeadAttention(8, 8, 8, 8, 2).eval()
    X = torch.randn(1, 3, 8)
    mha(X, X, X)
    with ablate_heads(mha, [1]):
        output = mha(X, X, X)
    # head 0 alone: its features 0..3 through W_o's columns 0..3
    values = mha.W_v(X)[..., :4]  # (1, 3, 4)
    head0 = mha.attention_weights[:, 0] @ values
    torch.testing.assert_close(output, head0 @ mha.W_o.weight[:, :4].T)


def test_ablate_heads_rejects_bad_heads():
    mha = MultiHeadAttention(8, 8, 8, 8, 2)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        with ablate_heads(mha, [2]):
            pass
    with pytest.raises(TypeError, match="MultiHeadAttention"):
        with ablate_heads(torch.nn.Linear(2, 2), [0]):
            pass


def test_ablation_rows_and_plot():
    task, (tokens, targets) = small_task_and_data()
    model = build_model(task, 8, 2)
    rows = ablation_rows(model, task, tokens, targets)
    assert [label for label, _ in rows] == ["none", "head 0", "head 1"]
    assert rows[0][1] == evaluate(model, task, tokens, targets)
    fig = plot_ablation(rows)
    (ax,) = fig.axes
    assert len(ax.patches) == 3 * 3
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel() == "held-out accuracy"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["full model", "head 0 zeroed", "head 1 zeroed"]
    heights = [p.get_height() for p in ax.patches]
    assert heights[:3] == [rows[i][1].pair for i in range(3)]
    assert not ax.lines
    assert plot_ablation(rows, chance=0.2).axes[0].lines[0].get_ydata()[0] == 0.2
    with pytest.raises(ValueError, match="rows"):
        plot_ablation([])


def test_attention_profile_reads_the_weights():
    task = TwoLookupTask(vocab_size=5, seq_len=4)
    model = build_model(task, 8, 2)
    tokens = torch.tensor([[0, 1, 2, 3]])
    to_local, to_first = attention_profile(model, task, tokens)
    weights = model.attention.attention_weights[0]  # (heads, 4, 4)
    torch.testing.assert_close(to_local, (weights[:, 2, 1] + weights[:, 3, 2]) / 2)
    torch.testing.assert_close(to_first, (weights[:, 2, 0] + weights[:, 3, 0]) / 2)


# --- subspaces --------------------------------------------------------------------------------


def test_principal_cosines_of_known_subspaces():
    e = torch.eye(4)
    assert torch.equal(principal_cosines(e[:, :2], e[:, :2] * 3), torch.tensor([1.0, 1.0]))
    assert torch.equal(principal_cosines(e[:, :2], e[:, 2:]), torch.tensor([0.0, 0.0]))
    # span(e0, e1) and span(e0, cos(a) e1 + sin(a) e2): angles 0 and a
    a = 0.3
    B = torch.stack([e[0], math.cos(a) * e[1] + math.sin(a) * e[2]], dim=1)
    torch.testing.assert_close(principal_cosines(e[:, :2], B), torch.tensor([1.0, math.cos(a)]))


def test_principal_cosines_rejects_bad_input():
    with pytest.raises(ValueError, match="same space"):
        principal_cosines(torch.eye(4)[:, :2], torch.eye(3)[:, :2])
    with pytest.raises(ValueError, match="no more columns"):
        principal_cosines(torch.randn(2, 3), torch.randn(2, 1))
    with pytest.raises(ValueError, match="2-D floating-point"):
        principal_cosines(torch.ones(3, 2, dtype=torch.int64), torch.randn(3, 1))


def test_head_subspace_slices_the_right_weights():
    mha = MultiHeadAttention(6, 5, 7, 8, 2)
    assert torch.equal(head_subspace(mha, "q", 1), mha.W_q.weight[4:].T)
    assert head_subspace(mha, "v", 0).shape == (7, 4)
    assert torch.equal(head_subspace(mha, "o", 0), mha.W_o.weight[:, :4])
    with pytest.raises(ValueError, match="role"):
        head_subspace(mha, "x", 0)
    with pytest.raises(ValueError, match="head"):
        head_subspace(mha, "q", 2)


def test_subspace_cosines_of_heads_on_disjoint_inputs():
    mha = MultiHeadAttention(4, 4, 4, 4, 2)
    with torch.no_grad():
        mha.W_k.weight.copy_(torch.eye(4) * 2)  # head 0 reads features 0, 1; head 1 reads 2, 3
    cosines = subspace_cosines(mha, "k")
    torch.testing.assert_close(cosines, torch.eye(2))


def test_random_heads_cosines_is_the_statistic_of_random_heads():
    generator = torch.Generator().manual_seed(0)
    draws = random_heads_cosines(16, 8, 2, 200, generator)
    assert draws.shape == (200,) and draws.dtype == torch.float32
    # the same statistic, computed the slow way for random heads drawn from the same generator state
    again = torch.Generator().manual_seed(0)
    gaussian = torch.randn(200, 8, 16, 2, generator=again, dtype=torch.float64)
    first = gaussian[0]
    slow = torch.stack([principal_cosines(first[i], first[j]).mean() for i in range(8) for j in range(8) if i < j])
    torch.testing.assert_close(draws[0], slow.mean().float())
    assert not torch.equal(draws, random_heads_cosines(16, 8, 2, 200, generator))  # the generator moved on


def test_a_mean_over_many_pairs_varies_less_than_one_pair():
    one_pair = random_heads_cosines(16, 2, 2, 2000, torch.Generator().manual_seed(1))
    eight_heads = random_heads_cosines(16, 8, 2, 2000, torch.Generator().manual_seed(1))
    assert eight_heads.std() < 0.5 * one_pair.std()
    assert abs(eight_heads.mean() - one_pair.mean()) < 0.02  # the same pair statistic on average


def test_random_heads_cosines_edge_cases():
    generator = torch.Generator().manual_seed(0)
    torch.testing.assert_close(random_heads_cosines(6, 3, 6, 4, generator), torch.ones(4))  # full spaces coincide
    assert random_heads_cosines(200, 2, 1, 50, generator).mean() < 0.15  # random lines in 200-D: nearly orthogonal
    with pytest.raises(ValueError, match="head_dim must be at most"):
        random_heads_cosines(3, 2, 4, 1, generator)
    with pytest.raises(ValueError, match="num_heads must be at least 2"):
        random_heads_cosines(3, 1, 1, 1, generator)


@pytest.mark.parametrize("role", ["q", "k", "v", "o"])
def test_subspace_cosines_agree_with_principal_cosines_pair_by_pair(role):
    mha = GeneralMultiHeadAttention(6, 6, 6, 8, 3, qk_size=2, v_size=3)
    cosines = subspace_cosines(mha, role)
    assert cosines.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            A, B = head_subspace(mha, role, i), head_subspace(mha, role, j)
            torch.testing.assert_close(cosines[i, j], principal_cosines(A, B).mean())


def test_mean_pair_cosine_averages_the_off_diagonal():
    mha = MultiHeadAttention(8, 8, 8, 8, 4)
    cosines = subspace_cosines(mha, "q")
    expected = (cosines.sum() - cosines.diagonal().sum()) / (4 * 3)
    assert mean_pair_cosine(mha, "q") == pytest.approx(expected.item(), abs=1e-6)
    with torch.no_grad():
        mha.W_k.weight.copy_(torch.eye(8))  # four heads on four disjoint pairs of input features
    assert mean_pair_cosine(mha, "k") == 0.0


# --- heads whose values have another width (GeneralMultiHeadAttention) ---------------------------------------


def general_mha() -> GeneralMultiHeadAttention:
    # 3 heads, 2 query/key features and 5 value features per head: W_o reads 15 features
    return GeneralMultiHeadAttention(6, 6, 6, 8, 3, qk_size=2, v_size=5, bias=True).eval()


def test_head_subspace_of_a_general_layer_slices_by_the_right_width():
    mha = general_mha()
    assert mha.head_dim == 2 and mha.v_head_dim == 5
    for role, shape in (("q", (6, 2)), ("k", (6, 2)), ("v", (6, 5)), ("o", (8, 5))):
        assert head_subspace(mha, role, 2).shape == shape
    assert torch.equal(head_subspace(mha, "k", 1), mha.W_k.weight[2:4].T)
    assert torch.equal(head_subspace(mha, "v", 1), mha.W_v.weight[5:10].T)
    assert torch.equal(head_subspace(mha, "o", 2), mha.W_o.weight[:, 10:15])
    assert subspace_cosines(mha, "v").shape == (3, 3)


def test_ablating_a_head_of_a_general_layer_zeroes_its_value_features():
    mha = general_mha()
    X = torch.randn(2, 4, 6)
    seen = []
    with ablate_heads(mha, [1]):
        hook = mha.W_o.register_forward_pre_hook(lambda module, args: seen.append(args[0]))  # runs after ablate's
        output = mha(X, X, X)
        hook.remove()
    concatenated = seen[0]  # what W_o read: (2, 4, 15)
    assert concatenated.shape == (2, 4, 15)
    assert torch.equal(concatenated[..., 5:10], torch.zeros(2, 4, 5))  # head 1 owns value features 5..9
    assert (concatenated[..., :5] != 0).all() and (concatenated[..., 10:] != 0).all()
    # the same as removing head 1's five columns of W_o
    mha(X, X, X)
    heads = mha.attention_weights @ mha.W_v(X).reshape(2, 4, 3, 5).transpose(1, 2)  # (2, 3, 4, 5)
    kept = heads[:, 0] @ mha.W_o.weight[:, :5].T + heads[:, 2] @ mha.W_o.weight[:, 10:].T + mha.W_o.bias
    torch.testing.assert_close(output, kept)


# --- training with a stop and the multi-seed figures ------------------------------------------------------------


def test_train_stops_at_the_first_evaluation_that_reaches_stop_at():
    task, held_out = small_task_and_data()
    full = train(build_model(task, 8, 2), task, held_out, steps=60, eval_every=10)
    threshold = full.history[2][2]  # the accuracy of the third evaluation
    assert threshold > full.history[0][2]  # (the run improves, so the threshold is not met at once)
    stop = next(k for k, (_, _, acc) in enumerate(full.history) if acc >= threshold)
    stopped = train(build_model(task, 8, 2), task, held_out, steps=60, eval_every=10, stop_at=threshold)
    assert stopped.history == full.history[: stop + 1]
    never = train(build_model(task, 8, 2), task, held_out, steps=60, eval_every=10, stop_at=1.0)
    assert len(never.history) == 6 or never.final_accuracy == 1.0
    with pytest.raises(ValueError, match="stop_at"):
        train(build_model(task, 8, 2), task, held_out, stop_at=1.5)


def test_plot_steps_to_reach_draws_one_line_per_seed_and_marks_misses():
    steps = {0: {1: 175, 2: 75, 4: 100}, 1: {1: None, 2: 100, 4: 125}}
    fig = plot_steps_to_reach(steps, limit=250)
    (ax,) = fig.axes
    lines = [line for line in ax.lines if line.get_label().startswith("seed")]
    assert [line.get_label() for line in lines] == ["seed 0", "seed 1"]
    assert list(lines[0].get_ydata()) == [175, 75, 100]
    assert lines[1].get_ydata()[0] > 250  # the miss is drawn above the limit, not at a step count
    assert ax.get_yticklabels()[-1].get_text() == "not in 250"
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel() == "training steps"
    assert ax.get_legend() is None and len(fig.legends) == 1  # the legend beside the axes covers no point
    assert lines[0].get_xdata()[1] != lines[1].get_xdata()[1]  # equal head counts, shifted apart per seed
    with pytest.raises(ValueError, match="steps"):
        plot_steps_to_reach({}, limit=250)


def test_plot_subspace_cosines_draws_a_panel_per_head_count():
    random = {2: torch.linspace(0.5, 0.7, 101), 4: torch.linspace(0.3, 0.5, 101)}
    initial = {(h, role): [0.4, 0.45] for h in (2, 4) for role in "qkvo"}
    trained = {(h, role): [0.6, 0.65] for h in (2, 4) for role in "qkvo"}
    fig = plot_subspace_cosines(random, initial, trained)
    left, right = fig.axes
    assert [left.get_title(), right.get_title()] == ["2 heads", "4 heads"]
    assert [t.get_text() for t in left.get_xticklabels()] == ["W_q", "W_k", "W_v", "W_o"]
    (bar, *_) = left.patches  # the random range of W_q: the middle 90% of the draws
    assert bar.get_y() == pytest.approx(0.51) and bar.get_y() + bar.get_height() == pytest.approx(0.69)
    with pytest.raises(ValueError, match="random"):
        plot_subspace_cosines({}, initial, trained)


def test_plot_history_draws_one_line_per_result():
    task, held_out = small_task_and_data()
    results = {f"{h} heads": train(build_model(task, 8, h), task, held_out, steps=4, eval_every=2) for h in (1, 2)}
    fig = plot_history(results)
    (ax,) = fig.axes
    assert [line.get_label() for line in ax.lines] == ["1 heads", "2 heads"]
    assert list(ax.lines[1].get_xdata()) == [2, 4]
    assert list(ax.lines[1].get_ydata()) == [acc for _, _, acc in results["2 heads"].history]
    assert ax.get_title() and ax.get_xlabel() == "training step" and ax.get_ylabel() == "held-out accuracy"
    with pytest.raises(ValueError, match="results"):
        plot_history({})
