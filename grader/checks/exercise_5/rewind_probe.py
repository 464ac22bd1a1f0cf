"""Level 2's probe: the student's ``undo_decision`` run once per fixture, with what it left on disk."""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from grader.checks.exercise_5.fixtures import RUN_FOLDER, _point, active_point_name, write_run_dir
from grader.checks.exercise_5.probes import active_points, differences, point_file, snapshot, world_snapshot
from grader.checks.framework import CheckFailed, Context, Fixture, show


@dataclass
class Rewound:
    turn: int
    point: str
    source: dict          # the chosen point as the fixture recorded it
    returned: Any
    before: dict[str, bytes]
    after: dict[str, bytes]
    checkpoint_json: Any
    active_after: list[str]
    calls: list = field(default_factory=list)
    world_changed: str = ""
    tool: str = ""


def rewound(ctx: Context, fixture: Fixture) -> Rewound:
    def run() -> Rewound:
        undo_decision = ctx.student_function("undo_decision")
        spec = fixture.expect["undo"]
        with ctx.tools(fixture, "rewind") as spy:
            run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
            before, world_before = snapshot(run_dir), world_snapshot(spy.workspace)
            returned = ctx.call(undo_decision, run_dir, spec["tool"])
            after = snapshot(run_dir)
            world_changed = differences(world_before, world_snapshot(spy.workspace))
            calls = list(spy.calls)
        try:
            checkpoint_json = json.loads(after.get("checkpoint.json", b"null"))
        except ValueError:
            checkpoint_json = "<ilegível>"
        source = point_file(fixture, spec["turn"], spec["point"])
        return Rewound(spec["turn"], spec["point"], source, copy.deepcopy(returned), before, after,
                       checkpoint_json, active_points(run_dir), calls, world_changed, spec["tool"])

    return ctx.memo(f"rewind:{fixture.name}", run)


def returned_scene(run: Rewound) -> dict:
    value = run.returned
    if value is None:
        raise CheckFailed("undo_decision devolveu None: devolva a cena (o dict do estado) a que a linha voltou.",
                          expected="a cena do turno", observed=None)
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        raise CheckFailed("undo_decision deveria devolver a cena (um dict com messages, turns...).",
                          expected="a cena do turno", observed=show(value, 160))
    return value


def has_rewind(fixture: Fixture) -> bool:
    return "undo" in fixture.expect


def has_later_points(fixture: Fixture) -> bool:
    """A rewind fixture whose active sequence has points after the point it rewinds to."""
    if not has_rewind(fixture):
        return False
    target = (fixture.expect["undo"]["turn"], fixture.expect["undo"]["point"])
    return any(_point(name) > target for name in map(active_point_name, fixture.data["run_dir"]) if name)


TORN_AFTER_CHARACTERS = 200


def readable_json(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return True
