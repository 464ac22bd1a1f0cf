"""Levels 3 and 4's probe: the student's loop run on a scripted conversation, every save point it writes recorded."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from grader.checks.exercise_2.fixtures import scripted_turns
from grader.checks.exercise_2.save_probe import CHECKPOINT_NAME
from grader.checks.framework import Context, Fixture, StudentProblem, response_tokens


RunT = TypeVar("RunT")


@dataclass
class SavePoint:
    state: dict
    tools_run: int  # tool executions that had happened when this save was made


@dataclass
class CheckpointedRun:
    saves: list[SavePoint]
    state: Any
    path: Path
    problem: StudentProblem | None = None


def checkpointed_run(ctx: Context, fixture: Fixture) -> CheckpointedRun:
    """The student's run_agent on this fixture with save_checkpoint spied on (memoized); what the
    student's code raised is raised again here, for each check that reads the run."""

    def compute() -> CheckpointedRun:
        from grader.checks.reference import make_stub_client, new_run_state

        run_agent = ctx.student_function("run_agent")
        path = ctx.fresh_dir(f"run-{fixture.name}") / CHECKPOINT_NAME
        client = make_stub_client(fixture.data["responses"])
        saves, state, problem = run_with_saves_spied(ctx, fixture, run_agent, "run_agent", client,
                                                     new_run_state(fixture.data["task"]), path)
        return CheckpointedRun(saves, state, path, problem)

    return require_run(ctx.memo(f"checkpointed:{fixture.name}", compute))


def run_with_saves_spied(ctx: Context, fixture: Fixture, loop: Any, name: str, client: Any, state: dict,
                         path: Path) -> tuple[list[SavePoint], Any, StudentProblem | None]:
    """``loop(client, state, path)`` (with the fixture's max_turns, if it has one) among the fixture's
    tools, the student's save_checkpoint replaced by a spy: every save it makes, what it returned,
    and what it raised."""
    from grader.checks.reference import write_json_atomic

    options = {"max_turns": fixture.data["max_turns"]} if "max_turns" in fixture.data else {}
    saves: list[SavePoint] = []
    with ctx.tools(fixture, name) as tools:

        def save_checkpoint(state, checkpoint_path):
            """The grader's spy: records a copy of each saved state, then saves for real."""
            saves.append(SavePoint(copy.deepcopy(state), len(tools.calls)))
            write_json_atomic(checkpoint_path, state)

        with ctx.replaced_global("save_checkpoint", save_checkpoint):
            returned, problem = ctx.call_or_problem(loop, client, state, path, **options)
    return saves, returned, problem


SAVE_POINT_FIELD = "save_point"
SAVE_POINTS = ("A", "B")


def declared_point(save: SavePoint) -> str | None:
    """The point the saved checkpoint says it is (``state["save_point"]``), or None."""
    value = save.state.get(SAVE_POINT_FIELD)
    return value if isinstance(value, str) and value in SAVE_POINTS else None


def point_by_content(save: SavePoint) -> str:
    """The point the saved conversation shows: B ends on the tools' results while the run goes on;
    anything else is A (the model's reply, or a response that ended the run without being kept)."""
    messages = save.state.get("messages") or [{}]
    last = messages[-1] if isinstance(messages[-1], dict) else {}
    content = last.get("content")
    has_results = isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content)
    running = save.state.get("status", "running") == "running"
    return "B" if last.get("role") == "user" and has_results and running else "A"


def point_of(save: SavePoint) -> str | None:
    """The point a save is, as the checkpoint itself declares it: the grader reads the field the
    exercise asks the loop to write, as a resume would."""
    return declared_point(save)


def expected_points(fixture: Fixture) -> list[tuple[str, int]]:
    points = []
    for turn, response in enumerate(scripted_turns(fixture.data), start=1):
        points.append(("A", turn))
        if response.get("stop_reason") == "tool_use":
            points.append(("B", turn))
    return points


def tool_uses_of(response: dict) -> list[dict]:
    return [{"id": b["id"], "name": b["name"], "input": b["input"]}
            for b in response["content"] if b.get("type") == "tool_use"]


def undeclared_note(run: CheckpointedRun, mid_sentence: bool = False) -> str:
    """Why a save that happened is not found: it does not say which point it is. ``mid_sentence``: the
    text it follows has no period yet and gets one after it (``nothing_observed`` adds it)."""
    if any(declared_point(save) is None for save in run.saves):
        note = (f"Há gravações sem o campo {SAVE_POINT_FIELD} (ou com outro valor que \"A\" e \"B\"): o corretor "
                "reconhece cada ponto pelo que o checkpoint declara")
        return f". {note}" if mid_sentence else f" {note}."
    return ""


def find_save(run: CheckpointedRun, point: str, turn: int) -> SavePoint | None:
    for save in run.saves:
        if point_of(save) == point and save.state.get("turns") == turn:
            return save
    return None


def require_run(run: RunT) -> RunT:
    """``run``, unless the student's code failed during it: then that failure."""
    if run.problem is not None:
        raise run.problem
    return run


def tokens_after_each_turn(fixture: Fixture) -> list[int]:
    """tokens_used a correct loop holds at each point A: the usage of every response so far."""
    total, sums = 0, []
    for response in scripted_turns(fixture.data):
        total += response_tokens(response)
        sums.append(total)
    return sums
