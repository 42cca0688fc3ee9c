"""The failure analysis of Section 3 (Figure 1): does an off-the-shelf retriever's MRecall@100
fall as the targets of a question move apart?

Per question, the mean distance (cosine distance 1 - cos, and Euclidean) over all pairs of its
targets' document embeddings (the first gold document of each answer, embedded by the
retriever's own document encoder); the test set is cut into four bins at the distance's
quartiles (< 25%, 25-50%, 50-75%, > 75%), and MRecall@100 is reported per bin, on the whole set
and per answer-set size (each cut at its own quartiles). Retrievers: BM25 and every dense
encoder of `amer_lib.data.encoders.ENCODERS`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from amer_lib.core.index import ShardedFlatIndex
from amer_lib.core.metrics import DISTANCES, K, evaluate, mean_pairwise_distance, pad_clusters
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.bm25 import Bm25Index
from amer_lib.data.corpus import Corpus
from amer_lib.data.encoders import RETRIEVERS, DocumentEncoder, EmbeddingShards
from amer_lib.data.questions import MultiAnswerQuestion
from amer_lib.io import git_commit, write_json, write_trec_run
from amer_lib.runs.configs import FailureConfig
from amer_lib.runs.store import kept_json, trec_as_written

BIN_LABELS = ("<25%", "25-50%", "50-75%", ">75%")


def quartile_bins(distances: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bin index 0..3 of every question and the three edges (the 25/50/75% quantiles). A value
    equal to an edge goes to the lower bin, so every question is in exactly one bin."""
    edges = np.quantile(np.asarray(distances, dtype=np.float64), [0.25, 0.5, 0.75])
    return np.searchsorted(edges, distances, side="left"), edges


# ----- answer-set-size columns --------------------------------------------------------------------
def answer_groups(sizes: np.ndarray, min_questions: int) -> list[tuple[str, np.ndarray]]:
    """Columns of the figure beside "all": answer-set sizes in increasing order, a size with
    fewer than `min_questions` questions merged with the next (and a short tail into the last
    column), so that each column's four bins hold enough questions to read. Returns (label,
    bool mask) pairs; labels are "3", "5-6" or ">=9" for a tail."""
    sizes = np.asarray(sizes)
    values = sorted(set(sizes.tolist()))
    groups, current = [], []
    for position, value in enumerate(values):
        current.append(value)
        rest = np.isin(sizes, values[position + 1 :]).sum()
        if np.isin(sizes, current).sum() >= min_questions and rest >= min_questions:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    labels = [str(g[0]) if len(g) == 1 else f"{g[0]}-{g[-1]}" for g in groups]
    if len(groups[-1]) > 1:
        labels[-1] = f">={groups[-1][0]}"
    return [(label, np.isin(sizes, group)) for label, group in zip(labels, groups)]


def per_bin_mrecall(
    mrecall: np.ndarray, distances: np.ndarray, sizes: np.ndarray, min_questions: int = 40
) -> list[dict]:
    """Rows of (answers: "all" or a size group, bin, questions, mean distance, MRecall in %): the
    figure's data. Each column is cut at its own quartiles, so its four bins are even, as in the
    paper's "partition the dataset evenly into four subsets"."""
    mrecall, distances = np.asarray(mrecall, dtype=np.float64), np.asarray(distances, dtype=np.float64)
    rows = []
    everyone = np.ones(len(mrecall), dtype=bool)
    for label, members in [("all", everyone), *answer_groups(sizes, min_questions)]:
        bins, _ = quartile_bins(distances[members])
        for b, bin_label in enumerate(BIN_LABELS):
            chosen = bins == b
            rows.append(
                {
                    "answers": label,
                    "bin": bin_label,
                    "questions": int(chosen.sum()),
                    "distance": float(distances[members][chosen].mean()) if chosen.any() else float("nan"),
                    "mrecall": float(100 * mrecall[members][chosen].mean()) if chosen.any() else float("nan"),
                }
            )
    return rows


# ----- off-the-shelf retrieval ----------------------------------------------------------------
def check_retriever(name: str) -> str:
    if name not in RETRIEVERS:
        raise ValueError(f"unknown retriever {name!r}; valid retrievers: {', '.join(RETRIEVERS)}")
    return name


