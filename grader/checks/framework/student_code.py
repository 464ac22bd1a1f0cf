"""What the student's code says about itself: a stub not written yet, a name never defined."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.checks.framework.outcomes import NOT_IMPLEMENTED_PREFIX, error_text
from grader.core.results import SKIPPED_CELL


@dataclass
class CellProblemInfo:
    """What the kernel side knows about a notebook cell that ended in an error."""

    cell: int
    first_line: str
    ename: str
    evalue: str
    names: list[str] = field(default_factory=list)


def not_implemented_message(label: str, error: BaseException | str) -> str:
    """Says that ``label`` is not written yet, with what its stub asks for (never how: hints
    stay in `grade hint`)."""
    detail = str(error).strip()
    if detail.startswith(NOT_IMPLEMENTED_PREFIX):
        detail = detail[len(NOT_IMPLEMENTED_PREFIX):].lstrip(" :")
    message = f"{NOT_IMPLEMENTED_PREFIX}: `{label}` ainda levanta NotImplementedError"
    return f"{message} (o que falta: {detail.rstrip('.')})." if detail else message + "."


def _is_stub_raise(statement: Any) -> str | None:
    """The text of ``raise NotImplementedError("Ainda não implementado: ...")``; None otherwise."""
    import ast

    call = statement.exc if isinstance(statement, ast.Raise) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "NotImplementedError"):
        return None
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str) \
            and call.args[0].value.startswith(NOT_IMPLEMENTED_PREFIX):
        return call.args[0].value
    return None


def stub_text(function: Any) -> str | None:
    """The stub's text when ``function`` still holds the generated exercise's stub: its body
    raises the "Ainda não implementado" NotImplementedError at the top level and never returns
    before it (so every call ends in that raise). None for written code, or when the source
    cannot be read (a call then still reports the NotImplementedError it raises)."""
    import ast
    import inspect
    import textwrap

    try:
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for statement in definition.body:
        text = _is_stub_raise(statement)
        if text is not None:
            return text
        if any(isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) for node in ast.walk(statement)):
            return None
    return None


def missing_name_message(name: str, problems: list[CellProblemInfo]) -> str:
    for problem in problems:
        if name in problem.names:
            if problem.ename == SKIPPED_CELL:
                return (
                    f"`{name}` não existe na correção: a célula {problem.cell} (`{problem.first_line}`), que a "
                    f"define, tem a tag `{SKIPPED_CELL}`, e o corretor não executa células com essa tag. "
                    "Tire a tag e salve."
                )
            if problem.ename == "NotImplementedError":
                return (
                    f"{NOT_IMPLEMENTED_PREFIX}: a célula {problem.cell}, onde `{name}` é definida, "
                    f"ainda levanta NotImplementedError ({problem.evalue})."
                )
            return (
                f"`{name}` não foi definida: a célula {problem.cell} (`{problem.first_line}`), "
                f"onde ela deveria ser definida, falhou com {error_text(problem.ename, problem.evalue)}."
            )
    message = (
        f"`{name}` não foi definida no notebook. Confira se a célula que a define existe "
        "e se o nome está escrito exatamente assim."
    )
    using = [p for p in problems if p.ename == "NameError" and f"'{name}'" in p.evalue]
    if using:  # a cell that uses it failed for the same reason: the defining cell is what is missing
        cells = ", ".join(str(p.cell) for p in using)
        return (
            f"`{name}` não foi definida no notebook: nenhuma célula tem `def {name}(...)` (ou `{name} = ...`). "
            f"Ela foi apagada ou renomeada? Recupere a célula que a define, antes da célula {cells}, que a usa "
            "e por isso falhou com NameError."
        )
    if problems:
        first = problems[0]
        message += f" Atenção: a célula {first.cell} falhou com {error_text(first.ename, first.evalue)}."
    return message
