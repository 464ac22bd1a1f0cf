"""Execute a student's notebook in a fresh kernel, then run the checks in that same kernel.

One kernel per grading: nbclient runs the notebook's code cells (errors recorded,
execution goes on, per-cell and total time limits), then one extra request runs
``grader.checks.runner.run_from_file`` inside the kernel. A watchdog thread kills
the kernel if a deadline passes and an interrupt did not help, so nothing hangs.
A kernel that fails to start (the student's code has not run yet) is started once
more; if that fails too, the report says the kernel could not start, never that it died.
"""
from __future__ import annotations

import json
import os
import re
import signal
import threading
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import Any, Callable

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from grader.environment import GRADER_ENV
from grader.results import GRADER_ERROR, KERNEL_DIED, KERNEL_START_FAILED, TIMEOUT, CellProblem

KILL_GRACE = 10.0  # seconds after a deadline before the watchdog kills an unresponsive kernel
START_ATTEMPTS = 2  # a kernel that fails to start is started once more before grading gives up
STARTUP_TIMEOUT = 60  # seconds one start may take (until the kernel answers) before it counts as failed
_UNIX_SOCKET_PATH_LIMIT = 100  # sun_path holds 104 bytes on macOS, 108 on Linux
_NAME_DEFINED = re.compile(r"^(?:(?:async\s+)?def|class)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)", re.M)


@dataclass
class Execution:
    cell_problems: list[CellProblem] = field(default_factory=list)
    notebook_error: str | None = None  # the notebook could not be run to the end
    grading_error: str | None = None  # the checks could not all run
    error_kind: str | None = None  # one of grader.results.ERROR_KINDS when either stopped short
    records: list[dict] = field(default_factory=list)

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
        self.km = self.kernel_manager_class(kernel_name=self.kernel_name, config=self.config, **self.connection)
        return self.km

    async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
        if cell is not None:
            self.timed_out_cells.add(id(cell))
        return await super()._async_handle_timeout(timeout, cell)


