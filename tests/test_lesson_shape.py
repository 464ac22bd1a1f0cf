"""Every lesson follows the shape in docs/autoria-das-licoes.md, sections in order.

The checker is first shown to catch each departure on a small synthetic lesson (so a
lesson passing it means something), then run on the six lessons.
"""
from __future__ import annotations

import nbformat
import pytest

from authoring.glossary_page import COURSE_TITLE
from tests.glossary_fixtures import notebook
from tests.lesson_code import lesson_paths
from tests.lesson_shape import shape_problems

TITLE = f"""# Lição 2 — Um título

*{COURSE_TITLE}* · Lição 2 de 6

[← Anterior: Lição 1 — Outra](01-outra.ipynb) · [Próxima: Lição 3 — Mais uma →](03-mais.ipynb)

Uma tarefa longa morre no meio do caminho e leva junto tudo o que o processo segurava na memória: a conversa,
os contadores e o ponto em que estava. Esta lição mostra por que isso custa caro e o que gravar para não perder
o trabalho feito até ali, antes de escrever qualquer linha de código que resolva o problema."""
OPENING_CELL = """## Objetivos

Ao terminar esta lição, você vai conseguir:

1. fazer uma coisa que dá para conferir;
2. escrever outra coisa com o código da lição;
3. explicar uma terceira ideia com as próprias palavras.

## Pré-requisitos

- A lição 1."""
BODY = "## 1. O corpo\n\nUm texto que diz por que a célula abaixo importa, citando uma fonte [1] e outra [2]."
RECAP = "## Recapitulação\n\n- uma ideia;\n- outra ideia;\n- mais uma."
EXERCISES = """## Exercícios

Abra [`exercises/exercise-2.ipynb`](../exercises/exercise-2.ipynb).

### Nível 1 — Escreva algo

Escreva uma função.

**Critérios de conclusão**
- Ela funciona.

### Como corrigir

```
grade exercise-2 --level 1
```

Dentro do notebook: `from grader import check; check("exercise-2", level=1)`. Dicas: `grade hint exercise-2`."""
SOURCES = """## Fontes

1. Um título — Um site — https://example.org/um
2. Outro título — Outro site — https://example.org/dois"""


def lesson(*cells):
    """Markdown cells, "CODE:..." code cells and "FAILS:..." code cells tagged raises-exception."""
    built = notebook([("md" if not source.startswith(("CODE:", "FAILS:")) else "code",
                       source.removeprefix("CODE:").removeprefix("FAILS:")) for source in cells])
    for cell, source in zip(built.cells, cells):
        if source.startswith("FAILS:"):
            cell.metadata["tags"] = ["raises-exception"]
    return built


def good_cells():
    return [TITLE, OPENING_CELL, BODY, "CODE:x = 1", RECAP, EXERCISES, SOURCES]


def problems_with(**changes):
    cells = good_cells()
    for index, new in changes.get("replace", {}).items():
        cells[index] = new
    return shape_problems(lesson(*cells), 2)


def test_the_synthetic_lesson_is_in_shape():
    assert shape_problems(lesson(*good_cells()), 2) == []


def test_objectives_inside_the_title_cell_are_caught():
    title = TITLE + "\n\n**Objetivos.** Ao final você vai saber:\n\n1. uma coisa;\n2. outra;\n3. mais."
    found = problems_with(replace={0: title, 1: "## Pré-requisitos\n\n- A lição 1."})
    assert any("primeiras seções" in p for p in found)


def test_a_heading_inside_the_title_cell_is_caught():
    found = problems_with(replace={0: TITLE + "\n\n### Objetivos de aprendizagem\n\n1. um\n2. dois\n3. três"})
    assert any("só tem o título" in p for p in found)


def test_objectives_that_are_not_a_list_are_caught():
    found = problems_with(replace={1: OPENING_CELL.replace("1. fazer", "fazer").replace("2. ", "").replace("3. ", "")})
    assert any("lista numerada" in p for p in found)


