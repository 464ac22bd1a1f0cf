"""glossary.yaml schema, `course glossary` marking rules, check_problems, `course site`."""
from __future__ import annotations

import html
import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from authoring.notebook_metadata import course_kernel_metadata
from authoring import cli
from authoring.glossary import (
    GLOSSARY_LINK,
    apply_glossary,
    build_plan,
    check_problems,
    lesson_paths,
    mark_lesson,
    notebook_text,
    read_notebook,
)
from authoring.glossary_marker import MARK, Marker, title_attribute
from authoring.glossary_schema import GlossaryError, load_glossary, parse_glossary
from authoring.site import build_site
from tests.glossary_fixtures import (
    REPO,
    entry,
    lesson_three_notebook,
    notebook,
    write_glossary,
    write_notebook,
)

# The 60 terms of the reference glossary, grouped as COURSE-OUTLINE.md's "Terms:" lines.
REFERENCE_TERMS_BY_LESSON = {
    1: ["memória", "estado de execução", "messages", "turns", "tokensUsed", "task", "tool_use",
        "tool_result", "tool_use_id", "proporção"],
    2: ["checkpoint", "checkpoint.json", "version", "saveCheckpoint", "ponto de gravação A",
        "ponto de gravação B", "arquivo temporário", "fs.renameSync", "sobrescrever no lugar",
        "loadCheckpoint", "pendingToolUse"],
    3: ["retomada", "chamada órfã", "reconcile", "READ_ONLY_TOOLS", "ferramenta somente leitura",
        "ferramenta de alto impacto", "is_error"],
    4: ["idempotente", "livro-razão de efeitos", "effects.json", "at-least-once", "loadEffects",
        "saveEffect", "válvula de aprovação", "ensureTicket", "acréscimo", "sobrescrita",
        "runToolUses", "divisão em três vias", "executar primeiro, registrar depois"],
    5: ["rebobinagem", "bifurcação", "rewindTo", "forkFrom", "turn-014-A.json", "pickLatestPoint",
        "cena da decisão", "modo de dry-run", "sequência de checkpoints", "Git"],
    6: ["CRASH_AFTER", "SimulatedCrash", "crashPoint", "--resume", "fila de respostas",
        "makeStubClient", "main()", "137", "aparato de verificação"],
}
PYTHON_NAMES = {
    "tokensUsed": "tokens_used", "pendingToolUse": "pending_tool_use", "saveCheckpoint": "save_checkpoint",
    "loadCheckpoint": "load_checkpoint", "fs.renameSync": "os.replace", "loadEffects": "load_effects",
    "saveEffect": "save_effect", "ensureTicket": "ensure_ticket", "runToolUses": "run_tool_uses",
    "rewindTo": "rewind_to", "forkFrom": "fork_from", "pickLatestPoint": "pick_latest_point",
    "crashPoint": "crash_point", "makeStubClient": "make_stub_client",
    "executar primeiro, registrar depois": "intenção antes, recibo depois",
}
COURSE_ADDITIONS = {
    2: ["fsync", "escrita atômica", "cena de execução"],
    4: ["registro de intenção", "recibo", "chave de idempotência"],
    5: ["linha do tempo"],
    6: ["lease", "fencing token", "status da execução", "migração de checkpoint",
        "tentativas de recuperação", "SIGKILL"],
    7: ["armazenamento", "modo WAL", "transação", "gatilho", "outbox transacional", "SKIP LOCKED"],
}


def real_terms():
    return load_glossary(REPO / "glossary.yaml")


def titles_marked(source: str) -> list[str]:
    """Definitions carried by our marks in a text, in order (unescaped)."""
    return [html.unescape(m.group(0).split('title="', 1)[1].split('"', 1)[0]) for m in MARK.finditer(source)]


def marked_texts(source: str) -> list[str]:
    return [m.group(1) for m in MARK.finditer(source)]


# --------------------------------------------------------------------- schema

def load_entries(tmp_path: Path, entries: list[dict]) -> list:
    return load_glossary(write_glossary(tmp_path, entries))


def schema_problems(tmp_path: Path, entries: list[dict] | None = None, text: str | None = None) -> list[str]:
    path = tmp_path / "glossary.yaml"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    else:
        write_glossary(tmp_path, entries)
    with pytest.raises(GlossaryError) as info:
        load_glossary(path)
    return info.value.problems


def test_schema_accepts_a_valid_glossary(tmp_path):
    terms = load_entries(tmp_path, [entry("chamada órfã", 3, aliases=["chamadas órfãs"]), entry("retomada", 3)])
    assert [t.term for t in terms] == ["chamada órfã", "retomada"]
    assert terms[0].forms == ("chamada órfã", "chamadas órfãs")
    assert terms[0].source_url == "https://example.org/fonte"


