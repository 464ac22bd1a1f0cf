"""Soak test: SIGKILL the team-email run at 200 random moments, resuming after each kill, on each store.

Each attempt is a forked child running `python -m harness run`'s main (a separate process,
killed by a real SIGKILL); the parent sleeps a random delay and kills it. After every kill
the parent reads the latest scene, every sequence point and the ledger; then it resumes
(or starts over, if the run was killed before its first checkpoint existed). Each run is killed
a random number of times (1 to 8) in a row, then resumed without interruption: a run that
does not finish then is lost. A finished run's outbox, ledger and model requests are checked.

The seed is fixed and printed (override with SOAK_SEED); the test is bounded in time.
"""
from __future__ import annotations

import os
import random
import signal
import statistics
import time
from collections import Counter
from pathlib import Path

import pytest

from harness.checkpoint import CheckpointError
from harness.cli_endpoint import ENDPOINT_LOG_ENV, make_run_client
from harness.display.crash_lab import wait_or_kill
from harness.effects import EffectsLedgerError
from harness.runner import run_durable
from harness.scenarios import load_scenario
from harness.stores import StoreError
from tests.durability_checks import emails, final_run_problems, fork_harness, wait_child

TARGET_KILLS = 200
# Seconds per store: only a guard against a hang. The soak needs its 200 kills however loaded
# the machine is (a quiet machine reaches them in well under a minute), so the budget is wide.
TIME_BUDGET = 900.0
RECALIBRATE_EVERY = 10       # runs between two timings of an uninterrupted run
MAX_KILLS_PER_RUN = 8        # each run is killed 1..8 times in a row, then resumed undisturbed
DEFAULT_SEED = 20261129
# The soak kills a run up to MAX_KILLS_PER_RUN times in a row, more than the default recovery
# policy allows (it has its own test); the limit here is exactly that many crashed resumes.
RECOVERY_LIMIT = str(MAX_KILLS_PER_RUN)
UNREADABLE = (CheckpointError, EffectsLedgerError, StoreError, ValueError)


def unreadable_parts(store) -> list[str]:
    """Every durable part of the run that exists but cannot be trusted."""
    bad = []
    for name, read in (("scene", store.load), ("ledger", store.effects), ("approvals", store.approvals)):
        try:
            read()
        except UNREADABLE as error:
            bad.append(f"{name}: {error}")
    try:
        points = store.points()
    except UNREADABLE as error:
        return bad + [f"sequence: {error}"]
    for point in points:
        try:
            store.read_point(point.id)
        except UNREADABLE as error:
            bad.append(f"{point.id}: {error}")
    return bad


def kill_position(store) -> str:
    """Where the run was when it died, as the store tells it (for the printed tally)."""
    state = store.load()
    statuses = sorted({record["status"] for record in store.effects().values()})
    pending = "pending" if state["pending_tool_use"] else "closed"
    return f"turn {state['turns']} {pending} ledger={'+'.join(statuses) or 'empty'}"


def start_or_resume(case, run_dir: Path, log: Path, out: Path) -> int:
    """A forked `python -m harness run`: --resume once a scene exists, a clean start before."""
    args = ["run", "--scenario", "team-email", "--workdir", str(run_dir), *case.cli_args(run_dir),
            "--max-recovery-attempts", RECOVERY_LIMIT]
    with case.open(run_dir) as store:
        if store.exists():
            args.append("--resume")
    return fork_harness(args, {ENDPOINT_LOG_ENV: str(log)}, out)


def kill_after(pid: int, delay: float) -> int:
    """SIGKILL ``pid`` once ``delay`` seconds have passed, unless it exits first; its exit code."""
    return wait_or_kill(pid, delay, poll=0.001)[0]


def warm_up(case, run_dir: Path) -> None:
    """One in-process run, so the SDK's lazy imports and models are ready before any fork."""
    scenario = load_scenario("team-email")
    with case.open(run_dir) as store:
        assert run_durable(make_run_client(scenario.responses), run_dir, scenario,
                           store=store)["status"] == "completed"


