"""What exercise notebooks import: ``check("exercise-N")`` and the fixtures' checkpoints.

``check`` grades the SAVED notebook file (the notebook it runs in, when that is a copy of
the exercise, see ``notebook_to_grade``) with the same engine as ``grade`` (in a
separate process, so the grader's own kernel never nests inside the student's) and
shows the result as an HTML table in Jupyter, plain text elsewhere. While the grader
itself executes the notebook, ``check`` only prints a short note.

That process is started on the first ``check`` of a kernel session and kept until the session
ends (grader/student/check_server.py): it keeps a warm kernel template, so a later ``check``
pays for the grading, not for starting the grader and the kernel again. Each grading still
gets a fresh kernel. If that process is gone, ``check`` grades the way ``grade`` does, in a
process of its own.
"""
from __future__ import annotations

import atexit
import copy
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from grader.core.environment import GRADER_ENV
from grader.core.errors import GraderError
from grader.core.limits import Limits

__all__ = ["check", "fixture_checkpoint", "fixture_workspace"]


def _in_jupyter() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


EXERCISE_NAME = re.compile(r"^exercise-\d+$")


def running_notebook() -> Path | None:
    """The notebook this kernel belongs to, as the Jupyter server told it when it started the
    kernel (JPY_SESSION_NAME, the notebook's full path; ipykernel copies it to ``__session__``)."""
    session = os.environ.get("JPY_SESSION_NAME", "")
    if not session.endswith(".ipynb"):
        return None
    path = Path(session)
    return path if path.is_file() else None


def belongs_to(exercise: str, notebook: Path) -> bool:
    """A copy of the exercise's notebook, as Jupyter names one: exercise-3.ipynb,
    exercise-3-Copy1.ipynb, "exercise-3 (1).ipynb" (but not exercise-30.ipynb)."""
    return re.match(rf"{re.escape(exercise)}(?!\d)", notebook.name) is not None


def notebook_to_grade(exercise: str) -> tuple[Path, str]:
    """(the notebook ``check(exercise)`` grades, a warning when that is not the one running).

    The notebook that calls ``check`` is graded when it is a copy of that exercise (Duplicate in
    JupyterLab makes exercise-3-Copy1.ipynb); otherwise the course's exercises/exercise-N.ipynb.
    """
    running = running_notebook()
    if running is not None and belongs_to(exercise, running):
        return running, ""
    from grader.core.course_folder import course_root

    own = course_root() / "exercises" / f"{exercise}.ipynb"
    if running is not None and running.resolve() != own.resolve():
        return own, (f"Atenção: este notebook é {running.name}, mas check({exercise!r}) corrige "
                     f"exercises/{own.name}.")
    return own, ""


_DEFINITION = re.compile(r"^(?:async\s+)?def\s+([A-Za-z_]\w*)", re.M)