def test_objectives_written_as_topics_are_caught():
    topics = OPENING_CELL.replace("1. fazer uma coisa que dá para conferir;", "1. Checkpoints.").replace(
        "2. escrever outra coisa com o código da lição;", "2. Chamadas órfãs e o que fazer com elas.").replace(
        "3. explicar uma terceira ideia com as próprias palavras.", "3. Retomada.")
    found = problems_with(replace={1: topics})
    assert sum("verbo" in p for p in found) == 3, found
    short = OPENING_CELL.replace("1. fazer uma coisa que dá para conferir;", "1. entender.")
    assert any("verbo" in p for p in problems_with(replace={1: short}))


def test_recap_exercises_and_sources_packed_in_one_cell_are_caught():
    cells = [TITLE, OPENING_CELL, BODY, "CODE:x = 1", BODY.replace("1. O corpo", "2. Git") + "\n\n" + RECAP
             + "\n\n" + EXERCISES + "\n\n" + SOURCES]
    found = shape_problems(lesson(*cells), 2)
    assert any("'Recapitulação' deve começar a sua própria célula" in p for p in found)
    assert any("'Exercícios' deve começar a sua própria célula" in p for p in found)


def test_criteria_in_running_italics_are_caught():
    italic = EXERCISES.replace("**Critérios de conclusão**\n- Ela funciona.", "*Critérios de conclusão:* ela funciona.")
    found = problems_with(replace={5: italic})
    assert any("falta '**Critérios de conclusão**'" in p for p in found)
    assert any("itálico" in p for p in found)


def test_the_old_check_import_and_a_missing_grade_command_are_caught():
    for inner_path in ("grader.notebook_api", "grader.student.notebook_api"):
        old_import = EXERCISES.replace("from grader import check", f"from {inner_path} import check")
        found = problems_with(replace={5: old_import})
        assert any("notebook_api" in p for p in found), inner_path
    no_command = EXERCISES.replace("grade exercise-2 --level 1", "rode o corretor")
    assert any("grade exercise-2 --level" in p for p in problems_with(replace={5: no_command}))


def test_the_exercise_link_reads_as_the_path_from_the_course_folder():
    # One way to name the notebook in every lesson: the path a student sees from the course folder.
    other_text = EXERCISES.replace("[`exercises/exercise-2.ipynb`]", "[`../exercises/exercise-2.ipynb`]")
    assert any("exercises/exercise-2.ipynb" in p and "texto do link" in p for p in problems_with(replace={5: other_text}))


def test_sources_and_citations_must_match():
    uncited = problems_with(replace={2: "## 1. O corpo\n\nSó cita a primeira [1]."})
    assert any("nunca citadas" in p and "[2]" in p for p in uncited)
    dangling = problems_with(replace={2: BODY + " E uma que não existe [7]."})
    assert any("sem fonte" in p and "[7]" in p for p in dangling)
    no_url = problems_with(replace={6: SOURCES.replace(" — https://example.org/dois", " — sem endereço")})
    assert any("não tem URL" in p for p in no_url)
    # No kind of source is exempt: a reading handed out privately is not a public source.
    private = SOURCES.replace("2. Outro título — Outro site — https://example.org/dois",
                              "2. Um PDF que circulou — leitura de referência do curso (sem endereço público)")
    assert any("fonte 2 não tem URL" in p for p in problems_with(replace={6: private}))


def test_a_glossary_mark_inside_the_sources_is_caught():
    marked = SOURCES.replace("Um título", '<abbr class="glossario" title="Uma definição.">Um</abbr> título')
    assert any("marca do glossário" in p for p in problems_with(replace={6: marked}))


def test_code_before_any_motivation_is_caught():
    title_only = TITLE.split("\n\nUma tarefa longa")[0]
    cells = [title_only, OPENING_CELL, "CODE:x = 1", BODY, RECAP, EXERCISES, SOURCES]
    assert any("porquê" in p for p in shape_problems(lesson(*cells), 2))


def test_a_later_section_with_code_and_no_prose_is_caught():
    # Only the first section explains itself; the next one is a heading, a citation and code.
    cells = [TITLE, OPENING_CELL, BODY, "CODE:x = 1", "## 2. Outra parte\n\nVeja [1] e [2].", "CODE:y = 2",
             RECAP, EXERCISES, SOURCES]
    found = shape_problems(lesson(*cells), 2)
    assert any("'2. Outra parte'" in p and "porquê" in p for p in found), found
    explained = cells[:4] + ["## 2. Outra parte\n\nAgora a mesma conta com um arquivo de verdade, para ver o "
                             "custo da gravação crescer a cada turno [1][2]."] + cells[5:]
    assert shape_problems(lesson(*explained), 2) == []


