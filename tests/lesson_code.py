"""Helpers to read the code cells of a lesson notebook and compare definitions with harness/."""
from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import re
import symtable
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
LESSONS_DIR = ROOT / "lessons"


APPENDIX_NUMBERS = (7, 8)  # lessons/07-apendice-..., 08-apendice-...: after the six lessons, no exercise of their own


def lesson_paths() -> list[Path]:
    """The six lessons and the appendices, in order."""
    return sorted(LESSONS_DIR.glob("[0-9][0-9]-*.ipynb"))


def is_appendix(path: Path) -> bool:
    return int(path.name[:2]) in APPENDIX_NUMBERS


def lesson_path(number: int) -> Path | None:
    matches = sorted(LESSONS_DIR.glob(f"{number:02d}-*.ipynb"))
    return matches[0] if matches else None


# Cell magics whose body still runs as Python in the notebook's own namespace.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun"}
# Names the IPython kernel provides without an import.
KERNEL_NAMES = {"display", "get_ipython", "In", "Out", "exit", "quit"}


def runs_in_kernel(cell_source: str) -> bool:
    """False for a cell magic that is not Python here (%%writefile writes a file, %%bash runs a shell)."""
    first = cell_source.lstrip().split("\n", 1)[0]
    if not first.startswith("%%"):
        return True
    magic = first[2:].split()
    return bool(magic) and magic[0] in PYTHON_CELL_MAGICS


def _python_source(cell_source: str) -> str:
    # IPython magics and shell escapes are not Python; blank them so line numbers stay.
    if not runs_in_kernel(cell_source):
        return ""
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


_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar)
_CONSTANT_NAME = re.compile(r"_?[A-Z][A-Z0-9_]*")


def module_level_statements(body: list[ast.stmt]):
    """Statements that run at module level: the body and the bodies of if/try/with/for/while in it."""
    for node in body:
        yield node
        if isinstance(node, _BLOCKS):
            for part in ("body", "orelse", "finalbody"):
                yield from module_level_statements(getattr(node, part, []))
            for handler in getattr(node, "handlers", []):
                yield from module_level_statements(handler.body)


