"""`grade batch SUBMISSIONS_DIR exercise-N`: grade a whole class into a CSV gradebook.

Each submission (an ``*.ipynb`` file, or a folder per student holding the
notebook) is graded by the same engine as `grade exercise-N`, in a fresh kernel
under time and memory limits. `-j` runs that many warm worker processes
(grader/core/warm.py), each grading one submission after another while the next
one's kernel is already starting. Whatever happens to one submission (timeout,
dead kernel, invalid file, a worker that dies or hangs: it is replaced) ends up
as a row saying so; the batch always goes on. Progress is drawn on stderr: a
live bar on a terminal, a line per submission otherwise.

This isolates submissions from each other and from the batch; with ``--sandbox``
each kernel also runs under bubblewrap (grader/core/sandbox.py): no network, no other
submission or private fixture in sight, limits on processes and memory.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

from grader.core import results
from grader.core.atomic_write import write_atomic
from grader.core.csv_cells import text_cell
from grader.core.errors import os_reason
from grader.reports import console
from grader.core.limits import DEFAULT_MEMORY_MB, DEFAULT_TOTAL_SECONDS, Limits  # the same defaults as grade and check()
from grader.core.plural import quantity
from grader.core.points import shown as shown_points
from grader.core.leftover_processes import BATCH_ID_ENV, end_batch_processes, new_batch_id
from grader.core.scratch import BATCH, scratch_folder
from grader.core.warm import BATCH_PID_ENV

# Extra time the worker gets beyond the grading timeout (checks, shutdown) before the
# batch kills it as a last resort; worker_deadline adds the kernel's start-up time.
WORKER_GRACE_SECONDS = 60.0

# Row statuses, stable words an instructor can filter on in a spreadsheet.
PASSED = "aprovado"
INCOMPLETE = "incompleto"
TIMED_OUT = "tempo_esgotado"
KERNEL_DIED = "kernel_morreu"
KERNEL_START_FAILED = "kernel_nao_iniciou"
INVALID_NOTEBOOK = "notebook_invalido"
NO_NOTEBOOK = "sem_notebook"
NOTEBOOK_ERROR = "erro_no_notebook"
WORKER_FAILED = "erro_na_correcao"
NOT_GRADED = "nao_corrigido"
MEMORY_EXHAUSTED = "memoria_esgotada"
# Each status as a student reads it on a feedback page.
STATUS_WORDS = {
    PASSED: "aprovado, todas as verificações passaram",
    INCOMPLETE: "incompleto, ainda há verificações que não passaram",
    TIMED_OUT: "o tempo limite acabou antes do fim",
    KERNEL_DIED: "o Python parou no meio da correção (o kernel morreu)",
    KERNEL_START_FAILED: "o Python não pôde ser iniciado para corrigir o notebook",
    INVALID_NOTEBOOK: "o arquivo entregue não é um notebook válido",
    NO_NOTEBOOK: "nenhum notebook foi encontrado na entrega",
    NOTEBOOK_ERROR: "o notebook não pôde ser executado",
    WORKER_FAILED: "a correção parou com um erro que não é do seu código",
    NOT_GRADED: "a entrega não foi corrigida",
    MEMORY_EXHAUSTED: "a memória do Python acabou durante a correção",
}


@dataclass(frozen=True)
class Submission:
    name: str
    notebook: Path | None
    problem: str | None = None
    label: str = ""  # the notebook's path relative to the submissions folder


@dataclass
class Row:
    submission: str
    notebook: str
    status: str
    level_scores: dict[int, float | None] = field(default_factory=dict)
    total: float = 0.0
    passed_checks: int = 0
    total_checks: int = 0
    message: str = ""
    seconds: float = 0.0
    points: float = 0.0
    max_points: float | None = None  # None when nothing was graded (the gradebook fills it in)
    report: Any = field(default=None, repr=False, compare=False)  # the GradeReport, for feedback pages


@dataclass(frozen=True)
class BatchOptions:
    exercise: str
    limits: Limits = Limits.from_budget(DEFAULT_TOTAL_SECONDS)  # every submission's, whole to its kernel
    fixture_dirs: tuple[Path, ...] = ()
    # Upper bound on one worker's life: notebook time + every check's time + margin.
    # Past it the batch kills the worker; the engine's own limits normally act first.
    hard_timeout: float = DEFAULT_TOTAL_SECONDS + WORKER_GRACE_SECONDS
    sandbox: bool = False  # each kernel under bubblewrap (grader/core/sandbox.py)


# ------------------------------------------------------------- submissions


def _visible(path: Path) -> bool:
    return not path.name.startswith(".") and path.name not in {"__MACOSX", "__pycache__"}


def _notebooks_in(folder: Path) -> list[Path]:
    found = []
    for path in folder.rglob("*.ipynb"):
        relative = path.relative_to(folder)
        if all(_visible(Path(part)) for part in relative.parts) and ".ipynb_checkpoints" not in relative.parts:
            found.append(path)
    return sorted(found, key=lambda p: (len(p.relative_to(folder).parts), str(p)))


def notebook_in_folder(folder: Path, exercise: str) -> tuple[Path | None, str | None]:
    """(the notebook a student's folder hands in, or None and why): the one named
    ``exercise-N.ipynb`` at any depth, else the folder's only notebook."""
    notebooks = _notebooks_in(folder)
    preferred = [path for path in notebooks if path.name == f"{exercise}.ipynb"]
    if preferred:
        return preferred[0], None
    if len(notebooks) == 1:
        return notebooks[0], None
    if not notebooks:
        return None, "nenhum notebook .ipynb na pasta"
    return None, f"{len(notebooks)} notebooks na pasta e nenhum se chama {exercise}.ipynb"


def find_submissions(folder: Path, exercise: str) -> tuple[list[Submission], list[str]]:
    """(submissions, ignored entry names). Files are `*.ipynb`; folders hold one notebook."""
    submissions: list[Submission] = []
    ignored: list[str] = []
    folder = Path(folder)
    entries = sorted((entry for entry in folder.iterdir() if _visible(entry)), key=lambda p: p.name)
    stems = [entry.stem for entry in entries if entry.is_file() and entry.suffix == ".ipynb"]
    names = [entry.name for entry in entries if entry.is_dir()]
    taken = stems + names
    def found(name: str, notebook: Path) -> Submission:
        return Submission(name, notebook, None, notebook.relative_to(folder).as_posix())

    for entry in entries:
        if entry.is_file() and entry.suffix == ".ipynb":
            name = entry.stem if taken.count(entry.stem) == 1 else entry.name
            submissions.append(found(name, entry))
        elif entry.is_dir():
            notebook, problem = notebook_in_folder(entry, exercise)
            if notebook is not None:
                submissions.append(found(entry.name, notebook))
            else:
                submissions.append(Submission(entry.name, None, problem, entry.name + "/"))
        else:
            ignored.append(entry.name)
    return submissions, ignored


# ------------------------------------------------------------------ rows


STATUS_BY_ERROR_KIND = {
    results.TIMEOUT: TIMED_OUT,
    results.KERNEL_DIED: KERNEL_DIED,
    results.KERNEL_START_FAILED: KERNEL_START_FAILED,
    results.INVALID_NOTEBOOK: INVALID_NOTEBOOK,
    results.NOTEBOOK_UNREADABLE: NOTEBOOK_ERROR,
    results.GRADER_ERROR: WORKER_FAILED,
    results.MEMORY_EXHAUSTED: MEMORY_EXHAUSTED,
}


def status_for_error_kind(kind: str | None) -> str:
    """The row status for a report that stopped short, from the kind the engine recorded."""
    return STATUS_BY_ERROR_KIND.get(kind, NOTEBOOK_ERROR)


# (status, reason) of a row whose checks, not the notebook, stopped short; each
# check's own message in the report says which one was running.
_CHECKS_STOPPED = {
    results.KERNEL_DIED: (KERNEL_DIED, "o kernel morreu durante as verificações"),
    results.TIMEOUT: (TIMED_OUT, "as verificações passaram do limite de tempo"),
    results.GRADER_ERROR: (WORKER_FAILED, "a correção parou com um erro inesperado"),
    results.MEMORY_EXHAUSTED: (MEMORY_EXHAUSTED, "a memória do kernel acabou"),
}


def _percent(value: float) -> float:
    return round(100.0 * value, 1)


def row_from_report(submission: Submission, report: Any, levels: list[int], seconds: float = 0.0) -> Row:
    graded_levels = report.levels()
    level_scores = {
        level: (_percent(report.level_score(level)) if graded_levels.get(level) else None)
        for level in levels
    }
    passed = sum(check.passed for check in report.checks)
    total = len(report.checks)
    failed = [check for check in report.checks if not check.passed]
    timed_out_cells = [p for p in getattr(report, "cell_problems", []) if p.ename == "TimeoutError"]
    names = [f"N{check.level} {check.fixture + ': ' if check.fixture else ''}{check.title}" for check in failed[:3]]
    more = f" (e mais {len(failed) - 3})" if len(failed) > 3 else ""
    failures = ("falhou: " + "; ".join(names) + more) if failed else ""
    kind = getattr(report, "notebook_error_kind", None)
    if report.notebook_error:
        status = status_for_error_kind(kind)
        message = str(report.notebook_error)
    elif kind in _CHECKS_STOPPED:
        status, reason = _CHECKS_STOPPED[kind]
        memory_cells = [p for p in getattr(report, "cell_problems", []) if p.ename == "MemoryError"]
        if kind == results.MEMORY_EXHAUSTED and memory_cells:
            reason = memory_cells[0].message  # it names the cell; the functions elsewhere were still graded
        message = "; ".join(filter(None, [reason, failures]))
    elif timed_out_cells:
        # One cell looped past its own limit, and the grading went on to the end: the checks
        # decide the status (a "tempo esgotado" beside a score of 80 would read as a contradiction);
        # the message starts with the cell, and the class report lists it among the troubles.
        status = PASSED if total and not failed else INCOMPLETE
        message = " ".join(filter(None, [timed_out_cells[0].message,
                                         failures or f"todas as {total} verificações passaram"]))
    elif total and not failed:
        status, message = PASSED, f"todas as {total} verificações passaram"
    else:
        status = INCOMPLETE
        # The notebook's own first error explains the failures after it (an unwritten stub is no error).
        broken_cell = next((p.message for p in getattr(report, "cell_problems", [])
                            if p.ename != "NotImplementedError"), "")
        message = " ".join(filter(None, [broken_cell, failures])) or "nenhuma verificação rodou"
    return Row(
        submission=submission.name,
        notebook=submission.label,
        status=status,
        level_scores=level_scores,
        total=_percent(report.score) if total else 0.0,
        passed_checks=passed,
        total_checks=total,
        message=" ".join(message.split()),
        seconds=seconds,
        points=report.points_earned,
        max_points=report.points_possible,
        report=report,
    )


def failure_row(submission: Submission, status: str, message: str, levels: list[int], seconds: float = 0.0) -> Row:
    return Row(
        submission=submission.name,
        notebook=submission.label,
        status=status,
        level_scores={level: None for level in levels},
        message=" ".join(message.split()),
        seconds=seconds,
    )


# ----------------------------------------------------------------- worker


def _worker_command(options: BatchOptions, template_address: str | None = None) -> list[str]:
    """A warm worker (grader/core/warm.py) for this batch: it grades one task after another."""
    command = [sys.executable, "-m", "grader.instructor.batch", "--serve", options.exercise,
               "--limits", json.dumps(options.limits.to_json())]
    for folder in options.fixture_dirs:
        command += ["--fixtures", str(folder)]
    if options.sandbox:
        command.append("--sandbox")
    elif template_address:
        command += ["--template", template_address]
    return command


@contextlib.contextmanager
def kernel_template(options: BatchOptions, needed: bool = True, parent: Path | None = None,
                    batch_id: str | None = None) -> Iterator[str | None]:
    """The address of one kernel template for all of the batch's workers (None in the sandbox, or where
    forked kernels are not available): its imports run while the workers start."""
    if options.sandbox or not needed:
        yield None
        return
    from grader.core.environment import kernel_env
    from grader.core.forked_kernels import TemplateProcess

    # A forked kernel never execs: /proc shows the environment the template started with, so
    # the batch's name goes there too, or the sweep would miss what a kernel forks.
    env = {**kernel_env(), BATCH_ID_ENV: batch_id} if batch_id else kernel_env()
    template = TemplateProcess.start(options.exercise, env, parent=None if parent is None else str(parent))
    try:
        yield None if template is None or template.broken else template.address
    finally:
        if template is not None:
            template.close()


class WorkerPool:
    """Starts worker processes and can kill every one still alive (Ctrl-C)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._alive: set[subprocess.Popen] = set()
        self.cancelled = False
        # The name the workers, their kernels and what those start carry in their environment,
        # so that what killed workers left running is ended before the batch's folder is
        # removed (grader/core/leftover_processes.py).
        self.batch_id = new_batch_id()
        # Where the workers (and their kernels) make their temporary folders: the batch's
        # scratch folder, removed by the batch even when it had to kill them.
        self.temp_root: Path | None = None

    def start(self, command: list[str], stderr: Any) -> subprocess.Popen | None:
        with self._lock:
            if self.cancelled:
                return None
            env = {**os.environ, BATCH_PID_ENV: str(os.getpid()),  # the worker dies with the batch
                   BATCH_ID_ENV: self.batch_id}
            if self.temp_root is not None:
                env["TMPDIR"] = str(self.temp_root)
            process = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,  # Ctrl-C in the terminal reaches the batch only
            )
            self._alive.add(process)
            return process

    def forget(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._alive.discard(process)

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            process.kill()

    def kill_remaining(self) -> None:
        with self._lock:
            for process in list(self._alive):
                self.kill(process)

    def cancel_all(self) -> None:
        with self._lock:
            self.cancelled = True
            for process in list(self._alive):
                self.kill(process)


class WarmWorker:
    """One job's worker process, started on first use and again after it dies or hangs."""

    def __init__(self, options: BatchOptions, pool: WorkerPool, template_address: str | None = None):
        self.options = options
        self.pool = pool
        self.template_address = template_address
        self.process: subprocess.Popen | None = None
        self.stderr = tempfile.TemporaryFile()

    def run(self, notebook: Path, result: Path, more: bool, timeout: float) -> tuple[int | None, str]:
        """(0 when the worker answered, its exit code when it died, None past ``timeout``; its stderr)."""
        if self.process is None:
            self.process = self.pool.start(_worker_command(self.options, self.template_address), self.stderr)
            if self.process is None:
                return None, "cancelado"
        process = self.process
        self.stderr.seek(0, os.SEEK_END)
        offset = self.stderr.tell()
        task = json.dumps({"notebook": str(notebook), "result": str(result), "more": more}) + "\n"
        try:
            process.stdin.write(task.encode())
            process.stdin.flush()
            answered = _read_line(process, time.monotonic() + timeout)
        except (BrokenPipeError, OSError):
            answered = b""
        if answered is None:  # still working past the deadline
            self._end(kill=True)
            return None, ""
        if answered.strip() == b"done":
            return 0, ""
        self._end(kill=True)  # it died (or answered nonsense): a new one takes the next task
        self.stderr.seek(offset)
        return process.returncode if process.returncode is not None else -9, self.stderr.read().decode("utf-8", "replace")[-2000:]

    def _end(self, kill: bool) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if kill:
            self.pool.kill(process)
        else:
            with contextlib.suppress(OSError):
                process.stdin.close()  # the worker ends its loop and discards its spare kernel
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.pool.kill(process)
            process.wait()
        self.pool.forget(process)

    def close(self) -> None:
        self._end(kill=False)
        self.stderr.close()


def _read_line(process: subprocess.Popen, deadline: float) -> bytes | None:
    """The worker's next answer line; b"" when it closed its output (it died); None at the deadline."""
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([process.stdout], [], [], min(remaining, 1.0))
        if not ready:
            continue
        chunk = os.read(process.stdout.fileno(), 1)
        if not chunk:
            process.wait()
            return b""
        line += chunk
    return line


def grade_submission(submission: Submission, options: BatchOptions, levels: list[int], worker: WarmWorker,
                     more: bool = False) -> Row:
    if submission.notebook is None:
        return failure_row(submission, NO_NOTEBOOK, submission.problem or "notebook não encontrado", levels)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="grade-batch-", dir=worker.pool.temp_root) as scratch:
        result_path = Path(scratch) / "result.json"
        code, stderr = worker.run(Path(submission.notebook).resolve(), result_path, more, options.hard_timeout)
        seconds = time.monotonic() - started
        if worker.pool.cancelled and not result_path.exists():
            return failure_row(submission, NOT_GRADED, "lote interrompido antes desta correção terminar", levels, seconds)
        if code is None:
            return failure_row(
                submission, TIMED_OUT,
                f"a correção passou de {options.hard_timeout:g} s e foi interrompida à força",
                levels, seconds,
            )
        try:
            payload = json.loads(result_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            last_line = next((line for line in reversed(stderr.strip().splitlines()) if line.strip()), "")
            how = f"terminou com o sinal {-code}" if code < 0 else f"terminou com o código {code}"
            detail = f": {last_line}" if last_line else ""
            return failure_row(submission, WORKER_FAILED, f"o processo de correção {how} sem resultado{detail}", levels, seconds)
    if "error" in payload:
        return failure_row(submission, WORKER_FAILED, payload["error"], levels, seconds)
    return row_from_report(submission, results.GradeReport.from_dict(payload["report"]), levels, seconds)


# -------------------------------------------------------------- progress


class ProgressBar:
    """The batch's progress on stderr: a live bar drawn by rich on a terminal (colours off
    under NO_COLOR), one plain line per finished submission otherwise (logs, CI, pipes).

    rich is imported only for a terminal, so a batch piped into a file never loads it.
    """

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 24):
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.done = 0
        self.started = time.monotonic()
        self.interactive = hasattr(self.stream, "isatty") and self.stream.isatty()
        # (rich Progress, task id) on a terminal: drawn from the start, so the clock runs
        # while the first submission is still being graded.
        self._live = self._start_live() if self.interactive else None

    def _elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def _start_live(self):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(file=self.stream)  # honours NO_COLOR and TERM=dumb by itself
        progress = Progress(
            BarColumn(bar_width=self.width), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.description}"), console=console, redirect_stdout=False, redirect_stderr=False,
        )
        task = progress.add_task("", total=self.total)
        progress.start()
        return progress, task

    def advance(self, row: Row) -> None:
        self.done += 1
        latest = f"{row.submission}: {row.status}"
        if self.interactive:
            if self._live is not None:
                progress, task = self._live
                progress.update(task, completed=self.done, description=latest)
                if self.done >= self.total:
                    self.close()
            return
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"[{bar}] {self.done}/{self.total} {self._elapsed()}  {latest}\n")
        self.stream.flush()

    def close(self) -> None:
        """Leave the bar as it last was and give the terminal its cursor back (also on Ctrl-C)."""
        if self._live is not None:
            self._live[0].stop()
            self._live = None


