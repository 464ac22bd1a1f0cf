"""Exercise-4: the solution scores 100%, the generated exercise fails every check as not
implemented, and plausible wrong answers fail the check that names their mistake.

Wrong answers run in-process (the notebook's cells executed into a dict, then the same
runner the kernel uses); the two end-to-end cases go through the real engine and kernel.
"""
from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import nbformat
import pytest

from grader.core.engine import grade, load_exercise
from grader.core.fixture_loader import load_fixtures
from tests.exercise_support import failing as failures
from tests.exercise_support import run_checks

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "exercise-4.ipynb"
EXERCISE = ROOT / "exercises" / "exercise-4.ipynb"
NOT_IMPLEMENTED = "Ainda não implementado"


def solution_notebook() -> nbformat.NotebookNode:
    return nbformat.read(str(SOLUTION), as_version=4)


def with_cell(cell_id: str, source: str) -> nbformat.NotebookNode:
    notebook = copy.deepcopy(solution_notebook())
    [cell] = [c for c in notebook.cells if c.get("id") == cell_id]
    cell.source = source
    return notebook


def with_edit(cell_id: str, old: str, new: str) -> nbformat.NotebookNode:
    notebook = copy.deepcopy(solution_notebook())
    [cell] = [c for c in notebook.cells if c.get("id") == cell_id]
    assert old in cell.source, f"{old!r} not in cell {cell_id}"
    cell.source = cell.source.replace(old, new)
    return notebook


def run_level(notebook, level: int, tmp_path: Path, monkeypatch) -> dict[str, dict]:
    workdir = Path(tempfile.mkdtemp(prefix="checks-", dir=tmp_path))  # a test may grade several notebooks
    return run_checks("exercise-4", notebook, workdir, monkeypatch, level=level, check_timeout=20.0)


# ------------------------------------------------------------------ end to end (real kernel)


@pytest.mark.slow
def test_solution_scores_100_percent():
    report = grade("exercise-4", SOLUTION)
    assert report.notebook_error is None
    failed = {c.id: c.message for c in report.checks if c.status != "pass"}
    assert failed == {}
    assert {c.level for c in report.checks} == {1, 2, 3, 4, 5}
    assert len(report.checks) >= 30


@pytest.mark.slow
def test_generated_exercise_fails_every_check_as_not_implemented():
    report = grade("exercise-4", EXERCISE)
    assert report.checks
    for check in report.checks:
        assert check.status != "pass", check.id
        assert check.message.startswith(NOT_IMPLEMENTED), (check.id, check.message)


# ------------------------------------------------------------------ level 1

ANSWERS_BY_RETURN_VALUE = '''ANSWERS = {
    "enviar_email_sem_chave": IDEMPOTENTE,          # same return text both times
    "enviar_email_mesma_chave": NAO_IDEMPOTENTE,    # the second answer differs
    "ler_arquivo": IDEMPOTENTE,
    "acrescentar_linha_log": NAO_IDEMPOTENTE,
    "gravar_status_fixo": IDEMPOTENTE,
    "somar_contador": NAO_IDEMPOTENTE,
    "apagar_arquivo_se_existir": NAO_IDEMPOTENTE,   # the second call reports an error
    "ensure_ticket_mesmo_titulo": NAO_IDEMPOTENTE,  # "criado" then "já existia"
    "create_ticket_mesmo_titulo": NAO_IDEMPOTENTE,
}
'''

ANSWERS_OVERWRITE_MEANS_IDEMPOTENT = '''ANSWERS = {
    "enviar_email_sem_chave": NAO_IDEMPOTENTE,
    "enviar_email_mesma_chave": IDEMPOTENTE,
    "ler_arquivo": IDEMPOTENTE,
    "acrescentar_linha_log": NAO_IDEMPOTENTE,
    "gravar_status_fixo": IDEMPOTENTE,
    "somar_contador": IDEMPOTENTE,                 # "it rewrites the whole file"
    "apagar_arquivo_se_existir": IDEMPOTENTE,
    "ensure_ticket_mesmo_titulo": IDEMPOTENTE,
    "create_ticket_mesmo_titulo": IDEMPOTENTE,     # "tickets.json is rewritten with os.replace"
}
'''

