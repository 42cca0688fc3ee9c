"""benchmarks/bench_prep.py at a tiny size: both ways of reading the corpus and building BM25
run, the new one's store and index are written and searched, the selection's ways are timed on
both query profiles, and the passages are Wikipedia-sized with no word in every one."""

import json
import sys
from pathlib import Path

import numpy as np
from bm25s.selection import topk

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_prep  # noqa: E402

from amer_lib.data.corpus import iter_documents  # noqa: E402


def test_both_ways_build_and_search_a_small_corpus(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_prep, "SCRATCH", tmp_path)
    monkeypatch.setattr(bench_prep, "QUERIES", 6)
    old = bench_prep.run_variant("old", 2000)
    new = bench_prep.run_variant("new", 2000)
    assert set(old) == {"read_s", "read_peak_gib", "build_s", "ms_per_query", "peak_gib", "ms_per_mapped_question"}
    assert {"index_gib", "store_gib", "ms_per_query_all_cores"} <= set(new) and new["index_gib"] > 0
    assert set(new["selection"]) == {"ambigqa", "qampari"}
    for profile in new["selection"].values():
        assert profile["queries"] == 3 and profile["ms_former"] > 0 and profile["ms_new"] > 0
        assert 0 < profile["positive_share"] < 1
    documents = list(iter_documents(tmp_path / "passages_2000.tsv"))
    lengths = [len(d.text) for d in documents]
    assert [d.id for d in documents[:2]] == ["1", "2"] and len(lengths) == 2000
    assert 500 < sum(lengths) / len(lengths) < 700  # about a 100-word passage's 640 bytes
    passages = [set(d.text.split()) for d in documents]
    assert all(len(p) > 40 for p in passages) and not set.intersection(*passages)  # no word in every one


def test_the_docs_show_the_recorded_measurements():
    recorded = json.loads((ROOT / "benchmarks" / "prep.json").read_text())
    assert {"1000000", "4000000"} <= set(recorded) and set(recorded["1000000"]) == {"old", "new"}
    docs = (ROOT / "docs" / "paper_scale.md").read_text()
    assert bench_prep.table(recorded) in docs and bench_prep.selection_table(recorded) in docs


def test_the_shortcut_gives_bm25s_rows_when_it_answers():
    """`only_order` (timed against bm25s's selection) answers only when one order is possible, and
    then with bm25s's rows: on score vectors with many equal scores and exact zeros, and by hand."""
    rng = np.random.default_rng(0)
    answered = 0
    for _ in range(300):
        n = int(rng.integers(1, 3000))
        k, positive = int(rng.integers(0, n + 1)), int(rng.integers(0, n + 1))
        scores = np.zeros(n, dtype=np.float32)
        scores[rng.choice(n, positive, replace=False)] = rng.integers(1, int(rng.choice([3, 10**6])), positive)
        if (rows := bench_prep.only_order(scores, k)) is not None:
            answered += 1
            assert np.array_equal(rows, topk(scores, k, backend="numpy", sorted=True)[1])
    assert 20 < answered < 280
    scores = np.array([0, 3, 0, 5, 1, 4, 0], dtype=np.float32)
    assert bench_prep.only_order(scores, 3).tolist() == [3, 5, 1]
    assert bench_prep.only_order(scores, 4).tolist() == [3, 5, 1, 4]  # every positive score, above the zeros
    assert bench_prep.only_order(scores, 5) is None  # a zero would be among them
    assert bench_prep.only_order(np.array([0, 3, 3, 5], dtype=np.float32), 2) is None  # the 2nd ties the 3rd
    assert bench_prep.only_order(np.array([0, 5, 5, 1], dtype=np.float32), 3) is None  # a tie inside
