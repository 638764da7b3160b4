"""The toy task, the tiny model, its training loop and the tools that look inside it."""

import math

import pytest
import torch
import torch.nn.functional as F

from mha_lib import MultiHeadAttention
from mha_lib.chapters.toy import (
    IGNORE,
    TwoLookupTask,
    ablate_heads,
    ablation_rows,
    attention_profile,
    build_model,
    evaluate,
    head_subspace,
    plot_ablation,
    plot_history,
    principal_cosines,
    print_progress,
    random_subspace_cosines,
    subspace_cosines,
    train,
)


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


def test_random_subspace_cosines_baseline():
    generator = torch.Generator().manual_seed(0)
    full = random_subspace_cosines(6, 6, 3, generator)
    torch.testing.assert_close(full, torch.ones(3))  # two full-dimensional subspaces coincide
    lines = random_subspace_cosines(200, 1, 50, generator)
    assert lines.shape == (50,) and lines.mean() < 0.15  # random lines in 200-D are nearly orthogonal
    with pytest.raises(ValueError, match="k must be at most"):
        random_subspace_cosines(3, 4, 1, generator)


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
