"""Any content of lease.json that does not say who holds the run fails closed: every command
answers with a Portuguese message naming the file (and the field, when there is one) and exits
with the bad-input code 2, without a traceback and without changing the run folder."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness import cli
from harness.exit_codes import EXIT_BAD_INPUT
from harness.fake_endpoint import make_stub_client
from harness.lifecycle import LEASE_FILE, LeaseFileError, acquire_lease, check_fence, read_lease
from harness.runner import ask_a_person, run_durable
from harness.scenarios import load_scenario
from tests.warm_python import run_python

TEAM_EMAIL = load_scenario("team-email")
GOOD = {"owner": "maquina:123", "host": "maquina", "pid": 123, "token": 3, "expires_at": 1.0,
        "acquired_at": 0.5, "released": True}

# content of lease.json -> words the message must contain (besides the file name). A NaN or infinite
# expiry is not here: it is an expired lease, not an unreadable one (tests/test_cli_bad_input.py).
MALFORMED = {
    "empty": ("", "vazio"),
    "garbage": ("garbage{{", "JSON inválido"),
    "list": ("[1, 2]", "encontrei list"),
    "no-expires_at": (json.dumps({k: v for k, v in GOOD.items() if k != "expires_at"}), "campo 'expires_at' ausente"),
    "expires_at-later": (json.dumps({**GOOD, "expires_at": "later"}), "campo 'expires_at' com valor 'later'"),
    "no-token": (json.dumps({k: v for k, v in GOOD.items() if k != "token"}), "campo 'token' ausente"),
    "token-text": (json.dumps({**GOOD, "token": "3"}), "campo 'token' com valor '3'"),
    "token-bool": (json.dumps({**GOOD, "token": True}), "campo 'token' com valor True"),
    "token-negative": (json.dumps({**GOOD, "token": -1}), "campo 'token' negativo"),
    "released-text": (json.dumps({**GOOD, "released": "no"}), "campo 'released'"),
    "owner-missing": (json.dumps({k: v for k, v in GOOD.items() if k != "owner"}), "campo 'owner' ausente"),
    "not-utf8": (b"\xff\xfe{", "não é texto UTF-8 válido"),
    "nested-lists": ("[" * 200_000 + "]" * 200_000, "aninhamento fundo demais"),
    "nested-objects": ('{"a":' * 200_000 + "1" + "}" * 200_000, "aninhamento fundo demais"),
    "token-5000-digits": ('{"token": ' + "9" * 5000 + "}", "inteiro de 5000 dígitos (linha 1, coluna 11, campo 'token')"),
    "pid-huge": (json.dumps({**GOOD, "pid": 10 ** 30, "expires_at": 4e9, "released": False}),
                 "campo 'pid' fora do intervalo"),
    "pid-minus-one": (json.dumps({**GOOD, "pid": -1, "expires_at": 4e9, "released": False}),
                      "campo 'pid' fora do intervalo"),
    "pid-zero": (json.dumps({**GOOD, "pid": 0}), "campo 'pid' fora do intervalo"),
}

COMMANDS = {
    "run": ["run", "--scenario", "team-email", "--workdir", "{dir}"],
    "run --resume": ["run", "--scenario", "team-email", "--workdir", "{dir}", "--resume"],
    "status": ["status", "--workdir", "{dir}"],
    "pause": ["pause", "--workdir", "{dir}"],
    "cancel": ["cancel", "--workdir", "{dir}"],
    "approve": ["approve", "--workdir", "{dir}"],
    "reject": ["reject", "--workdir", "{dir}", "--reason", "não"],
    "rewind": ["rewind", "--workdir", "{dir}", "--to", "1"],  # takes the lease too
}


def folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(folder)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def waiting_run(tmp_path_factory):
    """A run waiting for approval (so approve and reject have something to decide)."""
    run_dir = tmp_path_factory.mktemp("waiting") / "run"
    state = run_durable(make_stub_client(TEAM_EMAIL.responses), run_dir, TEAM_EMAIL, approver=ask_a_person)
    assert state["status"] == "waiting_for_approval"
    return run_dir


def with_lease(template: Path, target: Path, content) -> Path:
    import shutil

    shutil.copytree(template, target)
    lease = target / LEASE_FILE
    lease.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return target


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", MALFORMED)
def test_every_command_refuses_a_malformed_lease_with_exit_2(case, command, waiting_run, tmp_path, capsys):
    content, words = MALFORMED[case]
    run_dir = with_lease(waiting_run, tmp_path / "run", content)
    before = folder_digest(run_dir)
    argv = [part.format(dir=run_dir) for part in COMMANDS[command]]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT, err
    assert str(run_dir / LEASE_FILE) in err and words in err, err
    assert "ninguém grava" in err
    assert folder_digest(run_dir) == before  # nothing written, nothing lost


@pytest.mark.slow
@pytest.mark.parametrize("case", ["garbage", "no-expires_at"])
def test_no_traceback_from_any_command_in_a_real_process(case, waiting_run, tmp_path):
    content, words = MALFORMED[case]
    for command, argv in COMMANDS.items():
        run_dir = with_lease(waiting_run, tmp_path / command.replace(" ", "_"), content)
        result = run_python(["-m", "harness", *[a.format(dir=run_dir) for a in argv]], timeout=120, cwd=tmp_path)
        assert result.returncode == EXIT_BAD_INPUT, (command, result.stderr)
        assert "Traceback" not in result.stderr and words in result.stderr, (command, result.stderr)


def test_a_good_lease_file_still_reads(tmp_path):
    (tmp_path / LEASE_FILE).write_text(json.dumps(GOOD))
    assert read_lease(tmp_path) == GOOD
    assert acquire_lease(tmp_path, owner="b").token == GOOD["token"] + 1  # released: free to take


def test_a_lease_corrupted_while_a_worker_runs_stops_its_writes(tmp_path):
    lease = acquire_lease(tmp_path, owner="a")
    (tmp_path / LEASE_FILE).write_text('{"owner": "a"}')
    with pytest.raises(LeaseFileError, match="campo 'host' ausente"):
        check_fence(tmp_path, lease.token)


def test_a_lease_folder_instead_of_a_file_is_bad_input(tmp_path):
    (tmp_path / LEASE_FILE).mkdir()
    with pytest.raises(LeaseFileError, match="não dá para ler"):
        read_lease(tmp_path)


def test_a_dangling_lease_symlink_is_bad_input_not_a_fresh_start(waiting_run, tmp_path, capsys):
    run_dir = with_lease(waiting_run, tmp_path / "run", "")
    lease = run_dir / LEASE_FILE
    lease.unlink()
    lease.symlink_to(tmp_path / "nada.json")
    code = cli.main(["run", "--scenario", "team-email", "--workdir", str(run_dir), "--resume"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "link simbólico" in err, err
