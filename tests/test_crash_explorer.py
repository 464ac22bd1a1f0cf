"""The lesson-6 crash lab and crash explorer: plain functions tested directly, the widget
built headless and driven by its buttons."""
from __future__ import annotations

import builtins
import json
import os
import signal
import time

import pytest

from harness.crash import CRASH_LABELS
from harness.display.crash_lab import (
    MatrixRow,
    Step,
    agreement_problems,
    crash_matrix,
    crash_run,
    exit_meaning,
    kill_now,
    orphan_requests,
    passes_per_label,
    requests_log,
    resume_run,
    run_outcome,
    start_frozen,
    wait_or_kill,
)
from harness.display.show import Rendered
from harness.display.widgets import (
    CrashCase,
    crash_explorer,
    matrix_table,
    outcome_html,
    outcome_summary,
    show_crash_matrix,
    steps_html,
)
from harness.effects import EFFECTS_FILE, load_effects
from harness.lifecycle import CHECKPOINT_FILE, load_run_checkpoint, read_lease
from tests.test_runner import TEAM_EMAIL_PASSES


# --- exit codes ------------------------------------------------------------------------------

def test_exit_codes_are_explained_and_the_shell_status_of_a_kill_is_137():
    assert exit_meaning(137) == "derrubada (128 + 9)"
    assert "SIGKILL" in exit_meaning(-signal.SIGKILL)
    assert exit_meaning(12) == "cancelada" and exit_meaning(4) == "outro worker tem a posse"
    assert exit_meaning(99) == "código 99 inesperado"
    assert Step("rodar", "after-save-A:1", "sigkill", -9).shell_status == 137
    assert Step("rodar", "after-save-A:1", "simulada", 137).shell_status == 137
    assert Step("retomar", None, "simulada", 0).shell_status == 0


def forked_child(seconds: float, code: int) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            time.sleep(seconds)
        finally:
            os._exit(code)
    return pid


def test_wait_or_kill_gives_the_exit_code_or_kills_and_reaps_a_child_past_its_time():
    assert wait_or_kill(forked_child(0.0, 3), 30.0) == (3, False)
    overstaying = forked_child(60.0, 0)
    started = time.monotonic()
    assert wait_or_kill(overstaying, 0.3) == (-signal.SIGKILL, True)
    assert time.monotonic() - started < 10
    with pytest.raises(ChildProcessError):  # reaped: no zombie left behind
        os.waitpid(overstaying, os.WNOHANG)


def test_passes_per_label_are_the_windows_of_a_clean_run(tmp_path):
    assert passes_per_label(work_dir=tmp_path) == TEAM_EMAIL_PASSES


# --- a simulated crash, a resume, and what is left on disk -----------------------------------

def test_a_simulated_crash_between_send_and_receipt_then_resume(tmp_path):
    run_dir = tmp_path / "caso"
    step = crash_run(run_dir, "after-tool-run", 1)
    assert step.exit_code == 137 and "queda simulada em after-tool-run" in step.output
    crashed = run_outcome(run_dir)
    assert crashed.status == "running" and crashed.pending == ["send_email (toolu_01TE2)"]
    assert crashed.emails == 1 and crashed.ledger == {"toolu_01TE2": "intent"}
    assert crashed.agrees and crashed.requests == 2 and crashed.orphans == []
    assert read_lease(run_dir)["released"] is True  # an exception still runs `finally`

    resumed = resume_run(run_dir)
    assert resumed.exit_code == 0 and "status=completed" in resumed.output
    done = run_outcome(run_dir)
    assert (done.status, done.turns, done.tokens_used, done.emails) == ("completed", 3, 2016, 1)
    assert done.ledger == {"toolu_01TE2": "committed"} and done.agrees and done.orphans == []
    assert done.requests == 3


def test_the_crash_environment_is_restored_after_a_step(tmp_path, monkeypatch):
    monkeypatch.setenv("CRASH_MODE", "kill")  # a left-over setting must never kill this process
    step = crash_run(tmp_path / "caso", "after-save-A", 2)
    assert step.exit_code == 137
    import os

    assert os.environ["CRASH_MODE"] == "kill" and "CRASH_AFTER" not in os.environ


