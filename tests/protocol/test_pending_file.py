"""``protocol.PendingFile`` where the file system gives no hard links (final read of stop 67): the name is claimed with
an empty file, then replaced; a move that fails after the claim removes the claim, so the next run without
``--force`` is not refused over an empty file this run left."""

from __future__ import annotations

import errno
import os

import pytest

from protocol import PendingFile


def _no_hard_links(*_args, **_kwargs):
    raise OSError(errno.EPERM, "Operation not permitted")


def test_without_hard_links_the_file_is_moved_whole_and_an_existing_one_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "link", _no_hard_links)
    out = tmp_path / "out.csv"
    with PendingFile(out, replace=False) as pending:
        pending.open().write("a,b\n")
    assert out.read_text() == "a,b\n"
    with pytest.raises(FileExistsError), PendingFile(out, replace=False) as pending:
        pending.open().write("c,d\n")
    assert out.read_text() == "a,b\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_move_that_fails_after_the_claim_leaves_no_empty_file(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "link", _no_hard_links)

    def failing_replace(*_args, **_kwargs):
        raise OSError(errno.EIO, "Input/output error")

    out = tmp_path / "out.csv"
    pending = PendingFile(out, replace=False)
    pending.open().write("a,b\n")
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="Input/output error"):
        pending.commit()
    assert list(tmp_path.iterdir()) == []  # neither the claim nor the temporary file


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_a_full_disk_at_commit_closes_the_file_and_removes_it(tmp_path, monkeypatch, failing):
    """Final read of stop 67, S3: a flush or fsync that failed (ENOSPC) left the open file to the garbage collector."""
    out = tmp_path / "out.csv"
    pending = PendingFile(out, replace=True)
    handle = pending.open()
    handle.write("a,b\n" * 10)

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if failing == "write":
        monkeypatch.setattr(handle, "flush", full)  # the buffered rows reach the disk at the flush
    else:
        monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device"):
        pending.commit()
    monkeypatch.undo()
    assert handle.closed
    assert list(tmp_path.iterdir()) == []
