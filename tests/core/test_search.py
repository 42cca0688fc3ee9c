import numpy as np
import pytest

from amer_lib.core.search import VectorIndex, kept_lists, kept_search, multi_vector_search, unit_norm


def test_index_search_equals_brute_force():
    rng = np.random.default_rng(1)
    corpus = unit_norm(rng.standard_normal((500, 16)))
    queries = rng.standard_normal((7, 3, 16))
    scores, ids = VectorIndex(corpus, use_gpu=False).search(queries, 5)
    brute = unit_norm(queries) @ corpus.T
    assert ids.shape == (7, 3, 5)
    assert np.array_equal(ids, np.argsort(-brute, axis=-1)[..., :5])
    assert np.allclose(scores, np.sort(brute, axis=-1)[..., ::-1][..., :5], atol=1e-5)


def test_multi_vector_search_merges_each_vectors_list():
    corpus = np.eye(6, dtype=np.float32)
    queries = np.stack([corpus[[0, 3]] + 0.1 * corpus[[1, 4]]])  # two vectors near docs 0 and 3
    assert multi_vector_search(VectorIndex(corpus), queries, 4, depth=2).tolist() == [[0, 3, 1, 4]]


def test_an_adaptive_n_searches_only_the_kept_vectors():
    rng = np.random.default_rng(2)
    corpus = unit_norm(rng.standard_normal((300, 8)))
    queries = rng.standard_normal((5, 4, 8))
    counts = np.array([1, 4, 2, 3, 1])
    scores, ids = kept_search(VectorIndex(corpus), queries, counts, 6)
    full_scores, full_ids = VectorIndex(corpus).search(queries, 6)
    for row, count in enumerate(counts):  # searching fewer vectors is the full search with the rest emptied
        assert np.array_equal(ids[row, :count], full_ids[row, :count])
        assert np.allclose(scores[row, :count], full_scores[row, :count])
        assert (ids[row, count:] == -1).all()
    merged = multi_vector_search(VectorIndex(corpus), queries, 10, depth=6, counts=counts)
    for row, count in enumerate(counts):
        assert (
            merged[row].tolist()
            == multi_vector_search(VectorIndex(corpus), queries[row : row + 1, :count], 10, 6)[0].tolist()
        )
    with pytest.raises(ValueError, match="integers in 1..4"):
        kept_search(VectorIndex(corpus), queries, np.array([0, 1, 1, 1, 1]), 6)


def test_wrong_query_dimension_is_named():
    index = VectorIndex(unit_norm(np.ones((3, 8))))
    with pytest.raises(ValueError, match="dimension 5, but the index holds dimension 8"):
        index.search(np.ones((2, 5)), 1)


def test_index_rejects_vectors_that_are_not_unit_norm():
    with pytest.raises(ValueError, match="unit-norm"):
        VectorIndex(np.full((3, 4), 2.0))


def test_kept_lists_empties_the_vectors_past_each_count():
    ids = np.arange(12).reshape(2, 3, 2)
    kept = kept_lists(ids, np.array([1, 3]))
    assert kept.tolist() == [[[0, 1], [-1, -1], [-1, -1]], [[6, 7], [8, 9], [10, 11]]]
