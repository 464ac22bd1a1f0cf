"""The grading engine end to end: a real kernel per test (kept to one each, and few)."""
from __future__ import annotations

import contextlib
import io
import json
import os
import socket
from pathlib import Path
import xml.etree.ElementTree as ET

import nbformat
import pytest

from grader import cli
from grader.core import execution, kernel
from grader.core.engine import grade
from grader.core.limits import Limits
from tests.grader_support import (
    SOLUTION,
    make_notebook,
    namespace_of,
    solution_notebook,
    with_definition,
    write,
    write_new_fixtures,
)

SETUP = "from harness.tools import READ_ONLY_TOOLS, execute_tool"
RESUME_OK = '''def resume_action(cp):
    return {c["id"]: ("rerun" if c["name"] in READ_ONLY_TOOLS else "is_error") for c in cp["pending_tool_use"] or []}'''


@pytest.fixture(scope="module")
def solution_run(tmp_path_factory):
    """`grade exercise-3 --json --junit` on the solution, through the CLI."""
    folder = tmp_path_factory.mktemp("solution")
    before = SOLUTION.stat().st_mtime_ns, SOLUTION.read_bytes()
    junit = folder / "results.xml"
    out = io.StringIO()  # capsys is function-scoped; this fixture is shared by the module
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setenv("GRADE_STATE_FILE", str(folder / "grade-state.json"))  # progress stays out of the repo
        code = cli.main(["exercise-3", "--notebook", str(SOLUTION), "--json", "--junit", str(junit)])
    after = SOLUTION.stat().st_mtime_ns, SOLUTION.read_bytes()
    return code, json.loads(out.getvalue()), junit, before, after


@pytest.mark.slow
def test_solution_scores_100_percent_and_exits_0(solution_run):
    code, report, _, _, _ = solution_run
    assert code == 0
    assert report["score"] == 1.0 and report["passed"] is True
    assert report["total"] == 92 and report["passed_count"] == 92
    assert set(report["levels"]) == {"1", "2", "3"}
    assert report["notebook_error"] is None and report["cell_problems"] == []
    assert report["notebook_error_kind"] is None
    check = report["checks"][0]
    assert set(check) >= {"id", "level", "fixture", "title", "criterion", "status", "expected",
                          "observed", "message", "hint_ref", "output"}


@pytest.mark.slow
def test_student_notebook_is_never_written(solution_run):
    _, _, _, before, after = solution_run
    assert before == after  # same mtime, same bytes


@pytest.mark.slow
def test_junit_report_lists_every_check(solution_run):
    _, report, junit, _, _ = solution_run
    root = ET.parse(junit).getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == report["total"]
    assert root.find("testsuite").get("failures") == "0"
    assert {case.get("name") for case in cases} == {c["id"] for c in report["checks"]}


@pytest.mark.slow
def test_generated_exercise_fails_every_check_as_not_implemented(tmp_path):
    """The students' copy (the committed one, else a fresh `course build`) earns nothing."""
    committed = SOLUTION.parent.parent / "exercises" / "exercise-3.ipynb"
    if committed.exists():
        notebook = committed
    else:
        from authoring.exercises import build_exercise_notebook

        exercise, _ = build_exercise_notebook(solution_notebook(), "exercise-3.ipynb")
        notebook = write(exercise, tmp_path / "exercise-3.ipynb")
    report = grade("exercise-3", notebook)
    assert report.notebook_error is None
    assert report.checks and report.score == 0.0
    for check in report.checks:
        assert check.status == "fail"
        assert "ainda não implementado" in check.message.lower(), (check.id, check.message)


@pytest.mark.slow
def test_one_wrong_answer_end_to_end_through_the_kernel_spy(tmp_path):
    from tests.test_grader_checks import RERUN_EVERYTHING

    notebook = with_definition("reconcile", RERUN_EVERYTHING)
    report = grade("exercise-3", write(notebook, tmp_path / "rerun.ipynb"), level=2)
    failed = {c.id: c.message for c in report.checks if not c.passed}
    high_impact = {f"n2.high_impact_not_repeated[{name}]" for name in
                   ("cpC", "incident-duplicate-email", "incidente-duas-chamadas", "leitura-e-email-juntos",
                    "chamado-pendente", "ferramenta-sem-classificacao")}
    assert set(failed) == high_impact | {"n2.reruns_read_only[leitura-que-falha]"}  # it drops is_error too
    assert all(any(f"reexecutou `{name}`" in failed[check] for name in ("send_email", "create_ticket", "delete_file"))
               for check in high_impact)
    assert "leva o is_error que execute_tool devolveu" in failed["n2.reruns_read_only[leitura-que-falha]"]
    assert report.passed is False and 0 < report.score < 1


