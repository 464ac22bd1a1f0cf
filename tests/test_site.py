"""`course site`: every link of the exported pages leads to a page the export wrote.

Lessons link to the exercise notebooks students edit (../exercises/exercise-N.ipynb) and
the exercises link back to their lessons; in the site each link must reach the exported
page of that notebook, wherever --out puts the site.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from authoring.site_terms import accessible_terms
from authoring.site import build_site
from tests.glossary_fixtures import entry, notebook, write_glossary, write_notebook

REPO = Path(__file__).resolve().parent.parent
_HREF = re.compile(r'(?:href|src)="([^"]*)"')


def broken_links(out: Path) -> list[str]:
    """Every local href or src of every page under out that does not resolve to a written file."""
    broken = []
    for page in sorted(out.rglob("*.html")):
        for href in _HREF.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", href) or href.startswith(("#", "//")):
                continue  # external, mail, or an anchor in the same page
            target = (page.parent / unquote(href.split("#", 1)[0])).resolve()
            if not target.is_file():
                broken.append(f"{page.relative_to(out)} -> {href}")
    return broken


def small_course(tmp_path: Path) -> Path:
    write_glossary(tmp_path, [entry("retomada", 3, "Recomeçar de onde parou.")])
    write_notebook(tmp_path / "lessons" / "03-retomando.ipynb", notebook([
        ("md", "# Lição 3 — Retomando\n\nA retomada."),
        ("md", "## Exercícios\n\nAbra [`exercises/exercise-3.ipynb`](../exercises/exercise-3.ipynb)."),
    ]))
    write_notebook(tmp_path / "exercises" / "exercise-3.ipynb", notebook([
        ("md", "# Exercícios da lição 3\n\nVolte à [Lição 3](../lessons/03-retomando.ipynb#Exercícios)."),
        ("code", "resume_action = None"),
    ]))
    return tmp_path


def test_a_lesson_links_to_the_exported_exercise_and_back(tmp_path):
    root = small_course(tmp_path)
    out = tmp_path / "elsewhere" / "site"  # not under the course root: links must not climb out of the site
    written = build_site(root, out)
    assert out / "exercises" / "exercise-3.html" in written
    lesson = (out / "03-retomando.html").read_text(encoding="utf-8")
    assert 'href="exercises/exercise-3.html"' in lesson
    exercise = (out / "exercises" / "exercise-3.html").read_text(encoding="utf-8")
    assert 'href="../03-retomando.html#Exerc%C3%ADcios"' in exercise
    assert broken_links(out) == []


@pytest.mark.slow
def test_every_local_link_of_the_course_site_resolves(tmp_path):
    if not (REPO / "exercises").is_dir():
        pytest.skip("no exercises/ to export")
    out = tmp_path / "site"
    build_site(REPO, out)
    assert sorted(p.name for p in (out / "exercises").glob("*.html")) == \
        sorted(p.with_suffix(".html").name for p in (REPO / "exercises").glob("exercise-*.ipynb"))
    assert broken_links(out) == []


def test_the_sanitizer_keeps_what_markdown_makes_and_drops_what_runs(tmp_path):
    """Markdown (headings, paragraphs, tables, the glossary's <abbr title>) comes through; a
    script (tag and content), an event handler and a javascript: link a lesson's markdown might
    carry do not."""
    root = small_course(tmp_path)
    write_notebook(root / "lessons" / "03-retomando.ipynb", notebook([
        ("md", "# Lição 3 — Retomando\n\nA retomada.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
               "<script>alert('roubado')</script>\n\n<img src=\"x.png\" alt=\"figura\" onerror=\"alert('roubado')\">\n\n"
               "[perigo](javascript:alert('roubado')) e [fonte](https://example.org/fonte)"),
    ]))
    build_site(root, tmp_path / "site")
    page = (tmp_path / "site" / "03-retomando.html").read_text(encoding="utf-8")
    body = page[page.index("<body"):]
    assert "roubado" not in body and "onerror" not in body and "javascript:" not in body
    assert '<img alt="figura" src="x.png"' in body
    assert "<p><a>perigo</a> e <a href=\"https://example.org/fonte\">fonte</a></p>" in body
    assert "<table>" in body and "<td>1</td>" in body
    assert ('<p>A <span class="termo"><button type="button" class="termo-botao" aria-describedby="termo-def-1">'
            'retomada</button><span class="termo-def" role="tooltip" id="termo-def-1">Recomeçar de onde parou.'
            '</span></span>.</p>') in body
    assert 'id="termos-do-glossario-esc"' in page[:page.index("<body")]  # Esc dismisses (WCAG 1.4.13)


def test_a_term_on_the_site_is_a_described_button_and_its_definition_cannot_inject_markup():
    page = ('<html><head></head><body><p><abbr class="glossario" title="um &lt;b onclick=&quot;x()&quot;&gt; '
            'perigoso">termo</abbr> e <abbr title="outra coisa">HTML</abbr> e '
            '<strong><abbr class="glossario" title="Def &amp; mais.">ledger</abbr></strong></p></body></html>')
    turned, count = accessible_terms(page)
    assert count == 2
    assert "<b onclick" not in turned and "um &lt;b onclick=\"x()\"&gt; perigoso" in turned
    assert '<abbr title="outra coisa">HTML</abbr>' in turned  # not a glossary mark: left alone
    assert turned.count('aria-describedby="termo-def-') == 2 and 'id="termo-def-2">Def &amp; mais.</span>' in turned
    assert "title=" not in turned.replace('<abbr title="outra coisa">', "")  # no native tooltip besides


def test_a_definition_quoted_with_single_quotes_is_turned_too():
    turned, count = accessible_terms('<head></head><p><abbr class="glossario" title=\'Fecha as "órfãs".\'>x</abbr></p>')
    assert count == 1 and 'id="termo-def-1">Fecha as "órfãs".</span>' in turned


def test_a_page_without_marks_gets_no_style_or_script():
    page = "<html><head></head><body><p>nada</p></body></html>"
    assert accessible_terms(page) == (page, 0)
