"""Defect: checkpoint.json is overwritten in place, with no temporary file and no rename."""
from __future__ import annotations

import json

from harness.crash import crash_point
from harness.lifecycle import now_iso

NAME = "checkpoint-written-in-place"
COMPLETES = False  # a crash in the middle of the write leaves a run that cannot finish
DESCRIPTION = (
    "O checkpoint.json é sobrescrito no lugar (open com \"w\" e escrita direta), sem arquivo temporário "
    "nem os.replace."
)
SYMPTOM = (
    "Derrube a execução no meio de uma gravação do checkpoint (mid-checkpoint-write) e retome: a "
    "retomada precisa concluir a execução."
)


def save_in_place(state, path, crash_points=True):
    state["updated_at"] = now_iso()
    text = json.dumps(state, ensure_ascii=False, indent=1)
    with open(path, "w", encoding="utf-8") as file:
        file.write(text[: len(text) // 2])
        file.flush()
        if crash_points:
            crash_point("mid-checkpoint-write")  # half of the new scene on disk, the old one gone
        file.write(text[len(text) // 2:])


def patches() -> dict:
    return {"harness.stores.files:save_run_checkpoint": save_in_place}
