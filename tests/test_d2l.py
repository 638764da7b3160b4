"""mha_lib in place of the d2l book's own code, in both editions: d2l's models run unchanged with it.

The oracle is d2l's library itself, from the PyPI wheels: 0.17.6 (the Chinese book 《动手学深度学习》 2.0,
which mha_lib follows) and 1.0.3 (the English book at d2l.ai). Each wheel is downloaded without its
dependencies into a throwaway folder, and the definitions a test needs are run from its `d2l/torch.py`
(importing the whole module would need torchvision, pandas and more); the tests skip when no package
index can be reached. mha_lib never depends on d2l at run time.

Every model is built twice, with d2l's `MultiHeadAttention` and with mha_lib's in its place, the weights
copied with a strict `load_state_dict`; then both run or train from the same seed, so that dropout draws
the same masks, and their numbers must agree.
"""

from __future__ import annotations

import ast
import collections
import inspect
import math
import subprocess
import sys
import types
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import mha_lib

# pip downloads both wheels from the package index (a minute or more where it is slow or out of reach)
pytestmark = pytest.mark.slow

COMMON = ["Encoder", "Decoder", "AttentionDecoder", "sequence_mask", "masked_softmax", "MaskedSoftmaxCELoss",
          "grad_clipping", "DotProductAttention", "AdditiveAttention", "PositionalEncoding", "PositionWiseFFN",
          "AddNorm", "MaskLM", "NextSentencePred", "_pad_bert_inputs", "_get_batch_loss_bert"]
# What the tests need from each wheel, in an order in which the definitions can run (a base class first).
NAMES = {
    "0.17.6": COMMON + ["EncoderDecoder", "transpose_qkv", "transpose_output", "MultiHeadAttention", "EncoderBlock",
                        "TransformerEncoder", "BERTEncoder", "BERTModel"],
    "1.0.3": ["HyperParameters", "ProgressBoard", "Module", "Classifier"] + COMMON
             + ["EncoderDecoder", "MultiHeadAttention", "TransformerEncoderBlock", "TransformerEncoder", "BERTEncoder",
                "BERTModel"],
}
VOCAB_SIZE, NUM_HIDDENS, FFN_NUM_HIDDENS, NUM_HEADS, NUM_LAYERS = 40, 24, 48, 4, 2


@pytest.fixture(scope="module", params=list(NAMES), ids=lambda version: f"d2l-{version}")
def d2l(request, tmp_path_factory) -> types.SimpleNamespace:
    """d2l's own definitions from the wheel of one edition; ``d2l.X`` resolves as in the book."""
    version = request.param
    folder = tmp_path_factory.mktemp(f"d2l-{version}")
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
                        "--timeout", "20", "--dest", str(folder), f"d2l=={version}"],
                       check=True, capture_output=True, timeout=180)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"could not download d2l=={version} from a package index: {error}")
    source = zipfile.ZipFile(next(folder.glob("d2l-*.whl"))).read("d2l/torch.py").decode()
    module = ast.parse(source)
    definitions = {node.name: node for node in module.body
                   if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in NAMES[version]}
    namespace = types.SimpleNamespace(version=version, edition=version.split(".")[0])
    scope = {"torch": torch, "nn": nn, "F": F, "math": math, "inspect": inspect, "collections": collections,
             "d2l": namespace}
    # d2l's short names (zeros = torch.zeros, nn_Module = nn.Module, reshape = lambda x, ...: ...)
    aliases = [node for node in module.body if isinstance(node, ast.Assign) and len(node.targets) == 1
               and isinstance(node.targets[0], ast.Name)
               and (isinstance(node.value, ast.Lambda) or ast.unparse(node.value).startswith(("torch.", "nn.")))]
    exec(compile(ast.Module(aliases, type_ignores=[]), "d2l/torch.py:aliases", "exec"), scope)
    for node in aliases:
        setattr(namespace, node.targets[0].id, scope[node.targets[0].id])
    for name in NAMES[version]:
        exec(compile(ast.Module([definitions[name]], type_ignores=[]), f"d2l/torch.py:{name}", "exec"), scope)
        setattr(namespace, name, scope[name])
    return namespace


