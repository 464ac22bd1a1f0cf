"""The shared fixture shapes are JSON Schema (fixture_shape.CHECKPOINT_SCHEMA,
WORKSPACE_SCHEMA, scripted_run_schema) and exercise-3's whole fixture is FIXTURE_SCHEMA:
each hostile input is reported, every problem at once, by its Portuguese message."""
from __future__ import annotations

import json

import pytest

from grader.checks import fixture_shape
from grader.checks.exercise_1.fixtures import validate_fixture as validate_exercise_1
from grader.checks.exercise_2.fixtures import validate_fixture as validate_exercise_2
from grader.checks.exercise_3.fixtures import FIXTURE_SCHEMA, validate_fixture
from grader.checks.exercise_4.fixtures import validate_fixture as validate_exercise_4
from grader.checks.exercise_5.fixtures import validate_fixture as validate_exercise_5
from grader.checks.exercise_6.fixtures import validate_fixture as validate_exercise_6
from tests.grader_support import ROOT

FIXTURES = ROOT / "grader" / "fixtures"
DELETED = object()  # with_change(path, DELETED): the field is removed


def shipped(exercise: str, name: str) -> dict:
    return json.loads((FIXTURES / exercise / f"{name}.json").read_text(encoding="utf-8"))


BASE = shipped("exercise-3", "cpA")


def with_change(path: str, value, base: dict = BASE):
    """A copy of ``base`` with the field at ``path`` (dotted; "|" splits keys holding dots or
    slashes) set to ``value``, or removed when ``value`` is DELETED."""
    data = json.loads(json.dumps(base))
    *parents, last = path.split("|" if "|" in path else ".")
    target = data
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is DELETED:
        del target[last]
    else:
        target[last] = value
    return data


def assert_reported(validate, base: dict, path: str, value, message: str) -> None:
    assert validate(base) == []
    problems = validate(with_change(path, value, base))
    assert any(message in problem for problem in problems), problems


@pytest.mark.parametrize("path, value, message", [
    ("checkpoint.turns", True, "campo `checkpoint.turns`: deveria ser um inteiro >= 0 (é True)"),
    ("checkpoint.turns", 1.0, "campo `checkpoint.turns`: deveria ser um inteiro >= 0 (é 1.0)"),
    ("checkpoint.tokens_used", -1, "campo `checkpoint.tokens_used`: deveria ser um inteiro >= 0 (é -1)"),
    ("checkpoint.task", "  ", "campo `checkpoint.task`: deveria ser um texto não vazio (é '  ')"),
    ("checkpoint.version", True, "campo `checkpoint.version`: deveria ser 1 (é True)"),
    ("checkpoint.version", 1.0, "campo `checkpoint.version`: deveria ser 1 (é 1.0)"),
    ("checkpoint.version", "1", "campo `checkpoint.version`: deveria ser 1 (é '1')"),
    ("checkpoint.messages", [], "campo `checkpoint.messages`: deveria ser uma lista não vazia de mensagens"),
    ("checkpoint.pending_tool_use", [], "campo `checkpoint.pending_tool_use`: deveria ser null ou uma lista não vazia"),
    ("description", "", "campo `description`: deveria ser um texto não vazio (é '')"),
    ("workspace", {"files": {"/etc/passwd": "x"}}, "campo `workspace.files`: o caminho '/etc/passwd' precisa ficar dentro da sandbox"),
    ("workspace", {"files": {"a/../../fora": "x"}}, "campo `workspace.files`: o caminho 'a/../../fora' precisa ficar dentro da sandbox"),
    ("workspace", {"files": {"notas.md": 3}}, "campo `workspace.files.notas.md`: deveria ser um texto (é 3)"),
    ("workspace", {"outbox": [1]}, "campo `workspace.outbox[0]`: deveria ser um objeto (é 1)"),
    ("workspace", {"mailbox": []}, "campo `workspace.mailbox`: chave desconhecida (aceitas: files, outbox, tickets)"),
    ("expect", {"resume_action": {}, "tickets_after": False}, "campo `expect.tickets_after`: deveria ser um inteiro >= 0 (é False)"),
    ("expect", {"resume_action": []}, "campo `expect.resume_action`: deveria mapear tool_use_id"),
])
def test_each_hostile_value_is_named_by_field(path, value, message):
    assert_reported(validate_fixture, BASE, path, value, message)


@pytest.mark.parametrize("version", [True, 1.0, 2, "1", None])
def test_a_wrong_checkpoint_version_is_one_problem(version):
    assert validate_fixture(with_change("checkpoint.version", version)) == [
        f"campo `checkpoint.version`: deveria ser 1 (é {version!r})"]


def test_a_relative_path_inside_the_sandbox_is_fine_and_names_with_dots_are_not_parents():
    data = with_change("workspace", {"files": {"docs/..notas.md": "x", "a/b.txt": "y"}})
    assert [p for p in validate_fixture(data) if "workspace" in p] == []


SANDBOX = "precisa ficar dentro da sandbox: "


