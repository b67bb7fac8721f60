"""The write gate: confinement, no symlink followed at any component or at the file, atomic replacement, appends,
stale temporaries."""

from __future__ import annotations

import os

import pytest

from lmms_eval_unify.writes import (
    WriteRefused,
    append_text,
    make_folder,
    remove_stale_temporaries,
    stale_temporaries,
    write_bytes,
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
