"""`course site`: export the lessons and the glossary page to static HTML.

Each lesson is marked with the current glossary.yaml in memory (so the site is
right even before `course glossary` was run), converted with nbconvert's
HTMLExporter with sanitize_html=True, and links between notebooks are pointed at
the exported pages. The exercise notebooks the lessons link to are exported too,
into exercises/ (unexecuted: they are what students fill in), so a lesson's
"../exercises/exercise-N.ipynb" reaches a page wherever the site is written. An
index page lists everything.

nbconvert's own `clean_html` filter allows only bleach's short default list of
tags, so paragraphs and headings of every markdown cell come out escaped as text
(jupyter/nbconvert#2016). The exporter here keeps sanitizing, with an allow-list
that covers what markdown produces and keeps <abbr title> for the hover definitions; the
page written turns each of them into a term a keyboard and a screen reader reach (site_terms).
It sanitizes with nh3 (the Ammonia sanitizer, https://nh3.readthedocs.io/): bleach is
deprecated (https://github.com/mozilla/bleach/issues/698).
"""
from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
import nh3
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbconvert import HTMLExporter

from authoring.exercises import EXERCISES_DIR
from authoring.glossary import build_plan, lesson_title
from authoring.glossary_page import COURSE_TITLE, PAGE_NAME
from authoring.glossary_schema import GlossaryError
from authoring.site_terms import accessible_terms
from grader.core.atomic_write import write_atomic
from grader.core.plural import quantity

DEFAULT_OUT = "site"
INDEX_NAME = "index.html"
EXERCISE_GLOB = "exercise-*.ipynb"
FIGURES_DIR = "figuras"  # lessons/figuras/*.svg, referenced from the lessons as figuras/name.svg
_LOCAL_NOTEBOOK_LINK = re.compile(r'href="((?![A-Za-z][A-Za-z0-9+.-]*:)[^"#?]*?)\.ipynb((?:#[^"]*)?)"')


# bleach's default tags (what nbconvert allows), then what markdown produces.
MARKDOWN_TAGS = frozenset({"a", "abbr", "acronym", "b", "blockquote", "code", "em", "i", "li", "ol", "strong", "ul"}) | {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "div", "span", "pre", "code", "br", "hr",
    "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption", "img", "sup", "sub",
    "del", "s", "kbd", "details", "summary", "dl", "dt", "dd", "figure", "figcaption",
}
MARKDOWN_ATTRIBUTES = {
    "*": {"class", "id"},
    "a": {"href", "title", "class", "id"},
    "abbr": {"title", "class"},
    "img": {"src", "alt", "title", "width", "height"},
    "th": {"align", "colspan", "rowspan"},
    "td": {"align", "colspan", "rowspan"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})  # and relative links; never javascript: or data:


def clean_html(element) -> str:
    """nbconvert's sanitizing filter, with an allow-list wide enough for markdown."""
    text = element.decode() if isinstance(element, bytes) else str(element)
    # link_rel=None: the links stay as written (nh3 would add rel="noopener noreferrer" to each)
    return nh3.clean(text, tags=set(MARKDOWN_TAGS), attributes=MARKDOWN_ATTRIBUTES, url_schemes=set(URL_SCHEMES),
                     link_rel=None)


def make_exporter(sanitize: bool = True) -> HTMLExporter:
    exporter = HTMLExporter(sanitize_html=sanitize, language_code="pt")
    exporter.register_filter("clean_html", clean_html)
    return exporter


def execute_lesson(notebook: nbformat.NotebookNode, lessons_dir: Path, timeout: int = 300) -> None:
    """Run a lesson top to bottom in a fresh kernel, so its outputs (tables, timelines) go
    into the page. It runs from a scratch copy of lessons/, like the test suite does, so
    the files a lesson writes never land in the repository. Cells tagged
    `raises-exception` keep their error as output; any other error stops the export."""
    with tempfile.TemporaryDirectory(prefix="course-site-") as scratch:
        workdir = Path(scratch) / "lessons"
        shutil.copytree(lessons_dir, workdir)
        client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(workdir)}})
        client.execute()


def html_name(notebook_name: str) -> str:
    return Path(notebook_name).with_suffix(".html").name


def point_links_at_html(page: str, source_dir: Path, page_dir: Path, pages: dict[Path, Path]) -> str:
    """Links to notebooks the site exported become links to their pages, relative to this page.

    `pages` maps each exported notebook (resolved path) to its page; a link is resolved
    from the folder of the notebook it was written in. A link to a notebook the site did
    not export is left as it was.
    """
    def to_page(match: re.Match) -> str:
        target = pages.get((source_dir / f"{match.group(1)}.ipynb").resolve())
        if target is None:
            return match.group(0)
        return f'href="{Path(os.path.relpath(target, page_dir)).as_posix()}{match.group(2)}"'

    return _LOCAL_NOTEBOOK_LINK.sub(to_page, page)


def export_notebook(exporter: HTMLExporter, notebook: nbformat.NotebookNode, title: str,
                    source: Path, target: Path, pages: dict[Path, Path]) -> str:
    body, _ = exporter.from_notebook_node(notebook, resources={"metadata": {"name": title}})
    body, _ = accessible_terms(body)
    return point_links_at_html(body, source.parent, target.parent, pages)


