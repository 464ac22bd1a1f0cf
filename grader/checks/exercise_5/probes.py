"""Looking at folders before and after the student's code: snapshots, their differences, the active save
points, and what is left of a request the student's function must refuse (a decision or a target the
active sequence does not have)."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

from grader.checks.exercise_5.fixtures import CHECKPOINTS, FORK_FOLDER, RUN_FOLDER, _point, write_run_dir
from grader.checks.framework import CheckFailed, Context, Fixture, describe_error, show


FOLDER = b"<pasta>"  # what a folder looks like in a snapshot


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file and folder under ``folder``: relative path -> bytes (folders end in "/"), so
    a folder created, or a file moved into one, shows up as a difference."""
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_dir():
            found[relative + "/"] = FOLDER
        elif path.is_file():
            found[relative] = path.read_bytes()
    return found


def files_of(found: dict[str, bytes]) -> dict[str, bytes]:
    return {path: data for path, data in found.items() if not path.endswith("/")}


def differences(before: dict[str, bytes], after: dict[str, bytes]) -> str:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    parts = []
    new_files = [a for a in added if not a.endswith("/")]
    new_folders = [a for a in added if a.endswith("/")]
    if new_files:
        parts.append("criou " + ", ".join(new_files))
    if new_folders:
        parts.append(("criou a pasta " if len(new_folders) == 1 else "criou as pastas ") + ", ".join(new_folders))
    if removed:
        parts.append("apagou ou moveu " + ", ".join(removed))
    if changed:
        parts.append("alterou " + ", ".join(changed))
    return "; ".join(parts)


def world_snapshot(workspace: Any) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (workspace.outbox_path, workspace.tickets_path) if p.exists()}


def active_points(run_dir: Path) -> list[str]:
    folder = run_dir / CHECKPOINTS
    if not folder.is_dir():
        return []
    names = [p.name for p in folder.iterdir() if p.is_file() and _point(p.name)]
    return sorted(names, key=_point)


def point_file(fixture: Fixture, turn: int, point: str) -> dict:
    return copy.deepcopy(fixture.data["run_dir"][f"{CHECKPOINTS}/turn-{turn:03d}-{point}.json"])


def ask_a_missing_decision(ctx: Context, fixture: Fixture, function_name: str, label: str,
                           fork: bool = False) -> tuple[str, Any, Exception | None, str, dict[str, bytes]]:
    """``function_name(run_dir, tool)`` (``fork``: ``..., new_run_dir``) for the fixture's tool the model never
    asked for in the active sequence: the tool, what it returned, what it raised, what it changed in the
    run folder and what it left in new_run_dir."""
    function = ctx.student_function(function_name)
    tool = fixture.expect["undo_missing_tool"]
    with ctx.tools(fixture, label) as spy:
        run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
        new_dir = spy.workspace.root / FORK_FOLDER
        before = snapshot(run_dir)
        returned, error = ctx.call_catching(function, run_dir, tool, *([new_dir] if fork else []))
        return tool, returned, error, differences(before, snapshot(run_dir)), snapshot(new_dir)


def require_timeline_error(returned: Any, error: Exception | None, width: int,
                           returned_message: Callable[[str], str], raised_message: Callable[[str], str]) -> None:
    """Fail unless ``error`` is a TimelineError: ``returned_message`` gets the value returned instead
    (shown in ``width`` characters), ``raised_message`` the other error described."""
    from harness.timeline import TimelineError

    if error is None:
        raise CheckFailed(returned_message(show(returned, width)), expected="TimelineError",
                          observed=show(returned, width))
    if not isinstance(error, TimelineError):
        raise CheckFailed(raised_message(describe_error(error)), expected="TimelineError",
                          observed=type(error).__name__)


def require_folder_untouched(changed: str, advice: str) -> None:
    if changed:
        raise CheckFailed(f"O pedido impossível mexeu na pasta ({changed}): {advice}",
                          expected="pasta intacta", observed=changed)
