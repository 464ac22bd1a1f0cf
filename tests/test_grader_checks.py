"""Exercise-3's checks, run in-process on edited copies of the solution notebook.

Every wrong answer is paired with the right answer on the same check ids, so each
check is shown failing and passing.
"""
from __future__ import annotations

import os

import pytest

from grader.checks.framework import CellProblemInfo
from tests.grader_support import (
    failing,
    make_notebook,
    namespace_of,
    run_checks,
    solution_notebook,
    with_definition,
    with_edit,
    write_new_fixtures,
)

ALL_FIXTURES = ["chamado-pendente", "cpA", "cpB", "cpC", "duas-leituras", "ferramenta-sem-classificacao",
                "grep-pendente", "incident-duplicate-email", "incidente-duas-chamadas", "leitura-e-email-juntos",
                "leitura-que-falha", "primeiro-turno"]
PENDING = [name for name in ALL_FIXTURES if name != "cpA"]
HIGH_IMPACT = ["chamado-pendente", "cpC", "ferramenta-sem-classificacao", "incident-duplicate-email",
               "incidente-duas-chamadas", "leitura-e-email-juntos"]  # every call outside READ_ONLY_TOOLS gets is_error
EMAIL_PENDING = ["cpC", "incident-duplicate-email", "incidente-duas-chamadas", "leitura-e-email-juntos"]
READ_ONLY = ["cpB", "duas-leituras", "grep-pendente", "leitura-e-email-juntos", "leitura-que-falha", "primeiro-turno"]
SEVERAL_PENDING = ["duas-leituras", "incidente-duas-chamadas", "leitura-e-email-juntos"]


@pytest.fixture(scope="module")
def solution_results(tmp_path_factory):
    monkeypatch = pytest.MonkeyPatch()
    try:
        namespace, problems = namespace_of(solution_notebook(), monkeypatch)
        assert problems == []
        yield run_checks(namespace, tmp_path_factory.mktemp("solution"))
    finally:
        monkeypatch.undo()


def grade_notebook(notebook, tmp_path, monkeypatch, **options):
    namespace, problems = namespace_of(notebook, monkeypatch)
    return run_checks(namespace, tmp_path / "checks", cell_problems=problems, **options)


@pytest.mark.slow
def test_solution_passes_every_check(solution_results):
    assert failing(solution_results) == {}
    # resume_action and every reconcile check per fixture; clears_pending only where something is pending;
    # the read-only and high-impact checks where the fixture has such calls; plus ROOT_CAUSE;
    # and level 3's two checks on each of the four calendar scenes.
    assert len(solution_results) == 12 + 1 + 4 * 12 + 11 + 6 + 6 + 2 * 4
    levels = {r["level"] for r in solution_results.values()}
    assert levels == {1, 2, 3}


# ------------------------------------------------------------------ level 1

RESUME_ALL_RERUN = '''def resume_action(cp):
    return {chamada["id"]: "rerun" for chamada in cp["pending_tool_use"] or []}
'''
RESUME_ALL_ERROR = '''def resume_action(cp):
    return {chamada["id"]: "is_error" for chamada in cp["pending_tool_use"] or []}
'''
RESUME_NONE_WHEN_EMPTY = '''def resume_action(cp):
    if not cp["pending_tool_use"]:
        return None
    return {c["id"]: ("rerun" if c["name"] in READ_ONLY_TOOLS else "is_error") for c in cp["pending_tool_use"]}
'''
RESUME_EXECUTES = '''def resume_action(cp):
    acoes = {}
    for c in cp["pending_tool_use"] or []:
        if c["name"] in READ_ONLY_TOOLS:
            execute_tool(c["name"], c["input"])
            acoes[c["id"]] = "rerun"
        else:
            acoes[c["id"]] = "is_error"
    return acoes
'''
RESUME_MUTATES = '''def resume_action(cp):
    pendentes = cp["pending_tool_use"] or []
    cp["pending_tool_use"] = None
    return {c["id"]: ("rerun" if c["name"] in READ_ONLY_TOOLS else "is_error") for c in pendentes}
'''


