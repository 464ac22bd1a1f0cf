"""A grading's kernel, started before the grading needs it.

Starting a kernel is cheap for the grader (one process launch); the kernel then spends a second
or more importing IPython and the SDK on its own. Launched first, that time overlaps with what
the grader does meanwhile: ``grade exercise-N`` imports nbclient and loads the checks and the
fixtures while its kernel starts, and a batch worker grades one submission while the next one's
kernel starts (grader/core/warm.py). The engine connects to it when the grading begins
(``grade(..., prelaunched=...)``); each grading still gets a fresh kernel nothing ran in.

This module imports only what the launch needs (jupyter_client, when a kernel is launched), not
the notebook machinery, so a command can launch before importing the rest.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from grader.core import grading_files, scratch
from grader.core import kernel as kernels
from grader.core.environment import kernel_env
from grader.core.sandbox import Sandbox, kernel_environment, sandboxed_connection


class PrelaunchedKernel:
    """A kernel started ahead of its grading, in the folder that grading will use."""

    def __init__(self, sandbox: Sandbox | None = None, template: Any = None) -> None:
        self.sandbox = sandbox  # with the user id this kernel runs as: the grading keeps it
        self.template = template  # a kernel the grading restarts is forked from it too
        from jupyter_client.manager import AsyncKernelManager
        from jupyter_core.utils import run_sync

        self.workdir = scratch.new_scratch()
        self._taken = False
        self._km: Any = None
        self._stderr = grading_files.open_append(self.workdir / "kernel-stderr-1-1.log")
        if sandbox is not None:
            sandbox.prepare(self.workdir)
            settings = sandboxed_connection(self.workdir, sandbox, 1)
        else:
            settings = kernels.kernel_connection(self.workdir, 1, 1)
        manager_class = settings.pop("manager_class", AsyncKernelManager)
        env = kernel_env(self.workdir)
        if template is not None:
            from grader.core.forked_kernels import forked_manager_class

            confine = sandbox.confinement() if sandbox is not None else None
            manager_class = forked_manager_class(template, manager_class, confine)
            if sandbox is not None:
                env = kernel_environment(self.workdir)  # what bubblewrap would have given it
        km = manager_class(kernel_name="python3", **settings)
        try:
            # The same launch nbclient would do (its in-memory history argument included).
            run_sync(km.start_kernel)(
                extra_arguments=["--HistoryManager.hist_file=:memory:"], cwd=str(self.workdir),
                env=env, stderr=self._stderr, stdout=self._stderr,
            )
            self._km = km
        except Exception:  # noqa: BLE001 - the grading then starts its own kernel
            self._km = None
        except BaseException:  # Ctrl-C, SIGTERM while it starts: no kernel or folder left behind
            self._km = km
            self.discard()
            raise

    def take(self) -> Any:
        """The kernel manager, now owned (and shut down) by the grading; None if the launch failed."""
        self._taken = True
        return self._km

    @contextlib.contextmanager
    def folder(self) -> Iterator[str]:
        """The grading folder, removed (with a kernel never taken) when the grading ends."""
        try:
            yield str(self.workdir)
        finally:
            self.discard()

    def discard(self) -> None:
        if self._km is not None and not self._taken:
            from jupyter_core.utils import run_sync

            with contextlib.suppress(Exception):
                run_sync(self._km.shutdown_kernel)(now=True)
        self._km = None
        with contextlib.suppress(OSError):
            self._stderr.close()
        scratch.remove(self.workdir)
