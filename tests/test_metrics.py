import numpy as np
import pytest

from amer_lib.metrics import mrecall_at_k, pad_clusters, recall_at_k


def test_mrecall_when_all_clusters_fit_in_k():
    gold = pad_clusters([[[1], [2, 3]], [[4], [5]], [[6], [7]]])
    retrieved = np.array([
        [9, 3, 1, 8],  # both clusters hit (cluster 2 by its second document)
        [4, 9, 8, 5],  # both hit, the second at rank 4
        [6, 9, 8, 0],  # one of two
    ])
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