@pytest.mark.slow
@pytest.mark.parametrize(
    "source, failing_fixtures, words",
    [
        (RESUME_ALL_RERUN, HIGH_IMPACT, 'A ação é "is_error"'),
        (RESUME_ALL_ERROR, READ_ONLY, "é somente leitura"),
        (RESUME_NONE_WHEN_EMPTY, ["cpA"], "devolveu None"),
        (RESUME_EXECUTES, READ_ONLY, "resume_action executou"),
        (RESUME_MUTATES, PENDING, "alterou o checkpoint"),
    ],
    ids=["all-rerun", "all-is-error", "none-when-empty", "executes-tools", "mutates-checkpoint"],
)
def test_level_1_wrong_answers_fail_with_a_named_mistake(source, failing_fixtures, words, tmp_path, monkeypatch, solution_results):
    results = grade_notebook(with_definition("resume_action", source), tmp_path, monkeypatch, level=1)
    failed = failing(results)
    expected_ids = {f"n1.resume_action_decides[{name}]" for name in failing_fixtures}
    assert set(failed) == expected_ids
    for check_id in expected_ids:
        assert words in failed[check_id]
        assert solution_results[check_id]["status"] == "pass"


# ------------------------------------------------------------------ level 2: root cause


@pytest.mark.slow
@pytest.mark.parametrize(
    "answer, words",
    [('"A"', "alternativa A"), ('"C"', "alternativa C"), ('"D"', "alternativa D"),
     ('"E"', "uma das letras"), ("None", "Ainda não implementado")],
)
def test_wrong_root_cause_is_explained(answer, words, tmp_path, monkeypatch, solution_results):
    notebook = with_definition("ROOT_CAUSE", f"ROOT_CAUSE = {answer}")
    results = grade_notebook(notebook, tmp_path, monkeypatch, level=2)
    assert list(failing(results)) == ["n2.root_cause_identified"]
    assert words in results["n2.root_cause_identified"]["message"]
    assert solution_results["n2.root_cause_identified"]["status"] == "pass"


def test_root_cause_accepts_lowercase_and_spaces(tmp_path, monkeypatch):
    results = grade_notebook(with_definition("ROOT_CAUSE", 'ROOT_CAUSE = " b "'), tmp_path, monkeypatch, level=2)
    assert results["n2.root_cause_identified"]["status"] == "pass"


# ------------------------------------------------------------------ level 2: the six named mistakes

RERUN_EVERYTHING = '''def reconcile(cp):
    resultados = []
    for chamada in cp["pending_tool_use"] or []:
        saida = execute_tool(chamada["name"], chamada["input"])
        resultados.append({"type": "tool_result", "tool_use_id": chamada["id"], "content": saida["content"]})
    if resultados:
        cp["messages"].append({"role": "user", "content": resultados})
    cp["pending_tool_use"] = None
    return cp
'''
DELETE_ASSISTANT_MESSAGE = '''def reconcile(cp):
    if cp["pending_tool_use"]:
        cp["messages"].pop()
    cp["pending_tool_use"] = None
    return cp
'''
EXECUTE_AND_FLAG = '''def reconcile(cp):
    resultados = []
    for chamada in cp["pending_tool_use"] or []:
        saida = execute_tool(chamada["name"], chamada["input"])
        if chamada["name"] in READ_ONLY_TOOLS:
            resultados.append({"type": "tool_result", "tool_use_id": chamada["id"], "content": saida["content"]})
        else:
            resultados.append({"type": "tool_result", "tool_use_id": chamada["id"],
                               "content": "Estado de execução desconhecido.", "is_error": True})
    if resultados:
        cp["messages"].append({"role": "user", "content": resultados})
    cp["pending_tool_use"] = None
    return cp
'''

