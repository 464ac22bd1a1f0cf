"""Benchmark: ``grade exercise-2`` on the solution, this checkout against another one, side by side.

Run from the project root, with a checkout of the code to compare against (``main``, say):

    git clone --shared -b main . /tmp/main-checkout
    python3 bootstrap.py python bench/grade_exercise_2.py --other /tmp/main-checkout [--rounds 5]

Each round grades the solution once with each checkout, alternating which goes first, in a
fresh ``grade`` process (the other checkout is put first on PYTHONPATH, so this
environment's packages serve both). Prints the median wall time of each and their ratio
(target: at most 1.30), and how many crash states this checkout's explorer read per grading.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.30


def grade_once(checkout: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    command = [sys.executable, "-m", "grader.cli", "exercise-2", "--notebook",
               str(checkout / "solutions" / "exercise-2.ipynb")]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"grade falhou em {checkout} ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds


def crash_states_per_grading() -> int:
    """The states the explorer reads in one grading of the solution: both explorations."""
    sys.path.insert(0, str(ROOT))
    import json
    import tempfile

    from grader.checks.crash_states import explore, explorer_state
    from harness.checkpoint import load_checkpoint

    namespace: dict = {}
    notebook = json.loads((ROOT / "solutions" / "exercise-2.ipynb").read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith(("import", "def save_checkpoint")):
            exec(compile(source, "solution", "exec"), namespace)  # noqa: S102 - our own solution
    total = 0
    for old in (explorer_state("anterior", 3), None):
        found = explore(namespace["save_checkpoint"], load_checkpoint, old, explorer_state("nova", 4),
                        Path(tempfile.mkdtemp()))
        total += len(found.verdicts)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, required=True, help="the checkout to compare against")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    times: dict[str, list[float]] = {"this": [], "other": []}
    for number in range(options.rounds):
        order = [("this", ROOT), ("other", options.other)]
        for label, checkout in (order if number % 2 == 0 else order[::-1]):
            times[label].append(grade_once(checkout))
    this, other = statistics.median(times["this"]), statistics.median(times["other"])
    print(f"grade exercise-2, mediana de {options.rounds} rodadas alternadas:")
    print(f"  esta cópia: {this:.2f} s  {[round(t, 2) for t in times['this']]}")
    print(f"  a outra:    {other:.2f} s  {[round(t, 2) for t in times['other']]}")
    ratio = this / other
    print(f"  razão: {ratio:.2f} (alvo: até {TARGET_RATIO:.2f}) {'ok' if ratio <= TARGET_RATIO else 'ACIMA DO ALVO'}")
    print(f"  estados de queda lidos por correção: {crash_states_per_grading()}")


if __name__ == "__main__":
    main()
