"""Chinese without a CJK font: the figures keep their English text, and a person is told once, in Chinese, why.

mha_chapters.i18n says it on stderr when set_language("zh_CN") finds no font with Chinese glyphs: once per process,
and never to nbconvert, nbval or papermill, which send their cells with allow_stdin false. Their outputs are
stored and compared, and must not depend on the fonts of the machine that ran them.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import matplotlib
import pytest

from mha_chapters import i18n

ROOT = Path(__file__).resolve().parents[1]
CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def fresh(monkeypatch):
    """mha_lib in English, with nothing said yet in this process; English again afterwards."""
    family = list(matplotlib.rcParams["font.family"])
    i18n.set_language("en")
    monkeypatch.setattr(i18n, "_told_no_font", False)
    yield monkeypatch
    monkeypatch.undo()
    i18n.set_language("en")
    matplotlib.rcParams["font.family"] = family


def without_cjk_font(monkeypatch):
    monkeypatch.setattr(i18n, "cjk_font", lambda: None)


def test_without_a_font_chinese_says_once_in_chinese_which_package_to_install(fresh, capsys):
    without_cjk_font(fresh)
    i18n.set_language("zh_CN")
    out, err = capsys.readouterr()
    assert out == ""
    assert "fonts-noto-cjk" in err and "sudo apt install fonts-noto-cjk" in err
    assert len(CHINESE.findall(err)) > 20, err  # Chinese, not English
    assert "README.zh-CN.md" in err  # macOS and Windows: the README's section on fonts
    assert i18n.figure_text("keys") == "keys"  # and the figures keep their English text, no empty boxes
    i18n.set_language("en")
    i18n.set_language("zh")
    assert capsys.readouterr() == ("", "")  # once per process


def test_with_a_font_nothing_is_said_and_the_font_comes_first(fresh, capsys):
    fresh.setattr(i18n, "cjk_font", lambda: "Noto Sans CJK SC")
    i18n.set_language("zh_CN")
    assert capsys.readouterr() == ("", "")
    assert matplotlib.rcParams["font.family"][0] == "Noto Sans CJK SC"


def test_english_never_asks_for_a_font(fresh, capsys):
    without_cjk_font(fresh)
    i18n.set_language("en")
    assert capsys.readouterr() == ("", "")


def fake_kernel(allow_stdin: bool | None) -> types.ModuleType:
    """An IPython module whose shell has a kernel that is running a cell sent with this allow_stdin."""
    content = {} if allow_stdin is None else {"allow_stdin": allow_stdin}
    kernel = types.SimpleNamespace(get_parent=lambda: {"content": content})
    module = types.ModuleType("IPython")
    module.get_ipython = lambda: types.SimpleNamespace(kernel=kernel)
    return module


@pytest.mark.parametrize(("allow_stdin", "said"), [(True, True), (False, False), (None, True)],
                         ids=["JupyterLab or Colab", "nbconvert or nbval", "no request"])
def test_only_a_person_is_told(fresh, capsys, allow_stdin, said):
    without_cjk_font(fresh)
    fresh.setitem(sys.modules, "IPython", fake_kernel(allow_stdin))
    i18n.set_language("zh_CN")
    assert ("fonts-noto-cjk" in capsys.readouterr().err) == said


def test_a_script_is_told(fresh, capsys):
    without_cjk_font(fresh)
    fresh.setitem(sys.modules, "IPython", None)  # never imported: not in a kernel
    i18n.set_language("zh_CN")
    assert "fonts-noto-cjk" in capsys.readouterr().err


@pytest.mark.slow  # starts a kernel
def test_a_real_kernel_tells_jupyterlab_but_not_nbclient():
    # nbclient (nbconvert --execute) and nbval send allow_stdin=False; JupyterLab and Colab send True.
    jupyter_client = pytest.importorskip("jupyter_client")
    manager, client = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        def run(code: str, allow_stdin: bool) -> str:
            errors = []
            client.execute_interactive(code, allow_stdin=allow_stdin, timeout=60,
                                       output_hook=lambda message: errors.append(message["content"].get("text", ""))
                                       if message["msg_type"] == "stream" and message["content"]["name"] == "stderr"
                                       else None)
            return "".join(errors)

        switch = "import mha_chapters.i18n as i18n\ni18n.cjk_font = lambda: None\ni18n.set_language('zh_CN')"
        assert run(switch, allow_stdin=False) == ""
        told = run("i18n.set_language('en')\ni18n.set_language('zh_CN')", allow_stdin=True)
        assert "fonts-noto-cjk" in told and CHINESE.search(told)
        assert run("i18n.set_language('en')\ni18n.set_language('zh_CN')", allow_stdin=True) == ""
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_binder_installs_the_font_the_library_looks_for():
    # repo2docker installs the Debian packages listed in apt.txt; fonts-noto-cjk's first face is Noto Sans CJK JP.
    lines = (ROOT / "apt.txt").read_text().splitlines()
    packages = [line.partition("#")[0].strip() for line in lines if line.partition("#")[0].strip()]
    assert "fonts-noto-cjk" in packages
    assert "Noto Sans CJK JP" in i18n.CJK_FONTS and "NotoSansCJK" in i18n._CJK_FILES


def english_figure_text(notebook: Path, translated: dict[str, str]) -> list[str]:
    """Texts of the notebook's stored SVG figures that the library catalogue translates, yet drawn in English."""
    from tools.english_left import figure_texts  # as text or as glyph outlines (svg.fonttype "path")

    return [text for _index, text in figure_texts(notebook) if text in translated]


CHINESE_NOTEBOOKS = sorted((ROOT / "zh-CN").glob("*/[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("notebook", CHINESE_NOTEBOOKS, ids=lambda path: f"{path.parent.name}/{path.name[:2]}")
def test_the_stored_chinese_figures_were_drawn_with_a_cjk_font(notebook):
    # Executed where no CJK font is installed (nbconvert is not told: see above), a Chinese chapter silently stores
    # English figures. The SVG keeps each text (as text, or as a comment before its outlines), so the catalogue's
    # English labels show it.
    polib = pytest.importorskip("polib")
    catalogue = polib.pofile(str(ROOT / "mha_chapters" / "locale" / "zh_CN" / "LC_MESSAGES" / "mha_chapters.po"))
    translated = {entry.msgid: entry.msgstr for entry in catalogue if entry.msgstr and entry.msgstr != entry.msgid}
    english = english_figure_text(notebook, translated)
    assert not english, (f"{notebook.relative_to(ROOT)} stores figures with English labels that have a Chinese "
                         f"translation, {sorted(set(english))[:4]}: it was executed without a CJK font. Install "
                         "one (sudo apt install fonts-noto-cjk) and execute the Chinese edition again (make zh)")
