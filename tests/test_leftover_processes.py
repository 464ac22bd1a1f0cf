"""grader/core/leftover_processes.py: a batch ends what carries its name, at any depth, and nothing else."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.core.leftover_processes import BATCH_ID_ENV, carrying, end_batch_processes, new_batch_id

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# Starts a chain of DEPTH + 1 processes, each in a session of its own (as a submission's code may),
# each forking the next and then sleeping; the first one says when the whole chain is up.
CHAIN = """\
import os, sys, time
depth, ready = int(sys.argv[1]), sys.argv[2]
for level in range(depth):
    if os.fork():
        break  # this level stays; its child goes on
    os.setsid()
else:
    open(ready, "w").close()
time.sleep(120)
"""


def start(code: str, *args: str, batch_id: str | None = None) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key != BATCH_ID_ENV}
    if batch_id:
        env[BATCH_ID_ENV] = batch_id
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, "the chain never came up"
        time.sleep(0.02)


def test_a_deep_chain_in_sessions_of_its_own_ends_and_nothing_else_does(tmp_path):
    ours, other = new_batch_id(), new_batch_id()
    chain = start(CHAIN, "60", str(tmp_path / "ready"), batch_id=ours)
    bystander = start("import time; time.sleep(120)")                 # carries no name: a caller's child
    other_batch = start("import time; time.sleep(120)", batch_id=other)
    try:
        wait_for(tmp_path / "ready")
        assert len(carrying(ours)) == 61
        ended = end_batch_processes(ours)
        assert len(ended) == 61 and carrying(ours) == []
        assert bystander.poll() is None and other_batch.poll() is None
        assert carrying(other) == [other_batch.pid]
    finally:
        end_batch_processes(ours)
        for process in (chain, bystander, other_batch):
            process.kill()
            process.wait()


def test_with_nothing_carrying_the_name_nothing_is_ended():
    assert end_batch_processes(new_batch_id()) == []


def test_batch_ids_differ_within_one_process():
    assert new_batch_id() != new_batch_id()
