"""The warm interpreter (tests/warm_python.py) ends each command as `python` itself would."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.warm_python import WarmPython, run_python, start_python

pytestmark = pytest.mark.slow  # the first command of a test process starts the warm interpreter (the SDK import)


def both(argv, **options):
    """The same command through the warm interpreter and through a new `python`."""
    fresh = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=60,
                           **{key: value for key, value in options.items() if key != "timeout"})
    return run_python(argv, timeout=60, **options), fresh


@pytest.mark.parametrize("code", [
    "raise ValueError('nada')",
    "import sys; sys.exit(7)",
    "import sys; sys.exit('uma frase')",
    "raise KeyboardInterrupt",
    "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "import sys; print('fim', sys.argv[1:]); print('erro', file=sys.stderr)",
], ids=["uncaught", "exit-code", "exit-text", "ctrl-c", "sigkill", "output"])
def test_a_command_ends_with_the_code_and_the_last_lines_a_new_python_gives(code):
    warm, fresh = both(["-c", code, "a", "b"])
    assert warm.returncode == fresh.returncode
    assert warm.stdout == fresh.stdout
    assert warm.stderr.splitlines()[-1:] == fresh.stderr.splitlines()[-1:]
    assert warm.stderr.startswith("Traceback") == fresh.stderr.startswith("Traceback")


def test_the_module_command_sees_its_own_arguments_folder_environment_and_input(tmp_path):
    env = {**os.environ, "UM_VALOR": "42"}
    code = ("import os, sys; print(sys.argv[1:], os.getcwd(), os.environ.get('UM_VALOR'), "
            "sys.stdin.read(), __name__)")
    warm = run_python(["-c", code, "x"], env=env, cwd=tmp_path, input="entrada")
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == f"['x'] {tmp_path} 42 entrada __main__\n"
    help_page = run_python(["-m", "harness", "--help"])
    assert help_page.returncode == 0 and help_page.stdout.startswith("uso: python -m harness")


def test_what_one_command_changes_never_reaches_the_next():
    changed = run_python(["-c", "import harness.cli as c, os; c.main = None; os.environ['RASTRO'] = '1'"])
    assert changed.returncode == 0, changed.stderr
    after = run_python(["-c", "import harness.cli as c, os; print(callable(c.main), 'RASTRO' in os.environ)"],
                       env={key: value for key, value in os.environ.items() if key != "RASTRO"})
    assert after.stdout == "True False\n", after.stderr


def test_a_command_past_its_time_is_killed_with_what_it_started(tmp_path):
    marker = tmp_path / "neto.pid"
    code = (f"import subprocess, sys, time; child = subprocess.Popen([sys.executable, '-c', 'import time; "
            f"time.sleep(60)']); open({str(marker)!r}, 'w').write(str(child.pid)); time.sleep(60)")
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_python(["-c", code], timeout=2)
    assert time.monotonic() - started < 30
    grandchild = int(marker.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild), "the command's own child outlived the timeout"
    assert run_python(["-c", "print('ainda atende')"]).stdout == "ainda atende\n"


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_command_that_kills_the_warm_interpreter_is_an_error_and_the_next_one_runs():
    with pytest.raises(RuntimeError, match="warm interpreter ended"):
        run_python(["-c", "import os, signal, time; os.kill(os.getppid(), signal.SIGKILL); time.sleep(5)"])
    assert run_python(["-c", "print('de novo')"]).stdout == "de novo\n"


def test_commands_started_side_by_side_run_at_the_same_time(tmp_path):
    # Each writes its mark, then waits for the other's: one at a time, the first would wait forever.
    code = ("import pathlib, sys, time\nmine, theirs = map(pathlib.Path, sys.argv[1:])\nmine.touch()\n"
            "deadline = time.monotonic() + 20\nwhile not theirs.exists() and time.monotonic() < deadline:\n"
            "    time.sleep(0.01)\nprint('viu' if theirs.exists() else 'sozinho')\nsys.exit(3)")
    first, second = tmp_path / "a", tmp_path / "b"
    processes = [start_python(["-c", code, str(first), str(second)]),
                 start_python(["-c", code, str(second), str(first)])]
    assert processes[0].pid != processes[1].pid
    outputs = [process.communicate(timeout=60) for process in reversed(processes)]  # either order
    assert [process.returncode for process in processes] == [3, 3]
    assert [out for out, _ in outputs] == ["viu\n", "viu\n"], outputs


def test_a_started_command_past_its_wait_is_still_running_until_killed(tmp_path):
    process = start_python(["-c", "import time; time.sleep(60)"])
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.5)
    assert _alive(process.pid)
    with pytest.raises(subprocess.TimeoutExpired):
        process.communicate(timeout=0.5)  # past its time: killed, as run_python's timeout does
    assert process.returncode == -9


def test_commands_still_running_end_with_the_warm_interpreter(tmp_path):
    """The test process ends (or is stopped by Ctrl-C): what it left running ends with it."""
    warm = WarmPython()
    try:
        process = warm.start(["-c", "import time; time.sleep(60)"])
        assert _alive(process.pid)
    finally:
        warm.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(process.pid):
        time.sleep(0.05)
    assert not _alive(process.pid), "a command outlived the interpreter that started it"


def test_a_command_gets_the_default_ctrl_c_and_its_output_twice():
    process = start_python(["-c", "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"])
    assert process.communicate(timeout=60) == ("True\n", "")
    assert process.communicate(timeout=60) == ("True\n", "")
    process.kill()  # ended: nothing to kill, and no error
    assert process.returncode == 0
