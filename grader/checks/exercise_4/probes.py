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


# Files that are no ledger at all. The JSON values that Python reads as false (null, [], 0, false)
# are here because `json.loads(text) or {}` turns each into an empty ledger.
CORRUPT_LEDGERS = {
    "arquivo vazio": "",
    "JSON truncado": '{"toolu_01TE2": {"tool": "send_email", "status": "comm',
    "uma lista em vez de objeto": '[{"tool": "send_email"}]',
    "o JSON null": "null",
    "uma lista vazia []": "[]",
    "o número 0": "0",
    "o JSON false": "false",
}


_GOOD = {"tool": "read_file", "input_hash": "sha256:0", "status": "committed",
         "result": {"content": "# Conclusões", "is_error": False}, "recorded_at": "2026-11-20T14:03:11+00:00"}


def _beside_a_good_one(record: Any) -> str:
    """A ledger with one sound receipt and ``record``: one bad record makes the whole book untrustworthy."""
    return json.dumps({"toolu_01OK": _GOOD, "toolu_01TE2": record}, ensure_ascii=False)


# Ledgers whose JSON is an object but one record is not one the harness writes, with what trusting it costs.
MALFORMED_RECORDS = {
    "um registro que é só um texto": (
        _beside_a_good_one("committed"),
        "a retomada leria registro[\"status\"] de um texto e pararia com um erro do Python, não do livro-razão"),
    "um registro sem status": (
        _beside_a_good_one({"tool": "send_email", "result": None}),
        "sem status não se sabe se o e-mail saiu"),
    "um status desconhecido": (
        _beside_a_good_one({"tool": "send_email", "status": "feito",
                            "result": {"content": "ok", "is_error": False}}),
        "\"feito\" não é intent, committed, rejected nem unknown: a retomada o trataria como \"sem recibo\" e "
        "mandaria o e-mail de novo"),
    "um registro sem tool": (
        _beside_a_good_one({"status": "intent", "result": None}),
        "um registro que não diz qual ferramenta rodou não é um registro do harness"),
    "um recibo committed sem result": (
        _beside_a_good_one({"tool": "send_email", "status": "committed"}),
        "a retomada reaproveitaria registro[\"result\"] e entregaria ao modelo um resultado que não existe"),
    "um recibo rejected com result null": (
        _beside_a_good_one({"tool": "send_email", "status": "rejected", "result": None}),
        "um recibo sem resultado não tem o que devolver ao modelo"),
    "um recibo cujo result não tem is_error": (
        _beside_a_good_one({"tool": "send_email", "status": "committed", "result": {"content": "ok"}}),
        "o tool_result reaproveitado sairia sem is_error"),
    "um recibo com is_error em texto": (
        _beside_a_good_one({"tool": "send_email", "status": "committed",
                            "result": {"content": "ok", "is_error": "false"}}),
        "is_error \"false\" é um texto, e um texto não vazio conta como verdadeiro"),
}


def receipt(tool_use_id: str, content: str) -> dict:
    from harness.effects import make_receipt

    call = {"id": tool_use_id, "name": "send_email", "input": {"to": "team@example.com", "subject": content}}
    record = make_receipt(call, {"content": content, "is_error": False})
    record["recorded_at"] = "2026-11-20T14:03:11+00:00"
    return record


def intent(tool_use_id: str, content: str) -> dict:
    """The intent the harness writes before a high-impact call runs (record_intent, without saving it)."""
    from harness.approval import input_hash

    call = {"id": tool_use_id, "name": "send_email", "input": {"to": "team@example.com", "subject": content}}
    return {"tool": call["name"], "input_hash": input_hash(call["name"], call["input"]), "status": "intent",
            "result": None, "recorded_at": "2026-11-20T14:03:10+00:00"}


def receipt_with(tool_use_id: str, content: str, status: str) -> dict:
    """``receipt`` with another status (a refusal is a receipt too)."""
    record = receipt(tool_use_id, content)
    record["status"] = status
    record["result"] = {"content": content, "is_error": status != "committed"}
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