def test_schema_refuses_duplicate_terms_ignoring_case_and_accents(tmp_path):
    problems = schema_problems(tmp_path, [entry("chamada órfã", 3), entry("Chamada Orfa", 3)])
    assert problems == [
        'glossary.yaml, entrada 2 ("Chamada Orfa"): campo "term" repete "Chamada Orfa", que já aparece '
        'como "chamada órfã" no termo "chamada órfã" (maiúsculas e acentos não diferenciam).'
    ]


def test_schema_refuses_an_alias_that_repeats_another_term(tmp_path):
    problems = schema_problems(tmp_path, [
        entry("checkpoint", 2, aliases=["checkpoints"]),
        entry("sequência", 5, aliases=["Checkpoints"]),
    ])
    assert len(problems) == 1
    assert 'entrada 2 ("sequência"): campo "aliases" repete "Checkpoints"' in problems[0]
    assert 'no termo "checkpoint"' in problems[0]


def test_schema_refuses_an_empty_definition(tmp_path):
    problems = schema_problems(tmp_path, [entry("retomada", 3, definition="   ")])
    assert problems == ['glossary.yaml, entrada 1 ("retomada"): campo "definition" está vazio.']


def test_schema_refuses_unknown_keys(tmp_path):
    bad = entry("retomada", 3)
    bad["defintion"] = "erro de digitação"
    bad["source"]["autor"] = "alguém"
    problems = schema_problems(tmp_path, [bad])
    assert 'glossary.yaml, entrada 1 ("retomada"): campo desconhecido "defintion"' in problems[0]
    assert 'campo desconhecido "source.autor"' in problems[1]


def test_schema_refuses_a_missing_or_incomplete_source(tmp_path):
    no_source = entry("retomada", 3)
    del no_source["source"]
    no_url = entry("reconcile", 3)
    del no_url["source"]["url"]
    bad_url = entry("is_error", 3)
    bad_url["source"]["url"] = "docs.python.org"
    problems = schema_problems(tmp_path, [no_source, no_url, bad_url])
    assert problems == [
        'glossary.yaml, entrada 1 ("retomada"): falta o campo obrigatório "source".',
        'glossary.yaml, entrada 2 ("reconcile"): campo "source.url" falta ou está vazio.',
        'glossary.yaml, entrada 3 ("is_error"): campo "source.url" não é um endereço http(s) válido: docs.python.org',
    ]


@pytest.mark.parametrize("lesson", [0, 8, "3", True, None])
def test_schema_refuses_a_bad_lesson_number(tmp_path, lesson):
    problems = schema_problems(tmp_path, [entry("retomada", lesson)])
    assert problems == [
        f'glossary.yaml, entrada 1 ("retomada"): campo "lesson" deve ser um número de 1 a 7 (7 é o apêndice), não {lesson!r}.'
    ]


def test_schema_refuses_a_term_that_is_not_text(tmp_path):
    problems = schema_problems(tmp_path, text="terms:\n- term: 137\n  definition: x\n  lesson: 6\n"
                                              "  source: {title: t, url: 'https://a.b/c'}\n")
    assert problems == [
        'glossary.yaml, entrada 1: campo "term" deve ser um texto não vazio (números vão entre aspas, ex.: "137").'
    ]


def test_schema_refuses_a_key_repeated_in_one_entry(tmp_path):
    text = ("terms:\n- term: retomada\n  definition: uma\n  definition: outra\n  lesson: 3\n"
            "  source: {title: t, url: 'https://a.b/c'}\n")
    problems = schema_problems(tmp_path, text=text)
    assert len(problems) == 1
    assert problems[0].startswith("glossary.yaml: YAML inválido (linha 4")
    assert 'chave "definition" repetida no mesmo bloco (linhas 3 e 4)' in problems[0]


def test_schema_reports_broken_yaml_and_a_missing_file(tmp_path):
    assert schema_problems(tmp_path, text="terms: [\n")[0].startswith("glossary.yaml: YAML inválido (linha")
    with pytest.raises(GlossaryError, match="arquivo não encontrado"):
        load_glossary(tmp_path / "nada" / "glossary.yaml")
    assert schema_problems(tmp_path, text="termos: []\n") == [
        'glossary.yaml: o arquivo deve ter uma chave "terms" com a lista de termos.'
    ]


def test_schema_refuses_a_repeated_reference_term(tmp_path):
    problems = schema_problems(tmp_path, [
        entry("save_checkpoint", 2, reference_term="saveCheckpoint"),
        entry("salvar", 2, reference_term="saveCheckpoint"),
    ])
    assert problems == [
        'glossary.yaml, entrada 2 ("salvar"): campo "reference_term" repete "saveCheckpoint", '
        'já usado no termo "save_checkpoint".'
    ]


