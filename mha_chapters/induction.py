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
from matplotlib.patches import Rectangle
from torch import Tensor, nn

from mha_lib._validation import require_nonnegative_int, require_positive_int, wrong_type
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
    "bag_of_context_loss",
    "build_model",
    "composition_baseline",
    "composition_scores",
    "copying_score",
    "induction_keys",
    "induction_score",
    "ov_circuit",
    "path_ablation",
    "plot_phase_change",
    "plot_two_heads",
    "previous_token_score",
    "repeated_loss",
    "train",
]

PATHS = ("none", "Q", "K", "V")  # the inputs of a layer-2 head that path_ablation can cut a layer-1 head from


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
    """What :func:`train` records: one ``(step, held-out loss on the repeated part)`` per evaluation, and with it
    ``scores``, one ``(step, previous-token scores, induction scores)`` per evaluation, each score tensor
    ``(num_layers, num_heads)``, read from the same held-out forward pass."""

    history: list[tuple[int, float]] = field(default_factory=list)
    scores: list[tuple[int, Tensor, Tensor]] = field(default_factory=list)

    def score_history(self, layer: int, kind: str) -> list[tuple[int, float]]:
        """``(step, the largest score of layer ``layer`` (0-based))`` per evaluation; ``kind`` is "previous" or
        "induction"."""
        if kind not in ("previous", "induction"):
            raise ValueError(_("kind must be 'previous' or 'induction', got {kind!r}").format(kind=kind))
        column = 1 if kind == "previous" else 2
        return [(entry[0], entry[column][layer].max().item()) for entry in self.scores]

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

    Every ``eval_every`` steps the loss on the repeated part of ``held_out = (tokens, repeats)`` is recorded with
    every head's previous-token and induction scores on it, and passed with the step to ``callback(step, loss)``.
    The same seed and model give the same result; training runs on one CPU thread (the model is so small that more
    threads only wait for each other).
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
                weights = [layer.attention_weights for layer in model.layers]  # of that held-out pass
                result.scores.append((step, torch.stack([previous_token_score(w) for w in weights]),
                                      torch.stack([induction_score(w, held_out[0]) for w in weights])))
                if callback is not None:
                    callback(step, held_out_loss)
    model.eval()
    return result


def bag_of_context_loss(tokens: Tensor, repeats: Tensor) -> float:
    """The loss on the repeated part of a guess that is uniform over the distinct tokens seen so far.

    At a repeat the next token is always among them, so this is what a model earns that knows *which* tokens the
    context holds but not *where*: the "bag of context" level.

    Shape:
        - tokens, repeats: ``(batch_size, seq_len)``, as :meth:`RepeatTask.sample` returns them
    """
    if not isinstance(tokens, Tensor) or tokens.dtype.is_floating_point or tokens.dim() != 2:
        got = f"{tokens.dtype} {tuple(tokens.shape)}" if isinstance(tokens, Tensor) else type(tokens).__name__
        raise TypeError(_("tokens must be a 2-D integer tensor (batch_size, seq_len), got {got}").format(got=got))
    if not isinstance(repeats, Tensor) or repeats.dtype != torch.bool or repeats.shape != tokens.shape:
        got = f"{repeats.dtype} {tuple(repeats.shape)}" if isinstance(repeats, Tensor) else type(repeats).__name__
        template = _("repeats must be a boolean tensor of the tokens' shape {shape}, got {got}")
        raise TypeError(template.format(shape=tuple(tokens.shape), got=got))
    same = tokens[:, :, None] == tokens[:, None, :]  # (batch, t, s): token s equals token t
    first = ~(same & torch.ones_like(same[0]).tril(-1)).any(dim=-1)  # (batch, s): no equal token before s
    distinct = first.cumsum(dim=1).to(torch.float64)  # (batch, t): distinct tokens among 0 .. t
    return distinct.log()[:, :-1][repeats[:, :-1]].mean().item()  # the positions repeated_loss averages


def ov_circuit(model: AttentionOnlyTransformer, layer: int, head: int) -> Tensor:
    """The OV circuit of one head, read from the weights: ``readout · W_o (head's columns) · W_v (head's rows) ·
    token embedding``.

    Entry ``[a, b]`` is how much the head raises the logit of token ``a`` when it attends to a position holding
    token ``b`` (through its embedding; Elhage et al., 2021). A head that copies has its largest entry of each
    column on the diagonal.

    Shape:
        - output: ``(vocab_size, vocab_size)``, output tokens by attended tokens
    """
    mha = _head_of(model, layer, head)
    rows = slice(head * mha.v_head_dim, (head + 1) * mha.v_head_dim)
    W_ov = mha.W_o.weight[:, rows] @ mha.W_v.weight[rows]  # (num_hiddens, v_head_dim) @ (v_head_dim, num_hiddens)
    with torch.no_grad():  # (vocab, hiddens) @ (hiddens, hiddens) @ (hiddens, vocab) -> (vocab, vocab)
        return model.readout.weight @ W_ov @ model.token_embedding.weight.T


