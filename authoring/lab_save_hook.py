"""A JupyterLab save hook: a notebook already on disk keeps its kernel metadata when saved.

`bootstrap.py lab` passes ``--ContentsManager.pre_save_hook=authoring.lab_save_hook.keep_kernel_metadata``.
Jupyter Server calls the hook with the model about to be written
(https://jupyter-server.readthedocs.io/en/latest/developers/savehooks.html). JupyterLab fills
``kernelspec`` and ``language_info`` from the running kernel (its Python patch version
included), so without this an autosave of a lesson nobody edited changes the file. Edits to
cells and outputs are saved as always; only those two keys keep the file's values. A new
notebook, or one whose file has no such keys, is saved as JupyterLab sends it.
"""
from __future__ import annotations

import json
import os

from authoring.notebook_metadata import KERNEL_KEYS

MAX_READ = 64 * 1024 * 1024  # a notebook larger than this is saved as sent, never read whole


def _metadata_on_disk(os_path: str) -> dict | None:
    try:
        if os.path.islink(os_path) or not os.path.isfile(os_path) or os.path.getsize(os_path) > MAX_READ:
            return None
        with open(os_path, encoding="utf-8") as stream:
            notebook = json.load(stream)
    except (OSError, ValueError, RecursionError):
        return None  # unreadable or not JSON: nothing to keep
    metadata = notebook.get("metadata") if isinstance(notebook, dict) else None
    return metadata if isinstance(metadata, dict) else None


def keep_kernel_metadata(model=None, path=None, contents_manager=None, **_kwargs):
    """Jupyter Server's pre-save hook: put the file's kernelspec and language_info back."""
    if not isinstance(model, dict) or model.get("type") != "notebook" or contents_manager is None:
        return
    content = model.get("content")
    if not isinstance(content, dict) or not isinstance(content.get("metadata"), dict):
        return
    try:
        os_path = contents_manager._get_os_path(path)  # confined to the server's root (404 outside)
    except Exception:  # noqa: BLE001 - a hook never stops a save
        return
    on_disk = _metadata_on_disk(os_path)
    if not on_disk:
        return
    for key in KERNEL_KEYS:
        if key in on_disk:
            content["metadata"][key] = on_disk[key]
