"""Notebook 03's corpus and BM25 at scale: bm25s as the mapping used it before issue 39
(`bm25s.tokenize` into Python lists and the index built in memory, the corpus read whole)
beside what it does now (the corpus in a `data.corpus.DocumentStore` on disk, BM25 built in
bounded memory by `data.bm25.write_index`, kept and searched memory-mapped), on synthetic
Wikipedia-sized passages, each variant in a process of its own.

    .venv/bin/python benchmarks/bench_prep.py --docs 1000000 --old   # 7 minutes on 2 cores (11 at load 5)
    .venv/bin/python benchmarks/bench_prep.py --docs 4000000         # the new way alone: 17 minutes (32 at load 5)

The passages are a TSV corpus (id, text, empty title) generated once under build/bench_prep/:
100 words each, drawn independently by their frequency in English (wordfreq's "large" list,
321,180 words, stopwords kept as real text has them: bm25s drops them), so a question's words hold
postings of realistic lengths and many of its scores are exactly zero, as over real passages. The
queries (1,024) are of two profiles, half each: published AmbigQA multi-answer questions as asked,
and QAMPARI-proof-like snippets (a published proof's number of words, drawn from the published
questions' and proofs' words). Results go to `benchmarks/prep.json`: peak resident memory (the
process's maximum, so each stage's includes the ones before it), seconds per stage, milliseconds
per query in one process and spread over every core, and milliseconds per question of the gold
mapping (`map_gold_documents`: the texts of the query's top 500 searched for three of its words),
the same search with equal scores by row (`top_k(ties="row")`) and how many queries' rows it
changes; and per profile (`selection`), milliseconds per query of bm25s's scores and of the top
500's selection three ways on the same scores: bm25s's `topk` (what `top_k` does), the shortcut
`only_order` else `topk` (the same rows, checked), and by row (the same scores, checked).
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
PUBLISHED = ROOT / "tests" / "fixtures" / "published"
WORDS = 100
QUERIES = 1024  # four chunks of `bm25.QUERY_CHUNK`: enough to spread over the cores; half each profile
K = 500


def frequencies() -> tuple[list[str], np.ndarray]:
    """wordfreq's English words (its "large" list: 321,180 words, stopwords and all) and their
    frequencies, summing to one."""
    from wordfreq import get_frequency_dict

    found = get_frequency_dict("en", wordlist="large")
    p = np.fromiter(found.values(), dtype=np.float64, count=len(found))
    return list(found), p / p.sum()


def corpus_file(n: int, seed: int = 0, batch: int = 10_000) -> Path:
    """`n` passages as a TSV corpus (DPR's header; ids 1..n; no titles), written once under build/:
    each `WORDS` words drawn independently by their English frequency."""
    path = SCRATCH / f"passages_{n}.tsv"
    if not path.exists():
        rng = np.random.default_rng(seed)
        vocabulary, p = frequencies()
        cumulative = np.cumsum(p)
        partial = path.with_suffix(".partial")
        with open(partial, "w") as out:
            out.write("id\ttext\ttitle\n")
            for start in range(0, n, batch):
                drawn = np.searchsorted(cumulative, rng.random((min(batch, n - start), WORDS)) * cumulative[-1])
                for number, ranks in enumerate(np.minimum(drawn, len(p) - 1), start + 1):
                    out.write(f"{number}\t{' '.join(vocabulary[r] for r in ranks)}\t\n")
        partial.rename(path)
    return path


def published_queries() -> tuple[list[str], list[str]]:
    """The published AmbigQA multi-answer questions (`dev_light.json`, `train_light.json` whole) and
    the QAMPARI proof snippets of the sample records (all that is published here)."""
    from amer_lib.data.questions import read_ambigqa, read_qampari

    questions = [
        q.question
        for name in ("dev_light", "train_light")
        for q in read_ambigqa(PUBLISHED / "whole" / f"{name}.json.gz")
    ]
    proofs = [
        p["text"]
        for name in ("qampari_dev_data", "qampari_train_data")
        for q in read_qampari(PUBLISHED / f"{name}.sample.jsonl")
        for answer in q.proofs
        for p in answer
    ]
    return questions, proofs


def queries(seed: int = 1) -> dict[str, list[str]]:
    """`QUERIES` queries, half of each profile. "ambigqa": published AmbigQA questions, as asked.
    "qampari": proof-like snippets, each as many words (bm25s's tokens, stopwords dropped) as a
    published proof's, drawn from the words of every published question and proof (QAMPARI's
    published proofs are too few to search as they are)."""
    import bm25s

    rng = np.random.default_rng(seed)
    questions, proofs = published_queries()
    tokens = lambda texts: bm25s.tokenize(texts, stopwords="en", show_progress=False, return_ids=False)
    words = [w for t in tokens(questions + proofs) for w in t]
    lengths = rng.choice([len(t) for t in tokens(proofs)], QUERIES - QUERIES // 2)
    return {
        "ambigqa": [questions[i] for i in rng.choice(len(questions), QUERIES // 2, replace=False)],
        "qampari": [" ".join(rng.choice(words, n)) for n in lengths],
    }


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


def only_order(scores: np.ndarray, k: int) -> np.ndarray | None:
    """The rows of the `k` best `scores`, best first, found among the positive scores, when any
    correct selection gives them (the k best positive, distinct, and above every other score); None
    when equal scores or zeros are among them. Tried as a shortcut to bm25s's own rows (bm25s's
    selection, which scans every score, only when this gives None), and timed here: real
    questions' top 500 hold equal scores nearly always, so it was not kept."""
    positive = np.flatnonzero(scores > 0)
    if k == 0 or len(positive) < k:
        return None
    values = scores[positive]
    if len(positive) > k:  # the k best and the best one left out
        best = np.argpartition(values, len(values) - k - 1)[len(values) - k - 1 :]
        positive, values = positive[best], values[best]
    order = np.argsort(values)[::-1]
    descending = values[order]
    if not np.all(descending[:-1] > descending[1:]):  # a tie among them, or the k-th ties the one after
        return None
    return positive[order[:k]]


