"""Induction heads: a task that needs two heads working together, an attention-only model that learns it in
seconds on a CPU, and the scores and ablations that find the two heads.

The task (:class:`RepeatTask`): each sequence is a span of ``period`` random tokens, repeated until the sequence
is full; the period changes from sequence to sequence, so no fixed offset holds the answer. From the second copy
on, the next token is the one that followed the current token's earlier occurrence: an induction head's rule.

Dimension names (those of :mod:`mha_lib.functional`):

    batch_size   sequences in a batch
    seq_len      tokens per sequence
    vocab_size   token types
    num_hiddens  features of the residual stream (embeddings and every layer's output)
    num_heads    attention heads per layer
    num_layers   attention layers

Layers are counted from 1 in the text ("layer 1", "layer 2") and indexed from 0 in code (``model.layers[0]``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor, nn

from mha_lib._validation import require_positive_int, wrong_type
from mha_lib.modules import MultiHeadAttention
from mha_lib.utils import cpu_threads

from .i18n import _, figure_text
from .toy import ablate_heads

__all__ = [
    "AttentionOnlyTransformer",
    "RepeatTask",
    "TrainResult",
    "ablate_heads",
    "attention_weights",
    "build_model",
    "induction_keys",
    "induction_score",
    "plot_phase_change",
    "previous_token_score",
    "repeated_loss",
    "train",
]


@dataclass(frozen=True)
class RepeatTask:
    """Sequences of ``seq_len`` tokens: a span of ``period`` random tokens, repeated until the sequence is full.

    Each sequence draws its own period from ``min_period .. max_period`` and its span from ``vocab_size`` tokens.
    """

    vocab_size: int = 32
    seq_len: int = 24
    min_period: int = 4
    max_period: int = 12

    def __post_init__(self) -> None:
        for name in ("vocab_size", "seq_len", "min_period", "max_period"):
            require_positive_int(name, getattr(self, name))
        if not self.min_period <= self.max_period < self.seq_len:
            template = _("the periods must satisfy min_period <= max_period < seq_len={seq_len} (so that every "
                         "sequence repeats), got min_period={min_period}, max_period={max_period}")
            raise ValueError(template.format(seq_len=self.seq_len, min_period=self.min_period,
                                             max_period=self.max_period))

    def sample(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """Draw ``batch_size`` sequences from ``generator``, and mark the tokens that repeat an earlier one.

        ``repeats[b, t]`` is True when token ``t`` is a copy, ``t >= period``: then the token after it is a copy
        too, the one after its earlier occurrence, and an induction head can predict it.

        Shape:
            - output: tokens ``(batch_size, seq_len)``, int64, and repeats ``(batch_size, seq_len)``, bool
        """
        require_positive_int("batch_size", batch_size)
        if not isinstance(generator, torch.Generator):
            raise wrong_type("generator", _("a torch.Generator"), generator)
        spans = torch.randint(self.vocab_size, (batch_size, self.max_period), generator=generator)
        periods = torch.randint(self.min_period, self.max_period + 1, (batch_size, 1), generator=generator)
        positions = torch.arange(self.seq_len)  # (seq_len,)
        # Token t is token t % period of the span: (batch, max_period) -> (batch, seq_len)
        tokens = spans.gather(1, positions % periods)
        repeats = positions >= periods  # (seq_len,) >= (batch, 1) -> (batch, seq_len)
        return tokens, repeats


class AttentionOnlyTransformer(nn.Module):
    """Token and learned position embeddings, ``num_layers`` causal ``MultiHeadAttention`` layers, a read-out.

    The embeddings start a **residual stream**: each layer reads it and adds its output to it, so a later layer
    sees what the embeddings and every earlier layer wrote. No feed-forward blocks, no layer norm: everything the
    model computes, its attention heads compute. Layer ``i``'s weights of the last call are in
    ``.layers[i].attention_weights``.

    Shape:
        - tokens: ``(batch_size, seq_len)``, integer
        - output: ``(batch_size, seq_len, vocab_size)``, logits of the next token
    """

    def __init__(self, vocab_size: int, seq_len: int, num_hiddens: int, num_heads: int, num_layers: int) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, num_hiddens)
        self.position_embedding = nn.Embedding(seq_len, num_hiddens)
        self.layers = nn.ModuleList(
            MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads)
            for _layer in range(num_layers))
        self.readout = nn.Linear(num_hiddens, vocab_size, bias=False)

    def forward(self, tokens: Tensor) -> Tensor:
        seq_len = tokens.shape[1]
        # (batch, seq_len, num_hiddens) + (seq_len, num_hiddens) -> (batch, seq_len, num_hiddens)
        X = self.token_embedding(tokens) + self.position_embedding.weight[:seq_len]
        for layer in self.layers:
            X = X + layer(X, X, X, causal=True)  # read the stream, add to it: the shape stays
        return self.readout(X)  # (batch, seq_len, num_hiddens) -> (batch, seq_len, vocab_size)


def build_model(
    task: RepeatTask, num_layers: int, num_hiddens: int = 32, num_heads: int = 2, seed: int = 0
) -> AttentionOnlyTransformer:
    """An :class:`AttentionOnlyTransformer` for ``task``, weights drawn from ``seed`` (the global RNG is left alone).

    The weights are drawn in float64 and the model stays in float64, so that training prints the same numbers on
    every CPU. (PyTorch draws random float32 numbers on a vectorised path whose last bits depend on the CPU's
    kernels, AVX-512, AVX2 or none; training the two-layer model turns that into differences in the third
    decimal. Its float64 draws are the same on every CPU.)
    """
    if not isinstance(task, RepeatTask):
        raise wrong_type("task", _("a RepeatTask"), task)
    for name, value in (("num_layers", num_layers), ("num_hiddens", num_hiddens), ("num_heads", num_heads)):
        require_positive_int(name, value)
    default_dtype = torch.get_default_dtype()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.set_default_dtype(torch.float64)  # every parameter is made, and drawn, in float64
        try:
            model = AttentionOnlyTransformer(task.vocab_size, task.seq_len, num_hiddens, num_heads, num_layers)
        finally:
            torch.set_default_dtype(default_dtype)
    return model


def _next_token_losses(model: AttentionOnlyTransformer, tokens: Tensor) -> Tensor:
    """Cross-entropy of each position's prediction of the token after it: ``(batch_size, seq_len - 1)``."""
    logits = model(tokens)[:, :-1]  # position t predicts token t + 1: (batch, seq_len - 1, vocab_size)
    return F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")  # (batch, seq_len - 1)


