"""Course notebooks ship the kernel metadata JupyterLab writes, and `bootstrap.py lab`'s save
hook keeps a file's kernelspec and language_info when Lab saves it, so a lesson nobody edited
stays identical in git after Lab's autosave."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest
from jupyter_server.services.contents.filemanager import FileContentsManager

from authoring.lab_save_hook import keep_kernel_metadata
from authoring.notebook_metadata import course_kernel_metadata

ROOT = Path(__file__).resolve().parent.parent
COURSE_NOTEBOOKS = sorted([*ROOT.glob("lessons/*.ipynb"), *ROOT.glob("exercises/*.ipynb"), *ROOT.glob("solutions/*.ipynb")])
KERNEL_AS_RUN = {  # what JupyterLab sends after starting a kernel on some machine
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {**course_kernel_metadata()["language_info"], "version": "3.11.7"},
}


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_course_notebook_ships_the_kernel_metadata_lab_writes(path):
    metadata = json.loads(path.read_text(encoding="utf-8"))["metadata"]
    assert {key: metadata.get(key) for key in ("kernelspec", "language_info")} == course_kernel_metadata()


def save_as_lab_would(tmp_path, on_disk: dict | None, edit=None) -> dict:
    """Run the hook on the model Lab sends for ``lesson.ipynb`` (kernel metadata of a 3.11.7
    kernel, plus ``edit``); return what would be written."""
    manager = FileContentsManager(root_dir=str(tmp_path))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Lição", id="c1")],
                                        metadata=course_kernel_metadata())
    if on_disk is not None:
        notebook.metadata = on_disk
        nbformat.write(notebook, tmp_path / "lesson.ipynb")
    sent = copy.deepcopy(notebook)
    sent.metadata.update(copy.deepcopy(KERNEL_AS_RUN))
    if edit:
        edit(sent)
    model = {"type": "notebook", "content": sent, "format": "json"}
    keep_kernel_metadata(model=model, path="lesson.ipynb", contents_manager=manager)
    return model["content"]


def test_saving_a_lesson_keeps_the_files_kernel_metadata(tmp_path):
    saved = save_as_lab_would(tmp_path, course_kernel_metadata())
    assert saved.metadata["language_info"]["version"] == "3.11" and saved.metadata == course_kernel_metadata()


def test_an_edit_is_saved_and_only_the_kernel_keys_are_kept(tmp_path):
    def edit(notebook):
        notebook.cells[0].source = "# Minha anotação"
        notebook.metadata["toc"] = {"open": True}

    saved = save_as_lab_would(tmp_path, course_kernel_metadata(), edit)
    assert saved.cells[0].source == "# Minha anotação" and saved.metadata["toc"] == {"open": True}
    assert saved.metadata["language_info"] == course_kernel_metadata()["language_info"]


def test_a_new_notebook_or_an_unreadable_file_is_saved_as_sent(tmp_path):
    assert save_as_lab_would(tmp_path, None).metadata["language_info"]["version"] == "3.11.7"
    (tmp_path / "lesson.ipynb").write_bytes(b"\xff not json")
    manager = FileContentsManager(root_dir=str(tmp_path))
    model = {"type": "notebook", "content": {"metadata": copy.deepcopy(KERNEL_AS_RUN), "cells": []}}
    keep_kernel_metadata(model=model, path="lesson.ipynb", contents_manager=manager)
    assert model["content"]["metadata"] == KERNEL_AS_RUN


def test_the_hook_reads_nothing_outside_the_served_folder_and_never_follows_a_link(tmp_path):
    served, outside = tmp_path / "served", tmp_path / "fora.ipynb"
    served.mkdir()
    nbformat.write(nbformat.v4.new_notebook(metadata={"language_info": {"name": "SEGREDO"}}), outside)
    (served / "link.ipynb").symlink_to(outside)
    manager = FileContentsManager(root_dir=str(served))
    for path in ("../fora.ipynb", "link.ipynb"):
        model = {"type": "notebook", "content": {"metadata": copy.deepcopy(KERNEL_AS_RUN), "cells": []}}
        keep_kernel_metadata(model=model, path=path, contents_manager=manager)
        assert model["content"]["metadata"] == KERNEL_AS_RUN, path


def test_bootstrap_lab_passes_the_hook_to_jupyterlab():
    import bootstrap

    command = bootstrap.lab_command(python=Path("python"))
    assert "--ContentsManager.pre_save_hook=authoring.lab_save_hook.keep_kernel_metadata" in command