@pytest.mark.slow
def test_cell_errors_are_reported_and_execution_goes_on(tmp_path):
    notebook = make_notebook(
        SETUP,
        'def resume_action(cp):\n    raise ValueError("quebrou")',
        "def reconcile(cp)\n    return cp",  # syntax error
        "import sys\nsys.exit()",
        "while True:\n    pass",
        "grande = bytearray(3 * 1024 ** 3)",
        'ROOT_CAUSE = "B"',
    )
    report = grade("exercise-3", write(notebook, tmp_path / "bad.ipynb"), limits=Limits(cell_seconds=3, memory_mb=1024))
    assert report.notebook_error is None
    problems = {p.cell: p.message for p in report.cell_problems}
    assert "erro de sintaxe" in problems[3]
    assert "chamou sys.exit()" in problems[4]
    assert "não terminou em 3 s" in problems[5]
    assert "esgotou a memória do kernel (limite de 1024 MB)" in problems[6]
    assert report.notebook_error_kind == "memory_exhausted"
    by_id = {c.id: c for c in report.checks}
    assert by_id["n2.root_cause_identified"].passed  # the cells after the trouble still ran
    assert "`resume_action` levantou ValueError: quebrou" in by_id["n1.resume_action_decides[cpB]"].message
    reconcile_message = by_id["n2.clears_pending[cpB]"].message
    assert "a célula 3" in reconcile_message and "SyntaxError" in reconcile_message


DEMO = 'print(resume_action({"pending_tool_use": None}))\nraise RuntimeError("a demonstração rodou")'


@pytest.mark.parametrize("tagged", [True, False], ids=["skip-execution", "untagged"])
def test_a_demonstration_cell_tagged_skip_execution_never_runs_in_the_grading_kernel(tmp_path, tagged):
    """A cell that only shows results and that the checks redo (exercise 6's loop over every
    defect) carries nbclient's own tag; untagged, the same cell runs and its error is reported."""
    notebook = make_notebook(SETUP, RESUME_OK, DEMO)
    if tagged:
        notebook.cells[2].metadata["tags"] = ["skip-execution"]
    report = grade("exercise-3", write(notebook, tmp_path / "demo.ipynb"), level=1)
    assert [p.cell for p in report.cell_problems] == ([] if tagged else [3])
    assert {c.id: c for c in report.checks}["n1.resume_action_decides[cpB]"].passed


def test_a_tagged_cell_that_defines_a_graded_function_is_named_with_its_tag(tmp_path):
    """The student sees the function run in JupyterLab; the report must say why the grading has
    none. The error the cell once showed, saved in the file, is the student's and never read."""
    notebook = make_notebook(SETUP, RESUME_OK)
    notebook.cells[1].metadata["tags"] = ["skip-execution"]
    notebook.cells[1].outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="velho", traceback=[])]
    report = grade("exercise-3", write(notebook, tmp_path / "tagged.ipynb"), level=1)
    (problem,) = report.cell_problems
    assert (problem.cell, problem.ename) == (2, "skip-execution")
    assert "tem a tag `skip-execution`" in problem.message and "`resume_action`" in problem.message
    decides = {c.id: c for c in report.checks}["n1.resume_action_decides[cpB]"]
    assert not decides.passed and "a célula 2" in decides.message and "skip-execution" in decides.message, \
        decides.message
    assert "nenhuma célula tem" not in decides.message


def test_the_in_process_runner_of_the_tests_skips_the_same_cells(monkeypatch):
    notebook = make_notebook("ran = []", "ran.append('tagged')", "ran.append('plain')", "def helper():\n    pass")
    notebook.cells[1].metadata["tags"] = ["skip-execution"]
    notebook.cells[3].metadata["tags"] = ["skip-execution"]
    namespace, problems = namespace_of(notebook, monkeypatch)
    assert namespace["ran"] == ["plain"] and "helper" not in namespace
    assert [(p.cell, p.ename, p.names) for p in problems] == [(4, "skip-execution", ["helper"])]


@pytest.mark.slow
def test_bad_functions_fail_their_checks_and_the_kernel_survives(tmp_path):
    notebook = make_notebook(
        SETUP,
        "def resume_action(cp):\n    while True:\n        pass",
        "import os\ndef reconcile(cp):\n    os._exit(3)",
    )
    report = grade("exercise-3", write(notebook, tmp_path / "bad.ipynb"), limits=Limits(check_seconds=1))
    by_id = {c.id: c.message for c in report.checks}
    for fixture in ("cpA", "cpB", "cpC", "incident-duplicate-email"):
        assert "não terminou em 1 s" in by_id[f"n1.resume_action_decides[{fixture}]"]
        assert "chamou os._exit(3)" in by_id[f"n2.keeps_counters[{fixture}]"]
    assert "`ROOT_CAUSE` não foi definida no notebook" in by_id["n2.root_cause_identified"]


