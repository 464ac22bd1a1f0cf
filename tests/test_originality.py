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


def test_a_sentence_wrapped_across_lines_counts(tmp_path):
    # Wrapping a copied sentence at a few words per line must not hide it.
    split_line = "Um agente que cai no meio\nda tarefa deve retomar do último ponto"
    assert count(tmp_path, split_line) == 6  # 13 words in common -> 6 runs
    reference_words = "um agente que cai no meio da tarefa deve retomar do último ponto seguro não do começo".split()
    wrapped = "\n".join(" ".join(reference_words[i:i + 7]) for i in range(0, len(reference_words), 7))
    assert count(tmp_path, wrapped) == len(reference_words) - 7


def test_runs_do_not_cross_paragraphs_list_items_or_table_cells(tmp_path):
    assert count(tmp_path, "Um agente que cai no meio\n\nda tarefa deve retomar do último ponto") == 0
    assert count(tmp_path, "- Um agente que cai no meio\n- da tarefa deve retomar do último ponto") == 0
    assert count(tmp_path, "| Um agente que cai no meio | da tarefa deve retomar do último ponto |") == 0
    assert count(tmp_path, "Um agente que cai no meio\n## Título\nda tarefa deve retomar do último ponto") == 0


def test_a_url_on_the_line_hides_only_the_url(tmp_path):
    copied = "um agente que cai no meio da tarefa deve retomar"  # 10 words -> 3 runs
    assert count(tmp_path, f"Leia https://example.org/x: {copied}.") == 3
    assert count(tmp_path, f"Leia [aqui](https://example.org/x): {copied}.") == 3
    assert count(tmp_path, f"Veja <https://example.org/x> e www.example.org: {copied}.") == 3


def code_count(tmp_path, *cells) -> int:
    path = write_notebook(tmp_path / "lessons" / "01-codigo.ipynb", notebook(list(cells)))
    [report] = compare_lessons([path], [write_reference(tmp_path)])
    return report.count


def test_strings_and_comments_of_code_cells_count(tmp_path):
    copied = "Um agente que cai no meio da tarefa deve retomar"  # 10 words -> 3 runs
    assert code_count(tmp_path, ("code", f"MESSAGE = {copied!r}")) == 3
    assert code_count(tmp_path, ("code", f"x = 1  # {copied}")) == 3
    assert code_count(tmp_path, ("code", f'def f():\n    """{copied}."""')) == 3
    # Implicit concatenation and an f-string with a placeholder in the middle.
    assert code_count(tmp_path, ("code", 'text = (f"{path}: um agente que cai no meio "\n'
                                         '        "da tarefa deve retomar")')) == 3
    # A script written by %%writefile, magics and shell lines around it.
    assert code_count(tmp_path, ("code", f"%%writefile x.py\nprint({copied!r})")) == 3
    assert code_count(tmp_path, ("code", f"!echo oi\n%time y = 2\nz = {copied!r}")) == 3
    # Code that does not parse is read word by word.
    assert code_count(tmp_path, ("code", f"if : {copied}")) == 3
    # Names and numbers of code are not prose.
    assert code_count(tmp_path, ("code", "um = agente = que = cai = no = meio = da = tarefa = 1")) == 0


def test_fenced_code_in_markdown_counts(tmp_path):
    assert count(tmp_path, "```\num agente que cai no meio da tarefa deve retomar\n```") == 3


def test_source_titles_and_headings_are_not_prose(tmp_path):
    sources = "## Fontes\n\n1. Um agente que cai no meio da tarefa deve retomar — Site — https://example.org/a"
    assert count(tmp_path, "## Um agente que cai no meio da tarefa deve retomar", sources) == 0
    # A source title quoted in the prose is a citation, not copied prose.
    assert count(tmp_path, "Como diz *Um agente que cai no meio da tarefa deve retomar* [1], cuidado.", sources) == 0
    # After the sources section ends, prose counts again.
    assert count(tmp_path, "## Fontes\n\n1. Um título\n\n## Depois\n\n"
                           "Um agente que cai no meio da tarefa.") == 1


def test_a_reference_paragraph_wrapped_across_lines_is_one_block(tmp_path):
    reference = write_reference(tmp_path, "Um agente que cai no meio\nda tarefa deve retomar do último ponto\n")
    lesson = lesson_with(tmp_path, "Um agente que cai no meio da tarefa deve retomar do último ponto.")
    [report] = compare_lessons([lesson], [reference])
    assert report.count == 6


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


def test_markdown_prose_joins_a_paragraph_and_keeps_link_text():
    prose = markdown_prose(["Texto com [um link](x.ipynb) e <b>negrito</b>.\n```\ncodigo aqui\n```\nfim\nda linha"])
    assert prose.blocks == [["texto", "com", "um", "link", "e", "negrito"], ["codigo", "aqui"], ["fim", "da", "linha"]]


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
    assert len(lessons) == 8  # the six lessons and the two appendices
    lesson_two = next(path for path in lessons if path.name.startswith("02-"))
    paragraph = next(block for block in notebook_prose(read_notebook(lesson_two)).blocks if len(block) > 30)
    reference = write_reference(tmp_path, " ".join(paragraph))
    reports = {report.name: report.count for report in compare_lessons(lessons, [reference])}
    assert reports[lesson_two.name] >= len(paragraph) - 7
