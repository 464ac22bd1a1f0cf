"""The integrated durable runner (harness/runner.py), in process: clean start, the full
in-process crash matrix, approvals, pause/cancel, the recovery limit, v1 checkpoints and forks."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli
from harness.approval import APPROVALS_FILE, input_hash
from harness.checkpoint import save_checkpoint
from harness.checkpointed_loop import run_agent as run_lesson2_loop
from harness.crash import CRASH_LABELS, SimulatedCrash, crash_counts, reset_crash_counts
from harness.effects import EFFECTS_FILE, load_effects
from harness.fake_endpoint import make_stub_client, validate_messages
from harness.lifecycle import (
    CHECKPOINT_FILE,
    MAX_RECOVERY_ATTEMPTS,
    RunNotResumable,
    load_run_checkpoint,
    read_lease,
    request_control,
)
from harness.loop import new_run_state
from harness.resume import UNKNOWN_OUTCOME
from harness.runner import (
    WORLD_DIR,
    NoCheckpoint,
    ask_a_person,
    decide_pending_approval,
    run_durable,
)
from harness.scenarios import load_scenario
from harness.timeline import fork_from, list_points, parse_point_name, rewind_to
from harness.tools import Workspace, workspace_in_use
from tests.durability_checks import emails, final_run_problems, ledger_problems, orphan_problems, world

TEAM_EMAIL = load_scenario("team-email")

# How many times a clean team-email run passes each crash label: read -> send -> end_turn.
TEAM_EMAIL_PASSES = {
    "after-model-response": 3,   # one per turn
    "after-save-A": 3,
    "after-tool-run": 1,         # only the high-impact call (send_email)
    "after-effect-write": 1,
    "after-save-B": 2,           # turns 1 and 2 (turn 3 ends the run at point A)
    "mid-checkpoint-write": 5,   # A1, B1, A2, B2, A3
}
MATRIX = [(label, n) for label in CRASH_LABELS for n in range(1, TEAM_EMAIL_PASSES[label] + 1)]


class Session:
    """One 'process' worth of runner: its own client (and so its own request log)."""

    def __init__(self, run_dir, scenario=TEAM_EMAIL, responses=None):
        self.run_dir = Path(run_dir)
        self.scenario = scenario
        self.client = make_stub_client(responses or scenario.responses)

    @property
    def requests(self):
        return self.client.stub_endpoint.requests

    def run(self, resume=False, **options):
        return run_durable(self.client, self.run_dir, self.scenario, resume=resume, **options)


def run_fresh(run_dir, **options):
    return Session(run_dir).run(**options)


def resume(run_dir, scenario=TEAM_EMAIL, **options):
    session = Session(run_dir, scenario)
    return session.run(resume=True, **options), session.requests


def crash_fresh_run(run_dir, monkeypatch, spec, **options):
    monkeypatch.setenv("CRASH_AFTER", spec)
    reset_crash_counts()
    with pytest.raises(SimulatedCrash):
        run_fresh(run_dir, **options)
    monkeypatch.delenv("CRASH_AFTER")
    reset_crash_counts()


def checkpoint(run_dir):
    return load_run_checkpoint(Path(run_dir) / CHECKPOINT_FILE)


# --- a run without crashes ------------------------------------------------------------------------

def test_a_clean_run_completes_with_sequence_ledger_and_one_email(tmp_path):
    state = run_fresh(tmp_path)
    assert state["status"] == "completed" and state["turns"] == 3
    assert final_run_problems(tmp_path) == []
    names = [point.name for point in list_points(tmp_path)]
    assert names == ["turn-001-A.json", "turn-001-B.json", "turn-002-A.json", "turn-002-B.json", "turn-003-A.json"]
    assert load_effects(tmp_path / EFFECTS_FILE)["toolu_01TE2"]["status"] == "committed"
    assert emails(tmp_path)[0]["idempotency_key"] == "toolu_01TE2"
    assert read_lease(tmp_path)["released"] is True


def test_the_clean_run_passes_every_crash_label_as_expected(tmp_path):
    run_fresh(tmp_path)
    assert crash_counts() == TEAM_EMAIL_PASSES


def test_a_clean_start_wipes_the_old_run_but_the_token_keeps_growing(tmp_path):
    run_fresh(tmp_path)
    first = checkpoint(tmp_path)["run_id"]
    (tmp_path / "checkpoints" / "turn-009-A.json").write_text("{}")
    state = run_fresh(tmp_path)
    assert state["run_id"] != first
    assert "turn-009-A.json" not in [point.name for point in list_points(tmp_path)]
    assert len(emails(tmp_path)) == 1  # the world was recreated, then one email sent
    assert read_lease(tmp_path)["token"] == 2


def test_resume_of_a_completed_run_does_nothing(tmp_path):
    run_fresh(tmp_path)
    before = (tmp_path / CHECKPOINT_FILE).read_bytes()
    state, requests = resume(tmp_path)
    assert state["status"] == "completed" and requests == []
    assert (tmp_path / CHECKPOINT_FILE).read_bytes() == before


def test_resume_without_a_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(NoCheckpoint, match="rode sem --resume"):
        resume(tmp_path / "vazio")
    assert not (tmp_path / "vazio").exists()


def test_the_turn_cap_pauses_and_a_higher_cap_continues(tmp_path):
    state = run_fresh(tmp_path, max_turns=1)
    assert state["status"] == "paused" and "teto de 1 turnos" in state["status_reason"]
    assert checkpoint(tmp_path)["status"] == "paused"
    state, _ = resume(tmp_path, max_turns=1)
    assert state["status"] == "paused" and state["turns"] == 1 and emails(tmp_path) == []
    state, _ = resume(tmp_path)
    assert state["status"] == "completed" and state["recovery_attempts"] == 0
    assert final_run_problems(tmp_path) == []


# --- the whole crash matrix, in process (SimulatedCrash) --------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("label, n", MATRIX, ids=[f"{label}:{n}" for label, n in MATRIX])
def test_crash_anywhere_then_resume_is_safe(tmp_path, monkeypatch, label, n):
    crash_fresh_run(tmp_path, monkeypatch, f"{label}:{n}")
    crashed = checkpoint(tmp_path)
    # a death leaves "running" behind, except after the last save, which already said "completed"
    assert crashed["status"] == ("completed" if (label, n) == ("after-save-A", 3) else "running")
    state, requests = resume(tmp_path)
    assert state["status"] == "completed" and state["recovery_attempts"] == 0
    assert final_run_problems(tmp_path) == []
    assert all(validate_messages(request["messages"]) is None for request in requests)
    assert not list(tmp_path.glob(CHECKPOINT_FILE + "*.tmp")) or label == "mid-checkpoint-write"


def test_crash_between_send_and_receipt_asks_the_outbox_instead_of_sending_again(tmp_path, monkeypatch):
    crash_fresh_run(tmp_path, monkeypatch, "after-tool-run:1")
    assert load_effects(tmp_path / EFFECTS_FILE)["toolu_01TE2"]["status"] == "intent"
    assert len(emails(tmp_path)) == 1
    state, _ = resume(tmp_path)
    answer = state["messages"][4]["content"][0]
    assert answer["tool_use_id"] == "toolu_01TE2" and answer["is_error"] is False
    assert "confirmado no sistema externo" in answer["content"]
    assert len(emails(tmp_path)) == 1


# --- recovery attempts ------------------------------------------------------------------------------

def test_a_run_that_crashes_on_every_resume_ends_failed(tmp_path, monkeypatch):
    crash_fresh_run(tmp_path, monkeypatch, "after-model-response:2")
    monkeypatch.setenv("CRASH_AFTER", "after-model-response:1")  # poison: every resume dies at once
    for attempt in range(1, MAX_RECOVERY_ATTEMPTS + 1):
        reset_crash_counts()
        with pytest.raises(SimulatedCrash):
            resume(tmp_path)
        assert checkpoint(tmp_path)["recovery_attempts"] == attempt
    reset_crash_counts()
    state, requests = resume(tmp_path)
    assert state["status"] == "failed" and requests == []
    assert f"limite: {MAX_RECOVERY_ATTEMPTS}" in state["status_reason"]
    monkeypatch.delenv("CRASH_AFTER")
    with pytest.raises(RunNotResumable, match="failed"):
        resume(tmp_path)
    assert emails(tmp_path) == []


def test_crashes_that_still_make_progress_do_not_fail_the_run(tmp_path, monkeypatch):
    crash_fresh_run(tmp_path, monkeypatch, "after-save-B:1")
    monkeypatch.setenv("CRASH_AFTER", "after-save-B:1")  # every resume finishes one turn, then dies
    for _ in range(5):
        reset_crash_counts()
        try:
            state, _ = resume(tmp_path)
            break
        except SimulatedCrash:
            assert checkpoint(tmp_path)["recovery_attempts"] <= 1
    assert state["status"] == "completed"
    monkeypatch.delenv("CRASH_AFTER")
    assert final_run_problems(tmp_path) == []


# --- approvals --------------------------------------------------------------------------------------

def test_waiting_for_approval_survives_a_restart_and_an_approval_lets_it_finish(tmp_path):
    state = run_fresh(tmp_path, approver=ask_a_person)
    assert state["status"] == "waiting_for_approval" and emails(tmp_path) == []
    pending = checkpoint(tmp_path)["pending_approval"]
    call = state["pending_tool_use"][0]
    assert pending["id"] == call["id"] == "toolu_01TE2"
    assert pending["input_hash"] == input_hash("send_email", call["input"])

    state, requests = resume(tmp_path)  # no approver given: the run remembers it needs one
    assert state["status"] == "waiting_for_approval" and requests == [] and emails(tmp_path) == []

    decide_pending_approval(tmp_path, approved=True, decided_by="ana")
    state, _ = resume(tmp_path)
    assert state["status"] == "completed" and state["pending_approval"] is None
    assert final_run_problems(tmp_path) == []


def test_an_approval_for_another_input_or_an_expired_one_asks_again(tmp_path):
    run_fresh(tmp_path, approver=ask_a_person)
    decide_pending_approval(tmp_path, approved=True)
    approvals_path = tmp_path / APPROVALS_FILE
    approvals = json.loads(approvals_path.read_text())
    approvals["toolu_01TE2"]["input_hash"] = input_hash("send_email", {"to": "todos@example.com"})
    approvals_path.write_text(json.dumps(approvals))
    state, _ = resume(tmp_path)
    assert state["status"] == "waiting_for_approval" and emails(tmp_path) == []

    decide_pending_approval(tmp_path, approved=True, ttl_seconds=-1)  # already expired
    state, _ = resume(tmp_path)
    assert state["status"] == "waiting_for_approval" and emails(tmp_path) == []


def test_a_rejection_reaches_the_model_as_an_error_with_the_reason(tmp_path):
    run_fresh(tmp_path, approver=ask_a_person)
    decide_pending_approval(tmp_path, approved=False, reason="o time já recebeu um resumo hoje")
    state, _ = resume(tmp_path)
    answer = state["messages"][4]["content"][0]
    assert answer["is_error"] is True and "o time já recebeu um resumo hoje" in answer["content"]
    assert state["status"] == "completed" and emails(tmp_path) == []
    assert load_effects(tmp_path / EFFECTS_FILE)["toolu_01TE2"]["status"] == "rejected"
    assert ledger_problems(tmp_path) == []


def test_approving_when_nothing_waits_is_refused(tmp_path, capsys):
    run_fresh(tmp_path, max_turns=1)  # paused, nothing pending
    assert cli.main(["approve", "--workdir", str(tmp_path)]) == 2
    assert "nada esperando aprovação" in capsys.readouterr().err


# --- pause and cancel --------------------------------------------------------------------------------

def test_a_cancel_request_stops_the_run_at_the_next_turn_boundary(tmp_path):
    # The operator cancels while the first model call is in flight (a worker holds the lease).
    state = _run_with_handler(tmp_path, handle_factory=lambda ep: _cancel_on_first_request(ep, tmp_path))
    assert state["status"] == "cancelled" and state["status_reason"] == "o gerente mudou de ideia"
    assert state["turns"] == 1 and state["pending_tool_use"] is None  # turn 1 closed first
    assert emails(tmp_path) == [] and not (tmp_path / "control.json").exists()
    with pytest.raises(RunNotResumable, match="cancelled"):
        resume(tmp_path)


def _cancel_on_first_request(endpoint, run_dir):
    real_handle = endpoint.handle

    def handle(request):
        if not endpoint.requests:
            request_control(run_dir, "cancel", "o gerente mudou de ideia")
        return real_handle(request)
    return handle


def _run_with_handler(run_dir, handle_factory):
    from harness.fake_endpoint import ScriptedEndpoint

    endpoint = ScriptedEndpoint(TEAM_EMAIL.responses)
    endpoint.handle = handle_factory(endpoint)
    return run_durable(endpoint.client(), run_dir, TEAM_EMAIL)


def test_cancel_while_waiting_for_approval_means_it_never_runs_again(tmp_path, capsys):
    run_fresh(tmp_path, approver=ask_a_person)
    assert cli.main(["cancel", "--workdir", str(tmp_path), "--reason", "não mande"]) == 0
    assert "cancelada" in capsys.readouterr().out
    before = (tmp_path / CHECKPOINT_FILE).read_bytes()
    with pytest.raises(RunNotResumable, match="não mande"):
        resume(tmp_path)
    assert (tmp_path / CHECKPOINT_FILE).read_bytes() == before and emails(tmp_path) == []
    assert cli.main(["approve", "--workdir", str(tmp_path)]) == 2  # nothing to approve any more


def test_a_pause_request_left_while_nobody_runs_is_honoured_on_resume(tmp_path):
    run_fresh(tmp_path, max_turns=1)
    request_control(tmp_path, "pause", "janela de manutenção")
    state, requests = resume(tmp_path)
    assert state["status"] == "paused" and state["status_reason"] == "janela de manutenção"
    assert requests == []
    state, _ = resume(tmp_path)
    assert state["status"] == "completed"


def test_status_command_shows_the_pending_approval(tmp_path, capsys):
    run_fresh(tmp_path, approver=ask_a_person)
    assert cli.main(["status", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "status=waiting_for_approval" in out and "send_email (toolu_01TE2)" in out
    assert "liberada" in out


# --- older checkpoints and other timelines -----------------------------------------------------------

def lesson2_checkpoint_with_pending_email(run_dir, monkeypatch):
    """A v1 checkpoint written by the lesson-2 loop, which died right after sending the email."""
    run_dir.mkdir(parents=True, exist_ok=True)
    workspace = TEAM_EMAIL.make_workspace(run_dir / WORLD_DIR)
    import harness.loop as loop_module

    real = loop_module.execute_tool

    def execute_then_die(name, input, idempotency_key=None):
        output = real(name, input, idempotency_key)
        if name == "send_email":
            raise SimulatedCrash("morreu depois do envio")
        return output

    monkeypatch.setattr(loop_module, "execute_tool", execute_then_die)
    with workspace_in_use(workspace), pytest.raises(SimulatedCrash):
        run_lesson2_loop(make_stub_client(TEAM_EMAIL.responses), new_run_state(TEAM_EMAIL.task),
                         run_dir / CHECKPOINT_FILE)
    monkeypatch.setattr(loop_module, "execute_tool", real)


def test_a_v1_checkpoint_without_ledger_resumes_under_the_lesson3_rule(tmp_path, monkeypatch):
    lesson2_checkpoint_with_pending_email(tmp_path, monkeypatch)
    assert json.loads((tmp_path / CHECKPOINT_FILE).read_text())["version"] == 1
    assert len(emails(tmp_path)) == 1 and not (tmp_path / EFFECTS_FILE).exists()
    state, requests = resume(tmp_path)
    answer = state["messages"][4]["content"][0]
    assert answer["is_error"] is True and answer["content"] == UNKNOWN_OUTCOME
    assert len(emails(tmp_path)) == 1  # no key in the v1 email: running it again would duplicate
    stored = json.loads((tmp_path / CHECKPOINT_FILE).read_text())
    assert stored["version"] == 2 and stored["migrated_from"] == 1 and stored["status"] == "completed"
    assert all(validate_messages(request["messages"]) is None for request in requests)


def test_a_v1_checkpoint_with_a_ledger_uses_the_three_way_split(tmp_path, monkeypatch):
    crash_fresh_run(tmp_path, monkeypatch, "after-tool-run:1")  # intent recorded, email sent
    scene = json.loads((tmp_path / "checkpoints" / "turn-002-A.json").read_text())
    save_checkpoint(scene, tmp_path / CHECKPOINT_FILE)  # as a lesson-5 rewind leaves it: v1
    state, _ = resume(tmp_path)
    assert state["status"] == "completed" and len(emails(tmp_path)) == 1
    assert final_run_problems(tmp_path) == []


def test_an_unknown_checkpoint_version_is_refused_and_left_alone(tmp_path):
    run_fresh(tmp_path, max_turns=1)
    data = json.loads((tmp_path / CHECKPOINT_FILE).read_text())
    data["version"] = 3
    (tmp_path / CHECKPOINT_FILE).write_text(json.dumps(data))
    before = (tmp_path / CHECKPOINT_FILE).read_bytes()
    with pytest.raises(Exception, match="o arquivo é v3, este código lê v1") as error:
        resume(tmp_path)
    assert "v2" in str(error.value)
    assert (tmp_path / CHECKPOINT_FILE).read_bytes() == before


def test_rewind_then_resume_reuses_the_ledger_instead_of_sending_again(tmp_path):
    run_fresh(tmp_path)
    rewind_to(tmp_path, 1)  # lesson 5: back to the scene after the read, before the email
    state, requests = resume(tmp_path)
    assert state["status"] == "completed" and len(requests) == 2
    answer = state["messages"][4]["content"][0]
    assert answer["tool_use_id"] == "toolu_01TE2" and answer["is_error"] is False
    assert len(emails(tmp_path)) == 1  # the same decision found its receipt in the ledger
    assert final_run_problems(tmp_path) == []


def test_a_dry_run_fork_of_a_durable_run_leaves_the_original_untouched(tmp_path):
    original = tmp_path / "original"
    run_fresh(original)
    snapshot = {path: path.read_bytes() for path in original.rglob("*") if path.is_file()}
    fork = tmp_path / "fork"
    info = fork_from(original, 1, fork)
    assert info["dry_run"] is True
    variant = load_scenario("team-email-variant")
    state, _ = resume(fork, scenario=variant)
    assert state["status"] == "completed"
    assert state["timeline"] == {"timeline_id": info["timeline_id"], "parent": info["parent"]}
    assert state["timeline"]["parent"]["turn"] == 1
    dry = [block for message in state["messages"][3:] if isinstance(message["content"], list)
           for block in message["content"] if block.get("type") == "tool_result"]
    # The send is simulated, so the model does not go on to register a send that never happened.
    assert len(dry) == 1 and all(block["content"].startswith("[dry-run]") for block in dry)
    assert "dry-run" in state["messages"][-1]["content"][0]["text"]
    assert Workspace(fork / WORLD_DIR).emails() == [] and Workspace(fork / WORLD_DIR).tickets() == []
    assert {path: path.read_bytes() for path in original.rglob("*") if path.is_file()} == snapshot
    assert [parse_point_name(p.name) for p in list_points(fork)][0] == (1, "B")


# --- the checks used by the crash matrix and the soak can fail ---------------------------------------

def test_the_consistency_checks_see_a_disagreement(tmp_path):
    run_fresh(tmp_path)
    assert final_run_problems(tmp_path) == []
    ledger_path = tmp_path / EFFECTS_FILE
    good_ledger = ledger_path.read_text()
    effects = json.loads(good_ledger)
    effects["toolu_01TE2"]["result"]["content"] = "outra coisa"
    ledger_path.write_text(json.dumps(effects))
    assert any("differs" in problem for problem in ledger_problems(tmp_path))
    effects["toolu_01TE2"]["status"] = "intent"
    ledger_path.write_text(json.dumps(effects))
    assert any("ledger says intent" in problem for problem in ledger_problems(tmp_path))
    ledger_path.write_text("{}")
    assert any("no ledger record" in problem for problem in ledger_problems(tmp_path))
    ledger_path.write_text(good_ledger)
    outbox = world(tmp_path).outbox_path
    outbox.write_text(outbox.read_text() * 2)
    assert "outbox holds 2 emails, expected 1" in final_run_problems(tmp_path)


def test_the_request_log_catches_an_orphan_tool_use(tmp_path, monkeypatch):
    """A resume that forgets the pending call sends an orphan tool_use; the log shows it."""
    import anthropic

    from harness import runner
    from harness.cli_endpoint import ENDPOINT_LOG_ENV, make_run_client

    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv(ENDPOINT_LOG_ENV, str(log))
    crash_fresh_run(tmp_path / "run", monkeypatch, "after-save-A:2")

    def forgetful(store, state, lease, approver, dry_run):
        state["pending_tool_use"] = None
        return True

    monkeypatch.setattr(runner, "answer_pending", forgetful)
    with pytest.raises(anthropic.BadRequestError):
        run_durable(make_run_client(TEAM_EMAIL.responses), tmp_path / "run", TEAM_EMAIL, resume=True)
    [problem] = orphan_problems(log)
    assert "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_01TE2" in problem
