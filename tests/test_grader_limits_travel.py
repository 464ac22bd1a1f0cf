"""The four grading limits travel as one ``Limits`` from each entry point to the kernel.

Each entry point (``grade exercise-N``, ``grade batch`` and its workers, ``grade watch``, the
notebook's ``check()`` warm and cold, the Gradescope autograder) is driven from its own input
(flags, the worker's command line, the warm process's request, ``gradescope.json``) and the
``Limits`` the kernel would get is caught where the grading starts its kernel, together with
what the kernel's own spec says. No kernel starts. The serialized form crossing each process
boundary is untrusted input: hostile values are refused with a Portuguese message.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import cli
from grader.core import engine
from grader.core.execution import Execution
from grader.core.limits import Limits, LimitsError
from grader.core.scratch import scratch_folder
from tests.grader_support import ROOT, make_notebook, write

# Today's defaults, spelled out: a change of any of them is a change of behaviour.
DEFAULTS = Limits(total_seconds=300.0, cell_seconds=60.0, check_seconds=10.0, memory_mb=1024)


class KernelSpy:
    """Stands in for ``execute_and_grade``: remembers the limits it got and the kernel spec's."""

    def __init__(self) -> None:
        self.seen: list[tuple[Limits, Limits]] = []

    def __call__(self, notebook, *, workdir, spec, limits, sandbox=None, prelaunched=None) -> Execution:
        self.seen.append((limits, Limits.from_json(json.loads(json.dumps(spec))["limits"])))
        outcome = Execution()
        outcome.stop("grader_error", notebook_error="parado pelo teste antes do kernel")
        return outcome

    def only(self) -> Limits:
        [(given, in_spec)] = self.seen
        assert given == in_spec, (given, in_spec)
        return given


@pytest.fixture
def kernel(monkeypatch, tmp_path) -> KernelSpy:
    spy = KernelSpy()
    monkeypatch.setattr(engine, "execute_and_grade", spy)
    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "estado.json"))
    return spy


@pytest.fixture
def notebook(tmp_path) -> Path:
    return write(make_notebook("x = 1"), tmp_path / "entrega.ipynb")


@pytest.fixture
def no_warm_kernels(monkeypatch):
    """A WarmGrader that forks nothing: the grading gets no prelaunched kernel."""
    from grader.core.warm_session import WarmGrader

    monkeypatch.setattr(WarmGrader, "_prelaunch", lambda self: None)
    monkeypatch.setattr(WarmGrader, "prepare", lambda self: None)


# ------------------------------------------------------------------ the value


def test_the_defaults_are_todays():
    assert Limits() == DEFAULTS
    assert (Limits().total_seconds, Limits().cell_seconds, Limits().check_seconds, Limits().memory_mb) == (300, 60, 10, 1024)


@pytest.mark.parametrize("budget, cell", [(40, 20), (20, 10), (300, 60), (120, 60), (1000, 60)])
def test_a_budget_gives_a_cell_at_most_half_of_it_and_never_above_the_default(budget, cell):
    limits = Limits.from_budget(budget)
    assert limits == Limits(total_seconds=budget, cell_seconds=cell)
    assert Limits.from_budget(budget, memory_mb=2048).memory_mb == 2048


def test_a_cell_limit_above_the_total_is_cut_to_the_total():
    assert Limits.with_cell_capped(total_seconds=40, cell_seconds=100).cell_seconds == 40
    assert Limits.with_cell_capped(total_seconds=60, cell_seconds=5).cell_seconds == 5


def test_memory_zero_or_none_is_no_limit_and_values_are_normalized():
    assert Limits(memory_mb=0) == Limits(memory_mb=None)
    assert Limits(memory_mb=0).memory_mb is None
    limits = Limits(total_seconds=40, cell_seconds=3, check_seconds=2)
    assert all(isinstance(value, float) for value in (limits.total_seconds, limits.cell_seconds, limits.check_seconds))


