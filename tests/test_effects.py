"""The effects ledger: load/save, intent records, receipts, idempotency keys, three-way reconcile."""
from __future__ import annotations

import json
import os

import pytest

import harness.effects as effects
from harness.effects import (
    EffectsLedgerError,
    execute_and_record,
    load_effects,
    make_receipt,
    reconcile,
    record_intent,
    save_effect,
)
from harness.fake_endpoint import validate_messages
from harness.tools import Workspace, execute_tool, find_effect, use_workspace
from tests.tool_calls import EMAIL, READ, TICKET, notes_world


@pytest.fixture
def world(tmp_path):
    return notes_world(tmp_path, "conclusões da semana\n")


@pytest.fixture
def ledger(tmp_path):
    return tmp_path / "effects.json"


class ExecuteSpy:
    """Stands in for execute_tool and records every call (optionally delegating)."""

    def __init__(self, delegate=True, raises=None):
        self.calls = []
        self.delegate = delegate
        self.raises = raises

    def __call__(self, name, input, idempotency_key=None):
        self.calls.append((name, idempotency_key))
        if self.raises:
            raise self.raises
        if self.delegate:
            return execute_tool(name, input, idempotency_key=idempotency_key)
        return {"content": "spy", "is_error": False}


@pytest.fixture
def spy(monkeypatch):
    spy = ExecuteSpy()
    monkeypatch.setattr(effects, "execute_tool", spy)
    return spy


def pending_checkpoint(*calls):
    content = [{"type": "text", "text": "vou agir"}] + [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["input"]} for c in calls
    ]
    return {
        "version": 1, "task": "tarefa", "turns": 3, "tokens_used": 900,
        "messages": [{"role": "user", "content": "tarefa"}, {"role": "assistant", "content": content}],
        "pending_tool_use": [dict(c) for c in calls],
    }


# --- load_effects / save_effect ------------------------------------------------------

def test_missing_ledger_is_empty(ledger):
    assert not ledger.exists()
    assert load_effects(ledger) == {}


@pytest.mark.parametrize("text, reason", [
    ('{"toolu_mail1": {"tool": "send_em', "truncado"),
    ("", "arquivo vazio"),
    ("[1, 2]", "esperava um objeto JSON"),
    ('{"toolu_mail1": {"tool": "send_email", "status": "done", "result": null}}', "status inválido"),
    ('{"toolu_mail1": {"tool": "send_email", "status": "committed"}}', "resultado válido"),
    ('{"toolu_mail1": "feito"}', "não é um objeto"),
])
def test_corrupt_ledger_fails_closed_with_a_reason(ledger, text, reason):
    ledger.write_text(text, encoding="utf-8")
    with pytest.raises(EffectsLedgerError) as error:
        load_effects(ledger)
    message = str(error.value)
    assert reason in message
    assert str(ledger) in message and "não repetir efeitos" in message


def test_corrupt_ledger_stops_reconcile_before_any_execution(world, ledger, spy):
    ledger.write_text('{"toolu_mail1": {"tool": "send_email", "status": "comm', encoding="utf-8")
    cp = pending_checkpoint(EMAIL)
    with pytest.raises(EffectsLedgerError):
        reconcile(cp, ledger)
    assert spy.calls == []
    assert world.emails() == []
    assert cp["pending_tool_use"]  # nothing was closed on a guess


def test_save_effect_adds_records_and_round_trips(ledger):
    save_effect(ledger, "toolu_a", make_receipt(EMAIL, {"content": "ok", "is_error": False}))
    save_effect(ledger, "toolu_b", make_receipt(TICKET, {"content": "ok", "is_error": False}))
    loaded = load_effects(ledger)
    assert set(loaded) == {"toolu_a", "toolu_b"}
    assert loaded["toolu_a"]["status"] == "committed" and loaded["toolu_a"]["tool"] == "send_email"
    assert json.loads(ledger.read_text(encoding="utf-8")) == loaded


def test_save_effect_is_atomic_when_the_write_dies(ledger, monkeypatch):
    save_effect(ledger, "toolu_a", make_receipt(EMAIL, {"content": "ok", "is_error": False}))
    before = ledger.read_bytes()

    def dying_replace(src, dst):
        raise OSError("processo morto no meio da gravação")

    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(OSError):
        save_effect(ledger, "toolu_b", make_receipt(TICKET, {"content": "ok", "is_error": False}))
    assert ledger.read_bytes() == before
    assert set(load_effects(ledger)) == {"toolu_a"}