def copy_figures(lessons_dir: Path, out: Path) -> list[Path]:
    """Copy lessons/figuras/*.svg beside the lesson pages, so `figuras/x.svg` resolves the same way.

    Only regular files directly in the folder are copied (no symlinks, nothing below it), so
    a link planted in the course cannot pull a file from outside it into the site.
    """
    source = lessons_dir / FIGURES_DIR
    if not source.is_dir() or source.is_symlink():
        return []
    target = out / FIGURES_DIR
    copied = []
    for figure in sorted(source.glob("*.svg")):
        if figure.is_symlink() or not figure.is_file():
            continue
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(figure, target / figure.name)
        copied.append(target / figure.name)
    return copied


def index_page(entries: list[tuple[str, str]], glossary_href: str) -> str:
    items = "\n".join(
        f'      <li><a href="{html.escape(href)}">{html.escape(title)}</a></li>' for href, title in entries
    )
    return f"""<!DOCTYPE html>
<html lang="pt-BR">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{html.escape(COURSE_TITLE)}</title>
  <style>
    body {{ font-family: system-ui, sans-serif; max-width: 46rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5; }}
    li {{ margin: 0.4rem 0; }}
  </style>
</head>
<body>
  <h1>{html.escape(COURSE_TITLE)}</h1>
  <p>Versão para leitura das lições. Os termos com sublinhado pontilhado mostram a definição ao passar o
  mouse, ao tocar neles ou ao chegar neles com Tab (Esc esconde); todas as definições também estão no <a href="{html.escape(glossary_href)}">glossário do curso</a>.</p>
  <h2>Lições</h2>
  <ol>
{items}
  </ol>
</body>
</html>
"""


def build_site(root: Path, out: Path, execute: bool = False) -> list[Path]:
    """Write the HTML pages into `out`; return the paths written (index last).

    With `execute`, each lesson runs first and its outputs are exported too. Those
    outputs are the course's own HTML (styled tables, SVG timelines), which the
    sanitizer would escape into text, so an executed site is exported unsanitized:
    build it only from lessons you trust, as you would run them.
    """
    plan = build_plan(root)
    out.mkdir(parents=True, exist_ok=True)
    exporter = make_exporter(sanitize=not execute)
    lessons_dir = Path(root) / "lessons"
    exercises = sorted((Path(root) / EXERCISES_DIR).glob(EXERCISE_GLOB))
    glossary_source = lessons_dir / PAGE_NAME
    pages = {lesson.path.resolve(): out / html_name(lesson.path.name) for lesson in plan.lessons}
    pages[glossary_source.resolve()] = out / html_name(PAGE_NAME)
    pages.update({path.resolve(): out / EXERCISES_DIR / html_name(path.name) for path in exercises})
    written: list[Path] = []
    entries: list[tuple[str, str]] = []
    copy_figures(lessons_dir, out)
    for lesson in plan.lessons:
        title = lesson_title(lesson.marked, f"Lição {lesson.number}")
        if execute:
            print(f"course site: executando {lesson.path.name} ...", flush=True)
            execute_lesson(lesson.marked, lessons_dir)
        target = pages[lesson.path.resolve()]
        write_atomic(target, export_notebook(exporter, lesson.marked, title, lesson.path, target, pages))
        written.append(target)
        entries.append((target.name, title))
    glossary = nbformat.reads(plan.page_text, as_version=4)
    glossary_target = pages[glossary_source.resolve()]
    write_atomic(glossary_target, export_notebook(exporter, glossary, "Glossário do curso", glossary_source,
                                                  glossary_target, pages))
    written.append(glossary_target)
    for path in exercises:
        target = pages[path.resolve()]
        target.parent.mkdir(parents=True, exist_ok=True)
        notebook = nbformat.read(path, as_version=4)
        write_atomic(target, export_notebook(exporter, notebook, lesson_title(notebook, path.stem), path, target,
                                             pages))
        written.append(target)
    index = out / INDEX_NAME
    write_atomic(index, index_page(entries, glossary_target.name))
    written.append(index)
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=None, metavar="PASTA", help=f"pasta de saída (padrão: {DEFAULT_OUT}/ na raiz do projeto)")
    parser.add_argument("--execute", action="store_true",
                        help="executa cada lição antes de exportar, para a página trazer as saídas")


def run(args: argparse.Namespace) -> int:
    root = Path(args.root)
    out = args.out if args.out is not None else root / DEFAULT_OUT
    try:
        written = build_site(root, out, execute=args.execute)
    except CellExecutionError as exc:
        print(f"course site: uma lição falhou ao executar; nada mais foi exportado.\n{exc}")
        return 1
    except GlossaryError as exc:
        print(f"course site: glossary.yaml tem {quantity(len(exc.problems), 'problema', 'problemas')}; nada foi exportado.")
        for problem in exc.problems:
            print(f"  - {problem}")
        return 1
    print(f"course site: {quantity(len(written), 'página', 'páginas')} em {out}; comece por {out / INDEX_NAME}")
    return 0
