"""Notebook 03's BM25 at scale: building the index and searching it, bm25s as the mapping used it
before (bm25s.tokenize into Python lists and the index built anew for every search)
beside `data.bm25.Bm25Index` (a token-id stream into int32 arrays, the index saved and memory-mapped
on reuse), on synthetic Wikipedia-sized passages, each variant in a process of its own.

    .venv/bin/python benchmarks/bench_prep.py --docs 1000000 --old   # about 6 minutes on 2 cores, passages written
    .venv/bin/python benchmarks/bench_prep.py --docs 4000000         # the kept index alone: 14 minutes, 12 GiB

The passages are read from a file generated once under build/bench_prep/: 100 words each (600
bytes, about a 100-word Wikipedia passage's 640), drawn from a Zipf distribution (exponent 1.1)
over 2M word types written as letters: real Wikipedia text has a heavier head of stopwords (which
bm25s drops) and a vocabulary of several million types, so the posting lists here are of a
realistic shape but not its exact lengths. Queries: 12-word runs drawn the same way. Results go
to `benchmarks/prep.json` (peak resident memory per process, seconds, milliseconds per query).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SCRATCH = ROOT / "build" / "bench_prep"
VOCABULARY = 2_000_000
WORDS = 100
QUERIES = 200
K = 500


def word(rank: int) -> str:
    letters = []
    rank += 26**4  # five letters and more: 100 words make about 640 bytes, as a Wikipedia passage
    while rank:
        rank, digit = divmod(rank, 26)
        letters.append(chr(97 + digit))
    return "".join(letters)


def words(rng: np.random.Generator, n: int) -> list[str]:
    ranks = np.minimum(rng.zipf(1.1, n), VOCABULARY) - 1
    return [word(int(r)) for r in ranks]


def corpus_file(n: int, seed: int = 0) -> Path:
    """`n` passages, one a line, written once under build/ (kept for reruns)."""
    path = SCRATCH / f"passages_{n}.txt"
    if not path.exists():
        rng = np.random.default_rng(seed)
        partial = path.with_suffix(".partial")
        with open(partial, "w") as out:
            for _ in range(n):
                out.write(" ".join(words(rng, WORDS)) + "\n")
        partial.rename(path)
    return path


def passages(n: int):
    with open(corpus_file(n)) as lines:
        for line in lines:
            yield line.rstrip("\n")


def queries(seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(words(rng, 12)) for _ in range(QUERIES)]


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def run_variant(variant: str, n_docs: int) -> dict:
    """One variant in this process: build (and for the new one save and reload), then search."""
    import bm25s

    from amer_lib.data.bm25 import Bm25Index

    began = time.perf_counter()
    if variant == "old":
        texts = list(passages(n_docs))
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        built = time.perf_counter() - began
        started = time.perf_counter()
        tokens = bm25s.tokenize(queries(), stopwords="en", show_progress=False)
        retriever.retrieve(tokens, k=K, show_progress=False, backend_selection="numpy")
        searched = time.perf_counter() - started
        return {"build_s": built, "ms_per_query": 1000 * searched / QUERIES, "peak_gib": peak_gib()}
    directory = SCRATCH / f"index_{n_docs}"
    index = Bm25Index.build(passages(n_docs), n_docs, progress=False)
    built = time.perf_counter() - began
    index.save(directory, {"docs": n_docs})
    build_peak = peak_gib()
    del index
    started = time.perf_counter()
    index = Bm25Index.load(directory, {"docs": n_docs})
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    index.top_k(queries(), K, progress=False)
    searched = time.perf_counter() - started
    size = sum(f.stat().st_size for f in directory.iterdir())
    return {
        "build_s": built,
        "load_s": loaded,
        "ms_per_query": 1000 * searched / QUERIES,
        "peak_gib": build_peak,
        "index_gib": size / 2**30,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--old", action="store_true", help="also the former way, side by side")
    parser.add_argument("--variant", choices=("old", "new"), help=argparse.SUPPRESS)  # one child process
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.docs)))
        return
    SCRATCH.mkdir(parents=True, exist_ok=True)
    corpus_file(args.docs)
    results = {}
    for variant in (["old"] if args.old else []) + ["new"]:
        command = [sys.executable, __file__, "--docs", str(args.docs), "--variant", variant]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        results[variant] = json.loads(output.strip().splitlines()[-1])
        print(variant, args.docs, results[variant], flush=True)
    path = ROOT / "benchmarks" / "prep.json"
    recorded = json.loads(path.read_text()) if path.exists() else {}
    recorded[str(args.docs)] = results
    path.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