def test_a_failing_tool_records_no_receipt(world, ledger, monkeypatch):
    spy = ExecuteSpy(raises=OSError("disco cheio"))
    monkeypatch.setattr(effects, "execute_tool", spy)
    with pytest.raises(OSError):
        execute_and_record(EMAIL, ledger)
    record = load_effects(ledger)[EMAIL["id"]]
    # Only the intent is there: "started, outcome unknown". Nothing claims it was done.
    assert record["status"] == "intent" and record["result"] is None


def test_read_only_tools_leave_the_ledger_untouched(world, ledger, spy):
    reconcile(pending_checkpoint(READ), ledger)
    assert not ledger.exists()


# --- intent record and receipts ------------------------------------------------------

def test_intent_is_written_before_the_tool_runs(world, ledger, monkeypatch):
    seen = []

    def looking_execute(name, input, idempotency_key=None):
        seen.append(load_effects(ledger).get(EMAIL["id"], {}).get("status"))
        return execute_tool(name, input, idempotency_key=idempotency_key)

    monkeypatch.setattr(effects, "execute_tool", looking_execute)
    execute_and_record(EMAIL, ledger)
    assert seen == ["intent"]
    assert load_effects(ledger)[EMAIL["id"]]["status"] == "committed"


def test_receipt_committed_when_the_effect_happened(world, ledger):
    output = execute_and_record(EMAIL, ledger)
    record = load_effects(ledger)[EMAIL["id"]]
    assert record["status"] == "committed" and record["result"] == output and not output["is_error"]
    assert record["tool"] == "send_email" and len(record["input_hash"]) == 64


def test_receipt_rejected_when_the_external_system_refuses(world, ledger):
    bad = {"id": "toolu_bad", "name": "send_email", "input": {"subject": "sem destinatário"}}
    output = execute_and_record(bad, ledger)
    assert output["is_error"]
    assert load_effects(ledger)["toolu_bad"]["status"] == "rejected"
    assert world.emails() == []


def test_receipt_unknown_when_the_external_system_cannot_answer(world, ledger, spy, monkeypatch):
    record_intent(ledger, EMAIL)

    def broken_lookup(name, key):
        raise OSError("sistema externo fora do ar")

    monkeypatch.setattr(effects, "find_effect", broken_lookup)
    cp = reconcile(pending_checkpoint(EMAIL), ledger)
    result = cp["messages"][-1]["content"][0]
    assert result["is_error"] and "Desfecho desconhecido" in result["content"]
    assert load_effects(ledger)[EMAIL["id"]]["status"] == "unknown"
    assert spy.calls == [] and world.emails() == []


def test_never_started_differs_from_started_outcome_unknown(world, ledger, spy, tmp_path):
    # Never started: no intent record at all -> safe to run it, once.
    cp = reconcile(pending_checkpoint(EMAIL), ledger)
    assert spy.calls == [("send_email", EMAIL["id"])]
    assert len(world.emails()) == 1 and not cp["messages"][-1]["content"][0]["is_error"]

    # Started, outcome unknown, effect DID happen: intent on disk, email already in the outbox.
    other = use_workspace(Workspace(tmp_path / "other-world"))
    other_ledger = tmp_path / "other-effects.json"
    record_intent(other_ledger, EMAIL)
    execute_tool(EMAIL["name"], EMAIL["input"], idempotency_key=EMAIL["id"])  # then the crash
    spy.calls.clear()
    cp = reconcile(pending_checkpoint(EMAIL), other_ledger)
    assert spy.calls == []  # asked the external system instead of executing
    assert len(other.emails()) == 1
    assert load_effects(other_ledger)[EMAIL["id"]]["status"] == "committed"
    assert "confirmado no sistema externo" in cp["messages"][-1]["content"][0]["content"]


def test_started_but_absent_in_the_external_system_runs_with_the_same_key(world, ledger, spy):
    record_intent(ledger, EMAIL)  # crash right after the intent, before the tool ran
    reconcile(pending_checkpoint(EMAIL), ledger)
    assert spy.calls == [("send_email", EMAIL["id"])]
    assert [e["idempotency_key"] for e in world.emails()] == [EMAIL["id"]]


# --- idempotency key -----------------------------------------------------------------

