"""Fixtures as data: discovery, instructor folders, YAML, and shape validation by file and field."""
from __future__ import annotations

import json
import os

import pytest
import yaml

from grader import cli
from grader.core import fixture_loader
from grader.core.engine import load_exercise
from grader.core.errors import FixtureError
from grader.core.fixture_loader import load_fixtures, read_fixture_files
from tests.grader_support import fixture_data, write_new_fixtures

VALIDATE = load_exercise("exercise-3").validate_fixture


def problems_of(folder, name):
    files = read_fixture_files("exercise-3", [folder], VALIDATE)
    return next(item.problems for item in files if item.name == name)


def test_shipped_fixtures_are_valid_and_discovered_by_file_name():
    files = read_fixture_files("exercise-3", (), VALIDATE)
    assert [f.name for f in files] == ["chamado-pendente", "cpA", "cpB", "cpC", "duas-leituras",
                                       "ferramenta-sem-classificacao", "grep-pendente",
                                       "incident-duplicate-email", "incidente-duas-chamadas",
                                       "leitura-e-email-juntos", "leitura-que-falha", "mcp-convite-sem-anotacoes",
                                       "mcp-ferramenta-fora-do-servidor", "mcp-leitura-e-criacao",
                                       "mcp-remarcar-e-cancelar", "primeiro-turno"]
    assert all(f.problems == [] for f in files)
    incident = fixture_data("incident-duplicate-email")
    assert len(incident["workspace"]["outbox"]) == 1 and incident["expect"]["outbox_after"] == 1


def test_a_file_dropped_in_the_fixture_folder_is_picked_up(tmp_path, monkeypatch):
    shipped = tmp_path / "fixtures"
    (shipped / "exercise-3").mkdir(parents=True)
    for name in ("cpA", "cpB"):
        (shipped / "exercise-3" / f"{name}.json").write_text(json.dumps(fixture_data(name)), encoding="utf-8")
    monkeypatch.setattr(fixture_loader, "FIXTURES_ROOT", shipped)
    exercise = load_exercise("exercise-3")
    before = [p.id for p in exercise.plan(load_fixtures("exercise-3", (), VALIDATE))]
    write_new_fixtures(shipped / "exercise-3")
    after = [p.id for p in exercise.plan(load_fixtures("exercise-3", (), VALIDATE))]
    added = set(after) - set(before)
    assert "n2.reruns_read_only[pending-grep]" in added
    assert "n2.high_impact_not_repeated[pending-create-ticket]" in added
    assert "n2.high_impact_not_repeated[cpB]" not in after  # cpB has no high-impact call


def test_instructor_folder_can_hold_exercise_subfolders_and_yaml(tmp_path):
    folder = tmp_path / "private" / "exercise-3"
    folder.mkdir(parents=True)
    (folder / "em-yaml.yaml").write_text(yaml.safe_dump(fixture_data("cpB"), allow_unicode=True), encoding="utf-8")
    names = [f.name for f in load_fixtures("exercise-3", [tmp_path / "private"], VALIDATE)]
    assert names[-1] == "em-yaml" and len(names) == len(load_fixtures("exercise-3", (), VALIDATE)) + 1


BASE = fixture_data("cpC")


def broken(**changes):
    data = json.loads(json.dumps(BASE))
    for dotted, value in changes.items():
        target = data
        *path, last = dotted.split("__")
        for key in path:
            target = target[key]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return data


@pytest.mark.slow
@pytest.mark.parametrize(
    "data, words",
    [
        (broken(checkpoint__turns=KeyError), "campo `checkpoint.turns`: obrigatório"),
        (broken(checkpoint__turns="nove"), "campo `checkpoint.turns`: deveria ser um inteiro >= 0 (é 'nove')"),
        (broken(checkpoint__version=2), "campo `checkpoint.version`: deveria ser 1 (é 2)"),
        (broken(checkpoint__pending_tool_use=None), "campo `checkpoint.pending_tool_use`: é null, mas a última mensagem tem tool_use"),
        (broken(expect__resume_action={"toolu_01B": "reexecutar"}), "campo `expect.resume_action.toolu_01B`: deveria ser \"rerun\" ou \"is_error\""),
        (broken(expect__resume_action={"toolu_X": "is_error"}), "as chaves deveriam ser exatamente os ids pendentes ['toolu_01B']"),
        (broken(expect__outbox_after=-1), "campo `expect.outbox_after`: deveria ser um inteiro >= 0"),
        (broken(expect__surpresa=1), "campo `expect.surpresa`: chave desconhecida"),
        (broken(workspace__files={"../fora.md": "x"}), "precisa ficar dentro da sandbox"),
        (broken(description=KeyError), "campo `description`: obrigatório"),
        (broken(expect=KeyError), "campo `expect`: obrigatório"),
    ],
)
def test_malformed_fixture_names_file_and_field(data, words, tmp_path):
    (tmp_path / "ruim.json").write_text(json.dumps(data), encoding="utf-8")
    problems = problems_of(tmp_path, "ruim")
    assert any(words in problem for problem in problems), problems
    assert problems and all(problem.startswith(f"{tmp_path / 'ruim.json'}: ") for problem in problems)
    with pytest.raises(FixtureError) as raised:
        load_fixtures("exercise-3", [tmp_path], VALIDATE)
    assert words in str(raised.value)


