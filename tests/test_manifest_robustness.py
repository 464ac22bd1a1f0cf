"""A broken manifest (or fixture) is one Portuguese line naming the file, never a traceback,
a hang, a huge message or a corrupt score: each command that reads the manifest ends with
exit 2 and that line; `course check` reports it; values shown in messages are bounded."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from grader.checks.exercise_3.fixtures import validate_fixture as validate_exercise_3
from grader.core import manifest
from grader.core.manifest import ManifestError, parse_manifest
from grader.core.schema_errors import Failure, all_failures, describe
from tests.grader_support import ROOT
from tests.warm_python import run_python

PACKAGED = manifest.MANIFEST_PATH.read_text(encoding="utf-8")
GOOD = "version: 1\nexercises:\n  - name: exercise-1\n    title: Um\n    levels:\n" + "".join(
    f"      - {level}\n" for level in ("{level: 1, title: Primeiro, hints: [a, b]}",
                                      "{level: 2, title: Segundo, hints: [], points: 4, check_points: {c: 1}}"))

# A ~400-byte manifest whose version holds 9 ** 9 strings through nested aliases (printed
# whole, its message was 7 MB at 7 levels; at 8, `grade list` ran out of memory).
ALIAS_BOMB = "\n".join(
    ["exercises:", "  - &a0 [x, x, x, x, x, x, x, x, x]"]
    + [f"  - &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
    + ["version: *a8"]) + "\n"


def run_with_manifest(tmp_path: Path, content: bytes | str | None, *argv: str, timeout: float = 120):
    """Run ``argv`` (``grade ...`` or ``course ...``) in a fresh process whose packaged manifest
    is ``tmp_path/manifest.yaml`` holding ``content`` (None: no file; a folder when content is
    the string "<pasta>")."""
    path = tmp_path / "manifest.yaml"
    if content == "<pasta>":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    program, *rest = argv
    entry = "grader.cli" if program == "grade" else "authoring.cli"
    code = ("import sys\nfrom pathlib import Path\nfrom grader.core import manifest\n"
            "manifest.MANIFEST_PATH = Path(sys.argv[1])\n"
            f"from {entry} import main\nsys.exit(main(sys.argv[2:]))\n")
    return run_python(["-c", code, str(path), *rest], cwd=ROOT, timeout=timeout)


BROKEN = {
    "level-as-text": (PACKAGED.replace("level: 1\n", 'level: "1"\n', 1),
                      "manifest.yaml: exercise-1.levels[0].level: deveria ser um inteiro >= 1, é '1'"),
    "negative-points": (GOOD.replace("points: 4", "points: -3"),
                        "manifest.yaml: exercise-1.levels[1].points: deveria ser um número maior que zero, é -3"),
    "unknown-key": ("autor: x\n" + PACKAGED, "manifest.yaml: raiz: chave desconhecida 'autor'"),
    "empty": ("", "manifest.yaml: o arquivo deveria ser um mapeamento com 'version' e 'exercises'"),
    "top-level-list": ("- 1\n", "manifest.yaml: o arquivo deveria ser um mapeamento com 'version' e 'exercises'"),
    "missing": (None, "Não consegui ler o manifesto manifest.yaml: não existe"),
    "folder": ("<pasta>", "Não consegui ler o manifesto manifest.yaml: é uma pasta, não um arquivo"),
    "latin-1": ("version: 1\n# manifesto do módulo\n".encode("latin-1"),
                "manifest.yaml: o arquivo não está em UTF-8 (byte 0xf3 na linha 2)"),
    "utf-16": (PACKAGED.encode("utf-16"), "manifest.yaml: o arquivo não está em UTF-8 (byte 0xff na linha 1)"),
    "tab": (GOOD.replace("    title: Um", "\ttitle: Um"),
            "manifest.yaml: YAML inválido na linha 4, coluna 1 (found a tab character that violates indentation; "
            "o trecho começa na linha 3, coluna 11)"),
    "nul": (GOOD.replace("Um", "U\0m"),
            "manifest.yaml: YAML inválido na linha 4, coluna 13 (caractere U+0000 não permitido: control characters are not allowed)"),
    "unknown-tag": (GOOD.replace("title: Um", "title: !!python/object Um"), "manifest.yaml: YAML inválido na linha 4, coluna 12"),
    "duplicate-key": (GOOD.replace("    title: Um\n", "    title: Um\n    title: Dois\n"),
                      'manifest.yaml: YAML inválido na linha 5, coluna 5 (chave "title" repetida no mesmo bloco (linhas 4 e 5))'),
    "alias-bomb": (ALIAS_BOMB, "manifest.yaml: YAML inválido na linha 2, coluna 5 (âncoras e aliases (&nome, *nome) não são aceitos"),
}
COMMANDS = {"list": ("grade", "list"), "hint": ("grade", "hint", "exercise-1"),
            "grade": ("grade", "exercise-1"), "batch": ("grade", "batch", "entregas", "exercise-1")}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_grade_list_says_the_manifest_problem_in_one_line(tmp_path, case):
    content, message = BROKEN[case]
    started = time.monotonic()
    result = run_with_manifest(tmp_path, content, "grade", "list", timeout=30)
    assert time.monotonic() - started < 30
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    assert len(result.stderr) < 400


@pytest.mark.slow
@pytest.mark.parametrize("command", ["hint", "grade", "batch"])
@pytest.mark.parametrize("case", ["level-as-text", "latin-1", "duplicate-key", "alias-bomb"])
def test_every_grade_command_says_the_manifest_problem_in_one_line(tmp_path, command, case):
    content, message = BROKEN[case]
    (tmp_path / "entregas").mkdir()
    (tmp_path / "entregas" / "ana.ipynb").write_text("{}", encoding="utf-8")
    result = run_with_manifest(tmp_path, content, *COMMANDS[command][:2],
                               *[str(tmp_path / arg) if arg == "entregas" else arg for arg in COMMANDS[command][2:]])
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory):
    """What `course check` reads of the project, copied: the manifest is then the test's to break."""
    import shutil

    root = tmp_path_factory.mktemp("curso")
    for name in ("solutions", "exercises", "lessons", "docs"):
        shutil.copytree(ROOT / name, root / name)
    shutil.copy(ROOT / "glossary.yaml", root)
    (root / "grader" / "core").mkdir(parents=True)
    (root / "grader" / "core" / "manifest.yaml").write_text(PACKAGED, encoding="utf-8")
    # The control, once per copy: with the packaged manifest the copy is in order, so what a
    # case reports comes from the manifest it breaks (each case puts the packaged one back).
    result = run_python(course_check(root), cwd=ROOT, timeout=120)
    assert (result.returncode, result.stdout) == (0, "course check: tudo em dia.\n"), result.stdout + result.stderr
    return root


