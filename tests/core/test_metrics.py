import numpy as np
import pytest

from amer_lib.core.metrics import mrecall_at_k, pad_clusters, recall_at_k


def test_mrecall_when_all_clusters_fit_in_k():
    gold = pad_clusters([[[1], [2, 3]], [[4], [5]], [[6], [7]]])
    retrieved = np.array(
        [
            [9, 3, 1, 8],  # both clusters hit (cluster 2 by its second document)
            [4, 9, 8, 5],  # both hit, the second at rank 4
            [6, 9, 8, 0],  # one of two
        ]
    )
    assert mrecall_at_k(retrieved, gold, 4).tolist() == [1.0, 1.0, 0.0]
    assert mrecall_at_k(retrieved, gold, 3).tolist() == [1.0, 0.0, 0.0]
    assert recall_at_k(retrieved, gold, 4).tolist() == [1.0, 1.0, 0.5]


def test_mrecall_when_clusters_outnumber_k():
    gold = pad_clusters([[[1], [2], [3], [4], [5]], [[1], [2], [3], [4], [5]]])
    retrieved = np.array([[5, 1, 9, 0], [5, 9, 8, 1]])
    # m = 5 > k = 2: the top 2 must hold 2 distinct answers
    assert mrecall_at_k(retrieved, gold, 2).tolist() == [1.0, 0.0]
    assert recall_at_k(retrieved, gold, 2).tolist() == [0.4, 0.2]


def test_padding_ids_never_hit():
    gold = pad_clusters([[[1, 2], [3]]])  # cluster 1 padded with -1
    retrieved = np.array([[-1, -1, 3, 1]])
    assert mrecall_at_k(retrieved, gold, 2).tolist() == [0.0]
    assert mrecall_at_k(retrieved, gold, 4).tolist() == [1.0]


def test_a_query_without_clusters_is_an_error():
    with pytest.raises(ValueError, match="no gold clusters"):
        pad_clusters([[[1]], []])


def test_mean_pairwise_cosine_by_hand():
    from amer_lib.core.metrics import mean_pairwise_cosine

    square = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]])  # cosines 0, -1, 0 over the three pairs
    assert np.allclose(mean_pairwise_cosine([square, square[:2]]), [-1 / 3, 0.0])


def test_low_similarity_subset_takes_the_least_similar_third():
    from amer_lib.core.metrics import low_similarity_subset

    assert low_similarity_subset(np.array([0.9, 0.1, 0.5, 0.2, 0.8, 0.3])).tolist() == [1, 3]


def test_same_vs_random_cosine_by_hand():
    from amer_lib.core.metrics import same_vs_random_cosine

    e = np.eye(3)
    # question 0's targets are both e0, question 1's both e1, question 2's e2 and e2: same-question
    # cosine 1, two random questions' targets orthogonal
    found = same_vs_random_cosine([e[[0, 0]], e[[1, 1]], e[[2, 2]]], n_random=200, seed=0)
    assert found == {"same_question_cos": pytest.approx(1.0), "random_pair_cos": pytest.approx(0.0)}
    mixed = same_vs_random_cosine([e[[0, 1]], e[[0, 1]]], n_random=400, seed=0)
    assert mixed["same_question_cos"] == pytest.approx(0.0) and 0.3 < mixed["random_pair_cos"] < 0.7
    with pytest.raises(ValueError, match="at least 2 questions"):
        same_vs_random_cosine([e[[0, 1]]])


def test_each_refused_input_names_what_is_wrong():
    """The messages in full (a mutated message or list would pass a bare `raises`)."""
    from amer_lib.core.metrics import mean_pairwise_cosine, mean_pairwise_distance

    no_clusters = [[[1]]] + [[] for _ in range(12)]  # queries 1-12 empty: the message lists the first ten
    with pytest.raises(ValueError, match=r"^queries \[1, 2, 3, 4, 5, 6, 7, 8, 9, 10\] have no gold clusters$"):
        pad_clusters(no_clusters)
    gold = np.array([[[1, -1]], [[-1, -1]]])
    with pytest.raises(ValueError, match=r"^queries \[1\] have no gold clusters$"):
        recall_at_k(np.array([[1], [2]]), gold, 1)
    with pytest.raises(ValueError, match=r"^3 retrieved lists for 2 queries$"):
        mrecall_at_k(np.zeros((3, 1), dtype=int), gold, 1)
    with pytest.raises(ValueError, match=r"^question 1 has 1 target\(s\); pairwise similarity needs at least 2$"):
        mean_pairwise_cosine([np.eye(2), np.ones((1, 2))])
    with pytest.raises(ValueError, match=r"^question 0 has 1 target\(s\); a distance needs at least two$"):
        mean_pairwise_distance([np.ones((1, 2))], "euclidean")
    with pytest.raises(ValueError, match=r"^unknown distance 'l1'; valid: cosine, euclidean$"):
        mean_pairwise_distance([np.eye(2)], "l1")
    assert pad_clusters([[[5]], [[1, 2], [3]]]).dtype == np.int64


