"""The kernel metadata every course notebook ships with: what JupyterLab writes for ipykernel.

JupyterLab rewrites a notebook's ``kernelspec`` and ``language_info`` from the kernel it
starts, and marks the notebook modified when they differ from the file; its autosave then
writes the file, and an untouched lesson shows up as changed in git. Shipping the same keys
JupyterLab writes leaves only the Python patch version to differ, and the save hook of
`bootstrap.py lab` (``authoring.lab_save_hook``) keeps the file's own values on save.
"""
from __future__ import annotations

import copy

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
    "version": "3.11",  # the course's Python; a kernel reports its patch too (3.11.7)
}
KERNEL_KEYS = ("kernelspec", "language_info")


def course_kernel_metadata() -> dict:
    return {"kernelspec": copy.deepcopy(KERNELSPEC), "language_info": copy.deepcopy(LANGUAGE_INFO)}


def with_course_kernel(metadata: dict) -> dict:
    """``metadata`` with the course's kernelspec and language_info (other keys kept)."""
    return {**metadata, **course_kernel_metadata()}
