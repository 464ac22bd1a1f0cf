"""Where the course is: the folder with the students' exercises/ and the course's pyproject.toml.

Every command that grades "the student's notebook" or "the reference solutions" starts here,
and so do the batch worker's kernel templates (which preload what the student's notebook imports).
"""
from __future__ import annotations

from pathlib import Path

from grader.core.errors import GraderError


def is_course_root(folder: Path) -> bool:
    """A copy of the course: the students' exercises/ beside the course's pyproject.toml."""
    return (folder / "exercises").is_dir() and (folder / "pyproject.toml").is_file()


def installed_course_root() -> Path | None:
    """The course this grader was installed from: ``pip install -e`` (what bootstrap.py does)
    leaves the package inside the course folder, so the course is the package's parent
    (this module is grader/core/course_folder.py)."""
    folder = Path(__file__).resolve().parents[2]
    return folder if is_course_root(folder) else None


def find_project_root(start: Path | None = None) -> Path | None:
    """The course folder: the nearest one upward from ``start`` (cwd), else the one the grader
    was installed from; None when neither is a course (a bare install run from elsewhere)."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if is_course_root(folder):
            return folder
    return installed_course_root()


def course_root() -> Path:
    """``find_project_root()``, or a Portuguese error saying where the course was looked for."""
    root = find_project_root()
    if root is None:
        raise GraderError(
            f"não encontrei a pasta do curso (a que tem exercises/ e pyproject.toml) a partir de {Path.cwd()}: "
            "rode o comando dentro dela, ou diga o arquivo com --notebook."
        )
    return root


def students_notebook(exercise: str, root: Path | None = None) -> Path | None:
    """exercises/exercise-N.ipynb of the course: the only file whose grades `grade list` shows."""
    root = root or find_project_root()
    return None if root is None else root / "exercises" / f"{exercise}.ipynb"


def is_students_notebook(exercise: str, notebook: Path) -> bool:
    """Whether ``notebook`` is the student's own exercise file: the same file, however it is
    named (a relative path, ``./`` or a symlink to it all count; a copy does not)."""
    own = students_notebook(exercise)
    try:
        return own is not None and Path(notebook).resolve() == own.resolve()
    except OSError:
        return False
