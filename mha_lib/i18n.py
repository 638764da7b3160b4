"""The language of what mha_lib prints: English (the default) or Simplified Chinese.

    from mha_lib.i18n import set_language
    set_language("zh_CN")   # checkers, tables and the explorer now speak Chinese; set_language("en") switches back

A chapter's code cell prints through ``tr``: ``print(tr("row sums:"), weights.sum(-1))`` prints English in the
English edition and Chinese in the Chinese one, so both editions run the same code. (``tr`` is ``_`` under a name
that a notebook keeps: IPython stores the last result in ``_``, and loops use it as a throwaway name.)

Messages are marked in the source with ``_("English text")`` (translated when it is printed) or, for a
module-level constant, ``N_("English text")`` (marked only; the code passes it through ``_()`` when it uses it),
as GNU gettext does. The English text is the message id, so English output never depends on the catalogue.
The Chinese catalogue is ``mha_lib/locale/zh_CN/LC_MESSAGES/mha_lib.po`` (compiled to ``mha_lib.mo`` beside it);
``python -m tools.translate update-lib`` extracts the marked messages into it, from the package and from the
chapters' code cells (``tr``, ``figure_text``), and compiles it.

Figures are different: Chinese text needs a font with CJK glyphs, which Colab, for one, lacks. ``figure_text``
translates only when matplotlib can find such a font, so a figure never shows empty boxes; ``set_language("zh_CN")``
then says once, in Chinese, which package to install (``fonts-noto-cjk``).
"""

from __future__ import annotations

import gettext
import sys
from pathlib import Path

__all__ = ["LANGUAGES", "N_", "_", "cjk_font", "figure_text", "get_language", "set_language", "tr"]

DOMAIN = "mha_lib"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "zh_CN")
_ALIASES = {"en": "en", "zh": "zh_CN", "zh-CN": "zh_CN", "zh_CN": "zh_CN"}
# Fonts with Simplified Chinese glyphs, in order of preference: Debian's fonts-noto-cjk, Adobe's name for the same
# design, the common Linux fallback, then the Windows and macOS system fonts (macOS 11 and later keep PingFang
# where matplotlib does not look; Hiragino Sans GB and Arial Unicode MS are in /System/Library/Fonts).
# (Matplotlib reads the first face of Debian's NotoSansCJK-Regular.ttc, named "Noto Sans CJK JP": the same Pan-CJK
# font, with every Simplified Chinese character.)
CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "SimHei", "Microsoft YaHei",
             "PingFang SC", "Hiragino Sans GB", "Arial Unicode MS", "Noto Sans CJK JP")
_CJK_FILES = ("NotoSansCJK", "SourceHanSans", "wqy-microhei", "simhei", "msyh", "PingFang", "Hiragino Sans GB",
              "Arial Unicode")

_language = "en"
_translations: gettext.NullTranslations = gettext.NullTranslations()
_font_family_before: list[str] | None = None  # matplotlib's font.family before set_language added a CJK font
_rescanned = False  # cjk_font looked past matplotlib's font cache already
_told_no_font = False  # _use_cjk_font said, once per process, that figures stay English


def set_language(code: str) -> None:
    """Choose the language of mha_lib's messages: ``"en"`` (default) or ``"zh_CN"`` (also ``"zh"``, ``"zh-CN"``).

    In Chinese, and when a CJK font is installed, that font becomes matplotlib's first font family (it has Latin
    letters too; the usual family stays behind it as a fallback). First, not only a fallback: text with a formula
    (``$...$``) is laid out by mathtext, which takes its plain characters from the first family alone.
    """
    global _language, _translations
    if not isinstance(code, str):
        template = _("set_language: code must be a string such as 'zh_CN', got {code!r} (a {type_name})")
        raise TypeError(template.format(code=code, type_name=type(code).__name__))
    if code not in _ALIASES:
        template = _("set_language: code must be one of {codes}; got {code!r}")
        raise ValueError(template.format(codes=", ".join(repr(c) for c in _ALIASES), code=code))
    language = _ALIASES[code]
    if language == "en":
        _translations = gettext.NullTranslations()
    else:
        _translations = gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[language])
    _language = language
    _use_cjk_font(language != "en")


def get_language() -> str:
    """The language mha_lib prints in now: ``"en"`` or ``"zh_CN"``."""
    return _language


def _(message: str) -> str:
    """The message in the current language (the English message itself when there is no translation)."""
    if not message:  # gettext maps "" to the catalogue's header
        return message
    return _translations.gettext(message)


def tr(message: str) -> str:
    """The message in the current language, for a chapter's code cell: ``print(tr("row sums:"), w.sum(-1))``.

    For a message with values, translate the template, then fill it: ``tr("{n} of {total} rows").format(n=3,
    total=8)``; a translator may move ``{n}`` and ``{total}`` but keeps them.
    """
    return _(message)


def N_(message: str) -> str:
    """Mark a message for translation without translating it now (a module-level constant): use ``_(X)`` later."""
    return message


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
    """Text drawn into a figure: translated when the language is Chinese AND a CJK font exists, else English."""
    if _language == "en" or cjk_font() is None:
        return message
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