ANSWERS_FREE_TEXT = '''ANSWERS = {
    "enviar_email_sem_chave": "não",
    "enviar_email_mesma_chave": "sim",
}
'''


def test_level_1_solution_passes(tmp_path, monkeypatch):
    assert failures(run_level(solution_notebook(), 1, tmp_path, monkeypatch)) == {}


def test_level_1_judging_by_return_value_fails(tmp_path, monkeypatch):
    failed = failures(run_level(with_cell("ex4-03", ANSWERS_BY_RETURN_VALUE), 1, tmp_path, monkeypatch))
    assert set(failed) == {"n1.answers_judge_by_effect"}
    message = failed["n1.answers_judge_by_effect"]
    assert "enviar_email_sem_chave" in message and "valor devolvido é igual" in message
    assert "mais 3 operações" in message


def test_level_1_rewriting_the_file_is_not_enough(tmp_path, monkeypatch):
    failed = failures(run_level(with_cell("ex4-03", ANSWERS_OVERWRITE_MEANS_IDEMPOTENT), 1, tmp_path, monkeypatch))
    assert set(failed) == {"n1.answers_judge_by_effect"}
    assert "acréscimo disfarçado" in failed["n1.answers_judge_by_effect"]


def test_level_1_incomplete_or_free_text_answers_fail(tmp_path, monkeypatch):
    failed = failures(run_level(with_cell("ex4-03", ANSWERS_FREE_TEXT), 1, tmp_path, monkeypatch))
    assert "Faltam operações" in failed["n1.answers_are_complete"]
    labels = ANSWERS_BY_RETURN_VALUE.replace("NAO_IDEMPOTENTE", '"não"')
    failed = failures(run_level(with_cell("ex4-03", labels), 1, tmp_path, monkeypatch))
    assert "não é um dos dois" in failed["n1.answers_are_complete"]


# ------------------------------------------------------------------ level 2

LEDGER_CELL = '''TRANSITIONS = {{
    None: ("intent", "rejected"),
    "intent": ("intent", "committed", "rejected", "unknown"),
    "unknown": ("intent", "committed", "rejected", "unknown"),
    "committed": (),
    "rejected": (),
}}


def load_effects(path):
{load}


def save_effect(path, tool_use_id, record):
{save}
'''
GOOD_LOAD = '''    try:
        texto = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        livro = json.loads(texto)
    except json.JSONDecodeError as erro:
        raise EffectsLedgerError(path, erro.msg) from None
    if not isinstance(livro, dict):
        raise EffectsLedgerError(path, "não é um objeto")
    for chave, registro in livro.items():
        if not isinstance(registro, dict) or registro.get("status") not in RECEIPT_STATUSES \
                or not isinstance(registro.get("tool"), str):
            raise EffectsLedgerError(path, f"registro inválido: {chave}")
        if registro["status"] != "intent":
            resultado = registro.get("result")
            if not isinstance(resultado, dict) or not isinstance(resultado.get("content"), str) \
                    or type(resultado.get("is_error")) is not bool:
                raise EffectsLedgerError(path, f"recibo sem resultado: {chave}")
    return livro'''
GOOD_SAVE = '''    livro = load_effects(path)
    livro[tool_use_id] = record
    write_json_atomic(path, livro)'''
FORGIVING_LOAD = '''    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}'''
RAW_ERROR_LOAD = '''    if not Path(path).exists():
        return {}
    return json.loads(Path(path).read_text(encoding="utf-8"))'''
IN_PLACE_SAVE = '''    livro = load_effects(path)
    livro[tool_use_id] = record
    with open(path, "w", encoding="utf-8") as arquivo:
        json.dump(livro, arquivo)'''
FORGETFUL_SAVE = '''    write_json_atomic(path, {tool_use_id: record})'''
FRESH_ON_CORRUPT_SAVE = '''    try:
        livro = load_effects(path)
    except EffectsLedgerError:
        livro = {}
    livro[tool_use_id] = record
    write_json_atomic(path, livro)'''


