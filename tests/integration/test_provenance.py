"""What a run records about the software that made it (issue 24 item 4)."""

from __future__ import annotations

from lmms_eval_unify.integration.provenance import checkout_commit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_the_commit_is_read_from_a_loose_ref_a_packed_ref_or_a_detached_head(tmp_path):
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(COMMIT + "\n")
    assert checkout_commit(git) == COMMIT
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(
        f"# pack-refs with: peeled\n{'f' * 40} refs/heads/other\n{COMMIT} refs/heads/main\n"
    )
    assert checkout_commit(git) == COMMIT
    (git / "HEAD").write_text(COMMIT[::-1] + "\n")
    assert checkout_commit(git) == COMMIT[::-1]


def test_no_checkout_gives_no_commit(tmp_path):
    assert checkout_commit(tmp_path / ".git") == ""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_bytes(b"\xff\xfe")
    assert checkout_commit(tmp_path / ".git") == ""