# ------------------------------------------------------------------ batch


def grade_all(
    submissions: list[Submission],
    options: BatchOptions,
    levels: list[int],
    jobs: int = 1,
    on_row: Callable[[Row], None] = lambda row: None,
    pool: WorkerPool | None = None,
) -> list[Row]:
    """Grade every submission with `jobs` warm workers at once; rows in submission order."""
    pool = pool or WorkerPool()
    with scratch_folder(BATCH) as scratch:
        pool.temp_root = scratch
        try:
            needed = any(submission.notebook for submission in submissions)
            with kernel_template(options, needed, scratch, pool.batch_id) as template_address:
                return _grade_with_workers(submissions, options, levels, jobs, on_row, pool, template_address)
        finally:
            pool.kill_remaining()  # normally none is left; one still alive would keep writing in there
            end_batch_processes(pool.batch_id)  # and so would what the killed workers had started


def _grade_with_workers(submissions: list[Submission], options: BatchOptions, levels: list[int], jobs: int,
                        on_row: Callable[[Row], None], pool: WorkerPool, template_address: str | None) -> list[Row]:
    tasks: queue.Queue = queue.Queue()
    for index, submission in enumerate(submissions):
        tasks.put((index, submission))
    finished: queue.Queue = queue.Queue()

    def job() -> None:
        worker = WarmWorker(options, pool, template_address)
        try:
            while not pool.cancelled:
                try:
                    index, submission = tasks.get_nowait()
                except queue.Empty:
                    return
                try:
                    row = grade_submission(submission, options, levels, worker, more=not tasks.empty())
                except Exception as error:  # noqa: BLE001 - one row, never the batch
                    row = failure_row(submission, WORKER_FAILED, f"erro do corretor: {error}", levels)
                finished.put((index, row))
        finally:
            worker.close()

    threads = [threading.Thread(target=job, name=f"grade-job-{n}", daemon=True)
               for n in range(max(1, min(jobs, len(submissions))))]
    for thread in threads:
        thread.start()
    rows: dict[int, Row] = {}
    try:
        while len(rows) < len(submissions):
            try:
                index, row = finished.get(timeout=0.5)
            except queue.Empty:
                if not any(thread.is_alive() for thread in threads) and finished.empty():
                    break
                continue
            rows[index] = row
            on_row(row)
    except KeyboardInterrupt:
        pool.cancel_all()
        for thread in threads:  # each notices its killed worker at once and lets it go
            thread.join(timeout=15)
        for index, submission in enumerate(submissions):
            rows.setdefault(index, failure_row(submission, NOT_GRADED, "lote interrompido antes de a correção desta submissão terminar (Ctrl-C, terminal fechado ou SIGTERM)", levels))
        raise BatchInterrupted([rows[index] for index in range(len(submissions))]) from None
    for index, submission in enumerate(submissions):
        rows.setdefault(index, failure_row(submission, NOT_GRADED, "nenhum processo de correção pegou esta submissão", levels))
    for thread in threads:
        thread.join(timeout=15)
    return [rows[index] for index in range(len(submissions))]


