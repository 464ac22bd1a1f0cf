"""A mistyped CRASH_AFTER or CRASH_MODE is one line and exit 2, before the run starts."""
from __future__ import annotations


import pytest
from tests.warm_python import run_python


def run_cli(tmp_path, env_extra, *args):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env_extra}
    return run_python(["-m", "harness", *args], cwd=tmp_path, env=env, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("env", [{"CRASH_AFTER": "bogus"}, {"CRASH_AFTER": "after-save-A:0"},
                                 {"CRASH_AFTER": "after-save-A:x"},
                                 {"CRASH_AFTER": "after-save-A:1", "CRASH_MODE": "explode"}],
                         ids=["label", "zero", "count", "mode"])
def test_a_bad_crash_variable_is_one_line_and_nothing_starts(tmp_path, env):
    done = run_cli(tmp_path, env, "run", "--scenario", "team-email", "--workdir", "runs/x")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "CRASH_" in lines[0], done.stderr
    assert not (tmp_path / "runs" / "x").exists()  # nothing started, nothing to clean


@pytest.mark.slow
def test_a_good_crash_variable_still_crashes_with_137(tmp_path):
    done = run_cli(tmp_path, {"CRASH_AFTER": "after-tool-run:1"}, "run", "--scenario", "team-email",
                   "--workdir", "runs/x")
    assert done.returncode == 137, done.stderr
