"""mha_lib in place of the d2l book's own code: d2l's Transformer encoder runs unchanged with it.

The oracle is d2l's library itself, the `d2l` 0.17.6 wheel on PyPI (the code of the Chinese book
《动手学深度学习》 2.0 that mha_lib follows). The test downloads it without its dependencies into a
throwaway folder and reads the classes it needs out of `d2l/torch.py` (importing the whole module
would need torchvision, pandas and more); it is skipped when no package index can be reached.
mha_lib never depends on d2l at run time.
"""

from __future__ import annotations

import ast
import math
import subprocess
import sys
import types
import zipfile

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import mha_lib

D2L_VERSION = "0.17.6"
# What the encoder needs, in the order the definitions must run (a base class before its subclass).
NAMES = ["Encoder", "sequence_mask", "masked_softmax", "DotProductAttention", "transpose_qkv", "transpose_output",
         "MultiHeadAttention", "PositionalEncoding", "PositionWiseFFN", "AddNorm", "EncoderBlock",
         "TransformerEncoder"]


@pytest.fixture(scope="module")
def d2l(tmp_path_factory) -> types.SimpleNamespace:
    """d2l's own definitions of NAMES, run from the wheel's source; ``d2l.X`` resolves as in the book."""
    folder = tmp_path_factory.mktemp("d2l")
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
                        "--timeout", "20", "--dest", str(folder), f"d2l=={D2L_VERSION}"],
                       check=True, capture_output=True, timeout=180)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"could not download d2l=={D2L_VERSION} from a package index: {error}")
    wheel = next(folder.glob("d2l-*.whl"))
    source = zipfile.ZipFile(wheel).read("d2l/torch.py").decode()
    module = ast.parse(source)
    definitions = {node.name: node for node in module.body
                   if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in NAMES}
    namespace = types.SimpleNamespace()
    scope = {"torch": torch, "nn": nn, "F": F, "math": math, "d2l": namespace}
    # d2l's short names for torch functions (zeros = torch.zeros, ...), which its classes call as d2l.zeros
    aliases = [node for node in module.body if isinstance(node, ast.Assign) and len(node.targets) == 1
               and isinstance(node.targets[0], ast.Name) and ast.unparse(node.value).startswith("torch.")]
    exec(compile(ast.Module(aliases, type_ignores=[]), "d2l/torch.py:aliases", "exec"), scope)
    for node in aliases:
        setattr(namespace, node.targets[0].id, scope[node.targets[0].id])
    for name in NAMES:
        exec(compile(ast.Module([definitions[name]], type_ignores=[]), f"d2l/torch.py:{name}", "exec"), scope)
        setattr(namespace, name, scope[name])
    return namespace


def encoders(d2l, dropout: float):
    """d2l's TransformerEncoder twice, the second one built with mha_lib.MultiHeadAttention, same weights."""
    sizes = {"vocab_size": 50, "key_size": 24, "query_size": 24, "value_size": 24, "num_hiddens": 24,
             "norm_shape": [24], "ffn_num_input": 24, "ffn_num_hiddens": 48, "num_heads": 4, "num_layers": 2,
             "dropout": dropout}
    torch.manual_seed(0)
    original = d2l.TransformerEncoder(**sizes)
    d2l_mha, d2l.MultiHeadAttention = d2l.MultiHeadAttention, mha_lib.MultiHeadAttention
    try:
        ours = d2l.TransformerEncoder(**sizes)
    finally:
        d2l.MultiHeadAttention = d2l_mha
    ours.load_state_dict(original.state_dict(), strict=True)  # same parameter names and shapes
    assert isinstance(ours.blks[0].attention, mha_lib.MultiHeadAttention)
    return original, ours


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train, dropout 0.2"])
def test_d2l_transformer_encoder_runs_unchanged_with_mha_lib(d2l, train):
    original, ours = encoders(d2l, dropout=0.2)
    original.train(train)
    ours.train(train)
    tokens = torch.randint(0, 50, (3, 7))
    valid_lens = torch.tensor([7, 4, 2])
    torch.manual_seed(1)
    expected = original(tokens, valid_lens)
    torch.manual_seed(1)  # the same dropout masks: mha_lib draws them in the same order as d2l
    output = ours(tokens, valid_lens)
    torch.testing.assert_close(output, expected)
    for block, (got, want) in enumerate(zip(ours.attention_weights, original.attention_weights, strict=True)):
        assert got.shape == want.shape == (3 * 4, 7, 7), block  # d2l's layout: (batch * heads, queries, keys)
        torch.testing.assert_close(got, want)


def test_d2l_layers_match_mha_lib_layer_by_layer(d2l):
    torch.manual_seed(0)
    theirs = d2l.MultiHeadAttention(6, 5, 7, 20, 4, 0.0, bias=True).eval()
    ours = mha_lib.MultiHeadAttention(6, 5, 7, 20, 4, 0.0, bias=True).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    queries, keys, values = torch.randn(2, 3, 5), torch.randn(2, 4, 6), torch.randn(2, 4, 7)
    for valid_lens in (None, torch.tensor([4, 2]), torch.tensor([[1, 2, 3], [4, 4, 1]])):
        torch.testing.assert_close(ours(queries, keys, values, valid_lens), theirs(queries, keys, values, valid_lens))
        torch.testing.assert_close(ours.attention.attention_weights, theirs.attention.attention_weights)
    X = torch.randn(2, 3, 20)
    torch.testing.assert_close(mha_lib.transpose_qkv(X, 4), d2l.transpose_qkv(X, 4))
    torch.testing.assert_close(mha_lib.transpose_output(d2l.transpose_qkv(X, 4), 4), X)
    scores = torch.randn(2, 3, 4)
    torch.testing.assert_close(mha_lib.masked_softmax(scores, torch.tensor([4, 2])),
                               d2l.masked_softmax(scores, torch.tensor([4, 2])))
