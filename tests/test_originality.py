"""`course originality`: eight-word runs a lesson shares with reference texts.

The reference texts themselves live outside the repository, so these tests build
their own: synthetic references, and the repository's lessons compared with text
taken from the lessons.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from authoring import cli
from authoring.glossary import read_notebook
from authoring.originality import compare_lessons, cut_out, markdown_prose, notebook_prose, words
from tests.glossary_fixtures import notebook, write_notebook
from tests.lesson_code import lesson_paths

REFERENCE = (
    "Título do artigo de referência sobre agentes duráveis\n"
    "Um agente que cai no meio da tarefa deve retomar do último ponto seguro, não do começo.\n"
    "Fonte — Exemplo — https://example.org/um-agente-que-cai-no-meio-da-tarefa-deve-retomar\n"
)


def write_reference(tmp_path: Path, text: str = REFERENCE) -> Path:
    path = tmp_path / "referencia.txt"
    path.write_text(text, encoding="utf-8")
    return path


def lesson_with(tmp_path: Path, *markdown: str, name: str = "01-teste.ipynb") -> Path:
    return write_notebook(tmp_path / "lessons" / name, notebook([("md", text) for text in markdown]))


def count(tmp_path: Path, *markdown: str) -> int:
    [report] = compare_lessons([lesson_with(tmp_path, *markdown)], [write_reference(tmp_path)])
    return report.count


def test_words_fold_case_punctuation_and_markdown():
    assert words("**Um** agente, que `cai`... no MEIO!") == ["um", "agente", "que", "cai", "no", "meio"]
    assert words("tool_use") == ["tool", "use"]


def test_a_copied_sentence_counts_despite_case_punctuation_and_glossary_marks(tmp_path):
    copied = ('UM <abbr class="glossario" title="Uma definição qualquer.">agente</abbr> que cai, '
              "no meio da **tarefa**: deve retomar do último ponto seguro!")
    # 14 words in common -> 7 distinct eight-word runs.
    assert count(tmp_path, copied) == 7


@pytest.mark.parametrize("shared_words, expected", [(7, 0), (8, 1), (9, 2)])
def test_the_run_length_is_exact(tmp_path, shared_words, expected):
    reference_words = "um agente que cai no meio da tarefa deve retomar".split()
    sentence = "Ontem " + " ".join(reference_words[:shared_words]) + " depois"
    assert count(tmp_path, sentence) == expected


def test_runs_do_not_cross_lines_or_table_cells(tmp_path):
    split_line = "Um agente que cai no meio\nda tarefa deve retomar do último ponto"
    table = "| Um agente que cai no meio | da tarefa deve retomar do último ponto |"
    assert count(tmp_path, split_line) == 0
    assert count(tmp_path, table) == 0


def test_headings_citations_sources_and_code_are_not_prose(tmp_path):
    assert count(tmp_path,
                 "## Um agente que cai no meio da tarefa deve retomar",
                 "Leia [aqui](https://example.org/x): um agente que cai no meio da tarefa deve retomar.",
                 "```\num agente que cai no meio da tarefa deve retomar\n```",
                 "## Fontes\n\n1. Um agente que cai no meio da tarefa deve retomar — Site") == 0
    # After the sources section ends, prose counts again.
    assert count(tmp_path, "## Fontes\n\n1. Um título\n\n## Depois\n\n"
                           "Um agente que cai no meio da tarefa.") == 1


def test_titles_quoted_in_prose_are_cut_out(tmp_path):
    # A lesson's own title may equal a reference title: quoted in a link or byline, it is aside.
    title = "# Lição 1 — Título do artigo de referência sobre agentes duráveis"
    byline = "Próxima: [Lição 1 — Título do artigo de referência sobre agentes duráveis](01-teste.ipynb)"
    assert count(tmp_path, title, byline) == 0
    assert cut_out(["a", "b", "c", "d"], [["b", "c"]]) == [["a"], ["d"]]


def test_a_title_from_a_lesson_not_examined_is_still_a_title(tmp_path):
    other = lesson_with(tmp_path, "# Lição 2 — Título do artigo de referência sobre agentes duráveis",
                        name="02-outra.ipynb")
    linking = lesson_with(tmp_path, "Veja [Lição 2 — Título do artigo de referência sobre agentes duráveis](02-outra.ipynb).")
    reference = write_reference(tmp_path)
    [alone] = compare_lessons([linking], [reference])
    [with_course] = compare_lessons([linking], [reference], course_lessons=[other, linking])
    assert alone.count > 0 and with_course.count == 0


def test_markdown_prose_skips_fences_and_keeps_link_text():
    prose = markdown_prose(["Texto com [um link](x.ipynb) e <b>negrito</b>.\n```\ncodigo aqui\n```\nfim"])
    assert prose.blocks == [["texto", "com", "um", "link", "e", "negrito"], ["fim"]]


def test_cli_reports_each_lesson_and_fails_when_runs_are_shared(tmp_path, capsys):
    clean = lesson_with(tmp_path, "Um texto escrito do zero, com outras palavras.", name="01-limpa.ipynb")
    copied = lesson_with(tmp_path, "Um agente que cai no meio da tarefa deve retomar.", name="02-copia.ipynb")
    reference = write_reference(tmp_path)

    code = cli.main(["--root", str(tmp_path), "originality", str(reference), "--lessons", str(clean), str(copied)])
    out = capsys.readouterr().out
    assert code == 1
    assert "01-limpa.ipynb: 0" in out and "02-copia.ipynb: 3" in out
    assert "“um agente que cai no meio da tarefa deve retomar” (3)" in out

    assert cli.main(["--root", str(tmp_path), "originality", str(reference), "--lessons", str(clean)]) == 0


def test_cli_refuses_missing_files_and_bad_lengths(tmp_path, capsys):
    assert cli.main(["--root", str(tmp_path), "originality", str(tmp_path / "nao-existe.txt")]) == 2
    assert "arquivo não encontrado" in capsys.readouterr().out
    reference = write_reference(tmp_path)
    assert cli.main(["--root", str(tmp_path), "originality", str(reference), "--words", "1"]) == 2


def test_the_course_lessons_are_read_and_a_copied_paragraph_is_found(tmp_path):
    """Run on the repository's own lessons: a paragraph of lesson 2 used as a reference is found there."""
    lessons = lesson_paths()
    assert len(lessons) == 7  # the six lessons and the appendix
    lesson_two = next(path for path in lessons if path.name.startswith("02-"))
    paragraph = next(block for block in notebook_prose(read_notebook(lesson_two)).blocks if len(block) > 30)
    reference = write_reference(tmp_path, " ".join(paragraph))
    reports = {report.name: report.count for report in compare_lessons(lessons, [reference])}
    assert reports[lesson_two.name] >= len(paragraph) - 7