class _Watchdog:
    """Kills the kernel process when the armed deadline passes."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pgid: int | None = None
        self.fired = False
        self._deadline: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="grader-watchdog", daemon=True)
        self._thread.start()

    def arm(self, deadline: float) -> None:
        self._deadline = deadline

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            if self._deadline is not None and self.pid and monotonic() > self._deadline:
                self.fired = True
                self._deadline = None
                try:
                    if self.pgid and hasattr(os, "killpg") and self.pgid != os.getpgid(0):
                        os.killpg(self.pgid, signal.SIGKILL)  # the kernel and anything it spawned
                    else:
                        os.kill(self.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
                except OSError:
                    pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


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
        return f"{where} tem um erro de sintaxe ({ename}: {evalue}); nada do que ela define existe."
    if ename == "NotImplementedError":
        return f"{where} parou em NotImplementedError: ela usa algo que ainda não foi implementado."
    if ename == "MemoryError":
        return f"{where} ficou sem memória (MemoryError)."
    return f"{where} falhou com {ename}: {evalue}"


def cell_problem(cell: Any, index: int, timed_out: bool, limit: float) -> CellProblem | None:
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


def _kernel_ids(client: NotebookClient) -> tuple[int | None, int | None]:
    provisioner = getattr(client.km, "provisioner", None)
    pid, pgid = getattr(provisioner, "pid", None), getattr(provisioner, "pgid", None)
    return (pid if isinstance(pid, int) else None, pgid if isinstance(pgid, int) else None)


def _execute_extra(client: NotebookClient, notebook: nbformat.NotebookNode, cell: Any) -> None:
    """Execute a cell of the grader's own: nbclient stores each executed cell back into
    the notebook by index, so it goes at the end for the duration and is removed after."""
    notebook.cells.append(cell)
    try:
        client.execute_cell(cell, len(notebook.cells) - 1, store_history=False)
    finally:
        notebook.cells.pop()


def _read_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line cut short by a dying kernel
    return records


def _stderr_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if "WARNING" not in line][-lines:]
    return "\n".join(kept)


def kernel_connection(workdir: Path, attempt: int = 1) -> dict[str, Any]:
    """How the grader talks to the kernel: settings for jupyter_client's KernelManager.

    Over TCP, jupyter_client chooses the kernel's five ports by binding to port 0 and
    closing the socket; the kernel binds them only once it has started, a second or
    more later on a busy machine. Any process that binds one of them in between (another
    kernel starting at the same time, say) makes the new kernel exit at once with
    "Address already in use". Unix sockets named inside this grading's own folder
    cannot be taken by anyone else, so the first attempt uses them wherever they exist;
    a second attempt uses TCP, in case that folder cannot hold sockets (some mounted drives).
    """
    prefix = workdir / "kernel"
    short_enough = len(os.fsencode(str(prefix))) + len("-5") < _UNIX_SOCKET_PATH_LIMIT
    if os.name == "posix" and short_enough and attempt == 1:
        return {"transport": "ipc", "ip": str(prefix)}
    return {"transport": "tcp"}


class KernelStartFailed(Exception):
    """No attempt to start a kernel succeeded; ``str()`` is the Portuguese explanation."""


def _discard(client: NotebookClient) -> None:
    """Stop whatever a failed start left behind (nbclient cleans up most, not every, case)."""
    if client.km is None:
        return
    try:
        client._cleanup_kernel()
    except Exception:  # noqa: BLE001 - the kernel is gone already, or never started
        pass


def _start_kernel(
    stack: ExitStack, make_client: Callable[[int], _Client], env: dict[str, str], workdir: Path
) -> tuple[_Client, Path]:
    """Start a kernel, once more if the first start fails; (client, its stderr log).

    A failed start never ran any of the student's code, so a second start is safe, and
    it keeps a passing hiccup of the machine from costing a student a grade.
    """
    failures: list[tuple[BaseException, Path]] = []
    for attempt in range(1, START_ATTEMPTS + 1):
        client = make_client(attempt)
        stderr_path = workdir / f"kernel-stderr-{attempt}.log"
        stderr = stack.enter_context(open(stderr_path, "wb"))
        try:
            stack.enter_context(client.setup_kernel(env=env, stderr=stderr, stdout=stderr))
        except Exception as error:  # the kernel died at start, never answered, or could not be launched
            _discard(client)
            failures.append((error, stderr_path))
            continue
        return client, stderr_path
    error, stderr_path = failures[-1]
    tail = _stderr_tail(stderr_path)
    raise KernelStartFailed(
        f"Não consegui iniciar o kernel do Python que executaria o notebook (tentei {len(failures)} "
        f"vezes; {type(error).__name__}: {error}). O problema está na máquina ou na instalação do "
        "Jupyter, não no seu notebook: rode a correção de novo e, se o erro continuar, avise o instrutor."
        + (f"\n{tail}" if tail else "")
    )


def execute_and_grade(
    notebook: nbformat.NotebookNode,
    *,
    workdir: Path,
    spec: dict,
    cell_timeout: float,
    total_timeout: float,
    grading_timeout: float,
    memory_limit_mb: int | None = None,
) -> Execution:
    """Run ``notebook`` (an in-memory copy; no file is written) and then the checks in ``spec``.

    ``spec`` is the runner's input minus ``cell_problems``, which is added here once
    the notebook has run. ``total_timeout`` counts from the moment the kernel is ready,
    so a slow start on a busy machine never eats into the notebook's time.
    """
    outcome = Execution()
    results_path = Path(spec["results_path"])
    spec_path = workdir / "grading-spec.json"
    deadline = float("inf")  # set once the kernel is ready
    phase: dict[str, Any] = {"name": "start", "cell": None}

    def timeout_for(cell: Any) -> float:
        if phase["name"] == "grading":
            return grading_timeout
        return max(1.0, min(cell_timeout, deadline - monotonic()))

    def make_client(attempt: int) -> _Client:
        client = _Client(
            notebook,
            kernel_name="python3",
            allow_errors=True,
            interrupt_on_timeout=True,
            record_timing=False,
            shutdown_kernel="immediate",
            startup_timeout=STARTUP_TIMEOUT,
            resources={"metadata": {"path": str(workdir)}},
            connection=kernel_connection(workdir, attempt),
        )
        client.timeout_func = timeout_for
        return client

    env = {key: value for key, value in os.environ.items() if key != "JPY_SESSION_NAME"}
    env[GRADER_ENV] = "1"
    dog = _Watchdog()
    stderr_path = workdir / "kernel-stderr-1.log"
    try:
        with ExitStack() as stack:
            client, stderr_path = _start_kernel(stack, make_client, env, workdir)
            phase["name"] = "cells"
            deadline = monotonic() + total_timeout
            dog.pid, dog.pgid = _kernel_ids(client)
            dog.arm(deadline + KILL_GRACE)
            if memory_limit_mb and os.name == "posix":
                # RLIMIT_DATA counts heap and private anonymous mappings (Linux >= 4.7): the
                # memory student code allocates, without the shared libraries that RLIMIT_AS
                # would also count (a kernel with anthropic loaded maps ~800 MB of them).
                limit = int(memory_limit_mb) * 1024 * 1024
                prelude = nbformat.v4.new_code_cell(
                    f"__import__('resource').setrlimit(__import__('resource').RLIMIT_DATA, ({limit}, {limit}))"
                )
                _execute_extra(client, notebook, prelude)
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type != "code" or not cell.source.strip():
                    continue
                if monotonic() >= deadline:
                    outcome.stop(TIMEOUT, notebook_error=_total_timeout_message(total_timeout, index + 1))
                    break
                phase["cell"] = index
                allowed = timeout_for(cell)
                client.execute_cell(cell, index)
                timed_out = id(cell) in client.timed_out_cells
                problem = cell_problem(cell, index, timed_out, allowed)
                if problem:
                    outcome.cell_problems.append(problem)
                if timed_out and monotonic() >= deadline:
                    outcome.stop(TIMEOUT, notebook_error=_total_timeout_message(total_timeout, index + 1))
                    break
            if outcome.notebook_error is None:
                phase["name"] = "grading"
                spec = dict(spec, cell_problems=[
                    {k: p.to_dict()[k] for k in ("cell", "first_line", "ename", "evalue", "names")}
                    for p in outcome.cell_problems
                ])
                spec_path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
                dog.arm(monotonic() + grading_timeout + KILL_GRACE)
                grading_cell = nbformat.v4.new_code_cell(
                    "__import__('grader.checks.runner', fromlist=['run_from_file'])"
                    f".run_from_file({json.dumps(str(spec_path))})"
                )
                _execute_extra(client, notebook, grading_cell)
                if id(grading_cell) in client.timed_out_cells:
                    outcome.stop(TIMEOUT, grading_error=(
                        f"A correção não terminou em {grading_timeout:g} s e foi interrompida "
                        "(alguma função sua prende o Python mesmo depois do limite de tempo?)."
                    ))
                else:
                    errors = [o for o in grading_cell.outputs if o.get("output_type") == "error"]
                    if errors:
                        outcome.stop(GRADER_ERROR, grading_error=(
                            "A correção parou com um erro inesperado "
                            f"({errors[0].get('ename')}: {errors[0].get('evalue')}). Avise o instrutor."
                        ))
    except KernelStartFailed as failure:
        outcome.stop(KERNEL_START_FAILED, notebook_error=str(failure))
    except DeadKernelError:
        if phase["name"] == "cells":
            index = phase["cell"]
            if dog.fired:
                outcome.stop(TIMEOUT, notebook_error=_total_timeout_message(total_timeout, (index or 0) + 1))
            else:
                cell = notebook.cells[index] if index is not None else None
                where = f"a célula {index + 1} (`{first_line(cell.source)}`)" if cell is not None else "o início"
                outcome.stop(KERNEL_DIED, notebook_error=(
                    f"O kernel do Python morreu ao executar {where}: o código encerrou o processo "
                    "(os._exit, um sinal, um travamento) ou estourou a memória. Nenhuma verificação "
                    "pôde rodar."
                ))
        elif dog.fired:
            outcome.stop(TIMEOUT, grading_error=(
                f"A correção não terminou em {grading_timeout:g} s e o kernel teve de ser encerrado."
            ))
        else:
            outcome.stop(KERNEL_DIED)  # the engine names the check that was running
    except CellTimeoutError:  # only if an interrupt never produced a reply
        outcome.stop(TIMEOUT, notebook_error=_total_timeout_message(total_timeout, (phase["cell"] or 0) + 1))
    except Exception as error:  # the connection to a running kernel broke
        tail = _stderr_tail(stderr_path)
        outcome.stop(GRADER_ERROR, notebook_error=(
            f"Não consegui executar o notebook num kernel novo ({type(error).__name__}: {error})."
            + (f"\n{tail}" if tail else "")
        ))
    finally:
        dog.stop()
    outcome.records = _read_records(results_path)
    return outcome


def _total_timeout_message(total: float, cell_number: int) -> str:
    return (
        f"O notebook não terminou de executar dentro do limite total de {total:g} s "
        f"(parou na célula {cell_number}). Nenhuma verificação pôde rodar."
    )
