"""`python -m harness` when the disk or the API refuses: one Portuguese line, exit 2, and the run kept.

A read-only run folder is real (a read-only bind mount made by bubblewrap, as root cannot be
refused by chmod); a full disk is an ``OSError(ENOSPC)`` raised by ``os.replace`` in a forked
child; API errors are the fake endpoint answering 500, 529 or 400 at the email turn.
"""
from __future__ import annotations

import errno
import shlex
import shutil
import subprocess
import sys

import httpx2
import pytest

from harness.exit_codes import EXIT_BAD_INPUT
from harness.fake_endpoint import ScriptedEndpoint, _error
from harness.lifecycle import CHECKPOINT_FILE, load_run_checkpoint
from tests.durability_checks import REPO_ROOT, final_run_problems, harness_env, run_forked
from tests.stores_support import unique_run_name


def run_args(run_dir, *extra):
    return ["run", "--scenario", "team-email", "--workdir", str(run_dir), *extra]


def crashed_before_sending(run_dir):
    assert run_forked(run_args(run_dir), {"CRASH_AFTER": "after-save-A:2"}) == 137
    return run_dir


def stderr_lines(output):
    return [line for line in output.read_text().splitlines()
            if line.startswith(("parou:", "não deu:", "child crashed")) or "Traceback" in line]


def assert_kept_and_resumable(run_dir, output):
    """The scene on disk still loads, and the run resumes to exactly one email."""
    assert load_run_checkpoint(run_dir / CHECKPOINT_FILE)["status"] in ("paused", "running")
    assert run_forked(run_args(run_dir, "--resume"), output_path=output) == 0, output.read_text()
    assert final_run_problems(run_dir) == []


# --- a read-only run folder (a real read-only mount) ---------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
@pytest.mark.parametrize("command", [["run", "--resume"], ["rewind", "--to", "1"], ["pause"], ["approve"]])
def test_a_read_only_run_folder_is_one_line_and_exit_2(tmp_path, command):
    run_dir = crashed_before_sending(tmp_path / "run")
    before = {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}
    done = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(run_dir), str(run_dir),
                           sys.executable, "-m", "harness", *command, "--workdir", str(run_dir)],
                          cwd=REPO_ROOT, env=harness_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(run_dir) in lines[0] and "só para leitura: use uma pasta gravável" in lines[0], lines
    assert {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()} == before
    output = tmp_path / "output.txt"
    assert_kept_and_resumable(run_dir, output)


# --- a full disk in the middle of a run ------------------------------------------------------------

def disk_full_at_checkpoint(number):
    """For in_child: the ``number``-th os.replace onto checkpoint.json fails with ENOSPC."""
    import os

    replace, seen = os.replace, []

    def full(source, target, *args, **kwargs):
        if str(target).endswith(CHECKPOINT_FILE):
            seen.append(target)
            if len(seen) == number:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(source), None, str(target))
        return replace(source, target, *args, **kwargs)

    os.replace = full


@pytest.mark.parametrize("number", [1, 3, 4])
def test_a_full_disk_mid_run_is_one_line_and_exit_2_and_the_run_resumes(tmp_path, number):
    run_dir, output = tmp_path / "run", tmp_path / "output.txt"
    code = run_forked(run_args(run_dir), output_path=output, in_child=lambda: disk_full_at_checkpoint(number))
    assert code == EXIT_BAD_INPUT, output.read_text()
    [line] = stderr_lines(output)
    assert line.startswith(f"parou: não deu para gravar em {run_dir / CHECKPOINT_FILE}: No space left on device; "
                           "o disco está cheio: libere espaço"), line
    output.write_text("")
    if number == 1:  # the very first scene never reached the disk: there is no run to resume
        assert not (run_dir / CHECKPOINT_FILE).exists()
        return
    assert_kept_and_resumable(run_dir, output)


# --- the API answers an error ------------------------------------------------------------------------

def api_answers(status, kind, at_request):
    """For in_child: the fake endpoint answers ``status`` to its ``at_request``-th request."""
    handle, seen = ScriptedEndpoint.handle, []

    def answer(self, request: httpx2.Request):
        seen.append(request)
        if len(seen) == at_request:
            return _error(status, kind, f"resposta {status} roteirizada pelo teste")
        return handle(self, request)

    ScriptedEndpoint.handle = answer


@pytest.mark.parametrize("status, kind, advice", [
    (529, "overloaded_error", "é passageiro do lado da API: tente de novo em instantes"),
    (500, "api_error", "é passageiro do lado da API: tente de novo em instantes"),
    (400, "invalid_request_error", "a API recusou o pedido"),
])
def test_an_api_error_is_one_line_exit_2_and_a_pause_not_a_crash(tmp_path, status, kind, advice):
    run_dir, output = tmp_path / "run", tmp_path / "output.txt"
    code = run_forked(run_args(run_dir), output_path=output, in_child=lambda: api_answers(status, kind, 2))
    assert code == EXIT_BAD_INPUT, output.read_text()
    [line] = stderr_lines(output)
    assert line.startswith(f"parou: a API respondeu {status} ({kind}: resposta {status} roteirizada pelo teste); "
                           f"{advice}") and "continue com: python -m harness run --resume" in line, line
    state = load_run_checkpoint(run_dir / CHECKPOINT_FILE)
    assert state["status"] == "paused" and state["recovery_attempts"] == 0, state
    output.write_text("")
    assert_kept_and_resumable(run_dir, output)
    assert load_run_checkpoint(run_dir / CHECKPOINT_FILE)["recovery_attempts"] == 0


# --- the PostgreSQL hints work when pasted into a shell --------------------------------------------

def test_the_worker_hint_after_submit_is_shell_quoted(postgres_dsn, capsys):
    from harness import cli

    dsn = f"{postgres_dsn}&application_name=curso"  # '&' would send the command to the background
    assert cli.main(["submit", "--store", dsn, "--scenario", "team-email", "--run", unique_run_name("hint")]) == 0
    hint = capsys.readouterr().out.split("um worker a pega com: ", 1)[1].strip()
    assert shlex.split(hint) == ["python", "-m", "harness", "worker", "--store", dsn], hint