def test_mean_pairwise_distance_by_hand():
    """A 3-4-5 triangle: Euclidean pairs 5, 4, 3 (mean 4); a two-target question's one pair; the
    cosine distance is one minus the mean pairwise cosine."""
    from amer_lib.core.metrics import mean_pairwise_distance

    triangle = np.array([[0, 0], [3, 4], [0, 4]])  # integers: read as floats
    pair = np.array([[1.0, 0.0], [0.0, 2.0]])
    assert mean_pairwise_distance([triangle, pair], "euclidean").tolist() == pytest.approx([4.0, 5**0.5])
    unit = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])  # cosines 0.6, 0, 0.8: mean 1.4 / 3
    assert mean_pairwise_distance([unit, pair], "cosine").tolist() == pytest.approx([1 - 1.4 / 3, 1.0])


def test_the_low_similarity_third_breaks_ties_by_question_order():
    """40 questions with three similarity values: the 13 lowest are the eight at 0.0 and then the
    first five at 0.1 in question order (a stable sort; numpy's default sort picks others here)."""
    from amer_lib.core.metrics import low_similarity_subset

    levels = [1, 0, 0, 0, 0, 2, 1, 1, 0, 1, 2, 1, 1, 2, 2, 2, 1, 2, 2, 1]
    levels += [2, 2, 2, 1, 2, 0, 1, 2, 2, 1, 1, 0, 1, 1, 2, 2, 0, 2, 1, 1]
    similarity = np.array(levels) / 10
    zeros = [i for i, v in enumerate(levels) if v == 0]
    ones = [i for i, v in enumerate(levels) if v == 1][: 13 - len(zeros)]
    assert low_similarity_subset(similarity).tolist() == sorted(zeros + ones)


def test_same_vs_random_cosine_defaults_are_ten_thousand_pairs_from_seed_0():
    from amer_lib.core.metrics import same_vs_random_cosine

    rng = np.random.default_rng(2)
    vectors = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in rng.standard_normal((5, 3, 4))]
    assert same_vs_random_cosine(vectors) == same_vs_random_cosine(vectors, 10_000, 0)
    assert same_vs_random_cosine(vectors) != same_vs_random_cosine(vectors, 10_000, 1)
    assert same_vs_random_cosine(vectors) != same_vs_random_cosine(vectors, 9_999, 0)


def test_padding_is_minus_one_and_a_long_list_of_empty_questions_is_cut_at_ten():
    from amer_lib.core.metrics import recall_at_k

    assert pad_clusters([[[5]], [[1, 2], [3]]]).tolist() == [[[5, -1], [-1, -1]], [[1, 2], [3, -1]]]
    gold = np.full((13, 1, 1), -1)
    gold[0] = 1
    with pytest.raises(ValueError, match=r"^queries \[1, 2, 3, 4, 5, 6, 7, 8, 9, 10\] have no gold clusters$"):
        recall_at_k(np.ones((13, 1), dtype=int), gold, 1)


def test_random_pairs_draw_every_pair_of_questions_alike():
    """Four questions, one direction each: 0 and 2 share e1, 1 and 3 share e2. Of the three other
    questions a random partner is the one with the same direction a third of the time, so the
    random-pair cosine is 1/3 (a sampler that kept one offset for all pairs would give 0 or 1)."""
    from amer_lib.core.metrics import same_vs_random_cosine

    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    vectors = [np.stack([e, e]) for e in (e1, e2, e1, e2)]
    result = same_vs_random_cosine(vectors)
    assert result["same_question_cos"] == 1.0
    assert abs(result["random_pair_cos"] - 1 / 3) < 0.02  # 10,000 pairs: about four standard deviations


def test_evaluate_scores_every_cut_off_and_mean_scores_averages_them():
    from amer_lib.core.metrics import evaluate, mean_scores

    gold = pad_clusters([[[1], [2]], [[3]]])
    ranked = np.array([[1] + [9] * 99 + [2], [3] + [9] * 100])  # query 0's second cluster only at rank 101
    scores = evaluate(ranked, gold)
    assert list(scores) == ["mrecall@10", "recall@10", "mrecall@100", "recall@100"]
    assert scores["recall@100"].tolist() == [0.5, 1.0] and scores["mrecall@10"].tolist() == [0.0, 1.0]
    assert mean_scores(scores) == {"mrecall@10": 0.5, "recall@10": 0.75, "mrecall@100": 0.5, "recall@100": 0.75}
