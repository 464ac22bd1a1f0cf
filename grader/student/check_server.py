"""The process that grades for the notebook's ``check()``, kept for the whole kernel session.

``check()`` (grader/student/notebook_api.py) starts it on its first call, in the student's
kernel, and asks it for every grading after that: one request per line on stdin (JSON: the
exercise, the notebook, the level, extra fixture folders, the limits), one answer per line on stdout
(``{"report": ...}`` or ``{"error": "..."}``). It imports the grader once and keeps a warm
kernel template with one kernel forked ahead (grader/core/warm_session.py), so a later
``check()`` pays for the grading, not for starting Python, the grader and the kernel again.
Each grading still runs in a fresh kernel of its own, with the limits of ``grade exercise-N``.

It ends with the kernel session: when its stdin closes (the kernel ended, or ``check`` closed
it), on SIGTERM or SIGHUP, and, on Linux, when the kernel that started it dies (the system
sends it SIGTERM then). Ending, it ends the template and every kernel forked from it.
"""
from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

PARENT_ENV = "GRADE_CHECK_PARENT_PID"  # the kernel that started this process
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def end_with_parent() -> None:
    """Linux: be sent SIGTERM when the kernel that started this process dies, even killed outright
    in the middle of a grading (when stdin is not being read). Checked after asking, in case the
    kernel died before."""
    parent = os.environ.get(PARENT_ENV, "")
    if not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):
        raise SystemExit(1)


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


class Checks:
    """The warm grader of the exercise last asked for (another exercise gets a template of its own)."""

    def __init__(self) -> None:
        self.warm: Any = None

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        from grader.core.error_text import describe_error
        from grader.core.engine import load_exercise
        from grader.core.errors import GraderError
        from grader.core.limits import Limits
        from grader.core.warm_session import WarmGrader
        from grader.student.progress import record_progress

        exercise, notebook = str(request["exercise"]), Path(request["notebook"])
        level = request.get("level")
        try:
            limits = Limits.from_json(request.get("limits"))  # what check() asked for, read as untrusted
            load_exercise(exercise, level)  # an unknown exercise starts no template
            if self.warm is None or self.warm.exercise != exercise:
                self.close()
                self.warm = WarmGrader(exercise)
            report = self.warm.grade(notebook, limits=limits, level=level,
                                     fixture_dirs=[Path(f) for f in request.get("fixtures", [])])
        except GraderError as error:
            return {"error": f"grade: {error}"}
        except Exception as error:  # noqa: BLE001 - the student reads it in the notebook
            return {"error": f"erro do corretor: {describe_error(error)}"}
        record_progress(exercise, report, notebook)
        return {"report": report.to_dict()}

    def prepare(self) -> None:
        if self.warm is not None:
            self.warm.prepare()

    def close(self) -> None:
        warm, self.warm = self.warm, None
        if warm is not None:
            warm.close()


def main() -> int:
    stops = [getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)]
    for signum in stops:
        signal.signal(signum, _interrupt)
    end_with_parent()
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    sys.stdout = sys.stderr  # whatever else prints must not mix with the answers
    checks = Checks()
    try:
        for line in sys.stdin:
            answers.write(json.dumps(checks.answer(json.loads(line)), ensure_ascii=False) + "\n")
            answers.flush()
            checks.prepare()  # the next check()'s kernel, forked while the student reads this one
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    finally:
        for signum in stops:
            signal.signal(signum, signal.SIG_IGN)  # ending already: a second stop must not cut it short
        checks.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
