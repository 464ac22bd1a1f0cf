"""Exercise 6 (the verification apparatus): the solution scores 100%, the generated exercise
fails every check as not implemented, plausible wrong answers fail with a message naming the
mistake, and on level 2 a verification that cannot fail (always approves, or only checks that
the run completed) scores zero.

Two gradings go through a real kernel; the wrong answers run the same checks in-process
(the notebook's cells executed into a dict), which the engine tests show is equivalent.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import nbformat
import pytest

from grader.buggy_harnesses import REFERENCE, defects, make_harness
from grader.checks.exercise_6 import CANNOT_FAIL
from grader.checks.framework import NOT_IMPLEMENTED_PREFIX
from grader.core.engine import grade, load_exercise
from grader.core.fixture_loader import load_fixtures
from harness.display.crash_lab import run_outcome
from harness.effects import EFFECTS_FILE
from harness.lifecycle import CHECKPOINT_FILE, load_run_checkpoint
from tests.exercise_support import assert_fails, edited_definition, run_checks
from tests.exercise_support import failing as failures
from tests.grader_support import defining_cell

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "exercise-6.ipynb"
EXERCISE_NOTEBOOK = ROOT / "exercises" / "exercise-6.ipynb"
DEMO_CELLS = {"ex6-05", "ex6-07", "ex6-09", "ex6-12", "ex6-14"}  # try-it cells: not needed to grade


def solution() -> nbformat.NotebookNode:
    notebook = nbformat.read(str(SOLUTION), as_version=4)
    notebook.cells = [cell for cell in notebook.cells if cell.get("id") not in DEMO_CELLS]
    return notebook


def replaced(name: str, old: str, new: str) -> nbformat.NotebookNode:
    return edited_definition(solution(), name, old, new)


def with_function(name: str, source: str) -> nbformat.NotebookNode:
    """The solution with ``name`` redefined by ``source`` in a cell right after its own."""
    notebook = solution()
    index = notebook.cells.index(defining_cell(notebook, name))
    notebook.cells.insert(index + 1, nbformat.v4.new_code_cell(source))
    return notebook


def graded(notebook, tmp_path, monkeypatch, level) -> dict[str, dict]:
    return run_checks("exercise-6", notebook, tmp_path / "checks", monkeypatch, level=level, check_timeout=60.0)


def level_score(results) -> float:
    return sum(r["status"] == "pass" for r in results.values()) / len(results)


def test_the_loop_over_every_defect_is_the_students_alone_the_grader_skips_it():
    """Level 2's checks run verify_resume on each defect themselves: the notebook's own loop
    (five seconds on the solution) carries nbclient's skip tag, in the exercise too."""
    for path in (SOLUTION, EXERCISE_NOTEBOOK):
        cells = {cell.get("id"): cell for cell in nbformat.read(str(path), as_version=4).cells}
        loop = cells["ex6-09"]
        assert "defect_names()" in loop.source and "skip-execution" in loop.metadata.get("tags", []), path.name
        skipped = [id_ for id_, cell in cells.items() if "skip-execution" in cell.metadata.get("tags", [])]
        assert skipped == ["ex6-09"], (path.name, skipped)


# ----------------------------------------------------------------- real kernel


@pytest.mark.slow
def test_solution_scores_100_percent():
    report = grade("exercise-6", SOLUTION)
    assert report.notebook_error is None and report.cell_problems == []
    statuses = {check.id: check.status for check in report.checks}
    assert len(statuses) == 50
    assert set(statuses.values()) == {"pass"}, {k: v for k, v in statuses.items() if v != "pass"}
    assert {check.level for check in report.checks} == {1, 2, 3, 4}


@pytest.mark.slow
def test_generated_exercise_fails_every_check_as_not_implemented():
    report = grade("exercise-6", EXERCISE_NOTEBOOK)
    assert len(report.checks) == 50 and all(check.status != "pass" for check in report.checks)
    assert all(NOT_IMPLEMENTED_PREFIX in check.message for check in report.checks)


# ----------------------------------------------------------------- the seeded defects are real


def corrupt_the_ledger(run_dir: Path) -> None:
    (run_dir / EFFECTS_FILE).write_text('{"toolu_01TE2": {"sta')


class AfterResume(NamedTuple):
    crashed: int     # the crashed run's exit code
    resumed: int     # the resume's exit code
    outcome: Any     # run_outcome() of the folder after the resume