# The state machine, written otherwise than the solution's table; every save variant above keeps it,
# so each test judges only the mistake it names.
GUARD = '''    antes = livro.get(tool_use_id, {}).get("status")
    if antes in ("committed", "rejected") or (antes is None and record["status"] not in ("intent", "rejected")):
        raise LedgerTransitionError(path, tool_use_id, antes, record["status"])
'''


def guarded(save):
    return save.replace("    livro[tool_use_id] = record", GUARD + "    livro[tool_use_id] = record", 1)


GOOD_SAVE, IN_PLACE_SAVE, FRESH_ON_CORRUPT_SAVE = map(guarded, (GOOD_SAVE, IN_PLACE_SAVE, FRESH_ON_CORRUPT_SAVE))


def ledger_cell(load=GOOD_LOAD, save=GOOD_SAVE):
    return with_cell("ex4-05", LEDGER_CELL.format(load=load, save=save))


@pytest.mark.slow
def test_level_2_solution_and_a_rewritten_correct_answer_pass(tmp_path, monkeypatch):
    assert failures(run_level(solution_notebook(), 2, tmp_path, monkeypatch)) == {}
    assert failures(run_level(ledger_cell(), 2, tmp_path, monkeypatch)) == {}


@pytest.mark.slow
def test_level_2_forgiving_loader_fails_closed_check(tmp_path, monkeypatch):
    failed = failures(run_level(ledger_cell(load=FORGIVING_LOAD), 2, tmp_path, monkeypatch))
    assert "n2.corrupt_ledger_fails_closed" in failed
    message = failed["n2.corrupt_ledger_fails_closed"]
    assert "nunca começou" in message and "falha fechada" in message


def test_level_2_raw_json_error_is_not_the_ledger_error(tmp_path, monkeypatch):
    failed = failures(run_level(ledger_cell(load=RAW_ERROR_LOAD), 2, tmp_path, monkeypatch))
    assert "não com EffectsLedgerError" in failed["n2.corrupt_ledger_fails_closed"]
    assert "n2.missing_ledger_is_empty" not in failed


def test_level_2_writing_in_place_is_not_atomic(tmp_path, monkeypatch):
    failed = failures(run_level(ledger_cell(save=IN_PLACE_SAVE), 2, tmp_path, monkeypatch))
    assert set(failed) == {"n2.save_effect_is_atomic", "n2.save_effect_survives_a_torn_write",
                           "n2.every_ledger_crash_state_loads", "n2.a_failed_ledger_swap_is_reported"}
    assert "direto no lugar" in failed["n2.save_effect_is_atomic"]
    assert "os recibos já gravados se perderam" in failed["n2.save_effect_survives_a_torn_write"]
    assert "O livro-razão é escrito no próprio arquivo" in failed["n2.every_ledger_crash_state_loads"]
    assert "não chamou os.replace" in failed["n2.a_failed_ledger_swap_is_reported"]


SWALLOWING_SAVE = '''    livro = load_effects(path)
    livro[tool_use_id] = record
    try:
        write_json_atomic(path, livro)
    except OSError as erro:
        print("não deu para gravar o livro-razão:", erro)'''
NO_FOLDER_FSYNC_SAVE = '''    import os
    livro = load_effects(path)
    livro[tool_use_id] = record
    with open(str(path) + ".tmp", "w", encoding="utf-8") as arquivo:
        json.dump(livro, arquivo)
        arquivo.flush()
        os.fsync(arquivo.fileno())
    os.replace(str(path) + ".tmp", path)'''


SWALLOWING_SAVE, NO_FOLDER_FSYNC_SAVE = map(guarded, (SWALLOWING_SAVE, NO_FOLDER_FSYNC_SAVE))


def test_level_2_a_save_that_swallows_a_failed_swap_is_caught_by_that_check_alone(tmp_path, monkeypatch):
    failed = failures(run_level(ledger_cell(save=SWALLOWING_SAVE), 2, tmp_path, monkeypatch))
    assert set(failed) == {"n2.a_failed_ledger_swap_is_reported"}
    assert "voltou normalmente, como se tivesse gravado" in failed["n2.a_failed_ledger_swap_is_reported"]


