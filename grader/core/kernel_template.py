"""The kernel template process: imports once, then forks one fresh kernel per grading.

``grade batch`` starts one template for the whole batch (grader/core/forked_kernels.py,
``TemplateProcess``), and every worker of the batch (grader/core/warm.py) connects to it. It
imports what every grading kernel of the exercise imports anyway (ipykernel, anthropic,
the harness modules the exercise notebook uses) and then waits. For each kernel a worker
asks for, it forks: the child becomes a kernel exactly as ``python -m ipykernel_launcher``
would (its own session and process group, the grading folder as cwd, the environment the
worker gives, stdout/stderr on the worker's log file, no other file descriptor of the
template), and the template goes back to waiting. The template itself never runs anything
but imports, so each kernel starts from a state nothing ran code in; what a submission
changes in its kernel (a module global, a patched function) dies with it. One template
for all workers means the imports are paid once per batch, not once per job.

The protocol: a listening SOCK_SEQPACKET socket workers connect to (one message per
record, JSON), and a control socket held by the batch:

- template -> worker, once per connection: ``{"ready": pid}`` or ``{"refused": why}``;
- worker -> template: ``{"args": [...], "cwd": ..., "env": {...}}`` with the kernel's
  stdout and stderr descriptors attached; answer ``{"pid": n}`` with a pidfd of the
  kernel attached (so the worker can watch a process that is not its child), or
  ``{"error": why}``;
- template -> worker, at any time: ``{"exited": pid, "status": code}`` when one of that
  worker's kernels ends (the template reaps its children; ``status`` is negative for a
  signal, as in subprocess).

A worker that goes away (it ended, or was killed past its deadline) takes its kernels
with it: the template kills them. When the control socket closes (the batch ended or
died) the template kills every kernel and exits.

This module runs inside the template, so it imports nothing of jupyter_client.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import resource
import select
import signal
import socket
import sys
import threading
import traceback

from grader.core.plural import quantity

MESSAGE_LIMIT = 1 << 20  # one request (the kernel's environment) fits easily


def send(channel: socket.socket, message: dict, fds: list[int] = ()) -> None:
    socket.send_fds(channel, [json.dumps(message).encode()], list(fds))


def receive(channel: socket.socket, max_fds: int = 2) -> tuple[dict | None, list[int]]:
    """The next message and the descriptors that came with it; (None, []) when the peer is gone."""
    data, fds, _flags, _address = socket.recv_fds(channel, MESSAGE_LIMIT, max_fds)
    if not data:
        return None, fds
    return json.loads(data), fds


def _status(wait_status: int) -> int:
    return -os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else os.WEXITSTATUS(wait_status)


class Kernels:
    """The kernels forked so far and the connection each one belongs to."""

    def __init__(self) -> None:
        self.owners: dict[int, socket.socket] = {}
        self.users: dict[int, int] = {}  # kernel pid -> the user id it runs as (sandboxed kernels)
        self.ended_users: set[int] = set()  # users whose kernel ended: what it left running is killed
        self.template = os.getpid()  # a forked kernel inherits this object: it must never act on it

    def reap(self, _signum=None, _frame=None) -> None:
        """SIGCHLD: tell each ended kernel's worker how it ended."""
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            channel = self.owners.pop(pid, None)
            if pid in self.users:
                self.ended_users.add(self.users.pop(pid))
            if channel is not None:
                try:
                    send(channel, {"exited": pid, "status": _status(wait_status)})
                except OSError:
                    pass  # that worker is gone

    def kill(self, channel: socket.socket | None = None) -> None:
        """Kill the kernels of ``channel`` (every kernel when None), with whatever they started."""
        if os.getpid() != self.template:
            return  # a kernel's own exit unwinds through the template's loop: its siblings are not its to end
        # SIGCHLD waits: a kernel reaped between the two signals below would free its pid
        # for another process to take. Unreaped, an ended kernel keeps its pid (a zombie).
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        try:
            for pid, owner in list(self.owners.items()):
                if channel is None or owner is channel:
                    try:
                        os.killpg(pid, signal.SIGKILL)  # each kernel leads its own process group
                    except OSError:
                        pass
                    # A kernel forked a moment ago may not have reached its setsid: no group bears
                    # its pid yet, and it would live on to make its files in a folder already removed.
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


    def clear_user(self, uid: int) -> None:
        """Kill every process running as ``uid``: what an ended kernel started (and the kernel, if
        it still runs), before its user id is given to the next kernel. Call with SIGCHLD blocked."""
        if os.getpid() != self.template:
            return
        self.ended_users.discard(uid)
        try:
            helper = os.fork()
        except OSError:
            return
        if helper == 0:
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)  # as uid: every process it may signal, that is its own
            except BaseException:  # noqa: BLE001 - nothing of the template runs in this child
                pass
            os._exit(0)
        os.waitpid(helper, 0)
        self.reap()  # the kernels it ended, told to their workers


    def clear_ended_users(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        try:
            for uid in list(self.ended_users):
                if uid in self.users.values():
                    self.ended_users.discard(uid)  # a new kernel has it: its fork cleared it already
                else:
                    self.clear_user(uid)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})


def _confine(confine: dict) -> None:
    """Become the sandbox's unprivileged user for this kernel, with its limits (kernel child only).

    The limits come first: once the user id is dropped, they can no longer be raised. As
    that user, RLIMIT_NPROC counts its processes (it never applies to root)."""
    processes, file_bytes = int(confine["max_processes"]), int(confine["max_file_bytes"])
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    uid = int(confine["uid"])
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise PermissionError(f"o kernel não passou ao usuário {uid}")


