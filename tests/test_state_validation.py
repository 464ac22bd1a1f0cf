"""Every state file of a run is untrusted input: a bad byte, an endless nesting, a number of
thousands of digits, NaN or a wrong type is ONE Portuguese line naming the file (and the field
where there is one), exit 2, and nothing lost: put the file back and the run resumes to one email.

The run is the team-email scenario killed at point A of turn 2 (the email not sent yet), so
the resume after the repair still has the email to send.
"""
from __future__ import annotations

import json

import pytest

from harness.exit_codes import EXIT_BAD_INPUT
from harness.state_json import MAX_DEPTH, StateFileError, parse_state_json, read_state_json
from tests.durability_checks import final_run_problems, run_forked

DEEP = b"[" * 100_000
HUGE_INT = b'{"turns": ' + b"9" * 5000 + b"}"


def run_args(run_dir, *extra):
    return ["run", "--scenario", "team-email", "--workdir", str(run_dir), *extra]


@pytest.fixture
def crashed_run(tmp_path):
    run_dir = tmp_path / "run"
    assert run_forked(run_args(run_dir), {"CRASH_AFTER": "after-save-A:2"}) == 137
    return run_dir


def waiting_run(tmp_path):
    """A run with the approval valve, waiting for a person before the email (approvals.json holds
    the pending request)."""
    run_dir = tmp_path / "run"
    assert run_forked(run_args(run_dir, "--approval")) == 11
    assert (run_dir / "approvals.json").exists()
    return run_dir


def prepared_run(tmp_path, name):
    if name == "approvals.json":
        return waiting_run(tmp_path)
    run_dir = tmp_path / "run"
    assert run_forked(run_args(run_dir), {"CRASH_AFTER": "after-save-A:2"}) == 137
    return run_dir


def command_output(args, tmp_path, name="output.txt"):
    output = tmp_path / name
    output.write_text("")
    code = run_forked(args, output_path=output)
    return code, output.read_text()


def assert_one_line_exit_2(code, text, *words):
    """stdout and stderr share the output file: the progress line of ``run`` is not an error line."""
    lines = [line for line in text.strip().splitlines() if not line.startswith(("retomando ", "iniciando "))]
    assert code == EXIT_BAD_INPUT, text
    assert len(lines) == 1 and "Traceback" not in text and "child crashed" not in text, text
    for word in words:
        assert word in lines[0], (word, lines[0])


def resumes_to_one_email(run_dir, tmp_path):
    if (run_dir / "approvals.json").exists():
        code, text = command_output(["approve", "--workdir", str(run_dir)], tmp_path, "approve.txt")
        assert code == 0, text
    code, text = command_output(run_args(run_dir, "--resume"), tmp_path, "resume.txt")
    assert code == 0, text
    assert final_run_problems(run_dir) == []


# --- the reading helper itself -----------------------------------------------------------------

@pytest.mark.parametrize("data, words", [
    (b'{"a": "\xff"}', "UTF-8"),
    (DEEP, "aninhamento"),
    (b'{"a": ' + b"[" * (MAX_DEPTH + 5) + b"]" * (MAX_DEPTH + 5) + b"}", "aninhamento fundo demais em 'a[0][0]"),
    (HUGE_INT, "campo 'turns'"),
    (b'{"expires_at": NaN}', "NaN"),
    (b'{"expires_at": -Infinity}', "-Infinity"),
    (b"", "vazio"),
    (b'{"a": ', "linha 1"),
])
def test_parse_state_json_refuses_with_a_domain_error_naming_the_place(data, words):
    with pytest.raises(StateFileError) as caught:
        parse_state_json(data, "x/effects.json")
    assert str(caught.value).startswith("x/effects.json: ") and words in str(caught.value), str(caught.value)


def test_read_state_json_keeps_missing_apart_from_unreadable(tmp_path):
    assert read_state_json(tmp_path / "nao-existe.json") is None
    (tmp_path / "pasta.json").mkdir()
    with pytest.raises(StateFileError, match="não dá para ler"):
        read_state_json(tmp_path / "pasta.json")
    (tmp_path / "bom.json").write_text(json.dumps({"a": [1, 2.5, "ç"]}), encoding="utf-8")
    assert read_state_json(tmp_path / "bom.json") == {"a": [1, 2.5, "ç"]}


# --- every state file, on the command line ----------------------------------------------------

