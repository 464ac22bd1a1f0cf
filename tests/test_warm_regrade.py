"""A warm re-grade (``grade watch``, ``check()``): what is done ahead of the save, and what never is.

``WarmGrader`` forks the next grading's kernel and connects to it while the student reads the
last result, removes the last grading's folder only then, and keeps the exercise's fixtures
while their files stay the same. None of that may change what a grading is: every grading
still gets a kernel of its own that nothing ran in (a spare is handed to one grading only, and
one that died while it waited is replaced), a folder of its own that is never left behind, and
the fixtures as they are on disk now.

The wrong implementations these tests stand against: a spare kernel (or its client) reused for a
second grading, a dead spare's client used for a grading, a folder never removed, fixtures read
once and never again, a module the template imported ahead that a grading's cell can change for
the next grading.
"""
from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from grader.core.forked_kernels import supported
from grader.core.warm_session import WarmGrader
from tests.grader_support import leftovers, make_notebook, write
from tests.test_grader_engine import RESUME_OK, SETUP

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not supported(), reason="kernels forked from a template need Linux (fork, pidfd)")]


def notes_kernel(into: Path) -> str:
    """A cell that appends this kernel's pid and folder to ``into``."""
    return f"import os, json\nopen({str(into)!r}, 'a').write(json.dumps([os.getpid(), os.getcwd()]) + '\\n')"


def noted(into: Path) -> list[tuple[int, str]]:
    return [tuple(json.loads(line)) for line in into.read_text().splitlines()]


@pytest.fixture
def temp(tmp_path, monkeypatch) -> Path:
    """This test's own temp folder: every grading and template folder is made in it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder




def test_every_grading_gets_a_kernel_of_its_own_also_from_a_spare_connected_ahead(tmp_path, temp):
    kernels = tmp_path / "kernels"
    notebook = write(make_notebook(SETUP, RESUME_OK, notes_kernel(kernels)), tmp_path / "exercise-3.ipynb")
    with WarmGrader("exercise-3") as warm:
        reports = [warm.grade(notebook, level=1)]  # nothing waits yet: forked now
        warm.prepare()
        assert warm.spare is not None and warm.spare.connected()  # forked and answering before the save
        reports.append(warm.grade(notebook, level=1))
        assert warm.spare is None  # taken by that grading: never handed to another one
        reports.append(warm.grade(notebook, level=1))  # no prepare() in between: forked on the spot
        warm.prepare()
        warm.prepare()  # a second call keeps the one spare
        reports.append(warm.grade(notebook, level=1))
    assert all(report.passed for report in reports), [r.checks for r in reports if not r.passed]
    pids = [pid for pid, _folder in noted(kernels)]
    folders = [folder for _pid, folder in noted(kernels)]
    assert len(pids) == 4 and len(set(pids)) == 4, pids
    assert len(set(folders)) == 4, folders
    assert leftovers(temp) == []


def test_a_grading_s_folder_goes_once_the_result_is_shown_and_none_outlives_the_grader(tmp_path, temp):
    kernels = tmp_path / "kernels"
    notebook = write(make_notebook(SETUP, RESUME_OK, notes_kernel(kernels)), tmp_path / "exercise-3.ipynb")
    with WarmGrader("exercise-3") as warm:
        warm.grade(notebook, level=1)
        warm.prepare()  # the result was shown: its folder goes now
        assert not Path(noted(kernels)[-1][1]).exists()
        warm.grade(notebook, level=1)
        warm.grade(notebook, level=1)  # no prepare() in between: the last folder goes before this grading
        assert not Path(noted(kernels)[-2][1]).exists()
        last = Path(noted(kernels)[-1][1])
    assert not last.exists()  # closing removes the folder still waiting
    assert leftovers(temp) == []


def test_a_spare_kernel_that_died_while_it_waited_is_replaced_and_the_save_graded_as_usual(tmp_path, temp):
    notebook = write(make_notebook(SETUP, RESUME_OK), tmp_path / "exercise-3.ipynb")
    with WarmGrader("exercise-3") as warm:
        warm.grade(notebook, level=1)
        warm.prepare()
        provisioner = warm.spare._km.provisioner
        os.kill(provisioner.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not provisioner._gone() and time.monotonic() < deadline:
            time.sleep(0.02)
        report = warm.grade(notebook, level=1)
    assert report.passed and report.notebook_error is None, report.notebook_error
    assert leftovers(temp) == []


def test_fixtures_are_read_again_when_their_files_change(tmp_path, temp):
    """Kept while the files stay the same; a fixture added, edited, broken or removed counts at the next grading."""
    from grader.core.errors import FixtureError
    from tests.grader_support import fixture_data

    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "uma.json").write_text(json.dumps(fixture_data("cpB")), encoding="utf-8")
    notebook = write(make_notebook(SETUP, RESUME_OK), tmp_path / "exercise-3.ipynb")

    def fixtures_graded(**options) -> set[str]:
        return {check.fixture for check in warm.grade(notebook, level=1, **options).checks}

    with WarmGrader("exercise-3") as warm:
        before = fixtures_graded(fixture_dirs=[extra])
        assert "uma" in before
        assert fixtures_graded(fixture_dirs=[extra]) == before
        (extra / "outra.json").write_text(json.dumps(fixture_data("cpC")), encoding="utf-8")
        assert fixtures_graded(fixture_dirs=[extra]) == before | {"outra"}
        (extra / "outra.json").write_text("{ quebrada", encoding="utf-8")
        with pytest.raises(FixtureError, match="outra"):
            warm.grade(notebook, level=1, fixture_dirs=[extra])
        (extra / "outra.json").unlink()
        assert fixtures_graded(fixture_dirs=[extra]) == before
        assert fixtures_graded() == before - {"uma"}  # no extra folder: the course's fixtures alone
    assert leftovers(temp) == []


# What the template imports ahead for a course notebook (its fixture helpers' modules): a grading's
# cell may change them in its own kernel, and the next grading's kernel must not see it.
PATCHES_PREIMPORTED = textwrap.dedent("""\
    import sys, builtins, yaml, grader.core.fixture_loader as loader
    FROM_TEMPLATE = all(name in sys.modules for name in ("grader.core.fixture_loader", "yaml"))
    for module in (builtins, yaml, loader):
        module.LEAKED = True
    loader.read_fixture_files = lambda *args, **kwargs: []  # fixture_checkpoint would find no fixture
