"""Soak test: SIGKILL the team-email run at 200 random moments, resuming after each kill.

Each attempt is a forked child running `python -m harness run`'s main (a separate process,
killed by a real SIGKILL); the parent sleeps a random delay and kills it. After every kill
the parent reads checkpoint.json, every sequence point and the ledger; then it resumes
(or starts over, if the run was killed before its first checkpoint existed). A run ends when
a process finishes on its own; then its outbox, ledger and model requests are checked.

The seed is fixed and printed (override with SOAK_SEED); the test is bounded in time.
"""
from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from harness.checkpoint import CheckpointError
from harness.effects import EFFECTS_FILE, EffectsLedgerError, load_effects
from harness.lifecycle import CHECKPOINT_FILE, load_run_checkpoint
from harness.runner import ENDPOINT_LOG_ENV
from harness.timeline import list_points
from tests.durability_checks import emails, final_run_problems, fork_harness, wait_child

TARGET_KILLS = 200
TIME_BUDGET = 120.0          # seconds: the whole soak stops here even if kills are missing
MAX_ATTEMPTS_PER_RUN = 60    # a run still unfinished after this many processes is lost
DEFAULT_SEED = 20261129
# The soak kills far more often than the recovery policy is meant for (it has its own test):
# a run killed many times in a row before it can finish a turn must not be marked failed here.
RECOVERY_LIMIT = "1000"


def unreadable_files(run_dir: Path) -> list[str]:
    """Every durable file of the run that exists but cannot be trusted."""
    bad = []
    try:
        load_run_checkpoint(run_dir / CHECKPOINT_FILE)
    except CheckpointError as error:
        bad.append(f"checkpoint: {error}")
    for point in list_points(run_dir):
        try:
            json.loads(point.read_text(encoding="utf-8"))
        except ValueError as error:
            bad.append(f"{point.name}: {error}")
    try:
        load_effects(run_dir / EFFECTS_FILE)
    except EffectsLedgerError as error:
        bad.append(f"ledger: {error}")
    return bad


def kill_position(run_dir: Path) -> str:
    """Where the run was when it died, as the files tell it (for the printed tally)."""
    state = load_run_checkpoint(run_dir / CHECKPOINT_FILE)
    statuses = sorted({record["status"] for record in load_effects(run_dir / EFFECTS_FILE).values()})
    pending = "pending" if state["pending_tool_use"] else "closed"
    return f"turn {state['turns']} {pending} ledger={'+'.join(statuses) or 'empty'}"


def kill_after(pid: int, delay: float) -> int:
    """SIGKILL ``pid`` once ``delay`` seconds have passed, unless it exits first; its exit code."""
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.001)
    os.kill(pid, signal.SIGKILL)  # harmless if it exited a moment ago (a zombie until reaped)
    return wait_child(pid)


def timed_clean_run(folder: Path) -> float:
    started = time.perf_counter()
    pid = fork_harness(["run", "--scenario", "team-email", "--workdir", str(folder / "run")], {},
                       folder / "output.txt")
    assert wait_child(pid) == 0, (folder / "output.txt").read_text()
    return time.perf_counter() - started


@pytest.mark.slow
def test_soak_random_sigkills(tmp_path):
    seed = int(os.environ.get("SOAK_SEED", DEFAULT_SEED))
    rng = random.Random(seed)
    calibration = tmp_path / "calibration"
    calibration.mkdir()
    run_time = sorted(timed_clean_run(calibration) for _ in range(3))[1]  # the median of three

    counts = {"kills": 0, "runs_completed": 0, "duplicate_emails": 0, "unreadable_checkpoints": 0,
              "lost_runs": 0, "inconsistent_runs": 0, "killed_before_first_checkpoint": 0}
    details = []
    positions = Counter()
    started = time.monotonic()
    run_number = 0
    while counts["kills"] < TARGET_KILLS and time.monotonic() - started < TIME_BUDGET:
        run_number += 1
        case = tmp_path / f"run-{run_number:03d}"
        run_dir, log, out = case / "run", case / "requests.jsonl", case / "output.txt"
        case.mkdir()
        finished_code = None
        for _attempt in range(MAX_ATTEMPTS_PER_RUN):
            resume = (run_dir / CHECKPOINT_FILE).exists()
            args = ["run", "--scenario", "team-email", "--workdir", str(run_dir),
                    "--max-recovery-attempts", RECOVERY_LIMIT] + (["--resume"] if resume else [])
            pid = fork_harness(args, {ENDPOINT_LOG_ENV: str(log)}, out)
            code = kill_after(pid, rng.uniform(0, run_time * 1.1))
            if code != -signal.SIGKILL:
                finished_code = code
                break
            counts["kills"] += 1
            bad = unreadable_files(run_dir)
            counts["unreadable_checkpoints"] += len(bad)
            details += [f"run {run_number}: {problem}" for problem in bad]
            if not (run_dir / CHECKPOINT_FILE).exists():
                counts["killed_before_first_checkpoint"] += 1
            elif not bad:
                positions[kill_position(run_dir)] += 1
            if counts["kills"] >= TARGET_KILLS:
                break
        if finished_code is None and counts["kills"] >= TARGET_KILLS:
            # The last kill of the soak: this run must still be resumable to the end.
            finished_code = _resume_to_the_end(run_dir, log, out)
        if finished_code != 0:
            counts["lost_runs"] += 1
            details.append(f"run {run_number}: ended with {finished_code}: {out.read_text()[-400:]}")
            continue
        counts["runs_completed"] += 1
        counts["duplicate_emails"] += max(0, len(emails(run_dir)) - 1)
        problems = final_run_problems(run_dir, log)
        if problems:
            counts["inconsistent_runs"] += 1
            details += [f"run {run_number}: {problem}" for problem in problems]

    elapsed = time.monotonic() - started
    print(f"\nsoak seed={seed} run_time={run_time * 1000:.0f}ms elapsed={elapsed:.1f}s "
          + " ".join(f"{key}={value}" for key, value in counts.items()))
    print("where the kills landed (checkpoint turn / pending calls / ledger): "
          + ", ".join(f"{key}: {value}" for key, value in sorted(positions.items())))
    assert counts["kills"] == TARGET_KILLS, f"only {counts['kills']} kills in {TIME_BUDGET:.0f} s (seed {seed})"
    assert counts["duplicate_emails"] == 0, details
    assert counts["unreadable_checkpoints"] == 0, details
    assert counts["lost_runs"] == 0, details
    assert counts["inconsistent_runs"] == 0, details
    assert counts["runs_completed"] >= 2


def _resume_to_the_end(run_dir: Path, log: Path, out: Path) -> int:
    args = ["run", "--scenario", "team-email", "--workdir", str(run_dir), "--max-recovery-attempts", RECOVERY_LIMIT]
    if (run_dir / CHECKPOINT_FILE).exists():
        args.append("--resume")
    return wait_child(fork_harness(args, {ENDPOINT_LOG_ENV: str(log)}, out))
