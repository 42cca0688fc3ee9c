"""`ResidentFlatIndex`: the rows `ShardedFlatIndex` returns, ties included, whatever share of the
shards it keeps on its device; on the CPU here (its GPU path differs only in faiss's call); and the
rows docs/paper_scale.md says a Llama-8B run keeps on an H100 and an H200 at 25M passages."""

import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import ROOT, documentation
from stand_ins import HashEncoder

from amer_lib.core.device import cpu_threads
from amer_lib.core.index import ResidentFlatIndex, ShardedFlatIndex, unit_norm
from amer_lib.data.corpus import Document
from amer_lib.data.encoders import encode_corpus
from amer_lib.runs import memory

sys.path.insert(0, str(ROOT / "benchmarks"))
import preflight_paper_files  # noqa: E402

GIB = 2**30


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


def test_documentation_check_the_rows_kept_beside_llama8b_at_25m_are_the_index_rule():
    """docs/paper_scale.md ("Validation at 25M passages"): the float16 rows a QAMPARI Llama-8B run
    keeps on an H100 (78 GiB usable) and an H200 (139 GiB) beside its file's projected peak, as
    `real_data.run_index` budgets them (the GPU's memory less the peak) and `ResidentFlatIndex` fills
    the budget (whole blocks, in order), at a ten-thousandth of the scale: the paper's 100 shards of
    250,000 rows x 1536 become 100 of 25 rows, and the budget a ten-thousandth (rounded down, which
    keeps the same whole blocks: each block's bytes are a multiple of 10,000 at full scale)."""
    backbone, work = preflight_paper_files.paper_workload("04_real_data/qampari_llama8b.yaml")
    peak = memory.plan(backbone, work).gpu_peak
    shards = SimpleNamespace(shards=[np.zeros((25, 1536), dtype=np.float16)] * 100, dim=1536)
    row_bytes, scale = 1536 * 2, 10_000
    kept = {}
    for gpu, total in (("H100", 78 * GIB), ("H200", 139 * GIB)):
        index = ResidentFlatIndex(shards, "cpu", resident_bytes=int((total - peak) // scale))
        blocks = sum(isinstance(rows, torch.Tensor) for _, rows in index.blocks)
        assert index.resident_bytes == blocks * 25 * row_bytes
        kept[gpu] = (blocks, blocks * 250_000, index.resident_bytes * scale)
    assert kept["H200"] == (100, 25_000_000, 25_000_000 * row_bytes)  # the whole corpus fits beside it
    blocks, rows, nbytes = kept["H100"]
    streamed = 25_000_000 - rows
    moved = streamed * row_bytes / 25e9  # seconds at 25 GB/s
    gemm = 0.75 * 67e12  # faiss's float32 GEMM as benchmarks/RESULTS.md assumes it
    qampari, ambigqa = 2 * 16_010 * 25e6 * 1536 / gemm, 2 * 1_008 * 25e6 * 1536 / gemm
    docs = " ".join(documentation().split())
    assert (
        f"| one H200, beside Llama-8B | all 25M: {kept['H200'][2] / GIB:.1f} GiB of the 139 - {peak / GIB:.1f} = "
        f"{139 - peak / GIB:.1f} GiB free | nothing | {qampari:.1f} s / {ambigqa:.1f} s"
    ) in docs
    assert (
        f"| one H100, beside Llama-8B | {blocks} blocks (one a 250,000-row shard), {rows / 1e6:.1f}M rows: "
        f"{nbytes / GIB:.2f} GiB of the 78 - {peak / GIB:.2f} = {78 - peak / GIB:.2f} GiB free | "
        f"{streamed / 1e6:.1f}M rows, {streamed * row_bytes / 1e9:.1f} GB in float16: {moved:.1f} s at 25 GB/s | "
        f"{qampari + moved:.1f} s / {ambigqa + moved:.1f} s |"
    ) in docs
    page_cache = f"({streamed * row_bytes / 1e9:.1f} GB)"
    assert f"the {streamed / 1e6:.1f}M streamed rows must sit in the host's page cache {page_cache}" in docs
    assert f"(76.8 GB on the H200, {nbytes / 1e9:.1f} GB on the H100)" in docs
    assert f"Llama-8B's projected peak {peak / GIB:.1f} GiB on QAMPARI" in docs
