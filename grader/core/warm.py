"""Warm batch workers: one process per job grades submission after submission.

``grade batch`` starts ``python -m grader.instructor.batch --serve`` once per job, with the
batch's ``Limits`` on its command line (``--limits``, as ``Limits.to_json`` writes them). The worker
imports the grader and loads the exercise's checks and fixtures once, then reads one
task per line on stdin (JSON: the notebook, where to write the result, whether more
tasks follow) and answers ``done`` on stdout when the result file is written.

While a submission is graded, the kernel for the next one is already starting: a
``PrelaunchedKernel`` (grader/core/prelaunch.py) launches the kernel process (cheap) in the
next grading's own folder, and the kernel imports IPython on its own, in parallel with the
grading; the engine connects to it when that grading begins (``grade(..., prelaunched=...)``).
Each submission still gets a fresh kernel that nothing ran in before. Outside the
sandbox, the worker's kernels are forked from the batch's template process, which
imported ipykernel and anthropic once for every worker (grader/core/forked_kernels.py);
where it cannot, they start as before.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from grader.core.error_text import describe_error
from grader.core import scratch as scratch_folders
from grader.core.atomic_write import write_atomic
from grader.core.environment import kernel_env
from grader.core.limits import Limits, LimitsError
from grader.core.prelaunch import PrelaunchedKernel
from grader.core.sandbox import Sandbox

DONE = "done"
BATCH_PID_ENV = "GRADE_BATCH_PID"  # set by the batch for its workers
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_batch() -> None:
    """Linux: have the kernel kill this worker (SIGKILL) when the batch that started it dies, so a
    batch killed outright leaves no worker grading on for minutes. The batch's pid is checked after
    asking, in case it died before."""
    batch = os.environ.get(BATCH_PID_ENV, "")
    if not batch.isdigit() or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):
        return
    if os.getppid() != int(batch):
        os._exit(1)


def grade_payload(grade_one, notebook: Path, prelaunched: PrelaunchedKernel | None) -> dict[str, Any]:
    """The worker's answer for one notebook: the report, or the grader's own error."""
    try:
        return {"report": grade_one(notebook, prelaunched).to_dict()}
    except Exception as error:  # noqa: BLE001 - reported as this submission's row
        return {"error": f"erro do corretor: {describe_error(error)}"}


def write_payload(path: Path, payload: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(payload, ensure_ascii=False))


def _limits_argument(text: str) -> Limits:
    """--limits: what the batch wrote with ``Limits.to_json``, read back as untrusted input."""
    try:
        return Limits.from_json(text)
    except LimitsError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def serve(argv: list[str]) -> int:
    """The warm worker's loop (``python -m grader.instructor.batch --serve ...``)."""
    die_with_batch()
    parser = argparse.ArgumentParser(prog="grader.instructor.batch --serve")
    parser.add_argument("exercise")
    parser.add_argument("--limits", type=_limits_argument, required=True, help="the batch's Limits, as to_json() wrote them")
    parser.add_argument("--fixtures", type=Path, action="append", default=[])
    parser.add_argument("--sandbox", action="store_true")
    parser.add_argument("--template", help="address of the batch's kernel template process")
    args = parser.parse_args(argv)
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr  # whatever else prints must not mix with the answers

    from grader.core.engine import grade_with_fixtures, load_exercise
    from grader.core.fixture_loader import load_fixtures
    from grader.core.sandbox import require

    sandbox = require() if args.sandbox else None
    template = None
    if sandbox is not None:
        template = sandboxed_template(args.exercise, sandbox)
    elif args.template:
        from grader.core.forked_kernels import KernelTemplate

        template = KernelTemplate(args.template)
    spec = load_exercise(args.exercise)
    fixtures = load_fixtures(args.exercise, tuple(args.fixtures), spec.validate_fixture)
    users = kernel_users(sandbox, template)

    def grade_one(notebook: Path, prelaunched: PrelaunchedKernel | None):
        return grade_with_fixtures(
            spec, fixtures, notebook,
            limits=args.limits,
            sandbox=prelaunched.sandbox if prelaunched is not None else sandbox,
            prelaunched=prelaunched,
        )

    spare: PrelaunchedKernel | None = PrelaunchedKernel(next(users), template)
    try:
        for line in sys.stdin:
            task = json.loads(line)
            current, spare = spare, None
            if task.get("more"):
                spare = PrelaunchedKernel(next(users), template)  # starts while this submission is graded
            try:
                write_payload(Path(task["result"]), grade_payload(grade_one, Path(task["notebook"]), current))
            finally:
                if current is not None:
                    current.discard()
            answers.write(DONE + "\n")
    finally:
        if spare is not None:
            spare.discard()
        if template is not None:
            template.close()
    return 0


def sandboxed_template(exercise: str, sandbox: Sandbox) -> Any:
    """The worker's kernel template inside one bubblewrap sandbox, or None where it cannot be had.

    Only as root: the template forks each kernel into a user id of its own (two, alternating,
    so the kernel graded and the next one never share one), with the sandbox's process and file
    limits, and kills whatever an ended kernel's user left running before that id is used again.
    Every grading folder is made inside one folder the sandbox may write to (mode 711: a kernel
    reaches its own folder, mode 700 and its user's, and cannot list the others). Not as root,
    each kernel starts in a bubblewrap of its own, as without a template."""
    from grader.core.forked_kernels import SWITCH, KernelTemplate, TemplateProcess, supported
    from grader.core.sandbox import template_bwrap_arguments

    if sandbox.uid is None or not supported() or os.environ.get(SWITCH) == "0":
        return None
    scratch = Path(tempfile.mkdtemp(prefix="grade-sandbox-"))
    scratch.chmod(0o711)
    tempfile.tempdir = str(scratch)  # every temporary file of this worker is made in there,
    scratch_folders.place_in(scratch)  # and every grading folder, right inside it
    server = TemplateProcess.start(exercise, kernel_env(), wrapper=template_bwrap_arguments(scratch))
    template = KernelTemplate(server.address, server)
    template.scratch = scratch  # removed with everything in it when the worker ends
    return template


def kernel_users(sandbox: Sandbox | None, template: Any) -> Iterator[Sandbox | None]:
    """The sandbox of each kernel this worker starts, in turn (its user id alternating when a
    sandboxed template forks them); None without a sandbox."""
    import dataclasses
    import itertools

    from grader.core.sandbox import kernel_uids

    if sandbox is None or template is None:
        return itertools.repeat(sandbox)
    return (dataclasses.replace(sandbox, uid=uid) for uid in itertools.cycle(kernel_uids()))
