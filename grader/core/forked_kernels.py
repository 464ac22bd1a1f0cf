"""Kernels forked from a template process (grader/core/kernel_template.py), seen from the worker.

Starting a kernel and importing anthropic in it is most of the CPU a grading costs.
``grade batch`` therefore starts one ``TemplateProcess`` that imports all of that once
for the whole batch; each worker holds a ``KernelTemplate`` (its connection to it) and
asks it for a fork per submission: ``forked_manager_class`` gives nbclient and the
prelaunch (grader/core/warm.py) a kernel manager whose provisioner forks instead of running
``python -m ipykernel_launcher``. With ``-j 2`` the two workers share the one template,
so a second job does not import anthropic a second time.

It is an optimisation only. Where the template cannot be had (no fork, no pidfd,
it refused or died, it does not answer), the provisioner launches the kernel as
jupyter_client always does, and the grading goes on the same.
"""
from __future__ import annotations

import ast
import asyncio
import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning.local_provisioner import LocalProvisioner

import grader
from grader.core import scratch
from grader.core.kernel import STARTUP_TIMEOUT
from grader.core.kernel_template import receive, send

WAIT_SLICE = 0.25  # seconds of one look for the template's answer (a held stop acts between looks)
KILL_WAIT = 5.0  # seconds ``kill`` waits for a SIGKILLed kernel to end (jupyter_client's own wait: 5 s)
# What every exercise's kernel imports first. IPythonKernel imports its debugger (and debugpy with
# it, 0.16 s) on every start: done once in the template, no forked kernel pays it.
ALWAYS_IMPORTED = ("ipykernel.ipkernel", "ipykernel.debugger", "anthropic")
SWITCH = "GRADE_KERNEL_TEMPLATE"  # "0" starts every kernel the usual way (to compare, or to rule the template out)
_TEMPLATE_MAIN = "from grader.core.kernel_template import main; raise SystemExit(main())"


def supported() -> bool:
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and hasattr(os, "pidfd_open")
            and hasattr(socket, "send_fds") and hasattr(signal, "pidfd_send_signal"))


def notebook_imports(notebook: Path) -> list[str]:
    """The modules the code cells of ``notebook`` import at top level (a course notebook, never a submission)."""
    import nbformat

    try:
        cells = nbformat.read(notebook, as_version=4).cells
    except Exception:  # noqa: BLE001 - no notebook, no list: the template imports the basics only
        return []
    modules: list[str] = []
    for cell in cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                modules += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.append(node.module)
                if node.module == "grader":  # `from grader import check` imports check's module on first use,
                    for alias in node.names:  # and a fixture helper what it reads with on its first call
                        if alias.name in grader.MODULE_OF:
                            modules.append(grader.MODULE_OF[alias.name])
                        modules += grader.FIRST_CALL_IMPORTS.get(alias.name, ())
    return list(dict.fromkeys(modules))


def template_modules(exercise: str) -> list[str]:
    """What the template imports for ``exercise``: the basics and the course's exercise notebook's imports."""
    from grader.core.course_folder import students_notebook

    return list(dict.fromkeys([*ALWAYS_IMPORTED, *notebook_imports(students_notebook(exercise))]))


SOCKET_PATH_MAX = 107  # a Unix socket's path: 108 bytes on Linux, the last one a NUL (unix(7))


def socket_folder(parent: str | None) -> str:
    """A new folder (mode 700) for the template's socket, named with this process's id, as a
    grading's folder is: if this process is killed outright, a later grading removes it
    (grader/core/scratch.py). Under a temporary folder too deep for a socket's path, the folder is
    made in /tmp instead: otherwise the bind fails and every kernel starts cold. A ``parent`` asked
    for (the batch's scratch folder) is kept as it is."""
    if parent is not None:
        return tempfile.mkdtemp(prefix=f"grade-{scratch.TEMPLATE}-{os.getpid()}-", dir=parent)
    folder = str(scratch.new_scratch(scratch.TEMPLATE))
    if len(os.fsencode(os.path.join(folder, "template.sock"))) > SOCKET_PATH_MAX:
        scratch.remove(Path(folder))  # with the lock beside it
        folder = str(scratch.new_scratch(scratch.TEMPLATE, root="/tmp"))
    return folder


