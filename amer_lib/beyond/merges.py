"""Merges beyond the paper (notebook 07), registered in `amer_lib.core.merge.MERGES` on import.

`coverage_merge` allocates the k slots among the vectors by how much of each vector's probability
mass the list already covers (xQuAD's greedy, with each vector an aspect), so a vector whose top
document stands out gives its slots to a vector still uncertain; `ranx_fusion` runs the fusion
methods of the ranx library (CombSUM, CombMNZ, normalised-score fusions, ...), the baselines it
must beat.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from amer_lib.core.merge import Merge, candidates, pad, register_merge


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
    docs, columns = candidates(ids)
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
    `amer_lib.core.index.kept_search`) are fused in groups of rows that searched the same
    ones: ranx pairs the runs' queries by position, and a query with no document in one run
    would pair the wrong queries."""
    docs, _ = candidates(ids)
    merged = pad(docs[:, :k], k)  # a row that searched one vector: its list
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


def _ranx_merge(method: str, norm: str | None) -> Callable[..., np.ndarray]:
    return lambda ids, scores, k: ranx_fusion(ids, scores, k, method, norm)


register_merge("coverage", Merge(coverage_merge, "coverage (xQuAD)", "#b5651d"))
register_merge("ranx_rrf", Merge(_ranx_merge(*RANX_FUSIONS["ranx_rrf"]), "RRF (ranx)", "#5f8fbf"))
register_merge("combsum", Merge(_ranx_merge(*RANX_FUSIONS["combsum"]), "CombSUM (ranx)", "#9b7bb8"))
register_merge("combmnz", Merge(_ranx_merge(*RANX_FUSIONS["combmnz"]), "CombMNZ (ranx)", "#c27c9a"))
register_merge("max_zmuv", Merge(_ranx_merge(*RANX_FUSIONS["max_zmuv"]), "z-score max (ranx)", "#8c8c3c"))
