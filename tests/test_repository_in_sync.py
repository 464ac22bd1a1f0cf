"""The committed course is in sync with its sources: what `course check` verifies, on the real repo."""
from __future__ import annotations

import pytest

from authoring.cli import main
from tests.lesson_code import ROOT


@pytest.mark.slow
def test_course_check_passes_on_the_repository(capsys):
    code = main(["--root", str(ROOT), "check"])
    output = capsys.readouterr().out
    assert code == 0, output
    assert "tudo em dia" in output
