"""The lessons' figures (lessons/figuras/*.svg): self-contained, labelled in Portuguese, all used.

Each SVG must parse as XML, be an `<svg role="img">` with a non-empty Portuguese
`aria-label`, `<title>` and `<desc>`, load nothing from outside itself (no scripts,
no external images, fonts or stylesheets, no entity declarations) and keep its text readable
when a 700 px column scales it down. Every figure is used by a lesson, and every image a
lesson shows exists, carries Portuguese alt text and is such a figure. Every lesson and both
appendices open with the course map marking their own part. The figures drawn from a run of
the harness (lessons 2 and 5) must say what that run did. The rendering in a real browser is
checked in tests/test_figures_browser.py.
"""
from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import mistune
import nbformat
import pytest

from authoring.figures import (
    HERE,
    MAP_LESSONS,
    check_problems,
    course_map_svg,
    expected_figures,
    map_name,
    map_title,
)
from authoring.run_figures import RUN_FIGURES, rewind_and_fork, turn_save_points
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
COLUMN_PX = 700  # the narrowest column a lesson is read in (JupyterLab beside a side panel, the site)
MIN_TEXT_PX = 9.5  # the smallest text a figure may show once scaled into that column


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
    problems.extend(readability_problems(root))
    return problems


def readability_problems(root: ET.Element) -> list[str]:
    """Text smaller than MIN_TEXT_PX once the figure is scaled into a COLUMN_PX column."""
    try:
        width = float(root.get("width") or root.get("viewBox", "0 0 0 0").split()[2])
    except (IndexError, ValueError):
        return ["the <svg> has neither a width nor a viewBox width"]
    scale = min(1.0, COLUMN_PX / width) if width > 0 else 1.0
    problems = []
    inherited = {root: float(root.get("font-size") or 16)}
    for parent in root.iter():
        for child in parent:
            inherited[child] = float(child.get("font-size") or inherited[parent])
            if local_name(child.tag) == "text" and "".join(child.itertext()).strip():
                shown = inherited[child] * scale
                if shown < MIN_TEXT_PX:
                    problems.append(f"text {''.join(child.itertext()).strip()!r} is {shown:.1f} px in a "
                                    f"{COLUMN_PX} px column (under {MIN_TEXT_PX})")
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
    assert {"licao-2-janelas-de-queda.svg", "licao-3-dois-mundos.svg", "licao-4-estados-do-livro-razao.svg",
            "licao-4-reconcile-tres-vias.svg", "licao-4-intencao-e-recibo.svg", "licao-5-arvore-de-linhas.svg",
            "licao-6-lease-e-fencing.svg", "apendice-07-instantaneo-e-historico.svg",
            "apendice-o-lado-do-modelo.svg"} <= names
    assert {map_name(n) for n in MAP_LESSONS} <= names
    assert set(RUN_FIGURES) <= names


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


@pytest.mark.parametrize("lesson", lessons(), ids=lambda p: p.name)
def test_every_figure_a_lesson_shows_is_a_labelled_self_contained_svg(lesson):
    for target, _ in lesson_images(lesson):
        path = lesson.parent / local_path(target)
        assert path.suffix == ".svg" and path.parent.resolve() == FIGURES.resolve(), f"{lesson.name}: {target}"
        assert figure_problems(path) == [], f"{lesson.name}: {target}"


def numbered_lessons() -> list[Path]:
    return [p for p in lessons() if re.match(r"\d\d-", p.name)]


def test_every_lesson_and_appendix_has_a_map():
    assert sorted(int(p.name[:2]) for p in numbered_lessons()) == sorted(MAP_LESSONS)


@pytest.mark.parametrize("lesson", numbered_lessons(), ids=lambda p: p.name)
def test_each_lesson_opens_with_the_course_map_marking_itself(lesson):
    number = int(lesson.name[:2])
    title_cell = nbformat.read(lesson, as_version=4).cells[0].source
    maps = re.findall(r"\]\(figuras/(mapa-licao-\d+\.svg)\)", title_cell)
    assert maps == [map_name(number)], f"{lesson.name} opens with {maps}"
    text = (FIGURES / map_name(number)).read_text(encoding="utf-8")
    assert map_title(number) in text and text.count("você está aqui") == 1


def marked_part(svg: str) -> str:
    """The first text drawn after the map's one highlighted box: the name of the part marked."""
    elements = list(ET.fromstring(svg).iter())
    marked = [i for i, e in enumerate(elements) if local_name(e.tag) == "rect" and e.get("fill") == HERE[0]]
    assert len(marked) == 1, f"{len(marked)} parts highlighted"
    return next("".join(e.itertext()) for e in elements[marked[0]:] if local_name(e.tag) == "text")


