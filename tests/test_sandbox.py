"""`--sandbox`: hostile submissions are stopped and reported, the solution still scores 100%."""
from __future__ import annotations

import json
import shutil
import socket
import threading
from pathlib import Path

import nbformat
import pytest

from grader import cli
from grader.core import sandbox
from grader.core.engine import grade
from grader.core.limits import Limits
from grader.instructor import batch
from tests.grader_support import ROOT, solution_notebook, write, write_new_fixtures

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) não instalado; .ci/run o instala")

SECRET = "SEGREDO-DA-BRUNA-42"
ENV_SECRET = "sk-ant-chave-do-instrutor"


class Listener:
    """A TCP server on loopback that counts the connections it accepts (bounded, stops itself)."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        for _ in range(3000):  # at most ten minutes
            if self._stop.is_set():
                break
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.server.close()


def attack_cells(other_submission: Path, private_fixture: Path, port: int) -> list[str]:
    return [
        f"print(open({str(other_submission)!r}).read())",
        f"print(open({str(private_fixture)!r}).read())",
        f"open({str(ROOT / 'grader' / 'invadido.txt')!r}, 'w').write('x')",
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3).sendall(b'oi')",
        # A fork bomb that counts: children wait a moment and leave, the cell reports how far it got.
        "import os, time\nfilhos = []\ntry:\n"
        "    for _ in range(2000):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            time.sleep(1)\n"
        "            os._exit(0)\n"
        "        filhos.append(pid)\n"
        "except OSError as erro:\n"
        "    raise RuntimeError(f'fork recusado depois de {len(filhos)} processos') from erro\n"
        "finally:\n"
        "    for pid in filhos:\n"
        "        os.waitpid(pid, 0)",
        # The instructor's environment (an API key, anything secret) must not reach student code.
        f"import os\nvazados = [k for k, v in os.environ.items() if {ENV_SECRET!r} in v]\n"
        "if vazados:\n    raise RuntimeError(f'variaveis vazadas: {vazados}')",
    ]


def processes_of(uid: int) -> list[int]:
    """Processes still running as ``uid``."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            uid_line = next(line for line in status.read_text().splitlines() if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if int(uid_line.split()[1]) == uid:
            found.append(int(status.parent.name))
    return found


@pytest.mark.slow
def test_attacks_from_a_submission_are_stopped_and_reported_while_its_answers_still_count(tmp_path, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "MEU_SEGREDO", "DATABASE_URL"):
        monkeypatch.setenv(name, ENV_SECRET)
    other = tmp_path / "entregas" / "bruna.ipynb"
    other.parent.mkdir()
    other.write_text(json.dumps({"segredo": SECRET}))
    private = write_new_fixtures(tmp_path / "privadas")
    fixture_file = private / "pending-grep.json"
    listener = Listener()
    try:
        hostile = solution_notebook()
        attacks = attack_cells(other, fixture_file, listener.port)
        hostile.cells[0:0] = [nbformat.v4.new_code_cell(source) for source in attacks]
        notebook = write(hostile, tmp_path / "entregas" / "ana.ipynb")
        box = sandbox.require()
        report = grade("exercise-3", notebook, fixture_dirs=[private], sandbox=box)
    finally:
        listener.close()

    problems = {problem.cell: problem for problem in report.cell_problems}
    assert sorted(problems) == [1, 2, 3, 4, 5], [p.message for p in report.cell_problems]  # cell 6 saw no secret
    assert problems[1].ename == "FileNotFoundError"  # other submissions are not in the sandbox
    assert problems[2].ename == "FileNotFoundError"  # nor the private fixtures
    assert problems[3].ename == "OSError" and "Read-only file system" in problems[3].evalue
    assert problems[4].ename in {"ConnectionRefusedError", "OSError"}
    assert problems[5].ename == "RuntimeError" and "fork recusado depois de" in problems[5].evalue
    forks = int(problems[5].evalue.split("depois de ")[1].split()[0])
    assert forks < sandbox.DEFAULT_MAX_PROCESSES
    assert listener.accepted == 0
    assert not (ROOT / "grader" / "invadido.txt").exists()
    text = json.dumps(report.to_dict(), ensure_ascii=False)
    assert ENV_SECRET not in text
    assert SECRET not in text and "Revisar contrato do fornecedor" not in text.split('"checks"')[0]
    # The student's own answers ran after the attacks and are graded, hidden fixtures included.
    assert report.passed, [c.message for c in report.failed()]
    assert any(check.fixture == "pending-grep" for check in report.checks)
    if box.uid is not None:  # as root, the kernel ran as a user id of its own
        assert processes_of(box.uid) == []  # every process of the sandbox died with it


