"""The book: the reader edition as a static web site, in English and Chinese, to read without installing anything.

From the repository root (``make book`` runs the first, ``make html`` the second)::

    python -m tools.book --assets build/vendor --out build/book
    python -m tools.book --assets build/vendor --out build/html --solved
    python -m tools.book --assets build/vendor --out build/student/book --student   (``make student``)

``--solved`` builds the instructor edition (``notebooks/``, ``zh-CN/notebooks/``: every exercise solved in place)
for lecturers, in the same way; everything below is said of the reader edition and holds for both.

The generator is Sphinx with MyST-NB (it reads the notebooks, outputs included, and executes nothing) and the
Sphinx Book Theme, the stack that Jupyter Book 1 wraps; they come from the ``book`` extra of pyproject.toml. Each
language is its own Sphinx project and its own site: ``chapters/`` becomes ``OUT/en/``, ``zh-CN/chapters/``
becomes ``OUT/zh-CN/`` (the theme's and Sphinx's own words in Chinese, and a search that finds Chinese words:
tools/book/search_zh.py), and ``OUT/index.html`` links both. Every page links the same page in the other language.

What the book shows differs from the notebook in three ways, all made on copies in ``OUT/_sources/``:

- the Colab install cell (tag ``colab-install``, see tools/colab.py) is left out: it does nothing outside Colab;
- a live widget, which needs a kernel, becomes a sentence saying where to use it (nothing is loaded from a CDN);
- the test-marker comments (``# NBVAL_IGNORE_OUTPUT``) are left out, as on the slides (tools/lecture).

The ".ipynb" download button of each chapter gives the reader edition's notebook itself, unchanged.

Nothing is fetched when a page is read. MathJax 2 comes from the same pinned package as the slides
(tools/lecture/requirements-assets.txt, installed into ``--assets``) and is copied into each site; the build fails
when a page would load a script, style sheet or picture from the network or from a file missing in the site, and
when Sphinx warns (which names the chapter and cell).

Launch buttons (Binder, Colab) open the chapter from the repository named in pyproject.toml, ``[project.urls]
Repository``, at the latest release's tag, as the badges of docs/online.md do and as the chapter's install cell pins
it (tools/colab.py ``REF``): the chapter launched and the library it installs are of one release. The published book
is built from that tag (.github/workflows/book.yml), so the page read is of that release too. The home page says
that the buttons work once that repository is public.
"""

from __future__ import annotations

import dataclasses
import html
import io
import multiprocessing
import os
import re
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tools.lecture import Assets, hide_test_markers, offline_problems

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
INSTALL_TAG = "colab-install"  # tools/colab.py's install cell
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full"  # the one combined configuration jupyter-server-mathjax ships


@dataclass(frozen=True)
class Edition:
    """One language of the book: where its chapters are, where its site goes, and its words."""

    code: str  # tools/translate.py's language code, and Sphinx's
    html_lang: str  # the site's folder and <html lang>
    chapters: Path
    title: str
    intro: str  # the home page, MyST markdown; {repository} is the repository's address
    chapters_caption: str
    widget_note: str  # replaces a live widget's output
    switch_label: str  # the link to the same page in this language, shown on the other language's pages
    copyright: str  # the page footer (LICENSE, LICENSE-CONTENT)
    instructor_chapters: Path  # the instructor edition (every exercise solved), which `make html` shows
    instructor_title: str
    instructor_intro: str
    student: bool = False  # the course's build without solutions (``make student``): no launch buttons either


