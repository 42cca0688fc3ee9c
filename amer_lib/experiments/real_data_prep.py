"""Notebook 03: what describes a prepared benchmark. Table 1 (questions and targets per split),
Table 4 (example questions with their answers in the gold documents), the similarity of a
question's targets against random pairs, and the IVF-PQ check (recall against exact search, and
speed) that a 25M-passage corpus needs. The preparation itself is `amer_lib.data.preparation`."""

from __future__ import annotations

import time
import warnings

import numpy as np

from amer_lib.core.index import IVFPQIndex, ShardedFlatIndex, recall_against_exact, training_points_needed
from amer_lib.core.metrics import same_vs_random_cosine
from amer_lib.data.benchmark import SPLITS, Benchmark
from amer_lib.data.encoders import DocumentEncoder
from amer_lib.progress import AmerWarning, Steps


def statistics(benchmark: Benchmark) -> list[dict]:
    """Table 1: questions per split and the mean number of targets in the test set."""
    rows = []
    for dataset in benchmark.datasets:
        train, test = (benchmark.questions(dataset, split) for split in SPLITS)
        rows.append(
            {
                "dataset": dataset,
                "train": len(train),
                "test": len(test),
                "targets": round(float(np.mean([len(q.targets) for q in test])), 2),
            }
        )
    return rows


def example_questions(
    benchmark: Benchmark, per_dataset: int = 1, max_answers: int = 3, snippet: int = 160, seed: int = 0
) -> list[dict]:
    """Table 4: per dataset, `per_dataset` seeded test questions, each with up to `max_answers`
    of its answers (the count of the others noted) and the start of each shown answer's first
    gold document, the answer in **bold**."""
    rng = np.random.default_rng(seed)
    picked = []
    for dataset in benchmark.datasets:
        test = benchmark.questions(dataset, "test")
        picked += [
            (dataset, test[i]) for i in sorted(rng.choice(len(test), min(per_dataset, len(test)), replace=False))
        ]
    wanted = {q.targets[i][0] for _, q in picked for i in range(min(max_answers, len(q.answers)))}
    texts = {doc.id: doc.full_text for doc in benchmark.documents() if doc.id in wanted}
    rows = []
    for dataset, question in picked:
        shown = list(zip(question.answers, question.targets))[:max_answers]
        more = len(question.answers) - len(shown)
        rows.append(
            {
                "Dataset": dataset,
                "Question": question.question,
                "Answers": ", ".join(aliases[0] for aliases, _ in shown) + (f" (+{more} more)" if more else ""),
                "Evidence documents": " ".join(
                    f"[{i + 1}] {_highlight(texts[targets[0]], aliases, snippet)}"
                    for i, (aliases, targets) in enumerate(shown)
                ),
            }
        )
    return rows


def _highlight(text: str, aliases: list[str], width: int) -> str:
    """`text` cut to about `width` characters around the first alias found in it, that alias in bold."""
    alias, start = next(((a, text.find(a)) for a in aliases if a in text), (None, 0))
    begin = text.rfind(" ", 0, max(0, start - width // 2)) + 1 if alias else 0  # at a word's start
    end = min(len(text), begin + width)
    cut = text[begin:end]
    if alias and alias in cut:
        cut = cut.replace(alias, f"**{alias}**", 1)
    return ("[...] " if begin else "") + cut + (" [...]" if end < len(text) else "")


def target_similarity(
    benchmark: Benchmark, encoder: str, split: str = "test", n_random: int = 10_000, seed: int = 0
) -> list[dict]:
    """Cosine between targets of one question vs between targets of two random questions (the
    paper's appendix figure plots it as distance), with the first gold document of each answer."""
    shards = benchmark.embeddings(encoder)
    rows = []
    for number, dataset in enumerate(benchmark.datasets):
        questions = benchmark.questions(dataset, split)
        vectors = [shards.answer_vectors(q) for q in questions]
        found = same_vs_random_cosine(vectors, n_random, seed + number)
        rows.append({"dataset": dataset, **{name: round(value, 3) for name, value in found.items()}})
    return rows


# the paper's numbers, given in the text of its Section 6.3 (real-data results; its appendix figure
# plots the distances): cosine among targets (inf-retriever embeddings)
PAPER_SIMILARITY = [
    {"dataset": "AmbigQA (paper)", "same_question_cos": 0.90, "random_pair_cos": 0.77},
    {"dataset": "QAMPARI (paper)", "same_question_cos": 0.86, "random_pair_cos": 0.74},
]


def index_check(
    benchmark: Benchmark,
    encoder: DocumentEncoder,
    factories: list[str],
    nprobes: list[int],
    k: int = 100,
    seed: int = 0,
    progress: bool = True,
) -> list[dict]:
    """IVF-PQ against exact search, one row per (factory, nprobe): recall of the exact top-k for
    the test questions (each encoded as one query by the document encoder), bytes per document,
    and search time per query beside exact search's, measured in the same run. A factory the corpus
    is too small to train (`training_points_needed`) is skipped with a warning that says so.
    `progress`: a bar with a step for the exact search, then for each factory its training, its
    adding and each nprobe's searches (the offline default's sweep takes minutes on a CPU)."""
    shards = benchmark.embeddings(encoder.spec.name)
    trainable = []
    for factory in factories:
        needed = training_points_needed(factory, shards.dim)
        if len(shards) < needed:
            warnings.warn(
                f"IVF-PQ check of {factory} skipped: the corpus has {len(shards):,} documents and faiss needs "
                f"{needed:,} to train it (an index this size is for larger corpora; exact search suffices here)",
                AmerWarning,
                stacklevel=2,
            )
        else:
            trainable.append(factory)
    factories = trainable
    questions = [q.question for dataset in benchmark.datasets for q in benchmark.questions(dataset, "test")]
    queries = encoder.encode_queries(questions)
    steps = Steps(1 + len(factories) * (2 + len(nprobes)), "IVF-PQ sweep", progress)
    steps.begin("exact search")
    # once: over a 25M-passage corpus exact search streams 77 GB of shards
    exact_ms, (_, exact) = _timed(ShardedFlatIndex(shards).search, queries, k, repeats=1)
    rows = []
    for factory in factories:
        approximate = IVFPQIndex(
            shards, factory, nprobe=nprobes[0], seed=seed, on_phase=lambda name: steps.begin(f"{factory} {name}")
        )
        for nprobe in nprobes:
            steps.begin(f"{factory} nprobe {nprobe}")
            approximate.set_nprobe(nprobe)
            ms, (_, found) = _timed(approximate.search, queries, k)
            rows.append(
                {
                    "index": factory,
                    "nprobe": nprobe,
                    f"recall@{k}_vs_exact": round(recall_against_exact(found, exact), 4),
                    "bytes_per_doc": approximate.code_size,
                    "ms_per_query": round(ms / len(questions), 4),
                    "speedup_vs_exact": round(exact_ms / ms, 1),
                }
            )
    steps.close()
    exact_row = {
        "index": "exact (float16 shards)",
        "nprobe": "-",
        f"recall@{k}_vs_exact": 1.0,
        "bytes_per_doc": 2 * shards.dim,
        "ms_per_query": round(exact_ms / len(questions), 4),
        "speedup_vs_exact": 1.0,
    }
    return [exact_row, *rows]


def _timed(search, queries: np.ndarray, k: int, repeats: int = 3) -> tuple[float, tuple]:
    """Milliseconds of `search(queries, k)` (best of `repeats`) and its result."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        found = search(queries, k)
        times.append(1000 * (time.perf_counter() - began))
    return min(times), found