def test_schema_reports_every_problem_at_once(tmp_path):
    problems = schema_problems(tmp_path, [entry("a", 9), entry("b", 1, definition=""), "solto"])
    assert len(problems) == 3
    assert [p.split(":")[0] for p in problems] == [
        'glossary.yaml, entrada 1 ("a")', 'glossary.yaml, entrada 2 ("b")', "glossary.yaml, entrada 3"]



def test_the_entry_schema_is_json_schema_and_names_every_field_in_portuguese():
    from jsonschema import Draft202012Validator

    from authoring.glossary_schema import ENTRY_SCHEMA, ENTRY_KEYS, schema_messages

    Draft202012Validator.check_schema(ENTRY_SCHEMA)
    assert list(ENTRY_SCHEMA["properties"]) == list(ENTRY_KEYS)
    for key, field in ENTRY_SCHEMA["properties"].items():
        assert field["x-mensagens"]["*"], key
    # Every field wrong at once: one message each, in the order an author reads them.
    assert schema_messages({"term": 1, "definition": " ", "aliases": ["a", ""], "source": {"url": "x", "autor": 1},
                            "lesson": 9, "reference_term": "", "extra": 1}) == [
        'campo desconhecido "extra" (aceitos: term, aliases, definition, source, lesson, reference_term, coined).',
        'campo "term" deve ser um texto não vazio (números vão entre aspas, ex.: "137").',
        'campo "definition" está vazio.',
        'campo "aliases", item 2, deve ser um texto não vazio.',
        'campo desconhecido "source.autor" (aceitos: title, url).',
        'campo "source.title" falta ou está vazio.',
        'campo "source.url" não é um endereço http(s) válido: x',
        'campo "lesson" deve ser um número de 1 a 7 (7 é o apêndice), não 9.',
        'campo "reference_term" deve ser um texto não vazio.',
    ]

# ------------------------------------------------------ the real glossary.yaml

def test_real_glossary_covers_the_60_reference_terms_in_their_lessons():
    terms = real_terms()
    by_reference = {t.reference_term: t for t in terms if t.reference_term}
    expected = {name for names in REFERENCE_TERMS_BY_LESSON.values() for name in names}
    assert len(expected) == 60
    assert set(by_reference) == expected
    for lesson, names in REFERENCE_TERMS_BY_LESSON.items():
        for name in names:
            term = by_reference[name]
            assert term.lesson == lesson, (name, term.lesson)
            assert term.term == PYTHON_NAMES.get(name, name)


def test_real_glossary_has_the_course_additions_in_their_lessons():
    lesson_of = {t.term: t.lesson for t in real_terms() if t.reference_term is None}
    assert lesson_of == {name: lesson for lesson, names in COURSE_ADDITIONS.items() for name in names}


def test_real_glossary_definitions_fit_this_course():
    terms = {t.term: t for t in real_terms()}
    assert "lista" in terms["pending_tool_use"].definition and "None" in terms["pending_tool_use"].definition
    assert "fail closed" in terms["load_effects"].definition
    assert 'open(path, "w")' in terms["sobrescrever no lugar"].definition
    for term in terms.values():
        assert term.source_url.startswith("https://"), term.term
        assert "Sync" not in term.definition and "JSON.parse" not in term.definition, term.term


# -------------------------------------------------------------- marking rules

SMALL = [
    entry("chamada órfã", 3, "Um tool_use sem tool_result.", aliases=["chamadas órfãs"]),
    entry("ponto de gravação A", 2, "Salvamento depois da resposta."),
    entry("ponto", 2, "Um lugar."),
    entry("save_checkpoint", 2, "Grava o estado."),
    entry("checkpoint", 2, "Estado em disco.", aliases=["checkpoints"]),
    entry("checkpoint.json", 2, "O arquivo."),
    entry("retomada", 3, "Recomeçar de onde parou."),
]


def small_marker(entries=SMALL) -> Marker:
    return Marker(parse_glossary({"terms": entries}))


def mark(*sources: str, entries=SMALL) -> list[str]:
    return small_marker(entries).mark_cells(list(sources)).sources


def test_only_the_first_occurrence_is_marked():
    (out,) = mark("A chamada órfã aparece. Outra chamada órfã não é marcada.")
    assert out == ('A <abbr class="glossario" title="Um tool_use sem tool_result.">chamada órfã</abbr> aparece. '
                   "Outra chamada órfã não é marcada.")


def test_first_occurrence_is_counted_across_cells():
    first, second = mark("Sem o termo aqui.", "Aqui: retomada. E de novo, retomada.")
    assert first == "Sem o termo aqui."
    assert marked_texts(second) == ["retomada"]
    assert second.count("retomada") == 2


def test_longest_term_wins_and_the_short_one_waits_for_its_own_use():
    (out,) = mark("No ponto de gravação A salvamos. Depois, em outro ponto, seguimos.")
    assert marked_texts(out) == ["ponto de gravação A", "ponto"]
    assert titles_marked(out) == ["Salvamento depois da resposta.", "Um lugar."]
    assert "outro <abbr" in out