EDITIONS = {
    "en": Edition(
        code="en", html_lang="en", chapters=ROOT / "chapters",
        title="Multi-head attention",
        intro="""\
Chapters on one mechanism: **multi-head attention**, the layer that lets every position of a sequence
collect information from the others through several heads at once. Each chapter is a Jupyter notebook; this
book shows them with their stored outputs (printed shapes, figures, tables), nothing to install.

- **Read** in order: the chapters build on each other, and each opens with what you will be able to do after it.
  The search box finds a function, a term or a shape across every chapter.
- **Exercises** are left unsolved, as in the notebooks you would run: each solution is folded under
  *Show a solution*.
- **Run the code** in JupyterLab on your machine: clone the repository, then `make lab` opens this edition
  (`chapters/`). The download button at the top of each chapter gives its notebook; the launch button (the rocket)
  opens the chapter on Binder or Colab from the repository named in `pyproject.toml`, {repository}, which works
  once that repository is public.
- Interactive widgets (chapters 05, 09, 10, 11) need a running notebook; here a sentence marks their place.
""",
        chapters_caption="Chapters",
        widget_note="*An interactive widget is here: run the chapter in JupyterLab (`make lab`) to use it.*",
        switch_label="English",
        copyright="the mha-notebooks authors; prose and figures CC-BY-4.0, code MIT",
        instructor_chapters=ROOT / "notebooks",
        instructor_title="Multi-head attention (instructor edition)",
        instructor_intro="""\
The instructor edition (`notebooks/`): every chapter with every exercise solved in place, for lecturers.
Readers get the reader edition (`make book`), where each solution is folded under *Show a solution*.
The search box finds a function, a term or a shape across every chapter; the launch button (the rocket) opens a
chapter on Binder or Colab from the repository named in `pyproject.toml`, {repository}, once it is public.
""",
    ),
    "zh_CN": Edition(
        code="zh_CN", html_lang="zh-CN", chapters=ROOT / "zh-CN" / "chapters",
        title="多头注意力",
        intro="""\
这些章讲一个机制：**多头注意力**，即让序列中每个位置同时通过多个头从其他位置收集信息的那一层。
每一章都是一个 Jupyter 笔记本；本书连同保存的输出（打印的形状、图、表）一起展示它们，无需安装任何东西。

- **阅读**：请按顺序读，各章环环相扣，每章开头都写明读完后你能做到什么。
  搜索框可以在所有章节中查找函数、术语或形状。
- **练习**保持未解答的状态，与你要运行的笔记本相同：每道题的参考答案折叠在“显示参考答案”之下。
- **运行代码**：在自己的电脑上用 JupyterLab。
  克隆仓库后，`make lab-zh` 打开这一版（`zh-CN/chapters/`）。
  每章顶部的下载按钮提供该章的笔记本；
  启动按钮（火箭图标）从 `pyproject.toml` 中登记的仓库 {repository} 在 Binder 或 Colab 上打开该章，
  该仓库公开后即可使用。
- 交互式控件（第 05、09、10、11 章）需要运行中的笔记本；本书在它们的位置放一句说明。
""",
        chapters_caption="章节",
        widget_note="*此处是一个交互式控件：在 JupyterLab 中运行本章（`make lab-zh`）即可使用。*",
        switch_label="简体中文",
        copyright="mha-notebooks 的作者们；正文与图采用 CC-BY-4.0 许可，代码采用 MIT 许可",
        instructor_chapters=ROOT / "zh-CN" / "notebooks",
        instructor_title="多头注意力（教师版）",
        instructor_intro="""\
教师版（`zh-CN/notebooks/`）：各章的每道练习都已就地解答，供授课者使用。
读者请看读者版（`make book`），其中每道题的参考答案都折叠在“显示参考答案”之下。
搜索框可以在所有章节中查找函数、术语或形状；
启动按钮（火箭图标）从 `pyproject.toml` 中登记的仓库 {repository} 在 Binder 或 Colab 上打开该章，该仓库公开后即可使用。
""",
    ),
}


# The home page of the build without solutions (make student): the exercises are the course's to grade.
STUDENT_INTRO = {
    "en": """\
The chapters of this course on **multi-head attention**, with their stored outputs (printed shapes, figures,
tables). The exercises are left unsolved and no solution is shown: do them in the notebooks your course gives you.
The search box finds a function, a term or a shape across every chapter; the download button at the top of each
chapter gives its notebook, without solutions.
""",
    "zh_CN": """\
本课程关于**多头注意力**的各章，连同保存的输出（打印的形状、图、表）。
练习保持未解答，也不显示参考答案：请在课程发给你的笔记本中完成。
搜索框可以在所有章节中查找函数、术语或形状；每章顶部的下载按钮提供该章不含答案的笔记本。
""",
}


def student(edition: Edition) -> Edition:
    """The same language's reader edition without solutions, for a course that grades the exercises."""
    return dataclasses.replace(edition, intro=STUDENT_INTRO[edition.code], student=True)


def instructor(edition: Edition) -> Edition:
    """The same language's instructor edition: its chapters, title and home page."""
    return dataclasses.replace(edition, chapters=edition.instructor_chapters, title=edition.instructor_title,
                               intro=edition.instructor_intro)


def repository_url() -> str:
    """The repository's address, from pyproject.toml (tools/colab.py reads and checks it)."""
    from tools.colab import repository_url as read

    return read(ROOT / "pyproject.toml")


def launch_ref() -> str:
    """What the launch buttons open: the latest release's tag, which the install cell pins (tools/colab.py)."""
    from tools.colab import REF

    return REF


def other(edition: Edition) -> Edition:
    (found,) = [e for e in EDITIONS.values() if e.code != edition.code]
    return found


# --- sources -----------------------------------------------------------------------------------------------------


