"""`course build` / `course check`: solution markers turned into students' stubs."""
from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import nbformat
import pytest

from authoring.notebook_metadata import course_kernel_metadata
from authoring import exercises
from authoring.exercises import (
    SolutionMarkerError,
    build_exercise_notebook,
    check_problems,
    replace_code_solutions,
    replace_markdown_solutions,
)

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

FUNCTION_CELL = '''\
from harness.tools import READ_ONLY_TOOLS


def resume_action(cp):
    """Decide o que fazer com cada chamada pendente."""
    ### BEGIN SOLUTION
    pending = cp["pending_tool_use"] or []
    return {call["id"]: "rerun" if call["name"] in READ_ONLY_TOOLS else "is_error" for call in pending}
    ### END SOLUTION
'''


def make_solution(cells: list, *, outputs: bool = True) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNELSPEC})
    for kind, source in cells:
        if kind == "code":
            cell = nbformat.v4.new_code_cell(source)
            if outputs:
                cell.execution_count = 3
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="resposta secreta\n")]
                cell.metadata["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00"}
        else:
            cell = nbformat.v4.new_markdown_cell(source)
        notebook.cells.append(cell)
    return notebook


def write_project(root: Path, solutions: dict[str, nbformat.NotebookNode]) -> None:
    (root / "solutions").mkdir(parents=True, exist_ok=True)
    for name, notebook in solutions.items():
        nbformat.write(notebook, str(root / "solutions" / f"{name}.ipynb"))


def run_build(root: Path, *names: str) -> int:
    return exercises.run(argparse.Namespace(root=root, exercises=list(names)))


# ------------------------------------------------------------- code markers


def test_function_stub_keeps_signature_and_docstring():
    code, blocks = replace_code_solutions(FUNCTION_CELL)
    assert blocks == 1
    assert "READ_ONLY_TOOLS else" not in code
    assert "BEGIN SOLUTION" not in code and "END SOLUTION" not in code
    tree = ast.parse(code)
    function = next(node for node in tree.body if isinstance(node, ast.FunctionDef))
    assert function.name == "resume_action"
    assert [arg.arg for arg in function.args.args] == ["cp"]
    assert ast.get_docstring(function) == "Decide o que fazer com cada chamada pendente."
    raise_node = function.body[-1]
    assert isinstance(raise_node, ast.Raise)
    message = raise_node.exc.args[0].value
    assert message.startswith("Ainda não implementado: ")
    assert "resume_action" in message


def test_stub_raises_not_implemented_when_called():
    code, _ = replace_code_solutions(FUNCTION_CELL.replace("from harness.tools import READ_ONLY_TOOLS\n", ""))
    namespace: dict = {}
    exec(compile(code, "<exercise>", "exec"), namespace)
    with pytest.raises(NotImplementedError, match="Ainda não implementado"):
        namespace["resume_action"]({"pending_tool_use": None})


def test_hint_line_becomes_the_stub_message():
    source = (
        "def reconcile(cp):\n"
        "    ### BEGIN SOLUTION\n"
        "    ### HINT: separe as ferramentas pelo nome antes de executar.\n"
        "    return cp\n"
        "    ### END SOLUTION\n"
    )
    code, _ = replace_code_solutions(source)
    assert 'raise NotImplementedError("Ainda não implementado: separe as ferramentas pelo nome antes de executar.")' in code
    assert "HINT" not in code and "return cp" not in code


def test_nested_block_keeps_its_indentation_and_the_code_around_it():
    source = (
        "def total(items):\n"
        "    result = 0\n"
        "    for item in items:\n"
        "        ### BEGIN SOLUTION\n"
        "        result += item\n"
        "        ### END SOLUTION\n"
        "    return result\n"
    )
    code, blocks = replace_code_solutions(source)
    assert blocks == 1
    lines = code.split("\n")
    assert lines[3].startswith("        raise NotImplementedError(")
    assert "total()" in lines[3]
    assert lines[4] == "    return result"
    ast.parse(code)


def test_several_blocks_in_one_cell():
    source = (
        "def a():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n\n"
        "def b():\n    ### BEGIN SOLUTION\n    return 2\n    ### END SOLUTION\n"
    )
    code, blocks = replace_code_solutions(source)
    assert blocks == 2
    assert code.count("raise NotImplementedError") == 2
    assert "a()" in code.split("def b")[0] and "b()" in code.split("def b")[1]


