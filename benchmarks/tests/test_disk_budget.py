"""The disk budget of docs/paper_scale.md is `benchmarks/disk_budget.py`'s, its totals are the ones the
README and the page quote, and its byte layouts are what the code writes: a shard row is its
dimensions x 2 bytes plus its id's line, the BM25 build's runs hold 12 / 8 of the index's bytes."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from amer_lib.data import bm25
from amer_lib.data.corpus import Document
from amer_lib.data.encoders import encode_corpus

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import disk_budget  # noqa: E402


@pytest.fixture(scope="module")
def budget():
    table = disk_budget.rows()
    return table, disk_budget.totals(table)


def test_the_page_shows_the_scripts_table_and_totals(budget):
    table, totals = budget
    page = (ROOT / "docs" / "paper_scale.md").read_text()
    assert disk_budget.markdown(table) in page
    readme = (ROOT / "README.md").read_text()
    for text in (" ".join(page.split()), " ".join(readme.split())):
        quoted = re.search(r"about ([\d.]+) TB at the peak \(([\d.]+) TB kept at the end\), ([\d.]+) TB of it", text)
        assert quoted, "the totals sentence"
        assert [float(q) for q in quoted.groups()] == [
            round(totals[k] / 1000, 2) for k in ("peak", "all kept", "figure 1's encodings and weights")
        ]
        assert f"without Figure 1 about {totals['without figure 1'] / 1000:.2f} TB" in text


class Fixed:
    """An encoder stand-in with `dim` and fixed vectors."""

    def __init__(self, dim):
        self.dim, self.spec = dim, type("Spec", (), {"name": "fixed"})

    def encode_documents(self, texts, batch_size):
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_a_shard_row_takes_its_dimensions_in_float16_and_its_id_line(tmp_path):
    ids = [f"{17177507 + i}__{i % 10}" for i in range(1000)]  # QAMPARI's "<page>__<chunk>"
    encode_corpus(Fixed(96), [Document(i, "", "text") for i in ids], tmp_path, progress=False)
    vectors, id_lines = (tmp_path / "shard_00000.npy").stat().st_size, (tmp_path / "shard_00000.ids").stat().st_size
    assert vectors - 1000 * 96 * 2 == 128  # the .npy header only
    assert id_lines == 1000 * disk_budget.ID_BYTES


def test_the_bm25_runs_hold_twelve_eighths_of_the_index(tmp_path, monkeypatch):
    """Measured: the runs' files just before the merge against the index's score and document files."""
    merge, runs_bytes = bm25.merge_runs, []

    def measuring_merge(runs, *args):
        runs_bytes.append(sum(p.stat().st_size for p in runs.folder.iterdir()))
        return merge(runs, *args)

    monkeypatch.setattr(bm25, "merge_runs", measuring_merge)
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)]
    texts = [" ".join(rng.choice(words, 30)) for _ in range(400)]
    bm25.write_index(texts, tmp_path, progress=False)
    index = sum(
        np.load(tmp_path / bm25.FILES[f], mmap_mode="r").nbytes for f in ("data", "indices")
    )  # payload, without headers
    assert runs_bytes == [index * 12 // 8]