def test_limits_cannot_be_changed_after_construction():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        Limits().cell_seconds = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("field", ["total_seconds", "cell_seconds", "check_seconds"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1, -0.5, 0, "10", True, None, [10],
                                   86400.5, 1e308, pytest.param(10 ** 400, id="10**400")])
def test_a_time_limit_refuses_nan_inf_negative_zero_huge_and_what_is_not_a_number(field, value):
    with pytest.raises(LimitsError) as refused:
        Limits(**{field: value})
    message = str(refused.value)
    assert "segundos" in message and "maior que zero e até 86400" in message, message
    assert (repr(value) if value != 10 ** 400 else "número grande demais") in message, message


@pytest.mark.parametrize("value", [-1, 1.5, 1024.0, math.nan, "1024", True, [1024], 1, 511, 1024 * 1024 + 1, 10 ** 30])
def test_the_memory_limit_refuses_negative_fractional_too_small_huge_and_what_is_not_a_whole_number(value):
    with pytest.raises(LimitsError) as refused:
        Limits(memory_mb=value)
    message = str(refused.value)
    assert "memória" in message and "de 512 a 1048576 MB" in message and repr(value) in message, message


@pytest.mark.parametrize("limits", [
    Limits(total_seconds=86400, cell_seconds=86400, check_seconds=86400, memory_mb=1024 * 1024),
    Limits(total_seconds=1e-3, cell_seconds=1e-3, check_seconds=1e-3, memory_mb=512),
])
def test_the_bounds_themselves_are_limits(limits):
    assert Limits.from_json(json.dumps(limits.to_json())) == limits


def test_the_commands_flags_and_limits_accept_and_refuse_the_same_values():
    """The flags' own messages stay; a value the flags accept is never refused further down."""
    import argparse

    from grader.core import limits as module
    from grader.reports import console

    seconds = console.seconds()
    assert Limits(cell_seconds=seconds(str(module.MAX_SECONDS))).cell_seconds == module.MAX_SECONDS
    with pytest.raises(argparse.ArgumentTypeError, match="até 86400"):
        seconds(str(module.MAX_SECONDS + 1))
    assert Limits(memory_mb=console.memory_mb(str(module.MAX_MEMORY_MB))).memory_mb == module.MAX_MEMORY_MB
    assert Limits(memory_mb=console.memory_mb(str(module.MIN_MEMORY_MB))).memory_mb == module.MIN_MEMORY_MB
    for too_much in (str(module.MAX_MEMORY_MB + 1), "1" + "0" * 30):
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            console.memory_mb(too_much)
        assert f"use no máximo {module.MAX_MEMORY_MB}" in str(refused.value) and "0 para sem limite" in str(refused.value)


def test_grade_refuses_a_huge_memory_limit_before_any_kernel(kernel, notebook, capsys):
    with pytest.raises(SystemExit) as ended:
        cli.main(["exercise-3", "--notebook", str(notebook), "--memory-mb", "1" + "0" * 30])
    assert ended.value.code == 2
    assert "é demais: use no máximo 1048576" in capsys.readouterr().err
    assert kernel.seen == []


def test_a_limits_error_is_a_grader_error_the_commands_already_report():
    from grader.core.errors import GraderError

    assert issubclass(LimitsError, GraderError) and issubclass(LimitsError, ValueError)


# --------------------------------------------------------- the serialized form


@pytest.mark.parametrize("limits", [
    DEFAULTS, Limits(memory_mb=None), Limits.from_budget(40, memory_mb=2048),
    Limits(total_seconds=0.25, cell_seconds=1e-3, check_seconds=86400.0, memory_mb=512),
])
def test_a_round_trip_through_the_serialized_form_gives_the_same_limits(limits):
    data = limits.to_json()
    assert set(data) == {"total_seconds", "cell_seconds", "check_seconds", "memory_mb"}
    text = json.dumps(data, allow_nan=False)  # plain JSON, nothing Python-only
    assert Limits.from_json(json.loads(text)) == limits
    assert Limits.from_json(text) == limits  # JSON text too (the worker's command line)


