"""Benchmark: from saving a notebook to its new result, in `grade watch` and in `check()`, in one run.

Run from the project root:

    python3 bootstrap.py python bench/grade_watch.py [--rounds 3] [--saves 3] [--exercise exercise-3]

Each round times, on the same notebook (``solutions/exercise-N.ipynb``, every level):

- ``grade exercise-N --notebook COPY``, cold: a process of its own, as a student runs it in a
  terminal (Python, the grader and a kernel importing ipykernel and anthropic, every time);
- the grading alone, what a warm ``grade batch`` pays per submission: the exercise's checks and
  fixtures loaded, a kernel forked from a template that has imported everything and given time
  to become ready, and then ``grade_with_fixtures`` on the notebook;
- ``grade watch exercise-N`` (its own process, file events as by default): from the moment a
  save replaces the file (written and renamed, as Jupyter saves) to the new score line on its
  output; ``--saves`` saves per round, a couple of seconds apart as a student's are, after a
  first grading that is not counted (it starts the template);
- ``check("exercise-N")`` as a notebook calls it (this process plays the kernel session): the
  time of a call, after a first call that is not counted (it starts the grading process).

It prints, per contender, the medians over the rounds, and the ratios of the medians: watch and
check() against the cold grading (target: at most 0.3x) and against the grading alone (target:
at most 1.5x). The machine's load moves every figure: compare within one run only.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_AGAINST_COLD = 0.30
TARGET_AGAINST_ALONE = 1.50
GRADE = "import sys; from grader.cli import main; sys.exit(main())"
SCORE = "Pontuação:"


def cold_grading(exercise: str, notebook: Path) -> float:
    """``grade exercise-N --notebook PATH`` in a process of its own; must pass."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", GRADE, exercise, "--notebook", str(notebook)],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"grade {exercise} falhou na solução; nada a medir:\n{done.stdout}\n{done.stderr}")
    return seconds


class GradingAlone:
    """A warm batch worker's grading of one submission: everything loaded, its kernel forked and ready."""

    def __init__(self, exercise: str) -> None:
        from grader.core.engine import load_exercise
        from grader.core.environment import kernel_env
        from grader.core.fixture_loader import load_fixtures
        from grader.core.forked_kernels import KernelTemplate

        self.spec = load_exercise(exercise)
        self.fixtures = load_fixtures(exercise, (), self.spec.validate_fixture)
        self.template = KernelTemplate.start(exercise, kernel_env())

    def __call__(self, notebook: Path) -> float:
        from grader.core.engine import grade_with_fixtures
        from grader.core.prelaunch import PrelaunchedKernel

        kernel = PrelaunchedKernel(None, self.template)
        time.sleep(2.0)  # in a batch, it started while the previous submission was graded
        started = time.perf_counter()
        try:
            report = grade_with_fixtures(self.spec, self.fixtures, notebook, prelaunched=kernel)
        finally:
            kernel.discard()
        seconds = time.perf_counter() - started
        if not report.passed:
            raise SystemExit("a correção da solução não passou; nada a medir")
        return seconds

    def close(self) -> None:
        if self.template is not None:
            self.template.close()


def save(source: Path, notebook: Path, edit: int) -> None:
    """Save ``source`` over ``notebook`` as Jupyter does (a new file renamed over it), a little different each time."""
    text = source.read_text(encoding="utf-8").rstrip() + "\n" * (1 + edit % 7)  # the size changes too
    temporary = notebook.with_name(f".~{notebook.name}")
    temporary.write_text(text, encoding="utf-8")
    temporary.rename(notebook)