def test_level_2_a_save_without_the_folder_fsync_is_caught_only_by_the_crash_states(tmp_path, monkeypatch):
    failed = failures(run_level(ledger_cell(save=NO_FOLDER_FSYNC_SAVE), 2, tmp_path, monkeypatch))
    assert set(failed) == {"n2.every_ledger_crash_state_loads"}
    words = failed["n2.every_ledger_crash_state_loads"]
    assert "depois que a gravação voltou" in words and "load_effects devolve o livro-razão anterior" in words
    assert "fsync da pasta" in words


@pytest.mark.slow
def test_level_2_save_that_forgets_other_records_fails(tmp_path, monkeypatch):
    failed = failures(run_level(ledger_cell(save=FORGETFUL_SAVE), 2, tmp_path, monkeypatch))
    assert "apagou o primeiro registro" in failed["n2.save_effect_round_trips"]
    assert "substituiu um livro-razão corrompido" in failed["n2.save_effect_refuses_corrupt"]


def test_level_2_save_that_starts_over_on_corruption_fails(tmp_path, monkeypatch):
    failed = failures(run_level(ledger_cell(save=FRESH_ON_CORRUPT_SAVE), 2, tmp_path, monkeypatch))
    assert set(failed) == {"n2.save_effect_refuses_corrupt"}


@pytest.mark.slow
def test_level_2_a_ledger_parsed_with_or_empty_fails_open_and_is_caught(tmp_path, monkeypatch):
    # null, [] , 0 and false are JSON values Python reads as false: `or {}` turns each into an empty ledger
    load = GOOD_LOAD.replace("livro = json.loads(texto)", "livro = json.loads(texto) or {}")
    failed = failures(run_level(ledger_cell(load=load), 2, tmp_path, monkeypatch))
    assert set(failed) == {"n2.corrupt_ledger_fails_closed"}
    assert "Com um livro-razão (o JSON null), load_effects devolveu {}" in failed["n2.corrupt_ledger_fails_closed"]


def test_level_2_a_record_check_on_status_alone_lets_malformed_receipts_through(tmp_path, monkeypatch):
    status_only = GOOD_LOAD[:GOOD_LOAD.index("    for chave, registro")] + \
        """    for chave, registro in livro.items():
        if not isinstance(registro, dict) or registro.get("status") not in RECEIPT_STATUSES:
            raise EffectsLedgerError(path, f"registro inválido: {chave}")
    return livro"""
    failed = failures(run_level(ledger_cell(load=status_only), 2, tmp_path, monkeypatch))
    assert set(failed) == {"n2.malformed_records_fail_closed"}
    assert "Com um registro sem tool no livro-razão" in failed["n2.malformed_records_fail_closed"]


def test_level_2_a_save_that_keeps_the_first_record_of_a_call_is_caught(tmp_path, monkeypatch):
    keeps_first = GOOD_SAVE.replace("livro[tool_use_id] = record", "livro.setdefault(tool_use_id, record)")
    failed = failures(run_level(ledger_cell(save=keeps_first), 2, tmp_path, monkeypatch))
    assert set(failed) == {"n2.save_effect_replaces_the_same_call"}
    assert "ainda diz intent" in failed["n2.save_effect_replaces_the_same_call"]


# ------------------------------------------------------------------ level 3

LESSON_3_RECONCILE = '''def reconcile(cp, effects_path):
    resultados = []
    for chamada in cp["pending_tool_use"] or []:
        if chamada["name"] in READ_ONLY_TOOLS:
            saida = execute_tool(chamada["name"], chamada["input"])
        else:
            saida = {"content": "Estado de execução desconhecido.", "is_error": True}
        resultados.append({"type": "tool_result", "tool_use_id": chamada["id"], **saida})
    if resultados:
        cp["messages"].append({"role": "user", "content": resultados})
    cp["pending_tool_use"] = None
    return cp
'''

RERUN_WITH_KEY = '''def reconcile(cp, effects_path):
    livro = load_effects(effects_path)
    resultados = []
    for chamada in cp["pending_tool_use"] or []:
        registro = livro.get(chamada["id"])
        if registro is not None and registro["status"] == "committed":
            saida = registro["result"]
        else:
            # "the key makes it safe", so every other call runs again
            saida = execute_and_record(chamada, effects_path)
        resultados.append({"type": "tool_result", "tool_use_id": chamada["id"], **saida})
    if resultados:
        cp["messages"].append({"role": "user", "content": resultados})
    cp["pending_tool_use"] = None
    return cp
'''

