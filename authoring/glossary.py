"""`course glossary`: mark glossary terms in the lessons and write the glossary page.

Also provides `check_problems(root)` for `course check`: lessons out of sync with
glossary.yaml, terms never used, terms missing from the lesson that introduces
them, a stale glossary page, and schema errors.

A lesson is rewritten only when one of its markdown sources changes, with the
repository's notebook formatting (nbformat: indent 1, UTF-8 kept, trailing newline),
so code cells, outputs and metadata keep their exact bytes.
"""
from __future__ import annotations

import argparse
import copy
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from authoring.glossary_marker import MARK, Marker, strip_marks
from authoring.glossary_page import PAGE_NAME, LessonInfo, build_page
from authoring.glossary_schema import GlossaryError, Term, load_glossary
from grader.core.atomic_write import write_atomic
from grader.core.plural import quantity

GLOSSARY_FILE = "glossary.yaml"
LESSONS_DIR = "lessons"
LESSON_GLOB = "[0-9][0-9]-*.ipynb"
GLOSSARY_LINK = (
    "*Termos com sublinhado pontilhado mostram a definição quando você passa o mouse; "
    f"todos estão no [glossário do curso]({PAGE_NAME}).*"
)
_HAS_GLOSSARY_LINK = re.compile(r"\]\(\s*(?:\./)?%s(?:#[^)]*)?\s*\)" % re.escape(PAGE_NAME))
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def notebook_text(notebook: nbformat.NotebookNode) -> str:
    text = nbformat.writes(notebook)
    return text if text.endswith("\n") else text + "\n"


def read_notebook(path: Path) -> nbformat.NotebookNode:
    try:
        return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except (json.JSONDecodeError, UnicodeDecodeError, nbformat.reader.NotJSONError) as exc:
        raise ValueError(f"{path.parent.name}/{path.name}: não é um notebook válido ({exc}).") from None


def lesson_paths(root: Path) -> list[Path]:
    folder = Path(root) / LESSONS_DIR
    return sorted(folder.glob(LESSON_GLOB)) if folder.is_dir() else []


def lesson_title(notebook: nbformat.NotebookNode, fallback: str) -> str:
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            match = _HEADING.search(strip_marks(cell.source))
            if match:
                return re.sub(r"[*_`]", "", match.group(1)).strip()
    return fallback


def ensure_glossary_link(notebook: nbformat.NotebookNode) -> None:
    """Add the link to the glossary page to the first markdown cell, unless a link exists."""
    markdown = [cell for cell in notebook.cells if cell.cell_type == "markdown"]
    if any(_HAS_GLOSSARY_LINK.search(cell.source) for cell in markdown):
        return
    if markdown:
        first = markdown[0]
        first.source = first.source.rstrip() + "\n\n" + GLOSSARY_LINK
    else:
        notebook.cells.insert(0, nbformat.v4.new_markdown_cell(GLOSSARY_LINK, id="glossario-link"))


@dataclass
class LessonPlan:
    path: Path
    number: int
    original: nbformat.NotebookNode
    marked: nbformat.NotebookNode
    terms: list[str]  # terms marked in this lesson, in yaml order

    @property
    def changed(self) -> bool:
        before = [(c.cell_type, c.source) for c in self.original.cells]
        after = [(c.cell_type, c.source) for c in self.marked.cells]
        return before != after


def mark_lesson(notebook: nbformat.NotebookNode, marker: Marker) -> tuple[nbformat.NotebookNode, list[str]]:
    """A marked copy of the notebook and the terms marked in it."""
    marked = copy.deepcopy(notebook)
    ensure_glossary_link(marked)
    cells = [cell for cell in marked.cells if cell.cell_type == "markdown"]
    result = marker.mark_cells([cell.source for cell in cells])
    for cell, source in zip(cells, result.sources):
        cell.source = source
    order = [term.term for term in marker.terms if term.term in result.marked]
    return marked, order


@dataclass
class Plan:
    terms: list[Term]
    lessons: list[LessonPlan] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    page_path: Path | None = None
    page_text: str = ""

    def usage(self) -> dict[str, list[int]]:
        used: dict[str, list[int]] = defaultdict(list)
        for lesson in self.lessons:
            for name in lesson.terms:
                used[name].append(lesson.number)
        return used


def build_plan(root: Path) -> Plan:
    """Everything `course glossary` would write, computed without touching disk."""
    root = Path(root)
    terms = load_glossary(root / GLOSSARY_FILE)
    marker = Marker(terms)
    plan = Plan(terms=terms)
    infos: dict[int, LessonInfo] = {}
    for path in lesson_paths(root):
        try:
            original = read_notebook(path)
        except ValueError as exc:
            plan.unreadable.append(str(exc))
            continue
        marked, names = mark_lesson(original, marker)
        number = int(path.name[:2])
        plan.lessons.append(LessonPlan(path, number, original, marked, names))
        infos.setdefault(number, LessonInfo(number, path.name, lesson_title(marked, f"Lição {number}")))
    plan.page_path = root / LESSONS_DIR / PAGE_NAME
    plan.page_text = notebook_text(build_page(terms, plan.usage(), infos))
    return plan