def document_embeddings(
    benchmark: Benchmark, encoder: str, device: str | None = None, progress: bool = True
) -> EmbeddingShards:
    """The benchmark's corpus embedded by `encoder`: read back if complete, else encoded (or an
    interrupted encoding resumed) first."""
    try:
        return benchmark.embeddings(encoder)
    except (FileNotFoundError, RuntimeError):
        return benchmark.encode(DocumentEncoder(encoder, device=device), progress=progress)


def retrieve(
    benchmark: Benchmark,
    retriever: str,
    questions: list[MultiAnswerQuestion],
    k: int = K,
    device: str | None = None,
    progress: bool = True,
) -> list[list[str]]:
    """The top-k document ids of each question: BM25 (bm25s over the corpus text) or a dense
    encoder (its query instruction, exact search over its embeddings of the corpus)."""
    texts = [q.question for q in questions]
    if check_retriever(retriever) == "bm25":
        corpus = Corpus.read(benchmark.corpus_path)
        index = Bm25Index.build(corpus.texts(), len(corpus), progress)
        return [[corpus.documents[r].id for r in row] for row in index.top_k(texts, k, progress)]
    shards = document_embeddings(benchmark, retriever, device, progress)
    queries = DocumentEncoder(retriever, device=device).encode_queries(texts)
    _, rows = ShardedFlatIndex(shards).search(queries, k)
    return [[shards.ids[r] for r in row if r >= 0] for row in rows]


def score(ranked_ids: list[list[str]], questions: list[MultiAnswerQuestion], k: int = K) -> np.ndarray:
    """Per-question MRecall@k of ranked document ids against each answer's gold documents."""
    number = {}
    index = lambda doc_id: number.setdefault(doc_id, len(number))
    gold = pad_clusters([[[index(d) for d in docs] for docs in q.targets] for q in questions])
    width = max(k, max(map(len, ranked_ids), default=0))
    ranked = np.full((len(ranked_ids), width), -1, dtype=np.int64)
    for row, ids in enumerate(ranked_ids):
        known = [number.get(d, -1) for d in ids]  # a document no gold list holds can never hit
        ranked[row, : len(known)] = known
    return evaluate(ranked, gold, (k,))[f"mrecall@{k}"]


def target_distances(shards: EmbeddingShards, questions: list[MultiAnswerQuestion]) -> dict[str, np.ndarray]:
    """Both distances of every question, over the first gold document of each answer."""
    vectors = [shards.answer_vectors(q) for q in questions]
    return {metric: mean_pairwise_distance(vectors, metric) for metric in DISTANCES}


def failure_run(
    benchmark: Benchmark,
    dataset: str,
    retriever: str,
    results_dir: str | Path,
    bm25_distance_encoder: str = "minilm",
    k: int = K,
    device: str | None = None,
    progress: bool = True,
) -> dict:
    """One retriever on one dataset's test questions: per-question MRecall@k, answer-set size and
    target distances (in the retriever's own document embeddings; BM25 has none, so its targets
    are embedded by `bm25_distance_encoder`). Writes `<dataset>_<retriever>.json` and `.trec` to
    `results_dir`, and reads them back when they were made from the same benchmark and settings."""
    distance_encoder = bm25_distance_encoder if check_retriever(retriever) == "bm25" else retriever
    settings = {
        "prepared_dir": str(benchmark.directory),
        "dataset": dataset,
        "retriever": retriever,
        "distance_encoder": distance_encoder,
        "k": k,
    }
    path = Path(results_dir) / f"{dataset}_{retriever}.json"
    if (kept := _kept_run(path, settings)) is not None:
        return kept
    questions = benchmark.questions(dataset, "test")
    ranked_ids = retrieve(benchmark, retriever, questions, k, device, progress)
    qids, tag = [q.qid for q in questions], f"{dataset}_{retriever}"
    trec = write_trec_run(path.with_suffix(".trec"), qids, ranked_ids, tag, K)
    distances = target_distances(document_embeddings(benchmark, distance_encoder, device, progress), questions)
    run = {
        "settings": settings,
        "trec_sha256": trec,
        "git_commit": git_commit(),
        "qids": [q.qid for q in questions],
        "answers": [len(q.targets) for q in questions],
        "mrecall": score(ranked_ids, questions, k).tolist(),
        **{metric: values.tolist() for metric, values in distances.items()},
    }
    write_json(path, run)
    return run


