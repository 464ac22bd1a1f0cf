"""Level 3's probe: the student's lease functions on a fresh run folder, and the errors they must raise."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader.checks.framework import CheckFailed, Context, describe_error, show


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