# Each scenario: the run folder, where the first run crashes, what is done to the folder before
# the resume, and each symptom with what shows it after the resume.
CRASH_AND_RESUME = [
    ("envio", "after-tool-run:1", None, {"crash code": lambda after: after.crashed != 137,
                                         "duplicate": lambda after: after.outcome.emails > 1}),
    ("recibo", "after-effect-write:1", None, {"no email": lambda after: after.outcome.emails == 0,
                                              "receipt disagreement": lambda after: bool(after.outcome.disagreements)}),
    ("antes-do-efeito", "after-save-A:2", None, {"never sent": lambda after: after.outcome.emails == 0,
                                                 "orphan request": lambda after: bool(after.outcome.orphans)}),
    ("resposta-perdida", "after-model-response:2", None, {
        "counters after a lost response": lambda after: (after.outcome.turns, after.outcome.tokens_used) != (3, 2016)}),
    ("contadores", "after-save-B:2", None, {
        "counters": lambda after: (after.outcome.turns, after.outcome.tokens_used) != (3, 2016),
        "disagreement": lambda after: bool(after.outcome.disagreements)}),
    ("meio-da-gravacao", "mid-checkpoint-write:3", None, {"torn checkpoint": lambda after: after.resumed != 0}),
    ("livro-corrompido", "after-effect-write:1", corrupt_the_ledger, {"fails open": lambda after: after.resumed == 0}),
]


@pytest.mark.slow
@pytest.mark.parametrize("name", [REFERENCE, *defects()])
def test_each_seeded_harness_shows_its_defect_and_the_reference_none(name, tmp_path):
    """Drive each harness through every scenario and observe the symptoms directly (the
    reference shows none, each defect at least its own), independently of any verification."""
    harness = make_harness(name, root=tmp_path)
    symptoms = set()

    for folder, crash_after, tamper, shown_by in CRASH_AND_RESUME:
        run_dir = harness.new_run_dir(folder)
        crashed = harness.run(run_dir, crash_after=crash_after)
        if tamper is not None:
            tamper(run_dir)
        resumed = harness.resume(run_dir)
        after = AfterResume(crashed, resumed, run_outcome(run_dir))
        symptoms |= {symptom for symptom, shows in shown_by.items() if shows(after)}

    run_dir = harness.new_run_dir("cancelada")
    assert harness.run(run_dir, max_turns=1) == 10
    assert harness.cancel(run_dir) == 0
    if harness.resume(run_dir) != 12 or load_run_checkpoint(run_dir / CHECKPOINT_FILE)["status"] != "cancelled":
        symptoms.add("cancel ignored")

    run_dir = harness.new_run_dir("de-novo")
    harness.run(run_dir)
    harness.run(run_dir)
    if run_outcome(run_dir).emails != 1:
        symptoms.add("stale ledger")

    expected = {
        REFERENCE: set(),
        "reruns-pending-calls": {"duplicate"},
        "receipt-before-execution": {"no email"},
        "counters-reset-on-resume": {"counters"},
        "checkpoint-written-in-place": {"torn checkpoint"},
        "corrupt-ledger-read-as-empty": {"fails open"},
        "cancelled-run-resumes": {"cancel ignored"},
        "clean-start-keeps-ledger": {"stale ledger"},
        "tokens-reset-on-resume": {"counters"},
        "pending-answered-without-ledger": {"never sent"},
        "receipts-downgraded-on-resume": {"disagreement"},
        "crash-exits-with-the-wrong-code": {"crash code"},
        "settled-receipt-answered-as-unknown": {"receipt disagreement"},
        "cached-response-not-counted": {"counters after a lost response"},
        "model-asked-before-closing-pending": {"orphan request"},
    }
    if name == REFERENCE:
        assert symptoms == set()
    else:  # a defect may show more than its own symptom (rerunning also ignores the ledger)
        assert expected[name] <= symptoms, symptoms


NUMBER_WORDS = {"dez": 10, "onze": 11, "doze": 12, "treze": 13, "catorze": 14, "quinze": 15, "dezesseis": 16,
                "dezessete": 17, "dezoito": 18, "dezenove": 19, "vinte": 20}


