"""The write gate: confinement, no symlink followed at any component or at the file, atomic replacement, appends,
stale temporaries, checks that write nothing, and the one-writer-per-folder lock."""

from __future__ import annotations

import os
import threading

import pytest

from lmms_eval_unify.writes import (
    LOCK_FILE,
    FolderBusy,
    WriteRefused,
    append_text,
    check_writable,
    folder_lock,
    make_folder,
    output_root,
    remove_stale_temporaries,
    stale_temporaries,
    write_bytes,
    write_or_record,
    write_text,
)


@pytest.fixture
def victim(tmp_path):
    """A file outside the root that must never change."""
    path = tmp_path / "victim.txt"
    path.write_text("untouched", encoding="utf-8")
    return path


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def test_writes_make_folders_replace_files_and_leave_no_temporary(root):
    write_text(root / "a" / "b" / "file.txt", "first ‡", root)
    write_text(root / "a" / "b" / "file.txt", "second ‡", root)
    assert (root / "a" / "b" / "file.txt").read_text(encoding="utf-8") == "second ‡"
    append_text(root / "rows.jsonl", "1\n", root)
    append_text(root / "rows.jsonl", "2\n", root)
    assert (root / "rows.jsonl").read_bytes() == b"1\n2\n"
    assert stale_temporaries(root) == [] and make_folder(root / "c" / "d", root).is_dir()


@pytest.mark.parametrize("write", [write_text, append_text])
def test_a_symlink_at_the_file_is_refused_and_its_target_unchanged(root, victim, write):
    (root / "results.json").symlink_to(victim)
    with pytest.raises(WriteRefused) as refused:
        write(root / "results.json", "overwritten", root)
    assert refused.value.reason == "symlink" and victim.read_text(encoding="utf-8") == "untouched"


@pytest.mark.parametrize("write", [write_text, append_text])
def test_a_symlinked_folder_below_the_root_is_refused(root, victim, write):
    (root / "media").symlink_to(victim.parent, target_is_directory=True)
    with pytest.raises(WriteRefused) as refused:
        write(root / "media" / "victim.txt", "overwritten", root)
    assert refused.value.reason == "symlink" and victim.read_text(encoding="utf-8") == "untouched"


@pytest.mark.parametrize(
    "path", ["../victim.txt", "a/../../victim.txt", "/etc/passwd", ""], ids=["up", "climb", "absolute", "empty"]
)
def test_paths_leaving_the_root_are_refused(root, victim, path):
    with pytest.raises(WriteRefused) as refused:
        write_text(root / path if path and not path.startswith("/") else path, "x", root)
    assert refused.value.reason in {"outside_root", "bad_path"} and victim.read_text(encoding="utf-8") == "untouched"


def test_a_fifo_or_folder_at_the_name_is_refused_without_blocking(root):
    os.mkfifo(root / "pipe")
    (root / "folder").mkdir()
    for name, reason in (("pipe", "not_regular_file"), ("folder", "not_regular_file")):
        for write in (write_text, append_text):
            with pytest.raises(WriteRefused) as refused:
                write(root / name, "x", root)
            assert refused.value.reason == reason
    (root / "file").write_text("x")
    with pytest.raises(WriteRefused) as refused:
        write_text(root / "file" / "below.txt", "x", root)
    assert refused.value.reason == "not_a_folder"


def test_an_unwritable_folder_is_a_typed_refusal(root):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    (root / "ro").mkdir(mode=0o500)
    with pytest.raises(WriteRefused) as refused:
        write_bytes(root / "ro" / "x.png", b"x", root)
    assert refused.value.reason == "unwritable"


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(root, monkeypatch):
    write_text(root / "results.json", "old", root)

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(WriteRefused, match="No space left") as refused:
        write_text(root / "results.json", "new", root)
    assert refused.value.reason == "unwritable"
    assert (root / "results.json").read_text() == "old" and stale_temporaries(root) == []