class TemplateProcess:
    """The template process of one batch, and the address its workers connect to."""

    def __init__(self, modules: list[str], env: dict[str, str], wrapper: list[str] = (), parent: str | None = None):
        self.broken: str | None = None
        self.process: subprocess.Popen | None = None
        self.folder = socket_folder(parent)  # mode 700: only this user connects
        self.address = os.path.join(self.folder, "template.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            listener.bind(self.address)
            listener.listen(64)
            self.process = subprocess.Popen(
                [*wrapper, sys.executable, "-c", _TEMPLATE_MAIN, str(listener.fileno()), str(theirs.fileno()), *modules],
                pass_fds=[listener.fileno(), theirs.fileno()], env=env,
                # Nothing it prints belongs on the batch's terminal; a worker that finds it gone says so.
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                # Out of the terminal's process group: Ctrl-C reaches the batch (or watch) only, and
                # the template ends when its owner closes the control socket (or dies: the socket
                # closes then too), never while its owner still unwinds a running kernel.
                start_new_session=True,
            )
        except OSError as error:
            self.broken = f"o modelo de kernel não iniciou ({error})"
        finally:
            listener.close()
            theirs.close()

    @classmethod
    def start(cls, exercise: str, env: dict[str, str], wrapper: list[str] = (),
              parent: str | None = None) -> TemplateProcess | None:
        """A template for ``exercise``'s kernels (importing in the background), or None where forks are
        not supported or ``GRADE_KERNEL_TEMPLATE=0`` turns it off. ``wrapper`` runs it inside
        something (bubblewrap, for ``--sandbox``); its socket's folder is made in ``parent``."""
        if not supported() or os.environ.get(SWITCH) == "0":
            return None
        return cls(template_modules(exercise), env, wrapper, parent)

    def close(self) -> None:
        """End the template; it kills the kernels still running."""
        with contextlib.suppress(OSError):
            self._control.close()
        if self.process is not None:
            # A template a kernel stopped (SIGSTOP to its parent) would never see the socket close.
            with contextlib.suppress(OSError):
                self.process.send_signal(signal.SIGCONT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        scratch.remove(self.folder)


class KernelTemplate:
    """A worker's connection to the batch's template process."""

    def __init__(self, address: str | None, server: TemplateProcess | None = None):
        self._lock = threading.Lock()
        self._exits: dict[int, int] = {}
        self._ready = False
        self.broken: str | None = None  # why forks are not asked for any more
        self.server = server  # the template process, when this connection started it
        self.scratch: Path | None = None  # a folder of grading folders, removed on close
        # Called between slices of a wait for the template's answer: a warm session acts there on a
        # stop it held (grader/core/stop_signals.py), at a point where nothing is half-made.
        self.while_waiting: Any = lambda: None
        self._channel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        if server is not None and server.broken:
            self.broken = server.broken
            return
        try:
            self._channel.connect(address)
        except (OSError, TypeError) as error:
            self.broken = f"o modelo de kernel não atendeu ({error})"

    @classmethod
    def start(cls, exercise: str, env: dict[str, str]) -> KernelTemplate | None:
        """A template process of its own and the connection to it (a grading outside a batch)."""
        server = TemplateProcess.start(exercise, env)
        return None if server is None else cls(server.address, server)

    @classmethod
    def own(cls, modules: list[str], env: dict[str, str]) -> KernelTemplate:
        """A template importing exactly ``modules``, and the connection to it."""
        server = TemplateProcess(modules, env)
        return cls(server.address, server)

    @property
    def executable(self) -> str:
        return os.path.realpath(sys.executable)

    def fork(self, cmd: list[str], kwargs: dict[str, Any], confine: dict | None = None) -> tuple[int, int] | None:
        """(pid, pidfd) of a kernel forked for this launch, or None to launch it the usual way.

        ``pid`` is the number the template gave it (the key of its exit notice); ``confine``
        (a user id and limits) is applied in the child before it becomes a kernel."""
        if self.broken or not self._forkable(cmd, kwargs):
            return None
        outputs = [self._descriptor(kwargs.get("stdout"), 1), self._descriptor(kwargs.get("stderr"), 2)]
        request = {"args": cmd[3:], "cwd": str(kwargs.get("cwd") or os.getcwd()),
                   "env": dict(kwargs.get("env") or os.environ), "confine": confine}
        with self._lock:
            try:
                if not self._ready and not self._wait_ready():
                    return None
                send(self._channel, request, outputs)
                answer, fds = self._answer(STARTUP_TIMEOUT)
            except (OSError, ValueError, TimeoutError) as error:
                self._break(f"o modelo de kernel parou de responder ({error})")
                return None
            except BaseException:  # Ctrl-C while it answers: its late answer would be taken for the next fork's
                self.broken = "o pedido ao modelo de kernel foi interrompido"
                with contextlib.suppress(OSError):
                    self._channel.close()  # the template kills what it forked for this connection
                raise
        if "pid" not in answer or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            self._break(f"o modelo de kernel não criou o kernel ({answer.get('error', answer)})")
            return None
        return answer["pid"], fds[0]

    def exit_status(self, pid: int, wait: float = 1.0) -> int:
        """How the kernel ``pid`` (already gone) ended, as the template reaped it (-9 when it never said)."""
        deadline = time.monotonic() + wait
        with self._lock:
            while pid not in self._exits:
                try:
                    self._keep_notice(*self._read(max(0.0, deadline - time.monotonic())))
                except (OSError, ValueError, TimeoutError):
                    break
            return self._exits.get(pid, -signal.SIGKILL)

    def forget(self, pid: int) -> None:
        """Drop what is known of ``pid``'s end (its number may be given to a later kernel)."""
        with self._lock:
            self._exits.pop(pid, None)

    def close(self) -> None:
        """Leave the template (it kills this worker's kernels still running); end it if it is ours."""
        with contextlib.suppress(OSError):
            self._channel.close()
        if self.server is not None:
            self.server.close()
        if self.scratch is not None:
            scratch.remove(self.scratch)

    # --- inside

    def _forkable(self, cmd: list[str], kwargs: dict[str, Any]) -> bool:
        """Only the launch the template can reproduce: this Python's ipykernel_launcher, nothing else asked for."""
        known = {"env", "cwd", "stdout", "stderr", "kernel_id"}
        return (len(cmd) >= 3 and cmd[1:3] == ["-m", "ipykernel_launcher"]
                and os.path.realpath(cmd[0]) == self.executable
                and all(value is None for key, value in kwargs.items() if key not in known))

    @staticmethod
    def _descriptor(stream: Any, default: int) -> int:
        if stream is None:
            return default
        return stream if isinstance(stream, int) else stream.fileno()

    def _wait_ready(self) -> bool:
        answer, fds = self._answer(STARTUP_TIMEOUT)
        for fd in fds:
            os.close(fd)
        if "ready" not in answer:
            self._break(f"o modelo de kernel recusou-se a criar kernels ({answer.get('refused', answer)})")
            return False
        self._ready = True
        return True

    def _read(self, timeout: float) -> tuple[dict, list[int]]:
        if timeout <= 0 or not select.select([self._channel], [], [], timeout)[0]:
            raise TimeoutError(f"sem resposta em {timeout:g} s")
        message, fds = receive(self._channel, max_fds=1)
        if message is None:
            raise OSError("o processo do modelo terminou")
        return message, fds

    def _keep_notice(self, message: dict, fds: list[int]) -> bool:
        """Keep an exit notice; False for any other message."""
        if "exited" not in message:
            return False
        self._exits[message["exited"]] = message["status"]
        return True

    def _answer(self, timeout: float) -> tuple[dict, list[int]]:
        """The template's next message that is not an exit notice (notices are kept). Waited for in
        short slices, ``while_waiting`` called between them (a stop held meanwhile acts there)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                message, fds = self._read(min(remaining, WAIT_SLICE))
            except TimeoutError:
                if remaining <= WAIT_SLICE:
                    raise
                self.while_waiting()
                continue
            if not self._keep_notice(message, fds):
                return message, fds

    def _break(self, why: str) -> None:
        self.broken = why
        print(f"aviso: {why}; os próximos kernels iniciam do jeito comum.", file=sys.stderr)
        with contextlib.suppress(OSError):
            self._channel.close()  # what it answers from now on is not to be trusted
        if self.server is not None and self.server.process is not None:
            with contextlib.suppress(OSError):
                self.server.process.kill()  # a template of its own that hangs is ended at once


def pid_of(pidfd: int) -> int | None:
    """The pid of the process ``pidfd`` refers to, as this process's PID namespace numbers it.

    A template inside a sandbox numbers its kernels in the sandbox's own namespace; signals
    and /proc sampled from here need this namespace's number (Linux shows it in fdinfo)."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}", encoding="ascii") as info:
            for line in info:
                if line.startswith("Pid:"):
                    pid = int(line.split()[1])
                    return pid if pid > 0 else None  # 0: not visible from here; -1: already gone
    except (OSError, ValueError):
        pass
    return None


def _kernel_part(cmd: list[str]) -> list[str] | None:
    """``python -m ipykernel_launcher ...`` at the end of a wrapped command, or None."""
    for start in range(len(cmd) - 2):
        if cmd[start + 1:start + 3] == ["-m", "ipykernel_launcher"]:
            return cmd[start:]
    return None


class ForkedProvisioner(LocalProvisioner):
    """LocalProvisioner whose kernel is forked from a ``KernelTemplate`` when it can be."""

    template: KernelTemplate | None = None
    confine: dict | None = None  # user id and limits for a kernel forked inside a sandbox
    pidfd: int | None = None
    template_pid: int | None = None  # the kernel's number in the template's namespace

    @property
    def has_process(self) -> bool:
        return self.pidfd is not None or super().has_process

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        # A sandboxed kernel's command is bubblewrap's around the kernel's own: the template forks
        # the kernel part (inside its own sandbox); if it cannot, the whole wrapped command runs.
        own = _kernel_part(cmd) if self.confine else cmd
        forked = self.template.fork(own, kwargs, self.confine) if self.template is not None and own else None
        if forked is None:
            return await super().launch_kernel(cmd, **kwargs)
        self.template_pid, self.pidfd = forked
        self.pid = pid_of(self.pidfd) or self.template_pid
        self.pgid = self.pid  # the child made itself a session (and group) leader
        self.cwd = kwargs.get("cwd")
        return self.connection_info

    def _gone(self) -> bool:
        return bool(select.select([self.pidfd], [], [], 0)[0])

    async def _ended(self, timeout: float) -> None:
        """Wait until the kernel has ended (its pidfd turns readable), at most ``timeout`` seconds."""
        if self._gone():
            return
        loop = asyncio.get_running_loop()
        ended = loop.create_future()
        loop.add_reader(self.pidfd, lambda: ended.done() or ended.set_result(None))
        try:
            await asyncio.wait_for(ended, timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            loop.remove_reader(self.pidfd)

    async def poll(self) -> int | None:
        if self.pidfd is None:
            return await super().poll()
        return self.template.exit_status(self.template_pid) if self._gone() else None

    async def wait(self) -> int | None:
        if self.pidfd is None:
            return await super().wait()
        while not self._gone():
            await self._ended(1.0)
        status = self.template.exit_status(self.template_pid)
        self._close_pidfd()
        return status

    async def send_signal(self, signum: int) -> None:
        if self.pidfd is None:
            return await super().send_signal(signum)
        try:
            os.killpg(self.pgid, signum)  # the kernel and whatever it started, as LocalProvisioner does
        except OSError:
            with contextlib.suppress(ProcessLookupError):  # gone already, as Popen.send_signal tolerates
                signal.pidfd_send_signal(self.pidfd, signum)

    async def kill(self, restart: bool = False) -> None:
        if self.pidfd is None:
            return await super().kill(restart)
        await self.send_signal(signal.SIGKILL)
        # jupyter_client then polls every 0.1 s until the kernel is gone: it is, by the first look.
        await self._ended(KILL_WAIT)

    async def terminate(self, restart: bool = False) -> None:
        if self.pidfd is None:
            return await super().terminate(restart)
        await self.send_signal(signal.SIGTERM)

    async def cleanup(self, restart: bool = False) -> None:
        self._close_pidfd()
        await super().cleanup(restart)

    def _close_pidfd(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None
            self.template.forget(self.template_pid)


def forked_manager_class(template: KernelTemplate, base: Any = AsyncKernelManager, confine: dict | None = None) -> Any:
    """A jupyter_client KernelManager class whose kernels come from ``template`` (or start as usual);
    ``confine`` is what a sandboxed template applies to each kernel (Sandbox.confinement)."""

    class ForkedKernelManager(base):
        async def _async_pre_start_kernel(self, **kw: Any) -> Any:
            if self.provisioner is None:
                self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
                self.provisioner = ForkedProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
                self.provisioner.template = template
                self.provisioner.confine = confine
            return await super()._async_pre_start_kernel(**kw)

    return ForkedKernelManager
