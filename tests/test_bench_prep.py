"""benchmarks/bench_prep.py at a tiny size: both ways of reading the corpus and building BM25
run, the new one's store and index are written and searched, and the passages are Wikipedia-sized."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_prep  # noqa: E402

from amer_lib.data.corpus import iter_documents  # noqa: E402


def test_both_ways_build_and_search_a_small_corpus(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_prep, "SCRATCH", tmp_path)
    monkeypatch.setattr(bench_prep, "QUERIES", 5)
    monkeypatch.setattr(bench_prep, "VOCABULARY", 50_000)
    old = bench_prep.run_variant("old", 2000)
    new = bench_prep.run_variant("new", 2000)
    assert set(old) == {"read_s", "read_peak_gib", "build_s", "ms_per_query", "peak_gib", "ms_per_mapped_question"}
    assert {"index_gib", "store_gib", "ms_per_query_all_cores"} <= set(new) and new["index_gib"] > 0
    documents = list(iter_documents(tmp_path / "passages_2000.tsv"))
    lengths = [len(d.text) for d in documents]
    assert [d.id for d in documents[:2]] == ["1", "2"] and len(lengths) == 2000
    assert 550 < sum(lengths) / len(lengths) < 700  # about a 100-word passage's 640 bytes


def test_the_docs_show_the_recorded_measurements():
    recorded = json.loads((ROOT / "benchmarks" / "prep.json").read_text())
    assert {"1000000", "4000000"} <= set(recorded) and set(recorded["1000000"]) == {"old", "new"}
    assert bench_prep.table(recorded) in (ROOT / "docs" / "paper_scale.md").read_text()
