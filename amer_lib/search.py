"""FAISS inner-product search over unit-norm vectors, multi-vector search and round-robin merge."""
from __future__ import annotations

import faiss
import numpy as np

NORM_TOLERANCE = 1e-3


def unit_norm(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


class VectorIndex:
    """Exact inner-product (= cosine) index; moved to every GPU when faiss reports GPUs."""

    def __init__(self, vectors: np.ndarray, use_gpu: bool | None = None):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"index vectors must be a 2-D array [N, d], got shape {vectors.shape}")
        norms = np.linalg.norm(vectors, axis=1)
        if not np.allclose(norms, 1.0, atol=NORM_TOLERANCE):
            worst = int(np.argmax(np.abs(norms - 1)))
            raise ValueError(f"index vectors must be unit-norm (row {worst} has norm {norms[worst]:.4f}); "
                             "normalise them with amer_lib.search.unit_norm")
        self.dim = vectors.shape[1]
        index = faiss.IndexFlatIP(self.dim)
        if use_gpu is None:
            use_gpu = hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0
        if use_gpu:
            index = faiss.index_cpu_to_all_gpus(index)
        index.add(vectors)
        self.index = index

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k of each query. `queries` is `[N, d]` or `[N, n, d]` (several vectors per query);
        returns scores and ids of shape `[..., k]`. Queries are normalised first."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.shape[-1] != self.dim:
            raise ValueError(f"query vectors have dimension {queries.shape[-1]}, but the index holds "
                             f"dimension {self.dim}")
        flat = np.ascontiguousarray(unit_norm(queries.reshape(-1, self.dim)))
        scores, ids = self.index.search(flat, k)
        return scores.reshape(*queries.shape[:-1], k), ids.reshape(*queries.shape[:-1], k)


def round_robin_merge(ids: np.ndarray, k: int) -> np.ndarray:
    """Merge per-vector ranked lists `[N, n, K]` into one list `[N, k]`.

    Takes rank 1 of vector 1, rank 1 of vector 2, ..., then rank 2 of each, and so on (vectors in
    generation order), skipping ids already taken and FAISS's -1 padding. Rows with fewer than k
    distinct ids are padded with -1. Vectorised: one sort per row, no Python loop over documents.
    """
    n_queries = ids.shape[0]
    interleaved = np.ascontiguousarray(np.swapaxes(ids, 1, 2)).reshape(n_queries, -1)
    order = np.argsort(interleaved, axis=1, kind="stable")
    sorted_ids = np.take_along_axis(interleaved, order, axis=1)
    first = np.ones_like(sorted_ids, dtype=bool)
    first[:, 1:] = sorted_ids[:, 1:] != sorted_ids[:, :-1]
    keep = np.empty_like(first)
    np.put_along_axis(keep, order, first, axis=1)
    keep &= interleaved >= 0
    kept_first = np.argsort(~keep, axis=1, kind="stable")[:, :k]
    merged = np.take_along_axis(interleaved, kept_first, axis=1)
    merged[~np.take_along_axis(keep, kept_first, axis=1)] = -1
    if merged.shape[1] < k:
        merged = np.pad(merged, ((0, 0), (0, k - merged.shape[1])), constant_values=-1)
    return merged


def multi_vector_search(index: VectorIndex, queries: np.ndarray, k: int, depth: int | None = None) -> np.ndarray:
    """Search every vector of `queries [N, n, d]` to `depth` (default k) and round-robin merge to k."""
    _, ids = index.search(queries, depth or k)
    return round_robin_merge(ids, k)
