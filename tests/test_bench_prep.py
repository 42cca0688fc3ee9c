"""benchmarks/bench_prep.py at a tiny size: both ways of building BM25 run, the kept index reads
back and searches, and the passages are Wikipedia-sized."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_prep  # noqa: E402


def test_both_ways_build_and_search_a_small_corpus(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_prep, "SCRATCH", tmp_path)
    monkeypatch.setattr(bench_prep, "QUERIES", 5)
    old = bench_prep.run_variant("old", 2000)
    new = bench_prep.run_variant("new", 2000)
    assert set(old) == {"build_s", "ms_per_query", "peak_gib"}
    assert set(new) == {"build_s", "load_s", "ms_per_query", "peak_gib", "index_gib"} and new["index_gib"] > 0
    lengths = [len(line) for line in (tmp_path / "passages_2000.txt").read_text().splitlines()]
    assert len(lengths) == 2000 and 550 < sum(lengths) / len(lengths) < 700  # about a 100-word passage's 640 bytes