def test_the_exercise_text_lists_every_seeded_defect_the_code_has():
    """The level-2 text names each defect (in defect_names() order), says how many there are,
    and points at the one under which the run does not complete: all three follow the code."""
    import re

    from grader.checks.exercise_6 import defect_names

    text = "\n".join(cell.source for cell in nbformat.read(str(SOLUTION), as_version=4).cells
                     if cell.cell_type == "markdown")
    listed = re.findall(r"^(\d+)\. `([a-z-]+)`:", text, flags=re.MULTILINE)
    assert [name for _, name in listed] == defect_names()
    assert [int(number) for number, _ in listed] == list(range(1, len(defect_names()) + 1))
    counts = re.findall(r"(\w+) harnesses (?:com|que têm)", text)
    assert counts and all(NUMBER_WORDS.get(word) == len(defect_names()) for word in counts), counts
    [exception] = re.findall(r"todos, menos o (\d+)", text)
    incomplete = [name for name, defect in defects().items() if not defect.completes]
    assert [defect_names()[int(exception) - 1]] == incomplete


def test_a_defect_never_leaks_out_of_its_call(tmp_path):
    from harness import runner, tool_runner
    from harness.stores import files

    originals = (runner.reopen, files.save_run_checkpoint, tool_runner.load_effects)
    harness = make_harness("checkpoint-written-in-place", root=tmp_path)
    run_dir = harness.new_run_dir()
    assert harness.run(run_dir, crash_after="mid-checkpoint-write:2") == 137
    assert (runner.reopen, files.save_run_checkpoint, tool_runner.load_effects) == originals
    with pytest.raises(ValueError, match="rótulo desconhecido"):
        harness.run(run_dir, crash_after="after-sav-A:1")


# ----------------------------------------------------------------- level 1


def test_a_single_counter_for_every_label_crashes_on_the_wrong_step(tmp_path, monkeypatch):
    notebook = replaced("crash_point", "    if (label, _passes[label]) in parse_crash_plan(spec):",
                        "    if any(label == t and sum(_passes.values()) == n for t, n in parse_crash_plan(spec)):")
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.crash_point_counts_per_label[passagens-segunda-do-ponto-a]",
                 "chamada 2, a 1ª passagem por after-save-A", "por rótulo: _passes[label]")


def test_greater_or_equal_crashes_on_every_later_pass(tmp_path, monkeypatch):
    notebook = replaced("crash_point", "    if (label, _passes[label]) in parse_crash_plan(spec):",
                        "    if any(label == t and _passes[label] >= n for t, n in parse_crash_plan(spec)):")
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.crash_point_counts_per_label[passagens-so-uma-vez]", "(==)", "(>=)")
    assert "n1.crash_point_counts_per_label[passagens-segunda-do-ponto-a]" not in failures(results)


def test_an_unchecked_label_lets_a_typo_pass_silently(tmp_path, monkeypatch):
    notebook = replaced("parse_crash_plan", "        if label not in CRASH_LABELS:\n            raise ValueError(f\"CRASH_AFTER",
                        "        if False:\n            raise ValueError(f\"CRASH_AFTER")
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.parse_crash_plan_reads_the_plan[crash-after-rotulo-errado]",
                 "passa em silêncio", "sem nunca cair")
    assert_fails(results, "n1.crash_point_counts_per_label[passagens-crash-after-errado]", "em silêncio")
    assert "n1.parse_crash_plan_reads_the_plan[crash-after-contagem-texto]" not in failures(results)


BARE_INT = '''def parse_crash_plan(spec):
    plan = []
    for item in spec.split(","):
        label, _, count = item.strip().partition(":")
        if label not in CRASH_LABELS:
            raise ValueError(f"CRASH_AFTER: rótulo desconhecido {label!r}")
        plan.append((label, int(count) if count else 1))
    return plan
'''


def test_a_bare_int_gives_an_error_that_does_not_say_crash_after(tmp_path, monkeypatch):
    results = graded(with_function("parse_crash_plan", BARE_INT), tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.parse_crash_plan_reads_the_plan[crash-after-contagem-texto]",
                 "não diz 'CRASH_AFTER'")
    assert_fails(results, "n1.parse_crash_plan_reads_the_plan[crash-after-contagem-zero]", "aceitou")


