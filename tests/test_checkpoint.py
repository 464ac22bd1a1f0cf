"""save_checkpoint never leaves a torn file; load_checkpoint is loud and specific."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from harness.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

GOOD = {"version": 1, "task": "t", "turns": 2, "tokens_used": 30,
        "messages": [{"role": "user", "content": "t"}], "pending_tool_use": None}


def test_round_trip_and_no_temp_file_left(tmp_path):
    path = tmp_path / "checkpoint.json"
    save_checkpoint(GOOD, path)
    assert load_checkpoint(path) == GOOD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.json"]


def test_absent_file_is_none(tmp_path):
    assert load_checkpoint(tmp_path / "checkpoint.json") is None


def test_fsync_and_replace_are_used(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append(("replace", os.path.dirname(a) == os.path.dirname(b))), real_replace(a, b))[1])
    save_checkpoint(GOOD, tmp_path / "checkpoint.json")
    assert calls == ["fsync", ("replace", True), "fsync"]  # file, rename in the same folder, folder


def test_failed_write_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.json"
    save_checkpoint(GOOD, path)
    bad_state = dict(GOOD, messages=[object()])  # not JSON-serializable: json.dump fails midway
    with pytest.raises(TypeError):
        save_checkpoint(bad_state, path)
    assert load_checkpoint(path) == GOOD


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "arquivo vazio"),
        ('{"version": 1, "task": "t", "tur', "JSON inválido ou truncado"),
        ("[1, 2]", "esperava um objeto JSON"),
        (json.dumps(dict(GOOD, version=2)), "o arquivo é v2, este código lê v1"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "messages"}), "campo obrigatório ausente: messages"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "version"}), "campo obrigatório ausente: version"),
        (json.dumps(dict(GOOD, turns="3")), "campo 'turns' com tipo errado: str"),
        (json.dumps(dict(GOOD, turns=True)), "campo 'turns' com tipo errado: bool"),
        (json.dumps(dict(GOOD, pending_tool_use={"id": "x"})), "campo 'pending_tool_use' com tipo errado: dict"),
    ],
    ids=["empty", "truncated", "not-object", "other-version", "missing-messages", "missing-version",
         "mistyped-turns", "bool-turns", "mistyped-pending"],
)
def test_load_errors_are_specific(tmp_path, text, fragment):
    path = tmp_path / "checkpoint.json"
    path.write_text(text)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    assert fragment in str(caught.value)
    assert str(path) in str(caught.value)


WRITER = textwrap.dedent(
    """
    import json, sys
    from harness.checkpoint import save_checkpoint
    path, mode = sys.argv[1], sys.argv[2]
    turn = 0
    while True:
        turn += 1
        state = {"version": 1, "task": "t", "turns": turn, "tokens_used": turn * 10,
                 "messages": [{"role": "user", "content": "x" * 2000}] * 200, "pending_tool_use": None}
        if mode == "atomic":
            save_checkpoint(state, path)
        else:
            with open(path, "w") as f:  # sobrescrever no lugar
                json.dump(state, f)
        if turn == 1:
            print("pronto", flush=True)  # one complete file exists before any kill
    """
)


def kill_writer_many_times(tmp_path, mode, kills, rng):
    """Start a writer, SIGKILL it at a random moment, try to load what it left; repeat."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    path = tmp_path / f"checkpoint-{mode}.json"
    outcomes = {"ok": 0, "torn": 0}
    for _ in range(kills):
        process = subprocess.Popen([sys.executable, str(script), str(path), mode], stdout=subprocess.PIPE)
        process.stdout.readline()
        time.sleep(rng.uniform(0.01, 0.08))
        process.send_signal(signal.SIGKILL)
        process.wait()
        try:
            state = load_checkpoint(path)
            outcomes["ok" if state is not None else "torn"] += 1
        except CheckpointError:
            outcomes["torn"] += 1
    return outcomes


@pytest.mark.slow
def test_sigkill_never_tears_an_atomic_checkpoint_but_tears_an_in_place_one(tmp_path):
    rng = random.Random(20261129)
    atomic = kill_writer_many_times(tmp_path, "atomic", 25, rng)
    in_place = kill_writer_many_times(tmp_path, "in-place", 25, rng)
    print(f"atomic: {atomic}  in place: {in_place}")
    assert atomic == {"ok": 25, "torn": 0}
    assert in_place["torn"] > 0


def test_empty_messages_are_refused(tmp_path):
    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps(dict(GOOD, messages=[])))
    with pytest.raises(CheckpointError, match="'messages' está vazio"):
        load_checkpoint(path)


@pytest.mark.parametrize("planted", ["link-to-outside", "link-to-nowhere", "regular-file"])
def test_a_planted_temporary_name_never_redirects_the_write(tmp_path, planted):
    """A name planted where a fixed-name writer would put its temporary is never opened."""
    run_dir, outside = tmp_path / "run", tmp_path / "precious.txt"
    run_dir.mkdir()
    outside.write_text("guardado")
    path = run_dir / "checkpoint.json"
    fixed = run_dir / "checkpoint.json.tmp"
    if planted == "link-to-outside":
        fixed.symlink_to(outside)
    elif planted == "link-to-nowhere":
        fixed.symlink_to(tmp_path / "created-outside.txt")
    else:
        fixed.write_text("de outra pessoa")
    save_checkpoint(GOOD, path)
    assert outside.read_text() == "guardado"
    assert not (tmp_path / "created-outside.txt").exists()
    assert not path.is_symlink() and load_checkpoint(path) == GOOD
    assert fixed.is_symlink() or fixed.read_text() == "de outra pessoa"  # left as it was, not followed
    assert sorted(p.name for p in run_dir.iterdir()) == ["checkpoint.json", "checkpoint.json.tmp"]


def test_a_failed_write_leaves_no_temporary_behind(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.json"
    save_checkpoint(GOOD, path)
    with pytest.raises(TypeError):
        save_checkpoint(dict(GOOD, messages=[object()]), path)
    monkeypatch.setattr(os, "replace", lambda *args, **kwargs: (_ for _ in ()).throw(OSError(28, "disco cheio")))
    with pytest.raises(OSError):
        save_checkpoint(GOOD, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.json"]


def test_two_writers_in_one_folder_never_share_a_temporary(tmp_path, monkeypatch):
    opened = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (opened.append(os.fspath(a)), real_replace(a, b))[1])
    save_checkpoint(GOOD, tmp_path / "checkpoint.json")
    save_checkpoint(GOOD, tmp_path / "checkpoint.json")
    assert len(set(opened)) == 2 and all(os.path.dirname(name) == str(tmp_path) for name in opened)