def test_dotted_names_are_whole_words():
    (out,) = mark("O checkpoint.json.tmp some; o checkpoint.json fica; o checkpoint é ele.")
    assert marked_texts(out) == ["checkpoint.json", "checkpoint"]
    assert out.startswith("O checkpoint.json.tmp some")


def test_never_inside_code():
    source = "\n".join([
        "```python",
        "chamada órfã = 1",
        "```",
        "",
        "    retomada indentada é código",
        "",
        "Trecho `x = chamada órfã` e ~~~ fora.",
        "",
        "Agora sim a chamada órfã e a retomada.",
    ])
    (out,) = mark(source)
    assert marked_texts(out) == ["chamada órfã", "retomada"]
    assert out.startswith("```python\nchamada órfã = 1\n```\n\n    retomada indentada é código")
    assert "`x = chamada órfã`" in out


def test_never_in_headings():
    source = "# A chamada órfã\n\nRetomada\n========\n\nTexto com chamada órfã e retomada."
    (out,) = mark(source)
    assert out.startswith("# A chamada órfã\n\nRetomada\n========\n")
    assert marked_texts(out) == ["chamada órfã", "retomada"]


def test_never_inside_the_sources_section():
    # A source title may contain a term ("Task Queues", "Retomada ..."); it is a title, not prose.
    sources = "## Fontes\n\n1. A retomada em filas — Site — https://exemplo.org/a\n2. Chamada órfã — Site — https://exemplo.org/b"
    (out,) = mark(sources)
    assert out == sources
    # After the section ends (a heading of the same level), marking resumes.
    (out,) = mark(sources + "\n\n## Depois\n\nA retomada e a chamada órfã.")
    assert marked_texts(out) == ["retomada", "chamada órfã"] and out.startswith(sources)
    # A deeper heading stays inside the section.
    (out,) = mark("## Fontes\n\n### Livros\n\n1. Retomada — Site — https://exemplo.org/c")
    assert marked_texts(out) == []
    # Nor a code span that is a term, inside a source title.
    (out,) = mark("## Fontes\n\n1. A função `save_checkpoint` — Site — https://exemplo.org/d")
    assert marked_texts(out) == []


def test_never_in_links_urls_or_existing_html():
    source = ("[a chamada órfã](https://exemplo.org/retomada) e ![retomada](img.png) e "
              "<b>chamada órfã</b> e <span title=\"retomada\">x</span> e https://exemplo.org/retomada "
              "e <abbr title=\"minha\">retomada</abbr>.\n\n<div>\nchamada órfã em bloco HTML\n</div>\n\n"
              "Fora de tudo: chamada órfã, retomada.")
    (out,) = mark(source)
    assert marked_texts(out) == ["chamada órfã", "retomada"]
    untouched = source.split("Fora de tudo")[0]
    assert out.startswith(untouched)


def test_inline_code_holding_exactly_the_term_is_wrapped_whole():
    (out,) = mark("Chame `save_checkpoint(state, path)`; a função `save_checkpoint` grava.")
    assert out == ('Chame `save_checkpoint(state, path)`; a função '
                   '<abbr class="glossario" title="Grava o estado.">`save_checkpoint`</abbr> grava.')


def test_prose_ignores_case_but_code_names_do_not():
    (out,) = mark("Chamada Órfã no início. SAVE_CHECKPOINT não é o nome; save_checkpoint é.")
    assert marked_texts(out) == ["Chamada Órfã", "save_checkpoint"]


def test_a_one_letter_capital_is_part_of_the_name():
    entries = [entry("ponto de gravação A", 2, "Antes."), entry("ponto B", 2, "Depois do resultado.")]
    (out,) = mark("Em que ponto a execução está? E o Ponto de gravação A?", entries=entries)
    assert marked_texts(out) == ["Ponto de gravação A"]
    (out,) = mark("Depois, o ponto b não conta; o ponto B conta.", entries=entries)
    assert marked_texts(out) == ["ponto B"]


def test_accents_must_match_in_either_unicode_form():
    decomposed = unicodedata.normalize("NFD", "chamada órfã")
    assert decomposed != "chamada órfã"
    (out,) = mark(f"Sem acento: chamada orfa. Decomposta: {decomposed}.")
    assert marked_texts(out) == [decomposed]
    assert "chamada orfa." in out


def test_aliases_are_marked_with_the_term_definition_as_written():
    (out,) = mark("Duas chamadas órfãs e uma chamada órfã.")
    assert marked_texts(out) == ["chamadas órfãs"]
    assert titles_marked(out) == ["Um tool_use sem tool_result."]


