"""Benchmark: what grading costs on top of simply executing the notebook, in one run.

Run from the project root:

    python3 bootstrap.py python bench/grade.py [--rounds 3] [--copies 10] [--skip-batch]

Section 1 times, side by side and interleaved, plain nbclient execution of
``solutions/exercise-3.ipynb`` and ``grade exercise-3`` on the same file (the CLI's
own ``main``), and prints the ratio (target: grading adds at most 30%).
Section 2 is ``grade batch`` -j 1, -j 2 and --sandbox against nbgrader's autograde on the
same N submissions (``bench/grade_batch.py``). ``bench/grade_watch.py`` times, from a save to
its new result, ``grade watch`` and ``check()`` against a cold ``grade exercise-N`` and against
the grading alone.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from grader import cli  # noqa: E402
from grader.core import execution  # noqa: E402
from grader.core.environment import GRADER_ENV  # noqa: E402

TARGET_RATIO = 1.30


def plain_execution(notebook: Path) -> float:
    """Seconds for nbclient to execute the notebook in a fresh kernel, nothing else.

    The grader's environment variable is set so the notebook's own ``check()`` cell is a
    no-op here exactly as it is under the grader; the kernel is shut down the same way.
    """
    nb = nbformat.read(str(notebook), as_version=4)
    started = time.perf_counter()
    client = NotebookClient(
        nb, kernel_name="python3", timeout=600, shutdown_kernel="immediate",
        resources={"metadata": {"path": tempfile.gettempdir()}},
    )
    client.execute()
    return time.perf_counter() - started


class ChecksCellTimer:
    """Times the one extra request the engine sends to the kernel (the checks themselves),
    by wrapping the engine's helper for its own cells; the bench's only intrusion."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._original = execution._execute_extra

    def __enter__(self) -> "ChecksCellTimer":
        def timed(client, notebook, cell):
            started = time.perf_counter()
            try:
                return self._original(client, notebook, cell)
            finally:
                if "run_from_file" in cell.source:
                    self.seconds.append(time.perf_counter() - started)

        execution._execute_extra = timed
        return self

    def __exit__(self, *exc) -> None:
        execution._execute_extra = self._original


def graded_execution(exercise: str, notebook: Path) -> float:
    """Seconds for ``grade exercise-N --notebook PATH`` (output discarded); must pass."""
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main([exercise, "--notebook", str(notebook)])
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"grade {exercise} falhou na solução; nada a medir:\n{out.getvalue()}")
    return seconds


def measure_overhead(exercise: str, notebook: Path, rounds: int) -> tuple[list[float], list[float], list[float]]:
    """Interleaved pairs (plain, graded), alternating which goes first so that drift in
    machine load hits both sides alike."""
    plain_execution(notebook)  # warm-up: disk cache and bytecode favour neither side
    graded_execution(exercise, notebook)
    plain, graded = [], []
    with ChecksCellTimer() as timer:
        for round_number in range(rounds):
            pair = [("plain", lambda: plain_execution(notebook)), ("graded", lambda: graded_execution(exercise, notebook))]
            if round_number % 2:
                pair.reverse()
            for name, run in pair:
                (plain if name == "plain" else graded).append(run())
    return plain, graded, timer.seconds


def format_overhead(notebook: Path, exercise: str, plain: list[float], graded: list[float], checks: list[float]) -> str:
    median = statistics.median
    paired = median([g / p for p, g in zip(plain, graded)])
    verdict = "atingida" if paired <= TARGET_RATIO else "NÃO atingida"
    shown = lambda values: " ".join(f"{v:5.2f}" for v in values)  # noqa: E731
    name = notebook.relative_to(ROOT) if notebook.is_relative_to(ROOT) else notebook
    return "\n".join([
        f"{name}, {len(plain)} pares de rodadas intercaladas (tempo de parede, segundos):",
        f"  nbclient puro (executa o notebook):   mediana {median(plain):5.2f}  mínimo {min(plain):5.2f}   [{shown(plain)}]",
        f"  grade {exercise} (executa + corrige):  mediana {median(graded):5.2f}  mínimo {min(graded):5.2f}   [{shown(graded)}]",
        f"    dos quais as verificações no kernel: mediana {median(checks):5.2f}   [{shown(checks)}]",
        f"  razão grade / nbclient: {paired:.2f} (mediana das razões por par; razão das medianas "
        f"{median(graded) / median(plain):.2f}, dos mínimos {min(graded) / min(plain):.2f})",
        f"  meta: <= {TARGET_RATIO:.2f}, {verdict}",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", default="exercise-3")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--copies", type=int, default=10, help="submissões por rodada do grade batch")
    parser.add_argument("--skip-batch", action="store_true", help="só a seção 1")
    args = parser.parse_args(argv)
    notebook = ROOT / "solutions" / f"{args.exercise}.ipynb"

    with tempfile.TemporaryDirectory(prefix="bench-grade-") as scratch:
        # Keep `grade`'s progress file out of the project; mark the plain run like the grader's.
        os.environ["GRADE_STATE_FILE"] = str(Path(scratch) / "grade-state.json")
        os.environ[GRADER_ENV] = "1"
        try:
            plain, graded, checks = measure_overhead(args.exercise, notebook, args.rounds)
        finally:
            os.environ.pop(GRADER_ENV, None)
        print("1. Custo da correção sobre a execução do notebook")
        print(format_overhead(notebook, args.exercise, plain, graded, checks))

        if not args.skip_batch:
            from bench.grade_batch import format_batch, measure_batch

            print("\n2. grade batch contra nbgrader autograde")
            print(format_batch(measure_batch(notebook, args.exercise, args.copies), args.copies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
