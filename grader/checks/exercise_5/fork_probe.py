"""Level 3's probe: the student's ``fork_at_decision`` run once per fixture, and the continuation of the fork."""
from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from grader.checks.exercise_5.fixtures import FORK_FOLDER, RUN_FOLDER, write_run_dir
from grader.checks.exercise_5.probes import active_points, differences, point_file, snapshot, world_snapshot
from grader.checks.framework import CheckFailed, Context, Fixture, content_blocks, describe_error, show


@dataclass
class Forked:
    turn: int
    point: str
    source: dict
    returned: Any
    original_before: dict[str, bytes]
    original_after_fork: dict[str, bytes]
    original_after_run: dict[str, bytes]
    world_changed_by_fork: str
    world_changed_by_run: str
    fork_files: dict[str, bytes]
    fork_points: list[str]
    fork_calls: list
    continuation_problem: str = ""
    continuation_sent: bool = False  # the new line reached its send_email decision and answered it
    called_between: tuple[float, float] = (0.0, 0.0)  # when fork_at_decision was called and when it returned (UTC seconds)


CONTINUATION_SEND = "toolu_05FORK"


def continuation_script(state: dict) -> list[dict]:
    """The new line's next decision: a send_email with a fresh id, then the end."""
    usage = {"input_tokens": 10, "output_tokens": 5}
    filler = {"content": [{"type": "text", "text": "."}], "stop_reason": "end_turn", "usage": usage}
    assistants = sum(1 for m in state["messages"] if m.get("role") == "assistant")
    send = {
        "content": [{"type": "tool_use", "id": CONTINUATION_SEND, "name": "send_email",
                     "input": {"to": "team@example.com", "subject": "Conclusões (linha bifurcada)"}}],
        "stop_reason": "tool_use", "usage": usage,
    }
    done = {"content": [{"type": "text", "text": "Pronto."}], "stop_reason": "end_turn", "usage": usage}
    return [filler] * assistants + [send, done]


def forked(ctx: Context, fixture: Fixture) -> Forked:
    def run() -> Forked:
        from harness.fake_endpoint import make_stub_client
        from harness.timeline import read_point, run_timeline

        fork_at_decision = ctx.student_function("fork_at_decision")
        spec = fixture.expect["fork"]
        with ctx.tools(fixture, "fork") as spy:
            run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
            new_dir = spy.workspace.root / FORK_FOLDER
            original_before, world_before = snapshot(run_dir), world_snapshot(spy.workspace)
            called_at = time.time()
            returned = ctx.call(fork_at_decision, run_dir, spec["tool"], new_dir)
            returned_at = time.time()
            original_after_fork = snapshot(run_dir)
            world_after_fork = world_snapshot(spy.workspace)
            fork_files, fork_points, fork_calls = snapshot(new_dir), active_points(new_dir), list(spy.calls)
            problem_text, sent = "", False
            try:
                state = read_point(new_dir / "checkpoint.json")
                final = run_timeline(make_stub_client(continuation_script(state)), new_dir)
                sent = any(b.get("tool_use_id") == CONTINUATION_SEND for m in final["messages"]
                           for b in content_blocks(m, "tool_result"))
            except Exception as error:  # noqa: BLE001 - reported by the check that needs it
                problem_text = f"{describe_error(error)}"
            original_after_run = snapshot(run_dir)
            world_after_run = world_snapshot(spy.workspace)
        return Forked(
            spec["turn"], spec["point"], point_file(fixture, spec["turn"], spec["point"]), copy.deepcopy(returned),
            original_before, original_after_fork, original_after_run,
            differences(world_before, world_after_fork), differences(world_after_fork, world_after_run),
            fork_files, fork_points, fork_calls, problem_text, sent, (called_at, returned_at),
        )

    return ctx.memo(f"fork:{fixture.name}", run)


def has_fork(fixture: Fixture) -> bool:
    return "fork" in fixture.expect


def fork_timeline(run: Forked) -> dict:
    raw = run.fork_files.get("timeline.json")
    if raw is None:
        raise CheckFailed("new_run_dir não tem timeline.json: é ele que dá identidade à nova linha.",
                          expected="timeline.json em new_run_dir", observed=sorted(run.fork_files))
    try:
        info = json.loads(raw)
    except ValueError:
        raise CheckFailed("timeline.json da nova linha não é JSON válido.", expected="JSON", observed=raw[:80]) from None
    if not isinstance(info, dict):
        raise CheckFailed("timeline.json deveria ser um objeto.", expected="objeto", observed=show(info, 80))
    return info


CLOCK_SLACK = 2.0  # seconds: utc_now() drops the fraction, and the grading machine is busy


def creation_time_problem(created_at: Any, called_between: tuple[float, float]) -> str:
    """What is wrong with a fork's created_at ("" when it is utc_now() taken during the call)."""
    if created_at is None:
        return ("timeline.json da nova linha não tem created_at: grave \"created_at\": utc_now(), o instante "
                "da bifurcação em UTC. É por ele que se sabe quando cada linha nasceu, e em que ordem.")
    moment = None
    if isinstance(created_at, str):
        try:
            moment = datetime.fromisoformat(created_at)
        except ValueError:
            moment = None
    if moment is None or moment.tzinfo is None:
        return (f"created_at deveria ser um instante ISO 8601 com fuso (utc_now() dá "
                f"\"2026-11-20T14:03:11+00:00\"), mas é {created_at!r}.")
    start, end = called_between
    if not start - CLOCK_SLACK <= moment.timestamp() <= end + CLOCK_SLACK:
        return (f"created_at vale {created_at}, que não é o instante da bifurcação: a nova linha nasce quando "
                "fork_at_decision roda (utc_now()), não quando a linha original nasceu.")
    return ""