def _become_kernel(request: dict, fds: list[int]) -> None:
    """In the forked child: turn into ``python -m ipykernel_launcher ARGS`` and never return."""
    try:
        os.setsid()  # its own process group, as jupyter_client gives a kernel: signals reach it and its children
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        stdout, stderr = fds
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # nothing of the template's leaks into the kernel
        if request.get("confine"):
            _confine(request["confine"])  # before anything it reads: its folder is its user's alone
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ["JPY_PARENT_PID"] = str(os.getppid())  # the parent it sees; ipykernel read it at import
        import tempfile

        tempfile.tempdir = None  # found again from this kernel's own TMPDIR
        import ipykernel_launcher

        sys.argv = [ipykernel_launcher.__file__, *request["args"]]
        from ipykernel import kernelapp
    except BaseException:  # noqa: BLE001 - the worker sees the kernel die and starts one itself
        traceback.print_exc()
        os._exit(1)
    # The kernel's own exit (SystemExit included) ends this process as it would end a fresh one.
    kernelapp.launch_new_instance()
    raise SystemExit(0)


def _fork_kernel(channel: socket.socket, request: dict, fds: list[int], kernels: Kernels) -> None:
    """Fork one kernel for the worker on ``channel`` and send it the kernel's pid and a pidfd."""
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        send(channel, {"error": "o pedido não trouxe a saída e os erros do kernel"})
        return
    # SIGCHLD waits until the pidfd is open and the kernel has an owner, so the kernel cannot
    # be reaped (and its pid reused) before the worker holds a handle on it.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        uid = (request.get("confine") or {}).get("uid")
        if uid is not None:
            kernels.clear_user(int(uid))  # whatever an earlier kernel of this user left running
        try:
            pid = os.fork()
        except OSError as error:
            pid, failure = -1, str(error)
        if pid == 0:
            # No try/finally of the serving loop around it: the kernel's SystemExit ends the process.
            _become_kernel(request, fds)
        for fd in fds:
            os.close(fd)
        pidfd = None
        if pid > 0:
            kernels.owners[pid] = channel
            if uid is not None:
                kernels.users[pid] = int(uid)
            try:
                pidfd = os.pidfd_open(pid)
            except OSError as error:
                os.kill(pid, signal.SIGKILL)
                failure = str(error)
        try:
            if pidfd is None:
                send(channel, {"error": failure})
            else:
                send(channel, {"pid": pid}, [pidfd])
        finally:
            if pidfd is not None:
                os.close(pidfd)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})


def serve(listener: socket.socket, control: socket.socket, refusal: str | None = None) -> None:
    """Answer every worker that connects until the batch closes ``control``."""
    kernels = Kernels()
    signal.signal(signal.SIGCHLD, kernels.reap)
    workers: list[socket.socket] = []
    try:
        while True:
            kernels.clear_ended_users()
            readable = select.select([control, listener, *workers], [], [], 0.5)[0]
            if control in readable:
                return  # the batch ended (or died): nothing more to fork
            if listener in readable:
                worker, _address = listener.accept()
                if refusal:
                    send(worker, {"refused": refusal})
                    worker.close()
                else:
                    send(worker, {"ready": os.getpid()})
                    workers.append(worker)
            for worker in (w for w in readable if w in workers):
                try:
                    request, fds = receive(worker)
                except OSError:
                    request, fds = None, []
                if request is None:  # the worker ended or was killed: so do its kernels
                    workers.remove(worker)
                    kernels.kill(worker)
                    worker.close()
                    continue
                _fork_kernel(worker, request, fds, kernels)
    finally:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        kernels.kill()
        kernels.ended_users.update(kernels.users.values())
        kernels.users.clear()
        kernels.clear_ended_users()


def main(argv: list[str] | None = None) -> int:
    """``python -c 'from grader.core.kernel_template import main; raise SystemExit(main())' LISTENER CONTROL MODULE...``

    LISTENER and CONTROL are inherited descriptors. In a forked kernel, the kernel's
    SystemExit comes out of here (through ``serve``).
    """
    argv = sys.argv[1:] if argv is None else argv
    listener = socket.socket(fileno=int(argv[0]))
    control = socket.socket(fileno=int(argv[1]))
    # As ipykernel_launcher does: the folder this started in is not where the kernel imports from.
    if sys.path and (sys.path[0] == "" or os.path.abspath(sys.path[0]) == os.getcwd()):
        del sys.path[0]
    # ipykernel reads its parent's pid from here once, when it is imported.
    os.environ["JPY_PARENT_PID"] = str(os.getpid())
    importlib.import_module("ipykernel.kernelapp")
    for module in argv[2:]:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the kernel imports it itself, and reports the error there
            pass
    refusal = None
    if threading.active_count() != 1:
        # Forking copies only this thread; a lock another one holds would stay locked in every kernel.
        started = quantity(threading.active_count() - 1, "thread iniciada", "threads iniciadas")
        refusal = f"{started} pelos imports"
    # What the template imported lives as long as each kernel: out of the collector's sight, a
    # kernel's collections (and its exit) neither walk nor copy those pages
    # (https://docs.python.org/3/library/gc.html#gc.freeze).
    gc.freeze()
    serve(listener, control, refusal)
    # The template: nothing to flush, and tearing down the imported SDK module by module
    # takes half a second the batch would wait for. (A kernel never gets here: its exit
    # leaves ``serve`` as an exception, and ends as a fresh kernel's would.)
    os._exit(0)