@pytest.mark.slow
def test_kernel_death_in_a_cell_fails_every_check_with_a_clear_message(tmp_path):
    notebook = make_notebook(SETUP, RESUME_OK, "import os\nos._exit(1)", 'ROOT_CAUSE = "B"')
    report = grade("exercise-3", write(notebook, tmp_path / "dies.ipynb"))
    assert report.notebook_error and "O kernel do Python morreu ao executar a célula 3 (`import os`)" in report.notebook_error
    assert report.notebook_error_kind == "kernel_died"
    assert report.checks and all(c.message == report.notebook_error for c in report.checks)


def test_a_cell_that_deletes_the_folder_it_runs_in_is_named_in_portuguese(tmp_path):
    notebook = make_notebook(SETUP, RESUME_OK, "import os, shutil\nshutil.rmtree(os.getcwd())", 'ROOT_CAUSE = "B"')
    report = grade("exercise-3", write(notebook, tmp_path / "deletes.ipynb"))
    error = report.notebook_error
    assert error and "A célula 3 (`import os, shutil`) apagou a pasta em que o notebook roda" in error, error
    assert "FileNotFoundError" not in error and "grading-spec" not in error and "No such file" not in error
    assert report.checks and all(not c.passed and c.message == error for c in report.checks)


@pytest.mark.slow
def test_a_function_that_deletes_the_folder_during_the_checks_is_told_so(tmp_path):
    deletes = "import os, shutil\ndef resume_action(cp):\n    shutil.rmtree(os.getcwd())\n    return {}"
    report = grade("exercise-3", write(make_notebook(SETUP, deletes, 'ROOT_CAUSE = "B"'), tmp_path / "deletes.ipynb"))
    assert report.notebook_error is None
    messages = {c.message for c in report.checks}
    assert len(messages) == 1 and not any(c.passed for c in report.checks), messages
    assert "Durante as verificações, o seu código apagou a pasta em que o notebook roda" in messages.pop()


@pytest.mark.slow
def test_kernel_death_during_a_check_names_that_check_and_the_rest_run_in_a_fresh_kernel(tmp_path):
    killer = '''import os, signal
def resume_action(cp):
    if cp["pending_tool_use"] and cp["pending_tool_use"][0]["name"] == "send_email":
        os.kill(os.getpid(), signal.SIGKILL)
    return {c["id"]: "rerun" for c in cp["pending_tool_use"] or []}'''
    report = grade("exercise-3", write(make_notebook(SETUP, killer, 'ROOT_CAUSE = "B"'), tmp_path / "kills.ipynb"))
    by_id = {c.id: c for c in report.checks}
    assert by_id["n1.resume_action_decides[cpA]"].passed and by_id["n1.resume_action_decides[cpB]"].passed
    assert "Durante esta verificação, `resume_action` derrubou o kernel" in by_id["n1.resume_action_decides[cpC]"].message
    # the checks after it ran in a fresh kernel: the student's other answers keep their points
    assert "`resume_action` não foi chamada de novo: na verificação n1.resume_action_decides[cpC]" in \
        by_id["n1.resume_action_decides[duas-leituras]"].message
    assert by_id["n2.root_cause_identified"].passed
    # The notebook itself ran, so notebook_error stays empty; the kind still says what stopped a check.
    assert report.notebook_error is None and report.notebook_error_kind == "kernel_died"


@pytest.mark.slow
def test_total_timeout_kills_a_kernel_that_ignores_interrupts(tmp_path, monkeypatch):
    monkeypatch.setattr(execution, "KILL_GRACE", 1.0)
    stubborn = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    report = grade("exercise-3", write(make_notebook(SETUP, stubborn), tmp_path / "stuck.ipynb"),
                   limits=Limits(cell_seconds=60, total_seconds=3))
    assert "não terminou de executar dentro do limite total de 3 s" in report.notebook_error
    assert report.notebook_error_kind == "timeout"
    assert all(not c.passed for c in report.checks)


