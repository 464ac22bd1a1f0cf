"""`course build`: generate exercises/exercise-N.ipynb from solutions/exercise-N.ipynb.

The solution notebook is the single source. Its answers sit between markers:

* code cells: ``### BEGIN SOLUTION`` / ``### END SOLUTION`` lines. The block becomes
  ``raise NotImplementedError("Ainda não implementado: ...")`` at the marker's
  indentation, so a function keeps its ``def`` line and docstring. A
  ``### HINT: ...`` line inside the block supplies the hint text. A block made only
  of ``NAME = <literal>`` assignments is a structured answer and becomes
  ``NAME = None  # escolha uma letra`` (or a comment fitting the literal's type).
* markdown cells: ``<!-- BEGIN SOLUTION -->`` / ``<!-- END SOLUTION -->`` lines,
  replaced by a "Sua resposta aqui" placeholder.

Outputs and execution counts are cleared and the bytes are deterministic, so
`course check` can compare a fresh build with what is committed.

Each generated notebook records a digest of every cell's source in its metadata
(``course_build``). A later build compares the file on disk with that record: a cell
someone edited (a student's answer) makes the build refuse, unless ``--force``, which
first copies the file to ``exercise-N-copia-<when>.ipynb`` beside it.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from authoring.notebook_metadata import with_course_kernel

from grader.core.atomic_write import write_atomic
from grader.core.plural import quantity

CODE_BEGIN = "### BEGIN SOLUTION"
CODE_END = "### END SOLUTION"
HINT_PREFIX = "### HINT:"
MARKDOWN_BEGIN = "<!-- BEGIN SOLUTION -->"
MARKDOWN_END = "<!-- END SOLUTION -->"
MARKDOWN_PLACEHOLDER = "_Sua resposta aqui._"
NOT_IMPLEMENTED_PREFIX = "Ainda não implementado: "

SOLUTIONS_DIR = "solutions"
EXERCISES_DIR = "exercises"
NOTEBOOK_NAME = re.compile(r"^exercise-\d+\.ipynb$")

# Anything that looks like a marker but is not exactly one would leak an answer
# into the students' copy, so it is an error rather than plain text.
_MARKER_LIKE = re.compile(r"(BEGIN|END)\s+SOLUTION", re.IGNORECASE)
_DEF_LINE = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)")
# Notebook metadata that belongs to the author's session, not to the exercise.
_SESSION_NOTEBOOK_METADATA = ("widgets",)
_SESSION_CELL_METADATA = ("execution",)
BUILD_RECORD = "course_build"  # notebook metadata: the digest of each cell as the build wrote it
BACKUP_INFIX = "-copia-"
INSTRUCTOR_COMMAND = "comando de instrutor: quem resolve os exercícios nunca precisa dele"


class SolutionMarkerError(ValueError):
    """A solution notebook whose markers cannot be turned into an exercise."""


class EditedExercise(Exception):
    """The exercise on disk holds edits a build would throw away."""


@dataclass(frozen=True)
class BuildOutcome:
    name: str
    target: Path
    changed: bool
    blocks: int
    backup: Path | None = None


# ---------------------------------------------------------------- code cells


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _enclosing_function(lines_before: list[str], indent: int) -> str | None:
    """Name of the `def` whose body holds a line indented by `indent`, if any."""
    current = indent
    for line in reversed(lines_before):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        width = len(_indent_of(line))
        if width < current:
            match = _DEF_LINE.match(line)
            if match:
                return match.group(1)
            current = width
            if width == 0:
                return None
    return None


def _python_literal(text: str) -> str:
    """A readable Python string literal: double quotes unless the text holds one."""
    if not any(char in text for char in '"\\\n'):
        return f'"{text}"'
    return repr(text)


def _structured_comment(value: object) -> str:
    if isinstance(value, bool):
        return "True ou False"
    if isinstance(value, str) and len(value) == 1 and value.isalpha():
        return "escolha uma letra"
    if isinstance(value, str):
        return "escreva sua resposta entre aspas"
    if isinstance(value, (int, float)):
        return "escreva um número"
    if isinstance(value, (set, frozenset)):
        return "um conjunto (set) com as opções escolhidas"
    if isinstance(value, (list, tuple)):
        return "uma lista com sua resposta"
    if isinstance(value, dict):
        return "um dicionário com sua resposta"
    return "sua resposta aqui"


def _structured_answers(body: list[str]) -> list[tuple[str, object]] | None:
    """[(name, literal)] when the block only assigns literals to plain names."""
    source = "\n".join(line.strip() for line in body)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    answers: list[tuple[str, object]] = []
    for statement in tree.body:
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            return None
        try:
            value = ast.literal_eval(statement.value)
        except ValueError:
            return None
        answers.append((statement.targets[0].id, value))
    return answers or None


def _stub_lines(body: list[str], indent: str, hint: str | None, function: str | None) -> list[str]:
    # Structured answers are module-level variables; inside a function a block
    # of assignments is ordinary code and gets the raising stub.
    answers = None if function else _structured_answers(body)
    if answers is not None:
        return [
            f"{indent}{name} = None  # {hint or _structured_comment(value)}"
            for name, value in answers
        ]
    if hint is None:
        hint = (
            f"escreva o corpo de {function}() seguindo o enunciado."
            if function
            else "escreva sua solução nesta célula."
        )
    message = _python_literal(NOT_IMPLEMENTED_PREFIX + hint)
    return [f"{indent}raise NotImplementedError({message})"]


def _marker_error(where: str, line_number: int, problem: str) -> SolutionMarkerError:
    return SolutionMarkerError(f"{where}, linha {line_number}: {problem}")


def replace_code_solutions(source: str, where: str = "célula") -> tuple[str, int]:
    """Replace every marked block of a code cell by its stub; return (code, blocks)."""
    lines = source.split("\n")
    output: list[str] = []
    block: list[str] | None = None
    hint_parts: list[str] = []
    begin_line = 0
    begin_indent = ""
    blocks = 0
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped == CODE_BEGIN:
            if block is not None:
                raise _marker_error(where, number, f"{CODE_BEGIN} dentro de outro bloco aberto na linha {begin_line} (falta {CODE_END}).")
            block, hint_parts = [], []
            begin_line, begin_indent = number, _indent_of(line)
        elif stripped == CODE_END:
            if block is None:
                raise _marker_error(where, number, f"{CODE_END} sem {CODE_BEGIN} antes.")
            function = _enclosing_function(output, len(begin_indent))
            hint = " ".join(hint_parts) or None
            output.extend(_stub_lines(block, begin_indent, hint, function))
            block = None
            blocks += 1
        elif stripped in (MARKDOWN_BEGIN, MARKDOWN_END):
            raise _marker_error(where, number, f"marcador de markdown numa célula de código; aqui use {CODE_BEGIN} / {CODE_END}.")
        elif _MARKER_LIKE.search(line):
            raise _marker_error(where, number, f"marcador malformado {stripped!r}; os marcadores aceitos são exatamente {CODE_BEGIN!r} e {CODE_END!r}, sozinhos na linha.")
        elif block is not None:
            if stripped.startswith(HINT_PREFIX):
                hint_parts.append(stripped[len(HINT_PREFIX):].strip())
            else:
                block.append(line)
        else:
            output.append(line)
    if block is not None:
        raise _marker_error(where, begin_line, f"{CODE_BEGIN} sem {CODE_END} correspondente.")
    return "\n".join(output), blocks


# ------------------------------------------------------------ markdown cells


def replace_markdown_solutions(source: str, where: str = "célula") -> tuple[str, int]:
    """Replace every marked block of a markdown cell by the placeholder."""
    output: list[str] = []
    inside_since = 0
    blocks = 0
    for number, line in enumerate(source.split("\n"), start=1):
        stripped = line.strip()
        if stripped == MARKDOWN_BEGIN:
            if inside_since:
                raise _marker_error(where, number, f"{MARKDOWN_BEGIN} dentro de outro bloco aberto na linha {inside_since}.")
            inside_since = number
        elif stripped == MARKDOWN_END:
            if not inside_since:
                raise _marker_error(where, number, f"{MARKDOWN_END} sem {MARKDOWN_BEGIN} antes.")
            output.append(MARKDOWN_PLACEHOLDER)
            inside_since = 0
            blocks += 1
        elif stripped in (CODE_BEGIN, CODE_END):
            raise _marker_error(where, number, f"marcador de código numa célula markdown; aqui use {MARKDOWN_BEGIN} / {MARKDOWN_END}.")
        elif _MARKER_LIKE.search(line):
            raise _marker_error(where, number, f"marcador malformado {stripped!r}; os marcadores aceitos são exatamente {MARKDOWN_BEGIN!r} e {MARKDOWN_END!r}, sozinhos na linha.")
        elif not inside_since:
            output.append(line)
    if inside_since:
        raise _marker_error(where, inside_since, f"{MARKDOWN_BEGIN} sem {MARKDOWN_END} correspondente.")
    return "\n".join(output), blocks


# ------------------------------------------------------------------ notebooks


def _parses(code: str) -> SyntaxError | None:
    # IPython magics and shell escapes are not Python; blank them before parsing.
    plain = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n"))
    try:
        ast.parse(plain)
    except SyntaxError as error:
        return error
    return None


def _stable_cell_id(notebook_name: str, index: int) -> str:
    return hashlib.sha1(f"{notebook_name}:{index}".encode()).hexdigest()[:8]


def build_exercise_notebook(solution: nbformat.NotebookNode, name: str) -> tuple[nbformat.NotebookNode, int]:
    """The students' notebook for one solution notebook, and how many blocks were replaced."""
    exercise = nbformat.from_dict(json.loads(json.dumps(solution)))
    exercise.nbformat_minor = max(int(exercise.get("nbformat_minor", 0)), 5)
    for key in _SESSION_NOTEBOOK_METADATA:
        exercise.metadata.pop(key, None)
    exercise.metadata = nbformat.from_dict(with_course_kernel(exercise.metadata))
    total = 0
    for index, cell in enumerate(exercise.cells):
        where = f"{SOLUTIONS_DIR}/{name}: célula {index + 1}"
        if not cell.get("id"):
            cell["id"] = _stable_cell_id(name, index)
        for key in _SESSION_CELL_METADATA:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            new_source, blocks = replace_code_solutions(cell.source, where)
            if blocks and _parses(cell.source) is None:
                error = _parses(new_source)
                if error is not None:
                    raise SolutionMarkerError(
                        f"{where}: o código do exercício gerado não é Python válido depois de "
                        f"trocar a solução pelo esboço (linha {error.lineno}: {error.msg}); "
                        "confira a indentação dos marcadores."
                    )
            cell.source = new_source
            cell.outputs = []
            cell.execution_count = None
        elif cell.cell_type == "markdown":
            cell.source, blocks = replace_markdown_solutions(cell.source, where)
        else:
            if _MARKER_LIKE.search(cell.source):
                raise SolutionMarkerError(f"{where}: marcador de solução numa célula raw; use uma célula de código ou markdown.")
            blocks = 0
        total += blocks
    if total == 0:
        raise SolutionMarkerError(
            f"{SOLUTIONS_DIR}/{name}: nenhum marcador de solução ({CODE_BEGIN} ou {MARKDOWN_BEGIN}); "
            "o exercício gerado seria a própria solução."
        )
    exercise.metadata[BUILD_RECORD] = {"cells": cell_digests(exercise)}
    return exercise, total