@pytest.mark.parametrize("path, reason", [
    ("", "o caminho está vazio"),
    (".", "tem uma parte . ou .."),
    ("notes/./a.md", "tem uma parte . ou .."),
    ("notes/", "termina com /"),
    ("notes//a.md", "tem uma parte vazia"),
    ("a\x00b.md", "tem um caractere NUL"),
    ("notes\\a.md", "tem uma barra invertida"),
    ("C:/a.md", "começa com uma letra de unidade"),
    ("c:a.md", "começa com uma letra de unidade"),
    ("a" * 256, "tem uma parte de 256 bytes (o máximo é 255)"),
    ("ç" * 128, "tem uma parte de 256 bytes (o máximo é 255)"),  # 128 characters, 2 bytes each
    ("/".join(["a" * 200] * 6), "tem 1205 bytes (o máximo é 1024)"),  # every part short, the whole too long
    ("\ud800.md", "não é um texto Unicode válido"),
    (7, "deveria ser um texto (entre aspas)"),  # YAML reads `7: x` with a number for key
])
def test_a_workspace_path_that_cannot_be_written_in_the_sandbox_is_refused(path, reason):
    problems = validate_fixture(with_change("workspace", {"files": {path: "x", "notes/ok.md": "y"}}))
    assert len(problems) == 1 and SANDBOX in problems[0] and reason in problems[0], problems
    assert problems[0].startswith("campo `workspace.files`: o caminho ") and len(problems[0]) < 200


@pytest.mark.parametrize("files, message", [
    ({"a.md": "x", "a.md/sub": "y"}, "campo `workspace.files`: o caminho 'a.md/sub' fica dentro de 'a.md', que é um arquivo"),
    ({"notes/a/b.md": "x", "notes": "y"}, "campo `workspace.files`: o caminho 'notes/a/b.md' fica dentro de 'notes', que é um arquivo"),
    ({"Notas.md": "x", "notas.md": "y"}, "campo `workspace.files`: o caminho 'notas.md' é o mesmo arquivo que 'Notas.md'"),
    ({"NOTES/a.md": "x", "notes": "y"}, "campo `workspace.files`: o caminho 'NOTES/a.md' fica dentro de 'notes', que é um arquivo"),
    ({"caf\u00e9.md": "x", "cafe\u0301.md": "y"},  # one accent, two Unicode forms
     "campo `workspace.files`: o caminho 'cafe\u0301.md' é o mesmo arquivo que 'caf\u00e9.md' no macOS e no Windows"),
])
def test_no_workspace_path_is_both_a_file_and_a_folder_or_the_same_file_twice(files, message):
    assert_reported(validate_fixture, BASE, "workspace", {"files": files}, message)


def test_every_exercise_with_a_workspace_holds_its_paths_to_the_same_rule():
    from grader.checks.exercise_1.fixtures import validate_fixture as exercise_1
    from grader.checks.exercise_2.fixtures import validate_fixture as exercise_2

    for validate, base in ((exercise_1, shipped("exercise-1", "single-tool")), (exercise_2, shipped("exercise-2", "run-tool-error")),
                           (validate_exercise_4, shipped("exercise-4", "recibo-committed")),
                           (validate_exercise_5, shipped("exercise-5", "equipe-completa"))):
        assert_reported(validate, base, "workspace", {"files": {"notes/": "x"}},
                        "campo `workspace.files`: o caminho 'notes/' precisa ficar dentro da sandbox: termina com /")


TWO_PENDING = shipped("exercise-3", "incidente-duas-chamadas")  # user, assistant, user, assistant with 2 tool_use


def conversation(*changes):
    """TWO_PENDING's checkpoint with each (message index, change) applied to a copy."""
    data = json.loads(json.dumps(TWO_PENDING))
    for index, change in changes:
        change(data["checkpoint"]["messages"][index])
    return data


@pytest.mark.parametrize("data, message", [
    # a pending list that leaves out a tool_use of the last message: the API refuses the resumed conversation
    (with_change("checkpoint.pending_tool_use", TWO_PENDING["checkpoint"]["pending_tool_use"][:1], TWO_PENDING),
     "campo `checkpoint.pending_tool_use`: falta o tool_use 'toolu_01TE3' (create_ticket) da última mensagem: "
     "cada tool_use dela ainda sem tool_result é uma chamada pendente"),
    (with_change("checkpoint.pending_tool_use", TWO_PENDING["checkpoint"]["pending_tool_use"] * 2, TWO_PENDING),
     "campo `checkpoint.pending_tool_use[2].id`: 'toolu_01TE2' já está listado (cada chamada pendente aparece uma vez)"),
    (conversation((0, lambda m: m.update(role="assistant"))),
     "campo `checkpoint.messages[0].role`: a conversa começa com uma mensagem do usuário (é 'assistant')"),
    (conversation((2, lambda m: m.update(role="assistant"))),
     "campo `checkpoint.messages[2].role`: os papéis se alternam: depois de uma mensagem 'assistant' vem uma 'user' (é 'assistant')"),
    (conversation((2, lambda m: m["content"][0].update(tool_use_id="toolu_OUTRO"))),
     "campo `checkpoint.messages[2].content[0].tool_use_id`: 'toolu_OUTRO' não é o id de nenhum tool_use da mensagem "
     "anterior do assistente (os ids ali: ['toolu_01TE1'])"),
    (conversation((2, lambda m: m.update(content="li a ata"))),
     "campo `checkpoint.messages[1].content[1]`: o tool_use 'toolu_01TE1' não tem tool_result na mensagem seguinte"),
    # a pending call reusing an earlier turn's id: which call does a tool_result answer?
    (conversation((1, lambda m: m["content"][1].update(id="toolu_01TE2")), (2, lambda m: m["content"][0].update(tool_use_id="toolu_01TE2"))),
     "campo `checkpoint.messages[3].content[1].id`: o id 'toolu_01TE2' já é de um tool_use anterior "
     "(checkpoint.messages[1].content[1]): cada chamada tem o seu id"),
])
def test_the_conversation_is_one_the_api_accepts_once_the_pending_calls_are_answered(data, message):
    assert validate_fixture(TWO_PENDING) == []
    problems = validate_fixture(data)
    assert any(message in problem for problem in problems), problems


