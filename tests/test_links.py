"""Every relative link a student can click resolves from the folder of the file that holds it.

Walks the markdown cells of every notebook (lessons, glossary page, exercises, solutions)
and the markdown files (README.md, docs/). Links are read with a real markdown parser
(mistune, which nbconvert uses), so a link inside code is not a link, and reference-style
links, images and raw HTML (`href`, `src`) count too.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import mistune
import nbformat
import pytest

from tests.glossary_fixtures import REPO

HTML_TARGET = re.compile(r"""\b(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
NOTEBOOK_FOLDERS = ("lessons", "exercises", "solutions")


def link_targets(markdown: str) -> list[str]:
    """Every link, image and HTML href/src target in a markdown text, in order."""
    found: list[str] = []

    def walk(tokens: list[dict]) -> None:
        for token in tokens:
            kind = token.get("type")
            if kind in ("link", "image"):
                found.append(token["attrs"]["url"])
            elif kind in ("inline_html", "block_html"):
                found.extend(a or b for a, b in HTML_TARGET.findall(token.get("raw", "")))
            walk(token.get("children") or [])

    walk(mistune.create_markdown(renderer=None)(markdown))
    return found


def local_path(target: str) -> str | None:
    """The file part of a relative link; None for web addresses and in-page anchors."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    return unquote(parts.path)


def broken_links(path: Path) -> list[str]:
    """'target' for each relative link in `path` that does not resolve from its folder."""
    if path.suffix == ".ipynb":
        notebook = nbformat.read(path, as_version=4)
        texts = [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]
    else:
        texts = [path.read_text(encoding="utf-8")]
    broken = []
    for text in texts:
        for target in link_targets(text):
            relative = local_path(target)
            if relative is not None and not (path.parent / relative).exists():
                broken.append(target)
    return broken


def student_files() -> list[Path]:
    notebooks = [p for folder in NOTEBOOK_FOLDERS for p in sorted((REPO / folder).glob("*.ipynb"))]
    return [*notebooks, REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_the_walk_covers_every_notebook_and_document():
    names = {str(p.relative_to(REPO)) for p in student_files()}
    assert {"README.md", "lessons/glossario.ipynb", "exercises/exercise-2.ipynb",
            "solutions/exercise-2.ipynb", "docs/instrutores.md"} <= names
    assert len([n for n in names if n.startswith("lessons/")]) >= 7


@pytest.mark.slow
@pytest.mark.parametrize("path", student_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves_from_the_files_folder(path):
    assert broken_links(path) == [], f"{path.relative_to(REPO)} has links that lead nowhere"


def test_each_lesson_links_to_its_exercise():
    for lesson in sorted((REPO / "lessons").glob("0[1-6]-*.ipynb")):
        number = int(lesson.name[:2])
        notebook = nbformat.read(lesson, as_version=4)
        targets = [t for cell in notebook.cells if cell.cell_type == "markdown" for t in link_targets(cell.source)]
        assert f"../exercises/exercise-{number}.ipynb" in targets, lesson.name


def test_the_walk_finds_broken_links_of_every_kind(tmp_path):
    (tmp_path / "lessons").mkdir()
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "exercise-1.ipynb").write_text("{}")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell(
            "[ok](../exercises/exercise-1.ipynb) [quebrado](exercises/exercise-1.ipynb) "
            "[âncora](../exercises/exercise-1.ipynb#nivel-1) [web](https://example.com/x.ipynb) "
            "[só âncora](#topo) `[em código](nada.ipynb)` ![figura](figura.png)"),
        nbformat.v4.new_markdown_cell('<a href="../exercises/exercise-9.ipynb">nove</a>\n\n[ref][r]\n\n[r]: sem-arquivo.md'),
        nbformat.v4.new_code_cell("# [não é markdown](nada.ipynb)"),
    ]
    lesson = tmp_path / "lessons" / "01-x.ipynb"
    nbformat.write(notebook, lesson)
    assert broken_links(lesson) == [
        "exercises/exercise-1.ipynb", "figura.png", "../exercises/exercise-9.ipynb", "sem-arquivo.md",
    ]