def apply_glossary(root: Path) -> tuple[Plan, list[Path]]:
    """Write the marked lessons that changed and the glossary page; return what was written."""
    plan = build_plan(root)
    written: list[Path] = []
    for lesson in plan.lessons:
        if lesson.changed:
            write_atomic(lesson.path, notebook_text(lesson.marked))
            written.append(lesson.path)
    page = plan.page_path
    if not page.exists() or page.read_text(encoding="utf-8") != plan.page_text:
        page.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(page, plan.page_text)
        written.append(page)
    return plan, written


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def check_problems(root: Path) -> list[str]:
    """Portuguese problem strings, each naming the file and the term; [] when all is in sync."""
    root = Path(root)
    try:
        plan = build_plan(root)
    except GlossaryError as exc:
        return exc.problems
    problems = list(plan.unreadable)
    for lesson in plan.lessons:
        if lesson.changed:
            problems.append(
                f'{_relative(lesson.path, root)}: fora de sincronia com {GLOSSARY_FILE} '
                f'(marcas ou link do glossário a atualizar); rode "course glossary".'
            )
    by_number: dict[int, list[LessonPlan]] = defaultdict(list)
    for lesson in plan.lessons:
        by_number[lesson.number].append(lesson)
    for number, same in sorted(by_number.items()):
        if len(same) > 1:
            names = ", ".join(_relative(lesson.path, root) for lesson in same)
            problems.append(f"{LESSONS_DIR}/: mais de um arquivo para a lição {number}: {names}.")
    usage = plan.usage()
    missing_lessons: dict[int, list[str]] = defaultdict(list)
    for term in plan.terms:
        if not usage.get(term.term):
            problems.append(f'{GLOSSARY_FILE}: o termo "{term.term}" está definido mas não é usado em nenhuma lição.')
        introducing = by_number.get(term.lesson)
        if not introducing:
            missing_lessons[term.lesson].append(term.term)
        elif term.term not in introducing[0].terms:
            problems.append(
                f'{_relative(introducing[0].path, root)}: deveria apresentar o termo "{term.term}" '
                f"({GLOSSARY_FILE} diz lesson: {term.lesson}), mas o texto da lição não o usa."
            )
    for number, names in sorted(missing_lessons.items()):
        problems.append(
            f"{LESSONS_DIR}/: não existe a lição {number} ({number:02d}-*.ipynb), que deveria apresentar "
            f"{quantity(len(names), 'termo', 'termos')} de {GLOSSARY_FILE}: {', '.join(names)}."
        )
    page = plan.page_path
    page_name = _relative(page, root)
    if not page.exists():
        problems.append(f'{page_name}: a página do glossário não existe; rode "course glossary".')
    elif page.read_text(encoding="utf-8") != plan.page_text:
        problems.append(f'{page_name}: desatualizada em relação a {GLOSSARY_FILE} e às lições; rode "course glossary".')
    return problems


def count_marks(notebook: nbformat.NotebookNode) -> int:
    return sum(len(MARK.findall(cell.source)) for cell in notebook.cells if cell.cell_type == "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check", action="store_true",
        help="só verifica: lista o que mudaria e sai com código 1, sem gravar nada",
    )


def run(args: argparse.Namespace) -> int:
    root = Path(args.root)
    if args.check:
        problems = check_problems(root)
        for problem in problems:
            print(f"  - {problem}")
        print("glossário: tudo em dia." if not problems else f"glossário: {quantity(len(problems), 'problema', 'problemas')}.")
        return 1 if problems else 0
    try:
        plan, written = apply_glossary(root)
    except GlossaryError as exc:
        print(f"course glossary: {GLOSSARY_FILE} tem {quantity(len(exc.problems), 'problema', 'problemas')}; nada foi gravado.")
        for problem in exc.problems:
            print(f"  - {problem}")
        return 1
    for message in plan.unreadable:
        print(f"  - ignorado: {message}")
    marks = sum(count_marks(lesson.marked) for lesson in plan.lessons)
    print(f"course glossary: {len(plan.terms)} termos, {quantity(len(plan.lessons), 'lição', 'lições')}, {quantity(marks, 'marca', 'marcas')}.")
    for path in written:
        print(f"  gravado: {_relative(path, root)}")
    if not written:
        print("  nada mudou.")
    return 1 if plan.unreadable else 0