def _normal(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def unsaved_definitions(history: Sequence[str], saved_cells: Sequence[str]) -> list[str]:
    """The functions whose latest run in this kernel (``history``: IPython's ``In``, every cell
    executed, in order) is in no cell of the saved notebook: the editor holds code the file does
    not, or the file changed after that run. Edits never run cannot be seen from the kernel."""
    saved = {_normal(cell) for cell in saved_cells}
    latest: dict[str, str] = {}
    for source in history:
        if isinstance(source, str):
            for name in _DEFINITION.findall(source):
                latest[name] = source
    return sorted(name for name, source in latest.items() if _normal(source) not in saved)


def _unsaved_warning(path: Path) -> str:
    """A warning when this kernel ran definitions the saved ``path`` does not have ("" otherwise)."""
    try:
        from IPython import get_ipython

        history = list(get_ipython().user_ns.get("In", []))
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        saved = ["".join(c["source"]) if isinstance(c.get("source"), list) else str(c.get("source", ""))
                 for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    except Exception:  # noqa: BLE001 - only a courtesy: no warning when it cannot tell
        return ""
    names = unsaved_definitions(history, saved)
    if not names:
        return ""
    shown = ", ".join(f"`{name}`" for name in names[:5]) + (" e outras" if len(names) > 5 else "")
    return (f"Atenção: o arquivo salvo {path.name} não tem a versão de {shown} que este kernel executou por "
            "último. Se você mudou a célula e não salvou, salve (Ctrl+S) e rode o check de novo: a correção "
            "usa o arquivo salvo.")


def _show(report: Any) -> None:
    from grader.reports import render

    if _in_jupyter():
        from IPython.display import HTML, display

        display(HTML(render.html_report(report)))
    else:
        print(render.text_report(report), end="")


def check(
    exercise: str,
    level: int | None = None,
    *,
    notebook: str | os.PathLike | None = None,
    fixtures: Sequence[str | os.PathLike] = (),
) -> None:
    """Grade the saved notebook of ``exercise`` (optionally one level) and show the result."""
    if not isinstance(exercise, str) or not EXERCISE_NAME.match(exercise):
        print(f"check espera o nome do exercício entre aspas, por exemplo check(\"exercise-3\"); veio {exercise!r}.")
        return None
    if os.environ.get(GRADER_ENV):
        print(f"(check({exercise!r}) não roda enquanto o corretor executa este notebook.)")
        return None
    warning = ""
    try:
        path, warning = (Path(notebook), "") if notebook is not None else notebook_to_grade(exercise)
    except GraderError as error:
        print(f"Não consegui corrigir: {error}")
        return None
    if warning:
        print(warning)
    unsaved = _unsaved_warning(path) if _in_jupyter() else ""
    if unsaved:
        print(unsaved)
    print(f"Corrigindo o arquivo salvo {path} (salve o notebook antes: Ctrl+S)...", flush=True)
    request = {"exercise": exercise, "notebook": str(path), "level": level, "fixtures": [str(f) for f in fixtures],
               "limits": Limits().to_json()}  # the limits of `grade exercise-N`
    answer = _warm_answer(request)
    if answer is None:  # no warm process to ask: a grading of its own, as `grade` does
        answer = _cold_answer(request)
    if "error" in answer:
        print(f"Não consegui corrigir: {answer['error']}")
        return None
    from grader.core.results import GradeReport

    _show(GradeReport.from_dict(answer["report"]))
    return None


def _cold_answer(request: dict[str, Any]) -> dict[str, Any]:
    command = [sys.executable, "-m", "grader.cli", request["exercise"], "--json", "--notebook", request["notebook"]]
    command += Limits.from_json(request["limits"]).grade_flags()
    if request["level"] is not None:
        command += ["--level", str(request["level"])]
    for folder in request["fixtures"]:
        command += ["--fixtures", folder]
    finished = subprocess.run(command, capture_output=True, text=True, encoding="utf-8")
    try:
        return {"report": json.loads(finished.stdout)}
    except json.JSONDecodeError:
        message = finished.stderr.strip().splitlines()[-1] if finished.stderr.strip() else "sem saída"
        return {"error": message}


class WarmChecker:
    """This kernel session's grading process (grader/student/check_server.py) and its pipes."""

    def __init__(self) -> None:
        from grader.student.check_server import PARENT_ENV

        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader.student.check_server"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8",
            env={**os.environ, PARENT_ENV: str(os.getpid())},
            # Its own session: interrupting this kernel (the stop button) must not reach it; the
            # grading it was doing is abandoned by ``ask`` instead.
            start_new_session=True,
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Its answer to ``request``; None when the process is gone. Interrupted (Ctrl-C, the stop
        button), the process is ended, so no late answer is ever read as a later request's."""
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (OSError, ValueError):
            return None
        except BaseException:
            self.close(busy=True)
            raise
        try:
            return json.loads(line) if line else None
        except json.JSONDecodeError:
            return None

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self, busy: bool = False) -> None:
        """End it (it ends its kernel template and kernels): its stdin closed, as the session's end
        does; SIGTERM if it is ``busy`` grading (it reads no stdin then) or does not end; then SIGKILL."""
        import contextlib

        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError, ValueError):
                stream.close()
        for signum, wait in ((None, 0 if busy else 10), (signal.SIGTERM, 15), (signal.SIGKILL, None)):
            if signum is not None:
                with contextlib.suppress(OSError):
                    self.process.send_signal(signum)
            try:
                self.process.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue


_checker: WarmChecker | None = None
_atexit_registered: list[bool] = []


def _warm_answer(request: dict[str, Any]) -> dict[str, Any] | None:
    """The answer of this session's warm grading process (started on the first call), or None."""
    global _checker
    if _checker is not None and not _checker.alive():
        _checker.close()
        _checker = None
    if _checker is None:
        try:
            _checker = WarmChecker()
        except OSError:
            return None
        if not _atexit_registered:
            atexit.register(_close_checker)  # the kernel session ends: so does its grading process
            _atexit_registered.append(True)
    answer = _checker.ask(request)
    if answer is None:
        _close_checker()
    return answer


def _close_checker() -> None:
    global _checker
    checker, _checker = _checker, None
    if checker is not None:
        checker.close()


def _fixture_data(exercise: str, name: str) -> dict:
    from grader.core.fixture_loader import read_fixture_files

    for item in read_fixture_files(exercise):
        if item.name == name:
            if item.problems or item.data is None:
                raise ValueError("; ".join(item.problems))
            return item.data
    raise KeyError(f"não existe a fixture {name!r} do {exercise}")


def fixture_checkpoint(exercise: str, name: str) -> dict:
    """A fresh copy of a fixture's checkpoint, to try your functions on."""
    return copy.deepcopy(_fixture_data(exercise, name)["checkpoint"])


def fixture_workspace(exercise: str, name: str, root: str | os.PathLike):
    """A harness Workspace in ``root`` holding the fixture's files, outbox and tickets."""
    from grader.checks.instrumented import build_workspace

    return build_workspace(Path(root), _fixture_data(exercise, name).get("workspace") or {})
