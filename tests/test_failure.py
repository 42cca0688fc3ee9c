import numpy as np
import pytest

from amer_lib.failure import mean_pairwise_distance, per_bin_mrecall, quartile_bins


def test_mean_pairwise_distance_on_known_vectors():
    square = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])  # pairs: 90, 180, 90 degrees
    cosine, euclidean = (mean_pairwise_distance([square], m)[0] for m in ("cosine", "euclidean"))
    assert cosine == pytest.approx((1 + 2 + 1) / 3)
    assert euclidean == pytest.approx((np.sqrt(2) + 2 + np.sqrt(2)) / 3)
    assert mean_pairwise_distance([np.array([[2.0, 0.0], [5.0, 0.0]])], "cosine")[0] == pytest.approx(0.0)


def test_distance_errors_name_the_problem():
    with pytest.raises(ValueError, match="valid: cosine, euclidean"):
        mean_pairwise_distance([np.eye(2)], "manhattan")
    with pytest.raises(ValueError, match="question 0 has 1 target"):
        mean_pairwise_distance([np.ones((1, 3))], "cosine")


def test_quartile_bins_by_hand():
    distances = np.array([0.8, 0.1, 0.4, 0.3, 0.2, 0.6, 0.7, 0.5])
    bins, edges = quartile_bins(distances)
    assert edges.tolist() == pytest.approx([0.275, 0.45, 0.625])
    assert bins.tolist() == [3, 0, 1, 1, 0, 2, 3, 2]
    assert np.bincount(bins, minlength=4).tolist() == [2, 2, 2, 2]


def test_values_on_an_edge_go_to_the_lower_bin_and_every_question_has_one_bin():
    distances = np.array([1.0, 2.0, 2.0, 2.0, 3.0])  # quartiles 2, 2, 2
    bins, _ = quartile_bins(distances)
    assert bins.tolist() == [0, 0, 0, 0, 3]
    rng = np.random.default_rng(0)
    bins, _ = quartile_bins(rng.random(101))
    assert len(bins) == 101 and set(bins.tolist()) == {0, 1, 2, 3}


def test_per_bin_mrecall_by_hand():
    mrecall = np.array([1.0, 0.0, 1.0, 1.0])
    bins = np.array([0, 0, 1, 3])
    sizes = np.array([2, 3, 2, 2])
    rows = {(r["answers"], r["bin"]): r for r in per_bin_mrecall(mrecall, bins, sizes)}
    assert rows["all", "<25%"]["mrecall"] == 50.0 and rows["all", "<25%"]["questions"] == 2
    assert rows[2, "<25%"]["mrecall"] == 100.0 and rows[3, "<25%"]["mrecall"] == 0.0
    assert rows["all", "50-75%"]["questions"] == 0 and np.isnan(rows["all", "50-75%"]["mrecall"])