RUN_WITHOUT_KEY_OR_RECEIPT = '''def reconcile(cp, effects_path):
    livro = load_effects(effects_path)
    resultados = []
    for chamada in cp["pending_tool_use"] or []:
        registro = livro.get(chamada["id"])
        if registro is not None and registro["status"] in SETTLED_STATUSES:
            saida = registro["result"]
        elif chamada["name"] in READ_ONLY_TOOLS:
            saida = execute_tool(chamada["name"], chamada["input"])
        else:
            saida = confirmed_effect(chamada, registro, effects_path)
            if saida is None:
                saida = execute_tool(chamada["name"], chamada["input"])
        resultados.append({"type": "tool_result", "tool_use_id": chamada["id"], **saida})
    if resultados:
        cp["messages"].append({"role": "user", "content": resultados})
    cp["pending_tool_use"] = None
    return cp
'''


def test_level_3_solution_passes(tmp_path, monkeypatch):
    results = run_level(solution_notebook(), 3, tmp_path, monkeypatch)
    assert failures(results) == {}
    assert len(results) >= 20


def test_level_3_lesson_3_reconcile_ignores_the_ledger(tmp_path, monkeypatch):
    failed = failures(run_level(with_cell("ex4-08", LESSON_3_RECONCILE), 3, tmp_path, monkeypatch))
    assert "resultado registrado no recibo" in failed["n3.each_call_takes_its_way[recibo-committed]"]
    assert "nunca começou" in failed["n3.each_call_takes_its_way[nunca-comecou]"]
    assert "lição 3" in failed["n3.each_call_takes_its_way[nunca-comecou]"]
    assert "n3.world_counts[nunca-comecou]" in failed
    assert "n3.each_call_takes_its_way[tres-chamadas-no-turno]" in failed
    # What it does right stays right: nothing pending, and the message shape.
    assert "n3.closes_every_pending_call[recibo-committed]" not in failed


@pytest.mark.slow
def test_level_3_rerunning_everything_with_the_key_is_still_wrong(tmp_path, monkeypatch):
    failed = failures(run_level(with_cell("ex4-08", RERUN_WITH_KEY), 3, tmp_path, monkeypatch))
    assert "foi executada de novo" in failed["n3.each_call_takes_its_way[intencao-efeito-feito]"]
    assert "tinha recibo rejected" in failed["n3.each_call_takes_its_way[recusada-pela-valvula]"]
    # The key kept the outbox at one email: only the instrumented tools see the repeat.
    assert "n3.world_counts[intencao-efeito-feito]" not in failed


def test_level_3_running_without_key_or_receipt_fails(tmp_path, monkeypatch):
    failed = failures(run_level(with_cell("ex4-08", RUN_WITHOUT_KEY_OR_RECEIPT), 3, tmp_path, monkeypatch))
    assert "idempotency_key=None" in failed["n3.each_call_takes_its_way[nunca-comecou]"]
    assert "nenhum registro" in failed["n3.ledger_holds_receipts[nunca-comecou]"]
    assert "n3.ledger_holds_receipts[intencao-efeito-feito]" not in failed


# ------------------------------------------------------------------ level 4

RUNNER = "ex4-11"


def runner_edit(old, new):
    return with_edit(RUNNER, old, new)


NO_GATE = ('''        decisao = check_approval(chamada, ctx.approvals_path, ctx.approver, agora, ctx.approval_ttl)''',
           '''        decisao = approve()  # no gate''')
ASKS_POLICY_DIRECTLY = (
    '''        decisao = check_approval(chamada, ctx.approvals_path, ctx.approver, agora, ctx.approval_ttl)''',
    '''        decisao = ctx.approver(chamada) if ctx.approver else approve()''')
PENDING_AS_APPROVED = ('''        if decisao.verdict == "pending":
            raise WaitingForApproval(pending_approval_for(chamada, agora))
''', "")
IGNORES_DRY_RUN = (
    '''            saida = dry_run_output(chamada) if ctx.dry_run else execute_and_record(chamada, ctx.effects_path)''',
    '''            saida = execute_and_record(chamada, ctx.effects_path)''')
