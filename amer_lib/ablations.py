"""Inference-time ablations of a trained AMER model (notebook 05): how many of its
autoregressively generated vectors to search (n = 1..8) and how to merge their lists.

Generation is autoregressive, so the first n of 8 generated vectors are exactly what a run
asked for n vectors would produce: one generation serves every n.
"""
from __future__ import annotations

import numpy as np

from .merge import MERGES, get_merge
from .metrics import mrecall_at_k, recall_at_k

KS = (10, 100)


def vector_count_and_merge(vectors: np.ndarray, index, gold: np.ndarray, counts: tuple[int, ...],
                           merges: tuple[str, ...] = tuple(MERGES), depth: int = 100) -> list[dict]:
    """MRecall and Recall at 10 and 100 for the first n of `vectors [Q, n_max, d]`, for every
    n in `counts` and every merge; `gold [Q, C, D]` padded clusters of corpus rows."""
    if max(counts) > vectors.shape[1]:
        raise ValueError(f"counts go up to {max(counts)} but only {vectors.shape[1]} vectors were generated")
    scores, ids = index.search(vectors, max(depth, max(KS)))
    rows = []
    for n in counts:
        for merge in merges:
            merged = get_merge(merge)(ids[:, :n], scores[:, :n], max(KS))
            row = {"n": n, "merge": merge}
            for k in KS:
                row[f"mrecall@{k}"] = float(mrecall_at_k(merged, gold, k).mean())
                row[f"recall@{k}"] = float(recall_at_k(merged, gold, k).mean())
            rows.append(row)
    return rows
