"""A toy task and a tiny attention model that trains in seconds on a CPU, and tools to look inside it.

The task (:class:`TwoLookupTask`): a sequence of random tokens; at position ``t`` the model must
output two tokens at once, the one ``offset`` positions back (a local look-up) and the first token
of the sequence (a long-range look-up). The pair ``(local, first)`` is one class,
``local * vocab_size + first``, so one cross-entropy loss trains both.

Dimension names (those of :mod:`mha_lib.functional`):

    batch_size   sequences in a batch
    seq_len      tokens per sequence
    num_hiddens  features of the embeddings and of the attention layer
    num_heads    attention heads
    head_dim     query/key features per head, num_hiddens // num_heads
    v_head_dim   value features per head (what a head writes before W_o); head_dim unless the layer says otherwise
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor, nn

from mha_lib._validation import require_positive_int, wrong_type
from mha_lib.modules import MultiHeadAttention
from mha_lib.utils import cpu_threads

from .i18n import N_, _, figure_text, tr

__all__ = [
    "IGNORE",
    "Accuracy",
    "TinyAttentionModel",
    "TrainResult",
    "TwoLookupTask",
    "ablate_heads",
    "ablation_rows",
    "attention_profile",
    "build_model",
    "evaluate",
    "head_subspace",
    "mean_pair_cosine",
    "plot_ablation",
    "plot_history",
    "plot_steps_to_reach",
    "plot_subspace_cosines",
    "principal_cosines",
    "print_progress",
    "random_heads_cosines",
    "row_label",
    "subspace_cosines",
    "train",
]

IGNORE = -100  # the target of positions with nothing to look up; F.cross_entropy skips it by default


@dataclass(frozen=True)
class TwoLookupTask:
    """Random tokens in, the pair (token ``offset`` back, first token) out, at every position from ``offset`` on.

    Change ``vocab_size``, ``seq_len`` or ``offset`` to change the task.
    """

    vocab_size: int = 16
    seq_len: int = 16
    offset: int = 1

    def __post_init__(self) -> None:
        require_positive_int("vocab_size", self.vocab_size)
        require_positive_int("seq_len", self.seq_len)
        require_positive_int("offset", self.offset)
        if self.offset >= self.seq_len:
            template = _("offset must be smaller than seq_len={seq_len}, got offset={offset}")
            raise ValueError(template.format(seq_len=self.seq_len, offset=self.offset))

    @property
    def num_classes(self) -> int:
        """One class per pair ``(local, first)``: ``vocab_size ** 2``."""
        return self.vocab_size**2

    def targets(self, tokens: Tensor) -> Tensor:
        """The class to predict at every position; ``IGNORE`` where there is no token ``offset`` back.

        Shape:
            - tokens: ``(batch_size, seq_len)``, integer in ``[0, vocab_size)``
            - output: ``(batch_size, seq_len)``, int64
        """
        self._check_tokens(tokens)
        targets = torch.full(tokens.shape, IGNORE, dtype=torch.int64, device=tokens.device)
        local = tokens[:, : -self.offset]  # the token offset back of positions offset..seq_len-1
        first = tokens[:, :1]  # (batch, 1), broadcast over positions
        targets[:, self.offset :] = local * self.vocab_size + first
        return targets

    def split(self, targets: Tensor) -> tuple[Tensor, Tensor]:
        """Undo the pairing: ``(local, first)`` tokens from classes (``IGNORE`` stays ``IGNORE`` in both)."""
        keep = targets != IGNORE
        local = torch.where(keep, targets.div(self.vocab_size, rounding_mode="floor"), IGNORE)
        first = torch.where(keep, targets.remainder(self.vocab_size), IGNORE)
        return local, first

    def sample(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """Draw ``batch_size`` random sequences and their targets from ``generator``.

        Shape:
            - output: tokens ``(batch_size, seq_len)`` and targets ``(batch_size, seq_len)``, int64
        """
        require_positive_int("batch_size", batch_size)
        if not isinstance(generator, torch.Generator):
            raise wrong_type("generator", _("a torch.Generator"), generator)
        tokens = torch.randint(self.vocab_size, (batch_size, self.seq_len), generator=generator)
        return tokens, self.targets(tokens)

    def _check_tokens(self, tokens: object) -> None:
        if not isinstance(tokens, Tensor) or tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
            got = tokens.dtype if isinstance(tokens, Tensor) else type(tokens).__name__
            raise TypeError(_("tokens must be an integer tensor, got {got}").format(got=got))
        if tokens.dim() != 2 or tokens.shape[1] != self.seq_len:
            template = _("tokens must have shape (batch_size, {seq_len}), got {shape}")
            raise ValueError(template.format(seq_len=self.seq_len, shape=tuple(tokens.shape)))
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.vocab_size):
            template = _("tokens must lie in [0, {vocab_size}), got values from {low} to {high}")
            raise ValueError(template.format(vocab_size=self.vocab_size, low=tokens.min().item(),
                                             high=tokens.max().item()))


class TinyAttentionModel(nn.Module):
    """Token and learned position embeddings, one causal ``MultiHeadAttention`` layer, a linear read-out.

    There is no residual connection: everything the read-out sees went through the attention heads.
    The attention layer is ``.attention``; its weights of the last call are in ``.attention.attention_weights``.

    Shape:
        - tokens: ``(batch_size, seq_len)``, integer
        - output: ``(batch_size, seq_len, num_classes)``, logits
    """

    def __init__(self, vocab_size: int, seq_len: int, num_hiddens: int, num_heads: int, num_classes: int) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, num_hiddens)
        self.position_embedding = nn.Embedding(seq_len, num_hiddens)
        self.attention = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens, num_hiddens, num_heads, bias=True)
        self.readout = nn.Linear(num_hiddens, num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        seq_len = tokens.shape[1]
        # (batch, seq_len, num_hiddens) + (seq_len, num_hiddens) -> (batch, seq_len, num_hiddens)
        X = self.token_embedding(tokens) + self.position_embedding.weight[:seq_len]
        H = self.attention(X, X, X, causal=True)  # position t sees positions 0..t only
        return self.readout(H)  # (batch, seq_len, num_hiddens) -> (batch, seq_len, num_classes)


def build_model(task: TwoLookupTask, num_hiddens: int, num_heads: int, seed: int = 0) -> TinyAttentionModel:
    """A :class:`TinyAttentionModel` for ``task`` with weights drawn from ``seed`` (the global RNG is left alone).

    The weights are drawn in float32, as PyTorch's layers draw them, and the model is then kept in float64.
    Training amplifies rounding: in float32, the kernels another CPU picks (AVX-512, AVX2 or none) sum in another
    order and move a trained model's statistics in the third decimal. In float64 the same differences stay
    below 1e-9, so what the chapters print is the same on every machine.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TinyAttentionModel(task.vocab_size, task.seq_len, num_hiddens, num_heads, task.num_classes)
    return model.double()