@torch.no_grad()
def repeated_loss(model: AttentionOnlyTransformer, tokens: Tensor, repeats: Tensor) -> float:
    """The mean loss of predicting the next token where the current one is a repeat: in-context copying.

    Shape:
        - tokens, repeats: ``(batch_size, seq_len)``, as :meth:`RepeatTask.sample` returns them
    """
    was_training = model.training
    with cpu_threads(1):  # a small model: a second thread only waits
        losses = _next_token_losses(model.eval(), tokens)  # (batch, seq_len - 1)
    model.train(was_training)
    return losses[repeats[:, :-1]].mean().item()  # the positions t < seq_len - 1 whose token is a repeat


@torch.no_grad()
def attention_weights(model: AttentionOnlyTransformer, tokens: Tensor) -> list[Tensor]:
    """Run ``model`` on ``tokens`` and return every layer's attention weights.

    Shape:
        - output: one ``(batch_size, num_heads, seq_len, seq_len)`` tensor per layer
    """
    was_training = model.training
    with cpu_threads(1):
        model.eval()(tokens)
    model.train(was_training)
    return [layer.attention_weights for layer in model.layers]


def previous_token_score(weights: Tensor) -> Tensor:
    """Per head, the mean weight that query ``t`` puts on key ``t - 1``, over the queries ``t >= 1``.

    Shape:
        - weights: ``(batch_size, num_heads, seq_len, seq_len)``
        - output: ``(num_heads,)``
    """
    _check_weights(weights)
    # The entries [t, t - 1] lie one below the diagonal: (batch, heads, seq_len, seq_len) -> (batch, heads, seq_len - 1)
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))


def induction_keys(tokens: Tensor) -> Tensor:
    """The keys an induction head looks for: ``keys[b, t, j]`` is True when key ``j`` follows an earlier
    occurrence of query ``t``'s token, ``tokens[b, j - 1] == tokens[b, t]`` with ``j <= t``.

    Shape:
        - tokens: ``(batch_size, seq_len)``, integer
        - output: ``(batch_size, seq_len, seq_len)``, bool, queries by keys
    """
    same = tokens[:, :, None] == tokens[:, None, :]  # (batch, queries, keys): token t == token s
    keys = torch.zeros_like(same)
    keys[:, :, 1:] = same[:, :, :-1]  # key j = s + 1 follows the occurrence at s
    return keys & torch.ones_like(same[0]).tril()  # only keys j <= t: the causal mask shows no others