def watch_saves(exercise: str, source: Path, folder: Path, saves: int) -> list[float]:
    """Seconds from each save to its score line in one `grade watch` session."""
    notebook = folder / f"{exercise}.ipynb"
    shutil.copyfile(source, notebook)
    process = subprocess.Popen([sys.executable, "-c", GRADE, "watch", exercise, "--notebook", str(notebook)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=folder,
                               env={**os.environ, "NO_COLOR": "1"}, start_new_session=True)
    scores = threading.Semaphore(0)
    failed: list[str] = []

    def read() -> None:
        for line in process.stdout:
            if line.startswith(SCORE):
                if "(100%)" not in line:
                    failed.append(line)
                scores.release()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seconds: list[float] = []
    try:
        if not scores.acquire(timeout=300):
            raise SystemExit("grade watch não mostrou a primeira correção")
        for edit in range(saves):
            time.sleep(2.5)  # the student reads the result, edits, saves
            started = time.perf_counter()
            save(source, notebook, edit)
            if not scores.acquire(timeout=300):
                raise SystemExit("grade watch não corrigiu o notebook salvo")
            seconds.append(time.perf_counter() - started)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        reader.join(timeout=10)
    if failed:
        raise SystemExit(f"grade watch: a solução não passou: {failed}")
    return seconds


def check_calls(exercise: str, source: Path, folder: Path, calls: int) -> list[float]:
    """Seconds of each ``check()`` call after the first, in this process's one kernel session."""
    from grader.student import notebook_api

    notebook = folder / f"{exercise}.ipynb"
    seconds: list[float] = []
    try:
        for call in range(calls + 1):
            save(source, notebook, call)
            if call:
                time.sleep(2.5)  # as in watch: the student reads the result, edits, saves
            out = io.StringIO()
            started = time.perf_counter()
            with contextlib.redirect_stdout(out):
                notebook_api.check(exercise, notebook=notebook)
            if call:
                seconds.append(time.perf_counter() - started)
            if "(100%)" not in out.getvalue():
                raise SystemExit(f"check(): a solução não passou:\n{out.getvalue()}")
    finally:
        notebook_api._close_checker()
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", default="exercise-3")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--saves", type=int, default=3, help="saves (and check() calls) timed per round")
    args = parser.parse_args(argv)
    source = ROOT / "solutions" / f"{args.exercise}.ipynb"
    median = statistics.median
    figures: dict[str, list[float]] = {"cold": [], "alone": [], "watch": [], "check": []}

    with tempfile.TemporaryDirectory(prefix="bench-watch-") as scratch:
        os.environ["GRADE_STATE_FILE"] = str(Path(scratch) / "grade-state.json")  # progress stays out of the project
        copy = Path(scratch) / f"{args.exercise}.ipynb"
        shutil.copyfile(source, copy)
        alone = GradingAlone(args.exercise)
        try:
            cold_grading(args.exercise, copy)  # warm-up: disk cache and bytecode favour no contender
            alone(copy)
            for round_number in range(args.rounds):
                folder = Path(scratch) / f"round-{round_number}"
                folder.mkdir()
                # The round's per-contender medians; the order rotates so load drift hits all alike.
                contenders = [
                    ("cold", lambda: [cold_grading(args.exercise, copy) for _ in range(args.saves)]),
                    ("alone", lambda: [alone(copy) for _ in range(args.saves)]),
                    ("watch", lambda folder=folder: watch_saves(args.exercise, source, folder / "watch", args.saves)),
                    ("check", lambda folder=folder: check_calls(args.exercise, source, folder / "check", args.saves)),
                ]
                (folder / "watch").mkdir()
                (folder / "check").mkdir()
                shift = round_number % len(contenders)
                for name, run in contenders[shift:] + contenders[:shift]:
                    values = run()
                    figures[name].append(median(values))
                    print(f"  rodada {round_number + 1} {name:5}: " + " ".join(f"{v:5.2f}" for v in values), flush=True)
        finally:
            alone.close()

    cold, only, watched, checked = (median(figures[name]) for name in ("cold", "alone", "watch", "check"))
    shown = lambda values: " ".join(f"{v:5.2f}" for v in values)  # noqa: E731
    verdict = lambda ok: "atingida" if ok else "NÃO atingida"  # noqa: E731
    print(f"\n{source.relative_to(ROOT)}, {args.rounds} rodadas, {args.saves} medidas por rodada "
          "(mediana por rodada; tempo de parede, segundos):")
    print(f"  grade {args.exercise} a frio (processo próprio): mediana {cold:5.2f}   [{shown(figures['cold'])}]")
    print(f"  só a correção (grade batch aquecido):      mediana {only:5.2f}   [{shown(figures['alone'])}]")
    print(f"  grade watch, do salvar ao resultado:       mediana {watched:5.2f}   [{shown(figures['watch'])}]")
    print(f"  check(), chamada depois da primeira:       mediana {checked:5.2f}   [{shown(figures['check'])}]")
    for name, value in (("grade watch", watched), ("check()", checked)):
        print(f"  {name}: {value / cold:.2f}x a frio (meta <= {TARGET_AGAINST_COLD:.2f}, "
              f"{verdict(value / cold <= TARGET_AGAINST_COLD)}); {value / only:.2f}x só a correção "
              f"(meta <= {TARGET_AGAINST_ALONE:.2f}, {verdict(value / only <= TARGET_AGAINST_ALONE)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