def copying_score(model: AttentionOnlyTransformer) -> Tensor:
    """Per layer and head, the fraction of tokens whose column of :func:`ov_circuit` has its largest entry on the
    diagonal: attending to token ``b`` raises ``b`` above every other token.

    Shape:
        - output: ``(num_layers, num_heads)``
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise wrong_type("model", _("an AttentionOnlyTransformer"), model)
    scores = torch.zeros(len(model.layers), model.layers[0].num_heads, dtype=torch.float64)
    for layer, mha in enumerate(model.layers):
        for head in range(mha.num_heads):
            circuit = ov_circuit(model, layer, head)  # (vocab, vocab)
            top = circuit.argmax(dim=0)  # (vocab,): the token each attended token raises most
            scores[layer, head] = (top == torch.arange(len(top))).double().mean()
    return scores


def composition_scores(model: AttentionOnlyTransformer, head: int) -> dict[str, Tensor]:
    """Elhage et al.'s Q-, K- and V-composition scores of layer-1 head ``head`` with every head of layer 2.

    Each is ``||A B||_F / (||A||_F ||B||_F)``, with ``B`` the layer-1 head's ``W_o W_v`` and ``A`` what the layer-2
    head reads it with: ``W_QK^T`` (queries), ``W_QK`` (keys) with ``W_QK = W_q^T W_k``, or its own ``W_o W_v``
    (values). It is about 1 when the two line up; :func:`composition_baseline` gives its level for random matrices.

    Shape:
        - output: ``{"Q": ..., "K": ..., "V": ...}``, each ``(num_heads,)``
    """
    first = _head_of(model, 0, head)
    if len(model.layers) != 2:
        raise ValueError(_("model must have 2 layers, got {count}").format(count=len(model.layers)))
    second = model.layers[1]

    def rows(mha: MultiHeadAttention, h: int, size: int) -> slice:
        return slice(h * size, (h + 1) * size)

    def ov(mha: MultiHeadAttention, h: int) -> Tensor:  # (num_hiddens, num_hiddens): residual in -> residual out
        return mha.W_o.weight[:, rows(mha, h, mha.v_head_dim)] @ mha.W_v.weight[rows(mha, h, mha.v_head_dim)]

    B = ov(first, head)
    scores: dict[str, list[float]] = {"Q": [], "K": [], "V": []}
    with torch.no_grad():
        for h in range(second.num_heads):
            q, k = (W.weight[rows(second, h, second.head_dim)] for W in (second.W_q, second.W_k))
            W_qk = q.T @ k  # query x . key x
            scores["Q"].append(_composition(W_qk.T, B))
            scores["K"].append(_composition(W_qk, B))
            scores["V"].append(_composition(ov(second, h), B))
    return {kind: torch.tensor(values, dtype=torch.float64) for kind, values in scores.items()}


def composition_baseline(model: AttentionOnlyTransformer, draws: int = 1000, seed: int = 0) -> dict[str, Tensor]:
    """The chance level of :func:`composition_scores`: the same scores of independent random Gaussian matrices with
    the shapes and rank of the model's own.

    Each draw makes a layer-1 ``W_o W_v`` and a layer-2 head's ``W_q``, ``W_k``, ``W_o`` and ``W_v`` from standard
    normal entries (float64, a generator seeded with ``seed``), in the sizes of ``model``'s, and scores them as
    :func:`composition_scores` does.

    Shape:
        - output: ``{"Q": ..., "K": ..., "V": ...}``, each ``(draws,)``
    """
    first = _head_of(model, 0, 0)
    if len(model.layers) != 2:
        raise ValueError(_("model must have 2 layers, got {count}").format(count=len(model.layers)))
    draws = require_positive_int("draws", draws)
    generator = torch.Generator().manual_seed(require_nonnegative_int("seed", seed))
    second, num_hiddens = model.layers[1], first.W_o.weight.shape[0]

    def gaussian(rows: int, cols: int) -> Tensor:
        return torch.randn(rows, cols, generator=generator, dtype=torch.float64)

    scores: dict[str, list[float]] = {"Q": [], "K": [], "V": []}
    for _draw in range(draws):
        B = gaussian(num_hiddens, first.v_head_dim) @ gaussian(first.v_head_dim, num_hiddens)  # layer 1's W_o W_v
        W_qk = gaussian(second.head_dim, num_hiddens).T @ gaussian(second.head_dim, num_hiddens)  # W_q^T W_k
        W_ov = gaussian(num_hiddens, second.v_head_dim) @ gaussian(second.v_head_dim, num_hiddens)  # layer 2's
        for kind, A in (("Q", W_qk.T), ("K", W_qk), ("V", W_ov)):
            scores[kind].append(_composition(A, B))
    return {kind: torch.tensor(values, dtype=torch.float64) for kind, values in scores.items()}


def _composition(A: Tensor, B: Tensor) -> float:
    """Elhage et al.'s composition score ``||A B||_F / (||A||_F ||B||_F)``."""
    return (torch.linalg.matrix_norm(A @ B) / (torch.linalg.matrix_norm(A) * torch.linalg.matrix_norm(B))).item()


