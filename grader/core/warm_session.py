"""Grading the same exercise again and again, each time in a fresh kernel, without paying its start.

``grade watch`` re-grades the notebook on every save and the notebook's ``check()`` grades it
on every call. A cold grading spends most of its time starting the kernel (importing
ipykernel and anthropic); the checks themselves are the smaller part. ``WarmGrader`` keeps,
for as long as it lives, one kernel template process (grader/core/forked_kernels.py, the one
``grade batch`` uses) that has imported all of that once, and one kernel already forked from
it, waiting for the next grading. Each grading takes that kernel (nothing ran in it), and
the next one is forked when the grading's result has been shown.

What does not have to happen between the save and its result happens while the student reads the
last result (``prepare``): the next kernel is forked and connected to (it has answered before the
save arrives), and the last grading's folder is removed. The exercise's checks and fixtures are
loaded once and read again only when a fixture file changes (``files_signature``).

A grading is the same as ``grade exercise-N``'s: the same engine, time and memory limits,
restarts after a cell that kills its kernel (forked from the template too) and the same
hang-once memo. What a notebook does to its kernel (``os._exit``, a signal, a memory bomb)
ends that kernel only: the template never runs a student's code. Where the template cannot
be had (no fork, it died, ``GRADE_KERNEL_TEMPLATE=0``), kernels start the usual way; a template
that died is started again, a few times at most.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Sequence

from grader.core.environment import kernel_env
from grader.core.limits import DEFAULT_LIMITS, Limits
from grader.core.prelaunch import PrelaunchedKernel
from grader.core.stop_signals import act_on_stop, stops_deferred

MAX_TEMPLATE_STARTS = 3  # a template that keeps dying is not started again and again


class WarmGrader:
    """Gradings of one exercise, each in a fresh kernel forked from one template kept warm."""

    def __init__(self, exercise: str) -> None:
        self.exercise = exercise
        self.template: Any = None
        self.starts = 0
        self.spare: PrelaunchedKernel | None = None
        self.done: list[PrelaunchedKernel] = []  # gradings whose folders go once their result is shown
        self._fixtures: tuple[tuple, list] | None = None  # (files_signature, the fixtures it read)
        self._made: list[Path] = []  # the folders of its kernels and templates, as they are made

    def grade(self, notebook: Path, *, limits: Limits = DEFAULT_LIMITS, level: int | None = None,
              fixture_dirs: Sequence[Path] = ()) -> Any:
        """``engine.grade`` of ``notebook`` under ``limits``, in the waiting kernel (forked now if none waits)."""
        from grader.core.engine import grade_with_fixtures, load_exercise

        self._remove_done()  # only when ``prepare`` did not run since the last grading
        spec = load_exercise(self.exercise, level)
        fixtures = self._load_fixtures(spec, fixture_dirs)
        current, self.spare = self.spare, None
        try:
            if current is None and Path(notebook).is_file():
                with stops_deferred():  # a stop acts in the fork's wait slices, never half-way
                    current = self._prelaunch()
            return grade_with_fixtures(spec, fixtures, notebook, level=level, limits=limits, prelaunched=current)
        finally:
            if current is not None:
                self.done.append(current)
                current.discard()  # its kernel ends now; its folder when ``prepare`` runs

    def prepare(self) -> None:
        """Get the next grading ready (call it once the result is shown): its kernel forked and
        connected to, the last grading's folder removed. A stop is held meanwhile and acts only
        between the short slices of the waits for the template's and the kernel's answers, so
        neither a kernel nor a client is ever left half-made, and Ctrl-C still acts within about
        a second."""
        with stops_deferred():
            if self.spare is None:
                self.spare = self._prelaunch()
            self._remove_done()  # while the new kernel starts
            self.spare.connect(between_waits=act_on_stop)

    def close(self) -> None:
        """End the waiting kernel and the template (which kills any kernel of it still running)."""
        with stops_deferred():
            spare, self.spare = self.spare, None
            template, self.template = self.template, None
            try:
                if spare is not None:
                    self.done.append(spare)
                    spare.discard()
            finally:
                try:
                    if template is not None:
                        template.close()
                finally:
                    self._remove_done()

    def folders(self) -> list[Path]:
        """Every folder this session made that is still there (a last-resort stop removes them):
        noted when made, so one whose owner was let go of before a stuck ending is named too."""
        self._made = [folder for folder in self._made if os.path.lexists(folder)]
        return list(self._made)

    def __enter__(self) -> WarmGrader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- inside

    def _template(self) -> Any:
        """The template, started again when the last one died (or None: kernels start as usual)."""
        if self.template is not None and self.template.broken:
            with contextlib.suppress(Exception):
                self.template.close()
            self.template = None
        if self.template is None and self.starts < MAX_TEMPLATE_STARTS:
            from grader.core.forked_kernels import KernelTemplate

            self.starts += 1
            self.template = KernelTemplate.start(self.exercise, kernel_env())
            if self.template is not None:
                self.template.while_waiting = act_on_stop  # a stop held while a fork is waited for acts there
                if self.template.server is not None:
                    self._made.append(Path(self.template.server.folder))
            if self.template is None:
                self.starts = MAX_TEMPLATE_STARTS  # forks are not supported here, or switched off
        return self.template

    def _prelaunch(self) -> PrelaunchedKernel:
        kernel = PrelaunchedKernel(None, self._template(), keep_folder=True)
        self._made.append(kernel.workdir)
        return kernel

    def _remove_done(self) -> None:
        while self.done:
            self.done[0].remove_folder()
            self.done.pop(0)

    def _load_fixtures(self, spec: Any, fixture_dirs: Sequence[Path]) -> list:
        """The fixtures ``engine.grade`` would load, read again only when their files changed."""
        from grader.core.fixture_loader import files_signature, load_fixtures

        signature = (tuple(str(folder) for folder in fixture_dirs), files_signature(self.exercise, fixture_dirs))
        if self._fixtures is None or self._fixtures[0] != signature:
            self._fixtures = None  # a fixture that fails to load is not kept either
            self._fixtures = (signature, load_fixtures(self.exercise, fixture_dirs, spec.validate_fixture))
        return self._fixtures[1]