@dataclass(frozen=True)
class Accuracy:
    """Fractions of positions predicted right: the whole pair, its local part and its first-token part."""

    pair: float
    local: float
    first: float


@torch.no_grad()
def evaluate(model: TinyAttentionModel, task: TwoLookupTask, tokens: Tensor, targets: Tensor) -> Accuracy:
    """Accuracy of ``model`` on ``tokens``, counting only positions whose target is not ``IGNORE``.

    Shape:
        - tokens, targets: ``(batch_size, seq_len)``
    """
    was_training = model.training
    with cpu_threads(1):  # a toy model: a second thread only waits
        predictions = model.eval()(tokens).argmax(dim=-1)  # (batch, seq_len, classes) -> (batch, seq_len)
    model.train(was_training)
    keep = targets != IGNORE  # positions with something to predict

    def fraction(right: Tensor) -> float:
        return right[keep].float().mean().item()

    (local, first), (local_hat, first_hat) = task.split(targets), task.split(predictions)
    return Accuracy(fraction(predictions == targets), fraction(local_hat == local), fraction(first_hat == first))


@dataclass
class TrainResult:
    """What :func:`train` records: one ``(step, loss, held-out pair accuracy)`` per evaluation."""

    history: list[tuple[int, float, float]] = field(default_factory=list)

    @property
    def final_accuracy(self) -> float:
        return self.history[-1][2]

    def steps_to_reach(self, accuracy: float) -> int | None:
        """The first evaluated step with held-out accuracy >= ``accuracy``, or None if it never got there."""
        return next((step for step, _, acc in self.history if acc >= accuracy), None)


