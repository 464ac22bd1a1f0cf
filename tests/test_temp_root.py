"""The suite's temporary root: memory when the machine offers a tmpfs with room, the caller's
TMPDIR when one is set, the system's default otherwise (tests/temp_root.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from types import SimpleNamespace

import pytest

from tests import conftest
from tests.temp_root import (CHOSEN_BY_SUITE, MINIMUM_FREE_BYTES, filesystem_of, memory_backed_temp_root,
                             mounted_as_tmpfs, read_proc_mounts)

TMPFS = "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n/dev/vda / ext4 rw,relatime 0 0\n"
ROOM = MINIMUM_FREE_BYTES


def choose(environ=None, mounts=TMPFS, free=ROOM, writable=True):
    return memory_backed_temp_root(environ or {}, lambda: mounts, free=lambda folder: free,
                                   writable=lambda folder: writable)


def test_a_writable_tmpfs_with_room_is_chosen():
    assert choose() == "/dev/shm"


@pytest.mark.parametrize("environ", [{"TMPDIR": "/somewhere"}, {"TEMP": "/somewhere"}, {"TMP": "/somewhere"},
                                     {"PYTEST_DEBUG_TEMPROOT": "/elsewhere"},
                                     # a marker left by an outer session, with a TMPDIR of the caller's own
                                     {CHOSEN_BY_SUITE: "/dev/shm", "TMPDIR": "/somewhere"}])
def test_a_temporary_root_the_caller_chose_is_kept(environ):
    assert choose(environ) is None


def test_a_worker_of_a_session_that_chose_knows_the_choice_was_the_suites():
    """An xdist worker inherits TMPDIR and the marker; the choice holds even where the worker
    could not have made it (here: no tmpfs in its mount table)."""
    assert choose({"TMPDIR": "/dev/shm", CHOSEN_BY_SUITE: "/dev/shm"}, mounts="") == "/dev/shm"


def test_an_empty_tmpdir_counts_as_none_chosen():
    assert choose({"TMPDIR": ""}) == "/dev/shm"


@pytest.mark.parametrize("mounts", [
    "/dev/vda / ext4 rw 0 0\n",                                       # not a mount point at all
    "/dev/vdb /dev/shm ext4 rw 0 0\n",                                # a disk mounted there
    "tmpfs /dev/shm tmpfs rw 0 0\n/dev/vdb /dev/shm ext4 rw 0 0\n",   # a disk mounted over the tmpfs
    "tmpfs /dev/shm2 tmpfs rw 0 0\ntmpfs /dev/shm/x tmpfs rw 0 0\n",  # only names that begin alike
    "tmpfs\n\n",                                                       # lines that lie about their fields
    "tmpfs /dev/shm tmpfs rw,nosuid,nodev,noexec 0 0\n",               # Docker's: programs there cannot run
])
def test_a_folder_that_is_not_a_tmpfs_in_use_is_not_chosen(mounts):
    assert choose(mounts=mounts) is None


def test_the_last_mount_on_the_point_decides():
    assert mounted_as_tmpfs("/dev/vdb /dev/shm ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n", "/dev/shm")


def test_a_tmpfs_too_small_for_a_run_or_not_writable_is_not_chosen():
    assert choose(free=ROOM - 1) is None
    assert choose(writable=False) is None


def test_the_filesystem_of_a_path_is_its_longest_mount_point():
    mounts = "/dev/vda / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n/dev/vdb /dev/shm/disk ext4 rw 0 0\n"
    assert filesystem_of(mounts, "/dev/shm/pytest-of-root/x") == "tmpfs"
    assert filesystem_of(mounts, "/dev/shm") == "tmpfs"
    assert filesystem_of(mounts, "/dev/shm/disk/x") == "ext4"
    assert filesystem_of(mounts, "/dev/shmx/y") == "ext4"   # a name that begins alike is on /
    assert filesystem_of("", "/tmp") == ""


def test_a_mount_point_whose_name_the_kernel_escapes_is_read_as_its_path():
    # /proc/self/mounts writes a space, tab, newline and backslash in a path as octal escapes
    # (fs/proc_namespace.c in the Linux source); a path holding them must still match.
    mounts = ("/dev/vda / ext4 rw 0 0\n"
              "tmpfs /srv/my\\040tests tmpfs rw 0 0\n"
              "tmpfs /srv/tab\\011and\\012line\\134slash tmpfs rw 0 0\n")
    assert filesystem_of(mounts, "/srv/my tests/pytest-of-root") == "tmpfs"
    assert filesystem_of(mounts, "/srv/my\\040tests/x") == "ext4"   # the escaped text is not the path
    assert filesystem_of(mounts, "/srv/tab\tand\nline\\slash/x") == "tmpfs"
    assert mounted_as_tmpfs(mounts, "/srv/my tests")


def test_whitespace_the_kernel_does_not_escape_stays_in_the_path():
    # A no-break space or a vertical tab is written as it is: it must not split the line, nor let
    # a forged mount point pass for another entry.
    mounts = ("/dev/vda / ext4 rw 0 0\n"
              "tmpfs /tmp/n\u00a0b tmpfs rw 0 0\n"
              "tmpfs /tmp/v\x0bb tmpfs rw 0 0\n"
              "shm /dev/shm tmpfs rw,noexec 0 0\n"
              "none /mnt/x\u2028none\u00a0/dev/shm\u00a0tmpfs\u00a0rw tmpfs rw 0 0\n")
    assert filesystem_of(mounts, "/tmp/n\u00a0b/x") == "tmpfs"
    assert mounted_as_tmpfs(mounts, "/tmp/v\x0bb")
    assert not mounted_as_tmpfs(mounts, "/dev/shm")  # still the noexec one


def test_no_mount_table_leaves_the_default():
    def unreadable():
        raise FileNotFoundError("/proc/self/mounts")

    assert memory_backed_temp_root({}, unreadable) is None


def test_this_session_and_its_children_use_the_chosen_root(tmp_path, request):
    """Whatever was chosen at the conftest's import reached pytest's folders and child processes,
    in the controller and in every xdist worker (which inherit the choice, not make it)."""
    child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert child == tempfile.gettempdir()
    assert tmp_path.resolve().is_relative_to(conftest.temporary_root(request.config))
    if conftest.MEMORY_TEMP_ROOT:
        assert os.environ["TMPDIR"] == conftest.MEMORY_TEMP_ROOT == tempfile.gettempdir()
        if not request.config.option.basetemp and not os.environ.get("PYTEST_DEBUG_TEMPROOT"):
            assert tmp_path.resolve().is_relative_to(conftest.MEMORY_TEMP_ROOT)


def test_the_header_names_the_root_pytest_uses_and_its_filesystem(request):
    line = conftest.temporary_files_line(request.config)
    root = conftest.temporary_root(request.config)
    assert line.startswith(f"temporary files: {root}")
    on_tmpfs = filesystem_of(read_proc_mounts(), root) == "tmpfs"
    assert line.endswith(" (tmpfs)") == on_tmpfs


def test_a_basetemp_given_on_the_command_line_is_the_root_the_header_names(monkeypatch):
    monkeypatch.setenv("PYTEST_DEBUG_TEMPROOT", "/y/debug")
    given = SimpleNamespace(option=SimpleNamespace(basetemp="/x/given"))
    assert conftest.temporary_root(given) == "/x/given"
    assert conftest.temporary_root(SimpleNamespace(option=SimpleNamespace(basetemp=None))) == "/y/debug"
