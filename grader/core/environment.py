"""The environment a grading kernel starts with.

GRADER_ENV is set in it, so notebook code can tell it is being graded; credentials never reach it.
"""
from __future__ import annotations

import os
import re

GRADER_ENV = "COURSE_GRADER_ACTIVE"

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^ANTHROPIC_|^DATABASE_URL$", re.I)


def kernel_env() -> dict[str, str]:
    """The environment a grading kernel starts with: the grader's, without credentials."""
    env = {key: value for key, value in os.environ.items()
           if key != "JPY_SESSION_NAME" and not _SECRET_NAME.search(key)}
    env[GRADER_ENV] = "1"
    return env