REJECTION_WITHOUT_RECEIPT = (
    '''            save_effect(ctx.effects_path, chamada["id"], make_receipt(chamada, saida, "rejected"))\n''', "")
APPROVAL_BEFORE_LEDGER = '''def run_tool_uses(tool_uses, ctx):
    plano = []
    for chamada in tool_uses:
        agora = ctx.clock()
        decisao = check_approval(chamada, ctx.approvals_path, ctx.approver, agora, ctx.approval_ttl)
        registro = load_effects(ctx.effects_path).get(chamada["id"])
        if registro is not None and registro["status"] in SETTLED_STATUSES:
            plano.append((chamada, registro["result"]))
        elif chamada["name"] in READ_ONLY_TOOLS:
            plano.append((chamada, None))
        elif decisao.verdict == "rejected":
            saida = {"content": f"recusada: {decisao.reason}", "is_error": True}
            save_effect(ctx.effects_path, chamada["id"], make_receipt(chamada, saida, "rejected"))
            plano.append((chamada, saida))
        elif decisao.verdict == "pending":
            raise WaitingForApproval(pending_approval_for(chamada, agora))
        else:
            plano.append((chamada, None))
    resultados = []
    for chamada, saida in plano:
        if saida is None and chamada["name"] in READ_ONLY_TOOLS:
            saida = execute_tool(chamada["name"], chamada["input"])
        elif saida is None:
            saida = dry_run_output(chamada) if ctx.dry_run else execute_and_record(chamada, ctx.effects_path)
        resultados.append({"type": "tool_result", "tool_use_id": chamada["id"], **saida})
    return resultados
'''
RECORD_BEFORE_EXECUTE = (
    '''            saida = dry_run_output(chamada) if ctx.dry_run else execute_and_record(chamada, ctx.effects_path)''',
    '''            save_effect(ctx.effects_path, chamada["id"],
                        make_receipt(chamada, {"content": "feito", "is_error": False}))
            saida = execute_tool(chamada["name"], chamada["input"], idempotency_key=chamada["id"])''')


def test_level_4_solution_passes(tmp_path, monkeypatch):
    assert failures(run_level(solution_notebook(), 4, tmp_path, monkeypatch)) == {}


def test_level_4_without_the_gate_fails(tmp_path, monkeypatch):
    failed = failures(run_level(runner_edit(*NO_GATE), 4, tmp_path, monkeypatch))
    assert "sem passar pela válvula" in failed["n4.order_and_keys"]
    assert "n4.rejection_is_an_error_result" in failed and "n4.pending_waits" in failed


def test_level_4_asking_the_policy_directly_ignores_recorded_approvals(tmp_path, monkeypatch):
    failed = failures(run_level(runner_edit(*ASKS_POLICY_DIRECTLY), 4, tmp_path, monkeypatch))
    assert set(failed) == {"n4.approval_bound_to_input_and_time", "n4.approval_uses_context_clock_and_ttl"}
    assert "use check_approval" in failed["n4.approval_bound_to_input_and_time"]
    assert failed["n4.approval_uses_context_clock_and_ttl"].startswith("Nada observado: nenhuma decisão")


def test_level_4_pending_treated_as_approved_fails(tmp_path, monkeypatch):
    failed = failures(run_level(runner_edit(*PENDING_AS_APPROVED), 4, tmp_path, monkeypatch))
    assert "pendente não é aprovado" in failed["n4.pending_waits"]
    assert "n4.approval_bound_to_input_and_time" in failed


def test_level_4_approval_before_ledger_fails(tmp_path, monkeypatch):
    failed = failures(run_level(with_cell(RUNNER, APPROVAL_BEFORE_LEDGER), 4, tmp_path, monkeypatch))
    assert set(failed) == {"n4.ledger_before_approval"}
    assert "consulte o livro-razão primeiro" in failed["n4.ledger_before_approval"]


@pytest.mark.slow
def test_level_4_ignoring_dry_run_touches_the_world(tmp_path, monkeypatch):
    failed = failures(run_level(runner_edit(*IGNORES_DRY_RUN), 4, tmp_path, monkeypatch))
    assert set(failed) == {"n4.dry_run_leaves_world"}