def test_an_unknown_mode_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="modo de queda desconhecido"):
        crash_run(tmp_path / "caso", "after-save-A", 1, mode="desligar")
    assert not (tmp_path / "caso").exists()


def test_a_resume_with_another_model_script_stays_safe(tmp_path):
    run_dir = tmp_path / "caso"
    crash_run(run_dir, "after-effect-write", 1)
    assert resume_run(run_dir, "team-email-variant").exit_code == 0
    done = run_outcome(run_dir)
    assert (done.status, done.emails, done.tickets) == ("completed", 1, 1) and done.agrees


# --- the agreement check and the orphan check find real problems ---------------------------------

def finished(tmp_path):
    run_dir = tmp_path / "caso"
    crash_run(run_dir, "after-save-B", 2)
    resume_run(run_dir)
    state = load_run_checkpoint(run_dir / CHECKPOINT_FILE)
    effects = load_effects(run_dir / EFFECTS_FILE)
    return run_dir, state, effects


def test_agreement_problems_is_empty_for_a_good_run_and_names_each_disagreement(tmp_path):
    run_dir, state, effects = finished(tmp_path)
    emails = [{"idempotency_key": "toolu_01TE2"}]
    assert agreement_problems(state, effects, emails) == []

    changed = json.loads(json.dumps(effects))
    changed["toolu_01TE2"]["result"]["content"] = "outro texto"
    assert agreement_problems(state, changed, emails) == [
        "toolu_01TE2: o resultado no livro-razão difere do tool_result no checkpoint"]
    assert agreement_problems(state, {}, emails) == [
        "toolu_01TE2: send_email deu certo, mas não há recibo no livro-razão",
        "e-mail com a chave toolu_01TE2 sem recibo committed no livro-razão"]
    stray = dict(effects, toolu_99={"status": "committed", "tool": "send_email",
                                    "result": {"content": "x", "is_error": False}})
    assert agreement_problems(state, stray, emails) == [
        "toolu_99: registro no livro-razão de uma chamada que o checkpoint não conhece"]
    intent = json.loads(json.dumps(effects))
    intent["toolu_01TE2"]["status"] = "intent"
    assert "o modelo recebeu a resposta, mas o livro-razão diz intent" in agreement_problems(state, intent, emails)[0]
    older = {"messages": state["messages"][:-1]}
    assert agreement_problems(state, effects, emails, older) == [
        "o ponto mais recente da sequência e o checkpoint.json não têm as mesmas mensagens"]


def test_a_corrupt_ledger_is_reported_as_unreadable_not_as_empty(tmp_path):
    run_dir, _, _ = finished(tmp_path)
    (run_dir / EFFECTS_FILE).write_text('{"toolu_01TE2": {"sta')
    outcome = run_outcome(run_dir)
    assert not outcome.agrees and outcome.unreadable[0].startswith("livro-razão:")
    assert "ilegível" in outcome_html(outcome)


def test_orphan_requests_names_each_request_the_api_would_refuse(tmp_path):
    log = tmp_path / "pedidos.jsonl"
    good = [{"role": "user", "content": "oi"}]
    orphan = good + [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_x", "name": "read_file", "input": {"path": "a"}}]},
        {"role": "user", "content": "e aí?"}]
    log.write_text("\n".join(json.dumps({"pid": 1, "body": {"messages": m}}) for m in (good, orphan)) + "\n")
    [problem] = orphan_requests(log)
    assert problem.startswith("pedido 2:") and "toolu_x" in problem
    assert orphan_requests(tmp_path / "nao-existe.jsonl") == []


def test_requests_log_sits_beside_the_run_folder(tmp_path):
    assert requests_log(tmp_path / "caso") == tmp_path / "caso.pedidos.jsonl"


# --- real processes ------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_frozen_process_killed_from_outside_leaves_an_intent_and_one_email(tmp_path):
    run_dir = tmp_path / "caso"
    process = start_frozen(run_dir, "after-tool-run", 1)
    assert run_outcome(run_dir).ledger == {"toolu_01TE2": "intent"}
    assert kill_now(process) == -signal.SIGKILL
    lease = read_lease(run_dir)
    assert lease["released"] is False and lease["pid"] == process.pid  # SIGKILL runs no `finally`
    assert resume_run(run_dir).exit_code == 0
    done = run_outcome(run_dir)
    assert done.emails == 1 and done.ledger == {"toolu_01TE2": "committed"} and done.agrees
    assert read_lease(run_dir)["token"] == lease["token"] + 1


