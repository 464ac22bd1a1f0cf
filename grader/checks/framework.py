"""The check-authoring API: declare an exercise, its checks, and what a check may do.

Read ``README.md`` beside this file for the walkthrough. In short, an exercise module
``grader/checks/exercise_N.py`` creates ``EXERCISE = Exercise(...)`` and decorates
plain functions with ``@EXERCISE.check(...)``. A check passes by returning and fails
by raising ``CheckFailed``; everything it learns about the student's code goes through
the ``Context`` it receives, which never lets a student's mistake become a grader crash.

This module is imported both by the grading process (to plan checks and validate
fixtures) and inside the student's kernel (to run them), so it stays light: no
nbclient, no harness import at module level.
"""
from __future__ import annotations

import copy
import io
import json
import os
import unicodedata
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator


NOT_IMPLEMENTED_PREFIX = "Ainda não implementado"
OUTPUT_LIMIT = 4000


# ----------------------------------------------------------------- outcomes


class CheckFailed(Exception):
    """The student's answer is wrong. ``message`` names the mistake in Portuguese."""

    def __init__(self, message: str, *, expected: Any = "", observed: Any = ""):
        super().__init__(message)
        self.message = message
        self.expected = expected if isinstance(expected, str) else show(expected)
        self.observed = observed if isinstance(observed, str) else show(observed)


NOTHING_OBSERVED_PREFIX = "Nada observado"


def nothing_observed(what: str, expected: Any = "") -> "CheckFailed":
    """The failure of a check whose subject never happened (no write, no save point, no call):
    a check never passes on nothing. ``what`` says, in Portuguese, what was not seen."""
    return CheckFailed(
        f"{NOTHING_OBSERVED_PREFIX}: {what}. Esta verificação só passa quando vê acontecer o que ela confere.",
        expected=expected, observed="nada observado",
    )


class StudentProblem(Exception):
    """The student's code could not be used: missing, not implemented, raised, looped, exited.
    ``kind`` is "memory" when it ran out of memory (reported as memory exhaustion).
    ``unwritten`` names the function or answer the student has not written yet, when that is
    the reason (the report then lists it once instead of repeating the failure per check)."""

    def __init__(self, message: str, observed: str = "", kind: str = "", *, unwritten: str = ""):
        super().__init__(message)
        self.message = message
        self.observed = observed or message
        self.kind = kind
        self.unwritten = unwritten


class CheckTimeout(BaseException):
    """Raised by the per-check alarm. A BaseException so `except Exception` in student code
    does not swallow it."""


class _StudentExit(BaseException):
    """Stands in for os._exit while student code runs, so the kernel survives."""

    def __init__(self, code: object):
        super().__init__(code)
        self.code = code


def error_text(name: Any, detail: Any = "") -> str:
    """"ValueError: quebrou", or just "TimeoutError" when the exception carries no message."""
    detail = str(detail if detail is not None else "").strip()
    if detail.endswith(".") and not detail.endswith(".."):
        detail = detail[:-1]  # callers end the sentence themselves
    return f"{name}: {detail}" if detail else str(name)


def describe_error(error: BaseException) -> str:
    """An exception as "Type: message", without a dangling colon when it has no message."""
    return error_text(type(error).__name__, error)


def show(value: Any, limit: int = 600) -> str:
    """A compact, readable rendering of a value for 'esperado' / 'obtido'. None, True and False
    are spelled as the student writes them in Python (JSON's null would puzzle them)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (dict, list, str, int, float)):
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ----------------------------------------------------------------- fixtures


@dataclass
class Fixture:
    """One fixture file, as the checks see it. ``data`` is the parsed file."""

    name: str
    data: dict
    source: str = ""

    @property
    def description(self) -> str:
        return str(self.data.get("description", ""))

    @property
    def expect(self) -> dict:
        return self.data.get("expect") or {}

    @property
    def workspace(self) -> dict:
        return self.data.get("workspace") or {}

    def checkpoint(self) -> dict:
        """A fresh deep copy of the fixture's checkpoint: student code may mutate it freely."""
        return copy.deepcopy(self.data["checkpoint"])

    def to_dict(self) -> dict:
        return {"name": self.name, "data": self.data, "source": self.source}

    @classmethod
    def from_dict(cls, data: dict) -> "Fixture":
        return cls(name=data["name"], data=data["data"], source=data.get("source", ""))


def is_kind(kind: str) -> Callable[[Fixture], bool]:
    """For ``applies=``: the fixtures whose ``kind`` field is ``kind``."""
    return lambda fixture: fixture.data.get("kind") == kind


# ----------------------------------------------------------------- declarations