SIX_MISTAKES = {
    "re-runs every pending call": (
        lambda: with_definition("reconcile", RERUN_EVERYTHING),
        {f"n2.high_impact_not_repeated[{n}]" for n in EMAIL_PENDING},
        "reexecutou `send_email`",
    ),
    "deletes the assistant message": (
        lambda: with_definition("reconcile", DELETE_ASSISTANT_MESSAGE),
        {f"n2.keeps_history[{n}]" for n in PENDING},
        "mensagem do assistente com o tool_use foi apagada",
    ),
    "forgets to clear pending_tool_use": (
        lambda: with_edit("reconcile", '    cp["pending_tool_use"] = None\n', ""),
        {f"n2.clears_pending[{n}]" for n in PENDING},
        "esqueceu de limpar pending_tool_use",
    ),
    "wrong tool_use_id": (
        lambda: with_edit("reconcile", '"tool_use_id": chamada["id"]', '"tool_use_id": chamada["name"]'),
        {f"n2.answers_every_pending_call[{n}]" for n in PENDING},
        "responde ao id",
    ),
    "executes send_email and also sets is_error": (
        lambda: with_definition("reconcile", EXECUTE_AND_FLAG),
        {f"n2.high_impact_not_repeated[{n}]" for n in EMAIL_PENDING},
        "executou `send_email` e também marcou is_error",
    ),
    "resets turns": (
        lambda: with_edit("reconcile", "    return cp\n", '    cp["turns"] = 0\n    return cp\n'),
        {f"n2.keeps_counters[{n}]" for n in ALL_FIXTURES},
        "turns foi zerado",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("mistake", list(SIX_MISTAKES))
def test_each_named_mistake_fails_with_its_message_and_the_right_answer_passes(mistake, tmp_path, monkeypatch, solution_results):
    build, must_fail, words = SIX_MISTAKES[mistake]
    results = grade_notebook(build(), tmp_path, monkeypatch, level=2)
    failed = failing(results)
    assert must_fail <= set(failed), f"{mistake}: expected {sorted(must_fail)} among {sorted(failed)}"
    for check_id in must_fail:
        assert words in failed[check_id], failed[check_id]
        assert solution_results[check_id]["status"] == "pass"  # the control


@pytest.mark.slow
def test_the_mistakes_are_told_apart(tmp_path, monkeypatch):
    """Each mistake's own check fails; unrelated checks still pass (the checks are specific)."""
    rerun = failing(grade_notebook(with_definition("reconcile", RERUN_EVERYTHING), tmp_path / "a", monkeypatch, level=2))
    assert "n2.reruns_read_only[cpB]" not in rerun and "n2.keeps_history[cpC]" not in rerun
    assert "n2.reruns_read_only[leitura-e-email-juntos]" not in rerun
    turns = failing(grade_notebook(SIX_MISTAKES["resets turns"][0](), tmp_path / "b", monkeypatch, level=2))
    assert set(turns) == {f"n2.keeps_counters[{n}]" for n in ALL_FIXTURES}
    assert "era 9, ficou 0" in turns["n2.keeps_counters[cpC]"]


@pytest.mark.slow
def test_the_incident_leaves_exactly_one_email(tmp_path, monkeypatch):
    """A reconcile that sends through the harness without execute_tool is caught by the outbox count."""
    sneaky = RERUN_EVERYTHING.replace(
        'saida = execute_tool(chamada["name"], chamada["input"])',
        'import harness.tools as ferramentas\n'
        '        if chamada["name"] == "send_email":\n'
        '            ferramentas.send_email(**chamada["input"])\n'
        '            saida = {"content": "ok", "is_error": True}\n'
        '        else:\n'
        '            saida = execute_tool(chamada["name"], chamada["input"])',
    ).replace('"content": saida["content"]}', '"content": saida["content"], "is_error": saida["is_error"]}')
    results = grade_notebook(with_definition("reconcile", sneaky), tmp_path, monkeypatch, level=2)
    message = results["n2.high_impact_not_repeated[incident-duplicate-email]"]["message"]
    assert "a caixa de saída passou de 1 para 2 e-mails" in message


@pytest.mark.slow
def test_wrong_result_content_and_missing_results_are_named(tmp_path, monkeypatch):
    whole_dict = with_edit("reconcile", '"content": saida["content"],', '"content": saida,')
    results = grade_notebook(whole_dict, tmp_path / "a", monkeypatch, level=2)
    assert "não traz o resultado real" in results["n2.reruns_read_only[cpB]"]["message"]
    nothing = with_definition("reconcile", 'def reconcile(cp):\n    cp["pending_tool_use"] = None\n    return cp\n')
    results = grade_notebook(nothing, tmp_path / "b", monkeypatch, level=2)
    assert "Nenhum tool_result foi acrescentado" in results["n2.answers_every_pending_call[cpC]"]["message"]
    assert "HTTP 400" in results["n2.api_accepts_resumed_conversation[cpC]"]["message"]
    assert results["n2.answers_every_pending_call[cpA]"]["status"] == "pass"


def test_text_before_results_is_rejected(tmp_path, monkeypatch):
    notebook = with_edit(
        "reconcile",
        'cp["messages"].append({"role": "user", "content": resultados})',
        'cp["messages"].append({"role": "user", "content": [{"type": "text", "text": "retomando"}] + resultados})',
    )
    results = grade_notebook(notebook, tmp_path, monkeypatch, level=2)
    assert "devem vir antes de qualquer outro bloco" in results["n2.answers_every_pending_call[cpB]"]["message"]
    assert "HTTP 400" in results["n2.api_accepts_resumed_conversation[cpB]"]["message"]


# ------------------------------------------------------------------ isolation from student globals


@pytest.mark.slow
def test_student_globals_named_like_grader_names_change_nothing(tmp_path, monkeypatch, solution_results):
    shadows = (
        "CheckFailed = StudentProblem = Fixture = EXERCISE = ReconcileRun = None\n"
        "show = copy = json = deepcopy = anthropic = None\n"
        "validate_messages = lambda messages: None\n"
        "make_stub_client = MODEL = TOOL_SCHEMAS = None\n"
        "ROOT_CAUSE_ANSWER = 'A'\n"
    )
    notebook = solution_notebook()
    notebook.cells.append(make_notebook(shadows).cells[0])
    results = grade_notebook(notebook, tmp_path / "right", monkeypatch)
    assert {k: r["status"] for k, r in results.items()} == {k: r["status"] for k, r in solution_results.items()}
    # ...and a wrong answer is still caught by the API check despite the fake validate_messages.
    wrong = with_edit("reconcile", '"tool_use_id": chamada["id"]', '"tool_use_id": chamada["name"]', notebook)
    results = grade_notebook(wrong, tmp_path / "wrong", monkeypatch, level=2)
    message = results["n2.api_accepts_resumed_conversation[cpC]"]["message"]
    assert "A API recusaria a conversa retomada (HTTP 400)" in message and "toolu_01B" in message


def test_reconcile_imported_from_the_harness_is_not_accepted(tmp_path, monkeypatch):
    notebook = with_definition("reconcile", "from harness.resume import reconcile")
    results = grade_notebook(notebook, tmp_path, monkeypatch, level=2)
    assert "foi importada de `harness.resume`" in results["n2.clears_pending[cpB]"]["message"]


# ------------------------------------------------------------------ bad student code, in-process


def test_missing_function_is_named(tmp_path, monkeypatch):
    notebook = solution_notebook()
    from tests.grader_support import defining_cell

    notebook.cells.remove(defining_cell(notebook, "resume_action"))
    notebook.cells = [c for c in notebook.cells if "resume_action(cp)" not in c.source]
    results = grade_notebook(notebook, tmp_path, monkeypatch, level=1)
    for result in results.values():
        assert "`resume_action` não foi definida no notebook" in result["message"]


def test_missing_function_points_at_the_broken_cell(tmp_path, monkeypatch):
    namespace = {"__name__": "__main__"}
    problem = CellProblemInfo(7, "def reconcile(cp)", "SyntaxError", "expected ':' (line 1)", ["reconcile"])
    results = run_checks(namespace, tmp_path, level=2, cell_problems=[problem])
    message = results["n2.clears_pending[cpB]"]["message"]
    assert "a célula 7" in message and "SyntaxError" in message


@pytest.mark.slow
@pytest.mark.parametrize(
    "body, words",
    [
        ('    raise ValueError("quebrou aqui")', "`resume_action` levantou ValueError: quebrou aqui (linha 2 da célula"),
        ("    while True:\n        pass", "não terminou em 0.5 s"),
        ("    import sys\n    sys.exit(3)", "chamou sys.exit(3)"),
        ("    import os\n    os._exit(4)", "chamou os._exit(4)"),
        ('    raise NotImplementedError("Ainda não implementado: pense no pending_tool_use.")',
         "Ainda não implementado: `resume_action` ainda levanta NotImplementedError (o que falta: pense no pending_tool_use)."),
    ],
    ids=["raises", "infinite-loop", "sys-exit", "os-exit", "not-implemented"],
)
def test_bad_function_becomes_a_failed_check_with_a_message(body, words, tmp_path, monkeypatch):
    notebook = with_definition("resume_action", f"def resume_action(cp):\n{body}\n")
    notebook.cells = [c for c in notebook.cells if not c.source.startswith("for nome, cp in")]
    # Only the loop needs a short limit; the others end at once, and on a loaded machine a
    # half-second limit could cut them before they say what they did.
    limit = 0.5 if "while True" in body else 10
    results = grade_notebook(notebook, tmp_path, monkeypatch, level=1, check_timeout=limit)
    assert len(results) == len(ALL_FIXTURES)
    for result in results.values():
        assert result["status"] == "fail"
        assert words in result["message"], result["message"]
    assert os.getpid()  # still alive after os._exit


def test_student_output_is_captured_not_judged(tmp_path, monkeypatch):
    chatty = with_edit("resume_action", "    acoes = {}\n", '    print("decidindo", cp["turns"])\n    acoes = {}\n')
    results = grade_notebook(chatty, tmp_path, monkeypatch, level=1)
    assert failing(results) == {}
    assert "decidindo 7" in results["n1.resume_action_decides[cpB]"]["output"]


# ------------------------------------------------------------------ fixtures drive the checks


@pytest.mark.slow
def test_new_fixture_files_change_what_is_checked_without_code(tmp_path, monkeypatch, solution_results):
    folder = write_new_fixtures(tmp_path / "private")
    namespace, _ = namespace_of(solution_notebook(), monkeypatch)
    results = run_checks(namespace, tmp_path / "right", fixture_dirs=[folder])
    new_ids = set(results) - set(solution_results)
    assert "n2.reruns_read_only[pending-grep]" in new_ids
    assert "n2.high_impact_not_repeated[pending-create-ticket]" in new_ids
    assert "n1.resume_action_decides[pending-create-ticket]" in new_ids
    assert failing(results) == {}



# ------------------------------------------------------------------ parallel tool calls and names in code

ONE_MESSAGE_PER_RESULT = with_edit(
    "reconcile",
    '    if resultados:\n        cp["messages"].append({"role": "user", "content": resultados})',
    '    for resultado in resultados:\n        cp["messages"].append({"role": "user", "content": [resultado]})',
)


def test_one_user_message_per_tool_result_is_refused_like_the_api_would(tmp_path, monkeypatch, solution_results):
    failed = failing(grade_notebook(ONE_MESSAGE_PER_RESULT, tmp_path, monkeypatch, level=2))
    for name in SEVERAL_PENDING:
        api = failed[f"n2.api_accepts_resumed_conversation[{name}]"]
        assert "A API recusaria a conversa retomada (HTTP 400): messages." in api
        assert "were found without `tool_result` blocks immediately after" in api  # the API's own words
        assert "foram em mensagens separadas" in api and "numa única mensagem do usuário" in api
        assert "reconcile acrescentou 2 mensagens" in failed[f"n2.answers_every_pending_call[{name}]"]
        assert solution_results[f"n2.api_accepts_resumed_conversation[{name}]"]["status"] == "pass"
    # With one pending call the mistake is invisible, which is why the several-call fixtures exist.
    assert not any(name in check_id for check_id in failed for name in ("[cpB]", "[cpC]", "[primeiro-turno]"))


@pytest.mark.slow
@pytest.mark.parametrize("condition, tool, fixtures", [
    ('chamada["name"] != "send_email"', "create_ticket", ["chamado-pendente", "incidente-duas-chamadas"]),
    ('not chamada["name"] == "send_email"', "create_ticket", ["chamado-pendente", "incidente-duas-chamadas"]),
], ids=["not-send-email", "not-equal-send-email"])
def test_reconcile_that_names_send_email_instead_of_the_read_only_set_fails(
        condition, tool, fixtures, tmp_path, monkeypatch, solution_results):
    notebook = with_edit("reconcile", 'if chamada["name"] in READ_ONLY_TOOLS:', f"if {condition}:")
    failed = failing(grade_notebook(notebook, tmp_path, monkeypatch, level=2))
    for name in fixtures:
        message = failed[f"n2.high_impact_not_repeated[{name}]"]
        assert f"reexecutou `{tool}`" in message and "decida pela lista READ_ONLY_TOOLS" in message
        assert solution_results[f"n2.high_impact_not_repeated[{name}]"]["status"] == "pass"


@pytest.mark.slow
def test_reconcile_that_reruns_only_read_file_fails_on_a_pending_grep(tmp_path, monkeypatch):
    notebook = with_edit("reconcile", 'if chamada["name"] in READ_ONLY_TOOLS:', 'if chamada["name"] == "read_file":')
    failed = failing(grade_notebook(notebook, tmp_path, monkeypatch, level=2))
    assert "`grep` (toolu_01G) não foi reexecutada" in failed["n2.reruns_read_only[grep-pendente]"]
    assert "decida pela lista READ_ONLY_TOOLS" in failed["n2.reruns_read_only[grep-pendente]"]
    assert "n2.reruns_read_only[primeiro-turno]" in failed  # list_dir is read-only too


@pytest.mark.slow
def test_resume_action_that_names_send_email_fails_level_1(tmp_path, monkeypatch):
    source = RESUME_ALL_RERUN.replace('"rerun" for chamada', '("is_error" if chamada["name"] == "send_email" else "rerun") for chamada')
    failed = failing(grade_notebook(with_definition("resume_action", source), tmp_path, monkeypatch, level=1))
    assert set(failed) == {"n1.resume_action_decides[chamado-pendente]", "n1.resume_action_decides[incidente-duas-chamadas]",
                           "n1.resume_action_decides[ferramenta-sem-classificacao]"}
    assert "`create_ticket` (toolu_01T) é de alto impacto" in failed["n1.resume_action_decides[chamado-pendente]"]


def test_an_exception_without_a_message_is_named_cleanly(tmp_path, monkeypatch):
    from grader.core.execution import describe_cell_problem

    notebook = with_definition("resume_action", "def resume_action(cp):\n    raise TimeoutError()\n")
    notebook.cells = [c for c in notebook.cells if not c.source.startswith("for nome, cp in")]
    message = grade_notebook(notebook, tmp_path, monkeypatch, level=1)["n1.resume_action_decides[cpA]"]["message"]
    assert message.startswith("`resume_action` levantou TimeoutError (linha 2 da célula") and ": ." not in message
    cell = describe_cell_problem(5, "espera()", "TimeoutError", "", False, 60)
    assert cell == "A célula 5 (`espera()`) falhou com TimeoutError."
    assert describe_cell_problem(5, "x", "ValueError", "ruim", False, 60).endswith("falhou com ValueError: ruim.")


def test_only_a_function_that_still_ends_in_its_stub_counts_as_unwritten(tmp_path, monkeypatch):
    import importlib

    from grader.checks.framework import stub_text

    (tmp_path / "student_code.py").write_text(
        'def untouched(cp):\n    """Docstring."""\n    raise NotImplementedError("Ainda não implementado: decidir.")\n\n'
        'def setup_then_stub(cp):\n    calls = cp["pending"]\n    raise NotImplementedError("Ainda não implementado: x")\n\n'
        'def returns_before_stub(cp):\n    if cp:\n        return 1\n    raise NotImplementedError("Ainda não implementado: x")\n\n'
        'def own_not_implemented(cp):\n    raise NotImplementedError("falta o caso B")\n\n'
        'def written(cp):\n    return [c for c in cp]\n',
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("student_code")
    assert stub_text(module.untouched) == "Ainda não implementado: decidir."
    assert stub_text(module.setup_then_stub) == "Ainda não implementado: x"
    assert stub_text(module.returns_before_stub) is None  # written code that can return: judge it by calling
    assert stub_text(module.own_not_implemented) is None
    assert stub_text(module.written) is None
    assert stub_text(len) is None and stub_text(lambda: 1) is None