def test_every_checkpoint_holds_its_conversation_to_the_same_rules():
    scene = shipped("exercise-4", "tres-chamadas-no-turno")
    assert_reported(validate_exercise_4, scene, "checkpoint.pending_tool_use", scene["checkpoint"]["pending_tool_use"][1:],
                    "campo `checkpoint.pending_tool_use`: falta o tool_use 'toolu_04RD1' (read_file) da última mensagem")
    point = "checkpoints/turn-001-A.json"
    assert_reported(validate_exercise_5, shipped("exercise-5", "equipe-completa"), f"run_dir|{point}|messages|0|role", "assistant",
                    f"campo `run_dir.{point}.messages[0].role`: a conversa começa com uma mensagem do usuário")


def test_every_problem_is_reported_at_once():
    data = with_change("description", 7)
    data["checkpoint"]["turns"] = -2
    data["expect"]["surpresa"] = 1
    assert validate_fixture(data) == [
        "campo `description`: deveria ser um texto não vazio (é 7)",
        "campo `checkpoint.turns`: deveria ser um inteiro >= 0 (é -2)",
        "campo `expect.surpresa`: chave desconhecida (aceitas: resume_action, reconcile_mcp, outbox_after, tickets_after)",
    ]


def test_a_message_with_a_blockless_content_and_a_stranger_role():
    data = with_change("checkpoint.messages", [{"role": "system", "content": [{"text": "oi"}]}])
    problems = validate_fixture(data)
    assert "campo `checkpoint.messages[0].role`: deveria ser \"user\" ou \"assistant\" (é 'system')" in problems
    assert "campo `checkpoint.messages[0].content[0].type`: cada bloco precisa de um campo 'type' (texto)" in problems


def test_a_scripted_run_is_checked_by_its_schema_before_its_responses():
    run = {"description": "d", "kind": "run", "task": "t", "responses": [], "max_turns": 0,
           "expect": {"model_calls": 1, "tokens_used": 1, "status": "completed", "extra": 1}}
    assert validate_exercise_1(run) == [
        "campo `responses`: deveria ser uma lista não vazia de respostas",
        "campo `max_turns`: deveria ser um inteiro >= 1 (é 0)",
        "campo `expect.extra`: chave desconhecida (aceitas: model_calls, tokens_used, status)",
    ]
    run.update(responses=[{"stop_reason": "nunca"}], max_turns=1)
    del run["expect"]["extra"]
    assert [p.split(":")[0] for p in validate_exercise_1(run)] == ["campo `responses[0]`"]


def test_the_schemas_are_draft_2020_12():
    from jsonschema import Draft202012Validator

    for schema in (FIXTURE_SCHEMA, fixture_shape.CHECKPOINT_SCHEMA, fixture_shape.WORKSPACE_SCHEMA,
                   fixture_shape.scripted_run_schema({})):
        Draft202012Validator.check_schema(schema)


# ------------------------------------------------------------ exercise-1: classification

CLASSIFICATION = shipped("exercise-1", "memory-vs-run-state")
ITEM = next(iter(CLASSIFICATION["items"]))


@pytest.mark.parametrize("path, value, message", [
    ("kind", "classificacao", 'campo `kind`: deveria ser "classification" ou "run" ou "tools_run" (é \'classificacao\')'),
    ("kind", DELETED, "campo `kind`: obrigatório"),
    ("items", {}, "campo `items`: obrigatório, deveria mapear item -> {answer, why}"),
    ("items", ["notes_md"], "campo `items`: obrigatório, deveria mapear item -> {answer, why}"),
    (f"items.{ITEM}", "memória", f"campo `items.{ITEM}`: deveria ser um objeto {{answer, why}}"),
    (f"items.{ITEM}.answer", "memoria", f'campo `items.{ITEM}.answer`: deveria ser "memória" ou "estado de execução" (é \'memoria\')'),
    (f"items.{ITEM}.answer", True, f"campo `items.{ITEM}.answer`: deveria ser"),
    (f"items.{ITEM}.why", "  ", f"campo `items.{ITEM}.why`: obrigatório: a explicação mostrada quando o item está errado"),
    (f"items.{ITEM}.why", DELETED, f"campo `items.{ITEM}.why`: obrigatório: a explicação mostrada"),
    (f"items.{ITEM}.porque", "x", f"campo `items.{ITEM}.porque`: chave desconhecida (aceitas: answer, why)"),
    ("description", 3, "campo `description`: deveria ser um texto não vazio (é 3)"),
    ("responses", [], "campo `responses`: chave desconhecida (aceitas: description, kind, items)"),
])
def test_exercise_1_classification_hostile_values(path, value, message):
    assert_reported(validate_exercise_1, CLASSIFICATION, path, value, message)


