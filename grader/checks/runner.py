"""Run planned checks against a student's namespace.

Inside the grading kernel the engine executes one line,
``run_from_file(spec_path)``, after the student's notebook has run. The checks
live in their own modules (``grader.checks.exercise_N``); only the values they
fetch through ``Context`` come from the student's namespace, so a student global
that happens to share a name with grader code changes nothing.

Each result is appended to a JSON-lines file as soon as it exists (with a
``started`` line before each check), so if the kernel dies mid-check the engine
still knows which checks finished and which one was running.
"""
from __future__ import annotations

import importlib
import json
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from grader.core.limits import Limits
from grader.core.results import MEMORY  # noqa: F401  (re-exported: a result's ``stopped_by`` on memory)
from grader.checks.framework import (
    CellProblemInfo,
    CheckFailed,
    CheckTimeout,
    Context,
    Fixture,
    PlannedCheck,
    Session,
    StudentProblem,
    describe_error,
)

PASS, FAIL = "pass", "fail"


def exercise_module(name: str):
    return importlib.import_module("grader.checks." + name.replace("-", "_"))


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise CheckTimeout in this thread after ``seconds`` (and again every 0.2 s, in case
    student code swallows the first one). Only possible in the main thread."""
    if (
        seconds <= 0
        or not hasattr(signal, "setitimer")  # Windows: the engine's grading deadline still applies
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def on_alarm(signum, frame):
        raise CheckTimeout()

    # Someone else's timer (pytest-timeout, say) is put back afterwards, minus the time spent.
    outer_delay, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.2)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:
            remaining = max(outer_delay - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, remaining, outer_interval)


def run_check(exercise, planned: PlannedCheck, fixtures: dict[str, Fixture], session: Session) -> dict:
    spec = exercise.spec(planned.name)
    context = Context(session)
    session.current_check = planned.id
    outcome = {"status": PASS, "expected": "", "observed": "", "message": ""}
    try:
        with time_limit(session.check_timeout):
            if planned.fixture is None:
                spec.function(context)
            else:
                spec.function(context, fixtures[planned.fixture])
    except CheckFailed as failure:
        outcome.update(status=FAIL, message=failure.message, expected=failure.expected, observed=failure.observed)
    except StudentProblem as problem:
        outcome.update(status=FAIL, message=problem.message, observed=problem.observed, unwritten=problem.unwritten,
                       undefined=problem.undefined)
        if problem.kind == MEMORY:
            outcome["stopped_by"] = MEMORY
    except (CheckTimeout, KeyboardInterrupt):
        outcome.update(
            status=FAIL,
            message=f"A verificação não terminou em {session.check_timeout:g} s e foi interrompida.",
        )
    except MemoryError:  # outside the student's call: what their code left behind filled the kernel
        outcome.update(
            status=FAIL, stopped_by=MEMORY,
            message=("A memória do kernel acabou durante esta verificação: o seu código guardou dados "
                     "demais (confira as células e funções que criam listas ou textos enormes)."),
        )
    except BaseException as error:  # noqa: BLE001 - a check must never take the run down
        outcome.update(
            status=FAIL,
            message=(
                f"A verificação falhou de um jeito inesperado ({describe_error(error)}). "
                "Se o seu código parece certo, avise o instrutor."
            ),
        )
    result = planned.to_dict()
    result.pop("name")
    result.update(outcome, output=context.output)
    return result


def run_plan(
    exercise_name: str,
    plan: list[PlannedCheck],
    fixtures: list[Fixture],
    session: Session,
    emit: Callable[[dict], None] = lambda record: None,
) -> list[dict]:
    """Run every planned check in order; ``emit`` receives progress records."""
    exercise = exercise_module(exercise_name).EXERCISE
    by_name = {fixture.name: fixture for fixture in fixtures}
    results = []
    for planned in plan:
        emit({"started": planned.id})
        result = run_check(exercise, planned, by_name, session)
        emit({"result": result})
        results.append(result)
    return results


def spec_session(spec: dict, namespace: dict) -> Session:
    """The session the engine's spec describes, each check's time taken from its ``limits``."""
    return Session(
        namespace=namespace,
        workdir=Path(spec["workdir"]),
        check_timeout=Limits.from_json(spec["limits"]).check_seconds,
        cell_problems=[CellProblemInfo(**item) for item in spec["cell_problems"]],
        refused=dict(spec.get("refused") or {}),
    )


def run_from_file(spec_path: str) -> None:
    """Entry point inside the grading kernel."""
    from IPython import get_ipython

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    session = spec_session(spec, get_ipython().user_ns)
    plan = [PlannedCheck(**item) for item in spec["plan"]]
    fixtures = [Fixture.from_dict(item) for item in spec["fixtures"]]
    with open(spec["results_path"], "a", encoding="utf-8") as sink:

        def emit(record: dict) -> None:
            sink.write(json.dumps(record, ensure_ascii=False, default=repr) + "\n")
            sink.flush()

        session.emit = emit
        run_plan(spec["exercise"], plan, fixtures, session, emit)