def train(
    model: TinyAttentionModel,
    task: TwoLookupTask,
    held_out: tuple[Tensor, Tensor],
    steps: int = 250,
    batch_size: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
    eval_every: int = 25,
    callback: Callable[[int, float, float], None] | None = None,
    stop_at: float | None = None,
) -> TrainResult:
    """Train ``model`` with Adam on fresh batches drawn from a generator seeded with ``seed``.

    Every ``eval_every`` steps (and after the last one) the pair accuracy on ``held_out = (tokens, targets)``
    is measured, recorded and passed with the step and the training loss to ``callback(step, loss, accuracy)``.
    With ``stop_at``, training ends at the first evaluation whose accuracy is at least ``stop_at``.
    The same seed and the same model give the same result. Training runs on one CPU thread:
    the model is so small that more threads only wait for each other.
    """
    for name, value in (("steps", steps), ("batch_size", batch_size), ("eval_every", eval_every)):
        require_positive_int(name, value)
    if not lr > 0:
        raise ValueError(_("lr must be a positive learning rate, got {lr!r}").format(lr=lr))
    if stop_at is not None and not 0 < stop_at <= 1:
        raise ValueError(_("stop_at must be an accuracy in (0, 1] or None, got {stop_at!r}").format(stop_at=stop_at))
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    result = TrainResult()
    model.train()
    with cpu_threads(1):
        for step in range(1, steps + 1):
            tokens, targets = task.sample(batch_size, generator)
            logits = model(tokens)
            # (batch, seq_len, classes) -> (batch*seq_len, classes); IGNORE targets do not count
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % eval_every == 0 or step == steps:
                accuracy = evaluate(model, task, *held_out).pair
                result.history.append((step, loss.item(), accuracy))
                if callback is not None:
                    callback(step, loss.item(), accuracy)
                if stop_at is not None and accuracy >= stop_at:
                    break
    model.eval()
    return result


def print_progress(every: int = 100) -> Callable[[int, float, float], None]:
    """A ``callback`` for :func:`train` that prints one line every ``every`` steps."""
    require_positive_int("every", every)

    def callback(step: int, loss: float, accuracy: float) -> None:
        if step % every == 0:
            print(_("step {step:5d}   loss {loss:7.4f}   held-out accuracy {accuracy:.3f}").format(
                step=step, loss=loss, accuracy=accuracy), flush=True)

    return callback


def plot_history(results: Mapping[str, TrainResult], figsize: tuple[float, float] = (7.0, 3.0)) -> Figure:
    """Held-out accuracy against training step, one line per labelled :class:`TrainResult`."""
    if not results:
        raise ValueError(tr("results must map at least one label to a TrainResult, got none"))
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    for label, result in results.items():
        steps, _, accuracies = zip(*result.history, strict=True)
        ax.plot(steps, accuracies, marker=".", label=label)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(figure_text("training step"))
    ax.set_ylabel(figure_text("held-out accuracy"))
    ax.set_title(figure_text("Learning curves"))
    ax.legend(loc="lower right")
    return fig


def _head_label(label: str) -> str:
    """``"head 2"`` (a row label of :func:`ablation_rows`) in the reader's language, for a figure."""
    number = label.removeprefix("head ")
    return figure_text("head {index}").format(index=number) if number.isdigit() else label