def induction_score(weights: Tensor, tokens: Tensor) -> Tensor:
    """Per head, the mean weight on the keys of :func:`induction_keys`, over the queries that have such a key.

    Shape:
        - weights: ``(batch_size, num_heads, seq_len, seq_len)``
        - tokens: ``(batch_size, seq_len)``, integer
        - output: ``(num_heads,)``
    """
    _check_weights(weights)
    if not isinstance(tokens, Tensor) or tokens.dtype.is_floating_point or tokens.dim() != 2:
        got = f"{tokens.dtype} {tuple(tokens.shape)}" if isinstance(tokens, Tensor) else type(tokens).__name__
        raise TypeError(_("tokens must be a 2-D integer tensor (batch_size, seq_len), got {got}").format(got=got))
    batch_size, _heads, seq_len, _keys = weights.shape
    if tuple(tokens.shape) != (batch_size, seq_len):
        template = _("tokens must have shape {expected} to match the weights, got {shape}")
        raise ValueError(template.format(expected=(batch_size, seq_len), shape=tuple(tokens.shape)))
    keys = induction_keys(tokens)  # (batch, queries, keys)
    on_keys = (weights * keys[:, None]).sum(dim=-1)  # (batch, heads, queries, keys) -> (batch, heads, queries)
    counted = keys.any(dim=-1)  # (batch, queries): the queries whose token occurred before
    return (on_keys * counted[:, None]).sum(dim=(0, 2)) / counted.sum()  # -> (heads,)


def _check_weights(weights: object) -> None:
    if not isinstance(weights, Tensor) or not weights.dtype.is_floating_point or weights.dim() != 4 or (
            weights.shape[-1] != weights.shape[-2]):
        got = f"{weights.dtype} {tuple(weights.shape)}" if isinstance(weights, Tensor) else type(weights).__name__
        template = _("weights must be a floating-point tensor (batch_size, num_heads, seq_len, seq_len), got {got}")
        raise TypeError(template.format(got=got))


@dataclass
class TrainResult:
    """What :func:`train` records: one ``(step, held-out loss on the repeated part)`` per evaluation."""

    history: list[tuple[int, float]] = field(default_factory=list)

    @property
    def final_loss(self) -> float:
        return self.history[-1][1]

    def step_below(self, loss: float) -> int | None:
        """The first evaluated step whose held-out repeated-part loss is below ``loss``, or None."""
        return next((step for step, value in self.history if value < loss), None)

    def largest_fall(self, within: int) -> float:
        """The largest drop of the held-out loss between two evaluations at most ``within`` steps apart."""
        return max((before - after for k, (start, before) in enumerate(self.history)
                    for stop, after in self.history[k + 1:] if stop - start <= within), default=0.0)


def train(
    model: AttentionOnlyTransformer,
    task: RepeatTask,
    held_out: tuple[Tensor, Tensor],
    steps: int = 400,
    batch_size: int = 32,
    lr: float = 1e-2,
    seed: int = 0,
    eval_every: int = 10,
    callback: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Train ``model`` to predict every next token, with AdamW on fresh batches from a generator seeded with ``seed``.

    Every ``eval_every`` steps the loss on the repeated part of ``held_out = (tokens, repeats)`` is recorded and
    passed with the step to ``callback(step, loss)``. The same seed and model give the same result; training runs
    on one CPU thread (the model is so small that more threads only wait for each other).
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise wrong_type("model", _("an AttentionOnlyTransformer"), model)
    for name, value in (("steps", steps), ("batch_size", batch_size), ("eval_every", eval_every)):
        require_positive_int(name, value)
    if not lr > 0:
        raise ValueError(_("lr must be a positive learning rate, got {lr!r}").format(lr=lr))
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    result = TrainResult()
    model.train()
    with cpu_threads(1):
        for step in range(1, steps + 1):
            tokens, _repeats = task.sample(batch_size, generator)
            loss = _next_token_losses(model, tokens).mean()  # every position: the model is not told where copies are
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % eval_every == 0:
                held_out_loss = repeated_loss(model, *held_out)
                result.history.append((step, held_out_loss))
                if callback is not None:
                    callback(step, held_out_loss)
    model.eval()
    return result


def plot_phase_change(
    results: Mapping[str, Sequence[TrainResult]],
    chance: float | None = None,
    figsize: tuple[float, float] = (7.0, 3.2),
) -> Figure:
    """Held-out loss on the repeated part against training step: one colour per model, one line per seed.

    ``chance`` (``ln(vocab_size)``, the loss of a uniform guess) is drawn as a dashed line.
    """
    if not results or not all(results.values()):
        raise ValueError(_("results must map each label to at least one TrainResult, got {results!r}").format(
            results=results))
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    for (label, runs), colour in zip(results.items(), ("tab:blue", "tab:orange", "tab:green", "tab:red"),
                                     strict=False):
        for k, run in enumerate(runs):
            steps, losses = zip(*run.history, strict=True)
            ax.plot(steps, losses, color=colour, alpha=0.8, label=label if k == 0 else None)
    if chance is not None:
        ax.axhline(chance, color="black", linestyle="--", linewidth=1, label=figure_text("uniform guess"))
    ax.set_ylim(0, None if chance is None else math.ceil(chance))
    ax.set_xlabel(figure_text("training step"))
    ax.set_ylabel(figure_text("loss on the repeated part (nats)"))
    ax.set_title(figure_text("Two layers learn to copy, suddenly; one layer does not"))
    ax.legend(loc="lower left")
    return fig
