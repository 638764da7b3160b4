"""The chapters' language: their printed text (``tr``), their figures' text (``figure_text``) and its font.

    from mha_chapters import set_language
    set_language("zh_CN")   # checkers, tables, figures and mha_lib's errors now speak Chinese; "en" switches back

The language is mha_lib's, one for the whole collection (:func:`mha_lib.set_language` sets it, and this
``set_language`` calls it); the messages of this package are translated from their own catalogue,
``mha_chapters/locale/zh_CN/LC_MESSAGES/mha_chapters.po``, which also holds what the chapters' code cells print.

A chapter's code cell prints through ``tr``: ``print(tr("row sums:"), weights.sum(-1))`` prints English in the
English edition and Chinese in the Chinese one, so both editions run the same code. (``tr`` is ``_`` under a name
that a notebook keeps: IPython stores the last result in ``_``, and loops use it as a throwaway name.) In this
package's modules, ``_("...")`` and ``N_("...")`` mark messages as in mha_lib (see :mod:`mha_lib.i18n`);
``python -m tools.translate update-lib`` extracts them, and the chapters' ``tr`` and ``figure_text`` literals,
into the catalogue and compiles it.

Figures are different: Chinese text needs a font with CJK glyphs, which Colab, for one, lacks. ``figure_text``
translates only when matplotlib can find such a font, so a figure never shows empty boxes; ``set_language("zh_CN")``
then says once, in Chinese, which package to install (``fonts-noto-cjk``).
"""

from __future__ import annotations

import gettext
import sys
from pathlib import Path

import mha_lib.i18n
from mha_lib.i18n import N_, get_language

__all__ = ["CJK_FONTS", "N_", "_", "cjk_font", "figure_text", "get_language", "set_language", "tr"]

DOMAIN = "mha_chapters"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
# Fonts with Simplified Chinese glyphs, in order of preference: Debian's fonts-noto-cjk, Adobe's name for the same
# design, the common Linux fallback, then the Windows and macOS system fonts (macOS 11 and later keep PingFang
# where matplotlib does not look; Hiragino Sans GB and Arial Unicode MS are in /System/Library/Fonts).
# (Matplotlib reads the first face of Debian's NotoSansCJK-Regular.ttc, named "Noto Sans CJK JP": the same Pan-CJK
# font, with every Simplified Chinese character.)
CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "SimHei", "Microsoft YaHei",
             "PingFang SC", "Hiragino Sans GB", "Arial Unicode MS", "Noto Sans CJK JP")
_CJK_FILES = ("NotoSansCJK", "SourceHanSans", "wqy-microhei", "simhei", "msyh", "PingFang", "Hiragino Sans GB",
              "Arial Unicode")

_catalogues: dict[str, gettext.NullTranslations] = {}  # language -> this package's compiled catalogue, read once
_font_family_before: list[str] | None = None  # matplotlib's font.family before a CJK font was put in front
_rescanned = False  # cjk_font looked past matplotlib's font cache already
_told_no_font = False  # _use_cjk_font said, once per process, that figures stay English


def set_language(code: str) -> None:
    """Choose the language of the chapters and of mha_lib: ``"en"`` (default) or ``"zh_CN"`` (``"zh"``, ``"zh-CN"``).

    In Chinese, and when a CJK font is installed, that font becomes matplotlib's first font family (it has Latin
    letters too; the usual family stays behind it as a fallback). First, not only a fallback: text with a formula
    (``$...$``) is laid out by mathtext, which takes its plain characters from the first family alone.
    """
    mha_lib.i18n.set_language(code)
    _use_cjk_font(get_language() != "en")


def _(message: str) -> str:
    """The message in the current language (the English message itself when there is no translation)."""
    language = get_language()
    if not message or language == "en":  # gettext maps "" to the catalogue's header
        return message
    if language not in _catalogues:
        _catalogues[language] = mha_lib.i18n.translations(DOMAIN, LOCALE_DIR, language)
    return _catalogues[language].gettext(message)


def tr(message: str) -> str:
    """The message in the current language, for a chapter's code cell: ``print(tr("row sums:"), w.sum(-1))``.

    For a message with values, translate the template, then fill it: ``tr("{n} of {total} rows").format(n=3,
    total=8)``; a translator may move ``{n}`` and ``{total}`` but keeps them.
    """
    return _(message)


def cjk_font() -> str | None:
    """The name of an installed font that matplotlib can use for Chinese text, or None when there is none."""
    global _rescanned
    from matplotlib import font_manager

    found = _first_cjk_font(font_manager.fontManager.ttflist)
    if found is None and not _rescanned:
        # Matplotlib caches its font list once; a CJK font installed after that (apt-get install fonts-noto-cjk)
        # is missing from the cache until it is rebuilt. Look for the font files themselves, once per process.
        _rescanned = True
        for path in font_manager.findSystemFonts():
            if any(part.lower() in Path(path).name.lower() for part in _CJK_FILES):
                font_manager.fontManager.addfont(path)
        found = _first_cjk_font(font_manager.fontManager.ttflist)
    return found


def _first_cjk_font(fonts: list) -> str | None:
    installed = {font.name for font in fonts}
    return next((name for name in CJK_FONTS if name in installed), None)


def figure_text(message: str) -> str:
    """Text drawn into a figure: translated when the language is Chinese AND a CJK font exists, else English.

    The font is put in front here too, so that Chinese set by :func:`mha_lib.set_language` alone draws no boxes.
    """
    if get_language() == "en" or cjk_font() is None:
        return message
    _use_cjk_font(True)
    return _(message)


def _use_cjk_font(on: bool) -> None:
    """Put a CJK font in front of matplotlib's usual font family, or restore the font family as it was."""
    global _font_family_before
    import matplotlib

    if on and _font_family_before is None:
        font = cjk_font()
        if font is not None:
            _font_family_before = list(matplotlib.rcParams["font.family"])
            matplotlib.rcParams["font.family"] = [font, *_font_family_before]
        else:
            _tell_no_cjk_font()
    elif not on and _font_family_before is not None:
        matplotlib.rcParams["font.family"] = _font_family_before
        _font_family_before = None


def _tell_no_cjk_font() -> None:
    """Say once per process, on stderr, that figures stay English and which package brings a CJK font.

    Only to a person: a kernel that runs cells for nbconvert, nbval or papermill is asked with ``allow_stdin``
    false (Jupyter's execute_request), and there the message would become a stored output that differs from one
    machine to the next.
    """
    global _told_no_font
    if _told_no_font or _executed_unattended():
        return
    _told_no_font = True
    print(_("Warning: no font with Chinese glyphs was found, so figures keep their English text. On Linux and "
            "WSL install one with `sudo apt install fonts-noto-cjk`, then restart the kernel; for macOS and "
            "Windows see the section on Chinese fonts in README.zh-CN.md."), file=sys.stderr)


def _executed_unattended() -> bool:
    """True in a Jupyter kernel whose current cell was sent with allow_stdin false, as nbclient and nbval send it."""
    ipython = sys.modules.get("IPython")
    kernel = getattr(ipython.get_ipython(), "kernel", None) if ipython is not None else None
    try:
        return not kernel.get_parent()["content"]["allow_stdin"]
    except (AttributeError, KeyError, TypeError):  # no kernel (a script), or an ipykernel older than 6
        return False