def test_a_term_split_across_lines_is_found():
    (out,) = mark("a chamada\nórfã continua")
    assert marked_texts(out) == ["chamada\nórfã"]


def test_word_boundaries_hold():
    (out,) = mark("retomadas, pontos e retomada.")
    assert marked_texts(out) == ["retomada"]


def test_marking_twice_changes_nothing():
    once = mark("A retomada trata a chamada órfã.", "O `save_checkpoint` e o ponto.")
    assert mark(*once) == once


def test_a_changed_definition_updates_every_mark():
    old = mark("A retomada e a chamada órfã.")
    new_entries = [dict(e, definition="Nova definição.") if e["term"] == "retomada" else e for e in SMALL]
    (out,) = mark(*old, entries=new_entries)
    assert titles_marked(out) == ["Nova definição.", "Um tool_use sem tool_result."]


def test_a_removed_term_loses_its_mark():
    old = mark("A retomada e a chamada órfã.")
    (out,) = mark(*old, entries=[e for e in SMALL if e["term"] != "retomada"])
    assert marked_texts(out) == ["chamada órfã"]
    assert "A retomada e a" in out


def test_title_attribute_is_escaped():
    definition = 'Usa "aspas", <tags>, R$ 5 & | barras \\ e `crases`.'
    attribute = title_attribute(definition)
    assert '"' not in attribute and "<" not in attribute and "$" not in attribute and "`" not in attribute
    assert "|" not in attribute
    assert html.unescape(attribute) == definition
    (out,) = mark("A retomada.", entries=[entry("retomada", 3, definition)])
    assert titles_marked(out) == [definition]


# ------------------------------------------------------------ notebooks on disk

def project(tmp_path: Path, entries: list[dict], lessons: dict[str, nbformat.NotebookNode]) -> Path:
    write_glossary(tmp_path, entries)
    for name, nb in lessons.items():
        write_notebook(tmp_path / "lessons" / name, nb)
    return tmp_path


def test_apply_keeps_everything_but_markdown_sources_byte_stable(tmp_path):
    nb = notebook([("md", "# Lição 3\n\nA chamada órfã."), ("code", "print('chamada órfã')"),
                   ("md", "Sobre a retomada.")])
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="chamada órfã\n")]
    nb.cells[1].execution_count = 7
    nb.cells[1].metadata = {"tags": ["raises-exception"]}
    root = project(tmp_path, SMALL, {"03-retomando.ipynb": nb})
    path = root / "lessons" / "03-retomando.ipynb"
    before = json.loads(path.read_text(encoding="utf-8"))

    apply_glossary(root)
    text = path.read_text(encoding="utf-8")
    after = json.loads(text)
    assert text.endswith("}\n") and text.startswith('{\n "cells": [\n  {\n')
    assert text == notebook_text(nbformat.reads(text, as_version=4))
    assert after["metadata"] == before["metadata"] and after["nbformat_minor"] == before["nbformat_minor"]
    assert after["cells"][1] == before["cells"][1]
    for cell_before, cell_after in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in cell_before.items() if k != "source"} == \
               {k: v for k, v in cell_after.items() if k != "source"}
    assert marked_texts("".join(after["cells"][0]["source"])) == ["chamada órfã"]
    assert marked_texts("".join(after["cells"][2]["source"])) == ["retomada"]


def test_apply_twice_writes_nothing_the_second_time(tmp_path):
    root = project(tmp_path, SMALL, {"03-retomando.ipynb": lesson_three_notebook()})
    _, written = apply_glossary(root)
    assert {p.name for p in written} == {"03-retomando.ipynb", "glossario.ipynb"}
    snapshot = {p: p.read_bytes() for p in (root / "lessons").iterdir()}
    _, written_again = apply_glossary(root)
    assert written_again == []
    assert {p: p.read_bytes() for p in (root / "lessons").iterdir()} == snapshot


def test_each_lesson_gets_one_link_to_the_glossary_page(tmp_path):
    own_link = notebook([("md", "# Lição 2\n\nVeja o [glossário](glossario.ipynb#checkpoint)."),
                         ("md", "O checkpoint.")])
    root = project(tmp_path, SMALL, {"03-retomando.ipynb": lesson_three_notebook(), "02-ckpt.ipynb": own_link})
    apply_glossary(root)
    apply_glossary(root)
    three = read_notebook(root / "lessons" / "03-retomando.ipynb")
    assert three.cells[0].source.endswith("\n\n" + GLOSSARY_LINK)
    assert sum(c.source.count("glossario.ipynb") for c in three.cells if c.cell_type == "markdown") == 1
    two = read_notebook(root / "lessons" / "02-ckpt.ipynb")
    assert GLOSSARY_LINK not in two.cells[0].source