def test_structured_answer_variables_become_none_with_a_comment():
    source = (
        "# Qual foi a causa raiz? (a, b ou c)\n"
        "### BEGIN SOLUTION\n"
        'ROOT_CAUSE = "b"\n'
        "SAFE_TO_RERUN = False\n"
        "### END SOLUTION\n"
    )
    code, blocks = replace_code_solutions(source)
    assert blocks == 1
    assert 'ROOT_CAUSE = None  # escolha uma letra' in code
    assert "SAFE_TO_RERUN = None  # True ou False" in code
    assert '"b"' not in code and "False" not in code.replace("True ou False", "")


def test_structured_answer_uses_the_hint_as_comment():
    source = '### BEGIN SOLUTION\n### HINT: a, b ou c\nROOT_CAUSE = "b"\n### END SOLUTION\n'
    code, _ = replace_code_solutions(source)
    assert code.strip() == "ROOT_CAUSE = None  # a, b ou c"


def test_top_level_code_block_gets_a_raising_stub():
    source = "### BEGIN SOLUTION\nfor i in range(3):\n    print(i)\n### END SOLUTION\n"
    code, _ = replace_code_solutions(source)
    assert code.strip().startswith("raise NotImplementedError(")
    assert "print" not in code


@pytest.mark.parametrize(
    "source, problem",
    [
        ("x = 1\n### BEGIN SOLUTION\ny = 2\n", "sem ### END SOLUTION"),
        ("### END SOLUTION\n", "sem ### BEGIN SOLUTION antes"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n", "dentro de outro bloco"),
        ("# BEGIN SOLUTION\nsecret = 1\n# END SOLUTION\n", "marcador malformado"),
        ("<!-- BEGIN SOLUTION -->\n", "marcador de markdown numa célula de código"),
    ],
)
def test_bad_code_markers_are_errors_naming_the_line(source, problem):
    with pytest.raises(SolutionMarkerError, match=problem) as caught:
        replace_code_solutions(source, "solutions/exercise-9.ipynb: célula 2")
    assert "célula 2, linha" in str(caught.value)


# --------------------------------------------------------- markdown markers


def test_markdown_block_becomes_placeholder():
    source = "**Por que o e-mail saiu duas vezes?**\n\n<!-- BEGIN SOLUTION -->\nPorque o reconcile reexecutou.\n<!-- END SOLUTION -->\n\nFim."
    text, blocks = replace_markdown_solutions(source)
    assert blocks == 1
    assert "reexecutou" not in text
    assert "Sua resposta aqui" in text
    assert text.startswith("**Por que o e-mail saiu duas vezes?**") and text.endswith("Fim.")


@pytest.mark.parametrize(
    "source, problem",
    [
        ("<!-- BEGIN SOLUTION -->\nresposta\n", "sem <!-- END SOLUTION -->"),
        ("resposta\n<!-- END SOLUTION -->", "sem <!-- BEGIN SOLUTION --> antes"),
        ("### BEGIN SOLUTION\n", "marcador de código numa célula markdown"),
        ("<!-- begin solution -->\nresposta\n", "marcador malformado"),
    ],
)
def test_bad_markdown_markers_are_errors(source, problem):
    with pytest.raises(SolutionMarkerError, match=problem):
        replace_markdown_solutions(source)


# ---------------------------------------------------------------- notebooks


def test_build_clears_outputs_and_keeps_ids_tags_and_kernelspec():
    solution = make_solution([("markdown", "# Exercício"), ("code", FUNCTION_CELL)])
    solution.cells[1].metadata["tags"] = ["raises-exception"]
    exercise, blocks = build_exercise_notebook(solution, "exercise-9.ipynb")
    assert blocks == 1
    code_cell = exercise.cells[1]
    assert code_cell.outputs == [] and code_cell.execution_count is None
    assert "execution" not in code_cell.metadata
    assert code_cell.metadata["tags"] == ["raises-exception"]
    assert [cell.id for cell in exercise.cells] == [cell.id for cell in solution.cells]
    assert exercise.metadata["kernelspec"] == course_kernel_metadata()["kernelspec"]  # what Lab writes
    # The solution object itself is left untouched.
    assert solution.cells[1].outputs and "READ_ONLY_TOOLS else" in solution.cells[1].source


def test_cells_without_ids_get_stable_ids():
    solution = make_solution([("code", FUNCTION_CELL), ("markdown", "texto")])
    for cell in solution.cells:
        del cell["id"]
    solution.nbformat_minor = 4
    first, _ = build_exercise_notebook(solution, "exercise-9.ipynb")
    second, _ = build_exercise_notebook(solution, "exercise-9.ipynb")
    ids = [cell.id for cell in first.cells]
    assert all(ids) and len(set(ids)) == 2
    assert ids == [cell.id for cell in second.cells]
    nbformat.validate(first)


def test_solution_without_markers_is_refused():
    solution = make_solution([("code", "x = 1\n")])
    with pytest.raises(SolutionMarkerError, match="nenhum marcador"):
        build_exercise_notebook(solution, "exercise-9.ipynb")


def test_stub_that_breaks_the_cell_is_reported():
    # The END marker is indented deeper than the code after it expects.
    source = "if True:\n### BEGIN SOLUTION\n    x = 1\n### END SOLUTION\n"
    solution = make_solution([("code", source)])
    with pytest.raises(SolutionMarkerError, match="não é Python válido"):
        build_exercise_notebook(solution, "exercise-9.ipynb")


def test_build_writes_deterministic_bytes_and_is_idempotent(tmp_path, capsys):
    write_project(tmp_path, {"exercise-9": make_solution([("markdown", "Olá, ação!"), ("code", FUNCTION_CELL)])})
    assert run_build(tmp_path) == 0
    target = tmp_path / "exercises" / "exercise-9.ipynb"
    first = target.read_bytes()
    assert first.endswith(b"}\n")
    text = first.decode("utf-8")
    assert "ação" in text  # ensure_ascii=False
    assert '\n "cells": [\n  {\n' in text  # indent=1
    assert json.loads(text)["cells"][1]["outputs"] == []
    mtime = target.stat().st_mtime_ns
    assert run_build(tmp_path) == 0
    assert target.read_bytes() == first
    assert target.stat().st_mtime_ns == mtime  # not rewritten
    out = capsys.readouterr().out
    assert "gerado a partir de solutions/exercise-9.ipynb" in out
    assert "já estava em dia" in out
    # The generated notebook is itself a valid nbformat 4.5 notebook.
    nbformat.validate(nbformat.reads(text, as_version=4))


def test_check_reports_drift_missing_and_orphan_exercises(tmp_path):
    write_project(tmp_path, {"exercise-9": make_solution([("code", FUNCTION_CELL)])})
    assert check_problems(tmp_path) == ["exercises/exercise-9.ipynb não existe; rode `course build` (comando de instrutor: "
                                      "quem resolve os exercícios nunca precisa dele)."]
    assert run_build(tmp_path) == 0
    assert check_problems(tmp_path) == []

    # Someone edits the solution and forgets to rebuild.
    path = tmp_path / "solutions" / "exercise-9.ipynb"
    solution = nbformat.read(str(path), as_version=4)
    solution.cells[0].source = solution.cells[0].source.replace("cp):", "cp, extra=None):")
    nbformat.write(solution, str(path))
    problems = check_problems(tmp_path)
    assert len(problems) == 1 and "está desatualizado" in problems[0]
    assert run_build(tmp_path, "exercise-9") == 0
    assert check_problems(tmp_path) == []

    # An exercise whose solution is gone is reported too.
    (tmp_path / "exercises" / "exercise-8.ipynb").write_text("{}", encoding="utf-8")
    assert check_problems(tmp_path) == ["exercises/exercise-8.ipynb não tem fonte em solutions/exercise-8.ipynb."]


def test_check_and_build_report_bad_solutions(tmp_path, capsys):
    write_project(
        tmp_path,
        {
            "exercise-1": make_solution([("code", "x = 1\n")]),
            "exercise-2": make_solution([("code", "### BEGIN SOLUTION\nx = 1\n")]),
        },
    )
    (tmp_path / "solutions" / "exercise-3.ipynb").write_text("não é json", encoding="utf-8")
    problems = check_problems(tmp_path)
    assert len(problems) == 3
    assert "exercise-1.ipynb: nenhum marcador" in problems[0]
    assert "exercise-2.ipynb: célula 1, linha 1: ### BEGIN SOLUTION sem ### END SOLUTION" in problems[1]
    assert "exercise-3.ipynb: não é um notebook válido" in problems[2]
    assert run_build(tmp_path) == 1
    assert not (tmp_path / "exercises").exists()  # nothing half-built
    out = capsys.readouterr().out
    assert out.count("course build: erro em") == 3


def test_build_of_unknown_exercise_is_an_error(tmp_path, capsys):
    write_project(tmp_path, {"exercise-9": make_solution([("code", FUNCTION_CELL)])})
    assert run_build(tmp_path, "exercise-7") == 1
    assert "solutions/exercise-7.ipynb não existe" in capsys.readouterr().out


def test_course_cli_dispatches_build(tmp_path, capsys):
    # The CLI imports every subcommand's module when it builds its parser.
    for module in ("authoring.glossary", "authoring.site"):
        pytest.importorskip(module)
    from authoring import cli

    write_project(tmp_path, {"exercise-9": make_solution([("code", FUNCTION_CELL)])})
    assert cli.main(["--root", str(tmp_path), "build", "exercise-9"]) == 0
    assert (tmp_path / "exercises" / "exercise-9.ipynb").exists()
    assert exercises.check_problems(tmp_path) == []


@pytest.mark.parametrize("hint", ['use cp["pending_tool_use"]', "it's \\ tricky", "aspas 'simples' e \"duplas\""])
def test_hint_with_quotes_stays_a_valid_literal(hint):
    source = f"def f():\n    ### BEGIN SOLUTION\n    ### HINT: {hint}\n    return 1\n    ### END SOLUTION\n"
    code, _ = replace_code_solutions(source)
    namespace: dict = {}
    exec(code, namespace)
    with pytest.raises(NotImplementedError) as caught:
        namespace["f"]()
    assert str(caught.value) == f"Ainda não implementado: {hint}"


# ------------------------------------------------------- a student's answers


def students_answer(root: Path, name: str = "exercise-9") -> bytes:
    """The generated exercise with the stub replaced by an answer, saved as JupyterLab would."""
    target = root / "exercises" / f"{name}.ipynb"
    notebook = nbformat.read(str(target), as_version=4)
    cell = next(c for c in notebook.cells if c.cell_type == "code")
    cell.source = cell.source.replace('raise NotImplementedError(', 'return {}  # minha resposta\n    (')
    nbformat.write(notebook, str(target))
    return target.read_bytes()


def edit_solution(root: Path, name: str = "exercise-9") -> None:
    path = root / "solutions" / f"{name}.ipynb"
    solution = nbformat.read(str(path), as_version=4)
    solution.cells[0].source = solution.cells[0].source.replace("cp):", "cp, extra=None):")
    nbformat.write(solution, str(path))


def build(root: Path, *names: str, force: bool = False) -> int:
    return exercises.run(argparse.Namespace(root=root, exercises=list(names), force=force))


@pytest.mark.parametrize("solution_changed", [False, True], ids=["same-solution", "solution-changed"])
def test_build_refuses_to_overwrite_an_exercise_someone_edited(tmp_path, capsys, solution_changed):
    write_project(tmp_path, {"exercise-9": make_solution([("code", FUNCTION_CELL)])})
    assert build(tmp_path) == 0
    answered = students_answer(tmp_path)
    if solution_changed:
        edit_solution(tmp_path)
    capsys.readouterr()
    assert build(tmp_path) == 1
    out = capsys.readouterr().out
    assert (tmp_path / "exercises" / "exercise-9.ipynb").read_bytes() == answered  # nothing lost
    assert "exercises/exercise-9.ipynb: a célula 1 foi editada depois do último `course build`" in out, out
    assert "--force" in out and "Nada foi trocado" in out
    assert list((tmp_path / "exercises").iterdir()) == [tmp_path / "exercises" / "exercise-9.ipynb"]


def test_forced_build_keeps_a_backup_of_the_edited_exercise(tmp_path, capsys):
    write_project(tmp_path, {"exercise-9": make_solution([("code", FUNCTION_CELL)])})
    assert build(tmp_path) == 0
    answered = students_answer(tmp_path)
    edit_solution(tmp_path)
    capsys.readouterr()
    assert build(tmp_path, "exercise-9", force=True) == 0
    backups = sorted((tmp_path / "exercises").glob("exercise-9-copia-*.ipynb"))
    assert len(backups) == 1 and backups[0].read_bytes() == answered
    assert f"cópia das edições em exercises/{backups[0].name}" in capsys.readouterr().out
    assert check_problems(tmp_path) == []  # the copy is not an exercise without a source
    # a second forced build never overwrites the first copy
    students_answer(tmp_path)
    assert build(tmp_path, "exercise-9", force=True) == 0
    assert len(list((tmp_path / "exercises").glob("exercise-9-copia-*.ipynb"))) == 2
    assert backups[0].read_bytes() == answered


def test_outputs_of_a_run_are_not_edits_and_the_build_goes_on(tmp_path):
    write_project(tmp_path, {"exercise-9": make_solution([("code", FUNCTION_CELL)])})
    assert build(tmp_path) == 0
    target = tmp_path / "exercises" / "exercise-9.ipynb"
    notebook = nbformat.read(str(target), as_version=4)
    notebook.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="rodei\n")]
    notebook.cells[0].execution_count = 1
    nbformat.write(notebook, str(target))
    edit_solution(tmp_path)
    assert build(tmp_path) == 0
    assert "extra=None" in target.read_text(encoding="utf-8")
    assert not list((tmp_path / "exercises").glob("*-copia-*"))


