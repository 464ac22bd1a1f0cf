"""The suite's temporary root: memory when the machine offers a tmpfs with room, the caller's
TMPDIR when one is set, the system's default otherwise (tests/temp_root.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from tests import conftest
from tests.temp_root import MINIMUM_FREE_BYTES, memory_backed_temp_root, mounted_as_tmpfs

TMPFS = "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n/dev/vda / ext4 rw,relatime 0 0\n"
ROOM = MINIMUM_FREE_BYTES


def choose(environ=None, mounts=TMPFS, free=ROOM, writable=True):
    return memory_backed_temp_root(environ or {}, lambda: mounts, free=lambda folder: free,
                                   writable=lambda folder: writable)


def test_a_writable_tmpfs_with_room_is_chosen():
    assert choose() == "/dev/shm"


@pytest.mark.parametrize("environ", [{"TMPDIR": "/somewhere"}, {"PYTEST_DEBUG_TEMPROOT": "/elsewhere"}])
def test_a_temporary_root_the_caller_chose_is_kept(environ):
    assert choose(environ) is None


def test_an_empty_tmpdir_counts_as_none_chosen():
    assert choose({"TMPDIR": ""}) == "/dev/shm"


@pytest.mark.parametrize("mounts", [
    "/dev/vda / ext4 rw 0 0\n",                                       # not a mount point at all
    "/dev/vdb /dev/shm ext4 rw 0 0\n",                                # a disk mounted there
    "tmpfs /dev/shm tmpfs rw 0 0\n/dev/vdb /dev/shm ext4 rw 0 0\n",   # a disk mounted over the tmpfs
    "tmpfs /dev/shm2 tmpfs rw 0 0\ntmpfs /dev/shm/x tmpfs rw 0 0\n",  # only names that begin alike
    "tmpfs\n\n",                                                       # lines that lie about their fields
])
def test_a_folder_that_is_not_a_tmpfs_in_use_is_not_chosen(mounts):
    assert choose(mounts=mounts) is None


def test_the_last_mount_on_the_point_decides():
    assert mounted_as_tmpfs("/dev/vdb /dev/shm ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n", "/dev/shm")


def test_a_tmpfs_too_small_for_a_run_or_not_writable_is_not_chosen():
    assert choose(free=ROOM - 1) is None
    assert choose(writable=False) is None


def test_no_mount_table_leaves_the_default():
    def unreadable():
        raise FileNotFoundError("/proc/self/mounts")

    assert memory_backed_temp_root({}, unreadable) is None


def test_this_session_and_its_children_use_the_chosen_root(tmp_path):
    """Whatever was chosen at the conftest's import reached pytest's folders and child processes."""
    child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert child == tempfile.gettempdir()
    if conftest.MEMORY_TEMP_ROOT:
        assert os.environ["TMPDIR"] == conftest.MEMORY_TEMP_ROOT == tempfile.gettempdir()
        assert tmp_path.resolve().is_relative_to(conftest.MEMORY_TEMP_ROOT)