class BatchInterrupted(Exception):
    def __init__(self, rows: list[Row]):
        super().__init__("lote interrompido")
        self.rows = rows


def csv_columns(levels: list[int]) -> list[str]:
    return [
        "submissao", "notebook", "situacao", *[f"nivel_{level}" for level in levels], "total",
        "pontos", "pontos_possiveis", "verificacoes", "mensagem", "segundos",
    ]


def gradebook_text(rows: list[Row], levels: list[int], max_points: float | None = None) -> str:
    """The CSV; ``max_points`` (the plan's) fills the column of rows that graded nothing."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(csv_columns(levels))
    for row in rows:
        writer.writerow([
            text_cell(row.submission),
            text_cell(row.notebook),
            row.status,
            *["" if row.level_scores.get(level) is None else f"{row.level_scores[level]:g}" for level in levels],
            f"{row.total:g}",
            shown_points(row.points),
            "" if (row.max_points if row.max_points is not None else max_points) is None
            else shown_points(row.max_points if row.max_points is not None else max_points),
            f"{row.passed_checks}/{row.total_checks}",
            text_cell(row.message),
            f"{row.seconds:.1f}",
        ])
    return buffer.getvalue()


def write_gradebook(path: Path, rows: list[Row], levels: list[int], max_points: float | None = None) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, gradebook_text(rows, levels, max_points))


def gradebook_problem(path: Path) -> str | None:
    """Why the gradebook could not be written at `path`, or None when it can."""
    return console.output_file_problem(path, "o gradebook", "gradebook.csv")


def feedback_problem(folder: Path | None, option: str = "--feedback", what: str = "as páginas de retorno") -> str | None:
    """Why feedback pages (or ``what``) could not be written in ``folder``, or None when they can."""
    if folder is None:
        return None
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return f"{folder} é um arquivo; {option} espera uma pasta."
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".", suffix=".teste"):
            pass
    except OSError as error:
        return f"não consigo gravar {what} em {folder}: {os_reason(error)}."
    return None


def summary(rows: list[Row]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    parts = ", ".join(f"{count} {status}" for status, count in sorted(counts.items(), key=lambda item: -item[1]))
    return f"{quantity(len(rows), 'submissão', 'submissões')}: {parts}."


# ---------------------------------------------------------------- command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submissions", type=Path, metavar="PASTA_DAS_ENTREGAS", help="pasta com um .ipynb por aluno, ou uma pasta por aluno")
    parser.add_argument("exercise", metavar="exercise-N", help="o exercício a corrigir, por exemplo exercise-3")
    parser.add_argument("-j", "--jobs", type=console.whole_number(1), default=1, metavar="J", help="quantas submissões corrigir ao mesmo tempo (padrão: 1)")
    parser.add_argument("--csv", type=Path, default=Path("gradebook.csv"), metavar="ARQUIVO", help="onde gravar o gradebook (padrão: gradebook.csv)")
    parser.add_argument("--fixtures", type=Path, action="append", default=[], metavar="PASTA", help="pasta extra de fixtures do instrutor (pode repetir)")
    parser.add_argument("--timeout", type=console.seconds(), default=DEFAULT_TOTAL_SECONDS, metavar="S", help=f"tempo máximo por submissão em segundos (padrão: {DEFAULT_TOTAL_SECONDS:g})")
    parser.add_argument("--sandbox", action="store_true", help="executa cada submissão isolada no bubblewrap: sem rede, sem ver as outras entregas nem as fixtures, com limites de processos e memória")
    parser.add_argument("--feedback", type=Path, default=None, metavar="PASTA", help="grava nesta pasta uma página HTML de retorno por submissão")
    parser.add_argument("--report", type=Path, default=None, metavar="PASTA", help="onde gravar o relatório da turma (turma.html, com gráficos das notas e as verificações que mais falham, e verificacoes.csv, uma linha por entrega e verificação); padrão: a pasta do --csv")
    parser.add_argument("--no-report", action="store_true", help="não grava o relatório da turma")
    parser.add_argument("--memory-mb", type=console.memory_mb, default=DEFAULT_MEMORY_MB, metavar="M", help=f"memória máxima do kernel de cada submissão em MB (padrão: {DEFAULT_MEMORY_MB}; 0 = sem limite)")


def _plan(exercise: str, fixture_dirs: tuple[Path, ...]):
    from grader.core.engine import load_exercise
    from grader.core.fixture_loader import load_fixtures

    spec = load_exercise(exercise)
    fixtures = load_fixtures(exercise, fixture_dirs, spec.validate_fixture)
    return sorted(spec.levels), spec.plan(list(fixtures), None)


def plan_summary(exercise: str, fixture_dirs: tuple[Path, ...]) -> tuple[list[int], int]:
    """(levels, number of checks) of the exercise; raises GraderError for a bad name or fixture."""
    levels, plan = _plan(exercise, fixture_dirs)
    return levels, len(plan)


def plan_max_points(exercise: str, fixture_dirs: tuple[Path, ...]) -> float:
    """What the whole exercise is worth; raises GraderError for bad points in the manifest."""
    from grader.core.points import points_for

    _, plan = _plan(exercise, fixture_dirs)
    return sum(points_for(exercise, plan).values())


def worker_deadline(limits: Limits, checks: int) -> float:
    from grader.core.execution import MAX_RESTARTS
    from grader.core.kernel import START_ATTEMPTS, STARTUP_TIMEOUT

    # The notebook's time limit starts when its kernel is ready, so a slow start
    # (or a second one, or a fresh kernel after a bad cell or check) comes on top of it.
    start_up = START_ATTEMPTS * STARTUP_TIMEOUT * (1 + MAX_RESTARTS)
    return limits.total_seconds + limits.check_seconds * max(1, checks) + start_up + WORKER_GRACE_SECONDS


def run(args: argparse.Namespace) -> int:
    from grader.core.errors import GraderError

    if args.jobs < 1:
        print("grade batch: -j precisa ser pelo menos 1.", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print("grade batch: --timeout precisa ser maior que zero.", file=sys.stderr)
        return 2
    if not args.submissions.is_dir():
        print(f"grade batch: {args.submissions} não é uma pasta de submissões.", file=sys.stderr)
        return 2
    for folder in args.fixtures:
        if not folder.is_dir():
            print(f"grade batch: a pasta de fixtures {folder} não existe.", file=sys.stderr)
            return 2
    fixture_dirs = tuple(folder.resolve() for folder in args.fixtures)
    try:
        levels, checks = plan_summary(args.exercise, fixture_dirs)
        max_points = plan_max_points(args.exercise, fixture_dirs)
        if args.sandbox:
            from grader.core.sandbox import require

            require()  # bwrap missing: say so now, never grade unsandboxed
    except GraderError as error:
        # One clear message now instead of the same failure in every row.
        print(f"grade batch: {error}", file=sys.stderr)
        return 2
    report_folder = None if args.no_report else (args.report or args.csv.parent)
    problem = gradebook_problem(args.csv) or feedback_problem(args.feedback) or report_problem(report_folder)
    if problem:
        # Checked before grading, so a long batch never ends with nowhere to write.
        print(f"grade batch: {problem}", file=sys.stderr)
        return 2
    submissions, ignored = find_submissions(args.submissions, args.exercise)
    if not submissions:
        print(f"grade batch: nenhuma submissão em {args.submissions} (esperado: arquivos .ipynb ou uma pasta por aluno).", file=sys.stderr)
        return 2
    limits = Limits.from_budget(args.timeout, memory_mb=args.memory_mb)
    options = BatchOptions(
        exercise=args.exercise,
        limits=limits,
        fixture_dirs=fixture_dirs,
        hard_timeout=worker_deadline(limits, checks),
        sandbox=args.sandbox,
    )
    if ignored:
        print(f"ignorados (não são .ipynb nem pastas): {', '.join(ignored)}", file=sys.stderr)
    print(f"Corrigindo {quantity(len(submissions), 'submissão', 'submissões')} do {args.exercise} com -j {args.jobs}...", file=sys.stderr)
    bar = ProgressBar(len(submissions))
    stopped_by: list[int] = []
    try:
        with hangup_as_interrupt(stopped_by):
            rows = grade_all(submissions, options, levels, args.jobs, on_row=bar.advance)
    except BatchInterrupted as interrupted:
        with contextlib.suppress(OSError):  # a closed terminal: the gradebook still gets written
            bar.close()  # before printing on the same stderr
        write_gradebook(args.csv, interrupted.rows, levels, max_points)
        pages = write_feedback(args.feedback, interrupted.rows)
        write_report(report_folder, args.exercise, interrupted.rows, levels, pages)
        with contextlib.suppress(OSError):
            print(f"\nLote interrompido. O que já estava corrigido foi gravado em {args.csv}.", file=sys.stderr)
        return 128 + (stopped_by[0] if stopped_by else signal.SIGINT)
    finally:
        with contextlib.suppress(OSError):
            bar.close()
    write_gradebook(args.csv, rows, levels, max_points)
    print(summary(rows))
    print(f"Gradebook: {args.csv}")
    pages = write_feedback(args.feedback, rows)
    if args.feedback:
        print(f"Páginas de retorno: {args.feedback}/ (uma por submissão)")
    if report_folder is not None:
        page_path, csv_path = write_report(report_folder, args.exercise, rows, levels, pages)
        print(f"Relatório da turma: {page_path} (e {csv_path})")
    return 0


@contextlib.contextmanager
def hangup_as_interrupt(stopped_by: list[int]) -> Iterator[None]:
    """A closed terminal (SIGHUP) or a polite kill (SIGTERM) stops the batch as Ctrl-C does: the
    workers are killed and what was already graded is written, not lost with the process."""
    def interrupt(signum, _frame):
        stopped_by.append(signum)
        raise KeyboardInterrupt

    names = [getattr(signal, name) for name in ("SIGHUP", "SIGTERM") if hasattr(signal, name)]
    previous = {signum: signal.signal(signum, interrupt) for signum in names}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def write_feedback(folder: Path | None, rows: list[Row]) -> dict[str, Path]:
    """The feedback pages, when asked for: submission -> its page."""
    if folder is None:
        return {}
    from grader.reports.feedback import write_pages

    return {row.submission: path for row, path in zip(rows, write_pages(folder, rows, STATUS_WORDS))}


def report_problem(folder: Path | None) -> str | None:
    """Why the class report could not be written in ``folder``, or None when it can."""
    return feedback_problem(folder, "--report", "o relatório da turma")


def write_report(folder: Path | None, exercise: str, rows: list[Row], levels: list[int],
                 pages: dict[str, Path]) -> tuple[Path, Path]:
    """The class report (grader/reports/class_report.py): turma.html and verificacoes.csv."""
    from grader.reports.class_report import write_class_report

    if folder is None:
        return Path(), Path()
    return write_class_report(folder, exercise, rows, levels, pages)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        from grader.core.warm import serve

        sys.exit(serve(sys.argv[2:]))
    print("Use `grade batch ...`; este módulo só roda sozinho como processo de correção.", file=sys.stderr)
    sys.exit(2)