# ------------------------------------------------------------------- exercise-2: load

LOAD = shipped("exercise-2", "load-truncated")
LOAD_VALID = shipped("exercise-2", "load-valid")
FILE_SPEC = 'campo `file`: obrigatório: {"absent": true}, {"folder": true}, {"json": ...} ou {"text": "..."}'


@pytest.mark.parametrize("path, value, message", [
    ("kind", "carregar", 'campo `kind`: deveria ser "load" ou "run" ou "budget" (é \'carregar\')'),
    ("file", {}, FILE_SPEC),
    ("file", {"drop_last_bytes": 1}, FILE_SPEC),
    ("file", "checkpoint.json", FILE_SPEC),
    ("file.drop_last_bytes", True, "campo `file.drop_last_bytes`: deveria ser um inteiro >= 0 (é True)"),
    ("file.drop_last_bytes", 1.0, "campo `file.drop_last_bytes`: deveria ser um inteiro >= 0 (é 1.0)"),
    ("file.drop_last_bytes", -1, "campo `file.drop_last_bytes`: deveria ser um inteiro >= 0 (é -1)"),
    ("file.text", 3, "campo `file.text`: deveria ser um texto (é 3)"),
    ("file.absent", False, "campo `file.absent`: deveria ser true (o arquivo não existe)"),
    ("file.jsn", {}, "campo `file.jsn`: chave desconhecida (aceitas: absent, folder, json, text, drop_last_bytes)"),
    ("file", {"folder": False}, "campo `file.folder`: deveria ser true (uma pasta no lugar do arquivo)"),
    ("expect.load_checkpoint", "none", 'campo `expect.load_checkpoint`: deveria ser "None" ou "checkpoint" ou "CheckpointError" (é \'none\')'),
    ("expect.load_checkpoint", DELETED, "campo `expect.load_checkpoint`: obrigatório"),
    ("expect.mentions", "versão", "campo `expect.mentions`: deveria ser uma lista de textos"),
    ("expect.mentions", ["  "], "campo `expect.mentions[0]`: deveria ser um texto não vazio (é '  ')"),
    ("expect.mencoes", [], "campo `expect.mencoes`: chave desconhecida (aceitas: load_checkpoint, mentions)"),
    ("expect.load_checkpoint", "None", "campo `expect.load_checkpoint`: None só quando o arquivo não existe (file.absent)"),
    ("expect.load_checkpoint", "checkpoint", 'campo `file`: um checkpoint válido se descreve com {"json": {...}}'),
    ("description", "", "campo `description`: deveria ser um texto não vazio (é '')"),
])
def test_exercise_2_load_hostile_values(path, value, message):
    assert_reported(validate_exercise_2, LOAD, path, value, message)


PAUSED_RUN = shipped("exercise-2", "run-pause-turn")  # tool_use, pause_turn, tool_use, end_turn


@pytest.mark.parametrize("path, value, message", [
    ("expect.status", "finished", 'campo `expect.status`: deveria ser "completed" ou "refused" ou "failed" ou "running"'),
    ("expect.status", DELETED, "campo `expect.status`: obrigatório"),
    ("expect.status", "running", "campo `expect.status`: pelo roteiro, um loop correto termina com status 'completed' (está 'running')"),
    # a pause_turn is one save and the run goes on: counting it as the end would say 2
    ("expect.saves", 2, "campo `expect.saves`: pelo roteiro, um loop correto grava 6 vezes (está 2)"),
    ("max_turns", 2, "campo `expect.status`: pelo roteiro, um loop correto termina com status 'running' (está 'completed')"),
    ("responses.1.content", [{"type": "tool_use", "id": "toolu_X", "name": "list_dir", "input": {"path": "notes"}}],
     'campo `responses[1].stop_reason`: é "pause_turn", mas a resposta tem tool_use'),
    ("responses.0.content", [{"type": "text", "text": "Vou listar."}],
     'campo `responses[0].stop_reason`: é "tool_use", mas a resposta não tem nenhum bloco tool_use'),
])
def test_exercise_2_runs_count_a_pause_turn_and_say_the_final_status(path, value, message):
    assert_reported(validate_exercise_2, PAUSED_RUN, path, value, message)


def test_exercise_2_a_checkpoint_outcome_needs_an_object_in_json():
    assert_reported(validate_exercise_2, LOAD_VALID, "file.json", [1], 'campo `file`: um checkpoint válido se descreve com {"json": {...}}')


# ------------------------------------------------------------------ exercise-4: crash scenes

SCENE = shipped("exercise-4", "recibo-committed")
CALL = "toolu_01TE2"
RECEIPT = "um recibo precisa de {content: texto, is_error: bool}"


