"""Execute a student's notebook in a fresh kernel, then run the checks in that same kernel.

nbclient runs the notebook's code cells (errors recorded, execution goes on, per-cell and
total time limits), then one extra request runs ``grader.checks.runner.run_from_file``
inside the kernel. How the kernel is started, limited and watched lives in
``grader.core.kernel``; this module decides what to do when something goes wrong:

- a cell that ignores the interrupt at its time limit, or that runs out of memory (or
  ends holding most of the memory limit), is left out: the kernel is killed or
  restarted, the cells before it run again in a fresh kernel, and the notebook goes on
  without it, so the functions defined elsewhere are still graded;
- a check whose code ignores its time limit, or that kills the kernel, fails with that
  reason, and the checks after it run in a fresh kernel;
- a kernel that fails to start is started once more; if that fails too, the report says
  the kernel could not start, never that it died.

The number of fresh kernels per grading is bounded (``MAX_RESTARTS``).
"""
from __future__ import annotations

import asyncio
import json
import re
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync

from grader.core.error_text import error_text
from grader.core import grading_files
from grader.core import kernel as kernels
from grader.core.environment import kernel_env
from grader.core.errors import os_reason
from grader.core.kernel import INTERRUPT_GRACE, KILL_GRACE, KernelStartFailed, Watchdog
from grader.core.limits import Limits
from grader.core.results import (
    GRADER_ERROR,
    KERNEL_DIED,
    KERNEL_START_FAILED,
    MEMORY_EXHAUSTED,
    SKIPPED_CELL,
    TIMEOUT,
    CellProblem,
)
from grader.core.sandbox import Sandbox, sandboxed_connection

RESULTS_READ_LIMIT = 64 << 20  # far above what every check of an exercise writes
MAX_RESTARTS = 3  # fresh kernels one grading may start after the first, to go on past a bad cell or check
HELD_MEMORY_SHARE = 0.5  # a notebook holding more than this share of the limit leaves the checks too little
# The checks run in the student's kernel, so the student's code could have patched the
# grader's modules (or json, which writes the results) by then. The grading cell drops
# the grader's modules and imports fresh copies from disk first, with a fresh json of
# their own; the json everyone else already holds goes back into sys.modules afterwards,
# so the harness and the student's code keep one json between them (two would make
# json.JSONDecodeError two different classes). The harness modules are out of sys.modules
# too while grader.checks.reference imports the pieces the checks judge by (the offline
# endpoint, the stop-reason rule, the tool sets), so those are private copies no cell
# patched; then the student's harness goes back for their code and the tool spies. This
# stops patches of those modules only: code in the kernel can still reach deeper
# (builtins, gc); see docs/instrutores.md.
_GRADING_CELL = """
import sys
theirs = {{name: sys.modules.pop(name) for name in list(sys.modules) if name.split('.')[0] in ('json', 'harness')}}
for name in [name for name in sys.modules if name.split('.')[0] == 'grader']:
    del sys.modules[name]
runner = __import__('grader.checks.runner', fromlist=['run_from_file'])
__import__('grader.checks.reference')
for name in [name for name in sys.modules if name.split('.')[0] == 'harness']:
    del sys.modules[name]
sys.modules.update(theirs)
__import__({exercise_module!r})
runner.run_from_file({spec_path!r})
"""


def grading_cell_source(spec_path: Path, exercise: str) -> str:
    """The one request that runs the checks inside the kernel, in a namespace of its own."""
    code = _GRADING_CELL.format(exercise_module="grader.checks." + exercise.replace("-", "_"), spec_path=str(spec_path))
    return f"exec({code!r}, {{}})"


_NAME_DEFINED = re.compile(r"^(?:(?:async\s+)?def|class)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)", re.M)

# How a cell ended, as far as this module is concerned.
_DONE, _IGNORED_INTERRUPT, _OUT_OF_MEMORY, _DIED, _TOTAL_TIMEOUT = "done", "ignored", "memory", "died", "total"


