"""The gate (lmms_eval_unify/gate.py): every refusal typed, named and never another exception."""

from __future__ import annotations

import dataclasses
import os
import stat

import pytest

from lmms_eval_unify import gate


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "ok.txt").write_text("hello")
    return folder


def _reason(call) -> str:
    with pytest.raises(gate.Refused) as refused:
        call()
    assert str(refused.value)  # one printable line naming the subject
    return refused.value.reason


def test_paths_that_leave_the_roots_or_do_not_resolve_are_refused(root, tmp_path):
    (tmp_path / "outside.txt").write_text("secret")
    (root / "out").symlink_to(tmp_path / "outside.txt")
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    cases = {
        root / "out": "outside_roots",
        root / ".." / "outside.txt": "outside_roots",
        "/etc/hostname": "outside_roots",
        root / "loop_a": "bad_path",
        str(root / "a\x00b"): "bad_path",
        str(root / "\ud800.txt"): "bad_path",  # a lone surrogate: not an encodable name
        str(root / ("x" * 300)): "bad_path",  # a name over the file system's limit
        "/" + "d/" * 3000: "bad_path",  # a path over path_chars
    }
    for path, reason in cases.items():
        assert _reason(lambda p=path: gate.read_bytes(p, "image", [root])) == reason, path
    assert gate.confine(root / "ok.txt", [root]) == (root / "ok.txt").resolve()


def test_join_refuses_absolute_escaping_and_non_string_paths(root):
    assert gate.join(root, "a/../ok.txt") == (root / "ok.txt").resolve()
    assert _reason(lambda: gate.join(root, "/etc/hostname")) == "outside_roots"
    assert _reason(lambda: gate.join(root, "../x")) == "outside_roots"
    assert _reason(lambda: gate.join(root, {"path": "x"})) == "malformed"


def test_only_regular_files_are_read_and_a_fifo_never_blocks(root):
    os.mkfifo(root / "fifo")  # opening it for reading without O_NONBLOCK would wait for a writer forever
    (root / "dir").mkdir()
    assert _reason(lambda: gate.read_bytes(root / "fifo", "image", [root])) == "not_regular_file"
    assert _reason(lambda: gate.read_bytes(root / "dir", "image", [root])) == "not_regular_file"
    assert _reason(lambda: gate.check_file(root / "fifo", "data_file", [root])) == "not_regular_file"
    assert _reason(lambda: gate.read_bytes(root / "gone", "image", [root])) == "missing"
    try:
        os.mknod(root / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: endless bytes
    except PermissionError:
        return
    assert _reason(lambda: gate.read_bytes(root / "zero", "image", [root])) == "not_regular_file"


def test_limits_come_from_the_environment_and_bound_every_kind(root, monkeypatch):
    assert gate.limits() == gate.Limits()
    assert set(gate.LIMIT_OF.values()) == {f.name for f in dataclasses.fields(gate.Limits)}
    monkeypatch.setenv(gate.LIMITS_ENV, '{"image_bytes": 3, "text_chars": 4, "images_per_sample": 2}')
    assert _reason(lambda: gate.read_bytes(root / "ok.txt", "image", [root])) == "too_large"
    assert gate.check_text("abcd") == "abcd"
    assert _reason(lambda: gate.check_text("abcde")) == "too_large"
    assert _reason(lambda: gate.check_count(3, "images")) == "too_many"
    for bad in ('{"image_bytes": -1}', '{"no_such_limit": 1}', "[1]", "{", '{"text_chars": true}'):
        monkeypatch.setenv(gate.LIMITS_ENV, bad)
        with pytest.raises(ValueError, match=gate.LIMITS_ENV):
            gate.limits()


def test_text_files_must_be_utf8_and_json_must_parse(root):
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    assert _reason(lambda: gate.read_text(root / "latin1.txt", "release_file", [root])) == "malformed"
    assert _reason(lambda: gate.read_json(root / "deep.json", "release_file", [root])) == "malformed"


def test_jsonl_lines_are_refused_one_by_one_with_file_and_line(root, monkeypatch):
    monkeypatch.setenv(gate.LIMITS_ENV, '{"samples_line_bytes": 64}')
    lines = ['{"doc_id": 0}', "[1, 2]", "{not json", '{"pad": "' + "x" * 100 + '"}', "", '{"doc_id": 1}', '{"doc_i']
    (root / "s.jsonl").write_text("\n".join(lines))
    read = list(gate.jsonl_objects(root / "s.jsonl", [root]))
    assert [n for n, row in read if isinstance(row, dict)] == [1, 6]
    refused = {n: row for n, row in read if isinstance(row, gate.Refused)}
    assert {n: r.reason for n, r in refused.items()} == {2: "malformed", 3: "malformed", 4: "too_large", 7: "malformed"}
    assert str(refused[7]).startswith(f"{root / 's.jsonl'}:7") and "cut" in str(refused[7])
    os.mkfifo(root / "pipe.jsonl")
    assert _reason(lambda: gate.jsonl_objects(root / "pipe.jsonl", [root])) == "not_regular_file"