def course_check(root):
    """`course check` on ``root``, for the warm interpreter (it has the SDK the figure check needs)."""
    return ["-m", "authoring.cli", "--root", str(root), "check"]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["level-as-text", "missing", "folder", "utf-16", "tab", "duplicate-key", "alias-bomb"])
def test_course_check_reports_a_broken_manifest(project_copy, case):
    path = project_copy / "grader" / "core" / "manifest.yaml"
    check = course_check(project_copy)
    content, message = BROKEN[case]
    path.unlink()
    if content == "<pasta>":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    try:
        result = run_python(check, cwd=ROOT, timeout=120)
    finally:
        path.rmdir() if path.is_dir() else path.unlink(missing_ok=True)
        path.write_text(PACKAGED, encoding="utf-8")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "tudo em dia" not in result.stdout and message in result.stdout, result.stdout
    assert "Traceback" not in result.stderr


def test_course_check_names_the_manifest_of_the_checked_tree(tmp_path):
    from grader.core.manifest import check_problems

    assert check_problems(ROOT) == []
    (tmp_path / "grader" / "core").mkdir(parents=True)
    assert check_problems(tmp_path) == ["Não consegui ler o manifesto manifest.yaml: não existe"]
    (tmp_path / "grader" / "core" / "manifest.yaml").write_text(GOOD.replace("points: 4", "points: .nan"), encoding="utf-8")
    assert check_problems(tmp_path) == [
        "manifest.yaml: exercise-1.levels[1].points: deveria ser um número finito, é nan"]


# ------------------------------------------------------------- bounded values in messages

def test_an_alias_bomb_is_answered_at_once_with_a_short_message():
    as_unknown_key = ALIAS_BOMB.replace("exercises:", "outros:").replace("version: *a8", GOOD + "autor: *a8")
    as_hints = ALIAS_BOMB.replace("exercises:", "outros:").replace("version: *a8", GOOD.replace("[a, b]", "*a8"))
    # The right shape all the way down: a thousand aliases to one exercise, whose levels and hints
    # are aliases too (every node valid, so a schema would walk all of it).
    level = "{level: 1, title: Primeiro, hints: &h [a, b]}"
    right_shape = ("version: 1\nexercises:\n  - &e {name: exercise-1, title: Um, levels: [" + level + "]}\n"
                   + "  - *e\n" * 1000)
    for text in (ALIAS_BOMB, as_unknown_key, as_hints, right_shape):
        started = time.process_time()
        with pytest.raises(ManifestError) as raised:
            parse_manifest(text)
        assert time.process_time() - started < 0.5
        assert "âncoras e aliases (&nome, *nome) não são aceitos" in str(raised.value), str(raised.value)[:300]
        assert str(raised.value).startswith("manifest.yaml: YAML inválido na linha ") and len(str(raised.value)) < 300