def test_counting_only_when_crash_after_is_set_loses_the_counts(tmp_path, monkeypatch):
    notebook = replaced("crash_point", "    _passes[label] += 1\n    spec = os.environ.get(\"CRASH_AFTER\")\n    if not spec:\n        return\n",
                        "    spec = os.environ.get(\"CRASH_AFTER\")\n    if not spec:\n        return\n    _passes[label] += 1\n")
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.crash_point_counts_per_label[passagens-sem-crash-after]",
                 "crash_counts() não bate", "com ou sem CRASH_AFTER")
    assert "n1.crash_point_counts_per_label[passagens-segunda-do-ponto-a]" not in failures(results)


OWN_CRASH = '''class SimulatedCrash(Exception):
    pass
'''


def test_a_home_made_simulated_crash_is_named(tmp_path, monkeypatch):
    notebook = with_function("parse_crash_plan", OWN_CRASH)
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.crash_point_counts_per_label[passagens-segunda-do-ponto-a]", "from harness.crash import")


# ----------------------------------------------------------------- level 2


ALWAYS_APPROVES = '''def verify_resume(harness):
    return []
'''

ONLY_COMPLETION = '''def verify_resume(harness):
    problems = []
    for label in CRASH_LABELS:
        run_dir = harness.new_run_dir(label)
        harness.run(run_dir, crash_after=f"{label}:3" if label == "mid-checkpoint-write" else f"{label}:1")
        code = harness.resume(run_dir)
        state = load_run_checkpoint(run_dir / CHECKPOINT_FILE) if code != 2 else None
        if code != 0 or state is None or state["status"] != "completed":
            problems.append(f"{label}: a execução não terminou (código {code})")
    return problems
'''

ONLY_EMAILS = '''def verify_resume(harness):
    problems = []
    for label, n in {"after-save-A": 2, "after-tool-run": 1, "after-effect-write": 1, "mid-checkpoint-write": 3}.items():
        run_dir = harness.new_run_dir(label)
        harness.run(run_dir, crash_after=f"{label}:{n}")
        harness.resume(run_dir)
        count = len(world_of(run_dir).emails())
        if count != 1:
            problems.append(f"{label}: {count} e-mails")
    return problems
'''

FORGETS_TO_RESUME = '''def verify_resume(harness):
    run_dir = harness.new_run_dir("queda")
    harness.run(run_dir, crash_after="after-tool-run:1")
    outcome = run_outcome(run_dir)
    return [] if outcome.status == "completed" and outcome.emails == 1 else [f"status {outcome.status}"]
'''

NO_RETURN = '''def verify_resume(harness):
    run_dir = harness.new_run_dir("sem-return")
    assert harness.run(run_dir) == 0
'''


def test_a_verification_that_always_approves_scores_zero(tmp_path, monkeypatch):
    results = graded(with_function("verify_resume", ALWAYS_APPROVES), tmp_path, monkeypatch, 2)
    assert len(results) == 15 and level_score(results) == 0
    assert all("não consegue falhar" in message for message in failures(results).values())


@pytest.mark.slow
def test_a_verification_that_only_checks_completion_scores_zero(tmp_path, monkeypatch):
    results = graded(with_function("verify_resume", ONLY_COMPLETION), tmp_path, monkeypatch, 2)
    assert len(results) == 15 and level_score(results) == 0
    # It does reject the torn-checkpoint harness, yet earns nothing: it cannot see any defect
    # under which the run still completes.
    assert failures(results)["n2.rejects_the_defect[h7-checkpoint-no-lugar]"] == CANNOT_FAIL
    assert_fails(results, "n2.approves_the_reference[h0-referencia]", "não consegue falhar", "só que a execução terminou")


@pytest.mark.slow
def test_the_completion_only_verification_really_rejects_the_torn_checkpoint(tmp_path):
    namespace = {"__name__": "__main__"}
    exec("from harness.crash import CRASH_LABELS\nfrom harness.lifecycle import CHECKPOINT_FILE, load_run_checkpoint\n"
         + ONLY_COMPLETION, namespace)
    verify = namespace["verify_resume"]
    assert verify(make_harness(REFERENCE, root=tmp_path / "ref")) == []
    assert verify(make_harness("checkpoint-written-in-place", root=tmp_path / "torn")) != []
    assert verify(make_harness("reruns-pending-calls", root=tmp_path / "dup")) == []


