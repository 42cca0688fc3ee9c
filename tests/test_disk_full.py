"""A full disk is told in one line (the path, the bytes needed, the bytes free), whichever library
hit it, and what was written before is kept (issue 78)."""

import errno
import shutil
import subprocess
from collections import namedtuple

import pytest
import torch
from stand_ins import HashEncoder, documents

from amer_lib import io
from amer_lib.data.encoders import encode_corpus
from amer_lib.io import DiskFullError, atomic_path, recorded_damage, save_torch, write_json

Usage = namedtuple("Usage", "total used free")


def free_bytes(monkeypatch, free):
    monkeypatch.setattr(io.shutil, "disk_usage", lambda folder: Usage(10**9, 10**9 - free, free))


def test_a_write_larger_than_the_free_space_is_refused_before_it_begins(tmp_path, monkeypatch):
    save_torch(tmp_path / "best.pt", {"old": torch.zeros(4)})
    before = (tmp_path / "best.pt").read_bytes()
    free_bytes(monkeypatch, 1000)
    with pytest.raises(DiskFullError) as error:
        save_torch(tmp_path / "best.pt", {"weights": torch.zeros(1000)})  # 4,000 bytes at least
    assert str(error.value) == (
        f"[Errno 28] no space left for {tmp_path / 'best.pt'}: 4,000 bytes needed, 1,000 free on its disk. Free "
        "space there (or choose another folder) and run the same command again: what was written before is kept"
    )
    assert (tmp_path / "best.pt").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", "best.pt.sha256"]  # no temporary file left


def test_torchs_iostream_error_on_a_full_disk_is_a_disk_full_error(tmp_path, monkeypatch):
    """torch's writer names no errno ("basic_ios::clear: iostream error", "unexpected pos"): the
    free space tells. The checkpoint before stays."""
    write_json(tmp_path / "checkpoint.json", {"step": 4})

    def torch_like_writer(tmp):
        tmp.write_bytes(b"x" * 14_592)
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 14592 vs 14486")

    free_bytes(monkeypatch, 12)
    with pytest.raises(DiskFullError, match=r"no space left for .*checkpoint\.json: more than the 14,592 bytes it"):
        with atomic_path(tmp_path / "checkpoint.json") as tmp:
            torch_like_writer(tmp)
    assert (tmp_path / "checkpoint.json").read_text() == '{\n  "step": 4\n}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.json"]


def test_enospc_deep_in_a_library_is_a_disk_full_error_whatever_the_free_space(tmp_path):
    def library():
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as cause:
            raise RuntimeError("safetensors: failed to write") from cause

    with pytest.raises(DiskFullError, match=r"no space left for .*model: more than the 0 bytes it wrote"):
        with io.atomic_folder(tmp_path / "model"):
            library()
    assert list(tmp_path.iterdir()) == []


def test_another_failure_is_not_called_a_full_disk(tmp_path):
    with pytest.raises(ValueError, match="not about space"):
        with atomic_path(tmp_path / "a.json"):
            raise ValueError("not about space")


@pytest.fixture
def small_disk(tmp_path):
    """A real 64 KiB tmpfs, where this machine lets the suite mount one (root, a container that allows it)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.decode().strip()}); the fault-injecting tests stand in")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_an_encoding_that_fills_a_real_disk_says_so_and_keeps_its_shards(small_disk, capsys):
    """Each 8-document shard is 384 bytes of vectors: the encoding of 2,000 documents fills 64 KiB
    part-way through, says the path and the bytes, and keeps the shards it finished."""
    with pytest.raises(DiskFullError, match=rf"no space left for {small_disk}/shard_\d+\.\w+: .* free on its disk"):
        encode_corpus(HashEncoder(), documents(2000), small_disk, shard_size=8, batch_size=2, progress=False)
    finished = sorted(small_disk.glob("shard_*.json"))
    assert finished and not list(small_disk.glob(".*.tmp"))
    usage = shutil.disk_usage(small_disk)
    assert usage.free < usage.total


def test_torch_save_that_fills_a_real_disk_is_a_disk_full_error(small_disk):
    """The issue's case: a checkpoint whose tensors fit the free space but whose file does not (torch's
    zip records and alignment come on top), so torch itself hits ENOSPC and says "iostream error"."""
    save_torch(small_disk / "checkpoint.pt", {"step": torch.tensor(4)})
    before = (small_disk / "checkpoint.pt").read_bytes()
    filler, page = small_disk / "filler", 4096
    filler.write_bytes(b"\0" * (shutil.disk_usage(small_disk).free - 3 * page))
    assert shutil.disk_usage(small_disk).free == 3 * page
    with pytest.raises(DiskFullError, match=r"checkpoint\.pt: 12,288 bytes needed, \d[\d,]* free on its disk"):
        save_torch(small_disk / "checkpoint.pt", {"step": 8, "weights": torch.zeros(3 * page // 4)})
    assert (small_disk / "checkpoint.pt").read_bytes() == before
    assert sorted(p.name for p in small_disk.iterdir()) == ["checkpoint.pt", "checkpoint.pt.sha256", "filler"]
    assert recorded_damage(small_disk / "checkpoint.pt") is None  # its record still the old file's
