"""`ResidentFlatIndex`: the rows `ShardedFlatIndex` returns, ties included, whatever share of the
shards it keeps on its device; on the CPU here (its GPU path differs only in faiss's call)."""

import numpy as np
import pytest
import torch
from stand_ins import HashEncoder

from amer_lib.core.device import cpu_threads
from amer_lib.core.search import ResidentFlatIndex, ShardedFlatIndex, unit_norm
from amer_lib.data.corpus import Document
from amer_lib.data.encoders import encode_corpus


@pytest.fixture
def tied_shards(tmp_path):
    """300 documents in shards of 64, each text six times over: every score is tied six ways."""
    documents = [Document(f"d{i}", "title", f"text number {i % 50}") for i in range(300)]
    return encode_corpus(HashEncoder(), documents, tmp_path, shard_size=64, progress=False)


@pytest.mark.parametrize("resident", [None, 0, 3 * 40 * 16 * 2], ids=["all", "none", "three blocks"])
def test_resident_search_returns_the_sharded_searchs_rows_ties_included(tied_shards, resident):
    queries = np.random.default_rng(1).normal(size=(7, 3, 16))
    expected_scores, expected_rows = ShardedFlatIndex(tied_shards, block_rows=40).search(queries, 20)
    index = ResidentFlatIndex(tied_shards, "cpu", resident_bytes=resident, block_rows=40)
    with cpu_threads(1):  # as in a one-thread training process
        scores, rows = index.search(queries, 20)
    assert np.array_equal(rows, expected_rows) and np.array_equal(scores, expected_scores)
    # independent of both: brute force over the float16 rows, ties as sets of six copies
    corpus = tied_shards.rows(np.arange(300))
    brute = unit_norm(queries.reshape(-1, 16)) @ corpus.T
    assert np.allclose(scores.reshape(21, 20), -np.sort(-brute, axis=1)[:, :20], atol=1e-5)
    assert all(len(set(row[:18] % 50)) == 3 for row in rows.reshape(21, 20))  # three texts, six copies each


def test_resident_bytes_keep_the_first_blocks_on_the_device(tied_shards):
    """Blocks of 40 rows in shards of 64 (40 + 24 a shard; the last shard of 44: 40 + 4):
    the budget keeps whole blocks, in order, and the rest stays in the memory map."""
    block = 40 * 16 * 2  # bytes of a full float16 block
    index = ResidentFlatIndex(tied_shards, "cpu", resident_bytes=block + 24 * 16 * 2, block_rows=40)
    kept = [isinstance(rows, torch.Tensor) for _, rows in index.blocks]
    assert kept[:3] == [True, True, False] and not any(kept[2:])
    assert index.resident_bytes == block + 24 * 16 * 2
    assert [offset for offset, _ in index.blocks] == [0, 40, 64, 104, 128, 168, 192, 232, 256, 296]
    everything = ResidentFlatIndex(tied_shards, "cpu", block_rows=40)
    assert everything.resident_bytes == 300 * 16 * 2 and len(everything) == 300


def test_bad_residency_is_named(tied_shards):
    with pytest.raises(ValueError, match=r"resident_bytes must be >= 0 \(0: nothing kept\) or None"):
        ResidentFlatIndex(tied_shards, "cpu", resident_bytes=-1)
