"""Benchmark: `grade batch` against nbgrader's `autograde` on the same submissions, in one run.

Run from the project root:

    python3 bootstrap.py python bench/grade_batch.py [--copies 10] [--rounds 3] [--exercise exercise-3]
        [--class-size 100]

Every round grades the same N submissions (copies of the solution: a class where
everyone got it right, so every figure times a full, successful grading) with each
contender, in a rotating order so that changes in the machine's load weigh on all
alike:

- ``nbgrader autograde`` (one process for the whole class, a fresh kernel per student;
  bench/nbgrader_peer.py sets its course up; needs the optional ``bench`` extra and is
  skipped with a message without it);
- ``grade batch -j 1`` and ``-j 2`` (warm workers, grader/core/warm.py, forking their
  kernels from the batch's one template process, grader/core/forked_kernels.py);
- ``grade batch -j 1`` with ``GRADE_KERNEL_TEMPLATE=0`` (every kernel started and
  importing on its own, as before the template);
- ``grade batch -j 1 --sandbox`` (skipped with a message without bubblewrap; as root its
  kernels are forked from a template inside the worker's sandbox, each as its own user;
  otherwise each starts in a bubblewrap of its own);
- a batch of one submission with ``-j 1``, whose CPU and wall time against the full
  batch's split each into a fixed part per batch (the template importing, a worker
  starting) and a part per submission.

Beside the ratios it prints how many cores ``-j 1`` keeps busy (CPU / wall), the most
``-j 2`` could gain on 2 cores (it needs at least its own CPU / 2 of wall time), and the
most it could gain given the batch's serial start (Amdahl's law: with a start of S
seconds and p seconds per submission, N submissions take at least S + N p / 2 with two
jobs; 1.9x needs S <= N p / 18).

``--class-size 100`` adds one round of ``-j 1``, ``-j 2`` and ``--sandbox`` over a class of 100
submissions: the scaling figure, where the serial start no longer bounds ``-j 2``.

Targets: ``-j 1`` at most 0.8x nbgrader's time; ``-j 2`` at least 1.9x as fast as
``-j 1``; the sandbox adds at most 15% per submission. `bench/grade.py` prints these
figures beside the engine's own.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from grader.core.limits import Limits  # noqa: E402
from grader.instructor import batch  # noqa: E402

NBGRADER = "nbgrader autograde"
J1, J2, SANDBOX = "grade batch -j 1", "grade batch -j 2", "grade batch -j 1 --sandbox"
J1_PLAIN = "-j 1 sem modelo de kernel"
ONE = "-j 1, uma submissão"
TARGET_VS_NBGRADER = 0.8  # -j 1 time / nbgrader time, at most
TARGET_SPEEDUP = 1.9  # -j 1 time / -j 2 time, at least
TARGET_SANDBOX = 1.15  # sandboxed / plain time, at most


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _students(count: int) -> list[str]:
    return [f"aluno-{index:02d}" for index in range(1, count + 1)]


def _copies(solution: Path, folder: Path, students: list[str], exercise: str) -> list[batch.Submission]:
    folder.mkdir(parents=True, exist_ok=True)
    for student in students:
        shutil.copyfile(solution, folder / f"{student}.ipynb")
    submissions, _ = batch.find_submissions(folder, exercise)
    return submissions


def _grade_batch(submissions, exercise: str, levels, checks: int, jobs: int, sandbox: bool,
                 template: bool = True) -> None:
    from grader.core.forked_kernels import SWITCH

    os.environ[SWITCH] = "1" if template else "0"  # the workers inherit it
    options = batch.BatchOptions(
        exercise=exercise,
        limits=Limits(),
        hard_timeout=batch.worker_deadline(Limits(), checks),
        sandbox=sandbox,
    )
    rows = batch.grade_all(submissions, options, levels, jobs=jobs)
    bad = [row for row in rows if row.status != batch.PASSED]
    if bad:
        raise SystemExit(f"grade batch -j {jobs}: {bad[0].submission} saiu {bad[0].status}: {bad[0].message}")


def contenders(skipped: list[str]) -> list[str]:
    from bench import nbgrader_peer

    names = [J1, J2, J1_PLAIN, ONE]
    problem = nbgrader_peer.available()
    if problem:
        skipped.append(problem)
    else:
        names.insert(0, NBGRADER)
    if shutil.which("bwrap"):
        names.append(SANDBOX)
    else:
        skipped.append("bubblewrap (bwrap) não está instalado; a medição com --sandbox foi pulada.")
    return names


def measure_batch(
    solution: Path,
    exercise: str = "exercise-3",
    copies: int = 10,
    rounds: int = 3,
    names: list[str] | None = None,
) -> dict[str, dict[str, float]]:
    """Wall and CPU seconds of each contender over ``rounds`` rounds of ``copies`` submissions."""
    from bench import nbgrader_peer

    skipped: list[str] = []
    names = names or contenders(skipped)
    for reason in skipped:
        print(f"aviso: {reason}")
    levels, checks = batch.plan_summary(exercise, ())
    students = _students(copies)
    timings = {name: {"wall": 0.0, "cpu": 0.0, "graded": 0, "rounds": []} for name in names}
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as scratch:
        scratch_path = Path(scratch)
        submissions = _copies(Path(solution), scratch_path / "entregas", students, exercise)
        # Warm-up: one submission, so disk caches and bytecode favour nobody.
        _grade_batch(submissions[:1], exercise, levels, checks, 1, False)
        for round_number in range(rounds):
            courses = {}
            if NBGRADER in names:  # set up outside the timing, as an instructor does beforehand
                courses[round_number] = nbgrader_peer.setup_course(
                    scratch_path / f"rodada-{round_number}", Path(solution), exercise, students, checks)
            order = names[round_number % len(names):] + names[:round_number % len(names)]
            for name in order:
                cpu_before, started = _children_cpu(), time.perf_counter()
                if name == NBGRADER:
                    nbgrader_peer.autograde(courses[round_number], students)
                else:
                    _grade_batch(submissions[:1] if name == ONE else submissions, exercise, levels, checks,
                                 jobs=2 if name == J2 else 1, sandbox=name == SANDBOX, template=name != J1_PLAIN)
                seconds = time.perf_counter() - started
                timings[name]["wall"] += seconds
                timings[name]["rounds"].append(seconds)
                timings[name]["cpu"] += _children_cpu() - cpu_before
                timings[name]["graded"] += 1 if name == ONE else len(students)
    return timings


def _verdict(ok: bool) -> str:
    return "atingida" if ok else "NÃO atingida"


def _paired(timings: dict, numerator: str, denominator: str) -> float:
    """Median over the rounds of the per-round ratio: each pair ran minutes apart at most."""
    return statistics.median(a / b for a, b in zip(timings[numerator]["rounds"], timings[denominator]["rounds"]))


def format_batch(timings: dict[str, dict], copies: int) -> str:
    rounds = len(next(iter(timings.values()))["rounds"])
    lines = [f"{copies} submissões (cópias da solução) por rodada, {rounds} rodada(s); tempo de relógio "
             "somado e CPU dos processos filhos por submissão:"]
    for name, figures in timings.items():
        graded = max(1, int(figures["graded"]))
        # A sandboxed kernel is killed inside its own PID namespace, so its CPU never reaches
        # this process's children's count: only the worker's would show.
        cpu = "n/d" if name == SANDBOX else f"{figures['cpu'] / graded:5.2f} s"
        shown = " ".join(f"{seconds:.1f}" for seconds in figures["rounds"])
        lines.append(f"  {name:<28} {figures['wall']:7.1f} s  ({figures['wall'] / graded:5.2f} s por submissão, "
                     f"CPU {cpu})  rodadas: [{shown}]")
    lines.append("  razões (mediana das razões por rodada):")
    if NBGRADER in timings and J1 in timings:
        ratio = _paired(timings, J1, NBGRADER)
        cpu = timings[J1]["cpu"] / max(timings[NBGRADER]["cpu"], 1e-9)
        lines.append(f"    -j 1 / nbgrader: {ratio:.2f} (meta: <= {TARGET_VS_NBGRADER}, "
                     f"{_verdict(ratio <= TARGET_VS_NBGRADER)}); em CPU: {cpu:.2f}")
    if J1 in timings and J2 in timings:
        speedup = _paired(timings, J1, J2)
        lines.append(f"    aceleração com -j 2: {speedup:.2f}x (meta: >= {TARGET_SPEEDUP}x, {_verdict(speedup >= TARGET_SPEEDUP)})")
    if J1 in timings and SANDBOX in timings:
        cost = _paired(timings, SANDBOX, J1)
        lines.append(f"    --sandbox / sem sandbox: {cost:.2f} (meta: <= {TARGET_SANDBOX}, {_verdict(cost <= TARGET_SANDBOX)})")
        if J1_PLAIN in timings:
            lines.append(f"    --sandbox / sem sandbox e sem modelo de kernel: {_paired(timings, SANDBOX, J1_PLAIN):.2f}")
    if J1 in timings and J1_PLAIN in timings:
        lines.append(f"    -j 1 / -j 1 sem modelo de kernel: {_paired(timings, J1, J1_PLAIN):.2f}")
    lines += _bound(timings, copies)
    return "\n".join(lines)


def _bound(timings: dict, copies: int) -> list[str]:
    """Why -j 2 can gain only so much on 2 cores: the cores -j 1 keeps busy, -j 2's own CPU, and the
    batch's start (the template importing anthropic) that no number of jobs shortens."""
    if J1 not in timings or J2 not in timings:
        return []
    wall_1, cpu_1, cpu_2 = timings[J1]["wall"], timings[J1]["cpu"], timings[J2]["cpu"]
    lines = [f"  -j 1 ocupa em média {cpu_1 / wall_1:.2f} núcleo(s) (CPU / relógio); -j 2 gasta {cpu_2 / cpu_1:.2f}x "
             f"a CPU de -j 1, então em 2 núcleos livres leva ao menos CPU / 2 e acelera no máximo "
             f"{2 * wall_1 / cpu_2:.2f}x sobre o -j 1 desta medição"]
    if ONE in timings and copies > 1:
        rounds = len(timings[ONE]["rounds"])
        per_submission = (cpu_1 - timings[ONE]["cpu"]) / rounds / (copies - 1)
        fixed = timings[ONE]["cpu"] / rounds - per_submission
        lines.append(f"  CPU de um lote: {fixed:.2f} s fixos (o modelo de kernel e um processo de correção "
                     f"iniciando) + {per_submission:.2f} s por submissão")
        # Amdahl: the start is serial, the submissions split between the two jobs.
        step = (statistics.median(timings[J1]["rounds"]) - statistics.median(timings[ONE]["rounds"])) / (copies - 1)
        start = statistics.median(timings[ONE]["rounds"]) - step
        if step > 0 and start > 0:
            best = (start + copies * step) / (start + -(-copies // 2) * step)
            needed = copies * step / 18  # start <= N p / 18 makes (S + N p) / (S + N p / 2) >= 1.9
            lines.append(f"  relógio: {start:.2f} s de partida (em série) + {step:.2f} s por submissão; com "
                         f"{copies} submissões, -j 2 acelera no máximo {best:.2f}x (1,9x pediria uma partida "
                         f"de até {needed:.2f} s)")
            # The same start taken out of both: how -j 2 scales on the part that jobs can share,
            # what a batch whose start were already paid (a template kept warm) would show at best.
            rest_2 = statistics.median(timings[J2]["rounds"]) - start
            if rest_2 > 0:
                lines.append(f"  sem a partida: -j 1 {copies * step:.2f} s, -j 2 {rest_2:.2f} s, aceleração "
                             f"{copies * step / rest_2:.2f}x na parte que os jobs dividem")
    return lines


def measure_scaling(solution: Path, exercise: str, size: int, rounds: int = 1) -> dict[str, dict[str, float]]:
    """-j 1, -j 2 and --sandbox (where bubblewrap is) over one class of ``size`` submissions, in
    ``rounds`` rotating rounds: with a class this size the batch's serial start weighs little, so
    -j 2 / -j 1 is the figure of how the batch scales (the 10-submission figure stays, with its
    Amdahl bound)."""
    names = [J1, J2] + ([SANDBOX] if shutil.which("bwrap") else [])
    return measure_batch(solution, exercise, size, rounds, names)


def format_scaling(timings: dict[str, dict], size: int) -> str:
    rounds = len(timings[J1]["rounds"])
    lines = [f"Escala, uma turma de {size} submissões, {rounds} rodada(s) (numa máquina compartilhada, com ruído):"]
    for name, figures in timings.items():
        graded = max(1, figures["graded"])
        cpu = f", CPU {figures['cpu'] / graded:5.2f} s" if name != SANDBOX else ""
        rounds_shown = ", ".join(f"{seconds:.1f}" for seconds in figures["rounds"])
        lines.append(f"  {name:<28} {figures['wall']:7.1f} s  ({figures['wall'] / graded:5.2f} s por submissão{cpu})"
                     f"  rodadas: [{rounds_shown}]")
    speedup = _paired(timings, J1, J2)
    lines.append(f"  aceleração com -j 2 em {size} submissões (mediana das rodadas): {speedup:.2f}x "
                 f"(meta: >= {TARGET_SPEEDUP}x, {_verdict(speedup >= TARGET_SPEEDUP)})")
    if SANDBOX in timings:
        cost = _paired(timings, SANDBOX, J1)
        lines.append(f"  --sandbox / sem sandbox em {size} submissões: {cost:.2f} "
                     f"(meta: <= {TARGET_SANDBOX}, {_verdict(cost <= TARGET_SANDBOX)})")
    return "\n".join(lines)


def _spin(work: int) -> None:
    total = 0
    for number in range(work):
        total += number * number % 7


def machine_ceiling(work: int = 30_000_000) -> float:
    """The most any two jobs can gain here: the same fixed pure-Python work done by one process
    alone, then by two at once. On two free, independent cores it is 2.0; vCPUs that share a
    physical core, or a host busy elsewhere, give less, and no ``-j 2`` can beat this figure."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    started = time.perf_counter()
    alone = context.Process(target=_spin, args=(work,))
    alone.start()
    alone.join()
    one = time.perf_counter() - started
    started = time.perf_counter()
    pair = [context.Process(target=_spin, args=(work,)) for _ in range(2)]
    for process in pair:
        process.start()
    for process in pair:
        process.join()
    return 2 * one / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", default="exercise-3")
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--solution", type=Path, default=None, help="padrão: solutions/EXERCISE.ipynb")
    parser.add_argument("--class-rounds", type=int, default=1, metavar="R",
                        help="rodadas da medição de escala (padrão: 1; cada uma corrige a turma 3 vezes)")
    parser.add_argument("--class-size", type=int, default=0, metavar="N",
                        help="mede também -j 2 / -j 1 e --sandbox / -j 1 com N submissões (o tamanho de uma "
                             "turma, 100), numa rodada só: a figura de escala; 0 pula (padrão)")
    args = parser.parse_args(argv)
    solution = args.solution or ROOT / "solutions" / f"{args.exercise}.ipynb"
    os.environ.setdefault("GRADE_STATE_FILE", str(Path(tempfile.gettempdir()) / "bench-grade-state.json"))
    print(f"núcleos: {os.cpu_count()}  carga média antes: {os.getloadavg()[0]:.1f}")
    ceiling = machine_ceiling()
    print(f"teto desta máquina agora: dois processos de puro Python fazem {ceiling:.2f}x o trabalho de um "
          f"(2,00 em dois núcleos livres e independentes; nenhum -j 2 passa disso)")
    timings = measure_batch(solution, args.exercise, args.copies, args.rounds)
    print(format_batch(timings, args.copies))
    if args.class_size > 1:
        print(format_scaling(measure_scaling(solution, args.exercise, args.class_size, args.class_rounds),
                             args.class_size))
        print(f"teto desta máquina no fim: {machine_ceiling():.2f}x")
    print(f"carga média depois: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