@pytest.fixture
def taken_port():
    """A local TCP port some other process already holds (bound and listening)."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    yield holder.getsockname()[1]
    holder.close()


def tcp_on(port: int) -> dict:
    """Kernel manager settings for TCP with the shell port fixed to ``port``."""
    return {"transport": "tcp", "ip": "127.0.0.1", "cache_ports": False, "shell_port": port}


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="kernels talk over Unix sockets only on POSIX")
def test_a_port_taken_while_the_kernel_starts_does_not_kill_the_grading(tmp_path, monkeypatch, taken_port):
    # Over TCP the ports are chosen before the kernel binds them; another process binding
    # one in between (here, from the start) used to kill the kernel at start-up.
    from jupyter_client.connect import LocalPortCache

    monkeypatch.setattr(LocalPortCache, "find_available_port", lambda self, ip: taken_port)
    report = grade("exercise-3", write(make_notebook(SETUP, RESUME_OK), tmp_path / "ok.ipynb"), level=1)
    assert report.notebook_error is None and report.notebook_error_kind is None
    assert report.checks and report.passed


def test_kernel_sockets_live_in_the_grading_folder_when_they_can(tmp_path):
    first, retry = kernel.kernel_connection(tmp_path, 1), kernel.kernel_connection(tmp_path, 2)
    for settings in (first, retry):  # the connection file too: never loose in the temp folder
        connection = Path(settings.pop("connection_file"))
        assert connection.parent == tmp_path and connection.name.startswith("kernel-")
        assert connection.name.endswith("-connection.json")
    if os.name == "posix":
        assert first == {"transport": "ipc", "ip": str(tmp_path / "kernel")}
    else:
        assert first == {"transport": "tcp"}
    assert retry == {"transport": "tcp"}  # a folder that cannot hold sockets still gets a kernel
    too_deep = tmp_path / ("x" * 120)
    assert kernel.kernel_connection(too_deep, 1)["transport"] == "tcp"  # longer than a socket path may be


def test_a_connection_file_name_cannot_be_taken_in_advance(tmp_path):
    """The kernel's code writes in the grading folder; the next kernel's connection file gets a
    name it could not know, so a folder planted under a likely name does not stop it."""
    names = {kernel.kernel_connection(tmp_path, 1, generation=2)["connection_file"] for _ in range(50)}
    assert len(names) == 50


@pytest.mark.slow
def test_a_folder_planted_where_a_restarted_kernels_files_go_does_not_stop_the_grading(tmp_path):
    planted = (
        "import os, time\nif not os.path.exists('kernel2-connection.json'):\n"
        "    os.mkdir('kernel2-connection.json')\n    while True:\n        try:\n"
        "            time.sleep(1000)\n        except BaseException:\n            pass"
    )
    notebook = solution_notebook()
    notebook.cells.insert(0, nbformat.v4.new_code_cell(planted))
    report = grade("exercise-3", write(notebook, tmp_path / "plantada.ipynb"), limits=Limits(cell_seconds=5, total_seconds=240))
    assert report.notebook_error_kind is None, report.notebook_error
    assert report.checks and all(check.passed for check in report.checks)


@pytest.mark.slow
def test_a_kernel_that_fails_to_start_is_started_once_more(tmp_path, monkeypatch, taken_port):
    real = kernel.kernel_connection
    attempts = []

    def first_start_collides(workdir, attempt, generation=1):
        attempts.append(attempt)
        return tcp_on(taken_port) if attempt == 1 else real(workdir, attempt, generation)

    monkeypatch.setattr(kernel, "kernel_connection", first_start_collides)
    report = grade("exercise-3", write(make_notebook(SETUP, RESUME_OK), tmp_path / "ok.ipynb"), level=1)
    assert attempts == [1, 2]
    assert report.notebook_error is None and report.notebook_error_kind is None
    assert report.checks and report.passed


@pytest.mark.slow
def test_a_kernel_that_never_starts_is_a_start_failure_not_a_dead_kernel(tmp_path, monkeypatch, taken_port):
    from grader.instructor import batch

    monkeypatch.setattr(kernel, "kernel_connection", lambda workdir, attempt, generation=1: tcp_on(taken_port))
    report = grade("exercise-3", write(make_notebook(SETUP, RESUME_OK), tmp_path / "ok.ipynb"), level=1)
    assert report.notebook_error_kind == "kernel_start_failed"
    assert report.notebook_error.startswith("Não consegui iniciar o kernel do Python que executaria o notebook (tentei 2 vezes;")
    assert "não no seu notebook" in report.notebook_error and "Address already in use" in report.notebook_error
    assert "morreu" not in report.notebook_error
    assert report.checks and all(c.message == report.notebook_error for c in report.checks)
    row = batch.row_from_report(batch.Submission("bruno", tmp_path / "ok.ipynb", label="ok.ipynb"), report, [1])
    assert row.status == batch.KERNEL_START_FAILED


@pytest.mark.slow
def test_grade_fixtures_reports_malformed_broken_and_new_fixtures(tmp_path, capsys):
    folder = write_new_fixtures(tmp_path / "private")
    (folder / "no-turns.json").write_text(json.dumps({
        "description": "sem turns",
        "checkpoint": {"version": 1, "task": "t", "tokens_used": 0, "pending_tool_use": None,
                       "messages": [{"role": "user", "content": "oi"}]},
        "expect": {"resume_action": {}},
    }), encoding="utf-8")
    broken = json.loads((SOLUTION.parent.parent / "grader/fixtures/exercise-3/cpC.json").read_text(encoding="utf-8"))
    broken["expect"]["resume_action"] = {"toolu_01B": "rerun"}  # wrong: send_email is high impact
    (folder / "wrong-expectation.json").write_text(json.dumps(broken), encoding="utf-8")

    code = cli.main(["fixtures", "exercise-3", "--fixtures", str(folder),
                     "--solutions", str(SOLUTION.parent)])
    out = capsys.readouterr().out
    assert code == 1
    assert "no-turns.json: campo `checkpoint.turns`: obrigatório" in out
    assert "QUEBRADA  wrong-expectation" in out
    assert "n1.resume_action_decides[wrong-expectation]" in out
    for name in ("cpA", "cpB", "cpC", "incident-duplicate-email", "pending-grep", "pending-create-ticket"):
        assert f"ok        {name}:" in out


@pytest.mark.slow
def test_a_broken_fixture_is_explained_as_its_disagreement_with_the_reference_solution(tmp_path, capsys):
    """create_ticket is high impact: an answer key saying `rerun` is the fixture's mistake, and
    the report must say so in those terms, not with the text a student would get."""
    fixture = json.loads((SOLUTION.parent.parent / "grader/fixtures/exercise-3/chamado-pendente.json")
                         .read_text(encoding="utf-8"))
    fixture["expect"]["resume_action"] = {"toolu_01T": "rerun"}
    (tmp_path / "ticket-rerun.json").write_text(json.dumps(fixture), encoding="utf-8")
    code = cli.main(["fixtures", "exercise-3", "--fixtures", str(tmp_path), "--solutions", str(SOLUTION.parent)])
    out = capsys.readouterr().out
    assert code == 1
    assert "QUEBRADA  ticket-rerun: a fixture e a solução de referência discordam em 2 de 8 verificações" in out, out
    assert ('n1.resume_action_decides[ticket-rerun]: a fixture espera {"toolu_01T": "rerun"}; '
            'a solução de referência deu {"toolu_01T": "is_error"}') in out
    assert "a fixture espera create_ticket executada 1 vez; a solução de referência deu 0 vezes" in out
    assert "somente leitura" not in out and "executar de novo" not in out and "READ_ONLY_TOOLS" not in out
    assert "confira o `expect` de ticket-rerun.json" in out, out


@pytest.mark.slow
def test_in_notebook_check_grades_the_saved_file_and_prints_text(capsys, monkeypatch, tmp_path):
    from grader.student.notebook_api import check

    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "grade-state.json"))
    assert check("exercise-3", level=1, notebook=SOLUTION) is None
    out = capsys.readouterr().out
    assert "Nível 1" in out and "Pontuação: 12/12 verificações (100%)." in out


@pytest.mark.slow
def test_the_gradebook_message_names_a_syntax_error_before_the_checks_it_failed(tmp_path):
    """`grade batch`: the instructor reads the notebook's own error first, as the terminal report shows it."""
    from grader.instructor import batch

    notebook = make_notebook(SETUP, RESUME_OK, "def reconcile(cp)\n    return cp", 'x = 1\nraise ValueError("depois")')
    report = grade("exercise-3", write(notebook, tmp_path / "ana.ipynb"), level=2)
    row = batch.row_from_report(batch.Submission("ana", tmp_path / "ana.ipynb", label="ana.ipynb"), report, [1, 2])
    assert row.status == batch.INCOMPLETE
    syntax = next(p for p in report.cell_problems if p.ename == "SyntaxError")
    assert row.message.startswith(" ".join(syntax.message.split())), row.message
    assert "a célula 3" in row.message.lower() and "erro de sintaxe" in row.message
    assert "depois" not in row.message  # only the first cell problem: the checks it broke follow
    assert "falhou: N" in row.message
    passing = grade("exercise-3", write(make_notebook(SETUP, RESUME_OK), tmp_path / "bia.ipynb"), level=1)
    clean = batch.row_from_report(batch.Submission("bia", tmp_path / "bia.ipynb", label="bia.ipynb"), passing, [1])
    assert clean.status == batch.PASSED and "célula" not in clean.message