@dataclass
class CheckSpec:
    name: str
    level: int
    title: str
    criterion: str
    function: Callable[..., None]
    per_fixture: bool = False
    applies: Callable[[Fixture], bool] | None = None


@dataclass
class PlannedCheck:
    """One check to run: a CheckSpec, bound to a fixture when it is per-fixture."""

    id: str
    name: str
    level: int
    fixture: str | None
    title: str
    criterion: str
    hint_ref: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class Exercise:
    """An exercise's checks. Create one per module as ``EXERCISE = Exercise("exercise-N")``.

    Its title and level titles are read from grader/core/manifest.yaml, the one place they are
    written, when first asked for: the grading kernel imports this module and never needs them.
    """

    def __init__(self, name: str):
        self.name = name
        self.checks: list[CheckSpec] = []
        self._fixture_validator: Callable[[dict], list[str]] | None = None

    @property
    def title(self) -> str:
        return self._manifest_entry().title

    @property
    def levels(self) -> dict[int, str]:
        """Level number -> title, in the manifest's order."""
        return {level.number: level.title for level in self._manifest_entry().levels}

    def _manifest_entry(self):
        from grader.core import manifest  # parsed once per process (cached there)

        return manifest.get_exercise(self.name)

    # --- declaring

    def check(
        self,
        *,
        level: int,
        title: str,
        criterion: str,
        per_fixture: bool = False,
        applies: Callable[[Fixture], bool] | None = None,
    ) -> Callable[[Callable[..., None]], Callable[..., None]]:
        """Register a check. Per-fixture checks run once for every fixture they apply to."""

        def register(function: Callable[..., None]) -> Callable[..., None]:
            if any(spec.name == function.__name__ for spec in self.checks):
                raise ValueError(f"{self.name}: two checks named {function.__name__}")
            self.checks.append(
                CheckSpec(function.__name__, level, title, criterion, function, per_fixture, applies)
            )
            return function

        return register

    def fixture_validator(self, function: Callable[[dict], list[str]]) -> Callable[[dict], list[str]]:
        """Register the function that lists a fixture's shape problems (field by field)."""
        self._fixture_validator = function
        return function

    # --- using

    def validate_fixture(self, data: dict) -> list[str]:
        return list(self._fixture_validator(data)) if self._fixture_validator else []

    def spec(self, name: str) -> CheckSpec:
        for spec in self.checks:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def plan(self, fixtures: list[Fixture], level: int | None = None) -> list[PlannedCheck]:
        """Every check to run, in level order then declaration order then fixture order."""
        undeclared = sorted({spec.level for spec in self.checks} - set(self.levels))
        if undeclared:
            raise ValueError(f"{self.name}: checks of level {undeclared} but grader/core/manifest.yaml has no such level")
        planned: list[PlannedCheck] = []
        for spec in sorted(self.checks, key=lambda s: s.level):  # stable: keeps declaration order
            if level is not None and spec.level != level:
                continue
            targets: list[Fixture | None]
            if spec.per_fixture:
                targets = [f for f in fixtures if spec.applies is None or spec.applies(f)]
            else:
                targets = [None]
            for fixture in targets:
                suffix = f"[{fixture.name}]" if fixture else ""
                planned.append(
                    PlannedCheck(
                        id=f"n{spec.level}.{spec.name}{suffix}",
                        name=spec.name,
                        level=spec.level,
                        fixture=fixture.name if fixture else None,
                        title=spec.title,
                        criterion=spec.criterion,
                        hint_ref=f"grade hint {self.name} --level {spec.level}",
                    )
                )
        return planned


# ----------------------------------------------------------------- running


@dataclass
class CellProblemInfo:
    """What the kernel side knows about a notebook cell that ended in an error."""

    cell: int
    first_line: str
    ename: str
    evalue: str
    names: list[str] = field(default_factory=list)


def _ignore(record: dict) -> None:
    """Where progress records go when nobody listens (in-process test runs)."""


@dataclass
class Session:
    """State shared by every check of one grading run (lives in the kernel)."""

    namespace: dict
    workdir: Path
    check_timeout: float
    cell_problems: list[CellProblemInfo] = field(default_factory=list)
    memo: dict = field(default_factory=dict)
    counter: int = 0
    # Student functions not to call again: in an earlier kernel of this grading each one hung
    # past its time limit or took the kernel down (label -> what it did, in Portuguese).
    refused: dict[str, str] = field(default_factory=dict)
    emit: Callable[[dict], None] = field(default_factory=lambda: _ignore)  # progress records for the grading process

    def fresh_dir(self, label: str) -> Path:
        self.counter += 1
        path = self.workdir / f"{self.counter:03d}-{label}"
        path.mkdir(parents=True)
        return path