def selection(index, asked: list[str]) -> dict:
    """Per query of one profile, in one process: bm25s's scores (`get_scores`), then the top K
    selected by bm25s's numpy `topk` (over every score: `top_k`'s default), by `only_order` or else
    `topk` (the same rows, checked), and with equal scores by row (`select_top_k(ties="row")`: the
    same scores, checked); how many scores are positive, and how many queries `only_order` answers."""
    import bm25s
    from bm25s.selection import topk

    from amer_lib.data.bm25 import select_top_k

    seconds = {"scores": 0.0, "former": 0.0, "new": 0.0, "by_row": 0.0}
    positive, alone, fewer = [], 0, 0
    for query in bm25s.tokenize(asked, stopwords="en", show_progress=False, return_ids=False):
        started = time.perf_counter()
        scores = index.retriever.get_scores(query) if query else np.zeros(index.n_documents, np.float32)
        scored = time.perf_counter()
        former = topk(scores, K, backend="numpy", sorted=True)[1]
        selected = time.perf_counter()
        shortcut = only_order(scores, K)
        new = shortcut if shortcut is not None else topk(scores, K, backend="numpy", sorted=True)[1]
        seconds["scores"] += scored - started
        seconds["former"] += selected - scored
        seconds["new"] += time.perf_counter() - selected
        started = time.perf_counter()
        ordered = select_top_k(scores, K, ties="row")
        seconds["by_row"] += time.perf_counter() - started
        if not np.array_equal(np.sort(scores[ordered])[::-1], scores[former]):
            raise AssertionError(f"by row: not the best scores for {query}")
        if not np.array_equal(former, new):
            raise AssertionError(f"the shortcut's rows differ from bm25s's for {query}")
        positive.append(np.count_nonzero(scores > 0))
        alone += shortcut is not None
        fewer += positive[-1] < K
    return {
        "queries": len(asked),
        **{f"ms_{step}": 1000 * value / len(asked) for step, value in seconds.items()},
        "positive_share": float(np.mean(positive)) / index.n_documents,
        "positive_median": float(np.median(positive)),
        "share_alone": alone / len(asked),
        "share_fewer_than_k": fewer / len(asked),
    }


def run_variant(variant: str, n_docs: int) -> dict:
    """One variant in this process: the corpus read, BM25 built, then searched."""
    import bm25s

    from amer_lib.data.bm25 import Bm25Index
    from amer_lib.data.corpus import Corpus, DocumentStore

    path, profiles = corpus_file(n_docs), queries()
    asked = [q for texts in profiles.values() for q in texts]
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
    started = time.perf_counter()
    by_row = index.top_k(asked, K, progress=False, ties="row")
    timed["row"] = 1000 * (time.perf_counter() - started) / QUERIES
    size = lambda folder: sum(f.stat().st_size for f in folder.iterdir()) / 2**30
    return {
        "selection": {profile: selection(index, texts) for profile, texts in profiles.items()},
        "ms_per_mapped_question": ms_per_mapped_question(asked, store, rows),
        "read_s": read,
        "read_peak_gib": read_peak,
        "build_s": built,
        "peak_gib": build_peak,
        "ms_per_query": timed[1],
        "ms_per_query_all_cores": timed[os.cpu_count()],
        "ms_per_query_by_row": timed["row"],
        "rows_differ_by_row": float(np.mean(np.any(by_row != rows, axis=1))),  # queries whose rows differ
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


def selection_table(recorded: dict) -> str:
    """The Markdown table of the top 500's selection per query profile (`docs/paper_scale.md`; a
    test compares them), from the runs that timed it."""
    lines = [
        "| passages | queries | positive scores (mean share / median) | ms scores | ms selection: former (bm25s) "
        "| shortcut, else bm25s | equal scores by row | shortcut taken |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for docs, results in sorted(recorded.items(), key=lambda item: int(item[0])):
        for profile, r in results["new"].get("selection", {}).items():
            lines.append(
                f"| {int(docs) // 1_000_000}M | {profile} ({r['queries']}) | {100 * r['positive_share']:.1f}% / "
                f"{r['positive_median']:,.0f} | {r['ms_scores']:.1f} | {r['ms_former']:.1f} | {r['ms_new']:.1f} | "
                f"{r['ms_by_row']:.1f} | {100 * r['share_alone']:.1f}% |"
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