def book_notebook(nb: nbformat.NotebookNode, edition: Edition, student: bool = False) -> nbformat.NotebookNode:
    """A copy of a reader-edition chapter as the book shows it (see the module docstring); ``nb`` is unchanged.

    ``student``: without the collapsed solutions ("Show a solution"), for a course that grades the exercises.
    """
    nb = nbformat.from_dict(nb)  # a deep copy
    if student:
        from tools.editions import LANGUAGES, SUMMARY_LINE

        summary = SUMMARY_LINE.format(LANGUAGES[edition.code][2])
        nb.cells = [cell for cell in nb.cells if not (cell.cell_type == "markdown" and cell.source.startswith(summary))]
    nb.metadata.pop("widgets", None)  # the saved widget state: MyST-NB would load a widget manager for it
    cells = []
    for cell in nb.cells:
        if INSTALL_TAG in cell.metadata.get("tags", []):
            continue
        if cell.cell_type == "code":
            cell.source = hide_test_markers(cell.source)
            for output in cell.outputs:
                if WIDGET_MIME in output.get("data", {}):
                    output.data = nbformat.from_dict({"text/markdown": edition.widget_note})
        cells.append(cell)
    nb.cells = cells
    return nb


# A line break between two Chinese characters (or punctuation marks): a browser would show it as a space.
CJK_LINE_BREAK = re.compile(r"(?<=[^\x00-\x7f])\n[ \t]*(?=[^\x00-\x7f])")


def index_page(edition: Edition, chapters: list[str], repository: str) -> str:
    """The home page of one language: title, introduction and the list of chapters (the book's table of contents)."""
    toctree = "\n".join(chapters)
    intro = CJK_LINE_BREAK.sub("", edition.intro.format(repository=f"<{repository}>"))
    return (f"# {edition.title}\n\n{intro}\n"
            f"```{{toctree}}\n:caption: {edition.chapters_caption}\n:maxdepth: 1\n\n{toctree}\n```\n")


def write_sources(edition: Edition, source: Path, student: bool = False) -> list[Path]:
    """Write the book's copy of every chapter of ``edition`` and its home page into ``source``; the chapters."""
    if source.exists():
        shutil.rmtree(source)
    source.mkdir(parents=True)
    chapters = sorted(edition.chapters.glob("[0-9][0-9]_*.ipynb"))
    if not chapters:
        raise FileNotFoundError(f"no chapter in {edition.chapters}")
    for path in chapters:
        nbformat.write(book_notebook(nbformat.read(path, as_version=4), edition, student), source / path.name)
    (source / "index.md").write_text(index_page(edition, [p.stem for p in chapters], repository_url()),
                                     encoding="utf-8")
    return chapters


# --- Sphinx --------------------------------------------------------------------------------------------------------


def sphinx_config(edition: Edition, static: Path, repository: str) -> dict:
    """Every Sphinx setting of one language's site (there is no conf.py: the build passes these)."""
    return {
        "project": edition.title,
        "author": "mha-notebooks",
        "copyright": edition.copyright,
        "language": edition.code,
        "root_doc": "index",
        # the Chinese book's search index: characters and pairs of characters (tools/book/search_zh.py)
        "extensions": ["myst_nb", *(["tools.book.search_zh"] if edition.code == "zh_CN" else [])],
        "exclude_patterns": ["_build", "**.ipynb_checkpoints"],
        # MyST-NB: show the stored outputs, never execute; the markdown of Jupyter with $math$
        "nb_execution_mode": "off",
        "nb_ipywidgets_js": {},  # no widget manager from a CDN (book_notebook replaced the widgets)
        "myst_enable_extensions": ["dollarmath", "amsmath"],
        "myst_heading_anchors": 3,
        "myst_update_mathjax": False,  # MyST would configure MathJax 3 or 4; ours is MathJax 2, set up below
        # MathJax 2 from the copy in _static/mathjax (the same package as the slides), as the lecture pages set it up
        "mathjax_path": f"mathjax/MathJax.js?config={MATHJAX_CONFIG}",
        "mathjax2_config": {
            "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                        "processEscapes": False, "processEnvironments": True},
            "HTML-CSS": {"availableFonts": [], "preferredFont": None, "webFont": "STIX-Web", "imageFont": None,
                         "linebreaks": {"automatic": True}},
            "messageStyle": "none",
            "showMathMenu": False,
        },
        "html_theme": "sphinx_book_theme",
        "html_title": edition.title,
        "html_static_path": [str(HERE / "static"), str(static)],
        "html_css_files": ["book.css"],
        "templates_path": [str(HERE / "templates")],
        "html_sourcelink_suffix": "",  # _sources/03_splitting_heads.ipynb: the download button's notebook
        "html_last_updated_fmt": None,
        "html_context": {"mha_other_language": other(edition).html_lang,
                         "mha_other_label": other(edition).switch_label},
        "html_theme_options": {
            "repository_url": repository,
            "repository_branch": launch_ref(),
            "path_to_docs": edition.chapters.relative_to(ROOT).as_posix(),
            "use_repository_button": not edition.student,
            "use_download_button": True,
            # the course's build opens nothing from the public repository, whose reader edition shows solutions
            "launch_buttons": {} if edition.student else {
                "binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com",
                "notebook_interface": "jupyterlab"},
            "home_page_in_toc": True,
            "show_navbar_depth": 1,
            "article_header_end": ["article-header-buttons.html", "language-switch.html"],
        },
        "html_sidebars": {"**": ["navbar-logo.html", "search-button-field.html", "sbt-sidebar-nav.html"]},
    }