@pytest.mark.slow
def test_counting_emails_only_catches_some_defects_and_names_the_rest(tmp_path, monkeypatch):
    results = graded(with_function("verify_resume", ONLY_EMAILS), tmp_path, monkeypatch, 2)
    failed = failures(results)
    assert set(failed) == {"n2.rejects_the_defect[h3-contadores-zerados]",
                           "n2.rejects_the_defect[h4-livro-razao-corrompido-vazio]",
                           "n2.rejects_the_defect[h5-cancelada-volta-a-rodar]",
                           "n2.rejects_the_defect[h6-comeco-limpo-guarda-livro-razao]",
                           "n2.rejects_the_defect[h8-tokens-zerados]",
                           "n2.rejects_the_defect[h10-recibos-rebaixados]",
                           "n2.rejects_the_defect[h11-queda-com-codigo-errado]",
                           "n2.rejects_the_defect[h12-recibo-respondido-como-desconhecido]",
                           "n2.rejects_the_defect[h13-resposta-guardada-sem-tokens]",
                           "n2.rejects_the_defect[h14-modelo-antes-das-pendentes]"}
    assert_fails(results, "n2.rejects_the_defect[h3-contadores-zerados]", "aprovou um harness com defeito",
                 "zera turns e tokens_used", "Compare turns e tokens_used")
    assert_fails(results, "n2.rejects_the_defect[h5-cancelada-volta-a-rodar]", "cancele-a e retome")


@pytest.mark.slow
def test_forgetting_to_resume_rejects_the_reference_and_scores_zero(tmp_path, monkeypatch):
    results = graded(with_function("verify_resume", FORGETS_TO_RESUME), tmp_path, monkeypatch, 2)
    assert level_score(results) == 0
    assert_fails(results, "n2.approves_the_reference[h0-referencia]", "reprovou o harness de referência",
                 "status running")


@pytest.mark.slow
def test_a_verification_without_return_is_told_so(tmp_path, monkeypatch):
    results = graded(with_function("verify_resume", NO_RETURN), tmp_path, monkeypatch, 2)
    assert level_score(results) == 0
    assert_fails(results, "n2.approves_the_reference[h0-referencia]", "devolveu None", "Esqueceu o return")


# ----------------------------------------------------------------- level 3


def test_a_token_that_restarts_at_one_cannot_fence_the_old_owner(tmp_path, monkeypatch):
    notebook = replaced("acquire_lease", '"token": (record["token"] if record else 0) + 1', '"token": 1')
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.expired_lease_is_taken_over", "precisa crescer")
    assert_fails(results, "n3.token_only_grows", "maior que todos os anteriores")
    assert_fails(results, "n3.check_fence_accepts_only_the_current_token")
    assert "n3.first_lease_gets_token_one" not in failures(results)


def test_a_lease_that_never_expires_keeps_a_dead_owner_forever(tmp_path, monkeypatch):
    notebook = replaced("acquire_lease", "if record is not None and now < record[\"expires_at\"]:",
                        "if record is not None:")
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.expired_lease_is_taken_over", "já venceu", "prende a execução para sempre")
    assert "n3.held_lease_is_refused" not in failures(results)


def test_strictly_greater_misses_the_expiry_instant(tmp_path, monkeypatch):
    notebook = replaced("acquire_lease", "now < record[\"expires_at\"]", "now <= record[\"expires_at\"]")
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.expired_lease_is_taken_over", "now >= expires_at")
    assert set(failures(results)) == {"n3.expired_lease_is_taken_over"}


def test_writing_before_checking_lets_the_stale_owner_overwrite(tmp_path, monkeypatch):
    notebook = replaced("fenced_save",
                        "    check_fence(run_dir, token)\n    write_json_atomic(Path(run_dir) / \"checkpoint.json\", state)",
                        "    write_json_atomic(Path(run_dir) / \"checkpoint.json\", state)\n    check_fence(run_dir, token)")
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.stale_holder_cannot_write", "gravou por cima", "ANTES de gravar")


def test_a_fence_that_accepts_any_newer_token_is_named(tmp_path, monkeypatch):
    notebook = replaced("check_fence", "if token != current:", "if token < current:")
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.check_fence_accepts_only_the_current_token", "O token 3", "igualdade")
    assert "n3.stale_holder_cannot_write" not in failures(results)


def test_a_lease_lifetime_fixed_in_the_code_is_caught(tmp_path, monkeypatch):
    notebook = replaced("acquire_lease", '"expires_at": now + seconds', '"expires_at": now + LEASE_SECONDS')
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.first_lease_gets_token_one", "Com seconds=7.5", "não um prazo fixo no código")


