"""A stop (Ctrl-C, SIGTERM, SIGHUP) held where it would leave something half-made, and acted on later.

The wrong implementations these tests stand against: a stop masked in the main thread only (a
signal any other thread takes still raises KeyboardInterrupt inside the block), a mask inherited
by the programs started meanwhile (a kernel template that never sees Ctrl-C), a held stop that is
lost, one that acts at the end of an inner block, and a blocking wait a held stop cuts short.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from grader.core.stop_signals import act_on_stop, descendants, stop_requested, stops_deferred

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_stop_another_thread_takes_still_waits_for_the_block_to_end():
    """Any thread may receive a process's signal; its Python handler runs in the main thread. A
    mask set in the main thread alone lets this one through in the middle of the block."""
    idle = threading.Event()
    other = threading.Thread(target=idle.wait, daemon=True)
    other.start()
    reached_the_end = False
    try:
        with pytest.raises(KeyboardInterrupt) as raised:
            with stops_deferred():
                signal.pthread_kill(other.ident, signal.SIGINT)
                deadline = time.monotonic() + 0.5
                while time.monotonic() < deadline:  # bytecodes run: a pending handler may run here
                    sum(range(100))
                # The main thread may notice another thread's signal late; this runs its handler now.
                signal.pthread_sigmask(signal.SIG_BLOCK, [])
                assert stop_requested()
                reached_the_end = True
    finally:
        idle.set()
    assert reached_the_end, str(raised.getrepr(style="native"))  # raised inside the block: not held
    assert not stop_requested()


def test_a_program_started_in_the_block_does_not_inherit_a_blocked_stop():
    """A kernel template started while stops are held must still see Ctrl-C and SIGTERM, and its
    kernels an interrupt; a signal mask would be inherited across exec."""
    with stops_deferred():
        shown = run_python("import signal; print(sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])))")
    assert shown.stdout.strip() == "[]", shown


def test_a_held_stop_acts_where_the_block_asks_and_only_once():
    with stops_deferred():
        act_on_stop()  # nothing held: nothing happens
        os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            act_on_stop()
        assert not stop_requested()
    # leaving the block acts on nothing more: the stop was taken


def test_only_the_outermost_block_acts_on_the_stop():
    with pytest.raises(KeyboardInterrupt):
        with stops_deferred():
            with stops_deferred():
                os.kill(os.getpid(), signal.SIGINT)
            assert stop_requested()  # the inner block's end did not act on it
            os.kill(os.getpid(), signal.SIGINT)  # a second stop is the same stop
    assert not stop_requested()


def test_a_wait_a_held_stop_interrupts_carries_on():
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with stops_deferred():
            timer.start()
            time.sleep(0.6)
            slept = time.monotonic() - started
    assert slept >= 0.55, slept


def test_the_handlers_come_back_and_a_default_stop_still_ends_the_process():
    """After the block, the handlers are those of before; a SIGTERM left to the default ends the
    process when the block ends, not in its middle; an ignored one stays ignored."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    with stops_deferred():
        pass
    assert {s: signal.getsignal(s) for s in before} == before
    ended = run_python("""
        import os, signal
        from grader.core.stop_signals import stops_deferred
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        with stops_deferred():
            os.kill(os.getpid(), signal.SIGHUP)
        print("hup ignored", flush=True)
        with stops_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            print("still here", flush=True)
        print("never printed", flush=True)
    """)
    assert ended.returncode == -signal.SIGTERM, ended
    assert ended.stdout.split() == ["hup", "ignored", "still", "here"], ended


def test_descendants_are_found_through_a_child_that_started_its_own():
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                              "print(p.pid, flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())
        found = descendants(os.getpid())
        assert child.pid in found and grandchild in found, found
    finally:
        child.kill()
        child.wait()
        os.kill(grandchild, signal.SIGKILL)