SIBLING_PROBE = (
    # Another kernel of the same worker (the next one, prelaunched) runs beside this one: it can be
    # seen in /proc, but neither signalled, nor entered, nor read; its grading folder cannot be listed.
    "import os, signal\nachados = []\n"
    "for nome in os.listdir('/proc'):\n"
    "    if not nome.isdigit() or int(nome) in (os.getpid(), 1):\n"
    "        continue\n"
    "    for tentativa in (lambda: os.kill(int(nome), signal.SIGKILL), lambda: os.listdir(f'/proc/{nome}/cwd'),\n"
    "                      lambda: open(f'/proc/{nome}/environ').read()):\n"
    "        try:\n"
    "            tentativa()\n"
    "            achados.append(nome)\n"
    "        except (PermissionError, ProcessLookupError, FileNotFoundError):\n"
    "            pass\n"
    "try:\n    os.listdir(os.path.dirname(os.getcwd()))\n    achados.append('pasta das correcoes')\n"
    "except PermissionError:\n    pass\n"
    "import sys\nraise RuntimeError(f'vizinhos alcancados={achados} modelo={\"anthropic\" in sys.modules} uid={os.getuid()}')"
)
# Left running after its kernel ends: it must not live on into the next kernel of the same user.
STRAY = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(600)\n    os._exit(0)")


@pytest.mark.slow
def test_batch_sandbox_forks_confined_kernels_that_stop_the_same_attacks(tmp_path, monkeypatch):
    """As root, grade batch --sandbox forks each kernel from one sandboxed template per worker, each
    as its own user: the attacks of the per-kernel sandbox are stopped just the same."""
    if sandbox.sandbox_uid() is None:
        pytest.skip("kernels forked in one sandbox need root (to give each its own user id)")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_SECRET)
    entregas = tmp_path / "entregas"
    entregas.mkdir()
    other = tmp_path / "outra-turma.ipynb"
    other.write_text(json.dumps({"segredo": SECRET}))
    private = write_new_fixtures(tmp_path / "privadas")
    listener = Listener()
    try:
        for name in ("ana", "bia", "caio"):
            hostile = solution_notebook()
            cells = [*attack_cells(other, private / "pending-grep.json", listener.port), SIBLING_PROBE, STRAY]
            hostile.cells[0:0] = [nbformat.v4.new_code_cell(source) for source in cells]
            write(hostile, entregas / f"{name}.ipynb")
        submissions, _ = batch.find_submissions(entregas, "exercise-3")
        levels, checks = batch.plan_summary("exercise-3", (private,))
        options = batch.BatchOptions(exercise="exercise-3", sandbox=True, fixture_dirs=(private,),
                                     hard_timeout=batch.worker_deadline(Limits(), checks))
        rows = batch.grade_all(submissions, options, levels, jobs=1)
    finally:
        listener.close()

    users = set()
    for row in rows:
        assert row.status == batch.PASSED, row.message  # the answers after the attacks all count
        problems = {problem.cell: problem for problem in row.report.cell_problems}
        assert sorted(problems) == [1, 2, 3, 4, 5, 7], [p.message for p in row.report.cell_problems]
        assert problems[1].ename == problems[2].ename == "FileNotFoundError"
        assert problems[3].ename == "OSError" and "Read-only file system" in problems[3].evalue
        assert problems[4].ename in {"ConnectionRefusedError", "OSError"}
        forks = int(problems[5].evalue.split("depois de ")[1].split()[0])
        assert forks < sandbox.DEFAULT_MAX_PROCESSES
        assert "vizinhos alcancados=[]" in problems[7].evalue and "modelo=True" in problems[7].evalue
        users.add(int(problems[7].evalue.split("uid=")[1]))
        text = json.dumps(row.report.to_dict(), ensure_ascii=False)
        assert ENV_SECRET not in text and SECRET not in text
    assert listener.accepted == 0 and not (ROOT / "grader" / "invadido.txt").exists()
    assert len(users) == 2 and 0 not in users  # two users, alternating: neighbours never share one
    assert all(processes_of(uid) == [] for uid in users)  # the strays died at the latest with the batch