@pytest.mark.parametrize("path, value, message", [
    (f"effects.{CALL}.status", "feito", f'campo `effects.{CALL}.status`: deveria ser "intent" ou "committed" ou "rejected" ou "unknown" (é \'feito\')'),
    (f"effects.{CALL}.result", DELETED, f"campo `effects.{CALL}.result`: {RECEIPT}"),
    (f"effects.{CALL}.result", None, f"campo `effects.{CALL}.result`: {RECEIPT}"),
    (f"effects.{CALL}.result", {"content": 1, "is_error": False}, f"campo `effects.{CALL}.result.content`: deveria ser um texto (é 1)"),
    (f"effects.{CALL}.result", {"content": "x", "is_error": 0}, f"campo `effects.{CALL}.result.is_error`: deveria ser true ou false (é 0)"),
    (f"effects.{CALL}.tool", DELETED, f"campo `effects.{CALL}.tool`: obrigatório"),
    (f"effects.{CALL}.recibo", {}, f"campo `effects.{CALL}.recibo`: chave desconhecida (aceitas: tool, input_hash, status, result, recorded_at)"),
    ("effects.toolu_X", [], "campo `effects.toolu_X`: deveria ser um registro {tool, input_hash, status, result, recorded_at}"),
    ("effects", None, "campo `effects`: deveria ser um objeto tool_use_id -> registro"),
    ("expect.ways", [], "campo `expect.ways`: deveria mapear tool_use_id -> reuse | rerun | run | confirm"),
    ("expect.ways", DELETED, "campo `expect.ways`: obrigatório"),
    (f"expect.ways.{CALL}", "pular", f'campo `expect.ways.{CALL}`: deveria ser "reuse" ou "rerun" ou "run" ou "confirm" (é \'pular\')'),
    ("expect.outbox_after", 1.0, "campo `expect.outbox_after`: deveria ser um inteiro >= 0 (é 1.0)"),
    ("expect.outbox_after", True, "campo `expect.outbox_after`: deveria ser um inteiro >= 0 (é True)"),
    ("expect.tickets_after", -1, "campo `expect.tickets_after`: deveria ser um inteiro >= 0 (é -1)"),
    ("expect.surpresa", 1, "campo `expect.surpresa`: chave desconhecida (aceitas: ways, outbox_after, tickets_after)"),
    ("checkpoint.turns", True, "campo `checkpoint.turns`: deveria ser um inteiro >= 0 (é True)"),
    ("checkpoint", DELETED, "campo `checkpoint`: obrigatório"),
    ("workspace", {"files": {"../x": ""}}, "campo `workspace.files`: o caminho '../x' precisa ficar dentro da sandbox"),
    ("description", " ", "campo `description`: deveria ser um texto não vazio (é ' ')"),
    # the rules a schema cannot say, once the shape is fine
    (f"expect.ways.{CALL}", "confirm", f'campo `expect.ways.{CALL}`: "confirm" pede um registro intent ou unknown em effects'),
    (f"effects.{CALL}.status", "intent", f'campo `expect.ways.{CALL}`: "reuse" pede um recibo committed ou rejected em effects'),
    ("expect.ways", {"toolu_outro": "rerun"}, "campo `expect.ways`: as chaves deveriam ser exatamente os ids pendentes ['toolu_01TE2']"),
    ("checkpoint.pending_tool_use", None, "campo `checkpoint.pending_tool_use`: é null, mas a última mensagem tem tool_use"),
])
def test_exercise_4_hostile_values(path, value, message):
    assert_reported(validate_exercise_4, SCENE, path, value, message)


NEVER_STARTED = shipped("exercise-4", "nunca-comecou")  # send_email pending, nothing in the ledger
READ_AND_REFUSAL = shipped("exercise-4", "recusa-gravada-e-leitura")  # read_file and a rejected send_email


@pytest.mark.parametrize("base, path, value, message", [
    # a high-impact call labelled as a read: a reconcile running it with no key and no receipt would pass
    (NEVER_STARTED, "expect.ways.toolu_01TE2", "rerun",
     'campo `expect.ways.toolu_01TE2`: "rerun" é só para leituras (READ_ONLY_TOOLS), e send_email é de alto impacto'),
    (READ_AND_REFUSAL, "expect.ways.toolu_04RD2", "run",
     'campo `expect.ways.toolu_04RD2`: "run" é só para alto impacto (HIGH_IMPACT_TOOLS), e read_file é de leitura'),
    # a receipt in the ledger settles the call whatever its tool
    (READ_AND_REFUSAL, "expect.ways.toolu_04EM2", "run",
     'campo `expect.ways.toolu_04EM2`: há um recibo rejected em effects para esta chamada: a via é "reuse"'),
])
def test_exercise_4_each_way_agrees_with_the_tools_kind(base, path, value, message):
    assert_reported(validate_exercise_4, base, path, value, message)


def test_exercise_4_an_unclassified_tool_has_no_way_but_a_receipt():
    data = with_change("expect.ways.toolu_01TE2", "run", NEVER_STARTED)
    for block in (data["checkpoint"]["messages"][-1]["content"][-1], data["checkpoint"]["pending_tool_use"][0]):
        block["name"] = "apagar_tudo"
    assert validate_exercise_4(data) == [
        'campo `expect.ways.toolu_01TE2`: "run" é só para alto impacto (HIGH_IMPACT_TOOLS), e apagar_tudo não '
        'está em READ_ONLY_TOOLS nem em HIGH_IMPACT_TOOLS']


