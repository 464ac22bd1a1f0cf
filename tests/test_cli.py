"""`python -m harness run` runs a shipped scenario offline and resumes it."""
from __future__ import annotations

import json
import subprocess
import sys


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "harness", "run", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_run_then_resume_a_finished_run(tmp_path):
    workdir = tmp_path / "execucao"
    first = run_cli("--scenario", "team-email", "--workdir", str(workdir), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "send_email" in first.stdout
    checkpoint = json.loads((workdir / "checkpoint.json").read_text())
    assert checkpoint["turns"] == 3 and checkpoint["pending_tool_use"] is None
    outbox = (workdir / "world" / "outbox.jsonl").read_text().splitlines()
    assert len(outbox) == 1
    again = run_cli("--scenario", "team-email", "--workdir", str(workdir), "--resume", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert len((workdir / "world" / "outbox.jsonl").read_text().splitlines()) == 1


def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    result = run_cli("--scenario", "team-email", "--workdir", str(tmp_path / "vazio"), "--resume", cwd=tmp_path)
    assert result.returncode != 0
    assert "checkpoint" in result.stderr


def test_unknown_scenario_is_refused(tmp_path):
    result = run_cli("--scenario", "nao-existe", cwd=tmp_path)
    assert result.returncode == 2 and "nao-existe" in result.stderr