class Context:
    """What a check uses to reach the student's code. One per check run."""

    def __init__(self, session: Session):
        self._session = session
        self.output = ""

    # --- the student's names

    def student_function(self, name: str) -> Callable[..., Any]:
        """The student's function ``name``, as defined in the notebook. A function still holding
        the exercise's stub is reported as not written yet here, before any check calls it: a
        check that needs several functions names its own subject first, so every stub is listed
        once, whichever of them a check would have reached first."""
        value = self._lookup(name)
        if not callable(value):
            raise StudentProblem(
                f"`{name}` existe no notebook, mas não é uma função (é {type(value).__name__}).",
            )
        stub = stub_text(value)
        if stub is not None:
            raise StudentProblem(not_implemented_message(name, stub), unwritten=name)
        module = getattr(value, "__module__", None) or ""
        if module.startswith("harness"):
            raise StudentProblem(
                f"`{name}` foi importada de `{module}`: o exercício pede que você a escreva "
                "no notebook, com suas palavras."
            )
        return value

    def student_answer(self, name: str) -> Any:
        """A structured answer such as ``ROOT_CAUSE = "B"``; None means not answered yet."""
        value = self._lookup(name)
        if value is None:
            raise StudentProblem(
                f"{NOT_IMPLEMENTED_PREFIX}: `{name}` ainda vale None. Troque o None pela sua resposta.",
                unwritten=name,
            )
        return value

    def _lookup(self, name: str) -> Any:
        namespace = self._session.namespace
        if name in namespace:
            return namespace[name]
        message = missing_name_message(name, self._session.cell_problems)
        raise StudentProblem(message, unwritten=name if message.startswith(NOT_IMPLEMENTED_PREFIX) else "")

    # --- calling student code

    def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call student code with its output captured; every way it can go wrong becomes a
        StudentProblem with a Portuguese message (never a grader crash)."""
        label = getattr(function, "__name__", "função")
        if label in self._session.refused:
            raise StudentProblem(
                f"`{label}` não foi chamada de novo: {self._session.refused[label]}, e o kernel teve de ser "
                "encerrado. Corrija isso primeiro; as outras verificações que a usam dependem disso."
            )
        self._session.emit({"calling": label})  # which function to blame if the kernel must be killed
        buffer = io.StringIO()
        real_exit = os._exit

        def trapped_exit(code: object = 0) -> None:
            raise _StudentExit(code)

        os._exit = trapped_exit
        try:
            with redirect_stdout(buffer), redirect_stderr(buffer):
                return function(*args, **kwargs)
        except CheckTimeout:
            _disarm_alarm()  # the check's time is up; no second alarm while we report it
            raise StudentProblem(
                f"`{label}` não terminou em {self._session.check_timeout:g} s e foi interrompida: "
                "há um laço infinito ou uma espera que nunca acaba?"
            ) from None
        except _StudentExit as exit_:
            raise StudentProblem(
                f"`{label}` chamou os._exit({exit_.code!r}), o que encerraria o processo do Python. "
                "Uma função do harness nunca deve encerrar o processo: devolva um valor."
            ) from None
        except SystemExit as exit_:
            raise StudentProblem(
                f"`{label}` chamou sys.exit({exit_.code!r}) (ou exit/quit), o que encerraria o "
                "processo. Uma função do harness nunca deve encerrar o processo: devolva um valor."
            ) from None
        except NotImplementedError as error:
            raise StudentProblem(not_implemented_message(label, error), unwritten=label) from None
        except MemoryError:
            raise StudentProblem(
                f"`{label}` esgotou a memória do kernel (MemoryError): ela guardou ou criou dados demais "
                "(uma lista que só cresce, uma cópia a cada volta do laço?).", kind="memory",
            ) from None
        except RecursionError:
            raise StudentProblem(
                f"`{label}` entrou em recursão sem fim (RecursionError)."
            ) from None
        except BaseException as error:  # noqa: BLE001 - any student exception is a finding
            where = _student_line(error, self._session.namespace)
            raise StudentProblem(f"`{label}` levantou {describe_error(error)}{where}.") from None
        finally:
            os._exit = real_exit
            self.output = (self.output + buffer.getvalue())[-OUTPUT_LIMIT:]

    def call_catching(self, function: Callable[..., Any], *args: Any, label: str = "") -> tuple[Any, Exception | None]:
        """``call`` for checks where raising can be the right answer: an ordinary exception comes
        back as the second value (the check judges which one it was). A stub's
        NotImplementedError still fails the check as not written yet."""

        def attempt() -> tuple[Any, Exception | None]:
            try:
                return function(*args), None
            except NotImplementedError:
                raise
            except Exception as error:  # noqa: BLE001 - the check judges the error
                return None, error

        attempt.__name__ = label or getattr(function, "__name__", "função")
        return self.call(attempt)

    def call_or_problem(
        self, function: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> tuple[Any, StudentProblem | None]:
        """``call`` for checks that judge what the code did even when it went wrong: the
        StudentProblem comes back as the second value instead of failing the check (the first
        is then None). Code that is not implemented yet still fails as not implemented."""
        try:
            return self.call(function, *args, **kwargs), None
        except StudentProblem as problem:
            if problem.message.startswith(NOT_IMPLEMENTED_PREFIX):
                raise
            return None, problem

    # --- instrumented tools

    @contextmanager
    def tools(self, fixture: Fixture, label: str = "workspace") -> Iterator[Any]:
        """A fresh harness Workspace built from the fixture, made current, with
        ``execute_tool`` replaced by a spy everywhere the student's code can reach it."""
        from grader.checks.instrumented import instrumented_tools

        root = self._session.fresh_dir(f"{fixture.name}-{label}")
        with instrumented_tools(root, fixture.workspace, self._session.namespace) as spy:
            yield spy

    def reference_tool_result(self, fixture: Fixture, name: str, input: dict) -> dict:
        """What the real tool returns on a fresh copy of the fixture's world."""
        from grader.checks.instrumented import run_real_tool

        root = self._session.fresh_dir(f"{fixture.name}-reference")
        return run_real_tool(root, fixture.workspace, name, input)

    # --- scratch folders and the student's global names

    def fresh_dir(self, label: str) -> Path:
        """A new empty folder for this check, inside the grading run's work folder."""
        return self._session.fresh_dir(label)

    def names_bound_to(self, value: Any) -> list[str]:
        """The student's global names bound to ``value`` (after ``from os import fsync``, say)."""
        return [name for name, bound in list(self._session.namespace.items()) if bound is value]

    # --- swapping a name the student's code looks up

    @contextmanager
    def replaced_global(self, name: str, value: Any) -> Iterator[None]:
        """Bind ``name`` in the student's namespace to ``value`` while the block runs (a spy on
        a function the student's code calls by its global name, say); the student's own value,
        or its absence, comes back afterwards."""
        namespace = self._session.namespace
        missing = object()
        previous = namespace.get(name, missing)
        namespace[name] = value
        try:
            yield
        finally:
            if previous is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = previous

    # --- sharing one run of student code between checks

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """Compute once per grading run; a StudentProblem is remembered and re-raised too,
        so a function that loops forever costs one timeout, not one per check."""
        memo = self._session.memo
        if key not in memo:
            try:
                memo[key] = ("value", compute())
            except StudentProblem as problem:
                memo[key] = ("problem", problem)
        kind, value = memo[key]
        if kind == "problem":
            raise StudentProblem(value.message, value.observed, value.kind, unwritten=value.unwritten)
        return value


