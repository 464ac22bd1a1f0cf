"""What a learner in a hurry hands in: each function an exercise asks for, replaced by the function
of the same name that lessons 1 to N show, with what that function needs from its lesson (the
imports, constants and helpers it reads, transitively). Used by tests/test_paste_from_lessons.py
and by anyone measuring how much of an exercise the lessons give away."""
from __future__ import annotations

import ast
import copy
import functools
import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

import harness
from tests.exercise_support import exercise_path, solution_notebook
from tests.lesson_code import code_cell_sources, global_names_used, lesson_path


def _is_stub(node: ast.AST) -> bool:
    """A function whose body (its docstring aside) is one `raise NotImplementedError...`."""
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def asked_functions(exercise: str) -> list[str]:
    """The functions the generated exercise leaves for the learner, in notebook order."""
    names = []
    for source in code_cell_sources(exercise_path(exercise)):
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_stub(node) and node.name not in names:
                names.append(node.name)
    return names


@dataclass
class LessonPiece:
    """One module-level statement of a lesson: its source and the names it binds and reads."""
    source: str
    binds: set[str]
    reads: set[str] = field(default_factory=set)
    order: int = 0


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets if isinstance(target, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return {node.target.id}
    return set()


def _reads(node: ast.stmt, source: str) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return global_names_used(source).get(node.name, set())
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def lesson_pieces(last_lesson: int) -> dict[str, LessonPiece]:
    """Name -> the latest definition (def or class) of lessons 1..N binding it, else the latest
    other statement binding it (an import, a constant). A later definition wins; a lesson that
    later rebinds a name for a demonstration (``save = recording_save``) does not hide the
    definition a learner would copy."""
    pieces: dict[str, LessonPiece] = {}
    definitions: dict[str, LessonPiece] = {}
    order = 0
    for number in range(1, last_lesson + 1):
        path = lesson_path(number)
        if path is None:
            continue
        for cell_source in code_cell_sources(path):
            tree = ast.parse(cell_source)
            for node in tree.body:
                binds = _bound_names(node)
                if not binds:
                    continue
                order += 1
                segment = ast.get_source_segment(cell_source, node, padded=False)
                decorators = getattr(node, "decorator_list", [])
                if decorators:  # the decorators are part of the definition a learner copies
                    lines = cell_source.splitlines()
                    segment = "\n".join(lines[decorators[0].lineno - 1:node.end_lineno])
                piece = LessonPiece(segment, binds, _reads(node, segment), order)
                is_definition = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                for name in binds:
                    (definitions if is_definition else pieces)[name] = piece
    return {**pieces, **definitions}


def pasted_block(name: str, pieces: dict[str, LessonPiece], skip: set[str]) -> str | None:
    """The lesson's definition of ``name`` with everything it reads from its lesson, in lesson
    order; None when no lesson defines ``name`` as a function. Names in ``skip`` (the other
    functions being pasted) are left to their own block."""
    root = pieces.get(name)
    if root is None or not root.source.lstrip().startswith(("def ", "async def ", "@")):
        return None
    wanted: dict[int, LessonPiece] = {}
    stack = [root]
    while stack:
        piece = stack.pop()
        if id(piece) in wanted:
            continue
        wanted[id(piece)] = piece
        for read in piece.reads:
            if read in pieces and read not in skip and id(pieces[read]) not in wanted:
                stack.append(pieces[read])
    return "\n\n".join(piece.source for piece in sorted(wanted.values(), key=lambda p: p.order))


def _definition_span(source: str, name: str) -> tuple[int, int] | None:
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return start, node.end_lineno
    return None


def pasted_notebook(exercise: str) -> tuple[nbformat.NotebookNode, dict[str, bool]]:
    """The solution with each asked function replaced by its lesson copy (or by the exercise's
    stub where no lesson shows it: a learner who only pastes has nothing there). Returns the
    notebook and, per asked function, whether a lesson had it."""
    number = int(exercise.rsplit("-", 1)[1])
    pieces = lesson_pieces(number)
    asked = asked_functions(exercise)
    stubs = {}
    for source in code_cell_sources(exercise_path(exercise)):
        for name in asked:
            span = _definition_span(source, name)
            if span:
                stubs[name] = "\n".join(source.splitlines()[span[0] - 1:span[1]])
    notebook = copy.deepcopy(solution_notebook(exercise))
    found = {}
    for name in asked:
        block = pasted_block(name, pieces, set(asked) - {name})
        found[name] = block is not None
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            try:
                span = _definition_span(cell.source, name)
            except SyntaxError:
                continue
            if span:
                lines = cell.source.splitlines()
                cell.source = "\n".join(lines[:span[0] - 1] + [block or stubs[name]] + lines[span[1]:])
                break
    return notebook, found


@functools.lru_cache(maxsize=1)
def _harness_modules() -> tuple:
    """Every importable harness module, loaded once (walking the package imports each of them)."""
    loaded = []
    for module in pkgutil.walk_packages(harness.__path__, "harness."):
        if module.name.endswith("__main__"):  # importing it runs the command line
            continue
        try:
            loaded.append(importlib.import_module(module.name))
        except Exception:  # noqa: BLE001 - a module that needs an optional extra is not a source
            continue
    return tuple(loaded)


def harness_modules_defining(name: str) -> list[str]:
    return [module.__name__ for module in _harness_modules()
            if getattr(getattr(module, name, None), "__module__", None) == module.__name__]


def imported_from_harness_notebook(exercise: str) -> tuple[nbformat.NotebookNode, list[str]]:
    """The generated exercise with a last cell importing, from harness, every asked function the
    harness has (the answers the exercise asks in words stay unanswered)."""
    notebook = nbformat.read(Path(exercise_path(exercise)), as_version=4)
    imports, names = [], []
    for name in asked_functions(exercise):
        modules = harness_modules_defining(name)
        if modules:
            imports.append(f"from {modules[0]} import {name}")
            names.append(name)
    notebook.cells.append(nbformat.v4.new_code_cell("\n".join(imports)))
    return notebook, names
