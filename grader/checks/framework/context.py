"""Running the checks in the kernel: the session of one grading and the Context through which a check reaches the student's code."""
from __future__ import annotations

import io
import os
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from grader.core.declarations import Fixture
from grader.checks.framework.outcomes import (
    NOT_IMPLEMENTED_PREFIX,
    CheckTimeout,
    StudentProblem,
    describe_error,
)
from grader.checks.framework.student_code import (
    CellProblemInfo,
    missing_name_message,
    not_implemented_message,
    stub_text,
)


OUTPUT_LIMIT = 4000


class _StudentExit(BaseException):
    """Stands in for os._exit while student code runs, so the kernel survives."""

    def __init__(self, code: object):
        super().__init__(code)
        self.code = code


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
    # A function that does not return within a check's limit joins them at once (its reason
    # says where it hung), so a hang costs one time limit, not one per check that needs it.
    refused: dict[str, str] = field(default_factory=dict)
    current_check: str = ""  # the id of the check running now, to say where a function hung
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
        if message.startswith(NOT_IMPLEMENTED_PREFIX):
            raise StudentProblem(message, unwritten=name)
        raise StudentProblem(message, undefined=name)

    # --- calling student code

    def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call student code with its output captured; every way it can go wrong becomes a
        StudentProblem with a Portuguese message (never a grader crash)."""
        label = getattr(function, "__name__", "função")
        if label in self._session.refused:
            raise StudentProblem(
                f"`{label}` não foi chamada de novo: {self._session.refused[label]}. Corrija isso primeiro; "
                "as outras verificações que a usam dependem disso.", kind="refused",
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
            self._refuse(label, f"não terminou em {self._session.check_timeout:g} s")
            raise StudentProblem(
                f"`{label}` não terminou em {self._session.check_timeout:g} s e foi interrompida: "
                "há um laço infinito ou uma espera que nunca acaba?", kind="timeout",
            ) from None
        except _StudentExit as exit_:
            raise StudentProblem(
                f"`{label}` chamou os._exit({exit_.code!r}), o que encerraria o processo do Python. "
                "Uma função do harness nunca deve encerrar o processo: devolva um valor.", kind="exit",
            ) from None
        except SystemExit as exit_:
            raise StudentProblem(
                f"`{label}` chamou sys.exit({exit_.code!r}) (ou exit/quit), o que encerraria o "
                "processo. Uma função do harness nunca deve encerrar o processo: devolva um valor.", kind="exit",
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

    def _refuse(self, label: str, what: str) -> None:
        """Never call ``label`` again in this grading; the grading process hears it too, so a
        fresh kernel after a lost one refuses it as well."""
        where = f"na verificação {self._session.current_check}" if self._session.current_check else "antes"
        reason = f"{where} ela {what}"
        self._session.refused.setdefault(label, reason)
        self._session.emit({"refused": label, "reason": self._session.refused[label]})

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
            raise StudentProblem(value.message, value.observed, value.kind, unwritten=value.unwritten,
                                 undefined=value.undefined)
        return value


def _disarm_alarm() -> None:
    import signal
    import threading

    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)


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