def test_glossary_page_lists_every_term_with_definition_source_and_lessons(tmp_path):
    lessons = {"03-retomando.ipynb": lesson_three_notebook(),
               "02-ckpt.ipynb": notebook([("md", "# Lição 2: Checkpoint\n\nO checkpoint.json e a retomada.")])}
    root = project(tmp_path, SMALL, lessons)
    apply_glossary(root)
    page = read_notebook(root / "lessons" / "glossario.ipynb")
    assert page.metadata == course_kernel_metadata()  # what JupyterLab writes: opening it changes nothing
    text = "\n".join(cell.source for cell in page.cells)
    for e in SMALL:
        assert e["definition"] in text
    assert text.count("https://example.org/fonte") == len(SMALL)
    retomada = text.split("### retomada", 1)[1]
    assert "Usado em: [Lição 2](02-ckpt.ipynb), [Lição 3](03-retomando.ipynb)" in retomada
    ponto = text.split("### ponto\n", 1)[1]
    assert "Usado em: ainda em nenhuma lição" in ponto.split("###")[0]
    assert "## Lição 2: Checkpoint" in text and "## Lição 3: Retomando de um checkpoint" in text


def test_cli_glossary_writes_and_check_flag_reports(tmp_path, capsys):
    root = project(tmp_path, SMALL, {"03-retomando.ipynb": lesson_three_notebook()})
    assert cli.main(["--root", str(root), "glossary", "--check"]) == 1
    assert not (root / "lessons" / "glossario.ipynb").exists()
    assert cli.main(["--root", str(root), "glossary"]) == 0
    out = capsys.readouterr().out
    assert "gravado: lessons/03-retomando.ipynb" in out and "gravado: lessons/glossario.ipynb" in out


def test_cli_glossary_refuses_a_broken_yaml_without_writing(tmp_path, capsys):
    root = project(tmp_path, [entry("retomada", 3), entry("Retomada", 3)], {"03-r.ipynb": lesson_three_notebook()})
    before = (root / "lessons" / "03-r.ipynb").read_bytes()
    assert cli.main(["--root", str(root), "glossary"]) == 1
    assert "nada foi gravado" in capsys.readouterr().out
    assert (root / "lessons" / "03-r.ipynb").read_bytes() == before


# --------------------------------------------------------------- check_problems

TWO_LESSONS = [
    entry("retomada", 3, "Recomeçar de onde parou."),
    entry("chamada órfã", 3, "Um tool_use sem tool_result.", aliases=["chamadas órfãs"]),
    entry("checkpoint", 2, "Estado em disco."),
]


def two_lesson_project(tmp_path: Path) -> Path:
    return project(tmp_path, TWO_LESSONS, {
        "02-ckpt.ipynb": notebook([("md", "# Lição 2\n\nO checkpoint guarda o estado.")]),
        "03-retomando.ipynb": lesson_three_notebook(),
    })


def test_check_is_clean_once_the_glossary_is_applied(tmp_path):
    root = two_lesson_project(tmp_path)
    assert check_problems(root) != []
    apply_glossary(root)
    assert check_problems(root) == []


def test_check_reports_a_lesson_out_of_sync(tmp_path):
    root = two_lesson_project(tmp_path)
    apply_glossary(root)
    path = root / "lessons" / "03-retomando.ipynb"
    nb = read_notebook(path)
    nb.cells[0].source = "Antes de tudo, a retomada.\n\n" + nb.cells[0].source
    path.write_text(notebook_text(nb), encoding="utf-8")
    assert check_problems(root) == [
        'lessons/03-retomando.ipynb: fora de sincronia com glossary.yaml (marcas ou link do glossário '
        'a atualizar); rode "course glossary".'
    ]


def test_check_reports_a_definition_change(tmp_path):
    root = two_lesson_project(tmp_path)
    apply_glossary(root)
    write_glossary(root, [dict(TWO_LESSONS[0], definition="Outra."), *TWO_LESSONS[1:]])
    problems = check_problems(root)
    assert problems[0].startswith("lessons/03-retomando.ipynb: fora de sincronia")
    assert problems[1].startswith("lessons/glossario.ipynb: desatualizada")


def test_check_reports_a_term_never_used(tmp_path):
    root = two_lesson_project(tmp_path)
    write_glossary(root, TWO_LESSONS + [entry("idempotente", 2)])
    apply_glossary(root)
    assert check_problems(root) == [
        'glossary.yaml: o termo "idempotente" está definido mas não é usado em nenhuma lição.',
        'lessons/02-ckpt.ipynb: deveria apresentar o termo "idempotente" (glossary.yaml diz lesson: 2), '
        "mas o texto da lição não o usa.",
    ]


