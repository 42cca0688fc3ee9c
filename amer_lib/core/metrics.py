"""MRecall@k and Recall@k (paper, Section 2), target similarity and the low-similarity subset
(the paired bootstrap over seeds and questions: `amer_lib.report.significance`).

Gold answers are clusters of document ids: `gold[q, c, :]` holds the ids of cluster c of query
q, padded with -1 (padded clusters are entirely -1). A cluster is hit when any of its documents
is in the top k. With m clusters, MRecall@k is 1 when all m are hit (m <= k) or at least k are
hit (m > k); Recall@k is the fraction of clusters hit.
"""

from __future__ import annotations

import numpy as np

K = 100  # the paper's depth: MRecall@100 of the top 100
KS = (10, 100)  # the cut-offs reported beside each other
DISTANCES = ("cosine", "euclidean")  # between the targets of a question


def pad_clusters(clusters: list[list[list[int]]]) -> np.ndarray:
    """Ragged `[query][cluster][doc]` id lists -> padded array `[Q, C, D]` filled with -1."""
    if any(len(c) == 0 for c in clusters):
        empty = [i for i, c in enumerate(clusters) if len(c) == 0]
        raise ValueError(f"queries {empty[:10]} have no gold clusters")
    n_clusters = max(len(c) for c in clusters)
    n_docs = max(len(docs) for c in clusters for docs in c)
    gold = np.full((len(clusters), n_clusters, n_docs), -1, dtype=np.int64)
    for q, query_clusters in enumerate(clusters):
        for c, docs in enumerate(query_clusters):
            gold[q, c, : len(docs)] = docs
    return gold


def cluster_hits(retrieved: np.ndarray, gold: np.ndarray, k: int) -> np.ndarray:
    """`[Q, C]` bool: cluster c of query q has a document in the top k of `retrieved [Q, >=k]`."""
    top = retrieved[:, :k]
    hits = np.zeros(gold.shape[:2], dtype=bool)
    for rank in range(top.shape[1]):  # k passes over [Q, C, D]: memory stays at the size of gold
        column = top[:, rank, None, None]
        hits |= ((gold == column) & (column >= 0)).any(-1)
    return hits


def _counts(retrieved: np.ndarray, gold: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    if retrieved.shape[0] != gold.shape[0]:
        raise ValueError(f"{retrieved.shape[0]} retrieved lists for {gold.shape[0]} queries")
    n_clusters = (gold >= 0).any(-1).sum(-1)
    if (n_clusters == 0).any():
        raise ValueError(f"queries {np.flatnonzero(n_clusters == 0)[:10].tolist()} have no gold clusters")
    return cluster_hits(retrieved, gold, k).sum(-1), n_clusters


def mrecall_at_k(retrieved: np.ndarray, gold: np.ndarray, k: int) -> np.ndarray:
    """Per-query MRecall@k (0/1 floats)."""
    hit, n_clusters = _counts(retrieved, gold, k)
    return (hit >= np.minimum(n_clusters, k)).astype(np.float64)


def recall_at_k(retrieved: np.ndarray, gold: np.ndarray, k: int) -> np.ndarray:
    """Per-query Recall@k: fraction of gold clusters hit."""
    hit, n_clusters = _counts(retrieved, gold, k)
    return hit / n_clusters


METRICS = {"mrecall": mrecall_at_k, "recall": recall_at_k}


def evaluate(ranked: np.ndarray, gold: np.ndarray, ks: tuple[int, ...] = KS) -> dict[str, np.ndarray]:
    """Per-query MRecall@k and Recall@k of ranked lists `[Q, K]` against padded gold clusters
    `[Q, C, D]`, for every k in `ks`: {"mrecall@10": [Q], "recall@10": [Q], ...}."""
    return {f"{name}@{k}": metric(ranked, gold, k) for k in ks for name, metric in METRICS.items()}


def mean_scores(scores: dict[str, np.ndarray]) -> dict[str, float]:
    """The mean of each per-query score of `evaluate`."""
    return {name: float(values.mean()) for name, values in scores.items()}


def mean_pairwise_cosine(target_vectors: list[np.ndarray]) -> np.ndarray:
    """Per question, the mean cosine over all pairs of its targets (`[m_i, d]` each, one vector
    per answer cluster, m_i >= 2)."""
    means = np.empty(len(target_vectors))
    for q, vectors in enumerate(target_vectors):
        m = len(vectors)
        if m < 2:
            raise ValueError(f"question {q} has {m} target(s); pairwise similarity needs at least 2")
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        cos = unit @ unit.T
        means[q] = (cos.sum() - np.trace(cos)) / (m * (m - 1))
    return means


def mean_pairwise_distance(target_vectors: list[np.ndarray], metric: str) -> np.ndarray:
    """`[Q]`: mean over the pairs of each question's target vectors `[m_i, d]` (m_i >= 2)."""
    if metric not in DISTANCES:
        raise ValueError(f"unknown distance {metric!r}; valid: {', '.join(DISTANCES)}")
    vectors = [np.asarray(v, dtype=np.float64) for v in target_vectors]
    if metric == "cosine":
        return 1.0 - mean_pairwise_cosine(vectors)
    out = np.empty(len(vectors))
    for q, v in enumerate(vectors):
        if len(v) < 2:
            raise ValueError(f"question {q} has {len(v)} target(s); a distance needs at least two")
        first, second = np.triu_indices(len(v), k=1)
        out[q] = np.linalg.norm(v[first] - v[second], axis=1).mean()
    return out


def same_vs_random_cosine(target_vectors: list[np.ndarray], n_random: int = 10_000, seed: int = 0) -> dict:
    """The paper's appendix comparison: the mean pairwise cosine between targets of one question
    (averaged over questions) and the cosine between one random target of each of two different
    random questions (averaged over `n_random` pairs). Rows of each `[m_i, d]` must be unit-norm."""
    if len(target_vectors) < 2:
        raise ValueError(f"random pairs need at least 2 questions, got {len(target_vectors)}")
    rng = np.random.default_rng(seed)
    same = float(mean_pairwise_cosine(target_vectors).mean())
    first = rng.integers(len(target_vectors), size=n_random)
    second = (first + rng.integers(1, len(target_vectors), size=n_random)) % len(target_vectors)
    pick = lambda q: target_vectors[q][rng.integers(len(target_vectors[q]))]
    random_pairs = float(np.mean([pick(a) @ pick(b) for a, b in zip(first, second)]))
    return {"same_question_cos": same, "random_pair_cos": random_pairs}


def low_similarity_subset(similarity: np.ndarray, fraction: float = 1 / 3) -> np.ndarray:
    """Indices of the `fraction` of questions whose targets are least similar to each other
    (paper: the third with the lowest mean pairwise cosine)."""
    n = int(round(fraction * len(similarity)))
    return np.sort(np.argsort(similarity, kind="stable")[:n])
