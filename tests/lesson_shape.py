"""Read a lesson notebook's sections and list where it departs from the shared shape.

The shape is written for authors in docs/autoria-das-licoes.md: a title cell, then
"Objetivos" (a numbered list of outcomes, each led by a verb), "Pré-requisitos", the
body, "Recapitulação", "Exercícios" (levels with their completion criteria as lists,
and how to grade) and "Fontes" (numbered, each with a URL, every one cited, every
citation listed, no glossary mark inside), in that order. In the body, every section
that shows code says why before its first code cell, code cells never pile up more
than two in a row, and a cell that fails on purpose is announced right before it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import nbformat

from authoring.glossary_marker import strip_marks
from authoring.glossary_page import COURSE_TITLE
from authoring.markdown_regions import FENCE, HEADING_TEXT

LESSON_COUNT = 6
APPENDIX_NUMBERS = (7, 8)  # after the six lessons: the same shape, without exercises (no grader)
OPENING = ["Objetivos", "Pré-requisitos"]
CLOSING = ["Recapitulação", "Exercícios", "Fontes"]
APPENDIX_CLOSING = ["Recapitulação", "Fontes"]
CRITERIA = "**Critérios de conclusão**"
MIN_WHY_WORDS = 40  # prose before the lesson's first code cell
MIN_SECTION_WHY_WORDS = 12  # prose between a section's heading and its first code cell
MAX_CODE_RUN = 2  # code cells in a row before some prose must come between them
FAILS_TAG = "raises-exception"
# What the cell right before a failing cell must say (markdown emphasis and marks aside).
WARNING = re.compile(r"\bfalh(?:a|am|ar)\b[^.:;]{0,40}\bde propósito\b", re.I)
# An objective starts with a verb in the infinitive (pôr, fazer, explicar, medir...).
_OBJECTIVE = re.compile(r"^\d+\. \*{0,2}([a-zà-ú]+(?:ar|er|ir|or|ôr))\b")
MIN_OBJECTIVE_WORDS = 5

_NUMBERED = re.compile(r"^\d+\. ")
_BULLET = re.compile(r"^[-*] ")
_SOURCE = re.compile(r"^(\d+)\. (.+ — .+)$")
_CITATION = re.compile(r"\[(\d+)\](?!\()")
_MARK = re.compile(r'<abbr class="glossario"')
_CODE_SPAN = re.compile(r"`[^`]*`")
_WORD = re.compile(r"\w+")


@dataclass
class Section:
    level: int
    title: str
    cell: int
    first_in_cell: bool
    lines: list[str] = field(default_factory=list)  # body lines (code fences included), down to the next peer heading


@dataclass
class Lesson:
    number: int
    cells: list[tuple[str, str]]  # (cell_type, source with glossary marks removed)
    sections: list[Section]
    raw: list[str] = field(default_factory=list)  # sources as stored, marks included
    tags: list[list[str]] = field(default_factory=list)


def read_lesson(notebook: nbformat.NotebookNode, number: int) -> Lesson:
    cells = [(cell.cell_type, strip_marks(cell.source) if cell.cell_type == "markdown" else cell.source)
             for cell in notebook.cells]
    sections: list[Section] = []
    for index, (kind, source) in enumerate(cells):
        if kind != "markdown":
            continue
        in_fence, seen_text = False, False
        for line in source.splitlines():
            if FENCE.match(line):
                in_fence = not in_fence
            heading = None if in_fence else HEADING_TEXT.match(line)
            if heading:
                level = len(heading.group(1))
                sections.append(Section(level, heading.group(2).strip(), index, not seen_text))
            else:
                for section in sections:
                    if section.cell <= index and not _closed(section, sections):
                        section.lines.append(line)
            if line.strip():
                seen_text = True
    return Lesson(number, cells, sections, raw=[cell.source for cell in notebook.cells],
                  tags=[list(cell.get("metadata", {}).get("tags", [])) for cell in notebook.cells])


def _closed(section: Section, sections: list[Section]) -> bool:
    """True once a later heading of the same or a higher level has started."""
    later = sections[sections.index(section) + 1:]
    return any(other.level <= section.level for other in later)


def _h2(lesson: Lesson, title: str) -> Section | None:
    return next((s for s in lesson.sections if s.level == 2 and s.title == title), None)


def _subsections(lesson: Lesson, parent: Section) -> list[Section]:
    start = lesson.sections.index(parent) + 1
    found = []
    for section in lesson.sections[start:]:
        if section.level <= parent.level:
            break
        if section.level == parent.level + 1:
            found.append(section)
    return found


def shape_problems(notebook: nbformat.NotebookNode, number: int) -> list[str]:
    """Every departure from the shared shape, in reading order; [] for a lesson in shape."""
    lesson = read_lesson(notebook, number)
    problems = _title_problems(lesson)
    h2 = [section.title for section in lesson.sections if section.level == 2]
    if h2[:2] != OPENING:
        problems.append(f"as primeiras seções ## devem ser {OPENING}, são {h2[:2]}")
    closing = APPENDIX_CLOSING if number in APPENDIX_NUMBERS else CLOSING
    if h2[-len(closing):] != closing:
        problems.append(f"as últimas seções ## devem ser {closing}, são {h2[-len(closing):]}")
    if len(h2) < len(OPENING) + len(closing) + 1:
        problems.append("falta o corpo: nenhuma seção ## entre Pré-requisitos e Recapitulação")
    problems += _opening_problems(lesson)
    problems += _why_problems(lesson)
    problems += _section_why_problems(lesson)
    problems += _code_run_problems(lesson)
    problems += _failing_cell_problems(lesson)
    problems += _closing_problems(lesson)
    return problems


def _title_problems(lesson: Lesson) -> list[str]:
    n = lesson.number
    if not lesson.cells or lesson.cells[0][0] != "markdown":
        return ["a primeira célula deve ser a célula de título, em markdown"]
    source = lesson.cells[0][1]
    first = next((line for line in source.splitlines() if line.strip()), "")
    if n in APPENDIX_NUMBERS:
        return _appendix_title_problems(source, first, n)
    problems = []
    if not re.fullmatch(rf"# Lição {n} — \S.*", first.strip()):
        problems.append(f"a célula de título deve começar com '# Lição {n} — ...', começa com {first!r}")
    if f"*{COURSE_TITLE}* · Lição {n} de {LESSON_COUNT}" not in source:
        problems.append("a célula de título não tem a linha do curso (título em itálico · Lição N de 6)")
    if n > 1 and f"]({n - 1:02d}-" not in source:
        problems.append("a célula de título não tem o link para a lição anterior")
    if n < LESSON_COUNT and f"]({n + 1:02d}-" not in source:
        problems.append("a célula de título não tem o link para a próxima lição")
    if n == LESSON_COUNT and f"](../exercises/exercise-{n}.ipynb)" not in source:
        problems.append("a célula de título da última lição não aponta para os exercícios")
    if any(HEADING_TEXT.match(line) and not line.startswith("# ") for line in source.splitlines()):
        problems.append("a célula de título só tem o título '#': objetivos e pré-requisitos são seções próprias")
    return problems


def _appendix_title_problems(source: str, first: str, n: int) -> list[str]:
    problems = []
    if not re.fullmatch(r"# Apêndice — \S.*", first.strip()):
        problems.append(f"a célula de título do apêndice deve começar com '# Apêndice — ...', começa com {first!r}")
    if f"*{COURSE_TITLE}* · Apêndice" not in source:
        problems.append("a célula de título não tem a linha do curso (título em itálico · Apêndice)")
    if f"]({n - 1:02d}-" not in source:  # the first appendix follows the last lesson, the next one an appendix
        before = "a última lição" if n - 1 == LESSON_COUNT else "o apêndice anterior"
        problems.append(f"a célula de título do apêndice não tem o link para {before}")
    if any(HEADING_TEXT.match(line) and not line.startswith("# ") for line in source.splitlines()):
        problems.append("a célula de título só tem o título '#': objetivos e pré-requisitos são seções próprias")
    return problems


def _opening_problems(lesson: Lesson) -> list[str]:
    problems = []
    objectives = _h2(lesson, "Objetivos")
    if objectives and sum(bool(_NUMBERED.match(line)) for line in objectives.lines) < 3:
        problems.append("'Objetivos' deve ser uma lista numerada (pelo menos 3 itens)")
    for line in (objectives.lines if objectives else []):
        if not _NUMBERED.match(line):
            continue
        if not _OBJECTIVE.match(line) or len(_WORD.findall(line)) - 1 < MIN_OBJECTIVE_WORDS:
            problems.append(f"objetivo sem verbo no começo ou curto demais (diga o que o aluno consegue fazer): "
                            f"{line.strip()[:60]!r}")
    prerequisites = _h2(lesson, "Pré-requisitos")
    if prerequisites and not any(_BULLET.match(line) for line in prerequisites.lines):
        problems.append("'Pré-requisitos' deve ser uma lista")
    return problems


def _why_problems(lesson: Lesson) -> list[str]:
    """The why before the how: prose before the first code cell, beyond objectives and prerequisites."""
    first_code = next((i for i, (kind, _) in enumerate(lesson.cells) if kind == "code"), len(lesson.cells))
    words = 0
    for kind, source in lesson.cells[:first_code]:
        if kind != "markdown":
            continue
        skipping = False
        for line in source.splitlines():
            heading = HEADING_TEXT.match(line)
            if heading:
                skipping = len(heading.group(1)) == 2 and heading.group(2).strip() in OPENING
                continue
            if skipping or _is_furniture(line):
                continue
            words += len(_WORD.findall(_CODE_SPAN.sub(" ", line)))
    if words < MIN_WHY_WORDS:
        return [f"o porquê vem antes do como: só {words} palavras de motivação antes da primeira célula de código"]
    return []


def _prose_words(line: str) -> int:
    """Words of a prose line, code spans and citation numbers aside."""
    return len(_WORD.findall(_CITATION.sub(" ", _CODE_SPAN.sub(" ", line))))


def _section_why_problems(lesson: Lesson) -> list[str]:
    """Every body section (## or ###) that shows code says something before its first code cell."""
    problems = []
    title, words, code_seen = None, 0, False
    for kind, source in lesson.cells:
        if kind == "code":
            if title is not None and not code_seen and words < MIN_SECTION_WHY_WORDS:
                problems.append(f"o porquê vem antes do como: a seção {title!r} só tem {words} palavras "
                                f"de texto antes da primeira célula de código")
            code_seen = True
            continue
        in_fence = False
        for line in source.splitlines():
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            heading = None if in_fence else HEADING_TEXT.match(line)
            if heading and len(heading.group(1)) >= 2:
                title, words, code_seen = heading.group(2).strip(), 0, False
            elif not in_fence and not _is_furniture(line):
                words += _prose_words(line)
    return problems


def _code_run_problems(lesson: Lesson) -> list[str]:
    problems, run = [], []
    for index, (kind, _) in enumerate(lesson.cells + [("markdown", "")]):
        if kind == "code":
            run.append(index)
            continue
        if len(run) > MAX_CODE_RUN:
            problems.append(f"células {run[0]} a {run[-1]}: {_count_words(len(run))} células de código seguidas, "
                            "sem texto entre elas; diga o que cada uma mostra")
        run = []
    return problems


def _count_words(n: int) -> str:
    return {3: "três", 4: "quatro", 5: "cinco"}.get(n, str(n))


def _failing_cell_problems(lesson: Lesson) -> list[str]:
    """A cell tagged raises-exception is announced by the markdown cell right before it."""
    problems = []
    for index, tags in enumerate(lesson.tags):
        if FAILS_TAG not in tags:
            continue
        before = lesson.cells[index - 1] if index else ("code", "")
        if before[0] != "markdown" or not WARNING.search(before[1].replace("*", "").replace("_", "")):
            problems.append(f"célula {index} ({FAILS_TAG}): a célula de texto logo antes dela deve avisar "
                            "que ela falha de propósito")
    return problems


def _is_furniture(line: str) -> bool:
    """The title cell's course line, navigation and glossary hint: not motivation."""
    return COURSE_TITLE in line or "Anterior" in line or "glossário do curso" in line


def _closing_problems(lesson: Lesson) -> list[str]:
    n = lesson.number
    problems = []
    for title in (APPENDIX_CLOSING if n in APPENDIX_NUMBERS else CLOSING):
        section = _h2(lesson, title)
        if section is not None and not section.first_in_cell:
            problems.append(f"'{title}' deve começar a sua própria célula")
    recap = _h2(lesson, "Recapitulação")
    if recap and sum(bool(_BULLET.match(line)) for line in recap.lines) < 3:
        problems.append("'Recapitulação' deve ser uma lista (pelo menos 3 itens)")
    exercises = _h2(lesson, "Exercícios")
    if exercises:
        problems += _exercise_problems(lesson, exercises)
    everything = "\n".join(source for _, source in lesson.cells)
    if "notebook_api" in everything:  # the old grader.notebook_api and its home, grader.student.notebook_api
        problems.append("use 'from grader import check', não o módulo interno notebook_api")
    sources = _h2(lesson, "Fontes")
    if sources:
        if _MARK.search(lesson.raw[sources.cell]):
            problems.append("'Fontes' tem uma marca do glossário: títulos de fontes não levam definições")
        if sources.cell != len(lesson.cells) - 1:
            problems.append("'Fontes' deve ser a última célula da lição")
        problems += _source_problems(lesson, sources)
    return problems


def _exercise_problems(lesson: Lesson, exercises: Section) -> list[str]:
    n = lesson.number
    text = "\n".join(exercises.lines)
    problems = []
    link = f"[`exercises/exercise-{n}.ipynb`](../exercises/exercise-{n}.ipynb)"
    if f"../exercises/exercise-{n}.ipynb" not in text:
        problems.append(f"'Exercícios' deve apontar para ../exercises/exercise-{n}.ipynb")
    elif link not in text:
        problems.append(f"'Exercícios': o texto do link deve ser o caminho a partir da pasta do curso: {link}")
    subsections = _subsections(lesson, exercises)
    levels = [s for s in subsections if s.title.startswith("Nível ")]
    if not levels:
        problems.append("'Exercícios' deve ter um '### Nível K — ...' por nível")
    for level in levels:
        lines = [line for line in level.lines if line.strip()]
        positions = [i for i, line in enumerate(lines) if line.strip() == CRITERIA]
        if not positions or positions[0] + 1 >= len(lines) or not _BULLET.match(lines[positions[0] + 1]):
            problems.append(f"'{level.title}': falta '{CRITERIA}' seguido de uma lista")
    if "Critérios de conclusão:*" in text:
        problems.append("critérios de conclusão em itálico corrido: use a linha em negrito e uma lista")
    how = next((s for s in subsections if s.title == "Como corrigir"), None)
    if how is None:
        problems.append("'Exercícios' deve terminar com '### Como corrigir'")
    else:
        if subsections[-1] is not how:
            problems.append("'### Como corrigir' deve vir depois dos níveis")
        how_text = "\n".join(how.lines)
        for needed in (f"grade exercise-{n} --level", "from grader import check", f"grade hint exercise-{n}"):
            if needed not in how_text:
                problems.append(f"'Como corrigir' deve mostrar `{needed}`")
    return problems


def _source_problems(lesson: Lesson, sources: Section) -> list[str]:
    problems = []
    numbers = []
    for line in (line.strip() for line in sources.lines if line.strip()):
        match = _SOURCE.match(line)
        if not match:
            problems.append(f"fonte fora do formato 'N. Título — Site — URL': {line[:60]!r}")
            continue
        numbers.append(int(match.group(1)))
        if not re.search(r"https?://\S+$", line):
            problems.append(f"a fonte {match.group(1)} não tem URL (toda fonte é pública: título, site e endereço)")
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"as fontes devem ser numeradas 1..N em ordem, são {numbers}")
    cited: set[int] = set()
    for index, (kind, source) in enumerate(lesson.cells):
        if kind != "markdown" or index == sources.cell:
            continue
        in_fence = False
        for line in source.splitlines():
            if FENCE.match(line):
                in_fence = not in_fence
            elif not in_fence:
                cited.update(int(k) for k in _CITATION.findall(_CODE_SPAN.sub(" ", line)))
    listed = set(numbers)
    if cited - listed:
        problems.append(f"citações sem fonte na lista: {sorted(cited - listed)}")
    if listed - cited:
        problems.append(f"fontes nunca citadas no texto: {sorted(listed - cited)}")
    return problems