# ------------------------------------------------------- edits since the build


def cell_digests(notebook: nbformat.NotebookNode) -> list[str]:
    """What identifies each cell's content (its type and source; outputs do not count)."""
    return [hashlib.sha256(f"{cell.cell_type}\0{cell.source}".encode()).hexdigest()[:16] for cell in notebook.cells]


def edits_since_build(target: Path, fresh: nbformat.NotebookNode) -> str | None:
    """How the exercise on disk departs from what the last build wrote, or None when it does not.

    A notebook from before the record is compared with a fresh build instead: any
    difference may be someone's work, so it counts as an edit.
    """
    try:
        on_disk = nbformat.reads(target.read_text(encoding="utf-8"), as_version=4)
    except (OSError, ValueError) as error:  # NotJSONError and UnicodeDecodeError are ValueErrors
        return f"não é um notebook legível ({type(error).__name__}), e pode guardar trabalho de alguém"
    record = on_disk.metadata.get(BUILD_RECORD)
    built = record.get("cells") if isinstance(record, dict) else None
    if not isinstance(built, list):
        built = cell_digests(fresh)
    found = cell_digests(on_disk)
    changed = [number for number, (was, now) in enumerate(zip(built, found), 1) if was != now]
    if len(found) != len(built):
        changed.append(min(len(found), len(built)) + 1)
    if not changed:
        return None
    if len(changed) == 1:
        which = f"a célula {changed[0]} foi editada"
    else:
        listed = ", ".join(str(n) for n in changed[:5]) + (", …" if len(changed) > 5 else "")
        which = f"{quantity(len(changed), 'célula', 'células')} foram editadas ({listed})"
    return f"{which} depois do último `course build` (respostas de um aluno?)"