def timed_clean_run(case, folder: Path) -> float:
    folder.mkdir(parents=True)
    started = time.perf_counter()
    run_dir = folder / "run"
    pid = fork_harness(["run", "--scenario", "team-email", "--workdir", str(run_dir), *case.cli_args(run_dir)], {},
                       folder / "output.txt")
    assert wait_child(pid) == 0, (folder / "output.txt").read_text()
    return time.perf_counter() - started


@pytest.mark.slow
def test_soak_random_sigkills(tmp_path, store_case):
    seed = int(os.environ.get("SOAK_SEED", DEFAULT_SEED))
    rng = random.Random(seed)
    calibration = tmp_path / "calibration"
    case = store_case
    warm_up(case, tmp_path / "warm-up")  # children inherit a warm SDK: their time goes to the run itself
    timings = [timed_clean_run(case, calibration / f"c{number}") for number in range(3)]

    counts = {"kills": 0, "runs_completed": 0, "duplicate_emails": 0, "unreadable_checkpoints": 0,
              "lost_runs": 0, "inconsistent_runs": 0, "killed_before_first_checkpoint": 0}
    details = []
    positions = Counter()
    started = time.monotonic()
    run_number = 0
    while counts["kills"] < TARGET_KILLS and time.monotonic() - started < TIME_BUDGET:
        run_number += 1
        if run_number % RECALIBRATE_EVERY == 0:  # the machine's load drifts: so does a run's length
            timings.append(timed_clean_run(case, calibration / f"c{len(timings)}"))
        run_time = sorted(timings[-3:])[1]  # the median of the last three uninterrupted runs
        run_folder = tmp_path / f"run-{run_number:03d}"
        run_dir, log, out = run_folder / "run", run_folder / "requests.jsonl", run_folder / "output.txt"
        run_folder.mkdir()
        code = None
        for _attempt in range(rng.randint(1, MAX_KILLS_PER_RUN)):
            code = kill_after(start_or_resume(case, run_dir, log, out), rng.uniform(0, run_time * 1.1))
            if code != -signal.SIGKILL:
                break  # it finished before the kill came
            code = None
            counts["kills"] += 1
            with case.open(run_dir) as store:
                bad = unreadable_parts(store)
                counts["unreadable_checkpoints"] += len(bad)
                details += [f"run {run_number}: {problem}" for problem in bad]
                if not store.exists():
                    counts["killed_before_first_checkpoint"] += 1
                elif not bad:
                    positions[kill_position(store)] += 1
            if counts["kills"] >= TARGET_KILLS:
                break
        if code is None:  # the last thing that happened to this run was a kill: resume, undisturbed
            code = wait_child(start_or_resume(case, run_dir, log, out))
        if code != 0:
            counts["lost_runs"] += 1
            details.append(f"run {run_number}: ended with {code}: {out.read_text()[-400:]}")
            continue
        counts["runs_completed"] += 1
        with case.open(run_dir) as store:
            counts["duplicate_emails"] += max(0, len(emails(run_dir, store)) - 1)
            problems = final_run_problems(run_dir, log, store=store)
        if problems:
            counts["inconsistent_runs"] += 1
            details += [f"run {run_number}: {problem}" for problem in problems]

    elapsed = time.monotonic() - started
    print(f"\nsoak store={case.kind} seed={seed} run_time={statistics.median(timings) * 1000:.0f}ms elapsed={elapsed:.1f}s "
          + " ".join(f"{key}={value}" for key, value in counts.items()))
    print("where the kills landed (checkpoint turn / pending calls / ledger): "
          + ", ".join(f"{key}: {value}" for key, value in sorted(positions.items())))
    assert counts["kills"] == TARGET_KILLS, f"only {counts['kills']} kills in {TIME_BUDGET:.0f} s (seed {seed})"
    assert counts["duplicate_emails"] == 0, details
    assert counts["unreadable_checkpoints"] == 0, details
    assert counts["lost_runs"] == 0, details
    assert counts["inconsistent_runs"] == 0, details
    assert counts["runs_completed"] >= 2