GOOD = DEFAULTS.to_json()


@pytest.mark.parametrize("hostile, words", [
    ("isto não é json", "não são JSON"),
    ('"300"', "objeto JSON"),
    ("[300, 60, 10, 1024]", "objeto JSON"),
    (None, "objeto JSON"),
    (300, "objeto JSON"),
    ({key: value for key, value in GOOD.items() if key != "cell_seconds"}, "falta 'cell_seconds'"),
    ({}, "falta 'total_seconds'"),
    ({**GOOD, "extra": 1}, "'extra'"),
    ({**GOOD, "total_seconds": -5}, "-5"),
    ({**GOOD, "total_seconds": "300"}, "'300'"),
    ({**GOOD, "check_seconds": True}, "True"),
    ({**GOOD, "cell_seconds": None}, "None"),
    ({**GOOD, "memory_mb": -1024}, "-1024"),
    ({**GOOD, "memory_mb": "1024"}, "'1024'"),
    ({**GOOD, "memory_mb": 10.5}, "10.5"),
    ('{"total_seconds": NaN, "cell_seconds": 60, "check_seconds": 10, "memory_mb": 1024}', "nan"),
    ('{"total_seconds": 300, "cell_seconds": Infinity, "check_seconds": 10, "memory_mb": 1024}', "inf"),
    ('{"total_seconds": 1e999, "cell_seconds": 60, "check_seconds": 10, "memory_mb": 1024}', "inf"),
    ({**GOOD, "check_seconds": 1e308}, "1e+308"),
    pytest.param({**GOOD, "total_seconds": 10 ** 400}, "número grande demais", id="10**400"),
    ({**GOOD, "memory_mb": 10 ** 30}, str(10 ** 30)),
    ({**GOOD, "memory_mb": 1}, "de 512 a 1048576 MB"),
])
def test_hostile_serialized_limits_are_refused_with_a_clear_portuguese_message(hostile, words):
    with pytest.raises(LimitsError) as refused:
        Limits.from_json(hostile)
    message = str(refused.value)
    assert message.startswith("Os limites da correção recebidos são inválidos"), message
    assert words in message, message


# ------------------------------------------------------------ grade exercise-N


@pytest.mark.parametrize("flags, expected", [
    ([], DEFAULTS),
    (["--total-timeout", "40"], Limits(total_seconds=40, cell_seconds=60)),  # as today: no half rule here
    (["--cell-timeout", "3", "--check-timeout", "2", "--memory-mb", "0"],
     Limits(cell_seconds=3, check_seconds=2, memory_mb=None)),
    (["--memory-mb", "2048"], Limits(memory_mb=2048)),
])
def test_grade_gives_the_kernel_the_limits_of_its_flags(flags, expected, kernel, notebook, monkeypatch):
    monkeypatch.setattr(cli, "launch_kernel_early", lambda notebook, sandbox: None)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["exercise-3", "--notebook", str(notebook), "--json", *flags]) == 1
    assert kernel.only() == expected


# ---------------------------------------------------------------- grade batch


class _FakeKernel:
    """What a worker prelaunches, minus the kernel."""

    sandbox = None

    def folder(self):
        return scratch_folder()

    def discard(self) -> None:
        pass


def _worker_grades_once(command: list[str], notebook: Path, result: Path, monkeypatch) -> dict:
    """Run the worker that ``command`` starts, in this process, on one task."""
    from grader.core import warm

    assert command[:4] == [sys.executable, "-m", "grader.instructor.batch", "--serve"], command
    monkeypatch.setattr(warm, "PrelaunchedKernel", lambda *args: _FakeKernel())
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"notebook": str(notebook), "result": str(result)}) + "\n"))
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # serve() points it at stderr
    assert warm.serve(command[4:]) == 0
    return json.loads(result.read_text(encoding="utf-8"))


