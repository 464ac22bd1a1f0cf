"""The write spy sees every way code opens a file for writing, including the harness's own
atomic write, which opens its temporary with os.open and wraps the descriptor with os.fdopen.
A check that simulates a crash "at the moment checkpoint.json is written" depends on it: if the
spy missed the descriptor, the right answer that calls save_checkpoint would be told that
nothing was observed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.checks.framework.context import Context, Session
from grader.checks.write_spies import named_by_descriptor_number, observed_writes
from harness.checkpoint import save_checkpoint


class Died(BaseException):
    pass


def context(tmp_path: Path) -> Context:
    return Context(Session(namespace={}, workdir=tmp_path, check_timeout=10.0))


def test_the_hook_sees_the_descriptor_of_the_harness_atomic_save(tmp_path):
    seen: list = []

    def hook(file, mode):
        seen.append(file)

    with observed_writes(context(tmp_path), before_open=hook) as budget:
        save_checkpoint({"version": 1, "turns": 0, "messages": []}, tmp_path / "checkpoint.json")
    descriptors = [file for file in seen if isinstance(file, int)]
    assert descriptors, f"the hook never saw the save's descriptor: {seen}"
    assert budget["opened"] and budget["opened"][0].name.startswith("checkpoint.json.")


def test_a_crash_at_the_descriptor_leaves_the_old_checkpoint_and_no_open_descriptor(tmp_path):
    path = tmp_path / "checkpoint.json"
    save_checkpoint({"version": 1, "turns": 1, "messages": []}, path)
    old = path.read_bytes()
    dying_on: list[int] = []

    def die(file, mode):
        if isinstance(file, int) and named_by_descriptor_number(file).name.startswith("checkpoint.json"):
            dying_on.append(file)
            raise Died()

    with pytest.raises(Died), observed_writes(context(tmp_path), before_open=die):
        save_checkpoint({"version": 1, "turns": 2, "messages": []}, path)
    assert path.read_bytes() == old
    with pytest.raises(OSError):  # the "dead process" closed the temporary's descriptor
        os.fstat(dying_on[0])


def test_a_named_open_still_reaches_the_hook_by_name(tmp_path):
    seen: list = []
    with observed_writes(context(tmp_path), before_open=lambda file, mode: seen.append((file, mode))):
        with open(tmp_path / "notas.txt", "w", encoding="utf-8") as file:
            file.write("x")
    assert seen == [(tmp_path / "notas.txt", "w")]