def test_check_reports_a_term_missing_from_its_introducing_lesson(tmp_path):
    root = two_lesson_project(tmp_path)
    # "checkpoint" is used by lesson 3 only once it is said to belong to lesson 2 and lesson 2 drops it.
    write_notebook(root / "lessons" / "02-ckpt.ipynb", notebook([("md", "# Lição 2\n\nNada aqui.")]))
    apply_glossary(root)
    assert check_problems(root) == [
        'lessons/02-ckpt.ipynb: deveria apresentar o termo "checkpoint" (glossary.yaml diz lesson: 2), '
        "mas o texto da lição não o usa."
    ]


def test_check_reports_a_missing_lesson_and_a_missing_page(tmp_path):
    root = two_lesson_project(tmp_path)
    (root / "lessons" / "02-ckpt.ipynb").unlink()
    problems = check_problems(root)
    assert ("lessons/: não existe a lição 2 (02-*.ipynb), que deveria apresentar 1 termo de "
            "glossary.yaml: checkpoint.") in problems
    assert not any("não é usado" in problem for problem in problems)  # lesson 3 still uses it
    assert 'lessons/glossario.ipynb: a página do glossário não existe; rode "course glossary".' in problems


def test_check_reports_schema_errors(tmp_path):
    root = two_lesson_project(tmp_path)
    write_glossary(root, [entry("retomada", 3, definition="")])
    assert check_problems(root) == ['glossary.yaml, entrada 1 ("retomada"): campo "definition" está vazio.']


def test_check_reports_an_unreadable_lesson(tmp_path):
    root = two_lesson_project(tmp_path)
    apply_glossary(root)
    (root / "lessons" / "04-quebrada.ipynb").write_text("{ isto não é json", encoding="utf-8")
    problems = check_problems(root)
    assert problems[0].startswith("lessons/04-quebrada.ipynb: não é um notebook válido")


# --------------------------------------------------------------------- course site

def site_definition(page: str, inner: str) -> str | None:
    """The definition a site term shows: the tooltip its button is described by (site_terms)."""
    button = re.search(r'<button type="button" class="termo-botao" aria-describedby="([^"]+)">' + inner + "</button>", page)
    if not button:
        return None
    tooltip = re.search(r'<span class="termo-def" role="tooltip" id="' + button.group(1) + r'">(.*?)</span>', page)
    return html.unescape(tooltip.group(1)) if tooltip else None


def test_a_coined_name_says_so_on_hover_and_on_the_glossary_page(tmp_path):
    coined = {**entry("ponto de gravação B", 3, "O checkpoint gravado depois dos resultados."), "coined": True}
    root = project(tmp_path, SMALL + [coined], {"03-retomando.ipynb": notebook([
        ("md", "# Lição 3: Retomando\n\nO ponto de gravação B e a chamada órfã.")])})
    apply_glossary(root)
    text = read_notebook(root / "lessons" / "03-retomando.ipynb").cells[0].source
    assert 'title="O checkpoint gravado depois dos resultados. (Nome dado por este curso; a fonte citada trata ' \
           'da ideia, não do nome.)">ponto de gravação B</abbr>' in text
    assert 'title="Um tool_use sem tool_result.">chamada órfã</abbr>' in text  # not coined: no note
    page = "\n".join(cell.source for cell in read_notebook(root / "lessons" / "glossario.ipynb").cells)
    assert page.count("(o nome é deste curso; a fonte trata da ideia)") == 1


def test_coined_must_be_true_or_false(tmp_path):
    path = write_glossary(tmp_path, [{**entry("recibo", 4, "O registro."), "coined": "sim"}])
    with pytest.raises(GlossaryError) as raised:
        load_glossary(path)
    assert any('"coined"' in problem and "deve ser true ou false" in problem for problem in raised.value.problems)


def test_site_exports_lessons_with_hover_definitions_and_an_index(tmp_path):
    lesson = lesson_three_notebook()
    lesson.cells.append(nbformat.v4.new_markdown_cell("Perigo: <script>alert('x')</script> fim.", id="md-9"))
    root = project(tmp_path, SMALL + [entry("reconcile", 3, 'Fecha as "órfãs".'),
                                      entry("tool_result", 1, "Resultado.")],
                   {"03-retomando.ipynb": lesson})
    out = tmp_path / "site"
    written = build_site(root, out)
    assert [p.name for p in written] == ["03-retomando.html", "glossario.html", "index.html"]
    page = (out / "03-retomando.html").read_text(encoding="utf-8")
    assert site_definition(page, "chamada órfã") == "Um tool_use sem tool_result."
    assert site_definition(page, r"\s*<code>reconcile</code>\s*") == 'Fecha as "órfãs".'

    assert 'href="glossario.html"' in page and 'glossario.ipynb"' not in page
    assert '<html lang="pt">' in page
    # Sanitized, yet paragraphs and headings are real tags, not escaped text.
    assert re.search(r'<h1 id="[^"]+">Lição 3: Retomando de um checkpoint', page)
    assert "&lt;p&gt;" not in page and "&lt;h1" not in page
    assert "alert(" not in page and "<p>Perigo:  fim.</p>" in page  # a script goes, tag and content
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="03-retomando.html">Lição 3: Retomando de um checkpoint</a>' in index
    assert 'href="glossario.html"' in index
    glossary_page = (out / "glossario.html").read_text(encoding="utf-8")
    assert 'href="03-retomando.html"' in glossary_page


