"""A grading's kernel, started before the grading needs it.

Starting a kernel is cheap for the grader (one process launch); the kernel then spends a second
or more importing IPython and the SDK on its own. Launched first, that time overlaps with what
the grader does meanwhile: ``grade exercise-N`` imports nbclient and loads the checks and the
fixtures while its kernel starts, and a batch worker grades one submission while the next one's
kernel starts (grader/core/warm.py). The engine connects to it when the grading begins
(``grade(..., prelaunched=...)``); each grading still gets a fresh kernel nothing ran in.

A warm session (grader/core/warm_session.py) also connects to its kernel ahead (``connect``): the
grading then starts with a client that has already had the kernel's answer, instead of waiting for
it (and for its output channel to fall quiet) after the save. It removes the grading's folder
itself once the result is shown (``keep_folder``), rather than before the result.

This module imports only what the launch needs (jupyter_client, when a kernel is launched), not
the notebook machinery, so a command can launch before importing the rest.
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator

from grader.core import grading_files, scratch
from grader.core import kernel as kernels
from grader.core.environment import kernel_env
from grader.core.sandbox import Sandbox, kernel_environment, sandboxed_connection

ANSWER_SLICE = 1.0  # seconds of one wait for the kernel's first answer (jupyter_client looks once a second)


class PrelaunchedKernel:
    """A kernel started ahead of its grading, in the folder that grading will use."""

    def __init__(self, sandbox: Sandbox | None = None, template: Any = None, keep_folder: bool = False) -> None:
        self.sandbox = sandbox  # with the user id this kernel runs as: the grading keeps it
        self.template = template  # a kernel the grading restarts is forked from it too
        self.keep_folder = keep_folder  # the grading's end leaves the folder to ``remove_folder``
        from jupyter_client.manager import AsyncKernelManager
        from jupyter_core.utils import run_sync

        self.workdir = scratch.new_scratch()
        self._taken = False
        self._km: Any = None
        self._kc: Any = None  # a client connected ahead (``connect``), until the grading takes it
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
            self._km, self.keep_folder = km, False
            self.discard()
            raise

    def take(self) -> Any:
        """The kernel manager, now owned (and shut down) by the grading; None if the launch failed."""
        self._taken = True
        return self._km

    def connect(self, between_waits: Callable[[], None] = lambda: None) -> None:
        """Connect to the kernel and wait for its answer now, not when the grading begins. A kernel
        that does not answer is left as it is: the grading connects (or starts another) as usual.

        The answer is waited for in slices of about a second, ``between_waits`` called between them:
        a warm session acts there on a stop it held. An interruption inside jupyter_client's wait
        could leave a socket its client does not know of, and ending that client would then wait
        for the socket forever (zmq's ``term``)."""
        if self._km is None or self._taken or self._kc is not None:
            return
        from jupyter_core.utils import run_sync

        client = self._km.client()
        deadline = time.monotonic() + kernels.STARTUP_TIMEOUT
        try:
            client.start_channels()
            while True:
                try:
                    run_sync(client.wait_for_ready)(timeout=ANSWER_SLICE)
                    break
                except RuntimeError:  # no answer within the slice, or the kernel died
                    if time.monotonic() > deadline or not run_sync(self._km.is_alive)():
                        raise
                between_waits()
        except Exception:  # noqa: BLE001 - it died, or does not answer
            _stop(client)
            return
        except BaseException:  # a stop acted between slices: nothing of the client is left behind
            _stop(client)
            raise
        client.allow_stdin = False  # as nbclient sets it on the clients it connects
        self._kc = client

    def connected(self) -> bool:
        return self._kc is not None

    def take_client(self) -> Any:
        """The client ``connect`` made, now the grading's (nbclient uses it, and stops it at the end);
        None when there is none or the kernel has died since (the grading then connects as usual,
        and finds out)."""
        client, self._kc = self._kc, None
        if client is None:
            return None
        from jupyter_core.utils import run_sync

        try:
            alive = self._km is not None and run_sync(self._km.is_alive)()
        except Exception:  # noqa: BLE001 - a kernel that cannot be asked is not trusted
            alive = False
        if not alive:
            _stop(client)
            return None
        return client

    @contextlib.contextmanager
    def folder(self) -> Iterator[str]:
        """The grading folder, removed (with a kernel never taken) when the grading ends."""
        try:
            yield str(self.workdir)
        finally:
            self.discard()

    def discard(self) -> None:
        """End the kernel if no grading took it; remove the folder unless ``keep_folder``."""
        client, self._kc = self._kc, None
        if client is not None:
            _stop(client)
        if self._km is not None and not self._taken:
            from jupyter_core.utils import run_sync

            with contextlib.suppress(Exception):
                run_sync(self._km.shutdown_kernel)(now=True)
        self._km = None
        with contextlib.suppress(OSError):
            self._stderr.close()
        if not self.keep_folder:
            self.remove_folder()

    def remove_folder(self) -> None:
        scratch.remove(self.workdir)


def _stop(client: Any) -> None:
    with contextlib.suppress(Exception):
        client.stop_channels()
