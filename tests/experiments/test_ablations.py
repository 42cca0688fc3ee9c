import numpy as np
import pytest

from amer_lib.core.index import VectorIndex, unit_norm
from amer_lib.experiments.ablations import real_sampling_table, sampling_gain_table, vector_count_and_merge


def test_sweep_by_hand():
    # 40 orthogonal documents; the question wants documents 0 and 39. Vector 1 points at 0 but
    # also at 1..20, so 39 (cosine 0) is outside its top 10; vector 2 points at 39.
    corpus = np.eye(40, dtype=np.float32)
    first = np.zeros(40, dtype=np.float32)
    first[0], first[1:21] = 1.0, 0.1
    second = np.zeros(40, dtype=np.float32)
    second[39] = 1.0
    vectors = np.stack([first, second])[None]
    gold = np.array([[[0], [39]]])
    rows = vector_count_and_merge(vectors, VectorIndex(unit_norm(corpus), use_gpu=False), gold, (1, 2))
    by = {(r["n"], r["merge"]): r for r in rows}
    for merge in ("round_robin", "rrf", "max_score"):
        assert (by[(1, merge)]["mrecall@10"], by[(1, merge)]["recall@10"]) == (0.0, 0.5)
        assert by[(1, merge)]["mrecall@100"] == 1.0  # all 40 documents fit in the top 100
    assert by[(2, "round_robin")]["mrecall@10"] == by[(2, "max_score")]["mrecall@10"] == 1.0
    # reciprocal-rank fusion favours documents found by both lists: 1..20 sit high in list 1 and
    # (cosine 0, ties) within ranks 2-40 of list 2, so each beats 39's 1/61 + 1/(60 + 40)
    assert by[(2, "rrf")]["mrecall@10"] == 0.0


def test_one_vector_gives_the_same_list_under_every_merge():
    rng = np.random.default_rng(0)
    corpus = unit_norm(rng.standard_normal((300, 8)))
    vectors = rng.standard_normal((20, 3, 8))
    gold = rng.integers(0, 300, size=(20, 3, 1))
    rows = [r for r in vector_count_and_merge(vectors, VectorIndex(corpus, use_gpu=False), gold, (1,)) if r["n"] == 1]
    assert len({(r["mrecall@10"], r["recall@10"], r["recall@100"]) for r in rows}) == 1


def test_more_vectors_than_generated_is_an_error():
    with pytest.raises(ValueError, match="only 2 vectors were generated"):
        vector_count_and_merge(np.zeros((1, 2, 4)), None, np.zeros((1, 1, 1)), (1, 3))


def test_table3_macro_averages_relative_gains_over_backbones():
    def row(backbone, mode, dataset, whole, low, whole_p=(0.5, 0.5)):
        return {
            "backbone": backbone,
            "sampling": mode,
            "dataset": dataset,
            "whole_delta": whole,
            "low_sim_delta": low,
            "whole_p": whole_p[0],
            "whole_p_behind": whole_p[1],
            "whole_p_two_sided": min(1.0, 2 * min(whole_p)),
            "low_sim_p": 0.001,
            "low_sim_p_behind": 0.999,
            "low_sim_p_two_sided": 0.002,
            "whole_mean": 10.0,
            "low_sim_mean": 5.0,
        }

    rows = [
        row("llama1b", "scheduled", "qampari", 0.10, 1.00),
        row("llama8b", "scheduled", "qampari", 0.30, 2.00),
        row("llama1b", "predicted", "qampari", -0.05, 0.00, whole_p=(0.9995, 0.0005)),
        row("llama8b", "predicted", "qampari", 0.01, 0.50, whole_p=(0.02, 0.98)),
    ]
    table = sampling_gain_table(rows)
    assert table.attrs["backbones"] == ["llama1b", "llama8b"]
    assert table.to_dict("records") == [
        {
            "System": "AMER (scheduled sampling)",
            "qampari (Whole Set)": "+20.00%",
            "qampari (Low Similarity Set)": "+150.00%",
        },
        {
            "System": "AMER (always predicted)",
            "qampari (Whole Set)": "-2.00%",
            "qampari (Low Similarity Set)": "+25.00%",
        },
    ]
    detail = real_sampling_table(rows)
    assert list(detail["Backbone"]) == ["llama1b", "llama8b", "llama1b", "llama8b"]
    # eight comparisons, two-sided p 0.001, 0.002 x 4, 0.04, 1, 1: Holm leaves the first five below 0.05
    assert detail.loc[1, "qampari Low Sim. Δ"] == "+200.00%*"
    assert detail.loc[2, "qampari Whole Δ"] == "-5.00%†" and detail.loc[3, "qampari Whole Δ"] == "+1.00%"
    assert "Holm-corrected across the table's 8 comparisons" in detail.attrs["note"]
