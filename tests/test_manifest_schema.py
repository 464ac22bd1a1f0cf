"""The manifest's shape is MANIFEST_SCHEMA (JSON Schema, checked by fastjsonschema); each
hostile edit an instructor could make is reported, first problem only, with its place in
the file and in Portuguese; what the schema cannot say (order) is checked after it."""
from __future__ import annotations

import pytest
import yaml

from grader.core import manifest
from grader.core.manifest import MANIFEST_SCHEMA, ManifestError, parse_manifest

# Two levels, the second with points: every field the schema knows.
GOOD = "version: 1\nexercises:\n  - name: exercise-1\n    title: Um\n    levels:\n" + "".join(
    f"      - {level}\n" for level in ("{level: 1, title: Primeiro, hints: [a, b]}",
                                      "{level: 2, title: Segundo, hints: [], points: 4, check_points: {c: 1}}"))


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("{level: 1, title: Primeiro, hints: [a, b]}", "{level: 1, hints: [a, b]}",
         "manifest.yaml: exercise-1.levels[0]: falta a chave 'title'"),
        ("title: Segundo", "title: '   '", "manifest.yaml: exercise-1.levels[1].title: deveria ser um texto não vazio, é '   '"),
        ("points: 4", "points: -4", "manifest.yaml: exercise-1.levels[1].points: deveria ser um número maior que zero, é -4"),
        ("{c: 1}", "{c: -0.5}", "manifest.yaml: exercise-1.levels[1].check_points.c: deveria ser um número maior ou igual a zero, é -0.5"),
        ("{c: 1}", "{c: true}", "check_points.c: deveria ser um número maior ou igual a zero, é True"),
        ("{c: 1}", "{}", "exercise-1.levels[1].check_points: deveria ser um mapeamento nome_da_verificacao: pontos"),
        ("{level: 1,", "{level: true,", "exercise-1.levels[0].level: deveria ser um inteiro >= 1, é True"),
        ("{level: 1,", "{level: 1.0,", "exercise-1.levels[0].level: deveria ser um inteiro >= 1, é 1.0"),
        ("{level: 2,", "{level: 3,", "exercise-1.levels[1].level: deveria ser 2 (níveis numerados 1, 2, 3... em ordem), é 3"),
        ("hints: [a, b]", "hints: [a, '']", "exercise-1.levels[0].hints[1]: deveria ser um texto não vazio, é ''"),
        ("hints: [a, b]", "hints: ~", "exercise-1.levels[0].hints: deveria ser uma lista de textos (pode ser vazia: [])"),
        ("name: exercise-1", "name: exercise-2", "exercises[0].name: a posição 1 da lista deveria ser exercise-1, é exercise-2"),
        ("name: exercise-1", "name: 1", "exercises[0].name: deveria ter a forma exercise-N, é 1"),
        ("    levels:\n", "    nivel: 1\n    levels:\n", "manifest.yaml: exercises[0]: chave desconhecida 'nivel' (aceitas: levels, name, title)"),
        ("version: 1", "version: 1\nautor: x", "manifest.yaml: raiz: chave desconhecida 'autor' (aceitas: exercises, version)"),
        ("version: 1", "version: '1'", "manifest.yaml: version: versão '1' não suportada (esperada: 1)"),
        ("version: 1\n", "", "manifest.yaml: raiz: falta a chave 'version'"),
    ],
)
def test_each_hostile_edit_is_named_at_its_place(old, new, message):
    parse_manifest(GOOD)  # the unbroken text is fine
    assert old in GOOD
    with pytest.raises(ManifestError) as raised:
        parse_manifest(GOOD.replace(old, new, 1))
    assert message in str(raised.value)


@pytest.mark.parametrize("text, message", [
    ("- 1\n- 2\n", "manifest.yaml: o arquivo deveria ser um mapeamento com 'version' e 'exercises'"),
    ("", "manifest.yaml: o arquivo deveria ser um mapeamento com 'version' e 'exercises'"),
    ("version: 1\nexercises: []\n", "manifest.yaml: exercises: deveria ser uma lista com pelo menos um exercício"),
    ("version: 1\nexercises: [3]\n", "exercises[0]: cada exercício deveria ser um mapeamento com name, title e levels"),
    ("version: 1\nexercises: [{name: exercise-1, title: Um, levels: []}]\n",
     "exercise-1.levels: deveria ser uma lista com pelo menos um nível"),
    ("version: 1\nexercises: [{name: exercise-1, title: Um, levels: [x]}]\n",
     "exercise-1.levels[0]: cada nível deveria ser um mapeamento com level, title e hints"),
])
def test_a_file_of_the_wrong_shape_is_named(text, message):
    with pytest.raises(ManifestError) as raised:
        parse_manifest(text)
    assert message in str(raised.value)


def test_the_schema_is_draft_2020_12_and_both_engines_agree_on_the_course_manifest():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(MANIFEST_SCHEMA)
    data = yaml.safe_load(manifest.MANIFEST_PATH.read_text(encoding="utf-8"))
    assert list(Draft202012Validator(MANIFEST_SCHEMA).iter_errors(data)) == []
    assert [e.name for e in parse_manifest(manifest.MANIFEST_PATH.read_text(encoding="utf-8")).exercises] == [
        f"exercise-{n}" for n in range(1, 7)]


def test_texts_are_folded_and_points_read_as_numbers():
    level = parse_manifest(GOOD.replace("title: Segundo", "title: '  Segundo\n  nível '")).exercise("exercise-1").levels[1]
    assert (level.title, level.points, level.check_points) == ("Segundo nível", 4.0, (("c", 1.0),))