@pytest.mark.parametrize("flags, expected", [
    ([], DEFAULTS),
    (["--timeout", "40"], Limits(total_seconds=40, cell_seconds=20)),
    (["--timeout", "20", "--memory-mb", "0"], Limits(total_seconds=20, cell_seconds=10, memory_mb=None)),
    (["--timeout", "40", "--memory-mb", "2048"], Limits(total_seconds=40, cell_seconds=20, memory_mb=2048)),
])
def test_batch_gives_each_kernel_the_limits_of_its_flags_through_the_worker_command_line(
        flags, expected, kernel, notebook, tmp_path, monkeypatch):
    from grader.instructor import batch

    folder = tmp_path / "entregas"
    folder.mkdir()
    write(make_notebook("x = 1"), folder / "ana.ipynb")
    given = []
    monkeypatch.setattr(batch, "grade_all", lambda submissions, options, *rest, **more: given.append(options) or [])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["batch", str(folder), "exercise-3", "--csv", str(tmp_path / "notas.csv"), "--no-report", *flags]) == 0
    [options] = given
    assert options.limits == expected
    assert options.hard_timeout == batch.worker_deadline(expected, batch.plan_summary("exercise-3", ())[1])

    payload = _worker_grades_once(batch._worker_command(options), notebook, tmp_path / "resultado.json", monkeypatch)
    assert "report" in payload, payload
    assert kernel.only() == expected


def test_the_batch_deadline_adds_every_check_s_time_to_the_notebook_s():
    from grader.instructor import batch

    longer_checks = Limits(check_seconds=30)
    assert batch.worker_deadline(longer_checks, 4) - batch.worker_deadline(DEFAULTS, 4) == pytest.approx(4 * 20)
    assert batch.worker_deadline(Limits(total_seconds=400), 4) - batch.worker_deadline(DEFAULTS, 4) == pytest.approx(100)


def test_a_worker_refuses_hostile_limits_on_its_command_line(monkeypatch, capsys):
    from grader.core import warm

    monkeypatch.setattr(sys, "stdout", sys.stdout)
    hostile = json.dumps({**GOOD, "total_seconds": -1})
    with pytest.raises(SystemExit) as ended:
        warm.serve(["exercise-3", "--limits", hostile])
    assert ended.value.code == 2
    assert "Os limites da correção recebidos são inválidos" in capsys.readouterr().err


# ---------------------------------------------------------------- grade watch


@pytest.mark.parametrize("flags, expected", [
    ([], DEFAULTS),
    (["--cell-timeout", "7", "--total-timeout", "50", "--check-timeout", "4"],
     Limits(total_seconds=50, cell_seconds=7, check_seconds=4)),
])
def test_watch_gives_the_kernel_the_limits_of_its_flags(flags, expected, kernel, notebook, no_warm_kernels, monkeypatch):
    from grader.reports import console
    from grader.student import watch as watch_module

    monkeypatch.setattr(watch_module, "watch", lambda path, grade_once, **options: grade_once())
    parser = console.ArgumentParser(prog="grade watch")
    watch_module.add_arguments(parser)
    args = parser.parse_args(["exercise-3", "--notebook", str(notebook), *flags])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert watch_module.run(args) == 0
    assert kernel.only() == expected


# -------------------------------------------------------------------- check()


def test_check_gives_the_kernel_the_default_limits_warm_and_cold(kernel, notebook, no_warm_kernels, monkeypatch):
    from grader.student import check_server, notebook_api

    requests, commands = [], []
    monkeypatch.setattr(notebook_api, "_warm_answer", lambda request: requests.append(request))  # no warm process
    monkeypatch.setattr(notebook_api.subprocess, "run", lambda command, **options: commands.append(command)
                        or subprocess.CompletedProcess(command, 1, stdout="", stderr="grade: parado pelo teste"))
    with contextlib.redirect_stdout(io.StringIO()):
        notebook_api.check("exercise-3", level=1, notebook=notebook)
    [request], [command] = requests, commands
    assert Limits.from_json(json.loads(json.dumps(request))["limits"]) == DEFAULTS

    checks = check_server.Checks()  # the warm process, answering that request here
    try:
        assert "report" in checks.answer(json.loads(json.dumps(request)))
    finally:
        checks.close()
    assert kernel.only() == DEFAULTS

    kernel.seen.clear()  # the cold way: the same `grade` command, run here
    assert command[:3] == [sys.executable, "-m", "grader.cli"], command
    monkeypatch.setattr(cli, "launch_kernel_early", lambda notebook, sandbox: None)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        cli.main(command[3:])
    assert kernel.only() == DEFAULTS


