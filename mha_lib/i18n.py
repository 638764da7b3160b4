"""The language of mha_lib's messages (its errors): English, the default, or Simplified Chinese.

    from mha_lib import set_language
    set_language("zh_CN")   # errors now speak Chinese; set_language("en") switches back

The language set here is the one language of the collection: ``mha_chapters`` (the chapters' checkers, tables
and figures) reads it with ``get_language`` and translates its own messages from its own catalogue.

Messages are marked in the source with ``_("English text")`` (translated when it is printed) or, for a
module-level constant, ``N_("English text")`` (marked only; the code passes it through ``_()`` when it uses it),
as GNU gettext does. The English text is the message id, so English output never depends on the catalogue.
The Chinese catalogue is ``mha_lib/locale/zh_CN/LC_MESSAGES/mha_lib.po`` (compiled to ``mha_lib.mo`` beside it);
``python -m tools.translate update-lib`` extracts the marked messages into it and compiles it.
"""

from __future__ import annotations

import gettext
from pathlib import Path

__all__ = ["LANGUAGES", "N_", "_", "get_language", "set_language", "translations"]

DOMAIN = "mha_lib"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "zh_CN")
_ALIASES = {"en": "en", "zh": "zh_CN", "zh-CN": "zh_CN", "zh_CN": "zh_CN"}

_language = "en"
_translations: gettext.NullTranslations = gettext.NullTranslations()


def set_language(code: str) -> None:
    """Choose the language of the messages: ``"en"`` (default) or ``"zh_CN"`` (also ``"zh"``, ``"zh-CN"``)."""
    global _language, _translations
    if not isinstance(code, str):
        template = _("set_language: code must be a string such as 'zh_CN', got {code!r} (a {type_name})")
        raise TypeError(template.format(code=code, type_name=type(code).__name__))
    if code not in _ALIASES:
        template = _("set_language: code must be one of {codes}; got {code!r}")
        raise ValueError(template.format(codes=", ".join(repr(c) for c in _ALIASES), code=code))
    _language = _ALIASES[code]
    _translations = translations(DOMAIN, LOCALE_DIR, _language)


def get_language() -> str:
    """The language the messages are printed in now: ``"en"`` or ``"zh_CN"``."""
    return _language


def translations(domain: str, locale_dir: Path, language: str) -> gettext.NullTranslations:
    """The compiled catalogue of ``domain`` in ``language`` (none for English: the message ids are English)."""
    if language == "en":
        return gettext.NullTranslations()
    return gettext.translation(domain, localedir=locale_dir, languages=[language])


def _(message: str) -> str:
    """The message in the current language (the English message itself when there is no translation)."""
    if not message:  # gettext maps "" to the catalogue's header
        return message
    return _translations.gettext(message)


def N_(message: str) -> str:
    """Mark a message for translation without translating it now (a module-level constant): use ``_(X)`` later."""
    return message