""")
PROBE = textwrap.dedent("""\
    import sys
    from_template = all(name in sys.modules for name in ("grader.core.fixture_loader", "yaml"))
    import builtins, yaml, grader.core.fixture_loader as loader
    from grader import fixture_checkpoint
    leaked = [name for name, module in (("builtins", builtins), ("yaml", yaml), ("loader", loader)) if hasattr(module, "LEAKED")]
    try:
        fixture_checkpoint("exercise-3", "cpA")
    except KeyError:
        leaked.append("read_fixture_files")
    raise RuntimeError(f"sonda template={from_template} vazou={','.join(leaked) or '-'}")
""")


def _probe(report) -> dict[str, str]:
    [problem] = [p for p in report.cell_problems if p.ename == "RuntimeError"]
    return dict(re.findall(r"(\w+)=(\S+)", problem.evalue))


def test_what_the_template_imports_ahead_is_a_copy_of_each_grading_s_own(tmp_path, temp):
    patches = write(make_notebook(SETUP, RESUME_OK, PATCHES_PREIMPORTED), tmp_path / "exercise-3.ipynb")
    probe = write(make_notebook(SETUP, RESUME_OK, PROBE), tmp_path / "exercise-3-sonda.ipynb")
    with WarmGrader("exercise-3") as warm:
        first = warm.grade(patches, level=1)
        warm.prepare()
        second = warm.grade(probe, level=1)  # the spare, forked before the patch ran
        third = warm.grade(probe, level=1)  # forked after it
    assert first.passed and not first.cell_problems, first.cell_problems  # the checks never saw the patch
    for report in (second, third):
        assert _probe(report) == {"template": "True", "vazou": "-"}, report.cell_problems
        assert report.passed


@pytest.mark.parametrize("moment", ["template folder made", "kernel folder made"])
def test_a_stop_while_the_first_kernel_is_set_up_leaves_nothing_behind(tmp_path, monkeypatch, moment):
    """Ctrl-C in the first grading's set-up (the template's folder just made, or the kernel's) is
    held until the fork is waited for, so neither folder nor process is left; acting at once, it
    would land where nothing cleans up."""
    import shutil

    from grader.core import forked_kernels, prelaunch
    from grader.core.stop_signals import descendants
    from tests.test_warm_feedback import alive

    short = Path(tempfile.mkdtemp(prefix="gw-", dir="/tmp"))  # room for the template's socket path
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    notebook = write(make_notebook(SETUP, RESUME_OK), tmp_path / "exercise-3.ipynb")
    module, name = (forked_kernels, "socket_folder") if moment == "template folder made" else (prelaunch.scratch, "new_scratch")
    original = getattr(module, name)

    def then_ctrl_c(*args, **kwargs):
        made = original(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return made

    monkeypatch.setattr(module, name, then_ctrl_c)
    before = set(descendants(os.getpid()))
    try:
        with pytest.raises(KeyboardInterrupt):
            with WarmGrader("exercise-3") as warm:
                warm.grade(notebook, level=1)
        assert leftovers(short) == []
        deadline = time.monotonic() + 10
        while [pid for pid in descendants(os.getpid()) if pid not in before and alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in descendants(os.getpid()) if pid not in before and alive(pid)] == []
    finally:
        shutil.rmtree(short, ignore_errors=True)