def test_exercise_4_an_intent_record_has_a_null_result():
    assert validate_exercise_4(shipped("exercise-4", "intencao-sem-efeito")) == []


# ----------------------------------------------------------------- exercise-5: run folders

RUN = shipped("exercise-5", "equipe-completa")
POINT = "checkpoints/turn-001-A.json"
INSIDE = "o caminho precisa ser relativo e ficar dentro da pasta da execução"
UNTIL_2100 = "deveria ser um instante em segundos até 4102444800 (o ano 2100)"
TURN_KEY = "a chave deveria ser um número de turno (0, 1, 2, ..., sem zeros à esquerda)"


@pytest.mark.parametrize("path, value, message", [
    ("run_dir|../fora.json", {}, f"campo `run_dir.../fora.json`: {INSIDE}"),
    ("run_dir|/etc/passwd", "x", f"campo `run_dir./etc/passwd`: {INSIDE}"),
    ("run_dir|a//b.json", "x", f"campo `run_dir.a//b.json`: {INSIDE}"),
    ("run_dir|a\x00b.json", "x", f"campo `run_dir.'a\\x00b.json'`: {INSIDE}: tem um caractere NUL"),
    ("run_dir|checkpoints\\turn-001-A.json", "x", f"campo `run_dir.'checkpoints\\\\turn-001-A.json'`: {INSIDE}: tem uma barra invertida"),
    ("run_dir|./checkpoints/turn-001-A.json", "x", f"campo `run_dir../checkpoints/turn-001-A.json`: {INSIDE}: tem uma parte . ou .."),
    ("run_dir|checkpoint.json/x", "x", "campo `run_dir.checkpoint.json/x`: o caminho 'checkpoint.json/x' fica dentro de 'checkpoint.json', que é um arquivo"),
    ("run_dir|" + "x" * 5000, "x", f"campo `run_dir.'{'x' * 27}...{'x' * 28}'`: {INSIDE}: tem uma parte de 5000 bytes (o máximo é 255)"),
    ("run_dir|notas.txt", 3, "campo `run_dir.notas.txt`: deveria ser um objeto JSON ou um texto (gravado como está)"),
    (f"run_dir|{POINT}", 3, f"campo `run_dir.{POINT}`: deveria ser um objeto JSON ou um texto"),
    (f"run_dir|{POINT}|turns", True, f"campo `run_dir.{POINT}.turns`: deveria ser um inteiro >= 0 (é True)"),
    (f"run_dir|{POINT}|version", 2, f"campo `run_dir.{POINT}.version`: deveria ser 1 (é 2)"),
    ("run_dir", [], "campo `run_dir`: obrigatório, deveria mapear caminho relativo -> conteúdo"),
    ("mtimes", {"checkpoint.json": 0}, "campo `mtimes.checkpoint.json`: deveria ser um número maior que zero (é 0)"),
    ("mtimes", {"checkpoint.json": True}, "campo `mtimes.checkpoint.json`: deveria ser um número maior que zero (é True)"),
    ("mtimes", {"checkpoint.json": "ontem"}, "campo `mtimes.checkpoint.json`: deveria ser um número maior que zero (é 'ontem')"),
    ("mtimes", {"checkpoint.json": 1e300}, f"campo `mtimes.checkpoint.json`: {UNTIL_2100} (é 1e+300)"),
    ("mtimes", {"checkpoint.json": 10**100}, f"campo `mtimes.checkpoint.json`: {UNTIL_2100} (é 1000000"),
    ("mtimes", {"checkpoint.json": 4102444800.5}, f"campo `mtimes.checkpoint.json`: {UNTIL_2100} (é 4102444800.5)"),
    (f"run_dir|{POINT}|version", 1.0, f"campo `run_dir.{POINT}.version`: deveria ser 1 (é 1.0)"),
    ("expect.latest", DELETED, "campo `expect.latest`: obrigatório (null quando não há ponto)"),
    ("expect.latest", 3, "campo `expect.latest`: deveria ser um texto ou null (é 3)"),
    ("expect.latest_by_turn", {}, "campo `expect.latest_by_turn`: obrigatório, deveria mapear turno (texto) -> nome do ponto ou null"),
    ("expect.latest_by_turn", {"um": None}, "campo `expect.latest_by_turn.um`: a chave deveria ser um número de turno"),
    ("expect.latest_by_turn", {"001": None}, f"campo `expect.latest_by_turn.001`: {TURN_KEY}"),
    ("expect.latest_by_turn", {"1": None, "01": None}, f"campo `expect.latest_by_turn.01`: {TURN_KEY}"),
    ("expect.latest_by_turn", {"00": None}, f"campo `expect.latest_by_turn.00`: {TURN_KEY}"),  # "0" is turn 0
    ("expect.latest_by_turn", {"1\n": None}, f"campo `expect.latest_by_turn.1\n`: {TURN_KEY}"),
    ("expect.latest_by_turn", {"\u0661": None}, f"campo `expect.latest_by_turn.\u0661`: {TURN_KEY}"),  # an Arabic-Indic 1
    ("expect.undo", {"tool": "send_email", "turn": True, "point": "B"}, "campo `expect.undo.turn`: deveria ser um inteiro >= 0 (é True)"),
    ("expect.undo", {"tool": "send_email", "turn": 1.0, "point": "B"}, "campo `expect.undo.turn`: deveria ser um inteiro >= 0 (é 1.0)"),
    ("expect.undo", {"tool": "send_email", "turn": 1, "point": "C"}, "campo `expect.undo.point`: deveria ser \"A\" ou \"B\" (é 'C')"),
    ("expect.undo", {"tool": "send_email", "turn": 1, "point": "B", "timeline": "x"}, "campo `expect.undo.timeline`: chave desconhecida (aceitas: tool, turn, point)"),
    ("expect.undo", {"turn": 1, "point": "B"}, "campo `expect.undo.tool`: obrigatório"),
    ("expect.fork", {"tool": "send_email", "turn": 2, "point": "A"}, "campo `expect.fork.parent_timeline_id`: obrigatório, o timeline_id da linha original"),
    ("expect.fork", {"tool": "send_email", "turn": 2, "point": "A", "parent_timeline_id": ""}, "campo `expect.fork.parent_timeline_id`: deveria ser um texto não vazio (é '')"),
    ("expect.undo_missing_tool", 9, "campo `expect.undo_missing_tool`: deveria ser um texto não vazio (é 9)"),
    ("expect.finish", {"to": "turn-001-B.json"}, "campo `expect.finish`: deveria ser null, {to, folder} ou {refused: true}"),
    ("expect.pick", 1, "campo `expect.pick`: chave desconhecida (aceitas: latest, latest_by_turn, undo, undo_missing_tool, fork, finish)"),
    # the rules a schema cannot say
    ("mtimes", {"checkpoints/nao-existe.json": 10}, "campo `mtimes.checkpoints/nao-existe.json`: não é um arquivo de run_dir"),
    ("expect.latest", "turn-099-A.json", "campo `expect.latest`: deveria ser null ou o nome de um ponto em checkpoints/ (é 'turn-099-A.json')"),
    ("expect.latest_by_turn", {"1": "checkpoint.json"}, "campo `expect.latest_by_turn.1`: deveria ser null ou o nome de um ponto"),
    ("expect.undo", {"tool": "send_email", "turn": 7, "point": "B"}, "campo `expect.undo`: não há turn-007-B.json em checkpoints/"),
    ("expect.finish", {"to": "turn-009-B.json", "folder": "rewound-001"}, "campo `expect.finish.to`: deveria ser um ponto em checkpoints/ (é 'turn-009-B.json')"),
    (f"run_dir|{POINT}|pending_tool_use", [{"id": "z", "name": "n", "input": {}}],
     f"campo `run_dir.{POINT}.pending_tool_use[0].id`: 'z' não é o id de nenhum tool_use da última mensagem"),
])
def test_exercise_5_hostile_values(path, value, message):
    assert_reported(validate_exercise_5, RUN, path, value, message)


