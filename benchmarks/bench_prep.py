"""Notebook 03's corpus and BM25 at scale: bm25s as the mapping used it before issue 39
(`bm25s.tokenize` into Python lists and the index built in memory, the corpus read whole)
beside what it does now (the corpus in a `data.corpus.DocumentStore` on disk, BM25 built in
bounded memory by `data.bm25.write_index`, kept and searched memory-mapped), on synthetic
Wikipedia-sized passages, each variant in a process of its own.

    .venv/bin/python benchmarks/bench_prep.py --docs 1000000 --old   # about 10 minutes on 2 cores, passages written
    .venv/bin/python benchmarks/bench_prep.py --docs 4000000         # the new way alone: about 20 minutes

The passages are a TSV corpus (id, text, empty title) generated once under build/bench_prep/:
100 words each (600 bytes, about a 100-word Wikipedia passage's 640), drawn from a Zipf
distribution (exponent 1.1) over 2M word types written as letters: real Wikipedia text has a
heavier head of stopwords (which bm25s drops) and a vocabulary of several million types, so the
posting lists here are of a realistic shape but not its exact lengths. Queries: 12-word runs
drawn the same way. Results go to `benchmarks/prep.json`: peak resident memory (the process's
maximum, so each stage's includes the ones before it), seconds per stage, milliseconds per query
in one process and spread over every core, and milliseconds per question of the gold mapping
(`map_gold_documents`: the texts of the query's top 500 searched for three of its words).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from amer_lib.io import write_text  # noqa: E402

SCRATCH = ROOT / "build" / "bench_prep"
VOCABULARY = 2_000_000
WORDS = 100
QUERIES = 1024  # four chunks of `bm25.QUERY_CHUNK`: enough to spread over the cores
K = 500


def word(rank: int) -> str:
    letters = []
    rank += 26**4  # five letters and more: 100 words make about 640 bytes, as a Wikipedia passage
    while rank:
        rank, digit = divmod(rank, 26)
        letters.append(chr(97 + digit))
    return "".join(letters)


def words(rng: np.random.Generator, shape) -> np.ndarray:
    return np.minimum(rng.zipf(1.1, shape), VOCABULARY) - 1


def corpus_file(n: int, seed: int = 0, batch: int = 10_000) -> Path:
    """`n` passages as a TSV corpus (DPR's header; ids 1..n; no titles), written once under build/."""
    path = SCRATCH / f"passages_{n}.tsv"
    if not path.exists():
        rng = np.random.default_rng(seed)
        vocabulary = [word(rank) for rank in range(VOCABULARY)]
        partial = path.with_suffix(".partial")
        with open(partial, "w") as out:
            out.write("id\ttext\ttitle\n")
            for start in range(0, n, batch):
                for number, ranks in enumerate(words(rng, (min(batch, n - start), WORDS)), start + 1):
                    out.write(f"{number}\t{' '.join(vocabulary[r] for r in ranks)}\t\n")
        partial.rename(path)
    return path


def queries(seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(word(int(r)) for r in ranks) for ranks in words(rng, (QUERIES, 12))]


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def ms_per_mapped_question(asked: list[str], corpus, rows: np.ndarray) -> float:
    """The gold mapping of each query's top K (its first three words as three answers, each held
    by many of its candidates) over the corpus as the variant holds it."""
    from amer_lib.data.gold import map_gold_documents
    from amer_lib.data.questions import MultiAnswerQuestion

    questions = [MultiAnswerQuestion(str(i), q, [[w] for w in q.split()[:3]]) for i, q in enumerate(asked)]
    started = time.perf_counter()
    map_gold_documents(questions, corpus, list(rows))
    return 1000 * (time.perf_counter() - started) / len(questions)


def run_variant(variant: str, n_docs: int) -> dict:
    """One variant in this process: the corpus read, BM25 built, then searched."""
    import bm25s

    from amer_lib.data.bm25 import Bm25Index
    from amer_lib.data.corpus import Corpus, DocumentStore

    path, asked = corpus_file(n_docs), queries()
    began = time.perf_counter()
    if variant == "old":
        corpus = Corpus.read(path)
        read, read_peak = time.perf_counter() - began, peak_gib()
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(corpus.texts(), stopwords="en", show_progress=False), show_progress=False)
        built = time.perf_counter() - began - read
        started = time.perf_counter()
        tokens = bm25s.tokenize(asked, stopwords="en", show_progress=False)
        rows = retriever.retrieve(tokens, k=K, show_progress=False, backend_selection="numpy")[0]
        searched = time.perf_counter() - started
        return {
            "ms_per_mapped_question": ms_per_mapped_question(asked, corpus, rows),
            "read_s": read,
            "read_peak_gib": read_peak,
            "build_s": built,
            "peak_gib": peak_gib(),
            "ms_per_query": 1000 * searched / QUERIES,
        }
    key = {"docs": n_docs}
    store = DocumentStore.of_corpus(path, SCRATCH / f"store_{n_docs}", key, progress=False)
    read, read_peak = time.perf_counter() - began, peak_gib()
    index = Bm25Index.of_corpus(store.texts(), len(store), SCRATCH / f"index_{n_docs}", key, progress=False)
    built = time.perf_counter() - began - read
    build_peak = peak_gib()
    timed = {}
    for processes in (1, os.cpu_count()):
        started = time.perf_counter()
        rows = index.top_k(asked, K, progress=False, processes=processes)
        timed[processes] = 1000 * (time.perf_counter() - started) / QUERIES
    size = lambda folder: sum(f.stat().st_size for f in folder.iterdir()) / 2**30
    return {
        "ms_per_mapped_question": ms_per_mapped_question(asked, store, rows),
        "read_s": read,
        "read_peak_gib": read_peak,
        "build_s": built,
        "peak_gib": build_peak,
        "ms_per_query": timed[1],
        "ms_per_query_all_cores": timed[os.cpu_count()],
        "cores": os.cpu_count(),
        "index_gib": size(SCRATCH / f"index_{n_docs}"),
        "store_gib": size(SCRATCH / f"store_{n_docs}"),
    }