def row_label(label: str) -> str:
    """A row label of :func:`ablation_rows` (``"none"``, ``"head 2"``) in the reader's language, for a table."""
    number = label.removeprefix("head ")
    return _("head {index}").format(index=number) if number.isdigit() else _(label)


@contextmanager
def ablate_heads(mha: MultiHeadAttention, heads: Sequence[int]) -> Iterator[None]:
    """Inside the ``with`` block, the listed heads of ``mha`` contribute nothing: their slice of the
    concatenated head outputs is set to zero before ``W_o``. The layer itself is not changed.
    """
    if not isinstance(mha, MultiHeadAttention):
        raise wrong_type("mha", _("an mha_lib.MultiHeadAttention"), mha)
    heads = list(heads)
    for head in heads:
        if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < mha.num_heads:
            template = _("heads must be head numbers in [0, {num_heads}), got {head!r}")
            raise ValueError(template.format(num_heads=mha.num_heads, head=head))
    keep = torch.ones(mha.W_o.in_features, dtype=mha.W_o.weight.dtype, device=mha.W_o.weight.device)
    for head in heads:
        keep[head * mha.v_head_dim : (head + 1) * mha.v_head_dim] = 0  # head h owns features h*v_head_dim..

    def zero_heads(module: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        return (args[0] * keep,)  # (batch, queries, num_hiddens), out of place

    handle = mha.W_o.register_forward_pre_hook(zero_heads)
    try:
        yield
    finally:
        handle.remove()


def ablation_rows(
    model: TinyAttentionModel, task: TwoLookupTask, tokens: Tensor, targets: Tensor
) -> list[tuple[str, Accuracy]]:
    """Accuracy of the full model, then with each head zeroed in turn: ``[("none", acc), ("head 0", acc), ...]``."""
    rows = [(N_("none"), evaluate(model, task, tokens, targets))]
    for head in range(model.attention.num_heads):
        with ablate_heads(model.attention, [head]):
            rows.append((f"head {head}", evaluate(model, task, tokens, targets)))
    return rows


def plot_ablation(
    rows: Sequence[tuple[str, Accuracy]], chance: float | None = None, figsize: tuple[float, float] = (7.0, 3.2)
) -> Figure:
    """Bar chart of :func:`ablation_rows`: the accuracy of each part with each head zeroed.

    ``chance`` (e.g. ``1 / vocab_size``, the accuracy of a guess for one part) is drawn as a dashed line.
    """
    if not rows:
        raise ValueError(_("rows must hold at least one (label, Accuracy) row, got none"))
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    width = 0.27
    parts = (("pair", N_("pair"), "0.4"), ("local", N_("local"), "tab:orange"), ("first", N_("first"), "tab:blue"))
    for k, (part, name, colour) in enumerate(parts):
        values = [getattr(accuracy, part) for _row, accuracy in rows]
        ax.bar([i + (k - 1) * width for i in range(len(rows))], values, width, label=figure_text(name), color=colour)
    if chance is not None:
        ax.axhline(chance, color="black", linestyle="--", linewidth=1, label=figure_text("chance, one part"))
    ax.set_xticks(range(len(rows)), [figure_text("{label} zeroed").format(label=_head_label(label))
                                     if label != "none" else figure_text("full model") for label, _acc in rows])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(figure_text("which head is zeroed"))
    ax.set_ylabel(figure_text("held-out accuracy"))
    ax.set_title(figure_text("Head ablation: accuracy of the pair and of each part"))
    ax.legend(title=figure_text("part"), loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


@torch.no_grad()
def attention_profile(model: TinyAttentionModel, task: TwoLookupTask, tokens: Tensor) -> tuple[Tensor, Tensor]:
    """Per head, the mean attention weight on the local key (``offset`` back) and on the first key.

    Averaged over the sequences and over the query positions ``offset + 1 .. seq_len - 1`` (from there on
    the two keys are different positions).

    Shape:
        - tokens: ``(batch_size, seq_len)``
        - output: two tensors ``(num_heads,)``
    """
    was_training = model.training
    with cpu_threads(1):
        model.eval()(tokens)
    model.train(was_training)
    weights = model.attention.attention_weights  # (batch, heads, queries, kvpairs)
    queries = torch.arange(task.offset + 1, task.seq_len)
    to_local = weights[:, :, queries, queries - task.offset].mean(dim=(0, 2))  # (batch, heads, q) -> (heads,)
    to_first = weights[:, :, queries, 0].mean(dim=(0, 2))
    return to_local, to_first


def principal_cosines(A: Tensor, B: Tensor) -> Tensor:
    """Cosines of the principal angles between the column spaces of ``A`` and ``B``, largest first.

    1 means a shared direction, 0 an orthogonal one. Computed as the singular values of
    ``Q_A^T Q_B``, where ``Q_A`` and ``Q_B`` are orthonormal bases (from QR) of the two spaces.

    Shape:
        - A: ``(dim, k_a)``, B: ``(dim, k_b)`` with ``k_a, k_b <= dim``
        - output: ``(min(k_a, k_b),)``
    """
    for name, M in (("A", A), ("B", B)):
        if not isinstance(M, Tensor) or M.dim() != 2 or not M.dtype.is_floating_point:
            got = tuple(M.shape) if isinstance(M, Tensor) else type(M).__name__
            template = _("{name} must be a 2-D floating-point tensor (dim, k), got {got}")
            raise ValueError(template.format(name=name, got=got))
        if M.shape[1] > M.shape[0]:
            template = _("{name} must have no more columns than rows to span a subspace, got {shape}")
            raise ValueError(template.format(name=name, shape=tuple(M.shape)))
    if A.shape[0] != B.shape[0]:
        template = _("A and B must live in the same space (same rows), got {A_shape} and {B_shape}")
        raise ValueError(template.format(A_shape=tuple(A.shape), B_shape=tuple(B.shape)))
    Q_A, Q_B = torch.linalg.qr(A.double())[0], torch.linalg.qr(B.double())[0]  # (dim, k) orthonormal columns
    return torch.linalg.svdvals(Q_A.T @ Q_B).clamp(max=1.0).to(A.dtype)  # (k_a, dim) @ (dim, k_b) -> (k_a, k_b)


def head_subspace(mha: MultiHeadAttention, role: str, head: int) -> Tensor:
    """The matrix whose columns span what ``head`` reads (``role`` "q", "k", "v") or writes ("o").

    For "q", "k", "v" these are the input directions the head's projection reads, the rows of its slice of
    ``W_q.weight`` etc. (``nn.Linear`` stores ``W^T``); for "o" the output directions ``W_o`` writes the head to.

    Shape:
        - output: ``(in_features, head_dim)`` for "q" and "k", ``(in_features, v_head_dim)`` for "v",
          ``(num_hiddens, v_head_dim)`` for "o"
    """
    if role not in ("q", "k", "v", "o"):
        raise ValueError(_("role must be one of 'q', 'k', 'v', 'o', got {role!r}").format(role=role))
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < mha.num_heads:
        template = _("head must be a head number in [0, {num_heads}), got {head!r}")
        raise ValueError(template.format(num_heads=mha.num_heads, head=head))
    size = mha.v_head_dim if role in ("v", "o") else mha.head_dim  # values may have heads of another width
    rows = slice(head * size, (head + 1) * size)
    if role == "o":
        return mha.W_o.weight[:, rows].detach()  # (num_hiddens, v_head_dim)
    return getattr(mha, f"W_{role}").weight[rows].detach().T  # (size, in_features) -> (in_features, size)


def subspace_cosines(mha: MultiHeadAttention, role: str) -> Tensor:
    """Mean principal-angle cosine between every two heads' subspaces for ``role`` (see :func:`head_subspace`).

    The same numbers as :func:`principal_cosines` pair by pair, computed for all pairs at once.

    Shape:
        - output: ``(num_heads, num_heads)``, 1 on the diagonal
    """
    bases = torch.stack([head_subspace(mha, role, head) for head in range(mha.num_heads)])  # (heads, dim, size)
    with cpu_threads(1):
        Q = torch.linalg.qr(bases.double())[0]  # (heads, dim, size), orthonormal columns per head
        # (heads, 1, size, dim) @ (1, heads, dim, size) -> (heads, heads, size, size)
        overlap = Q.unsqueeze(1).transpose(-2, -1) @ Q.unsqueeze(0)
        cosines = torch.linalg.svdvals(overlap).clamp(max=1.0)  # (heads, heads, size)
    return cosines.mean(dim=-1).to(bases.dtype)  # (heads, heads, size) -> (heads, heads)


def mean_pair_cosine(mha: MultiHeadAttention, role: str) -> float:
    """The mean of :func:`subspace_cosines` over all pairs of different heads: one number per layer and role."""
    cosines = subspace_cosines(mha, role)  # (num_heads, num_heads)
    different = ~torch.eye(mha.num_heads, dtype=torch.bool)  # the num_heads * (num_heads - 1) off-diagonal pairs
    return cosines[different].mean().item()


def random_heads_cosines(dim: int, num_heads: int, head_dim: int, num_draws: int, generator: torch.Generator) -> Tensor:
    """The baseline for :func:`mean_pair_cosine`: the same statistic for ``num_heads`` random subspaces, drawn anew
    ``num_draws`` times.

    Each draw gives every head a uniformly random ``head_dim``-dimensional subspace of ``dim``-space (the span of a
    Gaussian matrix) and averages the mean principal-angle cosine over all pairs of different heads.

    Shape:
        - output: ``(num_draws,)``
    """
    for name, value in (("dim", dim), ("num_heads", num_heads), ("head_dim", head_dim), ("num_draws", num_draws)):
        require_positive_int(name, value)
    if num_heads < 2:
        template = _("num_heads must be at least 2 to form a pair of heads, got {num_heads}")
        raise ValueError(template.format(num_heads=num_heads))
    if head_dim > dim:
        template = _("head_dim must be at most dim={dim} for a subspace of dim-space, got head_dim={head_dim}")
        raise ValueError(template.format(dim=dim, head_dim=head_dim))
    gaussian = torch.randn(num_draws, num_heads, dim, head_dim, generator=generator, dtype=torch.float64)
    first, second = torch.triu_indices(num_heads, num_heads, offset=1)  # every pair i < j once
    with cpu_threads(1):
        Q = torch.linalg.qr(gaussian)[0]  # (draws, heads, dim, head_dim), orthonormal columns per head
        # (draws, pairs, head_dim, dim) @ (draws, pairs, dim, head_dim) -> (draws, pairs, head_dim, head_dim)
        overlap = Q[:, first].transpose(-2, -1) @ Q[:, second]
        cosines = torch.linalg.svdvals(overlap).clamp(max=1.0)  # (draws, pairs, head_dim)
    return cosines.mean(dim=(1, 2)).float()  # (draws, pairs, head_dim) -> (draws,)


def plot_steps_to_reach(
    steps: Mapping[int, Mapping[int, int | None]], limit: int, figsize: tuple[float, float] = (6.0, 3.2)
) -> Figure:
    """Steps to reach the accuracy threshold against the number of heads, one line per seed.

    ``steps[seed][num_heads]`` is a step count, or None for a run that did not get there within ``limit`` steps;
    such runs are drawn as crosses on a dashed line above ``limit``.
    """
    if not steps:
        raise ValueError(_("steps must map at least one seed to {num_heads: steps}, got none"))
    require_positive_int("limit", limit)
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    never = limit * 1.3
    # Each seed's points are shifted a little sideways (the x axis is log 2: a factor), so that equal step
    # counts, the crosses above all, stay apart instead of hiding each other.
    shifts = torch.linspace(-0.15, 0.15, len(steps)).tolist() if len(steps) > 1 else [0.0]
    for shift, (seed, per_heads) in zip(shifts, steps.items(), strict=True):
        heads = sorted(per_heads)
        shifted = [h * 2**shift for h in heads]
        values = [never if per_heads[h] is None else per_heads[h] for h in heads]
        reached = [per_heads[h] is not None for h in heads]
        (line,) = ax.plot(shifted, values, alpha=0.8, label=figure_text("seed {seed}").format(seed=seed),
                          marker="o", markevery=reached)  # a dot where the run got there, a cross where not
        missed = [x for x, h in zip(shifted, heads, strict=True) if per_heads[h] is None]
        ax.plot(missed, [never] * len(missed), linestyle="none", marker="x", markersize=8, markeredgewidth=2,
                color=line.get_color())
    ax.axhline(never, color="black", linestyle="--", linewidth=1)
    ax.set_xscale("log", base=2)
    all_heads = sorted({h for per_heads in steps.values() for h in per_heads})
    ax.set_xticks(all_heads, [str(h) for h in all_heads])
    ax.set_ylim(0, never * 1.08)
    ticks = [tick for tick in ax.get_yticks() if 0 <= tick <= limit]
    never_label = figure_text("not in {limit}").format(limit=limit)
    ax.set_yticks([*ticks, never], [f"{tick:g}" for tick in ticks] + [never_label])
    ax.set_xlabel(figure_text("num_heads (the same num_hiddens)"))
    ax.set_ylabel(figure_text("training steps"))
    ax.set_title(figure_text("Steps to reach the threshold, one line per seed"))
    fig.legend(loc="outside right upper", fontsize=8)  # beside the axes: no point hides under it
    return fig


def plot_subspace_cosines(
    random: Mapping[int, Tensor],
    initial: Mapping[tuple[int, str], Sequence[float]],
    trained: Mapping[tuple[int, str], Sequence[float]],
    figsize: tuple[float, float] = (9.0, 3.2),
) -> Figure:
    """One panel per number of heads: the random-heads range, and each seed's value at initialisation and trained.

    ``random[num_heads]`` holds draws of :func:`random_heads_cosines`; ``initial[num_heads, role]`` and
    ``trained[num_heads, role]`` hold one :func:`mean_pair_cosine` per seed, for the roles "q", "k", "v", "o".
    The grey bar spans the middle 90% of the random draws, the black tick is their median.
    """
    if not random:
        raise ValueError(_("random must map at least one num_heads to its random draws, got none"))
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(1, len(random), sharey=True, squeeze=False)[0]
    roles = "qkvo"
    for ax, (num_heads, draws) in zip(axes, random.items(), strict=True):
        low, median, high = (draws.quantile(q).item() for q in (0.05, 0.5, 0.95))
        for x, role in enumerate(roles):
            ax.bar(x, high - low, bottom=low, width=0.6, color="0.85",
                   label=figure_text("random heads, 90%") if x == 0 else None)
            ax.hlines(median, x - 0.3, x + 0.3, color="black", linewidth=1)
            before, after = initial[num_heads, role], trained[num_heads, role]
            offsets = torch.linspace(-0.2, 0.2, len(after)).tolist()
            for dx, b, a in zip(offsets, before, after, strict=True):
                ax.plot([x + dx, x + dx], [b, a], color="tab:blue", linewidth=0.8, alpha=0.6)
            ax.plot([x + dx for dx in offsets], before, "o", markerfacecolor="white", color="tab:blue",
                    markersize=4, label=figure_text("at initialisation") if x == 0 else None)
            ax.plot([x + dx for dx in offsets], after, "o", color="tab:blue", markersize=4,
                    label=figure_text("trained") if x == 0 else None)
        ax.set_xticks(range(len(roles)), [f"W_{role}" for role in roles])
        ax.set_title(figure_text("{count} heads").format(count=num_heads))
        ax.set_xlabel(figure_text("projection"))
    axes[0].set_ylabel(figure_text("mean cosine over pairs of heads"))
    axes[-1].legend(loc="upper right", fontsize=8)
    fig.suptitle(figure_text("How alike are the heads' subspaces? (one dot per seed)"))
    return fig
