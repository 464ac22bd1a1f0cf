"""Helpers to read the code cells of a lesson notebook and compare definitions with harness/."""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
LESSONS_DIR = ROOT / "lessons"


def lesson_paths() -> list[Path]:
    return sorted(LESSONS_DIR.glob("[0-9][0-9]-*.ipynb"))


def lesson_path(number: int) -> Path | None:
    matches = sorted(LESSONS_DIR.glob(f"{number:02d}-*.ipynb"))
    return matches[0] if matches else None


def _python_source(cell_source: str) -> str:
    # IPython magics and shell escapes are not Python; blank them so line numbers stay.
    lines = []
    for line in cell_source.splitlines():
        stripped = line.lstrip()
        lines.append("" if stripped.startswith(("%", "!")) else line)
    return "\n".join(lines)


def _strip_docstrings(node: ast.AST) -> ast.AST:
    for child in ast.walk(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = child.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                child.body = body[1:] or [ast.Pass()]
    return node


def normalized(node: ast.AST) -> str:
    return ast.dump(_strip_docstrings(node), include_attributes=False)


def definitions_in_source(source: str) -> dict[str, ast.AST]:
    tree = ast.parse(source)
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def lesson_definitions(path: Path) -> dict[str, ast.AST]:
    """Top-level functions and classes defined in the lesson's code cells (last one wins)."""
    notebook = nbformat.read(path, as_version=4)
    found: dict[str, ast.AST] = {}
    for cell in notebook.cells:
        if cell.cell_type == "code":
            found.update(definitions_in_source(_python_source(cell.source)))
    return found


def module_definitions(module_name: str) -> dict[str, ast.AST]:
    module = importlib.import_module(module_name)
    return definitions_in_source(inspect.getsource(module))
