"""The crash-state explorer on its own: small save functions, each with one durability mistake,
explored directly (no notebook, no grading run), and the reference save, every state of which
must load."""
from __future__ import annotations

import json
import os
import tempfile

import pytest

from grader.checks.crash_states import (
    Durable,
    crash_problem,
    explore,
    explorer_state,
    failed_swap,
    loads_as,
    short_write_problem,
    two_writers,
)
from harness.checkpoint import load_checkpoint, save_checkpoint
from harness.crash_states import (
    MAX_STATES_PER_POINT,
    CrashState,
    SaveTrace,
    crash_states,
    explore_save,
    recorded_os_calls,
)

OLD, NEW = explorer_state("anterior", 3), explorer_state("nova", 4)


def fsync_folder(path):
    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def save_reference(state, path):
    """mkstemp in the folder, flush + fsync, os.replace, fsync of the folder."""
    path = os.fspath(path)
    descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    fsync_folder(path)


def save_without_file_fsync(state, path):
    path = os.fspath(path)
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(state, file)
    os.replace(path + ".tmp", path)
    fsync_folder(path)


def save_without_folder_fsync(state, path):
    path = os.fspath(path)
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(path + ".tmp", path)


def save_removing_the_old_first(state, path):
    path = os.fspath(path)
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())
    if os.path.exists(path):
        os.remove(path)
    fsync_folder(path)
    os.replace(path + ".tmp", path)
    fsync_folder(path)


def save_in_place(state, path):
    with open(path, "w", encoding="utf-8") as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())


def save_with_a_fixed_temporary(state, path):
    """Durable (both fsyncs), but every writer uses the same path + ".tmp"."""
    path = os.fspath(path)
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(path + ".tmp", path)
    fsync_folder(path)


def save_swallowing_errors(state, path):
    try:
        save_reference(state, path)
    except Exception:  # noqa: BLE001 - the mistake under test
        pass


def explored(save, tmp_path, old=OLD):
    return explore(save, load_checkpoint, old, NEW, tmp_path)


def test_every_state_of_the_reference_save_loads_as_the_old_or_the_new(tmp_path):
    exploration = explored(save_reference, tmp_path)
    assert exploration.bad() == []
    outcomes = {verdict.outcome for verdict in exploration.verdicts}
    assert outcomes == {"anterior", "novo"}  # both really occur: the explorer is not vacuous
    assert len(exploration.verdicts) >= 5
    assert exploration.calls[-2:] == [exploration.calls[-2], "fsync da pasta"]


def test_the_first_save_may_leave_no_checkpoint_but_never_a_torn_one(tmp_path):
    exploration = explored(save_reference, tmp_path, old=None)
    assert exploration.bad() == []
    assert {verdict.outcome for verdict in exploration.verdicts} == {"nenhum", "novo"}


def test_the_harness_own_atomic_write_survives_every_state(tmp_path):
    verdicts = explore_save(save_checkpoint, OLD, NEW, tmp_path, load_checkpoint)
    assert [v for v in verdicts if not v.acceptable] == []


def test_without_the_file_fsync_the_swapped_checkpoint_can_come_back_empty(tmp_path):
    bad = explored(save_without_file_fsync, tmp_path).bad()
    assert bad
    words = crash_problem(bad[0], [], first_save=False)
    assert "os.fsync(f.fileno())" in words and "os.replace" in bad[0].state.where()


def test_without_the_folder_fsync_a_returned_save_can_still_be_undone(tmp_path):
    bad = explored(save_without_folder_fsync, tmp_path).bad()
    assert bad and all(verdict.state.returned for verdict in bad)
    assert bad[0].outcome == "anterior"
    assert "fsync da pasta" in crash_problem(bad[0], [], first_save=False)


def test_removing_the_old_file_before_the_swap_loses_it(tmp_path):
    exploration = explored(save_removing_the_old_first, tmp_path)
    lost = [verdict for verdict in exploration.bad() if verdict.outcome == "nenhum"]
    assert lost and not lost[0].state.returned
    words = crash_problem(lost[0], exploration.calls, first_save=False)
    assert "`os.remove(checkpoint.json)`" in words and "checkpoint anterior some" in words


