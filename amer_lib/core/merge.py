"""Merging the ranked lists of several query vectors into one list.

Every merge takes the per-vector lists `ids [N, n, K]` (FAISS order, -1 = padding) with their
cosine `scores [N, n, K]` and returns `[N, k]` distinct ids, -1-padded. The paper merges
round-robin; reciprocal-rank fusion and the max-score merge are the ablation's alternatives.

A merge is one entry of `MERGES`: its function, the label figures give it and its colour. Every
run, notebook and the retriever take a merge by its name (`merge`, round-robin by default); a new
one is registered with `register_merge` (the merges beyond the paper: `amer_lib.beyond.merges`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
    return pad(merged.reshape(n_queries, -1), k)


def reciprocal_rank_fusion(ids: np.ndarray, k: int, rrf_k: int = RRF_K) -> np.ndarray:
    """Documents by the sum over vectors of `1 / (rrf_k + rank)` (rank from 1)."""
    ranks = np.broadcast_to(np.arange(1, ids.shape[2] + 1), ids.shape)
    return _fuse(ids, 1.0 / (rrf_k + ranks), k, np.add)


def max_score_merge(ids: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Documents by their best cosine to any of the vectors."""
    return _fuse(ids, scores, k, np.maximum)


@dataclass(frozen=True)
class Merge:
    """One way to merge: `function(ids, scores, k) -> [N, k]`, its label in figures and tables, and
    its colour in figures."""

    function: Callable[..., np.ndarray]
    label: str
    color: str


# the paper's merge and the ablation's alternatives (the colours: the paper's light blue and orange)
MERGES: dict[str, Merge] = {
    "round_robin": Merge(lambda ids, scores, k: round_robin_merge(ids, k), "round-robin (paper)", "#5c95c2"),
    "rrf": Merge(lambda ids, scores, k: reciprocal_rank_fusion(ids, k), "reciprocal-rank fusion", "#f6a25c"),
    "max_score": Merge(max_score_merge, "max score", "#7a9a5c"),
}
PAPER_MERGE = "round_robin"


def register_merge(name: str, merge: Merge) -> None:
    """Add a merge to `MERGES` under `name`, which every `merge` parameter then accepts."""
    if name in MERGES and MERGES[name] != merge:
        raise ValueError(f"a merge named {name!r} is registered already; registered: {', '.join(MERGES)}")
    MERGES[name] = merge


def get_merge(name: str, **options) -> Callable[[np.ndarray, np.ndarray, int], np.ndarray]:
    """The function of the merge called `name`, with its `options` (e.g. coverage's temperature) bound."""
    if name not in MERGES:
        raise ValueError(f"unknown merge {name!r}; valid: {', '.join(MERGES)}")
    merge = MERGES[name].function
    return (lambda ids, scores, k: merge(ids, scores, k, **options)) if options else merge


def found_by(ids: np.ndarray, scores: np.ndarray, merged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each document of a merged list `merged [N, k]` came from: the vector whose list
    `ids [N, n, K]` ranks it highest (ties to the earlier vector; under round-robin, the vector it
    was taken from) `[N, k]`, and its cosine to that vector `[N, k]`; -1 and NaN for padding."""
    n_vectors = ids.shape[1]
    flat, flat_scores = _interleave(ids), _interleave(scores)  # position p = rank * n + vector
    vectors = np.full(merged.shape, -1, dtype=np.int64)
    cosines = np.full(merged.shape, np.nan, dtype=np.float32)
    for row, docs in enumerate(merged):
        listed, first = np.unique(flat[row], return_index=True)
        wanted = docs >= 0
        at = np.searchsorted(listed, docs[wanted]).clip(max=len(listed) - 1)
        if not np.array_equal(listed[at], docs[wanted]):
            raise ValueError(f"row {row} of the merged lists holds documents none of its vectors' lists holds")
        vectors[row, wanted] = first[at] % n_vectors
        cosines[row, wanted] = flat_scores[row, first[at]]
    return vectors, cosines


def _interleave(values: np.ndarray) -> np.ndarray:
    """`[N, n, K] -> [N, K * n]` in round-robin order: rank-major, vector-minor."""
    return np.ascontiguousarray(np.swapaxes(values, 1, 2)).reshape(values.shape[0], -1)


def candidates(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's distinct documents in round-robin order of first appearance, `docs [N, C]`
    (-1-padded), and the column of `docs` that every entry of `ids [N, n, K]` is (-1: padding)."""
    n_rows, n_vectors, depth = ids.shape
    flat = _interleave(ids)  # position p = rank * n + vector
    valid = flat >= 0
    row = np.broadcast_to(np.arange(n_rows)[:, None], flat.shape)[valid].astype(np.int64)
    span = int(flat.max(initial=0)) + 1
    keys, inverse = np.unique(row * span + flat[valid], return_inverse=True)
    first = np.full(len(keys), flat.shape[1])
    np.minimum.at(first, inverse.ravel(), np.broadcast_to(np.arange(flat.shape[1]), flat.shape)[valid])
    order = np.lexsort((first, keys // span))  # by row, then first appearance
    sorted_rows = (keys // span)[order]
    sorted_columns = np.arange(len(order)) - np.searchsorted(sorted_rows, sorted_rows)
    docs = np.full((n_rows, int(sorted_columns.max(initial=-1)) + 1), -1, dtype=np.int64)
    docs[sorted_rows, sorted_columns] = (keys % span)[order]
    column_of_key = np.empty(len(keys), dtype=np.int64)
    column_of_key[order] = sorted_columns
    columns = np.full(flat.shape, -1, dtype=np.int64)
    columns[valid] = column_of_key[inverse.ravel()]
    return docs, np.ascontiguousarray(columns.reshape(n_rows, depth, n_vectors).swapaxes(1, 2))


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


def pad(merged: np.ndarray, k: int) -> np.ndarray:
    if merged.shape[1] < k:
        merged = np.pad(merged, ((0, 0), (0, k - merged.shape[1])), constant_values=-1)
    return merged