@pytest.mark.parametrize("limits", [
    None, "300", {**GOOD, "cell_seconds": -1}, {k: v for k, v in GOOD.items() if k != "memory_mb"},
])
def test_the_warm_check_process_refuses_a_request_with_hostile_limits(limits, kernel, notebook, no_warm_kernels):
    from grader.student import check_server

    request = {"exercise": "exercise-3", "notebook": str(notebook), "level": None, "fixtures": []}
    if limits is not None:
        request["limits"] = limits
    checks = check_server.Checks()
    try:
        answer = checks.answer(request)
    finally:
        checks.close()
    assert answer["error"].startswith("grade: Os limites da correção recebidos são inválidos"), answer
    assert kernel.seen == []  # nothing was graded


# ----------------------------------------------------------------- Gradescope


@pytest.mark.parametrize("flags, expected", [
    ([], DEFAULTS),
    (["--timeout", "60", "--cell-timeout", "5"], Limits(total_seconds=60, cell_seconds=5)),
    (["--timeout", "40", "--cell-timeout", "100", "--memory-mb", "0"],
     Limits(total_seconds=40, cell_seconds=40, memory_mb=None)),  # a cell never above the whole notebook
])
def test_gradescope_gives_the_kernel_the_limits_the_zip_was_built_with(flags, expected, kernel, notebook, tmp_path):
    from authoring import cli as course_cli
    from grader.instructor import gradescope

    out = tmp_path / "autograder.zip"
    with contextlib.redirect_stdout(io.StringIO()):
        assert course_cli.main(["--root", str(ROOT), "gradescope", "exercise-3", "--out", str(out), *flags]) == 0
    with zipfile.ZipFile(out) as archive:
        config = json.loads(archive.read(gradescope.CONFIG_NAME))
    assert Limits.from_json(config["limits"]) == expected
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "exercise-3.ipynb").write_bytes(notebook.read_bytes())
    (tmp_path / "source").mkdir()
    gradescope.grade_submission(config, tmp_path / "source", submission)
    assert kernel.only() == expected


def test_gradescope_with_hostile_limits_in_its_config_writes_a_zero_with_the_reason(kernel, notebook, tmp_path):
    from grader.instructor import gradescope

    source, submission = tmp_path / "source", tmp_path / "submission"
    source.mkdir()
    submission.mkdir()
    (submission / "exercise-3.ipynb").write_bytes(notebook.read_bytes())
    (source / gradescope.CONFIG_NAME).write_text(json.dumps(
        {"exercise": "exercise-3", "limits": {**GOOD, "total_seconds": "muito"}}), encoding="utf-8")
    results = tmp_path / "results" / "results.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = gradescope.main(["--source", str(source), "--submission", str(submission), "--results", str(results)])
    assert code == 1
    written = json.loads(results.read_text(encoding="utf-8"))
    assert written["score"] == 0 and "Os limites da correção recebidos são inválidos" in written["output"]
    assert kernel.seen == []


# ------------------------------------------------------------- inside the kernel


def test_the_kernel_s_runner_takes_each_check_s_time_from_the_spec_s_limits(tmp_path):
    from grader.checks.runner import spec_session

    spec = {"workdir": str(tmp_path), "limits": Limits(check_seconds=4).to_json(), "cell_problems": []}
    assert spec_session(spec, {}).check_timeout == 4.0
    with pytest.raises(LimitsError):
        spec_session({**spec, "limits": {**GOOD, "check_seconds": -4}}, {})