def test_level_4_rejection_must_leave_a_receipt(tmp_path, monkeypatch):
    failed = failures(run_level(runner_edit(*REJECTION_WITHOUT_RECEIPT), 4, tmp_path, monkeypatch))
    assert set(failed) == {"n4.rejection_is_an_error_result"}
    assert "rejected" in failed["n4.rejection_is_an_error_result"]


def test_level_4_recording_before_executing_fails(tmp_path, monkeypatch):
    # the student's own save_effect refuses a receipt with no intent before it: the state machine catches it
    failed = failures(run_level(runner_edit(*RECORD_BEFORE_EXECUTE), 4, tmp_path, monkeypatch))
    assert "LedgerTransitionError" in failed["n4.order_and_keys"]
    assert "sem registro para committed" in failed["n4.order_and_keys"]


# ------------------------------------------------------------------ fixtures


def test_fixture_validator_names_the_broken_field():
    exercise = load_exercise("exercise-4")
    [fixture] = [f for f in load_fixtures("exercise-4", (), exercise.validate_fixture) if f.name == "recibo-committed"]
    data = copy.deepcopy(fixture.data)
    assert exercise.validate_fixture(data) == []
    data["expect"]["ways"] = {"toolu_01TE2": "confirm"}
    assert any("expect.ways.toolu_01TE2" in p for p in exercise.validate_fixture(data))
    data["expect"]["ways"] = {"toolu_outro": "reuse"}
    assert any("ids pendentes" in p for p in exercise.validate_fixture(data))
    data["effects"]["toolu_01TE2"]["status"] = "feito"
    assert any("effects.toolu_01TE2" in p for p in exercise.validate_fixture(data))


# ------------------------------------------------------------------ other correct answers pass

OWN_WORDS_RECONCILE = '''def reconcile(cp, effects_path):
    livro = load_effects(effects_path)
    blocos = []
    for c in cp["pending_tool_use"] or []:
        reg = livro.get(c["id"])
        if reg and reg["status"] in ("committed", "rejected"):
            out = reg["result"]
        elif c["name"] in READ_ONLY_TOOLS:
            out = execute_tool(c["name"], c["input"])
        elif reg and find_effect(c["name"], c["id"]):
            out = {"content": "já feito antes da queda (confirmado pela chave)", "is_error": False}
            save_effect(effects_path, c["id"], make_receipt(c, out, "committed"))
        else:
            record_intent(effects_path, c)
            out = execute_tool(c["name"], c["input"], idempotency_key=c["id"])
            save_effect(effects_path, c["id"], make_receipt(c, out))
        blocos.append({"type": "tool_result", "tool_use_id": c["id"],
                       "content": out["content"], "is_error": out["is_error"]})
    if blocos:
        cp["messages"].append({"role": "user", "content": blocos})
    cp["pending_tool_use"] = None
    return cp
'''

OWN_WORDS_RUNNER = '''def run_tool_uses(tool_uses, ctx):
    decididas = {}
    for c in tool_uses:
        reg = load_effects(ctx.effects_path).get(c["id"])
        if reg and reg["status"] in ("committed", "rejected"):
            decididas[c["id"]] = reg["result"]
        elif c["name"] not in READ_ONLY_TOOLS and reg and find_effect(c["name"], c["id"]):
            out = {"content": "já feito (confirmado pela chave)", "is_error": False}
            save_effect(ctx.effects_path, c["id"], make_receipt(c, out, "committed"))
            decididas[c["id"]] = out
        elif c["name"] not in READ_ONLY_TOOLS:
            t = ctx.clock()
            d = check_approval(c, ctx.approvals_path, ctx.approver, t, ctx.approval_ttl)
            if d.verdict == "pending":
                raise WaitingForApproval(pending_approval_for(c, t))
            if d.verdict == "rejected":
                out = {"content": "recusada: " + d.reason, "is_error": True}
                save_effect(ctx.effects_path, c["id"], make_receipt(c, out, "rejected"))
                decididas[c["id"]] = out
    saidas = []
    for c in tool_uses:
        out = decididas.get(c["id"])
        if out is None and c["name"] in READ_ONLY_TOOLS:
            out = execute_tool(c["name"], c["input"])
        elif out is None and ctx.dry_run:
            out = {"content": "[simulação] nada foi executado", "is_error": False}
        elif out is None:
            record_intent(ctx.effects_path, c)
            out = execute_tool(c["name"], c["input"], idempotency_key=c["id"])
            save_effect(ctx.effects_path, c["id"], make_receipt(c, out))
        saidas.append({"type": "tool_result", "tool_use_id": c["id"], **out})
    return saidas
'''


