"""FAISS inner-product search over unit-norm vectors and multi-vector search.

Four indexes with one interface (`.dim`, `.search(queries, k) -> (scores, rows)`):
`VectorIndex` (exact, in memory), `ShardedFlatIndex` (exact, shard by shard over memory-mapped
float16 embeddings, top-k merged by score), `ResidentFlatIndex` (the same search for an index
searched again and again, its float16 rows kept on a device) and `IVFPQIndex` (approximate, for
corpora too large for exact search; measure it with `recall_against_exact`).
"""

from __future__ import annotations

import os
import time
import warnings

try:
    import faiss
except ImportError as error:  # amer_lib's FAISS comes with an extra: [cpu] or [gpu]
    raise ImportError(
        "FAISS is not installed: pip install -e '.[cpu]' (or '.[gpu]' on a GPU machine) from the repository"
    ) from error
import numpy as np
import torch

from amer_lib.core import distributed
from amer_lib.core.device import cpu_threads, require_gpu_faiss
from amer_lib.core.merge import PAPER_MERGE, get_merge
from amer_lib.progress import tqdm

NORM_TOLERANCE = 1e-3


def unit_norm(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


class VectorIndex:
    """Exact inner-product (= cosine) index; moved to the GPUs when faiss reports GPUs: to every
    GPU in one process, to the rank's own GPU only in a rank of a torch.distributed group
    (`rank_gpu`), which would otherwise copy the corpus, FAISS's scratch memory and a CUDA context
    to every GPU from every rank (16 copies on four GPUs)."""

    def __init__(self, vectors: np.ndarray, use_gpu: bool | None = None):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"index vectors must be a 2-D array [N, d], got shape {vectors.shape}")
        norms = np.linalg.norm(vectors, axis=1)
        if not np.allclose(norms, 1.0, atol=NORM_TOLERANCE):
            worst = int(np.argmax(np.abs(norms - 1)))
            raise ValueError(
                f"index vectors must be unit-norm (row {worst} has norm {norms[worst]:.4f}); "
                "normalise them with amer_lib.core.index.unit_norm"
            )
        self.dim = vectors.shape[1]
        index = faiss.IndexFlatIP(self.dim)
        self.gpu_resources = None  # a rank's FAISS GPU resources: kept alive as long as its index
        if searches_on_gpu(use_gpu):
            gpu = rank_gpu()
            if gpu is None:
                index = faiss.index_cpu_to_all_gpus(index)
            else:
                self.gpu_resources = faiss.StandardGpuResources()
                index = faiss.index_cpu_to_gpu(self.gpu_resources, gpu, index)
        index.add(vectors)
        self.index = index

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k of each query. `queries` is `[N, d]` or `[N, n, d]` (several vectors per query);
        returns scores and ids of shape `[..., k]`. Queries are normalised first."""
        scores, ids = self.index.search(_query_matrix(queries, self.dim), k)
        shape = np.shape(queries)[:-1]
        return scores.reshape(*shape, k), ids.reshape(*shape, k)


def _query_matrix(queries: np.ndarray, dim: int) -> np.ndarray:
    queries = np.asarray(queries, dtype=np.float32)
    if queries.shape[-1] != dim:
        raise ValueError(f"query vectors have dimension {queries.shape[-1]}, but the index holds dimension {dim}")
    return np.ascontiguousarray(unit_norm(queries.reshape(-1, dim)))


def faiss_sees_gpus() -> bool:
    """Whether this FAISS is a GPU build that sees a GPU."""
    return hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0


def searches_on_gpu(use_gpu: bool | None) -> bool:
    if use_gpu is None:
        return faiss_sees_gpus()
    return use_gpu


def rank_gpu() -> int | None:
    """The GPU of this rank of a torch.distributed group of several processes (torchrun), None in
    one process. `distributed.setup` makes each rank's GPU (its LOCAL_RANK) torch's current device;
    FAISS numbers the GPUs as torch does. Without CUDA in torch (FAISS's GPU build beside CPU
    torch), the LOCAL_RANK torchrun gives."""
    rank, size = distributed.rank_and_size()
    if size == 1:
        return None
    gpu = torch.cuda.current_device() if torch.cuda.is_available() else int(os.environ.get("LOCAL_RANK", rank))
    gpus = faiss.get_num_gpus()
    if gpu >= gpus:
        raise RuntimeError(
            f"rank {rank}'s GPU is {gpu}, but FAISS sees {gpus} GPU(s): give each rank its own GPU "
            "(--nproc_per_node <= the number of GPUs)"
        )
    return gpu


class ShardedFlatIndex:
    """Exact inner-product search over `EmbeddingShards`, `block_rows` rows at a time (so a
    corpus larger than memory streams from its memory-mapped shards); per-block top-k lists are
    merged by score into the global top-k. Rows are global corpus rows. `progress`: a bar over the
    blocks of a corpus of more than one. On a GPU each block is searched on the current CUDA device
    (FAISS's device -1), which `distributed.setup` makes a rank's own GPU: nothing goes to the others."""

    def __init__(self, shards, block_rows: int = 500_000, use_gpu: bool | None = None, progress: bool = False):
        self.shards, self.dim, self.block_rows, self.progress = shards, shards.dim, block_rows, progress
        self.gpu = faiss.StandardGpuResources() if searches_on_gpu(use_gpu) else None

    def __len__(self) -> int:
        return len(self.shards)

    def _blocks(self):
        """(first global row, float32 rows) per block; the rows live in one buffer that the next
        block overwrites."""
        buffer = np.empty((min(self.block_rows, max(map(len, self.shards.shards))), self.dim), dtype=np.float32)
        offset = 0
        for shard in self.shards.shards:
            for start in range(0, len(shard), self.block_rows):
                yield offset + start, half_to_float(shard[start : start + self.block_rows], buffer)
            offset += len(shard)

    def _knn(self, queries, block, k: int) -> tuple[np.ndarray, np.ndarray]:
        """One block's top `k` (scores, rows within the block) for the query matrix."""
        if self.gpu is not None:
            return faiss.knn_gpu(self.gpu, queries, block, k, metric=faiss.METRIC_INNER_PRODUCT)
        return faiss.knn(queries, block, k, metric=faiss.METRIC_INNER_PRODUCT)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        flat = _query_matrix(queries, self.dim)
        best_scores = np.full((len(flat), k), -np.inf, dtype=np.float32)
        best_rows = np.full((len(flat), k), -1, dtype=np.int64)
        blocks = sum(-(-len(shard) // self.block_rows) for shard in self.shards.shards)
        bar = tqdm(self._blocks(), total=blocks, desc="search", unit="block", disable=not self.progress or blocks < 2)
        for offset, block in bar:
            scores, rows = self._knn(flat, block, min(k, len(block)))
            best_scores, best_rows = _merge_top_k(best_scores, best_rows, scores, rows + offset, k)
        shape = np.shape(queries)[:-1]
        return best_scores.reshape(*shape, k), best_rows.reshape(*shape, k)


CONVERSION_THREADS = os.cpu_count() or 1  # a float16 -> float32 copy is exact on any number of threads


def half_to_float(rows: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    """float16 `rows` as float32 in the front of `buffer`: torch's vectorised, threaded copy runs
    about 30x faster than numpy's `astype` on 2 cores (benchmarks/RESULTS.md), and reusing the
    buffer spares a page-faulted allocation per block. On every core, whatever threads the caller
    (a one-thread training process) set: a copy gives the same bits on any number."""
    out = buffer[: len(rows)]
    with cpu_threads(CONVERSION_THREADS), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")  # a read-only memory map
        torch.from_numpy(out).copy_(torch.from_numpy(np.asarray(rows)))
    return out


class ResidentFlatIndex(ShardedFlatIndex):
    """`ShardedFlatIndex`'s exact search for an index searched again and again (a run's validation
    retrieval, at every checkpoint, and its test search). The shards' float16 blocks are read once,
    when the index is built, and kept on `device` while `resident_bytes` allows (all of them when
    None); the blocks past it stay in the memory-mapped shards, read at every search and moved to
    `device` in float16, half the bytes of float32. Each block is made float32 on `device` (on the
    CPU on every core) and searched by faiss as `ShardedFlatIndex` searches it, in the same blocks
    (its `search`): `faiss.knn` on the CPU, `faiss.knn_gpu` on a GPU, so both return the same rows
    and scores. Besides the kept rows a search holds one float32 block of `block_rows` x d on
    `device` (the memory preflight's search block). A GPU needs FAISS's GPU build
    (`device.require_gpu_faiss`)."""

    def __init__(
        self,
        shards,
        device: str | torch.device = "cpu",
        resident_bytes: int | None = None,
        block_rows: int = 500_000,
    ):
        if resident_bytes is not None and resident_bytes < 0:
            raise ValueError(
                f"resident_bytes must be >= 0 (0: nothing kept) or None (everything), got {resident_bytes}"
            )
        self.device = torch.device(device)
        if self.device.type == "cuda":
            require_gpu_faiss()
            import faiss.contrib.torch_utils  # noqa: F401  (faiss.knn_gpu then takes torch tensors on the GPU)
        super().__init__(shards, block_rows, use_gpu=self.device.type == "cuda")
        self._queries = (None, None)  # the query matrix last searched, and its copy on `device`
        self.blocks, self.resident_bytes, offset = [], 0, 0  # (first global row, float16 rows)
        for shard in shards.shards:
            for start in range(0, len(shard), block_rows):
                rows = shard[start : start + block_rows]
                if resident_bytes is None or self.resident_bytes + rows.nbytes <= resident_bytes:
                    rows = torch.from_numpy(np.array(rows)).to(self.device)  # read from the shards once
                    self.resident_bytes += rows.nbytes
                self.blocks.append((offset + start, rows))
            offset += len(shard)

    def _blocks(self):
        """(first global row, float32 rows on `device`) per block, in one reused buffer."""
        buffer = torch.empty((max(len(rows) for _, rows in self.blocks), self.dim), device=self.device)
        for offset, rows in self.blocks:
            block = buffer[: len(rows)]
            with cpu_threads(CONVERSION_THREADS), warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
                block.copy_(rows if isinstance(rows, torch.Tensor) else torch.from_numpy(rows).to(self.device))
            yield offset, block if self.gpu is not None else block.numpy()

    def _knn(self, queries, block, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.gpu is None:
            return super()._knn(queries, block, k)
        if self._queries[0] is not queries:  # one search's query matrix moved once, not per block
            self._queries = (queries, torch.from_numpy(queries).to(self.device))
        device = self.device.index if self.device.index is not None else torch.cuda.current_device()
        scores, rows = faiss.knn_gpu(
            self.gpu, self._queries[1], block, k, metric=faiss.METRIC_INNER_PRODUCT, device=device
        )
        return scores.cpu().numpy(), rows.cpu().numpy()


def _merge_top_k(scores_a, rows_a, scores_b, rows_b, k):
    scores = np.concatenate([scores_a, scores_b], axis=1)
    rows = np.concatenate([rows_a, rows_b], axis=1)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)


MIN_POINTS_PER_CENTROID = 39  # faiss's k-means warns (and crawls) below this many training points per centroid
# FAISS's guidance is 30 to 256 training points per centroid (its k-means subsamples above 256):
# 40 a list, just above the warning, bounds IVF65536's sample at 2,621,440 x 1536 float32 (16.1 GB)
TRAIN_POINTS_PER_LIST = 40


def training_sample_size(nlist: int) -> int:
    """The default IVF training sample: 40 vectors per inverted list, and at least 100,000."""
    return max(100_000, TRAIN_POINTS_PER_LIST * nlist)


def check_ivfpq_factory(factory: str, dim: int) -> None:
    """A FAISS factory string that builds an inverted-file index at `dim` dimensions, or a
    ValueError naming it, faiss's reason and the usual slip (YAML splits an unquoted list item at
    its comma: `-p ivfpq_factories '[IVF4,PQ8x4]'` is the two items `IVF4` and `PQ8x4`)."""
    try:
        faiss.extract_index_ivf(faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT))
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[-1].split(": ", 1)[-1]
        reason = "not an inverted-file (IVF) index" if "'ivf' failed" in reason else reason
        raise ValueError(
            f"IVF-PQ factory {factory!r} does not build at {dim} dimensions: {reason}. Write one string per "
            "index, such as \"IVF256,PQ16\" (PQ's byte count must divide the dimension); in papermill's -p, quote "
            "each item: -p ivfpq_factories '[\"IVF4,PQ8x4\"]'"
        ) from exc


def training_points_needed(factory: str, dim: int) -> int:
    """The fewest training points faiss's k-means takes without complaint for an `IVF<nlist>,PQ<m>`
    factory: 39 per inverted list and 39 per PQ centroid (2^bits of them)."""
    index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)  # owns the IVF part: keep it alive
    ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
    centroids = max(ivf.nlist, ivf.pq.ksub if hasattr(ivf, "pq") else 1)
    return MIN_POINTS_PER_CENTROID * centroids


class IVFPQIndex:
    """Approximate inner-product search: a FAISS `IVF<nlist>,PQ<m>` index trained on a sample of
    the embeddings (the paper-scale corpus: e.g. IVF65536,PQ96 over 25M x 1536). `train_size`
    defaults to `training_sample_size`: 40 per inverted list (faiss's k-means asks for 39; 100,000
    alone would leave IVF65536 with 1.5), 100,000 at least. With GPUs, k-means and adding run on them:
    on the CPU both take days at 25M (benchmarks/RESULTS.md). Not run on a GPU here.
    `build_seconds`: the time spent training and adding. `on_phase`, when given, is called with
    "train" before the k-means and "add" before the corpus goes in (a caller's progress bar)."""

    def __init__(
        self,
        shards,
        factory: str = "IVF1024,PQ32",
        train_size: int | None = None,
        nprobe: int = 32,
        seed: int = 0,
        use_gpu: bool | None = None,
        on_phase=None,
    ):
        on_phase = on_phase or (lambda phase: None)
        self.dim, self.on_gpu = shards.dim, searches_on_gpu(use_gpu)
        index = faiss.index_factory(self.dim, factory, faiss.METRIC_INNER_PRODUCT)
        ivf = faiss.extract_index_ivf(index)
        if self.on_gpu:  # k-means on the GPUs (faiss's clustering_index)
            ivf.clustering_index = faiss.index_cpu_to_all_gpus(faiss.IndexFlat(self.dim, index.metric_type))
        train_size = train_size or training_sample_size(ivf.nlist)
        rng = np.random.default_rng(seed)
        sample = np.sort(rng.choice(len(shards), min(train_size, len(shards)), replace=False))
        on_phase("train")
        began = time.perf_counter()
        index.train(np.ascontiguousarray(shards.rows(sample)))
        trained = time.perf_counter()
        self.code_size = int(ivf.code_size)  # bytes per document
        if self.on_gpu:  # add on the GPUs too; float16 lookup tables let 96-byte codes fit shared memory
            options = faiss.GpuMultipleClonerOptions()
            options.useFloat16 = True
            index = faiss.index_cpu_to_all_gpus(index, co=options)
        on_phase("add")
        for _, block in ShardedFlatIndex(shards, use_gpu=False)._blocks():
            index.add(block)
        self.build_seconds = {"train": trained - began, "add": time.perf_counter() - trained}
        self.index = index
        self.factory = factory
        self.set_nprobe(nprobe)

    def __len__(self) -> int:
        return self.index.ntotal

    def set_nprobe(self, nprobe: int) -> None:
        """How many inverted lists a query visits (more: higher recall, slower search)."""
        space = faiss.GpuParameterSpace() if self.on_gpu else faiss.ParameterSpace()
        space.set_index_parameter(self.index, "nprobe", nprobe)
        self.nprobe = nprobe

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        scores, rows = self.index.search(_query_matrix(queries, self.dim), k)
        shape = np.shape(queries)[:-1]
        return scores.reshape(*shape, k), rows.reshape(*shape, k)


def recall_against_exact(approximate_rows: np.ndarray, exact_rows: np.ndarray) -> float:
    """Mean fraction of the exact top-k that the approximate top-k also returns."""
    k = exact_rows.shape[-1]
    a, e = approximate_rows.reshape(-1, k), exact_rows.reshape(-1, k)
    return float(np.mean([len(np.intersect1d(x, y)) / k for x, y in zip(a, e)]))


def multi_vector_search(
    index: VectorIndex,
    queries: np.ndarray,
    k: int,
    depth: int | None = None,
    merge: str = PAPER_MERGE,
    counts: np.ndarray | None = None,
    **merge_options,
) -> np.ndarray:
    """Search every vector of `queries [N, n, d]` to `depth` (default k) and merge the lists to k
    (`merge`: one of `amer_lib.core.merge.MERGES`, with its options; the paper's is round-robin).
    `counts [N]`: an adaptive n (notebook 07), row i searches only its first `counts[i]` vectors."""
    merger = get_merge(merge, **merge_options)
    scores, ids = kept_search(index, queries, counts, depth or k)
    return merger(ids, scores, k)


def kept_search(
    index: VectorIndex, queries: np.ndarray, counts: np.ndarray | None, depth: int
) -> tuple[np.ndarray, np.ndarray]:
    """Scores and ids `[N, n, depth]` of the first `counts[i]` vectors of each row `queries [N, n, d]`
    (all of them when `counts` is None); the lists of the vectors not searched are empty (-1)."""
    if counts is None:
        return index.search(queries, depth)
    kept = kept_vectors(counts, *queries.shape[:2])
    scores = np.zeros((*kept.shape, depth), dtype=np.float32)
    ids = np.full((*kept.shape, depth), -1, dtype=np.int64)
    scores[kept], ids[kept] = index.search(queries[kept], depth)
    return scores, ids


def kept_lists(ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """`ids [N, n, K]` of lists already searched, with those of the vectors past each row's count
    emptied (-1): what `kept_search` returns, without searching again."""
    return np.where(kept_vectors(counts, *ids.shape[:2])[..., None], ids, -1)


def kept_vectors(counts: np.ndarray, rows: int, n: int) -> np.ndarray:
    """`[rows, n]` True for the first `counts[i]` vectors of row i."""
    counts = np.asarray(counts)
    if counts.shape != (rows,) or counts.min(initial=1) < 1 or counts.max(initial=1) > n:
        raise ValueError(f"counts must be {rows} integers in 1..{n}, got {counts}")
    return np.arange(n)[None, :] < counts[:, None]