# ----------------------------------------------------------------- conversation content


def response_tokens(response: dict) -> int:
    """What a scripted response adds to tokens_used: its input_tokens + output_tokens, as lesson 1's loop sums."""
    usage = response.get("usage") or {}
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))


def content_blocks(message: dict, block_type: str) -> list[dict]:
    """The blocks of ``block_type`` ("tool_use", "tool_result"...) in a message's content;
    [] when the content is plain text."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict) and block.get("type") == block_type]


def plain_text(text: str) -> str:
    """``text`` in lower case, without accents and with single spaces, to compare words a
    student may type with or without accents ("Memória", "memoria ")."""
    ascii_only = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return " ".join(ascii_only.lower().split())


def block_text(content: Any) -> str | None:
    """The text of a tool_result's content (a string or a list of text blocks); None otherwise."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "".join(str(b.get("text", "")) for b in content)
    return None


# ----------------------------------------------------------------- messages


def _disarm_alarm() -> None:
    import signal
    import threading

    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)


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
    if problems:
        first = problems[0]
        message += f" Atenção: a célula {first.cell} falhou com {error_text(first.ename, first.evalue)}."
    return message


def _student_line(error: BaseException, namespace: dict) -> str:
    """' (linha N de `f`)' for the deepest traceback frame that runs student code."""
    traceback = error.__traceback__
    found = ""
    while traceback is not None:
        frame = traceback.tb_frame
        if frame.f_globals is namespace:
            found = f" (linha {traceback.tb_lineno} da célula, em `{frame.f_code.co_name}`)"
        traceback = traceback.tb_next
    return found


__all__ = [
    "CheckFailed",
    "CheckTimeout",
    "Context",
    "Exercise",
    "Fixture",
    "PlannedCheck",
    "StudentProblem",
    "block_text",
    "content_blocks",
    "describe_error",
    "error_text",
    "is_kind",
    "nothing_observed",
    "show",
]