@pytest.mark.parametrize(
    "file_name, content, words",
    [
        ("quebrado.json", '{"description": ', "JSON inválido na linha 1"),
        ("lista.json", "[1]", "deveria ser um objeto (mapeamento) no topo"),
        ("ruim.yaml", "a: [1, 2", "YAML inválido"),
    ],
)
def test_unreadable_fixture_files(file_name, content, words, tmp_path):
    (tmp_path / file_name).write_text(content, encoding="utf-8")
    files = read_fixture_files("exercise-3", [tmp_path], VALIDATE)
    assert any(words in p for f in files for p in f.problems)



@pytest.mark.parametrize(
    "content, where",
    [
        ('description: "quebrado\nexpect: {}\n', "YAML inválido na linha 3, coluna 1 (found unexpected end of stream; "
                                                   "o trecho começa na linha 1, coluna 14)"),
        ("description: a\n  expect: b: c\n", "YAML inválido na linha 2, coluna 9 (mapping values are not allowed here)"),
    ],
)
def test_grade_fixtures_names_a_yaml_error_in_one_portuguese_line(content, where, tmp_path, capsys):
    (tmp_path / "ruim.yaml").write_text(content, encoding="utf-8")
    code = cli.main(["fixtures", "exercise-3", "--fixtures", str(tmp_path), "--shape-only"])
    out = capsys.readouterr().out
    assert code == 1
    problem = out.split("PROBLEMA  ruim\n", 1)[1].split("\n\n", 1)[0].strip()
    assert problem == f"{tmp_path / 'ruim.yaml'}: {where}", out
    assert "<unicode string>" not in out and "^" not in out

def test_duplicate_fixture_name_and_missing_folder(tmp_path):
    (tmp_path / "cpA.json").write_text(json.dumps(fixture_data("cpA")), encoding="utf-8")
    duplicated = [p for f in read_fixture_files("exercise-3", [tmp_path], VALIDATE) for p in f.problems]
    assert any("repete a fixture grader/fixtures/exercise-3/cpA.json" in p for p in duplicated)
    missing = [p for f in read_fixture_files("exercise-3", [tmp_path / "nada"], VALIDATE) for p in f.problems]
    assert any("a pasta de fixtures não existe" in p for p in missing)


def test_grade_fixtures_shape_only_reports_file_and_field(tmp_path, capsys):
    (tmp_path / "sem-turns.json").write_text(json.dumps(broken(checkpoint__turns=KeyError)), encoding="utf-8")
    code = cli.main(["fixtures", "exercise-3", "--fixtures", str(tmp_path), "--shape-only"])
    out = capsys.readouterr().out
    assert code == 1
    assert "PROBLEMA  sem-turns" in out and "sem-turns.json: campo `checkpoint.turns`: obrigatório" in out
    assert "forma ok  cpA" in out
    assert cli.main(["fixtures", "exercise-3", "--shape-only"]) == 0


def test_a_broken_fixture_check_without_expected_values_is_named_and_the_students_text_labelled():
    from grader.core.results import CheckResult
    from grader.instructor.fixture_command import disagreement

    with_values = CheckResult(id="n1.a[f]", level=1, fixture="f", title="Decide", criterion="", status="fail",
                              expected="rerun", observed="is_error", message="texto para o aluno")
    assert disagreement(with_values) == "a fixture espera rerun; a solução de referência deu is_error"
    bare = CheckResult(id="n2.b[f]", level=2, fixture="f", title="Fecha a chamada", criterion="", status="fail",
                       message="texto para o aluno")
    text = disagreement(bare)
    assert '"Fecha a chamada"' in text and "o texto que um aluno leria: texto para o aluno" in text


def _problems(folder) -> list[str]:
    return [problem for item in read_fixture_files("exercise-3", [folder], VALIDATE) for problem in item.problems]


def test_a_fixtures_folder_that_adds_nothing_is_a_problem_not_a_silent_grading(tmp_path):
    """A wrong path (a typo in the exercise's subfolder, an empty folder) would grade a class without
    the instructor's private fixtures; it is reported instead, naming what was found there."""
    typo = tmp_path / "typo"
    (typo / "exercise3").mkdir(parents=True)
    (typo / "exercise3" / "nova.json").write_text(json.dumps(fixture_data("cpA")), encoding="utf-8")
    [problem] = _problems(typo)
    assert "não tem nenhuma fixture" in problem and "exercise3" in problem and "typo/exercise-3/NOME.json" in problem
    empty = tmp_path / "vazia"
    empty.mkdir()
    [problem] = _problems(empty)
    assert "vazia: a pasta de fixtures não tem nenhuma fixture" in problem
    with pytest.raises(FixtureError):
        load_fixtures("exercise-3", [empty], VALIDATE)
    (empty / "exercise-3").mkdir()  # the exercise's own subfolder, empty
    assert len(_problems(empty)) == 1


