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


def test_endpoint_latency_slows_each_model_call_and_a_bad_value_is_bad_input(tmp_path, monkeypatch):
    import time

    from harness.runner import ENDPOINT_LATENCY_ENV, EndpointSettingError, endpoint_latency, make_run_client

    monkeypatch.setenv(ENDPOINT_LATENCY_ENV, "0.2")
    client = make_run_client([{"content": [{"type": "text", "text": "pronto"}], "stop_reason": "end_turn"}])
    started = time.monotonic()
    client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "oi"}])
    assert time.monotonic() - started >= 0.2
    for bad in ("depois", "-1", "inf", "nan"):
        monkeypatch.setenv(ENDPOINT_LATENCY_ENV, bad)
        try:
            endpoint_latency()
        except EndpointSettingError as error:
            assert ENDPOINT_LATENCY_ENV in str(error)
        else:
            raise AssertionError(f"{bad!r} was accepted as a latency")
    monkeypatch.delenv(ENDPOINT_LATENCY_ENV)
    assert endpoint_latency() == 0.0
    result = subprocess.run([sys.executable, "-m", "harness", "run", "--scenario", "team-email",
                             "--workdir", str(tmp_path / "x")], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env={**__import__("os").environ, ENDPOINT_LATENCY_ENV: "depois"})
    assert result.returncode == 2 and ENDPOINT_LATENCY_ENV in result.stderr and "Traceback" not in result.stderr
