"""Merging the ranked lists of several query vectors into one list.

Every merge takes the per-vector lists `ids [N, n, K]` (FAISS order, -1 = padding) with their
cosine `scores [N, n, K]` and returns `[N, k]` distinct ids, -1-padded. The paper merges
round-robin; reciprocal-rank fusion and the max-score merge are the ablation's alternatives.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

RRF_K = 60  # the constant of Cormack et al. (2009)


def round_robin_merge(ids: np.ndarray, k: int) -> np.ndarray:
    """Rank 1 of vector 1, rank 1 of vector 2, ..., then rank 2 of each, and so on (vectors in
    generation order), skipping ids already taken and FAISS's -1 padding. Vectorised: one sort
    per row, no Python loop over documents."""
    n_queries = ids.shape[0]
    interleaved = _interleave(ids)
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
    return _pad(merged.reshape(n_queries, -1), k)


def reciprocal_rank_fusion(ids: np.ndarray, k: int, rrf_k: int = RRF_K) -> np.ndarray:
    """Documents by the sum over vectors of `1 / (rrf_k + rank)` (rank from 1)."""
    ranks = np.broadcast_to(np.arange(1, ids.shape[2] + 1), ids.shape)
    return _fuse(ids, 1.0 / (rrf_k + ranks), k, np.add)


def max_score_merge(ids: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Documents by their best cosine to any of the vectors."""
    return _fuse(ids, scores, k, np.maximum)


MERGES: dict[str, Callable[[np.ndarray, np.ndarray, int], np.ndarray]] = {
    "round_robin": lambda ids, scores, k: round_robin_merge(ids, k),
    "rrf": lambda ids, scores, k: reciprocal_rank_fusion(ids, k),
    "max_score": max_score_merge,
}


def get_merge(name: str) -> Callable[[np.ndarray, np.ndarray, int], np.ndarray]:
    if name not in MERGES:
        raise ValueError(f"unknown merge {name!r}; valid: {', '.join(MERGES)}")
    return MERGES[name]


def _interleave(values: np.ndarray) -> np.ndarray:
    """`[N, n, K] -> [N, K * n]` in round-robin order: rank-major, vector-minor."""
    return np.ascontiguousarray(np.swapaxes(values, 1, 2)).reshape(values.shape[0], -1)


def _fuse(ids: np.ndarray, values: np.ndarray, k: int, reduce: np.ufunc) -> np.ndarray:
    """Aggregate `values` per (row, id) with `reduce` (np.add or np.maximum), highest first; ties
    go to the document met first in round-robin order."""
    n_rows = ids.shape[0]
    flat_ids, flat_values = _interleave(ids), _interleave(np.asarray(values, dtype=np.float64))
    position = np.broadcast_to(np.arange(flat_ids.shape[1]), flat_ids.shape)
    row = np.broadcast_to(np.arange(n_rows)[:, None], flat_ids.shape)
    valid = flat_ids >= 0
    span = int(flat_ids.max(initial=0)) + 1
    keys, inverse = np.unique(row[valid].astype(np.int64) * span + flat_ids[valid], return_inverse=True)
    total = np.full(len(keys), 0.0 if reduce is np.add else -np.inf)
    reduce.at(total, inverse, flat_values[valid])
    first = np.full(len(keys), flat_ids.shape[1])
    np.minimum.at(first, inverse, position[valid])
    key_rows, key_ids = keys // span, keys % span
    order = np.lexsort((first, -total, key_rows))
    key_rows, key_ids = key_rows[order], key_ids[order]
    within_row = np.arange(len(order)) - np.searchsorted(key_rows, key_rows)
    merged = np.full((n_rows, k), -1, dtype=np.int64)
    take = within_row < k
    merged[key_rows[take], within_row[take]] = key_ids[take]
    return merged


def _pad(merged: np.ndarray, k: int) -> np.ndarray:
    if merged.shape[1] < k:
        merged = np.pad(merged, ((0, 0), (0, k - merged.shape[1])), constant_values=-1)
    return merged