@pytest.mark.slow
def test_level_3_and_4_answers_in_other_words_pass(tmp_path, monkeypatch):
    notebook = with_cell("ex4-08", OWN_WORDS_RECONCILE)
    [cell] = [c for c in notebook.cells if c.get("id") == RUNNER]
    cell.source = OWN_WORDS_RUNNER
    assert failures(run_level(notebook, 3, tmp_path, monkeypatch)) == {}
    assert failures(run_level(notebook, 4, tmp_path, monkeypatch)) == {}


@pytest.mark.slow
def test_level_2_a_save_that_writes_nothing_is_nothing_observed(tmp_path, monkeypatch):
    failed = failures(run_level(ledger_cell(save="    pass"), 2, tmp_path, monkeypatch))
    assert failed["n2.save_effect_is_atomic"].startswith("Nada observado: save_effect não gravou nada")
    assert failed["n2.save_effect_survives_a_torn_write"].startswith("Nada observado")


# ------------------------------------------------------------------ the hints ladder


def _hints(level: int) -> tuple[str, ...]:
    from grader.core.manifest import load_manifest

    return load_manifest().exercise("exercise-4").level(level).hints


def _required_terms() -> dict[int, set[str]]:
    """The concrete values the checks require, level by level, read from where the checks read them
    (the fixtures' ways, the ledger's statuses, the SMS provider's API), so following the hints'
    last rung literally cannot fail a check."""
    from harness.effects import RECEIPT_STATUSES, SETTLED_STATUSES

    exercise = load_exercise("exercise-4")
    ways = {way for fixture in load_fixtures("exercise-4", (), exercise.validate_fixture)
            for way in fixture.expect.get("ways", {}).values()}
    assert ways == {"reuse", "rerun", "confirm", "run"}  # every way a fixture tests
    return {
        2: {"EffectsLedgerError", "write_json_atomic", "load_effects", "json.loads(texto) or {}",
            "LedgerTransitionError", "None", *RECEIPT_STATUSES},
        4: {"check_approval", "ctx.clock()", "ctx.approval_ttl", '"pending"', '"rejected"', "WaitingForApproval",
            "pending_approval_for", "SETTLED_STATUSES", "READ_ONLY_TOOLS", "confirmed_effect",
            "execute_and_record", "ctx.dry_run", "dry_run_output", "execute_tool"},
        3: {f'"{way}"' for way in ways} | {"find_effect", "load_checkpoint", "save_checkpoint", "reconcile",
                                            *SETTLED_STATUSES, "READ_ONLY_TOOLS"},
        5: {"client_ref", "find_by_client_ref", "SmsApiError", "load_effects", "EffectsLedgerError",
            *(status for status in RECEIPT_STATUSES if status != "rejected"), "rejected", "is_error True"},
    }


def test_every_level_has_a_ladder_of_three_or_more_rungs():
    for level in range(1, 6):
        hints = _hints(level)
        assert len(hints) >= 3, level
        assert len(set(hints)) == len(hints), level


def test_the_hints_name_every_value_the_checks_require():
    for level, terms in _required_terms().items():
        text = " ".join(_hints(level))
        missing = sorted(term for term in terms if term not in text)
        assert not missing, f"exercise-4 level {level}: the hints never name {missing}"


def test_the_ladder_goes_from_general_to_specific():
    """The first rung gives the idea, not the answer (it names at most a third of the required
    values), and a later rung names more of them."""
    for level, terms in _required_terms().items():
        named = [sum(term in hint for term in terms) for hint in _hints(level)]
        assert named[0] <= len(terms) / 3, (level, named)
        assert max(named[1:]) > named[0], (level, named)
