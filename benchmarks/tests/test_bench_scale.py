"""benchmarks/bench_scale.py at a tiny size: its report holds every operation, the projection's
arithmetic checks out by hand, and the RESULTS.md sections of other scripts survive it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from results_file import write_section  # noqa: E402

SCRIPT = ROOT / "benchmarks" / "bench_scale.py"


def test_write_section_replaces_its_own_section_only(tmp_path):
    path = tmp_path / "RESULTS.md"
    write_section(path, "a", "first a")
    write_section(path, "b", "only b")
    write_section(path, "a", "second a\nwith two lines")
    text = path.read_text()
    assert text.startswith("# Benchmark results")
    assert "first a" not in text and "second a\nwith two lines\n<!-- end a -->" in text
    assert text.index("<!-- begin a -->") < text.index("<!-- begin b -->") and text.count("only b") == 1


@pytest.mark.slow
def test_a_tiny_scale_benchmark_reports_every_operation_and_the_projection(tmp_path):
    results = tmp_path / "RESULTS.md"
    write_section(results, "bench_core", "core timings")
    tiny = ["--sizes", "3000", "6000", "--dims", "32", "--nlist", "16", "--queries", "16", "--encode-count", "8"]
    files = ["--work", str(tmp_path / "work"), "--json", str(tmp_path / "scale.json"), "--out", str(results)]
    files += ["--real-embeddings", str(tmp_path / "none"), "--figure", str(tmp_path / "scale.png")]
    subprocess.run([sys.executable, str(SCRIPT), *tiny, *files], check=True, capture_output=True)
    measured = json.loads((tmp_path / "scale.json").read_text())
    operations = [(r["n"], r["operation"]) for r in measured["index"]]
    for n in (3000, 6000):
        assert [op for size, op in operations if size == n] == [
            "exact search, float16 shards",
            "exact index build, in memory (float32)",
            "exact search, in memory (float32)",
            "IVF16,PQ2 build (train + add)",
            "IVF16,PQ2 search, nprobe 16",
            "IVF16,PQ2 search, nprobe 64",
            "IVF16,PQ2 search, nprobe 256",
            "write float16 shards (synthetic)",
        ]
        recalls = [r["recall"] for r in measured["index"] if r["n"] == n and "recall" in r]
        assert 0 < recalls[0] < 1 and len(set(recalls)) == 1  # nprobe >= 16 lists: every list, the same codes
    assert [r["texts"] for r in measured["encoding"]] == ["WordNet glosses", "100-word passages"]
    assert measured["encoding"][1]["tokens"] > 100  # 100 words are more than 100 word pieces
    text = results.read_text()
    assert "core timings" in text and text.count("<!-- begin bench_scale -->") == 1
    assert "(d) IVF-PQ on real embeddings against the tree vectors: not run (run notebook 03 first)." in text
    assert (tmp_path / "scale.png").stat().st_size > 10_000
    assert "--sizes 3000 6000 --dims 32 --nlist 16" in text
    assert "| float16 shards on disk | N x 1536 x 2 B | 76.8 GB | 307.2 GB |" in text  # 25e6 x 1536 x 2 bytes
    assert "| exact float16 fits on one GPU? on four? | N x 1536 x 2 B vs 80 GB (x4) | no / yes | no / no |" in text
    tokens = measured["encoding"][1]["tokens"]
    hours = 25e6 * 2 * 1.54e9 * tokens / (989e12 * 0.4) / 3600
    assert f"| {hours:.3g} h |" in text  # encoding 25M on one GPU
    before = text
    subprocess.run(
        [sys.executable, str(SCRIPT), "--from-json", str(tmp_path / "scale.json"), "--out", str(results)],
        check=True,
        capture_output=True,
    )
    assert results.read_text() == before  # the report is a function of the measurements


def test_a_dimension_without_whole_pq_bytes_is_refused():
    run = subprocess.run([sys.executable, str(SCRIPT), "--dims", "30"], capture_output=True, text=True)
    assert run.returncode == 2 and "--dims must be multiples of 16" in run.stderr
