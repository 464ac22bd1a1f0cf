"""grader/core/adopted_processes.py: a process that adopts its orphans ends them all, however deep."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Run in a process of its own: the test process itself must not start adopting other tests' orphans.
# It starts a child that starts a grandchild in a session of its own and exits at once, so the
# grandchild is an orphan; then it ends what it adopted and says what it ended and what is left.
SCRIPT = textwrap.dedent("""\
    import json, os, subprocess, sys, time
    from grader.core.adopted_processes import adopt_orphans, end_adopted
    from grader.core.kernel import children

    adopted = adopt_orphans() if sys.argv[1] == "adopt" else False
    grandchild_code = "import time; time.sleep(120)  # adopted-processes-test"
    child_code = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', %r], start_new_session=True, "
                  "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                  "print(p.pid, flush=True)" % grandchild_code)
    child = subprocess.run([sys.executable, "-c", child_code], capture_output=True, text=True, check=True)
    grandchild = int(child.stdout)
    deadline = time.monotonic() + 10
    while adopted and grandchild not in children() and time.monotonic() < deadline:
        time.sleep(0.01)
    ended = end_adopted()
    alive = os.path.exists(f"/proc/{grandchild}")
    print(json.dumps({"adopted": adopted, "grandchild": grandchild, "ended": ended, "alive": alive,
                      "left": sorted(children())}))
""")


def run_script(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def kill_if_still_ours(pid: int) -> None:
    try:
        if b"adopted-processes-test" in Path(f"/proc/{pid}/cmdline").read_bytes():
            subprocess.run(["kill", "-9", str(pid)], check=False)
    except OSError:
        pass


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
def test_an_orphan_of_a_child_is_adopted_killed_and_reaped():
    result = run_script("adopt")
    kill_if_still_ours(result["grandchild"])
    assert result["adopted"] is True
    assert result["ended"] == [result["grandchild"]]
    assert result["alive"] is False and result["left"] == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
def test_without_adopting_the_orphan_goes_elsewhere_and_nothing_is_ended():
    """What the batch would see without asking: the orphan is not its child, and lives on."""
    result = run_script("no")
    try:
        assert result["ended"] == [] and result["alive"] is True
    finally:
        kill_if_still_ours(result["grandchild"])
