"""The kernel template process: imports once, then forks one fresh kernel per grading.

A batch worker (grader/core/warm.py) starts this process beside itself. It imports what
every grading kernel of the exercise imports anyway (ipykernel, anthropic, the harness
modules the exercise notebook uses) and then waits. For each kernel the worker asks
for, it forks: the child becomes a kernel exactly as ``python -m ipykernel_launcher``
would (its own session and process group, the grading folder as cwd, the environment
the worker gives, stdout/stderr on the worker's log file, no other file descriptor of
the template), and the template goes back to waiting. The template itself never runs
anything but imports, so each kernel starts from a state nothing ran code in; what a
submission changes in its kernel (a module global, a patched function) dies with it.

The protocol is one SOCK_SEQPACKET socket (one message per record, JSON):

- template -> worker, once: ``{"ready": pid}`` or ``{"refused": why}``;
- worker -> template: ``{"args": [...], "cwd": ..., "env": {...}}`` with the kernel's
  stdout and stderr descriptors attached; answer ``{"pid": n}`` with a pidfd of the
  kernel attached (so the worker can watch a process that is not its child), or
  ``{"error": why}``;
- template -> worker, at any time: ``{"exited": pid, "status": code}`` when a kernel ends
  (the template reaps its children; ``status`` is negative for a signal, as in subprocess).

This module runs inside the template, so it imports nothing of jupyter_client.
"""
from __future__ import annotations

import importlib
import json
import os
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


def _reaper(channel: socket.socket):
    def reap(_signum, _frame) -> None:
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            try:
                send(channel, {"exited": pid, "status": _status(wait_status)})
            except OSError:
                pass  # the worker is gone; the main loop ends on its own
    return reap


def _become_kernel(channel: socket.socket, request: dict, fds: list[int]) -> None:
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
        channel.close()
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # nothing of the template's leaks into the kernel
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


def serve(channel: socket.socket) -> None:
    signal.signal(signal.SIGCHLD, _reaper(channel))
    while True:
        request, fds = receive(channel)
        if request is None:
            return  # the worker closed its end: the batch is over, or the worker died
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            send(channel, {"error": "o pedido não trouxe a saída e os erros do kernel"})
            continue
        # SIGCHLD waits until the pidfd is open, so the kernel cannot be reaped (and its
        # pid reused) before the worker holds a handle on it.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        try:
            pid = os.fork()
        except OSError as error:
            pid, failure = -1, str(error)
        if pid == 0:
            # No try/finally of this loop around it: the kernel's SystemExit ends the process.
            _become_kernel(channel, request, fds)
        for fd in fds:
            os.close(fd)
        pidfd = None
        if pid > 0:
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
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})


def main(argv: list[str] | None = None) -> int:
    """``python -c 'from grader.core.kernel_template import main; raise SystemExit(main())' FD MODULE...``

    In a forked kernel, the kernel's SystemExit comes out of here (through ``serve``).
    """
    argv = sys.argv[1:] if argv is None else argv
    channel = socket.socket(fileno=int(argv[0]))
    # As ipykernel_launcher does: the folder this started in is not where the kernel imports from.
    if sys.path and (sys.path[0] == "" or os.path.abspath(sys.path[0]) == os.getcwd()):
        del sys.path[0]
    # ipykernel reads its parent's pid from here once, when it is imported.
    os.environ["JPY_PARENT_PID"] = str(os.getpid())
    importlib.import_module("ipykernel.kernelapp")
    for module in argv[1:]:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the kernel imports it itself, and reports the error there
            pass
    if threading.active_count() != 1:
        # Forking copies only this thread; a lock another one holds would stay locked in every kernel.
        started = quantity(threading.active_count() - 1, "thread iniciada", "threads iniciadas")
        send(channel, {"refused": f"{started} pelos imports"})
        return 1
    send(channel, {"ready": os.getpid()})
    serve(channel)
    return 0