@contextmanager
def mha_lib_inside(d2l) -> Iterator[None]:
    """While the block runs, d2l's code builds mha_lib's MultiHeadAttention where it names its own."""
    original, d2l.MultiHeadAttention = d2l.MultiHeadAttention, mha_lib.MultiHeadAttention
    try:
        yield
    finally:
        d2l.MultiHeadAttention = original


def twins(d2l, build: Callable[[], nn.Module], *example) -> tuple[nn.Module, nn.Module]:
    """The model ``build`` makes with d2l's attention and with mha_lib's, with the same weights.

    d2l 1.0 sizes its layers lazily, so both run once on ``example`` before the weights are copied.
    """
    torch.manual_seed(0)
    theirs = build()
    with mha_lib_inside(d2l):
        ours = build()
    with torch.no_grad():
        theirs(*example)
        ours(*example)
    ours.load_state_dict(theirs.state_dict(), strict=True)  # the same parameter names and shapes
    layers = [module for module in ours.modules() if isinstance(module, nn.Module) and hasattr(module, "W_o")]
    assert layers and all(isinstance(layer, mha_lib.MultiHeadAttention) for layer in layers)
    return theirs, ours


def transformer_encoder(d2l, dropout: float) -> nn.Module:
    if d2l.edition == "0":  # d2l 0.17: every size is given
        return d2l.TransformerEncoder(VOCAB_SIZE, NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, [NUM_HIDDENS],
                                      NUM_HIDDENS, FFN_NUM_HIDDENS, NUM_HEADS, NUM_LAYERS, dropout)
    return d2l.TransformerEncoder(VOCAB_SIZE, NUM_HIDDENS, FFN_NUM_HIDDENS, NUM_HEADS, NUM_LAYERS, dropout)


def d2l_attention(d2l, dropout: float):
    """``d2l.MultiHeadAttention`` (d2l's or mha_lib's, whichever is in place) in the edition's own form."""
    if d2l.edition == "0":
        return d2l.MultiHeadAttention(NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, NUM_HIDDENS, NUM_HEADS, dropout)
    return d2l.MultiHeadAttention(NUM_HIDDENS, NUM_HEADS, dropout)


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train, dropout 0.2"])
def test_d2l_transformer_encoder_runs_unchanged_with_mha_lib(d2l, train):
    tokens, valid_lens = torch.randint(0, VOCAB_SIZE, (3, 7)), torch.tensor([7, 4, 2])
    theirs, ours = twins(d2l, lambda: transformer_encoder(d2l, dropout=0.2), tokens, valid_lens)
    theirs.train(train)
    ours.train(train)
    torch.manual_seed(1)
    expected = theirs(tokens, valid_lens)
    torch.manual_seed(1)  # the same dropout masks: mha_lib draws them in the same order as d2l
    torch.testing.assert_close(ours(tokens, valid_lens), expected)
    for block, (got, want) in enumerate(zip(ours.attention_weights, theirs.attention_weights, strict=True)):
        assert got.shape == want.shape == (3 * NUM_HEADS, 7, 7), block  # d2l: (batch * heads, queries, keys)
        torch.testing.assert_close(got, want)