@pytest.mark.slow
def test_a_420_kb_value_is_shown_cut_short():
    big = "[" + ", ".join(["palavra"] * 50_000) + "]"
    with pytest.raises(ManifestError) as raised:
        parse_manifest(GOOD.replace("hints: [a, b]", f"hints: {big}").replace("title: Um", f"title: {big}"))
    assert str(raised.value).startswith("manifest.yaml: exercise-1.title: deveria ser um texto não vazio, é ['palavra', ")
    assert len(str(raised.value)) < 300
    with pytest.raises(ManifestError) as raised:
        parse_manifest(GOOD.replace("version: 1", "version: '" + "x" * 420_000 + "'"))
    assert str(raised.value).startswith("manifest.yaml: version: versão 'xxxx") and len(str(raised.value)) < 300
    with pytest.raises(ManifestError) as raised:
        parse_manifest(GOOD.replace("version: 1", "version: 1\n? " + "k" * 420_000 + "\n: 1"))
    assert str(raised.value).startswith("manifest.yaml: raiz: chave desconhecida 'kkkk") and len(str(raised.value)) < 300


def test_describe_bounds_every_value_it_shows():
    huge = list(range(100_000))
    for schema in ({"type": "string"}, {"type": "string", "x-mensagens": {"*": "não {value!r} nem {value}"}}):
        text = describe(Failure(("a",), "type", "string", huge, schema))
        assert "0, 1, 2" in text and len(text) < 200, text[:300]
    text = describe(Failure(("a",), "type", "string", "y" * 100_000, {"x-mensagens": {"*": "é {value}"}}))
    assert text.startswith("é yyy") and len(text) < 200


def test_a_fixture_alias_bomb_and_a_big_list_give_short_problems():
    import yaml

    bomb = yaml.safe_load(ALIAS_BOMB)["version"]
    for value in (bomb, ["x"] * 60_000):
        started = time.process_time()
        data = json.loads((ROOT / "grader/fixtures/exercise-3/cpA.json").read_text(encoding="utf-8"))
        data["description"] = value
        problems = validate_exercise_3(data)
        assert time.process_time() - started < 0.5
        assert problems and all(len(problem) < 300 for problem in problems), [p[:300] for p in problems]
        assert problems[0].startswith("campo `description`: deveria ser um texto não vazio (é [")


# ------------------------------------------------------------- non-finite numbers, floats for ints

@pytest.mark.parametrize("old, new, message", [
    ("points: 4", "points: .nan", "exercise-1.levels[1].points: deveria ser um número finito, é nan"),
    ("points: 4", "points: .inf", "exercise-1.levels[1].points: deveria ser um número finito, é inf"),
    ("points: 4", "points: -.inf", "exercise-1.levels[1].points: deveria ser um número finito, é -inf"),
    ("{c: 1}", "{c: .NaN}", "exercise-1.levels[1].check_points.c: deveria ser um número finito, é nan"),
    ("{c: 1}", "{c: .inf}", "exercise-1.levels[1].check_points.c: deveria ser um número finito, é inf"),
    ("version: 1", "version: 1.0", "manifest.yaml: version: versão 1.0 não suportada (esperada: 1)"),
    ("{level: 1,", "{level: 1.0,", "exercise-1.levels[0].level: deveria ser um inteiro >= 1, é 1.0"),
    ("{level: 1,", "{level: .nan,", "exercise-1.levels[0].level: deveria ser um inteiro >= 1, é nan"),
])
def test_non_finite_numbers_and_floats_for_ints_are_refused(old, new, message):
    parse_manifest(GOOD)
    assert old in GOOD
    with pytest.raises(ManifestError) as raised:
        parse_manifest(GOOD.replace(old, new, 1))
    assert message in str(raised.value)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_json_fixtures_holding_non_finite_numbers_are_refused(tmp_path, literal):
    from grader.checks.exercise_5.fixtures import validate_fixture as validate_exercise_5
    from grader.core.fixture_loader import read_fixture_files

    folder = tmp_path / "exercise-5"
    folder.mkdir()
    shipped = next((ROOT / "grader/fixtures/exercise-5").glob("*.json"))
    data = json.loads(shipped.read_text(encoding="utf-8"))
    assert validate_exercise_5(data) == []
    mtimes = data.setdefault("mtimes", {})
    path = next(iter(data["run_dir"]))
    mtimes[path] = 1.0
    text = json.dumps(data).replace(f'"{path}": 1.0', f'"{path}": {literal}')
    assert literal in text
    (folder / "quebrada.json").write_text(text, encoding="utf-8")
    item, = [item for item in read_fixture_files("exercise-5", [tmp_path], validate_exercise_5)
             if item.name == "quebrada"]
    assert f"campo `mtimes.{path}`: deveria ser um número finito (é {float(literal.lower().replace('infinity', 'inf'))!r})" in " ".join(item.problems), item.problems


def test_the_jsonschema_engine_refuses_non_finite_numbers_where_a_number_is_expected():
    schema = {"type": "object", "properties": {"n": {"type": "number"}, "free": {}}}
    assert all_failures(schema, {"n": 1.5, "free": float("nan")}) == []
    failure, = all_failures(schema, {"n": float("inf")})
    assert describe(failure) == "deveria ser um número finito (é inf)"


def test_the_course_manifest_loads_with_the_strict_c_loader():
    from grader.core.yaml_reading import StrictCSafeLoader

    assert "CParser" in [cls.__name__ for cls in StrictCSafeLoader.__mro__]
    assert manifest.load_manifest().names == [f"exercise-{n}" for n in range(1, 7)]