def test_one_fixtures_folder_for_several_exercises_may_hold_none_of_this_one(tmp_path):
    shared = tmp_path / "privadas"
    (shared / "exercise-4").mkdir(parents=True)
    (shared / "exercise-4" / "x.json").write_text("{}", encoding="utf-8")
    assert _problems(shared) == []


def test_a_pending_call_that_disagrees_with_the_message_shows_both_sides_and_nothing_else():
    data = fixture_data("cpB")
    call = data["checkpoint"]["pending_tool_use"][0]
    real_id = call["id"]
    call["id"] = "toolu_DIGITADO"
    problems = VALIDATE(data)
    assert len(problems) == 1, problems  # not also "resume_action should name toolu_DIGITADO"
    assert "'toolu_DIGITADO' não é o id de nenhum tool_use" in problems[0] and real_id in problems[0]
    call["id"], call["input"] = real_id, {**call["input"], "to": "outra@exemplo.com"}
    [problem] = VALIDATE(data)
    assert "outra@exemplo.com" in problem and "diferentes do tool_use de mesmo id" in problem


def _only_problem(folder) -> str:
    problems = _problems(folder)
    assert len(problems) == 1, problems
    return problems[0]


@pytest.mark.slow
@pytest.mark.parametrize("name, text, expected", [
    ("gigante.json", '{"outbox_after": 1' + "0" * 5000 + "}", "um número inteiro tem milhares de dígitos"),
    ("gigante.yaml", "turns: 1" + "0" * 5000 + "\n", "um número inteiro tem milhares de dígitos"),
    ("funda.json", "[" * 100_000 + "]" * 100_000, "fundo demais"),
    ("funda.yaml", "a: " + "[" * 20_000 + "]" * 20_000 + "\n", "fundo demais"),
    ("repetida.json", '{"description": "a", "description": "b"}', "a chave 'description' aparece duas vezes"),
    ("repetida.yaml", "description: a\ndescription: b\n", 'chave "description" repetida'),
    ("bomba.yaml", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                   "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
     "âncoras e aliases"),
])
def test_a_file_that_cannot_be_read_as_data_is_one_problem_never_a_traceback(tmp_path, name, text, expected):
    (tmp_path / name).write_text(text, encoding="utf-8")
    problem = _only_problem(tmp_path)
    assert name in problem and expected in problem, problem


def test_a_bom_and_an_upper_case_suffix_are_still_fixtures(tmp_path):
    data = json.dumps(fixture_data("cpA"))
    (tmp_path / "com-bom.json").write_text("\ufeff" + data, encoding="utf-8")
    (tmp_path / "MAIUSCULA.JSON").write_text(data, encoding="utf-8")
    files = {item.name: item for item in read_fixture_files("exercise-3", [tmp_path], VALIDATE)}
    assert files["com-bom"].problems == [] and files["MAIUSCULA"].problems == []


def test_what_is_named_like_a_fixture_but_is_no_file_is_reported_not_skipped(tmp_path):
    (tmp_path / "pasta.json").mkdir()
    (tmp_path / "quebrado.json").symlink_to(tmp_path / "nao-existe.json")
    os.mkfifo(tmp_path / "cano.json")  # never opened: reading it would wait forever
    problems = _problems(tmp_path)
    assert len(problems) == 3 and all("não é um arquivo comum" in problem for problem in problems), problems


def test_a_linked_fixture_is_named_by_its_link(tmp_path):
    target = tmp_path / "longe" / "alvo.json"
    target.parent.mkdir()
    target.write_text("{", encoding="utf-8")
    (tmp_path / "minhas").mkdir()
    (tmp_path / "minhas" / "atalho.json").symlink_to(target)
    problem = _only_problem(tmp_path / "minhas")
    assert "atalho.json: JSON inválido" in problem and "alvo" not in problem


def test_several_missing_fields_are_each_said_once():
    data = fixture_data("cpA")
    del data["checkpoint"], data["expect"]
    assert VALIDATE(data) == ["campo `checkpoint`: obrigatório", "campo `expect`: obrigatório"]


def test_a_yaml_key_read_as_a_number_is_one_problem_asking_for_quotes(tmp_path):
    (tmp_path / "numero.yaml").write_text("description: x\nexpect:\n  latest_by_turn:\n    1: abc\n", encoding="utf-8")
    problem = _only_problem(tmp_path)
    assert "numero.yaml: a chave 1 não é um texto" in problem and '"1"' in problem