BAD_CONTENTS = {"byte-0xff": b'{"action": "pause", "reason": "\xff"}', "deep": DEEP, "huge-int": HUGE_INT}
# file in the run folder -> the command that reads it (the resume reads them all, but a turn file is
# read by rewind, and a lease by every command)
STATE_FILES = {
    "checkpoint.json": ["run", "--resume"],
    "control.json": ["run", "--resume"],
    "effects.json": ["run", "--resume"],
    "approvals.json": ["approve"],
    "timeline.json": ["run", "--resume"],
    "world/outbox.jsonl": ["run", "--resume"],
    "lease.json": ["run", "--resume"],
    "checkpoints/turn-001-B.json": ["rewind", "--to", "1"],
}


@pytest.mark.slow
@pytest.mark.parametrize("content", BAD_CONTENTS)
@pytest.mark.parametrize("name", STATE_FILES)
def test_a_bad_state_file_is_one_line_exit_2_and_the_run_survives(tmp_path, name, content):
    crashed_run = prepared_run(tmp_path, name)
    path = crashed_run / name
    saved = path.read_bytes() if path.exists() else None
    data = BAD_CONTENTS[content]
    if name.endswith(".jsonl") and content == "byte-0xff":
        data = b'{"to": "\xff"}\n'
    path.write_bytes(data)
    code, text = command_output([*STATE_FILES[name], "--workdir", str(crashed_run)], tmp_path)
    assert_one_line_exit_2(code, text, path.name)
    if content == "huge-int" and name != "world/outbox.jsonl":
        assert "'turns'" in text, text
    if saved is None:
        path.unlink()
    else:
        path.write_bytes(saved)
    resumes_to_one_email(crashed_run, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name, content, words", [
    ("effects.json", {"toolu_x": {"status": "committed", "tool": "send_email", "result": {"content": 1}}},
     "toolu_x"),
    ("approvals.json", {"toolu_x": {"verdict": "approved", "input_hash": "h", "expires_at": "amanhã"}},
     "expires_at"),
    ("approvals.json", {"toolu_x": {"verdict": "approved", "input_hash": "h", "expires_at": 1e400}},
     "expires_at"),
    ("timeline.json", {"timeline_id": "tl-1", "dry_run": "sim"}, "dry_run"),
    ("control.json", {"action": "pause", "reason": 7}, "reason"),
    ("control.json", {"action": "explodir"}, "action"),
    ("world/outbox.jsonl", ["não é um objeto"], "linha 1"),
])
def test_a_state_file_of_the_wrong_shape_names_the_field(tmp_path, name, content, words):
    crashed_run = prepared_run(tmp_path, name)
    path = crashed_run / name
    saved = path.read_bytes() if path.exists() else None
    text = json.dumps(content)
    path.write_text(text.replace("Infinity", "1e400") + "\n", encoding="utf-8")
    code, output = command_output(["run", "--resume", "--workdir", str(crashed_run)], tmp_path)
    assert_one_line_exit_2(code, output, path.name, words)
    if saved is None:
        path.unlink()
    else:
        path.write_bytes(saved)
    resumes_to_one_email(crashed_run, tmp_path)


# --- control.json never cancels a run -----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("content", [b"", b"{", b"[]", b'{"action": "cancel"'])
def test_an_empty_or_unreadable_control_file_never_cancels_the_run(crashed_run, tmp_path, content):
    control = crashed_run / "control.json"
    control.write_bytes(content)
    code, text = command_output(["run", "--resume", "--workdir", str(crashed_run)], tmp_path)
    assert_one_line_exit_2(code, text, "control.json")
    assert "cancel" not in json.loads((crashed_run / "checkpoint.json").read_text())["status"]
    control.unlink()
    resumes_to_one_email(crashed_run, tmp_path)


def test_a_control_file_spoiled_while_the_run_goes_on_stops_it_without_cancelling(tmp_path):
    """The worker reads control.json at every turn boundary: spoiled there, the run stops with
    one line and stays resumable (not cancelled, not failed)."""
    run_dir = tmp_path / "run"
    assert run_forked(run_args(run_dir), {"CRASH_AFTER": "after-save-A:1"}) == 137
    (run_dir / "control.json").write_bytes(b"\xff")
    code, text = command_output(["run", "--resume", "--workdir", str(run_dir)], tmp_path)
    assert_one_line_exit_2(code, text, "control.json")
    status = json.loads((run_dir / "checkpoint.json").read_text())["status"]
    assert status in ("running", "paused"), status
    (run_dir / "control.json").unlink()
    resumes_to_one_email(run_dir, tmp_path)
