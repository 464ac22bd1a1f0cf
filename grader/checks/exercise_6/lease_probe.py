"""Level 3's probe: the student's lease functions on a fresh run folder, and the errors they must raise."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader.checks.framework import CheckFailed, Context, describe_error, show
from grader.core.atomic_write import write_atomic


LEASE_FILE = "lease.json"


CHECKPOINT_FILE = "checkpoint.json"


def fresh_run_dir(ctx: Context, label: str) -> Path:
    return ctx._session.fresh_dir(label)


def read_lease_file(run_dir: Path) -> dict | None:
    path = run_dir / LEASE_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CheckFailed(f"lease.json não é JSON válido: {error.msg}", expected="um objeto JSON",
                          observed=path.read_text(encoding="utf-8")[:200]) from None


def acquire(ctx: Context, run_dir: Path, owner: str, now: float, seconds: float = 30.0) -> dict:
    acquire_lease = ctx.student_function("acquire_lease")
    value, error = ctx.call_catching(acquire_lease, run_dir, owner, now, seconds)
    if isinstance(error, FileNotFoundError) and not run_dir.is_dir():
        raise CheckFailed(
            f"acquire_lease levantou {describe_error(error)} numa execução cuja pasta ainda não existia: a "
            "primeira posse é quem abre a pasta. Crie run_dir (mkdir(parents=True, exist_ok=True)) antes de "
            "gravar lease.json.",
            expected="a posse, com run_dir criada", observed=f"{describe_error(error)}",
        )
    if error is not None:
        raise CheckFailed(
            f"acquire_lease(..., owner={owner!r}, now={now:g}) levantou {describe_error(error)}, mas a "
            "posse estava livre (nunca teve dono, ou a anterior já tinha vencido).",
            expected="a posse", observed=f"{describe_error(error)}",
        )
    if not isinstance(value, dict) or not {"owner", "token", "expires_at"} <= set(value):
        raise CheckFailed(
            f"acquire_lease deveria devolver um dict com owner, token e expires_at; devolveu {show(value, 120)}.",
            expected="{owner, token, expires_at}", observed=show(value, 120),
        )
    return value


def lease_held_error():
    from harness.lifecycle import LeaseHeld

    return LeaseHeld


def lease_file_error():
    from harness.lifecycle import LeaseFileError

    return LeaseFileError


# lease.json files that say nobody knows who holds the run. The JSON values Python reads as false
# (null, [], 0, false) are here because `json.loads(text) or None` would make each "never had an owner".
CORRUPT_LEASES = {
    "um arquivo vazio": "",
    "um JSON truncado": '{"owner": "worker-a", "token": 4, "expi',
    "o JSON null": "null",
    "uma lista vazia []": "[]",
    "o número 0": "0",
    "o JSON false": "false",
    "uma posse sem token": '{"owner": "worker-a", "expires_at": 30.0}',
    "um token em texto": '{"owner": "worker-a", "token": "4", "expires_at": 30.0}',
}


def lease_lost_error():
    from harness.lifecycle import LeaseLost

    return LeaseLost


def expect_lost(ctx: Context, function: Any, label: str, *args: Any, why: str) -> None:
    value, error = ctx.call_catching(function, *args, label=label)
    if error is None:
        raise CheckFailed(why, expected="LeaseLost", observed=f"nenhum erro ({show(value, 60)})")
    if not isinstance(error, lease_lost_error()):
        raise CheckFailed(f"O esperado é LeaseLost (de harness.lifecycle); veio {describe_error(error)}.",
                          expected="LeaseLost", observed=type(error).__name__)


# Another worker's process: it replaces lease.json whole (temporary + os.replace), as write_json_atomic does.
_OTHER_WORKER = (
    "import os, sys\n"
    "path, text = sys.argv[1], sys.argv[2]\n"
    "with open(path + '.outro-worker.tmp', 'w', encoding='utf-8') as file:\n"
    "    file.write(text)\n"
    "os.replace(path + '.outro-worker.tmp', path)\n"
)


def lease_taken_elsewhere(run_dir: Path, lease: dict) -> None:
    """``lease`` written to lease.json by another process, behind the student's functions: whatever
    they keep in memory cannot know about it; only the file says who holds the run now."""
    import os
    import subprocess
    import sys

    path, text = run_dir / LEASE_FILE, json.dumps(lease)
    try:
        subprocess.run([sys.executable, "-I", "-S", "-c", _OTHER_WORKER, os.fspath(path), text],
                       check=True, timeout=20, stdin=subprocess.DEVNULL, capture_output=True)
    except (OSError, subprocess.SubprocessError):  # no second process allowed here: the same write, from this one
        write_atomic(path, text)
    if read_lease_file(run_dir) != lease:
        raise RuntimeError("a posse do outro worker não ficou gravada em lease.json")
