"""Seen vs unseen questions: round-robin MRecall and per-vector recall on hand-made cases."""

import numpy as np
import pytest

from amer_lib.core.index import VectorIndex
from amer_lib.experiments.diversity_analysis import retrieval_row, seen_and_unseen_table


def test_each_vector_finds_one_answer_and_round_robin_finds_both():
    index = VectorIndex(np.eye(4, dtype=np.float32))  # documents 0..3 along the axes
    gold = np.array([[[0], [1]]])  # one question, answers: documents 0 and 1
    apart = np.array([[[1.0, 0, 0.5, 0], [0, 1.0, 0, 0.5]]], dtype=np.float32)  # top 2: (0, 2) and (1, 3)
    row = retrieval_row(apart, index, gold, k=2)
    assert row["per_vector_recall"] == [0.5, 0.5]
    assert row["mrecall"] == 1.0  # round-robin to depth 2 keeps 0 and 1
    copies = np.array([[[1.0, 0, 0.5, 0], [1.0, 0, 0.5, 0]]], dtype=np.float32)
    assert retrieval_row(copies, index, gold, k=2) == {"mrecall": 0.0, "per_vector_recall": [0.5, 0.5]}
    between = np.array([[[1.0, 1.0, 0.1, 0]]], dtype=np.float32)
    assert retrieval_row(between, index, gold, k=2) == {"mrecall": 1.0, "per_vector_recall": [1.0]}


def test_table_averages_seeds_and_keeps_each_vector():
    rows = []
    for seed, (single, amer) in enumerate(((0.4, 0.5), (0.6, 0.7))):
        common = {"backbone": "b", "dataset": "d", "seed": seed, "questions": "test"}
        rows.append({**common, "system": "single", "mrecall": single, "per_vector_recall": [0.8]})
        rows.append({**common, "system": "amer", "mrecall": amer, "per_vector_recall": [0.9, 0.1 * (seed + 1)]})
    [row] = seen_and_unseen_table(rows)
    assert row["seeds"] == 2
    assert row["single_mrecall_mean"] == pytest.approx(50) and row["single_mrecall_std"] == pytest.approx(10)
    assert row["amer_mrecall_mean"] == pytest.approx(60)
    assert row["single_recall"] == pytest.approx(80)
    assert (row["amer_v1_recall"], row["amer_v2_recall"]) == (pytest.approx(90), pytest.approx(15))