class TransformerDecoder(nn.Module):
    """A Transformer decoder in the d2l book's style, built from d2l's parts (the wheels have no decoder).

    Each block: masked self-attention (query i sees the first i + 1 target tokens: d2l's per-query
    ``valid_lens``), attention to the encoder's outputs (the source's ``valid_lens``), a feed-forward net,
    each followed by d2l's ``AddNorm``. Its state is ``[encoder outputs, source valid_lens]``.
    """

    def __init__(self, d2l, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB_SIZE, NUM_HIDDENS)
        self.pos_encoding = d2l.PositionalEncoding(NUM_HIDDENS, dropout)
        norm = [NUM_HIDDENS] if d2l.edition == "0" else NUM_HIDDENS
        self.blocks = nn.ModuleList(nn.ModuleDict({
            "self_attention": d2l_attention(d2l, dropout), "addnorm1": d2l.AddNorm(norm, dropout),
            "cross_attention": d2l_attention(d2l, dropout), "addnorm2": d2l.AddNorm(norm, dropout),
            "ffn": (d2l.PositionWiseFFN(NUM_HIDDENS, FFN_NUM_HIDDENS, NUM_HIDDENS) if d2l.edition == "0"
                    else d2l.PositionWiseFFN(FFN_NUM_HIDDENS, NUM_HIDDENS)),
            "addnorm3": d2l.AddNorm(norm, dropout)}) for _ in range(NUM_LAYERS))
        self.dense = nn.Linear(NUM_HIDDENS, VOCAB_SIZE)

    def init_state(self, enc_outputs, enc_valid_lens, *args):
        return [enc_outputs, enc_valid_lens]

    def forward(self, X, state):
        enc_outputs, enc_valid_lens = state
        batch_size, num_steps = X.shape
        dec_valid_lens = torch.arange(1, num_steps + 1).repeat(batch_size, 1)  # (batch_size, num_steps)
        X = self.pos_encoding(self.embedding(X) * math.sqrt(NUM_HIDDENS))
        for block in self.blocks:
            Y = block["addnorm1"](X, block["self_attention"](X, X, X, dec_valid_lens))
            Z = block["addnorm2"](Y, block["cross_attention"](Y, enc_outputs, enc_outputs, enc_valid_lens))
            X = block["addnorm3"](Z, block["ffn"](Z))
        return self.dense(X), state


def seq2seq_batch() -> tuple[torch.Tensor, ...]:
    """Source and target sentences of random tokens (0 = <pad>, 1 = <bos>), padded to 6 tokens."""
    generator = torch.Generator().manual_seed(7)
    src, tgt = torch.randint(3, VOCAB_SIZE, (2, 5, 6), generator=generator)
    src_valid_len, tgt_valid_len = torch.randint(2, 7, (2, 5), generator=generator)
    positions = torch.arange(6)
    src = src.masked_fill(positions >= src_valid_len[:, None], 0)
    tgt = tgt.masked_fill(positions >= tgt_valid_len[:, None], 0)
    dec_input = torch.cat([torch.ones(5, 1, dtype=torch.long), tgt[:, :-1]], dim=1)  # teacher forcing
    return src, dec_input, src_valid_len, tgt, tgt_valid_len


def train(model: nn.Module, loss_of: Callable[[], torch.Tensor], steps: int, clip: Callable | None) -> list[float]:
    """Adam, a few steps, from seed 1 (the dropout masks); the losses along the way."""
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
    model.train()
    torch.manual_seed(1)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_of(model)
        loss.backward()
        if clip is not None:
            clip(model, 1)
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_d2l_transformer_seq2seq_trains_to_the_same_losses_with_mha_lib(d2l):
    src, dec_input, src_valid_len, tgt, tgt_valid_len = seq2seq_batch()
    loss = d2l.MaskedSoftmaxCELoss()  # d2l's loss, which masks the padding with d2l's sequence_mask

    def build():
        return d2l.EncoderDecoder(transformer_encoder(d2l, dropout=0.1), TransformerDecoder(d2l, dropout=0.1))

    def loss_of(model):
        output = model(src, dec_input, src_valid_len)
        Y_hat = output[0] if d2l.edition == "0" else output  # d2l 1.0's EncoderDecoder returns the output alone
        return loss(Y_hat, tgt, tgt_valid_len).sum()

    theirs, ours = twins(d2l, build, src, dec_input, src_valid_len)
    expected = train(theirs, loss_of, steps=4, clip=d2l.grad_clipping)
    got = train(ours, loss_of, steps=4, clip=d2l.grad_clipping)
    # float32 losses read out as Python floats: compare them with float32's tolerances, not float64's (the two
    # layers mask in another order, d2l with a -1e6 fill, mha_lib with the dtype's minimum and exact zeros)
    torch.testing.assert_close(got, expected, rtol=1.3e-6, atol=1e-5)
    assert expected[-1] < expected[0]  # it does train
    for got_parameter, expected_parameter in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(got_parameter, expected_parameter)