def test_writing_in_place_can_leave_an_empty_or_torn_checkpoint(tmp_path):
    exploration = explored(save_in_place, tmp_path)
    bad = exploration.bad()
    assert bad and any("CheckpointError" in verdict.outcome for verdict in bad)
    assert "próprio arquivo" in crash_problem(bad[0], exploration.calls, first_save=False)


def test_a_fixed_temporary_name_is_shared_by_two_writers(tmp_path):
    outcome = two_writers(save_with_a_fixed_temporary, OLD, NEW, tmp_path)
    assert outcome.shared == ["checkpoint.json.tmp"]
    assert any(error is not None for error in outcome.errors)  # held at the swap, one loses its file


def test_unique_temporaries_let_two_writers_both_finish(tmp_path):
    outcome = two_writers(save_reference, OLD, NEW, tmp_path)
    assert outcome.shared == [] and outcome.errors == [None, None] and not outcome.unfinished
    loaded, error = loads_as(load_checkpoint, outcome.left, tmp_path / "lido")
    assert error is None and loaded in (OLD, NEW)


def test_a_failed_swap_must_leave_the_old_checkpoint_and_raise(tmp_path):
    outcome = failed_swap(save_reference, OLD, NEW, tmp_path / "certo")
    assert outcome.tried and isinstance(outcome.raised, OSError)
    assert json.loads(outcome.left) == OLD
    swallowed = failed_swap(save_swallowing_errors, OLD, NEW, tmp_path / "engolido")
    assert swallowed.tried and swallowed.raised is None


def test_the_state_space_stays_bounded(tmp_path):
    """Ten temporaries in flight at once: each point varies at most a few names."""
    folder = tmp_path / "muitos"
    folder.mkdir()
    trace = SaveTrace(folder)
    with recorded_os_calls(trace):
        for number in range(10):
            (folder / f"t{number}").write_text("x" * 40)
        os.remove(folder / "t0")
    trace.finished()
    states = crash_states(trace, "checkpoint.json")
    assert 0 < len(states) <= 2 * MAX_STATES_PER_POINT


def test_a_crash_state_says_where_the_machine_fell():
    state = CrashState((("checkpoint.json", b""),), "`os.replace(a, checkpoint.json)`", "fsync da pasta")
    assert state.where() == "logo depois de `os.replace(a, checkpoint.json)` e antes do fsync da pasta"
    assert state.describe() == "checkpoint.json vazio"
    assert CrashState((), "fsync da pasta", None).where().startswith("depois que a gravação voltou")


@pytest.mark.parametrize("save", [save_without_file_fsync, save_without_folder_fsync, save_removing_the_old_first,
                                  save_in_place], ids=["no-file-fsync", "no-folder-fsync", "remove-first", "in-place"])
def test_each_mistake_is_caught_by_the_explorer_alone(save, tmp_path):
    assert explored(save, tmp_path).bad()


def save_with_named_temporary_file(state, path):
    """NamedTemporaryFile opens its folder's path with an opener: the spy must not take that path for the file."""
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, suffix=".tmp", delete=False) as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(file.name, path)
    fsync_folder(path)


def test_named_temporary_files_are_not_taken_for_one_shared_file(tmp_path):
    outcome = two_writers(save_with_named_temporary_file, OLD, NEW, tmp_path)
    assert outcome.shared == [] and outcome.errors == [None, None] and outcome.swapped
    assert explored(save_with_named_temporary_file, tmp_path / "explorado").bad() == []


def test_writers_that_never_swap_are_told_apart(tmp_path):
    assert not two_writers(save_in_place, OLD, NEW, tmp_path).swapped


# --- another file than the checkpoint: the ledger of exercise 4, the lease of exercise 6 ------------

LEDGER = Durable(name="effects.json", thing="o livro-razão", loader="load_effects", nothing="devolve {}")


def read_ledger_or_none(path):
    """A ledger loader in the explorer's shape: a missing file is None, a torn one raises."""
    from harness.effects import load_effects

    return load_effects(path) or None