def test_an_exercise_built_before_the_record_or_unreadable_is_protected_too(tmp_path, capsys):
    write_project(tmp_path, {"exercise-9": make_solution([("code", FUNCTION_CELL)])})
    assert build(tmp_path) == 0
    target = tmp_path / "exercises" / "exercise-9.ipynb"
    unrecorded = nbformat.read(str(target), as_version=4)
    del unrecorded.metadata["course_build"]
    nbformat.write(unrecorded, str(target))
    assert build(tmp_path) == 0  # same cells as a fresh build: nothing of anyone's is lost
    assert "course_build" in target.read_text(encoding="utf-8")
    students_answer(tmp_path)
    unrecorded = nbformat.read(str(target), as_version=4)
    del unrecorded.metadata["course_build"]
    nbformat.write(unrecorded, str(target))
    assert build(tmp_path) == 1
    target.write_text("{ meio notebook", encoding="utf-8")
    assert build(tmp_path) == 1
    assert "não é um notebook legível" in capsys.readouterr().out
    assert target.read_text(encoding="utf-8") == "{ meio notebook"
    assert build(tmp_path, force=True) == 0
    assert [p.read_text(encoding="utf-8") for p in (tmp_path / "exercises").glob("exercise-9-copia-*")] == ["{ meio notebook"]


def test_check_says_build_is_an_instructor_command_and_names_edited_exercises(tmp_path):
    write_project(tmp_path, {"exercise-9": make_solution([("code", FUNCTION_CELL)])})
    assert build(tmp_path) == 0
    edit_solution(tmp_path)
    [stale] = check_problems(tmp_path)
    assert "está desatualizado" in stale and "comando de instrutor" in stale, stale
    students_answer(tmp_path)
    [edited] = check_problems(tmp_path)
    assert "a célula 1 foi editada depois do último `course build`" in edited, edited
    assert "comando de instrutor" in edited and "--force" in edited
    assert "rode `course build`" not in edited


def test_course_cli_build_takes_force(tmp_path, capsys):
    pytest.importorskip("authoring.site")
    from authoring import cli

    write_project(tmp_path, {"exercise-9": make_solution([("code", FUNCTION_CELL)])})
    assert cli.main(["--root", str(tmp_path), "build"]) == 0
    students_answer(tmp_path)
    assert cli.main(["--root", str(tmp_path), "build", "exercise-9"]) == 1
    assert cli.main(["--root", str(tmp_path), "build", "--force", "exercise-9"]) == 0
    assert len(list((tmp_path / "exercises").glob("exercise-9-copia-*.ipynb"))) == 1
