"""Build the glossary page (lessons/glossario.ipynb) from the yaml and the lessons.

Tooltips do not exist on touch screens, so every definition is also listed here,
grouped by the lesson that introduces it, with its source and the lessons that use
it. The notebook is fully derived (fixed cell ids, no outputs), so regenerating it
from the same inputs gives the same bytes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import nbformat

from authoring.glossary_marker import is_code_name
from authoring.glossary_schema import Term
from authoring.notebook_metadata import course_kernel_metadata

PAGE_NAME = "glossario.ipynb"
COURSE_TITLE = "Gerenciamento e persistência de estado: fazendo tarefas longas sobreviverem à interrupção"
_MARKDOWN_SPECIALS = re.compile(r"([\\`*$<>|\[\]])")


@dataclass(frozen=True)
class LessonInfo:
    number: int
    file_name: str  # e.g. "03-retomando.ipynb"
    title: str  # e.g. "Lição 3: Retomando de um checkpoint"


def escape_markdown(text: str) -> str:
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)


def heading_text(term: Term) -> str:
    return f"`{term.term}`" if is_code_name(term.term) else escape_markdown(term.term)


def is_appendix_title(title: str) -> bool:
    return title.lower().startswith("apêndice")


def lesson_label(number: int, lessons: dict[int, LessonInfo]) -> str:
    info = lessons.get(number)
    if info is None:
        return f"Lição {number}"
    if re.match(rf"lição\s+{number}\b", info.title, re.IGNORECASE) or is_appendix_title(info.title):
        return info.title
    return f"Lição {number} — {info.title}"


def short_label(number: int, lessons: dict[int, LessonInfo]) -> str:
    """How a link to a lesson reads: "Lição 3"; "Apêndice" for the one appendix after the lessons, or
    "Apêndice 1", "Apêndice 2"... in their order when there are more, so two links never read the same."""
    if not is_appendix_title(lessons[number].title):
        return f"Lição {number}"
    appendices = sorted(n for n, info in lessons.items() if is_appendix_title(info.title))
    return "Apêndice" if len(appendices) == 1 else f"Apêndice {appendices.index(number) + 1}"


def _term_block(term: Term, used_in: Sequence[int], lessons: dict[int, LessonInfo]) -> str:
    lines = [f"### {heading_text(term)}", ""]
    if term.aliases:
        lines += ["Também: " + ", ".join(f"*{escape_markdown(alias)}*" for alias in term.aliases), ""]
    lines += [escape_markdown(term.definition), ""]
    source = f"Fonte: [{escape_markdown(term.source_title)}]({term.source_url})"
    if term.coined:
        source += " (o nome é deste curso; a fonte trata da ideia)"
    if used_in:
        links = ", ".join(f"[{short_label(n, lessons)}]({lessons[n].file_name})" for n in used_in if n in lessons)
        usage = f"Usado em: {links}"
    else:
        usage = "Usado em: ainda em nenhuma lição"
    lines.append(f"{source} · {usage}")
    return "\n".join(lines)


def build_page(terms: Sequence[Term], usage: dict[str, list[int]], lessons: dict[int, LessonInfo]) -> nbformat.NotebookNode:
    """The glossary notebook: an introduction, then one cell per lesson."""
    intro = "\n".join([
        "# Glossário do curso",
        "",
        f"Todos os termos de *{COURSE_TITLE}*, agrupados pela lição que os apresenta. "
        "Nas lições, a primeira ocorrência de cada termo mostra a definição quando você passa "
        "o mouse sobre ela (o termo aparece com sublinhado pontilhado); esta página reúne as "
        "mesmas definições para quem lê numa tela de toque ou quer revisar.",
        "",
        "Cada termo traz a definição escrita para este curso, a fonte pública de onde vêm os "
        "fatos e as lições que o usam. Para um nome que o próprio curso criou (uma função do "
        "harness, um arquivo, um rótulo), a fonte é a página pública do conceito por trás dele; "
        "o nome em si é definido na lição que o apresenta.",
    ])
    cells = [nbformat.v4.new_markdown_cell(intro, id="glossario-intro")]
    for number in sorted({term.lesson for term in terms}):
        blocks = [f"## {escape_markdown(lesson_label(number, lessons))}"]
        for term in terms:
            if term.lesson == number:
                blocks.append(_term_block(term, usage.get(term.term, []), lessons))
        cells.append(nbformat.v4.new_markdown_cell("\n\n".join(blocks), id=f"glossario-licao-{number}"))
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = course_kernel_metadata()
    return notebook