@pytest.mark.slow
@pytest.mark.parametrize("exercise", [f"exercise-{n}" for n in range(1, 7)])
def test_every_solution_scores_everything_under_grade_sandbox(exercise, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "state.json"))
    code = cli.main([exercise, "--notebook", str(ROOT / "solutions" / f"{exercise}.ipynb"), "--sandbox", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["score"] == 1.0 and data["passed"]


@pytest.mark.slow
def test_batch_sandbox_grades_each_submission_apart(tmp_path, capsys):
    entregas = tmp_path / "entregas"
    entregas.mkdir()
    shutil.copyfile(ROOT / "solutions" / "exercise-3.ipynb", entregas / "ana.ipynb")
    snoop = solution_notebook()
    snoop.cells.insert(0, nbformat.v4.new_code_cell(f"print(open({str(entregas / 'ana.ipynb')!r}).read()[:50])"))
    write(snoop, entregas / "bruno.ipynb")
    gradebook = tmp_path / "notas.csv"
    code = cli.main(["batch", str(entregas), "exercise-3", "-j", "2", "--sandbox", "--csv", str(gradebook),
                     "--feedback", str(tmp_path / "retorno")])
    assert code == 0
    text = gradebook.read_text(encoding="utf-8")
    assert text.count(batch.PASSED) == 2
    bruno = (tmp_path / "retorno" / "bruno.html").read_text(encoding="utf-8")
    assert "FileNotFoundError" in bruno and "Avisos do notebook" in bruno


def test_without_bwrap_sandbox_refuses_to_grade_and_says_how_to_install(tmp_path, capsys, monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None if name == "bwrap" else real_which(name))
    sandbox._probe.cache_clear()
    try:
        code = cli.main(["exercise-3", "--notebook", str(ROOT / "solutions" / "exercise-3.ipynb"), "--sandbox"])
        captured = capsys.readouterr()
        assert code == 2 and captured.out == ""
        assert "apt-get install bubblewrap" in captured.err and "não roda isolada" in captured.err
        entregas = tmp_path / "entregas"
        entregas.mkdir()
        shutil.copyfile(ROOT / "solutions" / "exercise-3.ipynb", entregas / "ana.ipynb")
        code = cli.main(["batch", str(entregas), "exercise-3", "--sandbox", "--csv", str(tmp_path / "n.csv")])
        assert code == 2 and "apt-get install bubblewrap" in capsys.readouterr().err
        assert not (tmp_path / "n.csv").exists()
    finally:
        sandbox._probe.cache_clear()


@pytest.mark.slow
def test_a_sandboxed_kernel_whose_template_fails_starts_in_a_bubblewrap_of_its_own(tmp_path, monkeypatch):
    """Never unsandboxed: when the worker's template cannot fork, the kernel's whole command (bwrap
    around it) runs, as it does without a template."""
    from grader.core.warm import PrelaunchedKernel, kernel_users, sandboxed_template

    if sandbox.sandbox_uid() is None:
        pytest.skip("kernels forked in one sandbox need root")
    monkeypatch.setattr("tempfile.tempdir", None)  # the worker points these at its folder; undone after
    monkeypatch.setattr("grader.core.scratch._placed_in", None)
    box = sandbox.require()
    template = sandboxed_template("exercise-3", box)
    try:
        users = kernel_users(box, template)
        forked = PrelaunchedKernel(next(users), template)
        assert forked._km.provisioner.pidfd is not None  # from the template
        forked.discard()
        template.server.process.kill()
        template.server.process.wait()

        fallback = PrelaunchedKernel(next(users), template)
        try:
            process = fallback._km.provisioner.process
            assert fallback._km.provisioner.pidfd is None and process is not None
            assert "bwrap" in process.args and "--unshare-net" in process.args
        finally:
            fallback.discard()
    finally:
        template.close()
    assert not template.scratch.exists()


HANG = "\n    while True:\n        try:\n            time.sleep(1000)\n        except BaseException:\n            pass"
PLANTED = {
    # The grader writes its checks' plan under this name, right before the checks run.
    "spec": "import os\nos.symlink({victim!r}, 'grading-spec.json')",
    # The second kernel's log: the grader opens it to append and hands it to the new kernel.
    "log": "import os, time\nif not os.path.exists('marca'):\n    open('marca', 'w').close()\n"
           "    os.symlink({victim!r}, 'kernel-stderr-2-1.log')" + HANG,
    # A folder in the way of the second kernel's connection file, and logs the grader quotes from.
    "read": "import os, time\nif not os.path.exists('kernel2-connection.json'):\n"
            "    os.symlink({secret!r}, 'kernel-stderr-2-1.log')\n    os.symlink({secret!r}, 'kernel-stderr-2-2.log')\n"
            "    os.mkdir('kernel2-connection.json')" + HANG,
}


@pytest.mark.slow
@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_the_grader_never_follows_what_a_sandboxed_kernel_plants_in_its_folder(planted, tmp_path):
    """The grader runs outside the sandbox (as root, here): a link the kernel puts under the name of a
    file the grader writes, appends to or reads must not lead it to a file outside the folder, and the
    student's answers are still graded."""
    victim, secret = tmp_path / "alvo.txt", tmp_path / "segredo.txt"
    victim.write_text("intacto\n")
    secret.write_text(f"{SECRET}\n")
    hostile = solution_notebook()
    hostile.cells.insert(0, nbformat.v4.new_code_cell(PLANTED[planted].format(victim=str(victim), secret=str(secret))))
    notebook = write(hostile, tmp_path / "entrega.ipynb")

    report = grade("exercise-3", notebook, sandbox=sandbox.require(), limits=Limits(cell_seconds=5, total_seconds=240))

    assert victim.read_text() == "intacto\n"  # nothing written or appended through a planted link
    assert SECRET not in json.dumps(report.to_dict(), ensure_ascii=False)  # nothing read through one
    assert report.checks and all(check.passed for check in report.checks), [c.message for c in report.failed()]


@pytest.mark.slow
def test_a_sandboxed_cell_past_its_limit_is_interrupted_not_killed(tmp_path):
    """The interrupt reaches the cell (KeyboardInterrupt), and bubblewrap, in the same process group,
    survives it: the kernel goes on and the rest of the notebook is graded."""
    looping = solution_notebook()
    looping.cells.insert(0, nbformat.v4.new_code_cell("while True:\n    pass"))
    notebook = write(looping, tmp_path / "laco.ipynb")

    report = grade("exercise-3", notebook, sandbox=sandbox.require(), limits=Limits(cell_seconds=3, total_seconds=240))

    problems = [problem.message for problem in report.cell_problems]
    assert any("não terminou em 3 s e foi interrompida" in message for message in problems), problems
    assert report.notebook_error_kind is None and all(check.passed for check in report.checks)