def test_a_fenced_save_that_writes_in_place_tears_on_a_crash(tmp_path, monkeypatch):
    notebook = replaced("fenced_save", 'write_json_atomic(Path(run_dir) / "checkpoint.json", state)',
                        '(Path(run_dir) / "checkpoint.json").write_text(json.dumps(state), encoding="utf-8")')
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.torn_writes_keep_lease_and_checkpoint", "checkpoint.json por fenced_save",
                 "o último estado bom se perdeu")
    # the stale-owner check looks for leftover temporary files and finds none: only tearing the write shows it
    assert "n3.stale_holder_cannot_write" not in failures(results)


RENEWS_BY_NAME = """    if record is not None and record["owner"] == owner:
        lease = {"owner": owner, "token": record["token"], "expires_at": now + seconds}
        write_json_atomic(path, lease)
        return lease
    if record is not None and now < record["expires_at"]:"""


def test_an_owner_renewing_by_name_with_its_old_token_is_caught(tmp_path, monkeypatch):
    notebook = replaced("acquire_lease", '    if record is not None and now < record["expires_at"]:', RENEWS_BY_NAME)
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.same_name_gets_no_shared_token", "mesmo token (1)", "passarem pela mesma cerca")
    # the other owner is still refused, and the tokens still grow across owners: only the same name shows it
    assert {"n3.held_lease_is_refused", "n3.token_only_grows"}.isdisjoint(failures(results))


def test_the_same_owner_taking_its_live_lease_again_is_caught(tmp_path, monkeypatch):
    notebook = replaced("acquire_lease", 'if record is not None and now < record["expires_at"]:',
                        'if record is not None and now < record["expires_at"] and record["owner"] != owner:')
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.same_name_gets_no_shared_token", "inclusive o mesmo")
    assert set(failures(results)) == {"n3.same_name_gets_no_shared_token"}


MEMORY_FENCE = """TOKENS = {}


def acquire_lease(run_dir, owner, now, seconds=LEASE_SECONDS):
    run_dir = Path(run_dir)
    path = run_dir / "lease.json"
    record = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    if record is not None and now < record["expires_at"]:
        raise LeaseHeld("ocupada")
    lease = {"owner": owner, "token": (record["token"] if record else 0) + 1, "expires_at": now + seconds}
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, lease)
    TOKENS[str(run_dir)] = lease["token"]
    return lease


def check_fence(run_dir, token):
    if TOKENS.get(str(Path(run_dir))) != token:
        raise LeaseLost("posse perdida")
"""


