"""TREC run and qrels files as the IR community reads them: ir_measures on the written files gives
the library's Recall@k (one gold document per answer) and a hand-computed nDCG."""

import math

import ir_measures
import numpy as np
import pytest

from amer_lib.core.metrics import evaluate
from amer_lib.io import write_trec_qrels, write_trec_run


def test_ir_measures_reads_the_written_files_as_the_library_scores_them(tmp_path):
    ids = [f"d{i}" for i in range(6)]
    ranked = np.array([[0, 1, 2], [3, 4, 5]])  # corpus rows, best first
    gold = {"q1": ["d1", "d5"], "q2": ["d3"]}  # q1 finds one of its two answers in the top 3, q2 its only one
    write_trec_qrels(tmp_path / "test.qrels", gold)
    write_trec_run(tmp_path / "run.trec", list(gold), [[ids[r] for r in row] for row in ranked], "amer", 3)
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "test.qrels")))
    run = list(ir_measures.read_trec_run(str(tmp_path / "run.trec")))
    measured = ir_measures.calc_aggregate([ir_measures.R @ 3, ir_measures.nDCG @ 3], qrels, run)
    clusters = np.array([[[1], [5]], [[3], [-1]]])  # one gold document per answer, padded with -1
    ours = evaluate(ranked, clusters, (3,))["recall@3"]
    assert ours.tolist() == [0.5, 1.0]
    assert measured[ir_measures.R @ 3] == pytest.approx(ours.mean())
    ndcg_q1 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))  # d1 at rank 2; ideal: both at ranks 1 and 2
    assert measured[ir_measures.nDCG @ 3] == pytest.approx((ndcg_q1 + 1.0) / 2)


def test_qrels_lists_each_relevant_document_once_and_ids_with_spaces_stay_one_field(tmp_path):
    write_trec_qrels(tmp_path / "q.qrels", {"q1": ["a", "b", "a"], "senses:samuel butler": ["n1"]})
    assert (tmp_path / "q.qrels").read_text() == "q1 0 a 1\nq1 0 b 1\nsenses:samuel%20butler 0 n1 1\n"
    write_trec_run(tmp_path / "r.trec", ["senses:samuel butler"], [["n1"]], "a run", 1)
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "q.qrels")))
    run = list(ir_measures.read_trec_run(str(tmp_path / "r.trec")))
    # the spaced qid is found (1.0); q1, absent from the run, counts 0
    assert ir_measures.calc_aggregate([ir_measures.R @ 1], qrels, run)[ir_measures.R @ 1] == 0.5