def test_idempotency_key_reaches_outbox_and_a_repeat_makes_no_second_email(world, ledger):
    execute_and_record(EMAIL, ledger)
    assert world.emails()[0]["idempotency_key"] == EMAIL["id"]
    execute_tool(EMAIL["name"], EMAIL["input"], idempotency_key=EMAIL["id"])
    assert len(world.emails()) == 1
    assert find_effect("send_email", EMAIL["id"]) is not None


def test_idempotency_key_reaches_ticket_store_and_a_repeat_makes_no_second_ticket(world, ledger):
    execute_and_record(TICKET, ledger)
    execute_tool(TICKET["name"], TICKET["input"], idempotency_key=TICKET["id"])
    assert [t["idempotency_key"] for t in world.tickets()] == [TICKET["id"]]


# --- three-way reconcile -------------------------------------------------------------

def test_ledger_hit_reuses_the_recorded_result_without_executing(world, ledger, spy):
    recorded = {"content": "e-mail enviado para team@example.com: Conclusões", "is_error": False}
    save_effect(ledger, EMAIL["id"], make_receipt(EMAIL, recorded))
    cp = reconcile(pending_checkpoint(EMAIL), ledger)
    assert spy.calls == []
    assert cp["messages"][-1]["content"] == [{"type": "tool_result", "tool_use_id": EMAIL["id"], **recorded}]
    assert world.emails() == []


def test_ledger_hit_on_a_rejected_receipt_is_reused_too(world, ledger, spy):
    refused = {"content": "ação recusada pela aprovação: fora do horário", "is_error": True}
    save_effect(ledger, EMAIL["id"], make_receipt(EMAIL, refused, "rejected"))
    cp = reconcile(pending_checkpoint(EMAIL), ledger)
    assert spy.calls == [] and cp["messages"][-1]["content"][0]["is_error"]


def test_read_only_miss_is_rerun(world, ledger, spy):
    cp = reconcile(pending_checkpoint(READ), ledger)
    assert spy.calls == [("read_file", None)]
    assert cp["messages"][-1]["content"][0]["content"] == "conclusões da semana\n"


def test_reconcile_closes_every_pending_call_in_one_message(world, ledger, spy):
    save_effect(ledger, TICKET["id"], make_receipt(TICKET, {"content": "chamado #1 criado", "is_error": False}))
    cp = reconcile(pending_checkpoint(READ, TICKET, EMAIL), ledger)
    closing = cp["messages"][-1]
    assert closing["role"] == "user"
    assert [b["tool_use_id"] for b in closing["content"]] == [READ["id"], TICKET["id"], EMAIL["id"]]
    assert all(b["type"] == "tool_result" for b in closing["content"])
    assert spy.calls == [("read_file", None), ("send_email", EMAIL["id"])]
    assert cp["pending_tool_use"] is None and cp["turns"] == 3 and cp["tokens_used"] == 900
    assert len(cp["messages"]) == 3  # the assistant message is kept
    assert validate_messages(cp["messages"]) is None


def test_reconcile_with_nothing_pending_changes_nothing(world, ledger):
    cp = pending_checkpoint()
    cp["pending_tool_use"] = None
    before = json.dumps(cp)
    reconcile(cp, ledger)
    assert json.dumps(cp) == before


# --- the lesson's pictures of the ledger -----------------------------------------------

def test_effects_table_lists_each_record_with_its_status(world, ledger):
    from harness.display.effects_view import effects_rows, show_effects

    execute_and_record(EMAIL, ledger)
    record_intent(ledger, TICKET)
    rows = effects_rows(load_effects(ledger))
    assert [(r["tool_use_id"], r["status"]) for r in rows] == [(EMAIL["id"], "committed"), (TICKET["id"], "intent")]
    rendered = show_effects(load_effects(ledger))
    assert "committed" in rendered._repr_html_() and "2 registro(s)" in repr(rendered)
    assert "vazio" in repr(show_effects({}))


def test_effect_window_shows_that_without_intent_both_crashes_look_alike():
    from harness.display.effects_view import effect_window_rows, show_effect_window

    plain = effect_window_rows(with_intent=False)
    assert plain[0]["ledger"] == plain[1]["ledger"] == "vazio"
    assert plain[0]["world"] != plain[1]["world"]
    assert [label for label, fate in plain[1]["steps"] if fate == "feito"] == ["ponto A", "enviar e-mail"]
    with_intent = effect_window_rows(with_intent=True)
    assert all(row["ledger"] == "intent" for row in with_intent)
    assert "gravar intenção" in repr(show_effect_window(True))
    assert "<svg" in show_effect_window(False)._repr_html_()