def test_code_cells_piling_up_without_prose_are_caught():
    body = [BODY.replace("Um texto", "Um texto longo o bastante para explicar o que vem a seguir e por quê;"),
            "CODE:a = 1", "CODE:b = 2", "CODE:c = 3"]
    cells = [TITLE, OPENING_CELL, *body, RECAP, EXERCISES, SOURCES]
    assert any("três células de código seguidas" in p for p in shape_problems(lesson(*cells), 2))
    cells.insert(5, "E agora a conta que fecha a seção.")
    assert shape_problems(lesson(*cells), 2) == []


def test_a_failing_cell_needs_a_warning_right_before_it():
    cells = good_cells()
    cells[3:4] = ["CODE:x = 1", "FAILS:1 / 0"]
    found = shape_problems(lesson(*cells), 2)
    assert any("raises-exception" in p for p in found), found
    # A warning two cells up does not count: the reader meets it before another cell that runs fine.
    cells[3:3] = ["A célula abaixo falha de propósito:"]
    assert any("raises-exception" in p for p in shape_problems(lesson(*cells), 2))
    cells[3:5] = ["CODE:x = 1", "E a próxima **falha de propósito**, com o erro da seção anterior:"]
    assert shape_problems(lesson(*cells), 2) == []


def test_sources_must_close_the_lesson():
    cells = good_cells() + ["Uma célula depois das fontes."]
    assert any("última célula" in p for p in shape_problems(lesson(*cells), 2))


APPENDIX_TITLE = f"""# Apêndice — Um título

*{COURSE_TITLE}* · Apêndice, depois da lição 6

[← Anterior: Lição 6 — A última](06-ultima.ipynb)

Uma execução longa gravada em arquivos reescreve a conversa inteira a cada turno e só coordena workers de uma
máquina. Este apêndice mede esse custo e mostra o passo para um banco de dados antes de qualquer código, com o
porquê de cada mudança explicado antes de ela aparecer."""


def test_the_appendix_has_its_own_title_and_no_exercises():
    cells = [TITLE.replace("# Lição 2", "# Apêndice").replace("Lição 2 de 6", "Apêndice"), OPENING_CELL, BODY,
             RECAP, SOURCES]
    good = [APPENDIX_TITLE, OPENING_CELL, BODY, RECAP, SOURCES]
    assert shape_problems(lesson(*good), 7) == []
    assert any("o link para a última lição" in p for p in shape_problems(lesson(*cells), 7))
    assert any("Recapitulação', 'Exercícios', 'Fontes'" in p
               for p in shape_problems(lesson(*good), 2))  # a lesson still needs its exercises


@pytest.mark.parametrize("path", lesson_paths(), ids=lambda p: p.stem)
def test_lesson_follows_the_shared_shape(path):
    number = int(path.name[:2])
    problems = shape_problems(nbformat.read(path, as_version=4), number)
    assert not problems, f"{path.name}:\n  - " + "\n  - ".join(problems)


def test_the_second_appendix_links_back_to_the_first():
    second = APPENDIX_TITLE.replace("Apêndice, depois da lição 6", "Apêndice, depois do apêndice de armazenamentos")
    linked = second.replace("[← Anterior: Lição 6 — A última](06-ultima.ipynb)",
                            "[← Anterior: Apêndice — Armazenamentos](07-apendice-armazenamentos.ipynb)")
    good = [linked, OPENING_CELL, BODY, RECAP, SOURCES]
    assert shape_problems(lesson(*good), 8) == []
    # Linked only to the last lesson, it skips the appendix the reader comes from.
    found = shape_problems(lesson(second, OPENING_CELL, BODY, RECAP, SOURCES), 8)
    assert any("o link para o apêndice anterior" in p for p in found), found
    # An appendix needs no exercises, and gets no grader section.
    assert any("Recapitulação', 'Fontes'" in p for p in shape_problems(lesson(*good[:3], SOURCES), 8))