@torch.no_grad()
def path_ablation(
    model: AttentionOnlyTransformer, held_out: tuple[Tensor, Tensor], head: int, path: str
) -> tuple[float, Tensor]:
    """Remove layer-1 head ``head`` from one input of layer 2 only, and measure what is left.

    ``path`` is "Q", "K" or "V": layer 2 computes its queries, keys or values from the residual stream without
    that head's output, and everything else (the other two inputs, the direct path to the read-out) keeps it.
    "none" removes nothing. Returns the loss on the repeated part of ``held_out = (tokens, repeats)`` and the
    induction scores of layer 2's heads, ``(num_heads,)``.
    """
    _head_of(model, 0, head)
    if len(model.layers) != 2:
        raise ValueError(_("model must have 2 layers, got {count}").format(count=len(model.layers)))
    if path not in PATHS:
        raise ValueError(_("path must be one of {paths}, got {path!r}").format(paths=", ".join(PATHS), path=path))
    tokens, repeats = held_out
    first, second = model.layers
    was_training = model.training
    model.eval()
    with cpu_threads(1):
        X = model.token_embedding(tokens) + model.position_embedding.weight[:tokens.shape[1]]
        full = X + first(X, X, X, causal=True)  # the stream after layer 1: (batch, seq_len, num_hiddens)
        with ablate_heads(first, [head]):
            without = X + first(X, X, X, causal=True)  # the same stream without the head's output
        queries, keys, values = (without if path == name else full for name in ("Q", "K", "V"))
        logits = model.readout(full + second(queries, keys, values, causal=True))  # (batch, seq_len, vocab)
    model.train(was_training)
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")  # (batch, seq_len - 1)
    return losses[repeats[:, :-1]].mean().item(), induction_score(second.attention_weights, tokens)


def _head_of(model: object, layer: int, head: int) -> MultiHeadAttention:
    if not isinstance(model, AttentionOnlyTransformer):
        raise wrong_type("model", _("an AttentionOnlyTransformer"), model)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(model.layers):
        raise ValueError(_("layer must be a layer index in [0, {count}), got {layer!r}").format(
            count=len(model.layers), layer=layer))
    mha = model.layers[layer]
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < mha.num_heads:
        raise ValueError(_("head must be a head number in [0, {num_heads}), got {head!r}").format(
            num_heads=mha.num_heads, head=head))
    return mha


