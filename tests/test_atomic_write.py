"""grader.core.atomic_write: the one way grader/ and authoring/ replace a file someone keeps.

The helper's promises (old or new content, never half; a temporary of its own; fsync of the
file before the rename and of the folder after it; permissions kept), and an ast scan that
fails when a module under grader/ or authoring/ moves a file into place by itself.
"""
from __future__ import annotations

import ast
import os
import shutil
import stat
from pathlib import Path

import pytest

from grader.core import atomic_write
from grader.core.atomic_write import atomic_file, write_atomic

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("grader", "authoring")
HELPER = Path("grader/core/atomic_write.py")
# Calls that give a file its final name.
MOVES = {("os", "replace"), ("os", "rename"), ("shutil", "move")}
# (module, function) -> why it moves a file without the helper. Nothing here writes a file a user keeps.
ALLOWED = {
    ("grader/core/sandbox.py", "write_connection_file"):
        "moves jupyter_client's connection file into the kernel's folder, over whatever the kernel put there",
    ("grader/student/progress.py", "load_state"):
        "moves a damaged progress file aside (renamed, not written)",
}


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


# --------------------------------------------------------------------------- the helper


def test_a_new_file_gets_the_content_and_no_temporary_is_left(tmp_path):
    target = tmp_path / "gradebook.csv"
    write_atomic(target, "aluno,nota\nana,10\n")
    write_atomic(tmp_path / "report.zip", b"PK\x05\x06" + bytes(18))
    assert target.read_text(encoding="utf-8") == "aluno,nota\nana,10\n"
    assert (tmp_path / "report.zip").read_bytes()[:4] == b"PK\x05\x06"
    assert leftovers(tmp_path) == []


def test_text_is_written_as_utf8_whatever_the_locale(tmp_path, monkeypatch):
    monkeypatch.setenv("LC_ALL", "C")
    write_atomic(tmp_path / "page.html", "Lição 3 — ação")
    assert (tmp_path / "page.html").read_bytes() == "Lição 3 — ação".encode("utf-8")


def test_an_error_while_writing_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "exercise-1.ipynb"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_file(target) as handle:
        handle.write(b"half of the new")
        raise RuntimeError("the writer died")
    assert target.read_text(encoding="utf-8") == "old"
    assert leftovers(tmp_path) == []


def test_a_failed_rename_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "results.json"
    target.write_text("{}", encoding="utf-8")

    def full_disk(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_write.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_atomic(target, '{"score": 10}')
    assert target.read_text(encoding="utf-8") == "{}"
    assert leftovers(tmp_path) == []


def test_two_writers_of_one_file_never_share_a_temporary(tmp_path):
    """Interleaved: the second opens and finishes while the first is still writing. With one fixed
    `.tmp` name the second would write into (and rename away) the first one's temporary."""
    target = tmp_path / "state.json"
    with atomic_file(target) as first:
        first.write(b'{"writer": ')
        with atomic_file(target) as second:
            second.write(b'{"writer": 2}')
            assert len(leftovers(tmp_path)) == 2
        assert target.read_bytes() == b'{"writer": 2}'
        first.write(b"1}")
    assert target.read_bytes() == b'{"writer": 1}'
    assert leftovers(tmp_path) == []


def test_a_file_already_at_the_temporary_name_is_left_alone(tmp_path, monkeypatch):
    target = tmp_path / "gradebook.csv"
    squatter = tmp_path / ".gradebook.csv.aaaaaa.tmp"
    squatter.write_text("someone else's", encoding="utf-8")
    names = iter(["aaaaaa", "bbbbbb"])
    monkeypatch.setattr(atomic_write.secrets, "token_hex", lambda _size: next(names))
    write_atomic(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert squatter.read_text(encoding="utf-8") == "someone else's"


def test_a_link_at_the_temporary_name_is_never_followed(tmp_path, monkeypatch):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me", encoding="utf-8")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / ".page.html.aaaaaa.tmp").symlink_to(outside)
    names = iter(["aaaaaa", "bbbbbb"])
    monkeypatch.setattr(atomic_write.secrets, "token_hex", lambda _size: next(names))
    write_atomic(folder / "page.html", "<p>novo</p>")
    assert outside.read_text(encoding="utf-8") == "keep me"
    assert (folder / "page.html").read_text(encoding="utf-8") == "<p>novo</p>"


def test_the_file_is_synced_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor):
        events.append("fsync folder" if stat.S_ISDIR(os.fstat(descriptor).st_mode) else "fsync file")
        real_fsync(descriptor)

    def replace(source, destination):
        events.append(f"replace {Path(source).parent == Path(destination).parent and 'same folder'}")
        real_replace(source, destination)

    monkeypatch.setattr(atomic_write.os, "fsync", fsync)
    monkeypatch.setattr(atomic_write.os, "replace", replace)
    write_atomic(tmp_path / "feedback.html", "<p>ok</p>")
    assert events == ["fsync file", "replace same folder", "fsync folder"]


def test_a_replaced_file_keeps_its_permissions_and_a_new_one_follows_the_umask(tmp_path):
    kept = tmp_path / "run_autograder"
    kept.write_text("old", encoding="utf-8")
    kept.chmod(0o750)
    write_atomic(kept, "new")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o750
    previous = os.umask(0o027)
    try:
        write_atomic(tmp_path / "fresh.csv", "new")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "fresh.csv").stat().st_mode) == 0o640  # 0o666 less the umask, as open() gives


