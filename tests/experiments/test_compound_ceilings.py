"""AMER's share of the compound benchmark's two ceilings (the trained decomposition oracle and the
off-the-shelf encoder's decomposition) on hand-made means, and the table that names the better."""

import math

import pytest

from amer_lib.beyond.compound_results import compound_table
from amer_lib.beyond.decomposition import METRICS, ceiling_shares


def rows_of(dataset: str, k: int, means: dict[str, tuple[float, float, float]]) -> list[dict]:
    """One row per system with its (MRecall@100, MRecall@10, Recall@100) means."""
    rows = []
    for system, values in means.items():
        row = {"dataset": dataset, "k": k, "system": system, "seeds": 1 if system == "teacher_decomposition" else 2}
        for metric, value in zip(METRICS, values):
            row[f"{metric}_mean"], row[f"{metric}_std"] = value, 0.5
            if system != "single":  # compared with single-query: ahead (p = 0.001 two-sided, marked after Holm)
                row[f"{metric}_p"], row[f"{metric}_p_behind"], row[f"{metric}_p_two_sided"] = 0.0005, 0.9995, 0.001
            else:
                row[f"{metric}_p"] = math.nan
        rows.append(row)
    return rows


def test_the_share_is_taken_against_the_ceiling_of_higher_mrecall_and_the_oracles_kept_beside_it():
    # k = 2: the teacher leads on MRecall@100 (70 against 60) though the oracle leads on Recall@100
    teacher_better = rows_of(
        "compound_k2",
        2,
        {
            "single": (20, 10, 40),
            "amer": (50, 20, 60),
            "decomposition_oracle": (60, 30, 90),
            "teacher_decomposition": (70, 35, 80),
        },
    )
    # k = 3: the oracle leads; the teacher is below single-query on MRecall@10 (no lead: no share)
    oracle_better = rows_of(
        "compound_k3",
        3,
        {
            "single": (10, 8, 30),
            "amer": (20, 9, 40),
            "decomposition_oracle": (40, 12, 70),
            "teacher_decomposition": (30, 5, 50),
        },
    )
    rows = {(r["dataset"], r["system"]): r for r in ceiling_shares(teacher_better + oracle_better)}
    k2, k3 = rows["compound_k2", "amer"], rows["compound_k3", "amer"]
    assert k2["ceiling"] == "teacher_decomposition" and k3["ceiling"] == "decomposition_oracle"
    assert k2["mrecall_ceiling_share"] == pytest.approx(30 / 50)  # (50 - 20) / (70 - 20)
    assert k2["mrecall_oracle_share"] == pytest.approx(30 / 40)
    assert k2["recall_ceiling_share"] == pytest.approx(20 / 40)  # the teacher's, chosen by MRecall@100
    assert k2["recall_oracle_share"] == pytest.approx(20 / 50)
    assert k3["mrecall_ceiling_share"] == k3["mrecall_oracle_share"] == pytest.approx(10 / 30)
    assert k3["mrecall_teacher_share"] == pytest.approx(10 / 20)
    assert math.isnan(k3["mrecall_10_teacher_share"])
    assert all("ceiling" not in r for key, r in rows.items() if key[1] != "amer")

    table = compound_table(list(rows.values()), METRICS)
    amer = table[table["System"] == "AMER"].set_index("k")
    assert amer.loc[2, "better ceiling"] == "off-the-shelf encoder"
    assert amer.loc[3, "better ceiling"] == "trained oracle"
    assert amer.loc[2, "share of better ceiling's lead, MRecall@100"] == "60%"
    assert amer.loc[2, "share of oracle's lead, MRecall@100"] == "75%"
    teacher = table[table["System"] == "Decomposition, off-the-shelf encoder"].set_index("k")
    assert teacher.loc[2, "MRecall@100"] == "70.00*"  # seed-free: one value, no spread
    assert table[table["System"] == "AMER"]["MRecall@100"].tolist() == ["50.00±0.50*", "20.00±0.50*"]


def test_without_either_ceiling_amer_gets_no_share():
    rows = ceiling_shares(rows_of("compound_k2", 2, {"single": (20, 10, 40), "amer": (50, 20, 60)}))
    assert all(not any(key.endswith("_share") for key in row) and "ceiling" not in row for row in rows)


def test_the_teachers_decomposition_merges_each_components_own_list_round_robin(monkeypatch):
    """A hand-made corpus whose lists are known: documents are basis vectors, component A ranks
    them 0, 1, 2, ... and component B 299, 298, ...; merged round-robin to 100, the list is A's
    first 50 and B's first 50, so an answer at B's rank 40 is found and one at its rank 100 is not."""
    from types import SimpleNamespace

    import numpy as np
    import torch

    from amer_lib.beyond import decomposition as experiment
    from amer_lib.core.index import VectorIndex
    from amer_lib.core.metrics import evaluate, pad_clusters
    from amer_lib.runs.configs import RealConfig

    n = 300
    corpus = np.eye(n, dtype=np.float32)
    a, b = np.arange(n, 0, -1, dtype=np.float32), np.arange(1, n + 1, dtype=np.float32)  # A: doc 0 first; B: doc 299
    questions = [SimpleNamespace(qid="q0"), SimpleNamespace(qid="q1")]
    written = {}

    def write_result(params, dataset, system, seed, test, ranked, **details):
        written.update(system=system, seed=seed, ranked=ranked, **details)
        return written

    context = SimpleNamespace(
        benchmark=SimpleNamespace(identity="a prepared benchmark's", questions=lambda dataset, split: questions),
        part_vectors=lambda test: (torch.from_numpy(np.stack([np.stack([a, b])] * 2)), torch.ones(2, 2, dtype=bool)),
        shards=corpus,
        write_result=write_result,
    )
    monkeypatch.setattr(experiment, "RunContext", SimpleNamespace(of=lambda params: context))
    monkeypatch.setattr(experiment, "cached_result", lambda *args: None)
    monkeypatch.setattr(experiment, "ShardedFlatIndex", VectorIndex)
    experiment.teacher_decomposition(RealConfig(device="cpu"), "compound_k2")
    assert written["system"] == experiment.TEACHER and written["seed"] is None and written["n_queries"] == 2
    ranked = written["ranked"]
    assert ranked[0].tolist() == [d for rank in range(50) for d in (rank, n - 1 - rank)]
    gold = pad_clusters([[[10], [260]], [[10], [200]]])  # B's ranks 40 and 100
    scores = evaluate(ranked, gold, (100,))
    assert scores["mrecall@100"].tolist() == [1.0, 0.0] and scores["recall@100"].tolist() == [1.0, 0.5]
