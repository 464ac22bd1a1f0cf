"""Benchmark: what grading costs on top of simply executing the notebook, in one run.

Run from the project root:

    python bench/grade.py [--rounds 3] [--copies 20] [--skip-batch]

Section 1 times, side by side and interleaved, plain nbclient execution of
``solutions/exercise-3.ipynb`` and ``grade exercise-3`` on the same file (the CLI's
own ``main``), and prints the ratio (target: grading adds at most 30%).
Section 2 is ``grade batch`` on N copies with -j 1 versus -j 2 (``bench/grade_batch.py``).
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
from grader.environment import GRADER_ENV  # noqa: E402

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


def graded_execution(exercise: str, notebook: Path) -> float:
    """Seconds for ``grade exercise-N --notebook PATH`` (output discarded); must pass."""
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main([exercise, "--notebook", str(notebook)])
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"grade {exercise} falhou na solução; nada a medir:\n{out.getvalue()}")
    return seconds


def measure_overhead(exercise: str, notebook: Path, rounds: int) -> tuple[list[float], list[float]]:
    plain_execution(notebook)  # warm-up: disk cache and bytecode favour neither side
    graded_execution(exercise, notebook)
    plain, graded = [], []
    for round_number in range(rounds):
        pair = [("plain", lambda: plain_execution(notebook)), ("graded", lambda: graded_execution(exercise, notebook))]
        if round_number % 2:
            pair.reverse()  # alternate who goes first, so drift in machine load hits both
        for name, run in pair:
            (plain if name == "plain" else graded).append(run())
    return plain, graded


def format_overhead(notebook: Path, exercise: str, plain: list[float], graded: list[float]) -> str:
    plain_median, graded_median = statistics.median(plain), statistics.median(graded)
    ratio = graded_median / plain_median
    verdict = "atingida" if ratio <= TARGET_RATIO else "NÃO atingida"
    shown = lambda values: " ".join(f"{v:5.2f}" for v in values)  # noqa: E731
    return "\n".join([
        f"{notebook.relative_to(ROOT) if notebook.is_relative_to(ROOT) else notebook}, {len(plain)} rodada(s) intercaladas:",
        f"  nbclient puro (executa o notebook):  mediana {plain_median:5.2f} s   [{shown(plain)}]",
        f"  grade {exercise} (executa + corrige): mediana {graded_median:5.2f} s   [{shown(graded)}]",
        f"  razão grade / nbclient: {ratio:.2f} (meta: <= {TARGET_RATIO:.2f}, {verdict})",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", default="exercise-3")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--copies", type=int, default=20, help="cópias para o grade batch")
    parser.add_argument("--skip-batch", action="store_true", help="só a seção 1")
    args = parser.parse_args(argv)
    notebook = ROOT / "solutions" / f"{args.exercise}.ipynb"

    with tempfile.TemporaryDirectory(prefix="bench-grade-") as scratch:
        # Keep `grade`'s progress file out of the project; mark the plain run like the grader's.
        os.environ["GRADE_STATE_FILE"] = str(Path(scratch) / "grade-state.json")
        os.environ[GRADER_ENV] = "1"
        try:
            plain, graded = measure_overhead(args.exercise, notebook, args.rounds)
        finally:
            os.environ.pop(GRADER_ENV, None)
        print("1. Custo da correção sobre a execução do notebook")
        print(format_overhead(notebook, args.exercise, plain, graded))

        if not args.skip_batch:
            from bench.grade_batch import format_batch, measure_batch

            print("\n2. grade batch: -j 1 contra -j 2")
            print(format_batch(measure_batch(notebook, args.exercise, args.copies), args.copies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