def test_a_named_file_is_saved_seeded_and_read_back_under_its_own_name(tmp_path):
    old, new = {"toolu_a1": {"n": 1}}, {"toolu_a1": {"n": 1}, "toolu_b2": {"n": 2}}
    seen = []

    def load(path):
        seen.append(path.name)
        return read_json(path)

    def read_json(path):
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    exploration = explore(save_reference, load, old, new, tmp_path, name="effects.json",
                          prepare=lambda folder: (folder / "lease.json").write_text("{}", encoding="utf-8"))
    assert exploration.bad() == [] and set(seen) == {"effects.json"}
    assert all(dict(verdict.state.files).get("lease.json") == b"{}" for verdict in exploration.verdicts)
    assert not (tmp_path / "gravacao" / "checkpoint.json").exists()


def test_a_ledger_removed_before_the_swap_is_named_in_the_ledger_words(tmp_path):
    old = {"toolu_a1": {"tool": "send_email", "status": "intent", "result": None}}
    new = {"toolu_a1": {"tool": "send_email", "status": "committed", "result": {"content": "ok", "is_error": False}}}
    exploration = explore(save_removing_the_old_first, read_ledger_or_none, old, new, tmp_path, name="effects.json")
    lost = [verdict for verdict in exploration.bad() if verdict.outcome == "nenhum"]
    assert lost
    words = crash_problem(lost[0], exploration.calls, first_save=False, durable=LEDGER)
    assert "`os.remove(effects.json)`" in words and "livro-razão anterior some" in words
    assert "load_effects devolve {}" in words and "checkpoint" not in words


def test_a_ledger_written_in_place_is_refused_by_its_loader_and_worded_so(tmp_path):
    old = {"toolu_a1": {"tool": "send_email", "status": "intent", "result": None, "pad": "x" * 200}}
    new = {**old, "toolu_b2": {"tool": "send_email", "status": "intent", "result": None}}
    exploration = explore(save_in_place, read_ledger_or_none, old, new, tmp_path, name="effects.json")
    bad = exploration.bad()
    assert bad and "EffectsLedgerError" in bad[0].outcome
    words = crash_problem(bad[0], exploration.calls, first_save=False, durable=LEDGER)
    assert "O livro-razão é escrito no próprio arquivo" in words


def test_a_failed_swap_of_a_named_file_leaves_it_as_it_was(tmp_path):
    outcome = failed_swap(save_reference, {"token": 4}, {"token": 5}, tmp_path, name="lease.json")
    assert outcome.tried and isinstance(outcome.raised, OSError)
    assert json.loads(outcome.left) == {"token": 4}


def durable_temporary(state, path):
    """The temporary written and synced, as every save below starts."""
    path = os.fspath(path)
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())
    return path


def save_unlinking_then_linking(state, path):
    """os.link never replaces a name, so the old one goes first: a window with no checkpoint."""
    path = durable_temporary(state, path)
    if os.path.exists(path):
        os.unlink(path)
    os.link(path + ".tmp", path)
    os.unlink(path + ".tmp")
    fsync_folder(path)


def save_with_shutil_move(state, path):
    import shutil

    path = durable_temporary(state, path)
    shutil.move(path + ".tmp", path)
    fsync_folder(path)


def save_with_path_replace(state, path):
    from pathlib import Path

    path = durable_temporary(state, path)
    Path(path + ".tmp").replace(path)
    fsync_folder(path)