def bert_batch(d2l) -> tuple[torch.Tensor, ...]:
    """Pairs of random sentences, padded by d2l's own _pad_bert_inputs (which makes float32 valid_lens)."""
    generator = torch.Generator().manual_seed(11)
    vocab, max_len, examples = {"<pad>": 0, "<mask>": 1, "<cls>": 2, "<sep>": 3}, 12, []
    for length in (12, 9, 7, 10):
        token_ids = [2] + torch.randint(4, VOCAB_SIZE, (length - 2,), generator=generator).tolist() + [3]
        segments = [0] * (length // 2) + [1] * (length - length // 2)
        pred_positions = sorted(torch.randperm(length - 2, generator=generator)[:2].add(1).tolist())
        labels = [token_ids[position] for position in pred_positions]
        for position in pred_positions:
            token_ids[position] = vocab["<mask>"]
        examples.append((token_ids, pred_positions, labels, segments, length % 2 == 0))
    batch = [torch.stack(part) for part in d2l._pad_bert_inputs(examples, max_len, vocab)]
    assert batch[2].dtype == torch.float32  # d2l's valid_lens, which mha_lib now accepts as they are
    return tuple(batch)


def test_d2l_bert_pretraining_gives_the_same_losses_with_mha_lib(d2l):
    tokens, segments, valid_lens, pred_positions, mlm_weights, mlm_Y, nsp_y = bert_batch(d2l)
    loss = nn.CrossEntropyLoss()

    def build():
        if d2l.edition == "0":
            return d2l.BERTModel(VOCAB_SIZE, NUM_HIDDENS, [NUM_HIDDENS], NUM_HIDDENS, FFN_NUM_HIDDENS, NUM_HEADS,
                                 NUM_LAYERS, 0.1, key_size=NUM_HIDDENS, query_size=NUM_HIDDENS,
                                 value_size=NUM_HIDDENS, hid_in_features=NUM_HIDDENS,
                                 mlm_in_features=NUM_HIDDENS, nsp_in_features=NUM_HIDDENS)
        return d2l.BERTModel(VOCAB_SIZE, NUM_HIDDENS, FFN_NUM_HIDDENS, NUM_HEADS, NUM_LAYERS, 0.1, max_len=12)

    def loss_of(model):
        return d2l._get_batch_loss_bert(model, loss, VOCAB_SIZE, tokens, segments, valid_lens, pred_positions,
                                        mlm_weights, mlm_Y, nsp_y)[2]

    theirs, ours = twins(d2l, build, tokens, segments, valid_lens, pred_positions)
    expected = train(theirs, loss_of, steps=3, clip=None)
    got = train(ours, loss_of, steps=3, clip=None)
    torch.testing.assert_close(got, expected, rtol=1.3e-6, atol=1e-5)  # float32 losses, as in the seq2seq test
    assert expected[-1] < expected[0]


def test_d2l_layers_and_functions_match_mha_lib_one_by_one(d2l):
    torch.manual_seed(0)
    queries, keys, values = torch.randn(2, 3, 5), torch.randn(2, 4, 6), torch.randn(2, 4, 7)
    if d2l.edition == "0":
        theirs = d2l.MultiHeadAttention(6, 5, 7, 20, 4, 0.0, bias=True).eval()
        ours = mha_lib.MultiHeadAttention(6, 5, 7, 20, 4, 0.0, bias=True).eval()
    else:  # d2l 1.0's form; the sizes of the inputs come from the first call
        theirs = d2l.MultiHeadAttention(20, 4, 0.0, bias=True).eval()
        ours = mha_lib.MultiHeadAttention(20, 4, 0.0, bias=True).eval()
        theirs(queries, keys, values, None)
        ours(queries, keys, values)
        assert (ours.query_size, ours.key_size, ours.value_size) == (5, 6, 7)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    for valid_lens in (None, torch.tensor([4, 2]), torch.tensor([[1, 2, 3], [4, 4, 1]]), torch.tensor([4.0, 2.0])):
        torch.testing.assert_close(ours(queries, keys, values, valid_lens), theirs(queries, keys, values, valid_lens))
        torch.testing.assert_close(ours.attention.attention_weights, theirs.attention.attention_weights)
    X = torch.randn(2, 3, 20)
    if d2l.edition == "0":
        torch.testing.assert_close(mha_lib.transpose_qkv(X, 4), d2l.transpose_qkv(X, 4))
    else:  # d2l 1.0 has them as methods
        torch.testing.assert_close(ours.transpose_qkv(X), theirs.transpose_qkv(X))
        torch.testing.assert_close(ours.transpose_output(theirs.transpose_qkv(X)), X)
    scores = torch.randn(2, 3, 4)
    torch.testing.assert_close(mha_lib.masked_softmax(scores, torch.tensor([4, 2])),
                               d2l.masked_softmax(scores, torch.tensor([4, 2])))
    for X, valid_len, value in ((torch.ones(3, 5, dtype=torch.long), torch.tensor([5, 2, 0]), 0),
                                (torch.randn(3, 5, 2), torch.tensor([1.0, 4.0, 3.0]), -1e6)):
        torch.testing.assert_close(mha_lib.sequence_mask(X.clone(), valid_len, value),
                                   d2l.sequence_mask(X.clone(), valid_len, value))


def test_d2l_additive_attention_matches_in_the_editions_form(d2l):
    queries, keys, values = torch.randn(2, 1, 20), torch.randn(2, 10, 2), torch.randn(2, 10, 4)
    valid_lens = torch.tensor([2, 6])
    torch.manual_seed(0)
    if d2l.edition == "0":
        theirs, ours = d2l.AdditiveAttention(2, 20, 8, 0.1), mha_lib.AdditiveAttention(2, 20, 8, 0.1)
    else:
        theirs, ours = d2l.AdditiveAttention(8, 0.1), mha_lib.AdditiveAttention(8, 0.1)
        theirs(queries, keys, values, valid_lens)
        ours(queries, keys, values, valid_lens)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    theirs.eval()
    ours.eval()
    torch.testing.assert_close(ours(queries, keys, values, valid_lens), theirs(queries, keys, values, valid_lens))


def test_the_rules_that_differ_from_d2l_on_purpose(d2l):
    """The compatibility table of docs/d2l.md: a valid length of 0 differs; one beyond the keys is d2l's rule."""
    scores = torch.randn(1, 2, 4)
    theirs = d2l.masked_softmax(scores.clone(), torch.tensor([0]))
    torch.testing.assert_close(theirs, torch.full_like(scores, 0.25))  # d2l: evenly over the padding
    assert torch.equal(mha_lib.masked_softmax(scores, torch.tensor([0])), torch.zeros_like(scores))  # mha_lib: none
    torch.testing.assert_close(d2l.masked_softmax(scores.clone(), torch.tensor([9])), scores.softmax(-1))
    # A length beyond the keys is d2l's rule, not a difference: all keys are used (d2l 0.17's predict_seq2seq
    # passes such lengths)
    torch.testing.assert_close(mha_lib.masked_softmax(scores, torch.tensor([9])), scores.softmax(-1))