def test_exercise_5_reports_the_shape_and_the_cross_rules_at_once():
    data = with_change("expect.undo", {"tool": "send_email", "turn": 7, "point": "B"}, with_change(f"run_dir|{POINT}|turns", -1, RUN))
    assert validate_exercise_5(data) == [
        f"campo `run_dir.{POINT}.turns`: deveria ser um inteiro >= 0 (é -1)",
        "campo `expect.undo`: não há turn-007-B.json em checkpoints/",
    ]


# ------------------------------------------------- exercise-6: parsing, sequences, harnesses

PARSE = shipped("exercise-6", "crash-after-rotulo-e-contagem")
SEQUENCE = shipped("exercise-6", "passagens-so-uma-vez")
HARNESS = shipped("exercise-6", "h1-reexecuta-pendentes")
WRONG_LABEL = shipped("exercise-6", "passagens-rotulo-errado-no-codigo")  # error_at 2 of 2 calls
ONE_OUTCOME = "use crashes_at OU error_at com error_mentions, não os dois"


@pytest.mark.parametrize("base, path, value, message", [
    (PARSE, "spec", 3, "campo `spec`: deveria ser o texto de CRASH_AFTER"),
    (PARSE, "expect", {}, "campo `expect`: use parsed OU error_mentions"),
    (PARSE, "expect.error_mentions", ["x"], "campo `expect`: use parsed OU error_mentions"),
    (PARSE, "expect.parsed", "after-save-A:2", "campo `expect.parsed`: deveria ser uma lista de [rótulo conhecido, n >= 1]"),
    (PARSE, "expect.parsed", [], "campo `expect.parsed`: deveria ser uma lista de [rótulo conhecido, n >= 1]"),
    (PARSE, "expect.parsed", ["after-save-A", 2], "campo `expect.parsed[0]`: deveria ser um par [rótulo conhecido, n >= 1]"),
    (PARSE, "expect.parsed", [["after-save-A", 0]], "campo `expect.parsed[0][1]`: deveria ser um inteiro >= 1 (é 0)"),
    (PARSE, "expect.parsed", [["after-save-A", True]], "campo `expect.parsed[0][1]`: deveria ser um inteiro >= 1 (é True)"),
    (PARSE, "expect.parsed", [["after-save-A", 1], ["after-save-B", 2.0]], "campo `expect.parsed[1][1]`: deveria ser um inteiro >= 1 (é 2.0)"),
    (PARSE, "expect.parsed", [["depois", 2]], "campo `expect.parsed[0][0]`: deveria ser um rótulo conhecido"),
    (PARSE, "calls", ["after-save-A"], "campo `calls`: chave desconhecida (aceitas: description, spec, expect)"),
    (SEQUENCE, "calls", [], "campo `calls`: deveria ser uma lista não vazia de rótulos"),
    (SEQUENCE, "calls", ["after-save-A", " "], "campo `calls[1]`: deveria ser um texto não vazio (é ' ')"),
    (SEQUENCE, "crash_after", 3, "campo `crash_after`: deveria ser um texto ou null (é 3)"),
    (SEQUENCE, "expect.crashes_at", [0], "campo `expect.crashes_at[0]`: deveria ser um inteiro >= 1 (é 0)"),
    (SEQUENCE, "expect.crashes_at", [True], "campo `expect.crashes_at[0]`: deveria ser um inteiro >= 1 (é True)"),
    (SEQUENCE, "expect", {"error_at": 1}, "campo `expect`: deveria ter crashes_at, ou error_at com error_mentions"),
    (SEQUENCE, "expect", {"error_at": -1, "error_mentions": ["x"]}, "campo `expect.error_at`: deveria ser um inteiro >= 1 (é -1)"),
    (SEQUENCE, "expect.quando", 1, "campo `expect.quando`: chave desconhecida (aceitas: crashes_at, error_at, error_mentions)"),
    (SEQUENCE, "expect.crashes_at", [10], "campo `expect.crashes_at`: deveria listar posições (1, 2, ...) de calls"),
    (SEQUENCE, "calls", ["after-sav-A"], "campo `calls`: rótulos desconhecidos ['after-sav-A'] só cabem com error_at"),
    (WRONG_LABEL, "expect.error_at", 99, "campo `expect.error_at`: deveria ser uma posição (1, 2, ...) de calls, que tem 2 (é 99)"),
    (WRONG_LABEL, "expect.error_at", 3, "campo `expect.error_at`: deveria ser uma posição (1, 2, ...) de calls, que tem 2 (é 3)"),
    (WRONG_LABEL, "expect.crashes_at", [2], f"campo `expect`: {ONE_OUTCOME}"),
    (SEQUENCE, "expect.error_at", 1, f"campo `expect`: {ONE_OUTCOME}"),
    (SEQUENCE, "expect.error_mentions", ["x"], f"campo `expect`: {ONE_OUTCOME}"),
    (HARNESS, "harness", "h99", "campo `harness`: desconhecido 'h99'; conhecidos: reference"),
    (HARNESS, "expect.verdict", "sim", "campo `expect.verdict`: deveria ser \"aprovar\" ou \"reprovar\" (é 'sim')"),
    (HARNESS, "expect.verdict", "aprovar", "campo `expect.verdict`: para o harness 'reruns-pending-calls' o veredito certo é 'reprovar'"),
    (HARNESS, "description", "", "campo `description`: deveria ser um texto não vazio (é '')"),
    (HARNESS, "harness", DELETED, "campo `spec | calls | harness`: a fixture precisa de uma destas chaves"),
])
def test_exercise_6_hostile_values(base, path, value, message):
    assert_reported(validate_exercise_6, base, path, value, message)