def table(recorded: dict) -> str:
    """The Markdown table `docs/paper_scale.md` shows (a test compares them)."""
    lines = [
        "| passages | way | read (s) | build (s) | peak memory (GiB) | on disk (GiB) | ms per query (one core / all) "
        "| ms per mapped question |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ways = {"old": "former (strings in memory, bm25s's build)", "new": "store + bounded build, kept"}
    for docs, results in sorted(recorded.items(), key=lambda item: int(item[0])):
        for variant, r in sorted(results.items(), key=lambda item: item[0] != "old"):
            disk = f"{r['store_gib'] + r['index_gib']:.2f}" if "index_gib" in r else "-"
            query = f"{r['ms_per_query']:.1f}" + (f" / {r['ms_per_query_all_cores']:.1f}" if variant == "new" else "")
            lines.append(
                f"| {int(docs) // 1_000_000}M | {ways[variant]} | {r['read_s']:.1f} | {r['build_s']:.1f} | "
                f"{r['peak_gib']:.2f} | {disk} | {query} | {r['ms_per_mapped_question']:.1f} |"
            )
    return "\n".join(lines)


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
        for kept in (SCRATCH / f"store_{args.docs}", SCRATCH / f"index_{args.docs}"):
            shutil.rmtree(kept, ignore_errors=True)  # built anew, not read back from an earlier run
        command = [sys.executable, __file__, "--docs", str(args.docs), "--variant", variant]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        results[variant] = json.loads(output.strip().splitlines()[-1])
        print(variant, args.docs, results[variant], flush=True)
    path = ROOT / "benchmarks" / "prep.json"
    recorded = json.loads(path.read_text()) if path.exists() else {}
    recorded[str(args.docs)] = results
    write_text(path, json.dumps(recorded, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
