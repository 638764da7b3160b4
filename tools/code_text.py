"""The words in a code cell: its comments and docstrings, found with Python's own tokenizer and parser.

A translated edition runs the English code but reads its comments and docstrings in the reader's language
(tools/translate.py). This module finds those texts, puts translations in their place, and compares two cells
with the texts set aside, so that any difference in the code itself still shows.

- A **comment block** is a run of comments, each alone on its line, at the same indentation: one message, its
  lines joined by newlines (a translation may have more or fewer lines). A comment after code on its line is a
  message of its own.
- A **docstring** is the first statement of a function or class, a string literal: one message, its text as
  ``inspect.cleandoc`` gives it.
- Never translated: test and tool markers (``# NBVAL_IGNORE_OUTPUT``, ``# noqa``, ``# type:``, ``# fmt:``),
  nbgrader's ``### BEGIN SOLUTION`` and ``### END SOLUTION``, comments without a word, and IPython's ``%magic``
  and ``!shell`` lines, comments included. A cell that Python cannot tokenize (a ``%%bash`` cell) is left whole.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from dataclasses import dataclass

# A comment that carries one of these anywhere is left as it is, a noqa directive after another comment included.
MARKER = re.compile(r"#+\s*(NBVAL_\w+|noqa\b|type:|pragma\b|fmt:|isort:|ruff:|pylint:|BEGIN SOLUTION|END SOLUTION)")
PREFIX = re.compile(r"#+ ?")
WORD = re.compile(r"[A-Za-z]{2,}|[\u4e00-\u9fff]")  # a word: two Latin letters, or one Chinese character


@dataclass(frozen=True)
class Text:
    """One translatable text of a cell: a comment block, a comment after code, or a docstring."""

    kind: str  # "comment", "inline" (after code on its line) or "docstring"
    message: str  # the English text: comment lines without their '#', or the cleaned docstring
    first: int  # its first and last line, 0-based, in the cell's source
    last: int
    column: int  # where the '#' or the docstring's quotes start


def _is_magic(line: str) -> bool:
    return line.lstrip().startswith(("%", "!"))


def _python_lines(source: str) -> list[str]:
    """The cell's lines with IPython's magic and shell lines blanked (line numbers kept)."""
    return ["" if _is_magic(line) else line for line in source.split("\n")]


def _tokens(source: str) -> list[tokenize.TokenInfo] | None:
    if source.lstrip().startswith("%%"):  # a cell magic: the cell is another language (%%bash) or a block of one
        return None
    try:
        return list(tokenize.generate_tokens(io.StringIO("\n".join(_python_lines(source))).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def _docstring_nodes(source: str) -> list[ast.Constant]:
    if source.lstrip().startswith("%%"):
        return []
    try:
        tree = ast.parse("\n".join(_python_lines(source)))
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.append(first.value)
    return found


def texts(source: str) -> list[Text]:
    """The translatable texts of a code cell, in source order."""
    tokens = _tokens(source)
    if tokens is None:
        return []
    lines = source.split("\n")
    found: list[Text] = []
    block: list[tuple[int, int, str]] = []  # (line, column, text) of the comment block being read

    def close() -> None:
        if block and any(WORD.search(text) for _, _, text in block):
            found.append(Text("comment", "\n".join(text for _, _, text in block), block[0][0], block[-1][0],
                              block[0][1]))
        block.clear()

    for token in tokens:
        if token.type != tokenize.COMMENT:
            if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                close()
            continue
        number, column = token.start[0] - 1, token.start[1]
        text = PREFIX.sub("", token.string, count=1).rstrip()
        alone = not lines[number][:column].strip()
        if MARKER.search(token.string):
            close()
            continue
        if not alone:
            close()
            if WORD.search(text):
                found.append(Text("inline", text, number, number, column))
            continue
        if block and (block[-1][0] != number - 1 or block[-1][1] != column):
            close()
        block.append((number, column, text))
    close()
    for node in _docstring_nodes(source):
        message = inspect.cleandoc(node.value)
        if WORD.search(message):
            found.append(Text("docstring", message, node.lineno - 1, node.end_lineno - 1, node.col_offset))
    return sorted(found, key=lambda text: text.first)


def translate(source: str, translations: dict[str, str]) -> str:
    """``source`` with each text that ``translations`` has replaced by its translation; the code as it was."""
    lines = source.split("\n")
    for text in reversed(texts(source)):  # from the bottom up: a block may change the number of lines
        if text.message not in translations:
            continue
        new = translations[text.message]
        if text.kind == "inline":
            line = lines[text.first]
            prefix = PREFIX.match(line[text.column:]).group(0)
            lines[text.first] = line[:text.column] + prefix + new
        elif text.kind == "comment":
            first = lines[text.first]
            indent, prefix = first[:text.column], PREFIX.match(first[text.column:]).group(0)
            lines[text.first:text.last + 1] = [(indent + prefix + part).rstrip() for part in new.split("\n")]
        else:
            lines[text.first:text.last + 1] = _docstring_lines(lines, text, new)
    return "\n".join(lines)


def _docstring_lines(lines: list[str], text: Text, new: str) -> list[str]:
    """The docstring ``new`` written as the old one was: its prefix and quotes, its indentation, its closing line."""
    head = lines[text.first][:text.column]
    rest = lines[text.first][text.column:]
    prefix = rest[:len(rest) - len(rest.lstrip("rRuU"))]
    quote = next(q for q in ('"""', "'''", '"', "'") if rest[len(prefix):].startswith(q))
    if "r" not in prefix.lower():
        new = new.replace("\\", "\\\\")
    parts = new.split("\n")
    closing_alone = text.last > text.first and lines[text.last].strip() == quote
    if len(parts) == 1 and not closing_alone:
        return [head + prefix + quote + parts[0] + quote]
    quote = quote if len(quote) == 3 else '"""'
    indent = " " * text.column
    written = [head + prefix + quote + parts[0]] + [(indent + part).rstrip() for part in parts[1:]]
    return [*written, indent + quote] if closing_alone else [*written[:-1], written[-1] + quote]


def code_only(source: str) -> list[tuple[int, str]]:
    """The cell as (token type, text) without comments, docstrings and line breaks inside statements, plus its
    magic lines: two cells with the same code give the same list whatever their comments and docstrings say."""
    tokens = _tokens(source)
    if tokens is None:
        return [(-1, source)]
    docstrings = {(node.lineno, node.col_offset) for node in _docstring_nodes(source)}
    magics = [(-2, line.strip()) for line in source.split("\n") if _is_magic(line)]
    kept = [(token.type, token.string) for token in tokens
            if token.type not in (tokenize.COMMENT, tokenize.NL)
            and not (token.type == tokenize.STRING and token.start in docstrings)]
    return magics + kept
