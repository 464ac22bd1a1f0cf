"""Kernels forked from the batch worker's template (grader/core/kernel_template.py, grader/core/forked_kernels.py).

Each submission must still get a kernel nothing ran code in: what one submission changes
in its kernel (a module global, a patched harness function) is never seen by the next.
The template is an optimisation only: when it cannot help, kernels start as before, and
the limits (interrupt, kill, memory) act on a forked kernel as on any other.
"""
from __future__ import annotations

import re
import textwrap

import nbformat
import pytest

from grader.core.engine import grade_with_fixtures, load_exercise
from grader.core.environment import kernel_env
from grader.core.fixture_loader import load_fixtures
from grader.core.limits import DEFAULT_LIMITS, Limits
from grader.core.forked_kernels import ForkedProvisioner, KernelTemplate, notebook_imports, supported, template_modules
from grader.core.warm import PrelaunchedKernel
from grader.instructor import batch
from tests.grader_support import SOLUTION, make_notebook, solution_notebook, write
from tests.test_grader_engine import RESUME_OK, SETUP
from tests.test_grader_limits import SWALLOWS_THE_INTERRUPT

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not supported(), reason="kernels forked from a template need Linux (fork, pidfd)")]

MARKS_THE_KERNEL = "import sys\nFROM_TEMPLATE = 'anthropic' in sys.modules  # imported before any cell ran: a forked kernel"
PATCHES_EVERYTHING = textwrap.dedent("""\
    import anthropic, builtins, json, harness.tools
    for module in (anthropic, builtins, json, harness.tools):
        module.LEAKED = True
    harness.tools.READ_ONLY_TOOLS = frozenset()  # resume_action now reruns nothing: its checks fail
""")
PROBE = textwrap.dedent("""\
    import anthropic, builtins, json, random, harness.tools
    leaked = [name for name, module in (("anthropic", anthropic), ("builtins", builtins), ("json", json),
                                        ("harness.tools", harness.tools)) if hasattr(module, "LEAKED")]
    if not harness.tools.READ_ONLY_TOOLS:
        leaked.append("READ_ONLY_TOOLS")
    raise RuntimeError(f"sonda template={FROM_TEMPLATE} vazou={','.join(leaked) or '-'} aleatorio={random.getrandbits(64)}")
""")


def _solution_with(before: list[str], after: list[str]) -> nbformat.NotebookNode:
    notebook = solution_notebook()
    notebook.cells = [*make_notebook(*before).cells, *notebook.cells, *make_notebook(*after).cells]
    return notebook


def _probe(row: batch.Row) -> dict[str, str]:
    [problem] = [p for p in row.report.cell_problems if p.ename == "RuntimeError"]
    return dict(re.findall(r"(\w+)=(\S+)", problem.evalue))


def test_a_submission_never_sees_what_the_previous_one_changed_in_its_forked_kernel(tmp_path):
    entregas = tmp_path / "entregas"
    entregas.mkdir()
    # One worker (-j 1), in this order: a patches, b looks, c patches and looks (the probe's own control).
    write(_solution_with([MARKS_THE_KERNEL, PATCHES_EVERYTHING], []), entregas / "a-altera.ipynb")
    write(_solution_with([MARKS_THE_KERNEL], [PROBE]), entregas / "b-observa.ipynb")
    write(_solution_with([MARKS_THE_KERNEL, PATCHES_EVERYTHING], [PROBE]), entregas / "c-altera-e-observa.ipynb")
    submissions, _ = batch.find_submissions(entregas, "exercise-3")
    levels, checks = batch.plan_summary("exercise-3", ())
    options = batch.BatchOptions(exercise="exercise-3", hard_timeout=batch.worker_deadline(Limits(), checks))

    patched, observer, control = batch.grade_all(submissions, options, levels, jobs=1)

    assert patched.status == batch.INCOMPLETE  # the patch bites in its own kernel
    assert observer.passed_checks == observer.total_checks == checks  # ... and not in the next one
    assert _probe(observer)["template"] == "True" and _probe(observer)["vazou"] == "-"
    assert _probe(control) == {**_probe(control), "template": "True", "vazou": "anthropic,builtins,json,harness.tools,READ_ONLY_TOOLS"}
    assert control.status == batch.INCOMPLETE
    # Two kernels forked from one template do not share the random generator's state.
    assert _probe(observer)["aleatorio"] != _probe(control)["aleatorio"]