@pytest.mark.slow
def test_executed_site_carries_the_lessons_outputs(tmp_path):
    lesson = lesson_three_notebook()
    lesson.cells.append(nbformat.v4.new_code_cell(
        "from IPython.display import HTML\nHTML('<table class=\"saida\"><tr><td>1 e-mail</td></tr></table>')",
        id="code-9"))
    failing = nbformat.v4.new_code_cell("raise RuntimeError('de propósito')", id="code-10")
    failing.metadata["tags"] = ["raises-exception"]
    lesson.cells.append(failing)
    root = project(tmp_path, SMALL, {"03-retomando.ipynb": lesson})
    build_site(root, tmp_path / "site", execute=True)
    page = (tmp_path / "site" / "03-retomando.html").read_text(encoding="utf-8")
    assert '<table class="saida"><tr><td>1 e-mail</td></tr></table>' in page  # the output, not escaped text
    assert "RuntimeError" in page and "de propósito" in page  # a tagged error stays as the cell's output
    assert site_definition(page, "chamada órfã") == "Um tool_use sem tool_result."
    assert not (root / "lessons" / ".ipynb_checkpoints").exists()


def test_executed_site_stops_on_an_unexpected_error(tmp_path, capsys):
    from authoring.cli import main

    lesson = lesson_three_notebook()
    lesson.cells.append(nbformat.v4.new_code_cell("1 / 0", id="code-9"))
    root = project(tmp_path, SMALL, {"03-retomando.ipynb": lesson})
    assert main(["--root", str(root), "site", "--execute", "--out", str(tmp_path / "site")]) == 1
    assert "uma lição falhou ao executar" in capsys.readouterr().out


# ------------------------------------------------------------- the real lessons

def real_lessons() -> list[Path]:
    return lesson_paths(REPO)


@pytest.mark.slow
def test_real_lessons_mark_each_term_at_most_once():
    paths = real_lessons()
    if not paths:
        pytest.skip("lessons/ has no NN-*.ipynb lesson yet")
    marker = Marker(real_terms())
    for path in paths:
        on_disk = read_notebook(path)
        marked, _ = mark_lesson(on_disk, marker)
        for nb, label in ((on_disk, "on disk"), (marked, "after course glossary")):
            counts = Counter(t for c in nb.cells if c.cell_type == "markdown" for t in titles_marked(c.source))
            repeated = {title[:40]: n for title, n in counts.items() if n > 1}
            assert not repeated, f"{path.name} ({label}) marks a term more than once: {repeated}"


@pytest.mark.slow
def test_every_term_is_marked_in_the_real_lessons():
    paths = real_lessons()
    if len(paths) < 6:
        pytest.skip(f"only {len(paths)} of the 6 lessons exist in lessons/; coverage is checked once all six do")
    plan = build_plan(REPO)
    stale = [lesson.path.name for lesson in plan.lessons if lesson.changed]
    assert not stale, f"lessons out of sync with glossary.yaml (run `course glossary`): {stale}"
    definitions = {t.hover_text: t for t in plan.terms}
    marked_in: dict[str, set[int]] = {t.term: set() for t in plan.terms}
    for lesson in plan.lessons:
        for cell in lesson.original.cells:
            if cell.cell_type == "markdown":
                for title in titles_marked(cell.source):
                    marked_in[definitions[title].term].add(lesson.number)
    never = [name for name, lessons in marked_in.items() if not lessons]
    assert not never, f"terms marked in no lesson: {never}"
    not_introduced = [t.term for t in plan.terms if t.lesson not in marked_in[t.term]]
    assert not not_introduced, f"terms not marked in the lesson that introduces them: {not_introduced}"
    page = (REPO / "lessons" / "glossario.ipynb").read_text(encoding="utf-8")
    assert page == plan.page_text, "lessons/glossario.ipynb is stale (run `course glossary`)"


def test_two_appendices_get_links_that_read_differently():
    from authoring.glossary_page import LessonInfo, short_label
    one = {6: LessonInfo(6, "06-a.ipynb", "Lição 6 — A última"), 7: LessonInfo(7, "07-b.ipynb", "Apêndice — Bancos")}
    assert [short_label(n, one) for n in one] == ["Lição 6", "Apêndice"]
    two = {**one, 8: LessonInfo(8, "08-c.ipynb", "Apêndice — O lado do modelo")}
    assert [short_label(n, two) for n in two] == ["Lição 6", "Apêndice 1", "Apêndice 2"]
