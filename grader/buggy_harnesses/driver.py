"""A harness for a student's verification to drive: the course's durable runner, in this
process, with or without seeded defects.

Each call is one "process" of ``python -m harness``: crash counts start at zero,
``CRASH_AFTER`` is set only for that call, ``CRASH_MODE`` is never set (a crash is always
a ``SimulatedCrash``, never a signal to the grading kernel), and every request to the
offline model is logged beside the run folder so ``run_outcome`` can look for orphans.
A defect is a set of module attributes swapped in for the duration of each call only;
whatever the verification reads between calls comes from the untouched harness.

fsync is skipped while a call runs: every crash here happens inside one process, and
the page cache outlives a process, so fsync changes nothing a verification can observe
(it only protects against power loss, lesson 2). It would make each run four times slower.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import shutil
from pathlib import Path

from harness.display.scratch_folder import scratch_folder

from grader.core.error_text import describe_error

DEFAULT_SCENARIO = "team-email"


@contextlib.contextmanager
def patched(patches: dict[str, object]):
    """Swap ``"module:attribute"`` targets for the given values; put the originals back."""
    originals = []
    try:
        for target, value in patches.items():
            module_name, attribute = target.split(":")
            module = importlib.import_module(module_name)
            originals.append((module, attribute, getattr(module, attribute)))
            setattr(module, attribute, value)
        yield
    finally:
        for module, attribute, value in reversed(originals):
            setattr(module, attribute, value)


@contextlib.contextmanager
def without_fsync():
    real = os.fsync
    os.fsync = lambda descriptor: None
    try:
        yield
    finally:
        os.fsync = real


class HarnessUnderTest:
    """Drive one harness: ``run``, ``resume`` and ``cancel`` return the exit code that
    ``python -m harness`` would (0 concluída, 137 queda, 2 entrada ruim, 12 cancelada...)."""

    def __init__(self, name: str, patches: dict[str, object] | None = None, root=None):
        self.name = name
        self._patches = dict(patches or {})
        if root is not None:
            self._root = Path(root)
        else:  # a folder of its own, removed when this Python ends (a run folder may outlive the object)
            self._root = scratch_folder("harness-sob-teste-")
        self._count = 0
        self.last_output = ""

    def __repr__(self) -> str:
        return f"<harness sob teste {self.name!r}>"

    def new_run_dir(self, label: str = "execucao") -> Path:
        """A fresh, not yet existing folder for one run (``run`` creates it)."""
        self._count += 1
        return self._root / f"{self._count:03d}-{label}"

    def run(self, run_dir, crash_after: str | None = None, max_turns: int | None = None,
            scenario: str = DEFAULT_SCENARIO) -> int:
        """``python -m harness run`` (a clean start) in ``run_dir``."""
        extra = ["--max-turns", str(max_turns)] if max_turns is not None else []
        return self._invoke(self._run_args(run_dir, scenario, False, extra), crash_after, run_dir)

    def resume(self, run_dir, crash_after: str | None = None, scenario: str = DEFAULT_SCENARIO) -> int:
        """``python -m harness run --resume`` in ``run_dir``."""
        return self._invoke(self._run_args(run_dir, scenario, True, []), crash_after, run_dir)

    def cancel(self, run_dir, reason: str = "cancelada pela verificação") -> int:
        """``python -m harness cancel`` on ``run_dir``."""
        return self._invoke(["cancel", "--workdir", str(run_dir), "--reason", reason], None, run_dir)

    def cleanup(self) -> None:
        shutil.rmtree(self._root, ignore_errors=True)

    # --- internals

    @staticmethod
    def _run_args(run_dir, scenario, resume, extra):
        args = ["run", "--scenario", scenario, "--workdir", str(run_dir)]
        return args + (["--resume"] if resume else []) + list(extra)

    def _invoke(self, args, crash_after, run_dir) -> int:
        from harness import cli
        from harness.crash import parse_crash_after, reset_crash_counts
        from harness.display.crash_lab import crash_environment, requests_log

        if crash_after is not None:
            parse_crash_after(crash_after)  # a malformed value is the caller's mistake: say so now
        buffer = io.StringIO()
        with crash_environment(crash_after, None, requests_log(run_dir)), patched(self._patches), \
                without_fsync(), contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            reset_crash_counts()
            try:
                code = cli.main(list(args))
            except SystemExit as exit_:  # argparse refusing the arguments
                code = exit_.code if isinstance(exit_.code, int) else 2
            except Exception as error:  # noqa: BLE001 - an uncaught error is how a real process ends
                buffer.write(f"erro não tratado: {describe_error(error)}\n")
                code = 1
        self.last_output = buffer.getvalue()
        return code