def backup_path(target: Path) -> Path:
    """exercise-N-copia-<when>.ipynb beside the target, never an existing file."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = target.with_name(f"{target.stem}{BACKUP_INFIX}{stamp}{target.suffix}")
    counter = 2
    while candidate.exists():
        candidate = target.with_name(f"{target.stem}{BACKUP_INFIX}{stamp}-{counter}{target.suffix}")
        counter += 1
    return candidate


def notebook_bytes(notebook: nbformat.NotebookNode) -> bytes:
    """Deterministic serialization: nbformat's indent=1 JSON, UTF-8, trailing newline."""
    text = nbformat.writes(notebook, version=4)
    if not text.endswith("\n"):
        text += "\n"
    return text.encode("utf-8")


def read_solution(path: Path) -> nbformat.NotebookNode:
    try:
        return nbformat.read(str(path), as_version=4)
    except (OSError, ValueError) as error:  # NotJSONError is a ValueError
        raise SolutionMarkerError(f"{SOLUTIONS_DIR}/{path.name}: não é um notebook válido ({error}).") from None


def exercise_for(solution_path: Path) -> tuple[nbformat.NotebookNode, int]:
    return build_exercise_notebook(read_solution(solution_path), solution_path.name)


def exercise_bytes_for(solution_path: Path) -> tuple[bytes, int]:
    exercise, blocks = exercise_for(solution_path)
    return notebook_bytes(exercise), blocks