@pytest.mark.slow
def test_the_crash_matrix_runs_both_modes_in_separate_processes(tmp_path):
    rows = crash_matrix(tmp_path, [("after-tool-run", 1), ("mid-checkpoint-write", 3)])
    assert [(r.label, r.n, r.mode) for r in rows] == [
        ("after-tool-run", 1, "simulada"), ("after-tool-run", 1, "sigkill"),
        ("mid-checkpoint-write", 3, "simulada"), ("mid-checkpoint-write", 3, "sigkill")]
    assert [r.crash_code for r in rows] == [137, -9, 137, -9]
    assert all(r.resume_code == 0 and r.ok for r in rows), [r.outcome for r in rows]


# --- rendering and the widget -------------------------------------------------------------------

def bad_row():
    outcome = {"status": "completed", "emails": 2, "disagreements": ["e-mail sem recibo"], "unreadable": [],
               "orphans": [], "turns": 3, "tokens_used": 1, "pending": [], "tickets": 0, "ledger": {},
               "requests": 3}
    return MatrixRow("after-tool-run", 1, "sigkill", -9, 0, outcome)


def test_the_matrix_table_marks_a_row_with_two_emails(tmp_path):
    assert bad_row().ok is False
    header, lines = matrix_table([bad_row()])
    assert header[0] == "queda em" and lines == [[
        "after-tool-run:1", "sigkill", "-9", "0", "completed", "2", "e-mail sem recibo", "0", "não"]]
    rendered = show_crash_matrix([bad_row()])
    assert '<td class="curso-erro">não</td>' in rendered.html_text
    assert "after-tool-run:1 | sigkill" in repr(rendered)


def test_crash_case_drives_a_run_and_reports_it(tmp_path):
    case = CrashCase(tmp_path)
    assert "Rodar até a queda" in case.report_html()
    with pytest.raises(ValueError, match="nada para retomar"):
        case.resume()
    case.crash("after-effect-write", 1)
    report = case.report_html()
    assert "caso-01" in report and "after-effect-write:1" in report and "1 e-mail(s)" in report
    assert "committed" in report and "<circle" in report
    case.resume()
    labels = [label for label, _, _ in outcome_summary(case.outcome())]
    assert "livro-razão e checkpoint concordam" in labels
    assert "concluída" in steps_html(case.steps) and case.outcome().status == "completed"
    case.crash("after-save-A", 1)
    assert case.run_dir.name == "caso-02" and len(case.steps) == 1


def test_the_explorer_builds_headless_and_its_buttons_run_and_resume(tmp_path):
    explorer = crash_explorer(tmp_path)
    (label, n), mode = explorer.children[0].children, explorer.children[1]
    crash_button, script, resume_button = explorer.children[2].children
    view = explorer.children[3]
    assert list(label.options) == list(CRASH_LABELS) and resume_button.disabled
    label.value, n.value, mode.value = "after-save-A", 2, "simulada"
    crash_button.click()
    assert not resume_button.disabled and "after-save-A:2" in view.value
    script.value = "team-email-variant"
    resume_button.click()
    outcome = explorer.case.outcome()
    assert (outcome.status, outcome.emails, outcome.tickets) == ("completed", 1, 1)
    assert "retomar" in view.value


def test_the_explorer_shows_an_error_instead_of_vanishing(tmp_path, monkeypatch):
    explorer = crash_explorer(tmp_path)
    crash_button = explorer.children[2].children[0]
    monkeypatch.setattr(explorer.case, "crash", lambda *a: (_ for _ in ()).throw(RuntimeError("disco cheio")))
    crash_button.click()
    assert "RuntimeError: disco cheio" in explorer.children[3].value


def test_without_ipywidgets_the_explorer_explains_what_to_use(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_ipywidgets(name, *args, **kwargs):
        if name == "ipywidgets":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ipywidgets)
    rendered = crash_explorer(tmp_path)
    assert isinstance(rendered, Rendered) and "CrashCase" in repr(rendered)
