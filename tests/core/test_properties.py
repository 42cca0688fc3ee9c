"""Property tests (hypothesis): MRecall@k and Recall@k against their definitions written in plain
Python, over random lists with repeated ids, -1 padding and more gold clusters than k; and the
invariants every merge of the query vectors' lists keeps."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import amer_lib.beyond  # noqa: F401  (registers the merges beyond the paper)
from amer_lib.core.merge import MERGES, round_robin_merge
from amer_lib.core.metrics import mrecall_at_k, pad_clusters, recall_at_k

IDS = st.integers(min_value=0, max_value=25)  # a small id space: repeats and shared documents are common


def plain_scores(retrieved: list[int], clusters: list[list[int]], k: int) -> tuple[float, float]:
    """The paper's definitions (Section 2): a cluster is hit when one of its documents is in the
    top k; MRecall@k is 1 when min(m, k) clusters are hit; Recall@k is the share hit."""
    top = {doc for doc in retrieved[:k] if doc >= 0}
    hit = sum(any(doc in top for doc in cluster) for cluster in clusters)
    return float(hit >= min(len(clusters), k)), hit / len(clusters)


queries = st.lists(
    st.tuples(
        st.lists(st.one_of(IDS, st.just(-1)), min_size=1, max_size=12),  # a ranked list: repeats and -1 allowed
        st.lists(st.lists(IDS, min_size=1, max_size=3), min_size=1, max_size=8),  # clusters: m up to 8 > k
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(queries=queries, k=st.integers(min_value=1, max_value=12))
def test_mrecall_and_recall_are_their_plain_definitions(queries, k):
    width = max(len(r) for r, _ in queries)
    retrieved = np.array([r + [-1] * (width - len(r)) for r, _ in queries])
    gold = pad_clusters([clusters for _, clusters in queries])
    expected = [plain_scores(r, clusters, k) for r, clusters in queries]
    assert mrecall_at_k(retrieved, gold, k).tolist() == [m for m, _ in expected]
    assert np.allclose(recall_at_k(retrieved, gold, k), [r for _, r in expected])


@st.composite
def vector_lists(draw):
    """`ids [N, n, K]`: each vector's list of distinct documents (a search returns each document
    once), -1 past a shorter list; `scores`: falling along each list."""
    rows, n, depth = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 6))
    ids = np.full((rows, n, depth), -1, dtype=np.int64)
    for r in range(rows):
        for v in range(n):
            ranked = draw(st.lists(IDS, min_size=0 if v else 1, max_size=depth, unique=True))
            ids[r, v, : len(ranked)] = ranked
    raw = draw(st.lists(st.floats(-1, 1), min_size=ids.size, max_size=ids.size))
    scores = -np.sort(-np.array(raw).reshape(ids.shape), axis=-1)
    return ids, scores


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(lists=vector_lists(), k=st.integers(1, 10))
def test_every_merge_returns_distinct_listed_documents_then_padding(lists, k):
    ids, scores = lists
    for name, merge in MERGES.items():
        merged = merge.function(ids, scores, k)
        assert merged.shape == (ids.shape[0], k), name
        for row, docs in enumerate(merged):
            listed = {d for d in ids[row].ravel().tolist() if d >= 0}
            found = [d for d in docs.tolist() if d >= 0]
            assert len(found) == len(set(found)) == min(k, len(listed)), (name, row)
            assert set(found) <= listed, (name, row)
            assert docs.tolist() == found + [-1] * (k - len(found)), (name, row)  # padding only at the end


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(lists=vector_lists(), k=st.integers(1, 10))
def test_round_robin_takes_each_vectors_next_unseen_document_in_turn(lists, k):
    ids, _ = lists
    for row, merged in enumerate(round_robin_merge(ids, k)):
        expected, seen = [], set()
        for rank in range(ids.shape[2]):
            for vector in range(ids.shape[1]):
                doc = int(ids[row, vector, rank])
                if doc >= 0 and doc not in seen:
                    seen.add(doc)
                    expected.append(doc)
        assert merged.tolist() == (expected + [-1] * k)[:k]