def solution_paths(root: Path) -> list[Path]:
    folder = Path(root) / SOLUTIONS_DIR
    if not folder.is_dir():
        return []
    paths = [path for path in folder.iterdir() if NOTEBOOK_NAME.match(path.name)]
    return sorted(paths, key=lambda path: int(path.stem.split("-")[1]))


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


def build_one(root: Path, solution_path: Path, force: bool = False) -> BuildOutcome:
    """Write exercises/exercise-N.ipynb; an edited one raises EditedExercise unless ``force``,
    which copies it aside first."""
    exercise, blocks = exercise_for(solution_path)
    data = notebook_bytes(exercise)
    target = Path(root) / EXERCISES_DIR / solution_path.name
    changed = not target.exists() or target.read_bytes() != data
    backup = None
    if changed and target.exists():
        edits = edits_since_build(target, exercise)
        if edits and not force:
            raise EditedExercise(edits)
        if edits:
            backup = backup_path(target)
            _write_atomic(backup, target.read_bytes())
    if changed:
        _write_atomic(target, data)
    return BuildOutcome(solution_path.stem, target, changed, blocks, backup)


# ------------------------------------------------------------------ commands


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "exercises",
        nargs="*",
        metavar="exercise-N",
        help="exercícios a gerar (padrão: todos os que têm solução)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="gera mesmo um exercício editado depois do último build, guardando antes uma cópia dele ao lado",
    )


