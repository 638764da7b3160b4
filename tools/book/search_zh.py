"""Full-text search of the Chinese book: Chinese has no spaces, so the index holds its characters and their pairs.

Sphinx's own Chinese search indexes the words that the optional package jieba cuts the text into, but looks up the
reader's query as one word: 多头注意力 finds nothing when the index holds 多头 and 注意力. Here the index holds every
Han character and every pair of neighbouring Han characters (bigrams, as search engines index CJK text), and the
query is cut the same way in the browser, so 多头注意力 asks for 多头, 头注, 注意 and 意力: a page must hold all four.
Latin words (``transpose_qkv``, ``d_k``) are indexed and looked up as in the English book.

Used as a Sphinx extension (``tools.book.search_zh``) by the Chinese book only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from sphinx.search.zh import SearchChinese

# CJK Unified Ideographs, Extension A and the Compatibility Ideographs
HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # escapes that Python's and JavaScript's regular expressions read
HAN_RUN = re.compile(f"[{HAN}]+")


def han_terms(text: str) -> Iterator[str]:
    """Each Han character of ``text`` and each pair of neighbouring ones, in order."""
    for run in HAN_RUN.findall(text):
        yield from run
        yield from (run[i:i + 2] for i in range(len(run) - 1))


# The browser's half (language_data.js): a query's Latin words as Sphinx splits them, each run of Han characters
# as its pairs (a lone character as itself). It must cut a query into terms that han_terms put in the index.
JS_SPLITTER = """
function splitQuery(query) {
  const terms = [];
  query.split(/[^\\p{Letter}\\p{Number}_\\p{Emoji_Presentation}]+/gu).forEach((token) => {
    token.split(/([HAN]+)/u).forEach((part, index) => {
      if (!part) return;
      if (index % 2 === 0 || part.length === 1) { terms.push(part); return; }
      for (let i = 0; i + 1 !== part.length; i++) terms.push(part.substring(i, i + 2));
    });
  });
  return terms;
}
""".replace("HAN", HAN)


class SearchChineseBigrams(SearchChinese):
    """Sphinx's Chinese search language with Han characters and bigrams in place of jieba's words."""

    js_splitter_code = JS_SPLITTER
    # Latin words are stemmed with the English stemmer (SearchChinese.js_stemmer_rawcode). Sphinx 9.0 names its class
    # after language_name, ChineseStemmer, which does not exist, and every Chinese search then fails in the browser
    # (sphinx-doc/sphinx#14229, fixed by #14416 in later releases that need Python 3.12).
    language_name = "English"

    def split(self, input: str) -> list[str]:
        latin = [term.strip() for term in self.latin1_letters.findall(input)]
        self.latin_terms.update(latin)  # SearchChinese.stem keeps short Latin words unstemmed with it
        return list(han_terms(input)) + latin

    def word_filter(self, stemmed_word: str) -> bool:
        return len(stemmed_word) > 1 or bool(HAN_RUN.fullmatch(stemmed_word))


def setup(app):
    app.add_search_language(SearchChineseBigrams)  # replaces Sphinx's "zh"
    return {"parallel_read_safe": True, "parallel_write_safe": True}