def test_a_fence_against_a_token_kept_in_memory_is_caught_only_across_processes(tmp_path, monkeypatch):
    results = graded(with_function("acquire_lease", MEMORY_FENCE), tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.fence_reads_the_lease_file", "token guardado na memória deste processo")
    # inside one process every change of owner goes through the same dict, so these checks cannot see it
    assert {"n3.check_fence_accepts_only_the_current_token", "n3.stale_holder_cannot_write"}.isdisjoint(
        failures(results))


COUNTER_IN_MEMORY = MEMORY_FENCE.replace(
    '"token": (record["token"] if record else 0) + 1', '"token": TOKENS.get(str(run_dir), 0) + 1',
).replace("def check_fence(run_dir, token):\n    if TOKENS.get(str(Path(run_dir))) != token:",
          "def check_fence(run_dir, token):\n    if json.loads((Path(run_dir) / 'lease.json').read_text())['token'] != token:")


def test_a_token_counter_kept_in_memory_is_caught(tmp_path, monkeypatch):
    assert COUNTER_IN_MEMORY != MEMORY_FENCE and "TOKENS.get(str(run_dir), 0) + 1" in COUNTER_IN_MEMORY
    results = graded(with_function("acquire_lease", COUNTER_IN_MEMORY), tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.fence_reads_the_lease_file", "não de um contador na memória")
    assert "n3.token_only_grows" not in failures(results)


def test_a_lease_file_holding_null_read_as_a_free_lease_is_caught(tmp_path, monkeypatch):
    # the reading the solution had before: `null` (and [], 0, false) became "never had an owner"
    notebook = with_function("acquire_lease", ACQUIRE_WITHOUT_SHAPE_CHECK)
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.corrupt_lease_fails_closed", "Com o JSON null no lease.json", "o token recomeçou")
    assert set(failures(results)) == {"n3.corrupt_lease_fails_closed"}


ACQUIRE_WITHOUT_SHAPE_CHECK = """def acquire_lease(run_dir, owner, now, seconds=LEASE_SECONDS):
    run_dir = Path(run_dir)
    path = run_dir / "lease.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    except json.JSONDecodeError as error:
        raise LeaseFileError(f"{path}: {error.msg}") from None
    if record is not None and now < record["expires_at"]:
        raise LeaseHeld("ocupada")
    lease = {"owner": owner, "token": (record["token"] if record else 0) + 1, "expires_at": now + seconds}
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, lease)
    return lease
"""


LEASE_SWAP_WITHOUT_FOLDER_FSYNC = """    temporario = path.with_name("lease.json.tmp")
    with open(temporario, "w", encoding="utf-8") as arquivo:
        json.dump(lease, arquivo)
        arquivo.flush()
        os.fsync(arquivo.fileno())
    os.replace(temporario, path)"""


def test_a_lease_swapped_without_the_folder_fsync_is_caught_only_by_its_crash_states(tmp_path, monkeypatch):
    notebook = replaced("acquire_lease", "    write_json_atomic(path, lease)", LEASE_SWAP_WITHOUT_FOLDER_FSYNC)
    failed = failures(graded(notebook, tmp_path, monkeypatch, 3))
    assert set(failed) == {"n3.every_lease_crash_state_loads"}
    words = failed["n3.every_lease_crash_state_loads"]
    assert "depois que a gravação voltou" in words and "check_fence só aceita o token do lease anterior" in words
    assert "fsync da pasta" in words and "do corretor" not in words


def test_a_fenced_save_in_place_is_caught_by_its_crash_states_too(tmp_path, monkeypatch):
    notebook = replaced("fenced_save", 'write_json_atomic(Path(run_dir) / "checkpoint.json", state)',
                        '(Path(run_dir) / "checkpoint.json").write_text(json.dumps(state), encoding="utf-8")')
    failed = failures(graded(notebook, tmp_path, monkeypatch, 3))
    assert "O checkpoint é escrito no próprio arquivo" in failed["n3.every_fenced_save_crash_state_loads"]
    assert "n3.every_lease_crash_state_loads" not in failed


def test_a_fence_that_refuses_every_token_does_not_blame_the_lease_write(tmp_path, monkeypatch):
    notebook = replaced("check_fence", "if token != current:", "if True:")
    failed = failures(graded(notebook, tmp_path, monkeypatch, 3))
    assert "n3.check_fence_accepts_only_the_current_token" in failed
    assert "n3.every_lease_crash_state_loads" not in failed


# ----------------------------------------------------------------- level 1: the lesson's single-point code


LESSON_PARSE = '''def parse_crash_plan(spec):
    label, _, count = spec.partition(":")
    if label not in CRASH_LABELS:
        raise ValueError(f"CRASH_AFTER: rótulo desconhecido {label!r}; use um de {', '.join(CRASH_LABELS)}")
    try:
        n = int(count) if count else 1
    except ValueError:
        raise ValueError(f"CRASH_AFTER: contagem inválida {count!r}; use rótulo:n com n >= 1") from None
    if n < 1:
        raise ValueError(f"CRASH_AFTER: contagem inválida {n}; use rótulo:n com n >= 1")
    return [(label, n)]
'''


def test_the_lessons_single_point_reading_misses_the_second_crash(tmp_path, monkeypatch):
    """The lesson's parse_crash_after, wrapped in a list: a plan with a comma is a bad count."""
    results = graded(with_function("parse_crash_plan", LESSON_PARSE), tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.parse_crash_plan_reads_the_plan[crash-after-dois-pontos]", "o plano é válido",
                 "separados por vírgula")
    assert_fails(results, "n1.crash_point_counts_per_label[passagens-duas-quedas]")
    assert "n1.crash_point_counts_per_label[passagens-segunda-do-ponto-a]" not in failures(results)


def test_a_plan_whose_second_point_is_ignored_is_named(tmp_path, monkeypatch):
    notebook = replaced("crash_point", "    if (label, _passes[label]) in parse_crash_plan(spec):",
                        "    if (label, _passes[label]) == parse_crash_plan(spec)[0]:")
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.crash_point_counts_per_label[passagens-duas-quedas]", "só houve queda em chamada 3")
    assert_fails(results, "n1.crash_point_counts_per_label[passagens-duas-quedas-no-mesmo-rotulo]")


# ----------------------------------------------------------------- level 4: renewing the lease


def test_a_renewal_that_trusts_the_caller_brings_the_old_token_back(tmp_path, monkeypatch):
    source = '''def renew_lease(run_dir, owner, token, now, seconds=LEASE_SECONDS):
    lease = {"owner": owner, "token": token, "expires_at": now + seconds}
    write_json_atomic(Path(run_dir) / "lease.json", lease)
    return lease
'''
    results = graded(with_function("renew_lease", source), tmp_path, monkeypatch, 4)
    assert_fails(results, "n4.late_owner_cannot_renew", "gravou em vez de recusar", "\"token\": 1")
    assert_fails(results, "n4.expired_lease_is_not_renewed", "toma de novo")
    assert "n4.renewal_extends_the_current_lease" not in failures(results)


def test_a_renewal_through_acquire_lease_is_held_by_its_own_lease(tmp_path, monkeypatch):
    """Renewing by taking the lease again: the live lease refuses its own owner (level 3's rule)."""
    source = '''def renew_lease(run_dir, owner, token, now, seconds=LEASE_SECONDS):
    return acquire_lease(run_dir, owner, now, seconds)
'''
    results = graded(with_function("renew_lease", source), tmp_path, monkeypatch, 4)
    assert_fails(results, "n4.renewal_extends_the_current_lease", "levantou LeaseHeld")


def test_a_renewal_that_checks_only_the_token_lets_another_owner_renew(tmp_path, monkeypatch):
    notebook = replaced("renew_lease", 'if record["token"] != token or record["owner"] != owner:',
                        'if record["token"] != token:')
    results = graded(notebook, tmp_path, monkeypatch, 4)
    assert "n4.late_owner_cannot_renew" not in failures(results)  # the token alone already tells the late owner


# ----------------------------------------------------------------- the hints ladder


def ladder(level: int) -> tuple[str, ...]:
    from grader.core.manifest import get_exercise

    return get_exercise("exercise-6").level(level).hints


def required_by_the_checks(level: int) -> set[str]:
    """The concrete names and values a level's checks require, from the checks' own modules
    and the fixtures (level 2 judges verify_resume by the harnesses it rejects: its values are
    the harness's calls and the run outcome's fields)."""
    exercise = load_exercise("exercise-6")
    fixtures = load_fixtures("exercise-6", (), exercise.validate_fixture)
    if level == 1:
        separators = {",", ":"} if any("," in f.data.get("spec", "") for f in fixtures) else {":"}
        return {"CRASH_LABELS", "ValueError", "CRASH_AFTER", "_passes[label] += 1", "SimulatedCrash", "int()",
                "strip", *(f'"{sep}"' for sep in separators)}
    if level == 2:
        return {"harness.run", "harness.resume", "harness.cancel", "run_outcome", "137", "12", "effects.json",
                "max_turns=1", "disagreements", "orphans", "tokens_used", "turns"}
    if level == 3:
        return {"LeaseHeld", "LeaseLost", "LeaseFileError", "write_json_atomic", "now < expires_at", "token"}
    return {"LeaseLost", "LeaseFileError", "write_json_atomic", "now >= ", "\"owner\"", "\"token\"",
            "\"expires_at\": now + seconds", "json.loads"}


def test_every_level_has_a_ladder_of_at_least_three_rungs():
    for level in (1, 2, 3, 4):
        hints = ladder(level)
        assert len(hints) >= 3 and len(set(hints)) == len(hints), level


def test_the_ladder_names_every_value_the_checks_require_by_its_last_rungs():
    """Following the hints literally cannot fail a check: every required value is named by the
    last two rungs (the recipe), and the first rung names fewer than half of them (the idea)."""
    for level in (1, 2, 3, 4):
        hints = ladder(level)
        recipe = " ".join(hints[-2:])
        missing = sorted(value for value in required_by_the_checks(level) if value not in recipe)
        assert not missing, f"level {level}: the hints do not name {missing}"
        first = sum(value in hints[0] for value in required_by_the_checks(level))
        assert first < len(required_by_the_checks(level)) / 2, (level, first)


def test_the_level_1_hints_say_the_count_goes_on_after_a_crash():
    assert "não zera depois de uma queda" in ladder(1)[0]
    assert "parse_crash_plan(spec)" in ladder(1)[-1] and "in parse_crash_plan" in ladder(1)[-1]

