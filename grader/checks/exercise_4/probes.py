"""Running the student's ledger functions under observation: worlds, ledgers, receipts, a rename that dies."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from grader.checks.framework import Fixture


def read_ledger(path: Path) -> dict | None:
    """The ledger as JSON, or None when it is absent or unreadable (the checks say which)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def status_in(path: Path, tool_use_id: str) -> str | None:
    record = (read_ledger(path) or {}).get(tool_use_id)
    return record.get("status") if isinstance(record, dict) else None


def world(name: str, **spec: Any) -> Fixture:
    """A fixture-like world for the levels that build their own scenes."""
    return Fixture(name=name, data={"workspace": spec})


class Raised:
    """What a student's function raised, kept as a value so a check can inspect it."""

    def __init__(self, error: BaseException):
        self.error = error


def capturing(function, *expected: type) -> Any:
    """Wraps ``function`` so that the exceptions a check expects come back as ``Raised``."""

    def attempt(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except expected as error:
            return Raised(error)

    attempt.__name__ = getattr(function, "__name__", "função")
    return attempt


def ledger_error_class() -> type:
    from harness.effects import EffectsLedgerError

    return EffectsLedgerError


CORRUPT_LEDGERS = {
    "arquivo vazio": "",
    "JSON truncado": '{"toolu_01TE2": {"tool": "send_email", "status": "comm',
    "uma lista em vez de objeto": '[{"tool": "send_email"}]',
    "status desconhecido": json.dumps({"toolu_01TE2": {"tool": "send_email", "status": "feito",
                                                        "result": {"content": "ok", "is_error": False}}}),
}


def receipt(tool_use_id: str, content: str) -> dict:
    from harness.effects import make_receipt

    call = {"id": tool_use_id, "name": "send_email", "input": {"to": "team@example.com", "subject": content}}
    record = make_receipt(call, {"content": content, "is_error": False})
    record["recorded_at"] = "2026-11-20T14:03:11+00:00"
    return record


@contextmanager
def recorded_replace(fail: bool) -> Iterator[list]:
    """os.replace (and os.rename) observed; with ``fail`` the rename dies like a killed process."""
    real_replace, real_rename = os.replace, os.rename
    moves: list = []

    def replace(src, dst, *args, **kwargs):
        moves.append((os.fspath(src), os.fspath(dst)))
        if fail:
            raise OSError("processo morto no meio da gravação (simulado pelo corretor)")
        return real_replace(src, dst, *args, **kwargs)

    os.replace, os.rename = replace, replace
    try:
        yield moves
    finally:
        os.replace, os.rename = real_replace, real_rename