def test_temporaries_of_a_dead_writer_are_found_and_removed(root):
    (root / "sub").mkdir()
    dead = [root / ".results.json.0123456789abcdef.tmp", root / "sub" / ".image_00.png.fedcba9876543210.tmp"]
    for path in dead:
        path.write_bytes(b"half")
    (root / ".hidden.tmp").write_text("not ours")
    assert stale_temporaries(root) == sorted(dead)
    assert remove_stale_temporaries(root) == sorted(dead) and stale_temporaries(root) == []
    assert (root / ".hidden.tmp").exists()


# ---- checks without writing, the user's folder, refusals recorded -------------------------------------------
def test_check_writable_names_what_stands_there_and_makes_nothing(root, victim):
    (root / "media").symlink_to(victim.parent, target_is_directory=True)
    (root / "results.json").symlink_to(victim)
    os.mkfifo(root / "rows.jsonl")
    for path, reason in (("media/x.png", "symlink"), ("results.json", "symlink"), ("rows.jsonl", "not_regular_file")):
        with pytest.raises(WriteRefused) as refused:
            check_writable(root / path, root)
        assert refused.value.reason == reason
    check_writable(root / "new" / "deeper" / "file.txt", root)
    check_writable(root.parent / "absent" / "file.txt", root.parent / "absent")
    assert not (root / "new").exists() and not (root.parent / "absent").exists()


def test_the_users_own_folder_may_be_a_symlink_but_nothing_below_it(tmp_path, victim):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "chosen").symlink_to(real, target_is_directory=True)
    folder = output_root(tmp_path / "chosen")
    assert folder == real.resolve()
    (real / "table.csv").symlink_to(victim)
    refused: list[WriteRefused] = []
    assert not write_or_record(folder / "table.csv", "x", folder, refused)
    assert write_or_record(folder / "other.csv", b"y", folder, refused)
    assert [r.reason for r in refused] == ["symlink"] and victim.read_text(encoding="utf-8") == "untouched"
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(WriteRefused) as refusal:
        output_root(tmp_path / "a_file")
    assert refusal.value.reason == "not_a_folder"


# ---- one writer per folder ------------------------------------------------------------------------------------
def test_a_second_writer_waits_says_so_then_gives_up_and_the_lock_file_is_never_followed(root, victim):
    said: list[str] = []
    with folder_lock(root, "first", wait_s=0) as held:
        assert held == root.resolve() and (root / LOCK_FILE).is_file()
        with pytest.raises(FolderBusy, match=r"still being written by first \(pid \d+\)"):
            with folder_lock(root, "second", wait_s=0.3, tell=said.append):
                pass
    assert len(said) == 1 and "is being written by first" in said[0]
    with folder_lock(root, "third", wait_s=0, tell=said.append):  # free again
        pass
    (root / "other").mkdir()
    (root / "other" / LOCK_FILE).symlink_to(victim)
    with pytest.raises(WriteRefused) as refused:
        with folder_lock(root / "other", "fourth"):
            pass
    assert refused.value.reason == "symlink" and victim.read_text(encoding="utf-8") == "untouched"


def test_threads_take_turns_and_every_turn_sees_the_last_ones_writes(root):
    """Ten threads append one line each to the same file under the lock, reading it first: every line lands once,
    in turn (counts, not clocks)."""
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        try:
            with folder_lock(root, f"writer {index}", wait_s=60, tell=lambda line: None) as folder:
                before = (folder / "rows.txt").read_text() if (folder / "rows.txt").exists() else ""
                write_text(folder / "rows.txt", before + f"{index}\n", folder)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and sorted((root / "rows.txt").read_text().split()) == [str(i) for i in range(10)]


def test_holding_the_lock_removes_what_an_interrupted_writer_left_and_says_so(root):
    (root / "sub").mkdir()
    dead = root / "sub" / ".figure_00.png.0123456789abcdef.tmp"
    dead.write_bytes(b"half a png")
    (root / "nested").mkdir()
    (root / "nested" / LOCK_FILE).write_text("")
    theirs = root / "nested" / ".results.json.fedcba9876543210.tmp"  # another writer's folder: not ours to sweep
    theirs.write_bytes(b"{")
    said: list[str] = []
    with folder_lock(root, "gallery", tell=said.append):
        pass
    assert not dead.exists() and theirs.exists()
    assert said == [f"gallery: removed 1 unfinished temporary file(s) of an interrupted write under {root.resolve()}"]