def _kept_run(path: Path, settings: dict) -> dict | None:
    """The run written at `path` from the same `settings`, with its TREC run as it was written;
    None where there is none, and, said with the file's path, where either file is damaged or
    unchecked (written before runs kept their TREC run's sha256): the run is then made again."""
    run = kept_json(path)
    if run is None or run.get("settings") != settings:
        return None
    return run if trec_as_written(path.with_suffix(".trec"), run.get("trec_sha256")) else None


def figure1_rows(runs: list[dict], distance: str, min_questions: int = 40) -> list[dict]:
    """The rows of Figure 1 for every run: dataset, retriever, answers, bin, questions, mean
    distance and MRecall in %."""
    if distance not in DISTANCES:
        raise ValueError(f"unknown distance {distance!r}; valid: {', '.join(DISTANCES)}")
    rows = []
    for run in runs:
        for row in per_bin_mrecall(run["mrecall"], run[distance], run["answers"], min_questions):
            rows.append({"dataset": run["settings"]["dataset"], "retriever": run["settings"]["retriever"], **row})
    return rows


def bin_agreement(run: dict) -> float:
    """Fraction of questions that the cosine and the Euclidean distance put in the same quartile."""
    return float(np.mean(quartile_bins(np.array(run["cosine"]))[0] == quartile_bins(np.array(run["euclidean"]))[0]))


def trends(runs: list[dict], rows: list[dict], distance: str) -> list[dict]:
    """What Figure 1 shows, per dataset and retriever: MRecall in the nearest and the farthest
    quartile of the whole set, whether it falls bin by bin, how many answer-size columns fall
    from first to last bin, and Spearman's rho between target distance and per-question MRecall."""
    from scipy.stats import spearmanr

    out = []
    for run in runs:
        dataset, retriever = run["settings"]["dataset"], run["settings"]["retriever"]
        mine = [r for r in rows if r["dataset"] == dataset and r["retriever"] == retriever]
        curve = lambda answers: [r["mrecall"] for r in mine if r["answers"] == answers]
        whole = curve("all")
        columns = [curve(a) for a in dict.fromkeys(r["answers"] for r in mine) if a != "all"]
        out.append(
            {
                "dataset": dataset,
                "retriever": retriever,
                "mrecall": 100 * float(np.mean(run["mrecall"])),
                "nearest": whole[0],
                "farthest": whole[-1],
                "monotone": bool(np.all(np.diff(whole) <= 0)),
                "size_columns_falling": f"{sum(c[-1] < c[0] for c in columns)}/{len(columns)}",
                "spearman": float(spearmanr(run[distance], run["mrecall"]).statistic),
                "cos_euclid_same_bin": bin_agreement(run),
            }
        )
    return out


def failure_runs(benchmark: Benchmark, params: FailureConfig) -> list[dict]:
    """`failure_run` of every dataset and retriever of notebook 01's config."""
    device = None if params.device == "auto" else params.device
    return [
        failure_run(benchmark, dataset, retriever, params.results_dir, params.bm25_distance_encoder, device=device)
        for dataset in params.datasets
        for retriever in params.retrievers
    ]


def overall_rows(runs: list[dict]) -> list[dict]:
    """Per dataset and retriever: its questions and MRecall@100 (%) on the whole set."""
    return [
        {
            "dataset": r["settings"]["dataset"],
            "retriever": r["settings"]["retriever"],
            "questions": len(r["mrecall"]),
            "MRecall@100 (%)": round(100 * sum(r["mrecall"]) / len(r["mrecall"]), 2),
        }
        for r in runs
    ]


def trend_lines(readings: list[dict]) -> list[str]:
    """`trends` in words: does MRecall@100 fall from the nearest to the farthest quartile."""
    lines = []
    for r in readings:
        verdict = "falls" if r["farthest"] < r["nearest"] else "does not fall"
        lines.append(
            f"{r['dataset']:15s} {r['retriever']:22s}: MRecall@100 {verdict} from {r['nearest']:.1f}% (nearest "
            f"quartile) to {r['farthest']:.1f}% (farthest){', bin by bin' if r['monotone'] else ''}; "
            f"falls in {r['size_columns_falling']} answer-size columns; Spearman rho = {r['spearman']:+.3f}"
        )
    return lines
