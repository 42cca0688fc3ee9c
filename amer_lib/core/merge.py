"""Merging the ranked lists of several query vectors into one list.

Every merge takes the per-vector lists `ids [N, n, K]` (FAISS order, -1 = padding) with their
cosine `scores [N, n, K]` and returns `[N, k]` distinct ids, -1-padded. The paper merges
round-robin; reciprocal-rank fusion and the max-score merge are the ablation's alternatives.

Beyond the paper (notebook 07): `coverage_merge` allocates the k slots among the vectors by how
much of each vector's probability mass the list already covers (xQuAD's greedy, with each vector
an aspect), so a vector whose top document stands out gives its slots to a vector still
uncertain; `ranx_fusion` runs the fusion methods of the ranx library (CombSUM, CombMNZ,
normalised-score fusions, ...), the baselines it must beat.
"""

from __future__ import annotations

import warnings
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


def coverage_merge(
    ids: np.ndarray,
    scores: np.ndarray,
    k: int,
    temperature: float = 0.05,
    diversity: float = 1.0,
    weighting: str = "uniform",
) -> np.ndarray:
    """xQuAD's greedy selection (Santos et al., 2010) with the query vectors as the aspects.

    P(d | j) is the softmax of vector j's cosines over its list at `temperature`; each slot takes
    the document maximising `(1 - diversity) * sum_j w_j P(d | j) + diversity * sum_j w_j P(d | j)
    * prod_{s taken} (1 - P(s | j))`: a vector whose list is already covered (its top document
    taken with high probability) stops drawing slots. `weighting`: the vectors' weights w_j,
    "uniform" or "top_score" (softmax over the vectors of their best cosine, same temperature: a
    vector that lands near no document counts less). Ties go to the round-robin order."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {weighting!r}; valid: {', '.join(WEIGHTINGS)}")
    docs, columns = _candidates(ids)
    n_rows, n_vectors, _ = ids.shape
    valid = ids >= 0
    logits = np.where(valid, np.asarray(scores, dtype=np.float64) / temperature, -np.inf)
    top = logits.max(-1, keepdims=True)
    within = np.exp(logits - np.where(np.isfinite(top), top, 0.0))
    within /= np.maximum(within.sum(-1, keepdims=True), np.finfo(float).tiny)
    prob = np.zeros((n_rows, n_vectors, docs.shape[1]))
    r, v, c = np.nonzero(valid)
    prob[r, v, columns[r, v, c]] = within[r, v, c]
    weights = _vector_weights(top[..., 0], weighting)
    relevance = np.einsum("rvc,rv->rc", prob, weights)
    remaining = np.ones((n_rows, n_vectors))
    taken = docs < 0
    merged = np.full((n_rows, k), -1, dtype=np.int64)
    rows = np.arange(n_rows)
    for slot in range(min(k, docs.shape[1])):
        gain = (1 - diversity) * relevance + diversity * np.einsum("rvc,rv->rc", prob, weights * remaining)
        gain[taken] = -np.inf
        best = gain.argmax(1)
        fresh = ~taken[rows, best]
        merged[fresh, slot] = docs[rows[fresh], best[fresh]]
        taken[rows, best] = True
        remaining *= 1 - prob[rows, :, best]
    return merged


WEIGHTINGS = ("uniform", "top_score")


def _vector_weights(top_logits: np.ndarray, weighting: str) -> np.ndarray:
    """`[N, n]` weights summing to 1 per row (a vector with an empty list gets 0)."""
    present = np.isfinite(top_logits)  # an empty list's top logit is -inf
    if weighting == "uniform":
        weights = present.astype(np.float64)
    else:
        weights = np.exp(top_logits - np.max(np.where(present, top_logits, 0.0), axis=1, keepdims=True))
    return weights / np.maximum(weights.sum(1, keepdims=True), np.finfo(float).tiny)


def ranx_fusion(ids: np.ndarray, scores: np.ndarray, k: int, method: str, norm: str | None = None) -> np.ndarray:
    """The lists fused by ranx (`ranx.fuse`, one run per query vector): `method` one of ranx's
    fusion methods ("rrf", "sum" = CombSUM, "mnz" = CombMNZ, "max", ...), `norm` its score
    normalisation ("min-max", "zmuv", ...; None: the raw cosines). Ties go to the round-robin
    order, as in the other merges.

    Rows that searched different vectors (an adaptive n leaves the lists of the others empty,
    `amer_lib.core.search.kept_search`) are fused in groups of rows that searched the same
    ones: ranx pairs the runs' queries by position, and a query with no document in one run
    would pair the wrong queries."""
    docs, _ = _candidates(ids)
    merged = _pad(docs[:, :k], k)  # a row that searched one vector: its list
    searched = (ids >= 0).any(-1)  # [N, n]
    patterns, group_of = np.unique(searched, axis=0, return_inverse=True)
    for group, pattern in enumerate(patterns):
        rows = np.flatnonzero(group_of.ravel() == group)
        if pattern.sum() > 1:
            vectors = np.flatnonzero(pattern)
            fused = _ranx_fuse(ids[rows][:, vectors], scores[rows][:, vectors], method, norm)
            merged[rows] = _ranked(docs[rows], fused, k)
    return merged


def _ranx_fuse(ids: np.ndarray, scores: np.ndarray, method: str, norm: str | None) -> list[dict]:
    """ranx's fused scores `{"d<id>": score}` of every row, every vector's list non-empty."""
    from ranx import Run, fuse

    runs = [
        Run({f"q{q}": {f"d{d}": float(s) for d, s in zip(ids[q, j], scores[q, j]) if d >= 0} for q in range(len(ids))})
        for j in range(ids.shape[1])
    ]
    with warnings.catch_warnings():  # numba's notes on ranx's integer casts
        warnings.simplefilter("ignore")
        fused = fuse(runs, norm=norm, method=method).to_dict()
    return [fused[f"q{q}"] for q in range(len(ids))]


def _ranked(docs: np.ndarray, fused: list[dict], k: int) -> np.ndarray:
    """`[N, k]` each row's candidates `docs [N, C]` by fused score, highest first (a stable sort:
    ties keep the round-robin order)."""
    merged = np.full((len(docs), k), -1, dtype=np.int64)
    for q, row_scores in enumerate(fused):
        row = sorted((d for d in docs[q] if d >= 0), key=lambda d: -row_scores[f"d{d}"])[:k]
        merged[q, : len(row)] = row
    return merged


# ranx's fusions that notebook 07 compares against (name: (method, norm))
RANX_FUSIONS = {
    "ranx_rrf": ("rrf", None),
    "combsum": ("sum", "min-max"),
    "combmnz": ("mnz", "min-max"),
    "max_zmuv": ("max", "zmuv"),
}

MERGES: dict[str, Callable[..., np.ndarray]] = {
    "round_robin": lambda ids, scores, k: round_robin_merge(ids, k),
    "rrf": lambda ids, scores, k: reciprocal_rank_fusion(ids, k),
    "max_score": max_score_merge,
    "coverage": coverage_merge,
    **{
        name: (lambda ids, scores, k, method=method, norm=norm: ranx_fusion(ids, scores, k, method, norm))
        for name, (method, norm) in RANX_FUSIONS.items()
    },
}


def get_merge(name: str, **options) -> Callable[[np.ndarray, np.ndarray, int], np.ndarray]:
    """The merge called `name`, with its `options` (e.g. coverage's temperature) bound."""
    if name not in MERGES:
        raise ValueError(f"unknown merge {name!r}; valid: {', '.join(MERGES)}")
    merge = MERGES[name]
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


def _candidates(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _pad(merged: np.ndarray, k: int) -> np.ndarray:
    if merged.shape[1] < k:
        merged = np.pad(merged, ((0, 0), (0, k - merged.shape[1])), constant_values=-1)
    return merged