def build_edition(edition: Edition, out: Path, assets: Assets, work: Path, student: bool = False) -> list[str]:
    """Build one language's site into ``out``; returns Sphinx's warnings (none is expected)."""
    from sphinx.application import Sphinx
    from sphinx.util.console import nocolor

    nocolor()  # plain warnings, to print and to compare

    source = (work / edition.html_lang / "source").resolve()
    static = (work / edition.html_lang / "static").resolve()
    chapters = write_sources(edition, source, student)
    if static.exists():
        shutil.rmtree(static)
    shutil.copytree(assets.mathjax, static / "mathjax")
    # Sphinx writes into work/, then the site moves to ``out``: MyST-NB puts the outputs' files into a folder
    # beside Sphinx's output folder (jupyter_execute/), which must be neither in the site nor shared by the languages.
    html_dir = work / edition.html_lang / "html"
    for folder in (html_dir, out):
        if folder.exists():
            shutil.rmtree(folder)
    warnings = io.StringIO()
    app = Sphinx(str(source), None, str(html_dir), str(work / edition.html_lang / "doctrees"), "html",
                 confoverrides=sphinx_config(edition, static, repository_url()), status=None, warning=warnings,
                 freshenv=True)
    app.build()
    for path in chapters:  # the download button gives the reader edition's notebook as it is (student: the book's)
        shutil.copy2(source / path.name if student else path, html_dir / "_sources" / path.name)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(html_dir, out)
    return [line for line in warnings.getvalue().splitlines() if line.strip()]


ROOT_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 36em; margin: 4em auto; padding: 0 1em; line-height: 1.6; }}
a {{ font-size: 1.3em; display: block; margin: 0.6em 0; }}
</style>
</head>
<body>
<h1>{title}</h1>
{links}
</body>
</html>
"""


def root_page(editions: list[Edition]) -> str:
    """OUT/index.html: one link per language."""
    links = "\n".join(f'<a href="{e.html_lang}/index.html" lang="{e.html_lang}">{html.escape(e.title)} '
                      f'({html.escape(e.switch_label)})</a>' for e in editions)
    return ROOT_PAGE.format(title=" · ".join(html.escape(e.title) for e in editions), links=links)


def site_problems(site: Path) -> list[str]:
    """Why a built site would not work offline: each page's remote or missing scripts, style sheets and pictures."""
    problems = []
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.relative_to(site).parts:
            continue  # MathJax's own test pages and the theme's templates
        for problem in offline_problems(page.read_text(encoding="utf-8"), page.parent):
            if problem.startswith('<link> loads #,'):
                continue  # search.html's <link rel="search" href="#">: the page itself
            problems.append(f"{page.relative_to(site)}: {problem}")
    return problems


def build(out: Path, vendor: Path, languages: list[str] | None = None, solved: bool = False,
          student_build: bool = False) -> list[Path]:
    """Build the book of each language (default: all) into ``out/<lang>/`` and ``out/index.html``.

    ``solved``: the instructor edition (notebooks/, zh-CN/notebooks/) instead of the reader edition.
    ``student_build``: the reader edition without its collapsed solutions (``make student``), for a graded course.

    Raises RuntimeError when Sphinx warned or a page would not work offline. Returns the home pages.
    """
    assets = Assets.find(vendor)
    out = Path(out)
    work = out.parent / f"{out.name}-work"  # the book's copies of the chapters, static files and doctrees
    homes, problems = [], []
    editions = [instructor(EDITIONS[code]) if solved else student(EDITIONS[code]) if student_build else EDITIONS[code]
                for code in languages or list(EDITIONS)]
    # Each language in a fresh process: docutils' registry of nodes and directives is global, and a second Sphinx
    # application in the same process warns about every one of them. The two run side by side where there are cores.
    workers = max(1, min(len(editions), os.cpu_count() or 1))
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        runs = [(edition, pool.submit(build_edition, edition, out / edition.html_lang, assets, work,
                                              edition.student))
                for edition in editions]
        for edition, run in runs:
            site = out / edition.html_lang
            problems += [f"{edition.html_lang}: {line}" for line in run.result()]
            problems += [f"{edition.html_lang}/{line}" for line in site_problems(site)]
            homes.append(site / "index.html")
    (out / "index.html").write_text(root_page(editions), encoding="utf-8")
    if problems:
        raise RuntimeError("the book was built, with problems:\n" + "\n".join(problems))
    return homes
