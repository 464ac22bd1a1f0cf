"""Benchmark: `grade batch` on N copies of a solution, -j 1 versus -j 2, in one run.

Run from the project root:

    python bench/grade_batch.py [--copies 20] [--exercise exercise-3]

`bench/grade.py` calls `measure_batch` and `format_batch` so that its single run
prints these figures beside the engine's own.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from grader import batch  # noqa: E402

TARGET_SPEEDUP = 1.6


def _copies(solution: Path, folder: Path, count: int, exercise: str) -> list[batch.Submission]:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(1, count + 1):
        shutil.copyfile(solution, folder / f"aluno-{index:02d}.ipynb")
    submissions, _ = batch.find_submissions(folder, exercise)
    return submissions


def _timed_batch(submissions, options, levels, jobs: int) -> tuple[float, list[batch.Row]]:
    started = time.perf_counter()
    rows = batch.grade_all(submissions, options, levels, jobs=jobs)
    return time.perf_counter() - started, rows


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_batch(
    solution: Path,
    exercise: str = "exercise-3",
    copies: int = 20,
    job_counts: tuple[int, ...] = (1, 2),
    rounds: int = 2,
) -> dict[int, dict[str, float]]:
    """Wall and CPU seconds of `grade batch` over `copies` copies of `solution`, per -j value.

    The copies are split into `rounds` slices graded alternately with each -j value
    (-j 1, -j 2, -j 1, -j 2...), so a change in the machine's load during the run
    weighs on both sides alike. Every row must come out `aprovado`; otherwise the
    figures would time failures, so the benchmark stops with the first bad row.
    """
    levels, checks = batch.plan_summary(exercise, ())
    options = batch.BatchOptions(
        exercise=exercise,
        timeout=batch.DEFAULT_TIMEOUT,
        memory_mb=batch.DEFAULT_MEMORY_MB,
        hard_timeout=batch.worker_deadline(batch.DEFAULT_TIMEOUT, checks),
    )
    timings = {jobs: {"wall": 0.0, "cpu": 0.0} for jobs in job_counts}
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as scratch:
        submissions = _copies(Path(solution), Path(scratch) / "entregas", copies, exercise)
        # Warm-up: one submission, so disk caches and bytecode favour no -j value.
        _timed_batch(submissions[:1], options, levels, 1)
        size = -(-copies // rounds)
        for start in range(0, copies, size):
            for jobs in job_counts:
                cpu_before = _children_cpu()
                seconds, rows = _timed_batch(submissions[start:start + size], options, levels, jobs)
                bad = [row for row in rows if row.status != batch.PASSED]
                if bad:
                    raise SystemExit(f"grade batch -j {jobs}: {bad[0].submission} saiu {bad[0].status}: {bad[0].message}")
                timings[jobs]["wall"] += seconds
                timings[jobs]["cpu"] += _children_cpu() - cpu_before
    return timings


def format_batch(timings: dict[int, dict[str, float]], copies: int) -> str:
    base = timings[1]["wall"]
    lines = [f"grade batch em {copies} cópias da solução (tempo de relógio; CPU somada dos processos):"]
    for jobs, figures in sorted(timings.items()):
        wall, cpu = figures["wall"], figures["cpu"]
        lines.append(
            f"  -j {jobs}: {wall:6.1f} s  ({wall / copies:5.2f} s por submissão, CPU {cpu / copies:4.2f} s)"
            f"  {base / wall:4.2f}x em relação a -j 1"
        )
    if 2 in timings:
        speedup = base / timings[2]["wall"]
        verdict = "atingida" if speedup >= TARGET_SPEEDUP else "NÃO atingida"
        lines.append(f"  aceleração com -j 2: {speedup:.2f}x (meta: >= {TARGET_SPEEDUP}x, {verdict})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", default="exercise-3")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--solution", type=Path, default=None, help="padrão: solutions/EXERCISE.ipynb")
    args = parser.parse_args(argv)
    solution = args.solution or ROOT / "solutions" / f"{args.exercise}.ipynb"
    print(f"núcleos: {os.cpu_count()}  carga média antes: {os.getloadavg()[0]:.1f}")
    timings = measure_batch(solution, args.exercise, args.copies)
    print(format_batch(timings, args.copies))
    print(f"carga média depois: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
