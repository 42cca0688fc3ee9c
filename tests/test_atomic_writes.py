"""Atomic writes (`amer_lib.io.atomic_path`): a write replaces its file in one rename, and the
temporary file a killed writer left beside it is removed by the next write (issue 78)."""

import os
import subprocess
import sys

import pytest

from amer_lib.io import atomic_path, write_json


def test_a_write_removes_what_a_killed_writer_left_and_keeps_a_live_writers_file(tmp_path):
    target = tmp_path / "checkpoint.pt"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a writer that is gone (its pid reaped)
    left = tmp_path / f".checkpoint.pt.{gone.pid}.k3j9x_a1.tmp"
    unnamed = tmp_path / ".checkpoint.pt.q8w2e7r1.tmp"  # a writer's that named no process
    live = tmp_path / f".checkpoint.pt.{os.getppid()}.z9y8x7w6.tmp"  # a writer still running
    other = tmp_path / f".checkpoint.pt.x.{gone.pid}.a1b2c3d4.tmp"  # another file's (checkpoint.pt.x)
    for path in (left, unnamed, live, other):
        path.write_bytes(b"half written")
    write_json(target, {"step": 3})
    assert target.read_text().startswith("{") and not left.exists() and not unnamed.exists()
    assert live.exists() and other.exists()


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "results.json"
    write_json(target, {"a": 1})
    before = target.read_text()
    with pytest.raises(RuntimeError, match="failed mid-write"), atomic_path(target) as tmp:
        tmp.write_text('{"a": ')
        raise RuntimeError("failed mid-write")
    assert target.read_text() == before and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_fill_removes_the_staging_folder_a_killed_writer_left(tmp_path):
    from amer_lib.io import atomic_folder

    target = tmp_path / "bm25"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    left = tmp_path / f".bm25.{gone.pid}.k3j9x_a1"
    live = tmp_path / f".bm25.{os.getppid()}.z9y8x7w6"  # a fill still running
    other = tmp_path / f".bm25.x.{gone.pid}.a1b2c3d4"  # another folder's (bm25.x)
    for folder in (left, live, other):
        folder.mkdir()
        (folder / "part").write_bytes(b"half written")
    with atomic_folder(target) as staging:
        (staging / "index").write_text("built")
    assert (target / "index").read_text() == "built" and not left.exists()
    assert live.exists() and other.exists()