# ------------------------------------------------ grade fixtures, end to end, one kind each

@pytest.mark.parametrize("exercise, base, path, value, expected", [
    ("exercise-1", CLASSIFICATION, f"items.{ITEM}.answer", "memoria", f"campo `items.{ITEM}.answer`: deveria ser"),
    ("exercise-2", LOAD, "file.drop_last_bytes", True, "campo `file.drop_last_bytes`: deveria ser um inteiro >= 0 (é True)"),
    ("exercise-3", BASE, "checkpoint.turns", 1.0, "campo `checkpoint.turns`: deveria ser um inteiro >= 0 (é 1.0)"),
    ("exercise-4", SCENE, f"effects.{CALL}.result", None, f"campo `effects.{CALL}.result`: {RECEIPT}"),
    ("exercise-4", NEVER_STARTED, "expect.ways.toolu_01TE2", "rerun",
     'campo `expect.ways.toolu_01TE2`: "rerun" é só para leituras (READ_ONLY_TOOLS)'),
    ("exercise-5", RUN, "run_dir|../fora.json", {}, f"campo `run_dir.../fora.json`: {INSIDE}"),
    ("exercise-6", SEQUENCE, "expect.crashes_at", [0], "campo `expect.crashes_at[0]`: deveria ser um inteiro >= 1 (é 0)"),
])
def test_grade_fixtures_names_the_file_and_the_field(tmp_path, monkeypatch, capsys, exercise, base, path, value, expected):
    from grader import cli

    folder = tmp_path / "minhas-fixtures" / exercise
    folder.mkdir(parents=True)
    (folder / "quebrada.json").write_text(json.dumps(with_change(path, value, base), ensure_ascii=False), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["fixtures", exercise, "--fixtures", "minhas-fixtures", "--shape-only"]) == 1
    out = capsys.readouterr().out
    assert f"minhas-fixtures/{exercise}/quebrada.json: {expected}" in out, out