def plot_phase_change(
    results: Mapping[str, Sequence[TrainResult]],
    chance: float | None = None,
    figsize: tuple[float, float] = (9.0, 3.4),
    *,
    bag_of_context: float | None = None,
    scores_of: str | None = None,
) -> Figure:
    """Left: held-out loss on the repeated part against training step, one colour per model, one line per seed.
    Right (with ``scores_of``, a key of ``results``): that model's largest induction score of its last layer
    (solid) and largest previous-token score of layer 1 (dashed), one colour per seed.

    ``chance`` (``ln(vocab_size)``, the loss of a uniform guess) is drawn as a dashed line, ``bag_of_context``
    (:func:`bag_of_context_loss`) as a dotted one.
    """
    if not results or not all(results.values()):
        raise ValueError(_("results must map each label to at least one TrainResult, got {results!r}").format(
            results=results))
    if scores_of is not None and scores_of not in results:
        raise ValueError(_("scores_of must be one of the labels {labels}, got {label!r}").format(
            labels=", ".join(map(repr, results)), label=scores_of))
    fig = Figure(figsize=figsize, layout="constrained")
    ax, *right = fig.subplots(1, 1 if scores_of is None else 2, squeeze=False)[0]
    for (label, runs), colour in zip(results.items(), ("tab:blue", "tab:orange", "tab:green", "tab:red"),
                                     strict=False):
        for k, run in enumerate(runs):
            steps, losses = zip(*run.history, strict=True)
            ax.plot(steps, losses, color=colour, alpha=0.8, label=label if k == 0 else None)
    if chance is not None:
        ax.axhline(chance, color="black", linestyle="--", linewidth=1, label=figure_text("uniform guess"))
    if bag_of_context is not None:
        ax.axhline(bag_of_context, color="black", linestyle=":", linewidth=1.2, label=figure_text("bag of context"))
    ax.set_ylim(0, None if chance is None else math.ceil(chance))
    ax.set_xlabel(figure_text("training step"))
    ax.set_ylabel(figure_text("loss on the repeated part (nats)"))
    ax.set_title(figure_text("Two layers learn to copy, suddenly; one layer does not"))
    ax.legend(loc="lower left", fontsize="small")
    if scores_of is not None:
        ax_scores = right[0]
        for k, run in enumerate(results[scores_of]):
            colour = f"C{k + 4}"
            steps, induction = zip(*run.score_history(len(run.scores[0][2]) - 1, "induction"), strict=True)
            _steps, previous = zip(*run.score_history(0, "previous"), strict=True)
            ax_scores.plot(steps, induction, color=colour, label=figure_text("seed {index}").format(index=k))
            ax_scores.plot(steps, previous, color=colour, linestyle="--")
        ax_scores.plot([], [], color="grey", label=figure_text("induction score, last layer"))
        ax_scores.plot([], [], color="grey", linestyle="--", label=figure_text("previous-token score, layer 1"))
        ax_scores.set_ylim(0, 1)
        ax_scores.set_xlabel(figure_text("training step"))
        ax_scores.set_ylabel(figure_text("largest score of a head"))
        ax_scores.set_title(figure_text("{label}: the heads form during the drop").format(label=scores_of))
        ax_scores.legend(loc="lower right", fontsize="small")
    return fig


def plot_two_heads(
    previous: Tensor, induction: Tensor, tokens: Tensor, titles: Sequence[str], suptitle: str | None = None,
    figsize: tuple[float, float] = (9.0, 4.6),
) -> Figure:
    """The weights of a previous-token head and an induction head on one sequence, each axis labelled with the
    token ids; outlined are the keys each should find: key ``t - 1`` on the left, the keys of
    :func:`induction_keys` on the right.

    Shape:
        - previous, induction: ``(seq_len, seq_len)``, queries by keys
        - tokens: ``(seq_len,)``, integer
    """
    seq_len = len(tokens)
    for name, weights in (("previous", previous), ("induction", induction)):
        if not isinstance(weights, Tensor) or tuple(weights.shape) != (seq_len, seq_len):
            got = tuple(weights.shape) if isinstance(weights, Tensor) else type(weights).__name__
            raise ValueError(_("{name} must be a ({seq_len}, {seq_len}) tensor of weights, got {got}").format(
                name=name, seq_len=seq_len, got=got))
    if len(titles) != 2:
        raise ValueError(_("titles must name the 2 panels, got {count} titles").format(count=len(titles)))
    expected = [torch.eye(seq_len, dtype=torch.bool).roll(-1, dims=1).tril(-1),  # [t, t - 1]
                induction_keys(tokens[None])[0]]
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    labels = [str(token) for token in tokens.tolist()]
    for ax, weights, keys, title in zip(axes, (previous, induction), expected, titles, strict=True):
        image = ax.imshow(weights.detach().to("cpu", torch.float32).numpy(), cmap="Reds", vmin=0, vmax=1)
        for t, j in keys.nonzero().tolist():
            ax.add_patch(Rectangle((j - 0.5, t - 0.5), 1, 1, fill=False, edgecolor="tab:blue", linewidth=0.9))
        ax.set_xticks(range(seq_len), labels, fontsize=6, rotation=90)
        ax.set_yticks(range(seq_len), labels, fontsize=6)
        ax.set_xlabel(figure_text("keys (token ids)"))
        ax.set_title(title)
    axes[0].set_ylabel(figure_text("queries (token ids)"))
    fig.colorbar(image, ax=axes, shrink=0.7, label=figure_text("attention weight"))
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig
