"""The lessons' figures (lessons/figuras/*.svg): self-contained, labelled in Portuguese, all used.

Each SVG must parse as XML, be an `<svg role="img">` with a non-empty Portuguese
`aria-label`, `<title>` and `<desc>`, and load nothing from outside itself (no scripts,
no external images, fonts or stylesheets, no entity declarations). Every figure is used by
a lesson, and every image a lesson shows exists and carries alt text. The rendering in a
real browser is checked in tests/test_figures_browser.py.
"""
from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import mistune
import nbformat
import pytest

from authoring.figures import MAP_LESSONS, check_problems, course_map_svg, map_name
from tests.glossary_fixtures import REPO
from tests.test_links import local_path

FIGURES = REPO / "lessons" / "figuras"
SVG = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
FORBIDDEN_TAGS = {"script", "foreignObject", "image", "iframe", "object", "embed", "audio", "video", "style"}
# A few words a Portuguese sentence about this course can hardly avoid, and no English one uses.
PORTUGUESE = re.compile(r"\b(?:d[aoe]s?|um|uma|não|é|você|está|lição|mundos?|registro|retomada|livro-razão)\b",
                        re.IGNORECASE)
IMG_TAG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
IMG_ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)


def local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def figure_problems(path: Path) -> list[str]:
    """Every way the SVG at `path` falls short of a self-contained, labelled figure."""
    text = path.read_text(encoding="utf-8")
    if re.search(r"<!(?:DOCTYPE|ENTITY)", text):
        return ["declares a DOCTYPE or entities"]
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        return [f"is not valid XML: {error}"]
    problems = []
    if root.tag != f"{SVG}svg":
        problems.append(f"root element is {root.tag}, not an SVG <svg>")
    if root.get("role") != "img":
        problems.append('the <svg> lacks role="img"')
    label = (root.get("aria-label") or "").strip()
    if not PORTUGUESE.search(label):
        problems.append(f"aria-label is empty or not Portuguese: {label!r}")
    for part in ("title", "desc"):
        element = root.find(f"{SVG}{part}")
        content = "".join(element.itertext()).strip() if element is not None else ""
        if not PORTUGUESE.search(content):
            problems.append(f"<{part}> is missing, empty or not Portuguese: {content!r}")
    for element in root.iter():
        name = local_name(element.tag)
        if name in FORBIDDEN_TAGS:
            problems.append(f"uses <{name}>")
        for attribute, value in element.attrib.items():
            if attribute in ("href", XLINK_HREF) and not value.startswith("#"):
                problems.append(f"<{name}> points outside the figure: {value}")
            elif attribute.startswith("on"):
                problems.append(f"<{name}> has an event handler ({attribute})")
            elif re.search(r"url\(\s*['\"]?(?!#)", value):
                problems.append(f"<{name}> {local_name(attribute)} loads {value}")
    return problems


def lesson_images(path: Path) -> list[tuple[str, str]]:
    """(target, alt text) for every image in the markdown cells of a notebook, markdown or <img>."""
    notebook = nbformat.read(path, as_version=4)
    found: list[tuple[str, str]] = []

    def plain(tokens: list[dict]) -> str:
        return "".join(t.get("raw", "") if "raw" in t else plain(t.get("children") or []) for t in tokens)

    def walk(tokens: list[dict]) -> None:
        for token in tokens:
            if token.get("type") == "image":
                found.append((token["attrs"]["url"], plain(token.get("children") or []).strip()))
            elif token.get("type") in ("inline_html", "block_html"):
                for tag in IMG_TAG.findall(token.get("raw", "")):
                    src = re.search(r"""\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)')""", tag, re.IGNORECASE)
                    alt = IMG_ALT.search(tag)
                    found.append(((src.group(1) or src.group(2)) if src else "",
                                  ((alt.group(1) or alt.group(2)) if alt else "").strip()))
            walk(token.get("children") or [])

    parse = mistune.create_markdown(renderer=None)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            walk(parse(cell.source))
    return found


def lessons() -> list[Path]:
    return sorted((REPO / "lessons").glob("*.ipynb"))


def figures() -> list[Path]:
    return sorted(FIGURES.glob("*.svg"))


# ------------------------------------------------------------------ the course's own figures

def test_the_lessons_have_figures():
    names = {p.name for p in figures()}
    assert {"licao-3-dois-mundos.svg", "licao-4-estados-do-livro-razao.svg",
            "licao-4-reconcile-tres-vias.svg", "licao-4-intencao-e-recibo.svg"} <= names
    assert {map_name(n) for n in MAP_LESSONS} <= names


@pytest.mark.parametrize("path", figures(), ids=lambda p: p.name)
def test_each_figure_is_self_contained_and_labelled_in_portuguese(path):
    assert figure_problems(path) == []


def test_every_figure_is_shown_by_some_lesson():
    shown = {(lesson.parent / local_path(target)).resolve()
             for lesson in lessons() for target, _ in lesson_images(lesson) if local_path(target)}
    unused = [p.name for p in figures() if p.resolve() not in shown]
    assert unused == []


@pytest.mark.parametrize("lesson", lessons(), ids=lambda p: p.name)
def test_every_image_a_lesson_shows_exists_and_has_alt_text(lesson):
    for target, alt in lesson_images(lesson):
        relative = local_path(target)
        assert relative is not None, f"{lesson.name} loads an image from the web: {target}"
        assert (lesson.parent / relative).is_file(), f"{lesson.name}: {target} does not exist"
        assert PORTUGUESE.search(alt), f"{lesson.name}: {target} has no Portuguese alt text ({alt!r})"


def test_lessons_1_3_and_4_open_with_the_course_map_marking_themselves():
    for number in MAP_LESSONS:
        lesson = next((REPO / "lessons").glob(f"{number:02d}-*.ipynb"))
        title_cell = nbformat.read(lesson, as_version=4).cells[0].source
        assert f"](figuras/{map_name(number)})" in title_cell, lesson.name
        assert f"você está na lição {number}" in (FIGURES / map_name(number)).read_text(encoding="utf-8")


def test_the_course_maps_match_their_template():
    assert check_problems(REPO) == []


# ------------------------------------------------------------------ the checks can fail

GOOD = ('<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="Um desenho da lição">'
        '<title>Um desenho da lição</title><desc>Uma caixa só.</desc><rect width="1" height="1"/></svg>')


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "figura.svg"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_figure_passes(tmp_path):
    assert figure_problems(write(tmp_path, GOOD)) == []


@pytest.mark.parametrize("broken, problem", [
    (GOOD.replace("</svg>", ""), "not valid XML"),
    (GOOD.replace(' role="img"', ""), 'role="img"'),
    (GOOD.replace('aria-label="Um desenho da lição"', 'aria-label="A drawing"'), "aria-label"),
    (GOOD.replace("<title>Um desenho da lição</title>", ""), "<title>"),
    (GOOD.replace("<title>Um desenho da lição</title>", "<title>The drawing</title>"), "<title>"),
    (GOOD.replace("<desc>Uma caixa só.</desc>", "<desc> </desc>"), "<desc>"),
    (GOOD.replace("<rect", '<image href="https://example.com/x.png"/><rect'), "<image>"),
    (GOOD.replace("<rect", '<a href="https://example.com/"><text>x</text></a><rect'), "points outside"),
    (GOOD.replace("<rect", '<use xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="outra.svg#x"/><rect'),
     "points outside"),
    (GOOD.replace("<rect", "<script>alert(1)</script><rect"), "<script>"),
    (GOOD.replace("<rect", "<style>@import url(https://example.com/f.css);</style><rect"), "<style>"),
    (GOOD.replace("<rect", '<rect fill="url(https://example.com/p.svg#g)"/><rect'), "loads"),
    (GOOD.replace("<rect", '<rect onclick="alert(1)"/><rect'), "event handler"),
    ('<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>' + GOOD, "DOCTYPE"),
    (GOOD.replace("http://www.w3.org/2000/svg", "http://example.com/not-svg"), "not an SVG"),
])
def test_each_kind_of_broken_figure_is_caught(tmp_path, broken, problem):
    problems = figure_problems(write(tmp_path, broken))
    assert any(problem in p for p in problems), problems


def test_a_marker_that_points_inside_the_figure_is_fine(tmp_path):
    inside = GOOD.replace("<rect", '<defs><marker id="m"/></defs><line marker-end="url(#m)"/><rect')
    assert figure_problems(write(tmp_path, inside)) == []


def test_images_without_alt_text_or_from_the_web_are_found(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("![](figuras/a.svg) e ![Um desenho da lição](figuras/b.svg)"),
        nbformat.v4.new_markdown_cell('<img src="figuras/c.svg"> `![não é imagem](x.svg)`'),
        nbformat.v4.new_code_cell("# ![nem esta](y.svg)"),
    ]
    path = tmp_path / "01-x.ipynb"
    nbformat.write(notebook, path)
    assert lesson_images(path) == [("figuras/a.svg", ""), ("figuras/b.svg", "Um desenho da lição"),
                                   ("figuras/c.svg", "")]


def test_a_map_that_drifted_from_its_template_is_reported(tmp_path):
    figures_dir = tmp_path / "lessons" / "figuras"
    figures_dir.mkdir(parents=True)
    for number in MAP_LESSONS:
        (figures_dir / map_name(number)).write_text(course_map_svg(number), encoding="utf-8")
    assert check_problems(tmp_path) == []
    edited = figures_dir / map_name(MAP_LESSONS[-1])
    edited.write_text(edited.read_text(encoding="utf-8").replace("você está aqui", "aqui"), encoding="utf-8")
    (figures_dir / map_name(MAP_LESSONS[0])).unlink()
    problems = check_problems(tmp_path)
    assert len(problems) == 2 and all("course figures" in p for p in problems)


def test_the_map_refuses_a_lesson_the_course_does_not_have():
    with pytest.raises(ValueError, match="não existe a lição 9"):
        course_map_svg(9)


def test_the_site_copies_only_regular_svg_files(tmp_path):
    from authoring.site import copy_figures

    lessons_dir = tmp_path / "lessons"
    (lessons_dir / "figuras").mkdir(parents=True)
    (lessons_dir / "figuras" / "a.svg").write_text(GOOD, encoding="utf-8")
    (lessons_dir / "figuras" / "notas.txt").write_text("x", encoding="utf-8")
    secret = tmp_path / "fora.svg"
    secret.write_text("segredo", encoding="utf-8")
    (lessons_dir / "figuras" / "link.svg").symlink_to(secret)
    out = tmp_path / "site"
    copied = copy_figures(lessons_dir, out)
    assert copied == [out / "figuras" / "a.svg"]
    assert sorted(p.name for p in (out / "figuras").iterdir()) == ["a.svg"]
    shutil.rmtree(lessons_dir / "figuras")
    assert copy_figures(lessons_dir, tmp_path / "vazio") == []