# --------------------------------------------------------------------------- nobody else moves files


def moves_outside_the_helper(root: Path) -> list[str]:
    """``path:line function -> os.replace`` for each move into place in grader/ and authoring/,
    except in the helper and the ALLOWED places."""
    found = []
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root)
            if relative == HELPER:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            found += _moves_in(tree, relative.as_posix())
    return found


def _moves_in(tree: ast.AST, relative: str, allowed=ALLOWED) -> list[str]:
    found = []
    imported = {}  # `from os import replace as swap` -> swap: ("os", "replace")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "shutil"):
            for alias in node.names:
                if (node.module, alias.name) in MOVES:
                    imported[alias.asname or alias.name] = (node.module, alias.name)

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inside = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call):
                call = child.func
                name = None
                if isinstance(call, ast.Attribute) and isinstance(call.value, ast.Name):
                    name = (call.value.id, call.attr) if (call.value.id, call.attr) in MOVES else None
                elif isinstance(call, ast.Name):
                    name = imported.get(call.id)
                if name and (relative, function) not in allowed:
                    found.append(f"{relative}:{child.lineno} {function} -> {'.'.join(name)}")
            visit(child, inside)

    visit(tree, "<module>")
    return found


def test_only_the_helper_moves_a_file_into_place_in_grader_and_authoring():
    assert moves_outside_the_helper(ROOT) == [], "write through grader.core.atomic_write instead"


def test_every_allowed_place_still_exists():
    """An allowance for a function that no longer moves anything is stale: remove it."""
    for relative, function in ALLOWED:
        tree = ast.parse((ROOT / relative).read_text(encoding="utf-8"))
        moves = _moves_in(tree, relative, allowed={})
        assert any(f" {function} -> " in move for move in moves), f"{relative}:{function} moves nothing now"


def copy_of_sources(tmp_path: Path) -> Path:
    for folder in SCANNED:
        for path in (ROOT / folder).rglob("*.py"):
            target = tmp_path / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("relative, source, found", [
    pytest.param("grader/reports/planted.py",
                 "import os\n\ndef save(tmp, path):\n    os.replace(tmp, path)\n",
                 "grader/reports/planted.py:4 save -> os.replace", id="os.replace"),
    pytest.param("authoring/planted.py",
                 "from os import rename as swap\n\ndef save(tmp, path):\n    swap(tmp, path)\n",
                 "authoring/planted.py:4 save -> os.rename", id="renamed-import"),
    pytest.param("grader/instructor/planted.py",
                 "import shutil\n\nclass Writer:\n    def save(self, tmp, path):\n        shutil.move(tmp, path)\n",
                 "grader/instructor/planted.py:5 save -> shutil.move", id="shutil.move-in-a-method"),
    pytest.param("grader/student/progress.py",
                 "import os\n\ndef save_state(tmp, path):\n    os.replace(tmp, path)\n",
                 "grader/student/progress.py:4 save_state -> os.replace", id="allowed-module-other-function"),
])
def test_a_planted_move_outside_the_helper_is_found(tmp_path, relative, source, found):
    root = copy_of_sources(tmp_path)  # clean as the real tree (the test above), but for the plant
    (root / relative).write_text(source, encoding="utf-8")
    assert moves_outside_the_helper(root) == [found]
