"""The failure analysis of Section 3 (Figure 1): how an off-the-shelf retriever's MRecall@100
falls as the targets of a question move apart.

Per question, the mean distance (cosine distance 1 - cos, and Euclidean) over all pairs of its
targets' document embeddings (the first gold document of each answer, embedded by the
retriever's own document encoder); the test set is cut into four bins at the distance's
quartiles (< 25%, 25-50%, 50-75%, > 75%), and MRecall@100 is reported per bin, on the whole set
and per answer-set size.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np

BIN_LABELS = ("<25%", "25-50%", "50-75%", ">75%")
DISTANCES = ("cosine", "euclidean")


def mean_pairwise_distance(target_vectors: list[np.ndarray], metric: str) -> np.ndarray:
    """`[Q]`: mean over the pairs of each question's target vectors `[m_i, d]` (m_i >= 2)."""
    if metric not in DISTANCES:
        raise ValueError(f"unknown distance {metric!r}; valid: {', '.join(DISTANCES)}")
    out = np.empty(len(target_vectors))
    for q, vectors in enumerate(target_vectors):
        vectors = np.asarray(vectors, dtype=np.float64)
        if len(vectors) < 2:
            raise ValueError(f"question {q} has {len(vectors)} target; a distance needs at least two")
        pairs = list(combinations(range(len(vectors)), 2))
        a, b = vectors[[i for i, _ in pairs]], vectors[[j for _, j in pairs]]
        if metric == "euclidean":
            out[q] = np.linalg.norm(a - b, axis=1).mean()
        else:
            cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
            out[q] = (1.0 - cos).mean()
    return out


def quartile_bins(distances: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bin index 0..3 of every question and the three edges (the 25/50/75% quantiles). A value
    equal to an edge goes to the lower bin, so every question is in exactly one bin."""
    edges = np.quantile(np.asarray(distances, dtype=np.float64), [0.25, 0.5, 0.75])
    return np.searchsorted(edges, distances, side="left"), edges


def per_bin_mrecall(mrecall: np.ndarray, bins: np.ndarray, sizes: np.ndarray) -> list[dict]:
    """Rows of (answer-set size or "all", bin, questions, MRecall in %): the figure's data."""
    rows = []
    for size in ["all", *sorted(set(np.asarray(sizes).tolist()))]:
        chosen = np.ones(len(mrecall), dtype=bool) if size == "all" else np.asarray(sizes) == size
        for b, label in enumerate(BIN_LABELS):
            members = chosen & (bins == b)
            rows.append({"answers": size, "bin": label, "questions": int(members.sum()),
                         "mrecall": float(100 * mrecall[members].mean()) if members.any() else float("nan")})
    return rows