@dataclass
class Execution:
    cell_problems: list[CellProblem] = field(default_factory=list)
    notebook_error: str | None = None  # the notebook could not be run to the end
    grading_error: str | None = None  # the checks could not all run
    error_kind: str | None = None  # one of grader.core.results.ERROR_KINDS when either stopped short
    records: list[dict] = field(default_factory=list)
    check_notes: dict[str, str] = field(default_factory=dict)  # check id -> why it has no result
    memory_exhausted: bool = False  # a cell or a check ran out of memory (grading went on)

    def stop(self, kind: str, *, notebook_error: str | None = None, grading_error: str | None = None) -> None:
        self.error_kind = kind
        self.notebook_error = notebook_error
        self.grading_error = grading_error


class _Client(NotebookClient):
    """NotebookClient that reaches its kernel as ``connection`` says and remembers which
    cells it interrupted for taking too long."""

    def __init__(self, *args: Any, connection: dict[str, Any] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.connection = dict(connection or {})
        self.timed_out_cells: set[int] = set()

    def create_kernel_manager(self) -> Any:
        settings = dict(self.connection)
        manager_class = settings.pop("manager_class", self.kernel_manager_class)
        self.km = manager_class(kernel_name=self.kernel_name, config=self.config, **settings)
        return self.km

    async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
        if cell is not None:
            self.timed_out_cells.add(id(cell))
        reply = await super()._async_handle_timeout(timeout, cell)
        # nbclient stops watching the kernel before it interrupts, then waits for the reply
        # as long again: a cell that ignores the interrupt and is killed by the watchdog a few
        # seconds later would only be noticed at twice its limit. Watch again, so the kill ends
        # the wait at once (nbclient's own watcher turns it into DeadKernelError).
        self._watching_after_interrupt = asyncio.ensure_future(self._async_poll_kernel_alive())
        return reply

    async def async_execute_cell(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().async_execute_cell(*args, **kwargs)
        finally:
            watching, self._watching_after_interrupt = getattr(self, "_watching_after_interrupt", None), None
            if watching is not None:
                watching.cancel()  # it would cancel the next cell's wait when that kernel dies

    execute_cell = run_sync(async_execute_cell)  # nbclient binds its own at class creation


def first_line(source: str, limit: int = 60) -> str:
    for line in source.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def names_defined(source: str) -> list[str]:
    """Top-level names a cell defines (def, class, assignment), read from its text, so it
    works even when the cell has a syntax error."""
    return [a or b for a, b in _NAME_DEFINED.findall(source)]


def describe_cell_problem(number: int, line: str, ename: str, evalue: str, timed_out: bool, limit: float) -> str:
    where = f"A célula {number} (`{line}`)"
    if timed_out:
        return f"{where} não terminou em {limit:g} s e foi interrompida: há um laço infinito?"
    if ename == "SystemExit":
        return (
            f"{where} chamou sys.exit() (ou exit/quit): um notebook não deve encerrar o Python. "
            "O restante do notebook foi executado mesmo assim."
        )
    if ename in ("SyntaxError", "IndentationError", "TabError"):
        return f"{where} tem um erro de sintaxe ({error_text(ename, evalue)}); nada do que ela define existe."
    if ename == "NotImplementedError":
        return f"{where} parou em NotImplementedError: ela usa algo que ainda não foi implementado."
    if ename == "MemoryError":
        return f"{where} ficou sem memória (MemoryError)."
    return f"{where} falhou com {error_text(ename, evalue)}."


def skipped_cell_problem(cell: Any, index: int) -> CellProblem | None:
    """A cell nbclient skipped: a problem only when it defines names (a demonstration that only
    shows results is what the tag is for). Its saved outputs are the student's, never read."""
    names = names_defined(cell.source)
    if not names:
        return None
    line, shown = first_line(cell.source), ", ".join(f"`{name}`" for name in names)
    return CellProblem(cell=index + 1, first_line=line, ename=SKIPPED_CELL, evalue="", names=names, message=(
        f"A célula {index + 1} (`{line}`) tem a tag `{SKIPPED_CELL}`: o corretor não executa células com "
        f"essa tag, então o que ela define ({shown}) não existe na correção. Tire a tag (no JupyterLab, "
        "na barra da direita, Property Inspector > Cell Tags) e salve."))


def cell_problem(cell: Any, index: int, timed_out: bool, limit: float) -> CellProblem | None:
    if SKIPPED_CELL in cell.metadata.get("tags", []):
        return skipped_cell_problem(cell, index)
    if "raises-exception" in cell.metadata.get("tags", []) and not timed_out:
        return None  # the cell shows an error on purpose
    errors = [output for output in cell.get("outputs", []) if output.get("output_type") == "error"]
    if not errors and not timed_out:
        return None
    ename = "TimeoutError" if timed_out else errors[0].get("ename", "Erro")
    evalue = "" if timed_out else errors[0].get("evalue", "")
    line = first_line(cell.source)
    return CellProblem(
        cell=index + 1,
        first_line=line,
        ename=ename,
        evalue=evalue,
        message=describe_cell_problem(index + 1, line, ename, evalue, timed_out, limit),
        names=names_defined(cell.source),
    )


def _left_out(cell: Any, index: int, ename: str, why: str, message: str) -> CellProblem:
    """A cell the grading went on without (its kernel was killed or restarted)."""
    return CellProblem(cell=index + 1, first_line=first_line(cell.source), ename=ename, evalue=why,
                       message=message, names=names_defined(cell.source))


def _megabytes(size: int) -> str:
    return f"{size / 2 ** 20:.0f} MB"


_FUNCTION_DEFINED = re.compile(r"^(?:async\s+)?def\s+([A-Za-z_]\w*)", re.M)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_FRAME = re.compile(r"^(?:Cell In\s*\[\d+\]|Input In \[\d+\]), line \d+, in (\w+)", re.M)  # frames of notebook cells


def hung_function(cell: Any, defined: set[str]) -> str | None:
    """The innermost of the notebook's own functions in the traceback of a cell interrupted at
    its time limit: the function the cell was stuck in (None when it was the cell's own code)."""
    errors = [output for output in cell.get("outputs", []) if output.get("output_type") == "error"]
    if not errors:
        return None
    text = _ANSI.sub("", "\n".join(str(line) for line in errors[-1].get("traceback", [])))
    frames = [name for name in _CELL_FRAME.findall(text) if name in defined]
    return frames[-1] if frames else None


def _refused_in(path: Path) -> dict[str, str]:
    """The student functions the kernel refused to call again (they hung a check), with why."""
    return {record["refused"]: str(record.get("reason", "")) for record in _read_records(path)
            if isinstance(record.get("refused"), str)}


def _execute_extra(client: NotebookClient, notebook: nbformat.NotebookNode, cell: Any) -> None:
    """Execute a cell of the grader's own: nbclient stores each executed cell back into
    the notebook by index, so it goes at the end for the duration and is removed after."""
    notebook.cells.append(cell)
    try:
        client.execute_cell(cell, len(notebook.cells) - 1, store_history=False)
    finally:
        notebook.cells.pop()


def _read_records(path: Path) -> list[dict]:
    try:  # written by the student's kernel, in a folder its code can write: never through a link
        text = grading_files.read_text(path, RESULTS_READ_LIMIT)
    except OSError:  # absent, or a link / pipe / folder put in its place: no results to trust
        return []
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line cut short by a dying kernel
    return records


def _last_call(path: Path, check_id: str) -> str | None:
    """The student function the check ``check_id`` was calling last (its ``calling`` records)."""
    label = None
    inside = False
    for record in _read_records(path):
        if "started" in record:
            inside = record["started"] == check_id
        elif inside and "calling" in record:
            label = record["calling"]
    return label


def _running_check(path: Path) -> str | None:
    """The id of the check that started and never finished, if any."""
    records = _read_records(path)
    finished = {r["result"]["id"] for r in records if "result" in r}
    started = [r["started"] for r in records if "started" in r]
    return next((id_ for id_ in reversed(started) if id_ not in finished), None)


# Grading is always offline, so a kernel never needs a credential; leaving them out keeps an
# instructor's key out of a batch's submissions (and of the feedback pages they can print into).


class _Grading:
    """One grading: the notebook, its kernel (restarted when needed) and what went wrong."""

    def __init__(self, notebook: nbformat.NotebookNode, workdir: Path, outcome: Execution, *,
                 limits: Limits, sandbox: Sandbox | None = None, prelaunched: Any = None):
        self.notebook = notebook
        self.workdir = workdir
        self.workdir_identity = _identity(workdir)
        self.outcome = outcome
        self.limits = limits
        self.deadline = float("inf")  # set once the first kernel is ready
        self.phase = "start"
        self.env = kernel_env(workdir)
        self.prelaunched = prelaunched
        self.sandbox = sandbox
        if sandbox is not None:
            sandbox.prepare(workdir)
        self.dog = Watchdog()
        self.generation = 0
        self.stack: ExitStack | None = None
        self.client: _Client | None = None
        self.stderr_path = workdir / "kernel-stderr-1-1.log"
        self.left_out: dict[int, CellProblem] = {}  # cell index -> why the grading went on without it
        self.reported: set[int] = set()  # cells whose problem is already in the outcome
        self.growth: dict[int, int] = {}  # cell index -> data memory it added, in the current kernel
        self.grading_timeout = 0.0  # set for each run of the checks
        self.hung_in_cells: dict[str, str] = {}  # a student function a cell was stuck in at its limit -> why

    # --- the kernel

    def timeout_for(self, cell: Any) -> float:
        if self.phase == "grading":
            return self.grading_timeout
        return max(1.0, min(self.limits.cell_seconds, self.deadline - monotonic()))

    def _make_client(self, attempt: int) -> _Client:
        client = _Client(
            self.notebook,
            kernel_name="python3",
            allow_errors=True,
            interrupt_on_timeout=True,
            record_timing=False,
            skip_cells_with_tag=SKIPPED_CELL,  # nbclient's own default, named where cell_problem reads it
            shutdown_kernel="immediate",
            startup_timeout=kernels.STARTUP_TIMEOUT,
            resources={"metadata": {"path": str(self.workdir)}},
            connection=(
                sandboxed_connection(self.workdir, self.sandbox, self.generation) if self.sandbox
                else kernels.kernel_connection(self.workdir, attempt, self.generation)
            ),
        )
        client.timeout_func = self.timeout_for
        template = getattr(self.prelaunched, "template", None)
        if template is not None and self.sandbox is None:
            # A restarted kernel (after a kill, a crash, a memory bomb) is forked from the same
            # template as the first one, so going on without a cell does not pay the imports again.
            from grader.core.forked_kernels import forked_manager_class

            client.connection["manager_class"] = forked_manager_class(template)
        if self.prelaunched is not None and self.generation == 1 and attempt == 1:
            # A kernel started while the previous submission was graded (grader/core/warm.py):
            # nbclient connects to it instead of starting one. If it died, attempt 2 starts afresh.
            client.km = self.prelaunched.take()
            client.kc = self.prelaunched.take_client()  # connected ahead by a warm session, if it was
        return client

    def start(self) -> None:
        """A fresh kernel (the first, or the next after a kill), with the memory limit set."""
        self.close_kernel()
        self.generation += 1
        self.stack = ExitStack()
        self.client, self.stderr_path = kernels.start_kernel(
            self.stack, self._make_client, self.env, self.workdir, self.generation)
        if self.deadline == float("inf"):
            self.deadline = monotonic() + self.limits.total_seconds
        self.dog.follow(self.client)
        self.growth = {}
        limit = kernels.memory_limit_cell(self.limits.memory_mb)
        if limit:
            _execute_extra(self.client, self.notebook, nbformat.v4.new_code_cell(limit))

    def restarts_left(self) -> bool:
        return self.generation <= MAX_RESTARTS

    def close_kernel(self) -> None:
        if self.stack is not None:
            try:
                self.stack.close()
            except Exception:  # noqa: BLE001 - a killed kernel may fail to shut down cleanly
                pass
            self.stack = None

    def close(self) -> None:
        self.close_kernel()
        self.dog.stop()

    def memory_used(self) -> int | None:
        return kernels.data_bytes(self.dog.pid)

    def died_of_memory(self) -> bool:
        return kernels.died_of_memory(self.limits.memory_mb, self.dog.peak, self.stderr_path)

    # --- the cells

    def run_cell(self, index: int) -> tuple[str, CellProblem | None, float]:
        """Execute one cell: (how it ended, its problem if it reported one, the time it had)."""
        cell = self.notebook.cells[index]
        allowed = self.timeout_for(cell)
        self.dog.arm(min(monotonic() + allowed + INTERRUPT_GRACE, self.deadline + KILL_GRACE), "cell")
        before = self.memory_used()
        try:
            self.client.execute_cell(cell, index)
        except DeadKernelError:
            if self.dog.fired:
                return (_TOTAL_TIMEOUT if monotonic() >= self.deadline else _IGNORED_INTERRUPT), None, allowed
            return (_OUT_OF_MEMORY if self.died_of_memory() else _DIED), None, allowed
        except CellTimeoutError:  # only if an interrupt never produced a reply
            return _TOTAL_TIMEOUT, None, allowed
        after = self.memory_used()
        if before is not None and after is not None:
            self.growth[index] = after - before
        timed_out = id(cell) in self.client.timed_out_cells
        problem = cell_problem(cell, index, timed_out, allowed)
        if timed_out:
            hung = hung_function(cell, self.defined_functions())
            if hung:
                self.hung_in_cells.setdefault(hung, f"na célula {index + 1} ela não terminou em {allowed:g} s")
        if problem and problem.ename == "MemoryError" and self.limits.memory_mb:
            return _OUT_OF_MEMORY, problem, allowed
        if timed_out and monotonic() >= self.deadline:
            return _TOTAL_TIMEOUT, problem, allowed
        return _DONE, problem, allowed

    def defined_functions(self) -> set[str]:
        """The functions the notebook's cells define at their top level (read from their text)."""
        return {name for cell in self.notebook.cells if cell.cell_type == "code"
                for name in _FUNCTION_DEFINED.findall(cell.source)}

    def leave_out(self, index: int, problem: CellProblem) -> bool:
        """Go on without cell ``index`` in a fresh kernel; False when no restart is left."""
        self.left_out[index] = problem
        self.reported.add(index)
        self.outcome.cell_problems.append(problem)
        if not self.restarts_left():
            self.outcome.stop(MEMORY_EXHAUSTED if problem.ename == "MemoryError" else TIMEOUT, notebook_error=(
                f"{problem.message} O kernel já tinha sido reiniciado {MAX_RESTARTS} vezes; nenhuma "
                "verificação pôde rodar."))
            return False
        self.start()
        return True

    def run_cells(self) -> bool:
        """Every code cell, in order, minus the ones left out; False when grading must stop."""
        while True:
            if not self._run_cells_once():
                return False
            if not self.leave_out_held_memory():
                return True
            if self.outcome.notebook_error is not None:
                return False

    def _run_cells_once(self) -> bool:
        code = [i for i, c in enumerate(self.notebook.cells) if c.cell_type == "code" and c.source.strip()]
        position = 0
        while position < len(code):
            index = code[position]
            if index in self.left_out:
                position += 1
                continue
            if monotonic() >= self.deadline:
                self.outcome.stop(TIMEOUT, notebook_error=_total_timeout_message(self.limits.total_seconds, index + 1))
                return False
            self.phase = "cells"
            verdict, problem, allowed = self.run_cell(index)
            cell = self.notebook.cells[index]
            where = f"A célula {index + 1} (`{first_line(cell.source)}`)"
            if self.workdir_deleted():  # the cell deleted the folder the kernel runs in (its cwd)
                self.outcome.stop(GRADER_ERROR, notebook_error=_deleted_workdir_message(where))
                return False
            if verdict == _DONE:
                if problem and index not in self.reported:
                    self.reported.add(index)
                    self.outcome.cell_problems.append(problem)
                position += 1
                continue
            if verdict == _IGNORED_INTERRUPT:
                left_out = _left_out(cell, index, "TimeoutError", "ignorou a interrupção", (
                    f"{where} não terminou em {allowed:g} s e ignorou a interrupção (um `except:` ou "
                    "`except BaseException` que engole o KeyboardInterrupt?). O kernel foi encerrado e "
                    "reiniciado, e o notebook seguiu sem ela."))
            elif verdict == _OUT_OF_MEMORY:
                self.outcome.memory_exhausted = True
                exhausted = f"{where} esgotou a memória do kernel (limite de {self.limits.memory_mb} MB)."
                if problem is not None and not self.holds_too_much():
                    # The allocation failed and nothing stayed behind: the notebook simply goes on.
                    problem.message = f"{exhausted} O restante do notebook foi executado mesmo assim."
                    if index not in self.reported:
                        self.reported.add(index)
                        self.outcome.cell_problems.append(problem)
                    position += 1
                    continue
                left_out = _left_out(cell, index, "MemoryError", "esgotou a memória", (
                    f"{exhausted} O kernel foi reiniciado e o notebook seguiu sem ela, para as suas funções "
                    "terem memória nas verificações."))
            elif verdict == _TOTAL_TIMEOUT:
                self.outcome.stop(TIMEOUT, notebook_error=_total_timeout_message(self.limits.total_seconds, index + 1))
                return False
            else:
                self.outcome.stop(KERNEL_DIED, notebook_error=(
                    f"O kernel do Python morreu ao executar a célula {index + 1} (`{first_line(cell.source)}`): "
                    "o código encerrou o processo (os._exit, um sinal, um travamento). Nenhuma verificação "
                    "pôde rodar."))
                return False
            if not self.leave_out(index, left_out):
                return False
            position = 0  # the cells before it run again in the fresh kernel
        return True

    def workdir_deleted(self) -> bool:
        """Is the kernel's folder gone, or a new one in its place (a check may mkdir it again)?"""
        return _identity(self.workdir) != self.workdir_identity

    def holds_too_much(self) -> bool:
        """Does the kernel hold more than HELD_MEMORY_SHARE of its limit (or cannot it tell)?"""
        used = self.memory_used()
        return used is None or used > HELD_MEMORY_SHARE * self.limits.memory_mb * 2 ** 20

    def leave_out_held_memory(self) -> bool:
        """After the last cell: when the notebook holds more than half the memory limit, the
        cell that took the most is left out (and the notebook runs again without it), so the
        checks have memory to work with. True when a cell was left out."""
        used = self.memory_used()
        if not self.limits.memory_mb or used is None or not self.growth:
            return False
        limit = self.limits.memory_mb * 2 ** 20
        index, grew = max(self.growth.items(), key=lambda item: item[1])
        if used <= HELD_MEMORY_SHARE * limit or grew <= HELD_MEMORY_SHARE / 2 * limit:
            return False
        cell = self.notebook.cells[index]
        self.outcome.memory_exhausted = True
        self.leave_out(index, _left_out(cell, index, "MemoryError", "reteve memória demais", (
            f"A célula {index + 1} (`{first_line(cell.source)}`) terminou segurando {_megabytes(grew)} de memória, "
            f"mais da metade do limite de {self.limits.memory_mb} MB do kernel, e não sobraria memória para as "
            "verificações. O notebook rodou de novo, num kernel novo, sem ela.")))
        return True

    # --- the checks

    def run_checks(self, spec: dict, spec_path: Path) -> None:
        """The planned checks; a check that hangs past its limit or kills the kernel fails with
        that reason and the rest run in a fresh kernel (with the notebook run again)."""
        results_path = Path(spec["results_path"])
        check_seconds = self.limits.check_seconds
        remaining = list(spec["plan"])
        # Student functions not to call again: one that hung a cell or a check, or took its kernel down.
        refused: dict[str, str] = dict(self.hung_in_cells)
        while remaining:
            self.phase = "grading"
            self.grading_timeout = check_seconds * max(1, len(remaining)) + 30.0
            workdir = spec["workdir"] if self.generation == 1 else f"{spec['workdir']}-{self.generation}"
            grading_files.write_new(spec_path, json.dumps(dict(spec, plan=remaining, workdir=workdir, refused=refused, cell_problems=[
                {k: p.to_dict()[k] for k in ("cell", "first_line", "ename", "evalue", "names")}
                for p in self.outcome.cell_problems
            ]), ensure_ascii=False))
            self.dog.arm(monotonic() + self.grading_timeout + KILL_GRACE, "grading")
            self.dog.watch_checks(results_path, check_seconds + INTERRUPT_GRACE)
            grading_cell = nbformat.v4.new_code_cell(grading_cell_source(spec_path, spec["exercise"]))
            try:
                _execute_extra(self.client, self.notebook, grading_cell)
                died = False
            except DeadKernelError:
                died = True
            self.dog.watch_checks(None)
            if self.workdir_deleted():  # a student function deleted the kernel's cwd, results and all
                self.outcome.stop(GRADER_ERROR, grading_error=_deleted_workdir_message(
                    "Durante as verificações, o seu código", "As verificações não puderam terminar."))
                return
            if died:
                culprit = _running_check(results_path)
                if self.dog.fired == "grading" or culprit is None:
                    if self.dog.fired:
                        self.outcome.stop(TIMEOUT, grading_error=(
                            f"A correção não terminou em {self.grading_timeout:g} s e o kernel teve de ser encerrado."))
                    else:
                        self.outcome.stop(KERNEL_DIED)  # the engine names the check that was running
                    return
                stuck = _last_call(results_path, culprit)
                note, reason = self._check_stopped(stuck)
                refused.update(_refused_in(results_path))  # functions that hung a check in the lost kernel
                if stuck:
                    refused.setdefault(stuck, f"na verificação {culprit} ela {reason}, e o kernel teve de ser encerrado")
                self.outcome.check_notes[culprit] = note
                done = {r["result"]["id"] for r in _read_records(results_path) if "result" in r}
                remaining = [p for p in remaining if p["id"] not in done and p["id"] != culprit]
                if not remaining:
                    return
                if not self.restarts_left():
                    self.outcome.stop(self.outcome.error_kind or KERNEL_DIED, grading_error=(
                        f"Não executada: o kernel do Python já tinha sido reiniciado {MAX_RESTARTS} vezes nesta correção."))
                    return
                self.start()
                self.deadline = monotonic() + self.limits.total_seconds  # the notebook runs again, with its own time
                if not self.run_cells():
                    # the checks that finished keep their results; the rest say why they did not run
                    self.outcome.grading_error, self.outcome.notebook_error = self.outcome.notebook_error, None
                    return
                continue
            if id(grading_cell) in self.client.timed_out_cells:
                self.outcome.stop(TIMEOUT, grading_error=(
                    f"A correção não terminou em {self.grading_timeout:g} s e foi interrompida "
                    "(alguma função sua prende o Python mesmo depois do limite de tempo?)."
                ))
                return
            errors = [o for o in grading_cell.outputs if o.get("output_type") == "error"]
            if errors and errors[0].get("ename") == "MemoryError":
                self.outcome.memory_exhausted = True
                culprit = _running_check(results_path)
                self.outcome.stop(MEMORY_EXHAUSTED, grading_error=(
                    "Não executada: a memória do kernel acabou"
                    + (f" durante a verificação {culprit}" if culprit else "")
                    + f" (limite de {self.limits.memory_mb} MB)."))
            elif errors:
                self.outcome.stop(GRADER_ERROR, grading_error=(
                    "A correção parou com um erro inesperado "
                    f"({error_text(errors[0].get('ename'), errors[0].get('evalue'))}). Avise o instrutor."
                ))
            return

    def _check_stopped(self, stuck: str | None) -> tuple[str, str]:
        """(the failed check's message, what the function did) when its kernel was lost."""
        who = f"`{stuck}`" if stuck else "o seu código"
        after = ("O kernel foi encerrado; as verificações seguintes rodaram num kernel novo"
                 + (f", sem chamar `{stuck}` de novo." if stuck else "."))
        if self.dog.fired == "check":
            kind, reason = TIMEOUT, (f"não terminou em {self.limits.check_seconds:g} s e ignorou a interrupção (um `except:` "
                                     "ou `except BaseException` dentro de um laço engole o aviso de tempo esgotado)")
        elif self.died_of_memory():
            self.outcome.memory_exhausted = True
            kind, reason = MEMORY_EXHAUSTED, f"esgotou a memória do kernel (limite de {self.limits.memory_mb} MB)"
        else:
            kind, reason = KERNEL_DIED, "derrubou o kernel do Python (um sinal, os._exit, um travamento)"
        self.outcome.error_kind = self.outcome.error_kind or kind  # the grading went on; the kind says what happened
        return f"Durante esta verificação, {who} {reason}. {after}", reason


def execute_and_grade(
    notebook: nbformat.NotebookNode,
    *,
    workdir: Path,
    spec: dict,
    limits: Limits,
    sandbox: Sandbox | None = None,
    prelaunched: Any = None,
) -> Execution:
    """Run ``notebook`` (an in-memory copy; no file is written) and then the checks in ``spec``.

    ``spec`` is the runner's input minus ``cell_problems``, which is added here once
    the notebook has run. ``limits.total_seconds`` counts from the moment the kernel is ready,
    so a slow start on a busy machine never eats into the notebook's time.
    """
    outcome = Execution()
    children_before = kernels.children()
    abandoned = False
    grading = _Grading(notebook, workdir, outcome, limits=limits, sandbox=sandbox, prelaunched=prelaunched)
    try:
        grading.start()
        if grading.run_cells():
            grading.run_checks(spec, workdir / "grading-spec.json")
    except KernelStartFailed as failure:
        if grading.phase == "grading":  # a restart between checks: the checks that finished keep their results
            outcome.stop(KERNEL_START_FAILED, grading_error=str(failure))
        else:
            outcome.stop(KERNEL_START_FAILED, notebook_error=str(failure))
    except Exception as error:  # the connection to a running kernel broke
        if grading.workdir_deleted():  # the student's code deleted the folder it runs in (its cwd)
            outcome.stop(GRADER_ERROR, notebook_error=_deleted_workdir_message("O seu código"))
        else:
            tail = kernels.stderr_tail(grading.stderr_path)
            reason = os_reason(error) if isinstance(error, OSError) else str(error)
            outcome.stop(GRADER_ERROR, notebook_error=(
                f"Não consegui executar o notebook num kernel novo ({error_text(type(error).__name__, reason)})."
                + (f"\n{tail}" if tail else "")
            ))
    except BaseException:
        # Ctrl-C (or a signal raised as one) mid-grading: nbclient's shutdown may be cut short
        # by it, and a kernel in its own session would outlive the command that started it.
        abandoned = True
        grading.dog.kill_now()
        kernels.kill_kernel_of(grading.client)  # one that started but is not watched yet
        raise
    finally:
        grading.close()
        if abandoned:
            kernels.kill_new_children(children_before)
    outcome.records = _read_records(Path(spec["results_path"]))
    return outcome


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        found = folder.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _deleted_workdir_message(who: str, consequence: str = "Nenhuma verificação pôde rodar.") -> str:
    return (f"{who} apagou a pasta em que o notebook roda durante a correção (a pasta atual do kernel, "
            f"os.getcwd()), e a correção não pôde continuar. {consequence} Apague só o que o seu código criou.")


def _total_timeout_message(total: float, cell_number: int) -> str:
    return (
        f"O notebook não terminou de executar dentro do limite total de {total:g} s "
        f"(parou na célula {cell_number}). Nenhuma verificação pôde rodar."
    )
