"""The environment a grading kernel starts with.

GRADER_ENV is set in it, so notebook code can tell it is being graded; credentials never reach it;
its temporary files go inside its grading folder.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

GRADER_ENV = "COURSE_GRADER_ACTIVE"

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^ANTHROPIC_|^DATABASE_URL$", re.I)


def kernel_env(workdir: Path | None = None) -> dict[str, str]:
    """The environment a grading kernel starts with: the grader's, without credentials. With its
    grading folder, TMPDIR is ``tmp`` in there: what the notebook makes with ``tempfile`` goes
    with the grading folder, even when the grader is killed outright."""
    env = {key: value for key, value in os.environ.items()
           if key != "JPY_SESSION_NAME" and not _SECRET_NAME.search(key)}
    env[GRADER_ENV] = "1"
    if workdir is not None:
        temp = Path(workdir) / "tmp"
        try:
            temp.mkdir(exist_ok=True)
        except OSError:  # something the notebook put there: tempfile then picks another folder
            pass
        env["TMPDIR"] = str(temp)
    return env