def run(args: argparse.Namespace) -> int:
    root = Path(args.root)
    available = {path.stem: path for path in solution_paths(root)}
    wanted = list(getattr(args, "exercises", None) or available)
    if not available and not wanted:
        print(f"course build: nenhuma solução em {SOLUTIONS_DIR}/ (esperado: {SOLUTIONS_DIR}/exercise-N.ipynb).")
        return 0
    failures = 0
    for name in wanted:
        path = available.get(name)
        if path is None:
            print(f"course build: {SOLUTIONS_DIR}/{name}.ipynb não existe.")
            failures += 1
            continue
        relative = f"{EXERCISES_DIR}/{path.name}"
        try:
            outcome = build_one(root, path, force=getattr(args, "force", False))
        except SolutionMarkerError as error:
            print(f"course build: erro em {error}")
            failures += 1
            continue
        except EditedExercise as edits:
            print(f"course build: {relative}: {edits}. Nada foi trocado. Para gerar o exercício mesmo assim "
                  f"(uma cópia do arquivo atual fica ao lado), rode `course build --force {name}`.")
            failures += 1
            continue
        if outcome.backup is not None:
            print(f"{relative}: cópia das edições em {EXERCISES_DIR}/{outcome.backup.name}.")
        if outcome.changed:
            print(f"{relative}: gerado a partir de {SOLUTIONS_DIR}/{path.name} ({quantity(outcome.blocks, 'resposta trocada', 'respostas trocadas')} por esboço).")
        else:
            print(f"{relative}: já estava em dia.")
    return 1 if failures else 0


def check_problems(root: Path) -> list[str]:
    """Every way in which exercises/ disagrees with solutions/."""
    root = Path(root)
    problems: list[str] = []
    solutions = solution_paths(root)
    for path in solutions:
        try:
            exercise, _ = exercise_for(path)
        except SolutionMarkerError as error:
            problems.append(str(error))
            continue
        target = root / EXERCISES_DIR / path.name
        relative = f"{EXERCISES_DIR}/{path.name}"
        if not target.exists():
            problems.append(f"{relative} não existe; rode `course build` ({INSTRUCTOR_COMMAND}).")
        elif target.read_bytes() != notebook_bytes(exercise):
            edits = edits_since_build(target, exercise)
            if edits:
                problems.append(
                    f"{relative}: {edits}. `course build` ({INSTRUCTOR_COMMAND}) não o sobrescreve; "
                    f"para gerá-lo de novo a partir de {SOLUTIONS_DIR}/{path.name}, o instrutor usa "
                    "`course build --force`, que guarda uma cópia do arquivo ao lado."
                )
            else:
                problems.append(
                    f"{relative} está desatualizado em relação a {SOLUTIONS_DIR}/{path.name}; "
                    f"rode `course build` ({INSTRUCTOR_COMMAND})."
                )
    sources = {path.name for path in solutions}
    exercises_dir = root / EXERCISES_DIR
    if exercises_dir.is_dir():
        for path in sorted(exercises_dir.iterdir()):
            if NOTEBOOK_NAME.match(path.name) and path.name not in sources:
                problems.append(f"{EXERCISES_DIR}/{path.name} não tem fonte em {SOLUTIONS_DIR}/{path.name}.")
    return problems