@pytest.fixture(scope="module")
def exercise_3():
    spec = load_exercise("exercise-3")
    return spec, load_fixtures("exercise-3", (), spec.validate_fixture)


@pytest.fixture
def template():
    template = KernelTemplate.start("exercise-3", kernel_env())
    yield template
    template.close()


def _grade(exercise_3, notebook, prelaunched, limits=DEFAULT_LIMITS):
    spec, fixtures = exercise_3
    return grade_with_fixtures(spec, fixtures, notebook, prelaunched=prelaunched, limits=limits)


def test_the_template_imports_what_the_exercise_notebook_imports():
    modules = template_modules("exercise-3")
    # the debugger too: IPythonKernel imports it (and debugpy) on every start, 0.16 s per kernel
    assert modules[:3] == ["ipykernel.ipkernel", "ipykernel.debugger", "anthropic"]
    assert {"harness.checkpointed_loop", "harness.tools", "grader.student.notebook_api", "tempfile"} <= set(modules)
    assert notebook_imports(SOLUTION.parent / "nao-existe.ipynb") == []


def test_the_template_imports_what_the_notebook_helpers_import_on_their_first_call(tmp_path):
    """``fixture_checkpoint`` and ``fixture_workspace`` import their modules when first called: in every
    grading, unless the template did it ahead. After what the template imports, they import nothing."""
    import json
    import subprocess
    import sys

    modules = template_modules("exercise-3")
    assert {"grader.core.fixture_loader", "grader.checks.instrumented"} <= set(modules)
    script = textwrap.dedent(f"""\
        import importlib, json, sys
        for module in {modules!r}:
            importlib.import_module(module)
        from grader import fixture_checkpoint, fixture_workspace
        before = set(sys.modules)
        fixture_checkpoint("exercise-3", "cpA")
        fixture_workspace("exercise-3", "incident-duplicate-email", {str(tmp_path)!r})
        print(json.dumps(sorted(set(sys.modules) - before)))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [], "imported on the first call despite the template"


def test_a_forked_kernel_that_ignores_the_interrupt_is_killed_and_graded_as_before(exercise_3, template, tmp_path):
    prelaunched = PrelaunchedKernel(None, template)
    assert isinstance(prelaunched._km.provisioner, ForkedProvisioner) and prelaunched._km.provisioner.pidfd is not None
    notebook = write(make_notebook(SETUP, RESUME_OK, SWALLOWS_THE_INTERRUPT, 'ROOT_CAUSE = "B"'), tmp_path / "teimosa.ipynb")

    report = _grade(exercise_3, notebook, prelaunched, Limits(cell_seconds=3, total_seconds=240))

    [problem] = report.cell_problems
    assert problem.cell == 3 and "não terminou em 3 s e ignorou a interrupção" in problem.message
    by_id = {c.id: c for c in report.checks}
    assert by_id["n2.root_cause_identified"].passed and by_id["n1.resume_action_decides[cpC]"].passed


def test_when_the_template_dies_kernels_start_as_before_and_grading_goes_on(exercise_3, template, tmp_path, capsys):
    forked = PrelaunchedKernel(None, template)
    assert forked._km.provisioner.pidfd is not None
    forked.discard()
    template.server.process.kill()
    template.server.process.wait()

    fallback = PrelaunchedKernel(None, template)

    provisioner = fallback._km.provisioner
    assert provisioner.pidfd is None and provisioner.process is not None  # launched as jupyter_client always does
    assert "o modelo de kernel parou de responder" in capsys.readouterr().err
    report = _grade(exercise_3, SOLUTION, fallback)
    assert report.notebook_error is None and all(check.passed for check in report.checks)


def test_a_template_that_would_fork_with_threads_refuses_and_kernels_start_as_before(tmp_path, capsys):
    (tmp_path / "starts_a_thread.py").write_text("import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n")
    template = KernelTemplate.own(["starts_a_thread"], {**kernel_env(), "PYTHONPATH": str(tmp_path)})
    try:
        prelaunched = PrelaunchedKernel(None, template)
        assert prelaunched._km.provisioner.pidfd is None and prelaunched._km.provisioner.process is not None
        assert "recusou-se" in template.broken and "1 thread iniciada pelos imports" in template.broken
        prelaunched.discard()
    finally:
        template.close()


PARENT_PROBE = "import os\nraise RuntimeError(f'sonda template={FROM_TEMPLATE} pai={os.getppid()}')"


def test_with_two_jobs_every_kernel_comes_from_the_batch_s_one_template(tmp_path):
    """-j 2 imports anthropic once: both workers fork their kernels from the same template."""
    entregas = tmp_path / "entregas"
    entregas.mkdir()
    for name in ("a", "b", "c", "d"):
        write(_solution_with([MARKS_THE_KERNEL], [PARENT_PROBE]), entregas / f"{name}.ipynb")
    submissions, _ = batch.find_submissions(entregas, "exercise-3")
    levels, checks = batch.plan_summary("exercise-3", ())
    options = batch.BatchOptions(exercise="exercise-3", hard_timeout=batch.worker_deadline(Limits(), checks))
    started_workers = []
    pool = batch.WorkerPool()
    start = pool.start
    pool.start = lambda command, stderr: started_workers.append(start(command, stderr)) or started_workers[-1]

    rows = batch.grade_all(submissions, options, levels, jobs=2, pool=pool)

    parents = {_probe(row)["pai"] for row in rows}
    assert all(_probe(row)["template"] == "True" for row in rows)
    assert len(started_workers) == 2 and len(parents) == 1
    assert parents.isdisjoint({str(process.pid) for process in started_workers})  # the template, not a worker


def _fork_idle_kernel(template: KernelTemplate, tmp_path, name: str) -> tuple[int, int]:
    import sys

    with open(tmp_path / f"{name}.log", "wb") as log:
        forked = template.fork([sys.executable, "-m", "ipykernel_launcher", "-f", str(tmp_path / f"{name}.json")],
                               {"env": kernel_env(), "cwd": str(tmp_path), "stdout": log, "stderr": log})
    assert forked is not None, template.broken
    return forked


def _ended(pidfd: int, within: float = 10.0) -> bool:
    import select

    return bool(select.select([pidfd], [], [], within)[0])


def test_a_worker_that_goes_away_takes_its_kernels_and_only_them(tmp_path):
    from grader.core.forked_kernels import TemplateProcess

    server = TemplateProcess(["ipykernel.ipkernel"], kernel_env())
    first, second = KernelTemplate(server.address), KernelTemplate(server.address)
    try:
        _pid_1, pidfd_1 = _fork_idle_kernel(first, tmp_path, "k1")
        pid_2, pidfd_2 = _fork_idle_kernel(second, tmp_path, "k2")

        first.close()  # as when a worker dies or is killed past its deadline

        assert _ended(pidfd_1)
        assert not _ended(pidfd_2, within=1.0)  # the other worker's kernel goes on
        assert second.exit_status(pid_2, wait=0.2) == -9  # (nothing known of it yet: it is alive)
        server.close()  # the batch ends: every kernel with it, and the template itself
        assert _ended(pidfd_2) and server.process.returncode == 0
    finally:
        second.close()
        server.close()


def test_a_worker_that_cannot_reach_the_template_starts_its_kernels_as_before(tmp_path, capsys):
    template = KernelTemplate(str(tmp_path / "nobody-listens.sock"))
    assert template.broken and "não atendeu" in template.broken
    prelaunched = PrelaunchedKernel(None, template)
    try:
        assert prelaunched._km.provisioner.pidfd is None and prelaunched._km.provisioner.process is not None
    finally:
        prelaunched.discard()


def test_a_kernel_that_ends_on_its_own_leaves_its_siblings_running(tmp_path):
    """A kernel's exit unwinds through the template's serving loop it was forked in: that must not
    end the other kernels the template had forked (another worker's, or the next one prelaunched)."""
    import sys

    template = KernelTemplate.own(["ipykernel.ipkernel"], kernel_env())
    try:
        pid_idle, pidfd_idle = _fork_idle_kernel(template, tmp_path, "idle")
        with open(tmp_path / "short.log", "wb") as log:  # `--help` prints and exits: a kernel's SystemExit
            short = template.fork([sys.executable, "-m", "ipykernel_launcher", "--help"],
                                  {"env": kernel_env(), "cwd": str(tmp_path), "stdout": log, "stderr": log})
        assert short is not None
        pid_short, pidfd_short = short
        assert _ended(pidfd_short) and template.exit_status(pid_short) == 0
        assert not _ended(pidfd_idle, within=1.5), "the idle kernel died when its sibling exited"
    finally:
        template.close()


def test_a_killed_forked_kernel_is_gone_when_kill_returns_and_its_end_is_known_at_once(tmp_path):
    """A grading's end kills its kernel and then waits for it: jupyter_client polls every 0.1 s, so the
    kill itself waits on the kernel's pidfd, and the first look finds it gone."""
    import time

    from jupyter_core.utils import run_sync

    template = KernelTemplate.own(["ipykernel.ipkernel"], kernel_env())
    prelaunched = PrelaunchedKernel(None, template)
    try:
        manager = prelaunched._km
        provisioner = manager.provisioner
        assert isinstance(provisioner, ForkedProvisioner) and provisioner.pidfd is not None
        started = time.monotonic()
        run_sync(provisioner.kill)()
        assert provisioner._gone(), "kill returned with the kernel still running"
        assert run_sync(provisioner.poll)() == -9
        run_sync(provisioner.kill)()  # killing it again, gone already, returns too
        assert time.monotonic() - started < 5
        assert run_sync(manager.is_alive)() is False
    finally:
        prelaunched.discard()
        template.close()


def test_a_long_temporary_folder_still_gets_a_template(tmp_path, monkeypatch):
    """A Unix socket's path holds at most 107 bytes: under a long TMPDIR (a deep test folder, a macOS
    per-user folder) the template's socket must still bind, or every grading silently goes cold."""
    import os
    import tempfile

    deep = tmp_path / ("pasta-temporaria-com-um-nome-bem-comprido-" * 2)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert len(os.path.join(tempfile.mkdtemp(dir=deep, prefix="grade-template-"), "template.sock")) > 107
    template = KernelTemplate.own(["ipykernel.ipkernel"], kernel_env())
    try:
        assert template.broken is None, template.broken
        pid, pidfd = _fork_idle_kernel(template, tmp_path, "idle")
        assert not _ended(pidfd, within=0.5)
        folder = os.path.dirname(template.server.address)
        assert os.stat(folder).st_mode & 0o077 == 0, "the socket's folder must be this user's alone"
    finally:
        template.close()
    assert not os.path.exists(folder), "the socket's folder outlived the template"


def test_a_kernel_killed_before_its_setsid_dies_all_the_same():
    """The template forks, and only then does the child make itself a process group: a worker
    killed in between (Ctrl-C right after a spare kernel was asked for) had its kernel signalled
    by group alone, which no group bore yet. That kernel lived on and, starting up, made its
    connection file's folder again inside the batch's folder already removed."""
    import subprocess
    import sys

    from grader.core.kernel_template import Kernels

    not_yet_a_group = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # our group
    try:
        kernels = Kernels()
        kernels.owners[not_yet_a_group.pid] = None
        kernels.kill()
        assert not_yet_a_group.wait(timeout=10) == -9
    finally:
        not_yet_a_group.kill()
        not_yet_a_group.wait()