def save_syncing_the_current_folder(state, path):
    path = durable_temporary(state, path)
    os.replace(path + ".tmp", path)
    folder = os.open(".", os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def test_unlink_then_link_loses_the_checkpoint_between_the_two(tmp_path):
    exploration = explored(save_unlinking_then_linking, tmp_path)
    lost = [verdict for verdict in exploration.bad() if verdict.outcome == "nenhum" and not verdict.state.returned]
    assert lost, exploration.calls
    words = crash_problem(lost[0], exploration.calls, first_save=False)
    assert "entre `os.unlink(checkpoint.json)` e `os.link(checkpoint.json.tmp, checkpoint.json)`" in words


def test_a_link_swap_that_fails_is_a_swap_tried(tmp_path):
    outcome = failed_swap(save_unlinking_then_linking, OLD, NEW, tmp_path)
    assert outcome.tried and outcome.swaps[0].startswith("`os.link(") and outcome.left is None


def test_swaps_through_shutil_and_pathlib_are_named_as_written(tmp_path):
    moved = explored(save_with_shutil_move, tmp_path / "move")
    assert not moved.bad() and "`shutil.move(checkpoint.json.tmp, checkpoint.json)`" in moved.calls
    assert not any(call.startswith("`os.rename(") for call in moved.calls)
    replaced = explored(save_with_path_replace, tmp_path / "path")
    assert not replaced.bad() and "`Path.replace(checkpoint.json.tmp, checkpoint.json)`" in replaced.calls
    import shutil
    from pathlib import Path
    assert shutil.move.__module__ == "shutil" and Path.replace.__qualname__ == "Path.replace"  # put back


def test_the_fsync_of_another_folder_is_not_the_checkpoint_folder_fsync(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exploration = explored(save_syncing_the_current_folder, tmp_path / "explorado")
    bad = exploration.bad()
    assert bad and all(verdict.state.returned for verdict in bad)
    assert 'fsync de outra pasta (".", a pasta atual), não a do checkpoint' in exploration.calls


def save_then_rewrite_in_place(state, path):
    """A right save, then the checkpoint read and written back into itself (same bytes)."""
    save_reference(state, path)
    with open(path, "rb+") as file:
        data = file.read()
        file.seek(0)
        file.truncate()
        file.write(data)


def save_then_rewrite_through_posix(state, path):
    """A right save, then the checkpoint truncated and rewritten with the posix module's own calls."""
    import posix

    save_reference(state, path)
    data = json.dumps(state).encode("utf-8")
    descriptor = posix.open(os.fspath(path), posix.O_WRONLY | posix.O_TRUNC)
    posix.write(descriptor, data)
    posix.close(descriptor)


@pytest.mark.parametrize("save", [save_then_rewrite_in_place, save_then_rewrite_through_posix])
def test_reopening_the_checkpoint_for_writing_can_leave_it_torn_whatever_its_final_bytes(save, tmp_path):
    """The bytes end as they were, but during the rewrite the file was empty or half written."""
    exploration = explored(save, tmp_path)
    bad = exploration.bad()
    assert bad and any(verdict.state.returned for verdict in bad)
    assert "aberto de novo para escrita" in crash_problem(bad[0], exploration.calls, first_save=False)


def test_a_fresh_file_opened_for_writing_is_not_a_rewrite(tmp_path):
    """Opening the temporary (a new name) for writing adds no torn state of the checkpoint."""
    assert explored(save_reference, tmp_path).bad() == []


def save_with_one_os_write(state, path, loop=False):
    """mkstemp, os.write of the whole JSON (its count ignored unless ``loop``), both fsyncs, os.replace."""
    path = os.fspath(path)
    descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    data = json.dumps(state).encode("utf-8")
    try:
        while data:
            written = os.write(descriptor, data)
            data = data[written:] if loop else b""
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)
    fsync_folder(path)


def test_a_save_that_ignores_what_os_write_returns_is_left_short(tmp_path):
    """os.write may write fewer bytes than given (POSIX): the explorer makes it, and the save
    that takes one os.write for all of it returns with a short checkpoint."""
    exploration = explored(save_with_one_os_write, tmp_path)
    assert exploration.short_writes and any(v.state.returned for v in exploration.bad())
    words = short_write_problem(exploration, "save_checkpoint")
    assert words and "gravou só" in words and "while dados" in words


def test_a_save_that_writes_until_nothing_is_left_survives_short_writes(tmp_path):
    exploration = explored(lambda state, path: save_with_one_os_write(state, path, loop=True), tmp_path)
    assert exploration.short_writes and exploration.bad() == []
    assert short_write_problem(exploration, "save_checkpoint") is None