@pytest.mark.parametrize("number, part", [
    *((n, f"Lição {n}") for n in range(1, 7)),
    (7, "Armazenamentos (harness/stores)"),
    (8, "Apêndice: o lado do modelo"),
])
def test_each_map_highlights_only_its_own_part(number, part):
    assert marked_part(course_map_svg(number)) == part


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


def test_a_generated_figure_that_drifted_from_its_template_is_reported(tmp_path):
    for path, text in expected_figures(tmp_path).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert check_problems(tmp_path) == []
    edited = tmp_path / "lessons" / "figuras" / map_name(MAP_LESSONS[-1])
    edited.write_text(edited.read_text(encoding="utf-8").replace("você está aqui", "aqui"), encoding="utf-8")
    (tmp_path / "lessons" / "figuras" / map_name(MAP_LESSONS[0])).unlink()
    drawn = tmp_path / "lessons" / "figuras" / "licao-5-arvore-de-linhas.svg"
    drawn.write_text(drawn.read_text(encoding="utf-8").replace("rewound-001", "rewound-002"), encoding="utf-8")
    problems = check_problems(tmp_path)
    assert len(problems) == 3 and all("course figures" in p for p in problems)


# ------------------------------------------------------------------ the figures drawn from a run

def alt_of(lesson_number: str, figure: str) -> str:
    lesson = next((REPO / "lessons").glob(f"{lesson_number}-*.ipynb"))
    return next(alt for target, alt in lesson_images(lesson) if target.endswith(figure))


def test_lesson_2s_windows_are_the_saves_of_the_lessons_run_agent():
    saves = turn_save_points()
    assert [(s["turns"], bool(s["pending_tool_use"])) for s in saves] == [
        (1, True), (1, False), (2, True), (2, False), (3, False)]
    svg = (FIGURES / "licao-2-janelas-de-queda.svg").read_text(encoding="utf-8")
    for state in saves[1:4]:  # B of turn 1, A of turn 2, B of turn 2: the three windows
        assert f"turns = {state['turns']} · {len(state['messages'])} mensagens" in svg
    call = saves[2]["pending_tool_use"][0]
    assert f"[{call['name']} {call['id']}]" in svg
    alt = alt_of("02", "licao-2-janelas-de-queda.svg")
    assert all(words in alt for words in ("ponto B do turno 1", "ponto A do turno 2", "ponto B do turno 2",
                                           call["name"]))


def test_lesson_5s_tree_is_what_the_rewind_and_the_fork_left_in_the_folders():
    data = rewind_and_fork()
    assert data["rewound_folder"] == "rewound-001"
    assert [name for name, _ in data["rewound"]] == ["turn-002-A.json", "turn-002-B.json", "turn-003-A.json"]
    assert data["rewound"][0][1].endswith("todos@") and data["main"][2][1].endswith("team@")
    assert data["main_timeline"]["parent"] is None and data["main_timeline"]["dry_run"] is False
    parent = data["fork_timeline"]["parent"]
    assert (parent["turn"], parent["point"], data["fork_timeline"]["dry_run"]) == (1, "B", True)
    assert parent["timeline_id"] == data["main_timeline"]["timeline_id"]
    assert data["fork"][0][0] == "turn-001-B.json" and data["fork"][2][1].startswith("[dry-run]")
    assert data["outbox"] == ["todos@example.com", "team@example.com"]
    alt = alt_of("05", "licao-5-arvore-de-linhas.svg")
    assert all(words in alt for words in (f"checkpoints/{data['rewound_folder']}/", "turno 1, ponto B",
                                           "rewind_to(principal, 1)", "todos@example.com", "dry_run"))


def test_text_too_small_for_the_column_is_caught(tmp_path):
    small = GOOD.replace("<svg ", '<svg width="1400" ').replace("<rect", '<text font-size="12">miúdo</text><rect')
    assert any("px in a 700 px column" in p for p in figure_problems(write(tmp_path, small)))
    inherited = GOOD.replace("<svg ", '<svg width="700" font-size="9" ').replace("<rect", "<g><text>x</text></g><rect")
    assert any("under" in p for p in figure_problems(write(tmp_path, inherited)))
    readable = GOOD.replace("<svg ", '<svg width="700" ').replace("<rect", '<text font-size="10">x</text><rect')
    assert figure_problems(write(tmp_path, readable)) == []


def test_the_map_refuses_a_lesson_the_course_does_not_have():
    for missing in (0, 9):
        with pytest.raises(ValueError, match=f"não existe a lição {missing}"):
            course_map_svg(missing)


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
