"""Looking at folders before and after the student's code: snapshots, their differences, the active save points."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from grader.checks.exercise_5.fixtures import CHECKPOINTS, _point
from grader.checks.framework import Fixture


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