def definitions_in_source(source: str) -> dict[str, ast.AST]:
    """Module-level functions and classes, inside if/try/with blocks too (the last one wins)."""
    return {
        node.name: node
        for node in module_level_statements(ast.parse(source).body)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def constants_in_source(source: str) -> dict[str, ast.AST]:
    """Module-level UPPER_CASE names and the expressions assigned to them (the last one wins)."""
    found: dict[str, ast.AST] = {}
    for node in module_level_statements(ast.parse(source).body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        if _CONSTANT_NAME.fullmatch(target):
            found[target] = value
    return found


def code_cell_sources(path: Path) -> list[str]:
    """The Python source of every code cell the kernel runs (magics and shell lines blanked)."""
    notebook = nbformat.read(path, as_version=4)
    return [_python_source(cell.source) for cell in notebook.cells if cell.cell_type == "code"]


def lesson_definitions(path: Path) -> dict[str, ast.AST]:
    """Top-level functions and classes defined in the lesson's code cells (last one wins)."""
    found: dict[str, ast.AST] = {}
    for source in code_cell_sources(path):
        found.update(definitions_in_source(source))
    return found


def _scopes(table: symtable.SymbolTable):
    yield table
    for child in table.get_children():
        yield from _scopes(child)


def module_bindings(sources: list[str]) -> set[str]:
    """Names the cells bind in the notebook's namespace: imports, assignments, defs, `global` writes."""
    bound: set[str] = set()
    for source in sources:
        for table in _scopes(symtable.symtable(source, "<cell>", "exec")):
            for symbol in table.get_symbols():
                top_level = table.get_type() == "module"
                if (top_level and (symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace())) \
                        or (symbol.is_declared_global() and symbol.is_assigned()):
                    bound.add(symbol.get_name())
    return bound


def global_names_used(source: str) -> dict[str, set[str]]:
    """For each top-level function or class of a cell: the global names its body reads.

    Nested functions, lambdas and comprehensions included; names they resolve to an
    enclosing scope are not global. Default values, decorators and annotations run at
    definition time, in the cell itself, and are left to the execution test.
    """
    table = symtable.symtable(source, "<cell>", "exec")
    used: dict[str, set[str]] = {}
    for child in table.get_children():
        if child.get_type() not in ("function", "class"):
            continue
        names = used.setdefault(child.get_name(), set())
        for scope in _scopes(child):
            if scope.get_type() == "class":
                continue  # a class body reads its own names first; its methods are scopes below
            names.update(symbol.get_name() for symbol in scope.get_symbols()
                         if symbol.is_global() and symbol.is_referenced())
    return used


def unresolved_names(sources: list[str]) -> dict[str, list[str]]:
    """Function (or class) -> the global names it reads that nothing in the notebook provides."""
    available = module_bindings(sources) | set(dir(builtins)) | KERNEL_NAMES
    missing: dict[str, list[str]] = {}
    for source in sources:
        for name, used in global_names_used(source).items():
            lacking = sorted(used - available)
            if lacking:
                missing.setdefault(name, [])
                missing[name] = sorted(set(missing[name]) | set(lacking))
    return missing


def module_source(module_name: str) -> str:
    return inspect.getsource(importlib.import_module(module_name))


def module_definitions(module_name: str) -> dict[str, ast.AST]:
    return definitions_in_source(module_source(module_name))


def _named(sources: list[str], reader) -> dict[str, ast.AST]:
    found: dict[str, ast.AST] = {}
    for source in sources:
        found.update(reader(source))
    return found


def comparison_problems(lesson_sources: list[str], own_sources: dict[str, str], other_sources: dict[str, str],
                        required: set[str], lesson_only: set[str] = frozenset()) -> list[str]:
    """Where a lesson's code departs from harness/; [] when every copy is the harness's own code.

    Functions, classes and UPPER_CASE constants the lesson defines at module level (inside
    if/try/with blocks too) are paired by name with the lesson's own modules first, then
    with the rest of harness/. A name found twice at the same step is ambiguous, not
    resolved by module order. A lesson name with no harness counterpart must be declared
    lesson-only (a demo, or a deliberately wrong version), so a rename in harness/ cannot
    silently orphan the lesson's copy. Every required name must itself be compared.
    """
    problems = []
    for kind, reader in (("definition", definitions_in_source), ("constant", constants_in_source)):
        lesson = _named(lesson_sources, reader)
        own = {module: reader(source) for module, source in own_sources.items()}
        others = {module: reader(source) for module, source in other_sources.items()}
        for name, node in sorted(lesson.items()):
            homes = [m for m, names in own.items() if name in names] or [m for m, names in others.items() if name in names]
            if len(homes) > 1:
                problems.append(f"`{name}` is ambiguous: defined in {' and '.join(homes)}; which one is the lesson copying?")
                continue
            if not homes:
                if name not in lesson_only:
                    problems.append(f"{kind} `{name}` is not in harness/ and not declared lesson-only "
                                    "(renamed in harness/? or a demo to declare)")
                continue
            module = homes[0]
            if name in lesson_only:
                problems.append(f"`{name}` is declared lesson-only, but {module} defines it too")
                continue
            harness_node = (own.get(module) or others.get(module))[name]
            if normalized(node) != normalized(harness_node):
                problems.append(f"{kind} `{name}` differs from {module}.{name}; lesson and harness must be the same code")
    defined = set(_named(lesson_sources, definitions_in_source)) | set(_named(lesson_sources, constants_in_source))
    problems += [f"the lesson must define `{name}` (it is what the lesson builds)" for name in sorted(required - defined)]
    problems += [f"`{name}` is required but declared lesson-only" for name in sorted(required & lesson_only)]
    return problems
