import numpy as np
import pytest

from amer_lib.core.merge import get_merge, max_score_merge, reciprocal_rank_fusion, round_robin_merge


def reference_round_robin(lists, k):
    merged, seen = [], set()
    for rank in range(max(len(x) for x in lists)):
        for ranked in lists:
            doc = ranked[rank]
            if doc >= 0 and doc not in seen:
                seen.add(doc)
                merged.append(doc)
    merged = merged[:k]
    return merged + [-1] * (k - len(merged))


def test_round_robin_order_and_deduplication():
    ids = np.array([[[10, 11, 12, 13], [11, 20, 10, 21], [30, 10, 31, 32]]])
    assert round_robin_merge(ids, 8).tolist() == [[10, 11, 30, 20, 12, 31, 13, 21]]


def test_round_robin_pads_short_lists_and_skips_faiss_padding():
    ids = np.array([[[1, 2, -1], [2, 1, -1]]])
    assert round_robin_merge(ids, 4).tolist() == [[1, 2, -1, -1]]


def test_round_robin_matches_a_python_reference_on_random_lists():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 30, size=(50, 4, 12))
    expected = [reference_round_robin(row, 20) for row in ids]
    assert round_robin_merge(ids, 20).tolist() == expected


def test_rrf_by_hand():
    # two lists: a ranks 1 and 3 -> 1/61 + 1/63; b ranks 2 and 1 -> 1/62 + 1/61 (higher); c 3 / -
    ids = np.array([[[1, 2, 3], [2, 4, 1]]])
    # scores: b (2) = 1/62 + 1/61 > a (1) = 1/61 + 1/63 > d (4) = 1/62 > c (3) = 1/63
    assert reciprocal_rank_fusion(ids, 4).tolist() == [[2, 1, 4, 3]]


def test_rrf_ties_go_to_the_round_robin_order_and_padding_is_skipped():
    ids = np.array([[[7, -1], [5, 6]]])  # 7 and 5 tie at rank 1; 7 comes first round-robin
    assert reciprocal_rank_fusion(ids, 4).tolist() == [[7, 5, 6, -1]]


def test_max_score_by_hand():
    ids = np.array([[[1, 2, 3], [3, 4, 2]], [[9, 8, -1], [8, 9, 7]]])
    scores = np.array([[[0.9, 0.5, 0.1], [0.95, 0.6, 0.4]], [[0.3, 0.2, -1.0], [0.8, 0.7, 0.1]]])
    # row 0: 3 -> 0.95, 1 -> 0.9, 4 -> 0.6, 2 -> max(0.5, 0.4)
    assert max_score_merge(ids, scores, 4).tolist() == [[3, 1, 4, 2], [8, 9, 7, -1]]


def test_every_merge_returns_distinct_ids_from_the_lists():
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 40, size=(20, 3, 10))
    scores = -np.sort(-rng.random((20, 3, 10)), axis=-1)
    for name in ("round_robin", "rrf", "max_score"):
        merged = get_merge(name)(ids, scores, 15)
        for row, lists in zip(merged, ids):
            kept = row[row >= 0]
            assert len(set(kept.tolist())) == len(kept) == min(15, len(np.unique(lists)))
            assert set(kept.tolist()) <= set(lists.ravel().tolist())


def test_unknown_merge_names_the_choices():
    with pytest.raises(ValueError, match="round_robin, rrf, max_score"):
        get_merge("borda")
