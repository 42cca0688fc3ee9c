"""Maximal marginal relevance re-ranking of a single query's candidates (paper appendix, MMR).

Greedily picks `argmax_{d in R \\ S} lambda * sim(q, d) - (1 - lambda) * max_{s in S} sim(d, s)`
from the top |R| = 500, with cosine similarities of the frozen document encoder's embeddings.
Vectorised over the candidates and over a block of questions: each of the k greedy steps is a
handful of array operations on `[questions, candidates]`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from amer_lib.core.index import unit_norm
from amer_lib.core.metrics import mrecall_at_k

LAMBDAS = (0.5, 0.75, 0.9)  # the paper's grid, tuned on the validation split


def mmr_rerank(
    queries: np.ndarray,
    candidates: np.ndarray,
    embeddings: Callable[[np.ndarray], np.ndarray],
    lam: float,
    k: int,
    block: int = 64,
) -> np.ndarray:
    """Re-ranked rows `[N, k]` from `candidates [N, C]` (corpus rows, -1 = padding) for
    `queries [N, d]`; `embeddings(rows)` returns the documents' vectors `[..., d]`."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"MMR lambda must lie in [0, 1], got {lam}")
    out = np.full((len(candidates), k), -1, dtype=np.int64)
    for start in range(0, len(candidates), block):
        rows = candidates[start : start + block]
        vectors = unit_norm(embeddings(np.where(rows >= 0, rows, 0)).astype(np.float32))
        picked = _greedy(unit_norm(queries[start : start + block]), vectors, rows >= 0, lam, k)
        out[start : start + block] = np.where(picked >= 0, np.take_along_axis(rows, np.maximum(picked, 0), 1), -1)
    return out


def _greedy(queries: np.ndarray, vectors: np.ndarray, valid: np.ndarray, lam: float, k: int) -> np.ndarray:
    """Candidate positions `[B, k]` (-1 once a row runs out) chosen by MMR."""
    batch, n_candidates, _ = vectors.shape
    relevance = np.einsum("bd,bcd->bc", queries, vectors)
    redundancy = np.zeros((batch, n_candidates), dtype=np.float32)  # max sim to the selected (none yet: 0 weight)
    available = valid.copy()
    picked = np.full((batch, min(k, n_candidates)), -1, dtype=np.int64)
    every = np.arange(batch)
    for step in range(picked.shape[1]):
        score = lam * relevance - (1.0 - lam) * redundancy if step else relevance.copy()
        score[~available] = -np.inf
        choice = score.argmax(1)
        has = available[every, choice]
        picked[has, step] = choice[has]
        available[every, choice] = False
        similarity = np.einsum("bcd,bd->bc", vectors, vectors[every, choice])
        redundancy = similarity if step == 0 else np.maximum(redundancy, similarity)
    if picked.shape[1] < k:
        picked = np.pad(picked, ((0, 0), (0, k - picked.shape[1])), constant_values=-1)
    return picked


def tune_lambda(
    queries: np.ndarray,
    candidates: np.ndarray,
    embeddings: Callable[[np.ndarray], np.ndarray],
    gold: np.ndarray,
    k: int,
    lambdas: tuple[float, ...] = LAMBDAS,
) -> tuple[float, dict[float, float]]:
    """The lambda with the best mean MRecall@k on a validation split (ties: the larger lambda,
    closer to the original ranking), and every lambda's score."""
    scores = {
        lam: float(mrecall_at_k(mmr_rerank(queries, candidates, embeddings, lam, k), gold, k).mean()) for lam in lambdas
    }
    best = max(sorted(scores, reverse=True), key=scores.get)
    return best, scores
