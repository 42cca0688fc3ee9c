"""Seen against unseen questions (notebook 06): does a trained model find the answers of the
questions it was trained on, and of new ones, and which of AMER's vectors find them?

The offline benchmark's AMER trails single-query on its test questions; this separates a method
that cannot represent several answers (low recall on the training questions too) from one that
memorises them and fails to generalise from few training questions (high on training, low on
test). Per-vector recall says whether the later vectors of the sequence carry their share.
"""
from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from .benchmark import N_QUERIES
from .merge import round_robin_merge
from .metrics import mrecall_at_k, recall_at_k
from .real_experiment import K, VALIDATION_FRACTION, RunContext, load_trained, query_vectors
from .search import ShardedFlatIndex
from .synthetic_experiment import resolve_device
from .train import split_train_validation

SYSTEMS = ("single", "amer")


def trained_questions(context: RunContext, dataset: str, seed: int, limit: int) -> list:
    """The first `limit` questions a run of this seed trained on (its validation share left out)."""
    questions = context.benchmark.questions(dataset, "train")
    train_idx, _ = split_train_validation(len(questions), VALIDATION_FRACTION, seed)
    return [questions[i] for i in train_idx.tolist()[:limit]]


def retrieval_row(vectors: np.ndarray, index: ShardedFlatIndex, gold: np.ndarray, k: int = K) -> dict:
    """MRecall@k of the round-robin merge of `vectors [Q, n, d]` and each vector's own Recall@k
    (the share of answers in its top k, as if it were searched alone)."""
    _, ids = index.search(vectors, k)
    return {"mrecall": float(mrecall_at_k(round_robin_merge(ids, k), gold, k).mean()),
            "per_vector_recall": [float(recall_at_k(ids[:, j], gold, k).mean()) for j in range(ids.shape[1])]}


def seen_and_unseen(params: dict, seeds: list[int], limit: int = 600, depths: tuple[int, ...] = (),
                    progress: bool = True) -> list[dict]:
    """For each dataset of a notebook-04 run, seed and system: MRecall@100 and per-vector
    Recall@100 on up to `limit` of its training questions and on its test questions; on the
    test questions also the round-robin MRecall at each of `depths` (`mrecall_at_depth`)."""
    device = resolve_device(params["device"])
    context = RunContext(params)
    index = ShardedFlatIndex(context.shards)
    rows = []
    jobs = [(d, s, system) for d in params["datasets"] for s in seeds for system in SYSTEMS]
    for dataset, seed, system in tqdm(jobs, desc=f"seen vs unseen ({params['backbone']})", disable=not progress):
        model = load_trained(params, dataset, system, seed, context.shards.dim, device)
        n_queries = 1 if system == "single" else N_QUERIES[dataset]
        for split, questions in (("train", trained_questions(context, dataset, seed, limit)),
                                 ("test", context.benchmark.questions(dataset, "test"))):
            vectors = query_vectors(model, context, questions, n_queries, device)
            gold = context.gold(questions)
            row = {"backbone": params["backbone"], "dataset": dataset, "seed": seed, "system": system,
                   "questions": split, "n_questions": len(questions), **retrieval_row(vectors, index, gold)}
            if split == "test" and depths:
                row["mrecall_at_depth"] = {k: retrieval_row(vectors, index, gold, k)["mrecall"] for k in depths}
            rows.append(row)
    return rows


def seen_and_unseen_table(rows: list[dict]) -> list[dict]:
    """Per backbone, dataset and question split: both systems' MRecall@100 (mean and std over
    seeds, %) and AMER's per-vector Recall@100 (mean over seeds, %)."""
    table = []
    for key in dict.fromkeys((r["backbone"], r["dataset"], r["questions"]) for r in rows):
        runs = {system: [r for r in rows if (r["backbone"], r["dataset"], r["questions"]) == key and r["system"] == system]
                for system in SYSTEMS}
        row = {"backbone": key[0], "dataset": key[1], "questions": key[2], "seeds": len(runs["amer"])}
        for system, found in runs.items():
            values = 100 * np.array([r["mrecall"] for r in found])
            row[f"{system}_mrecall_mean"], row[f"{system}_mrecall_std"] = float(values.mean()), float(values.std())
        per_vector = 100 * np.mean([r["per_vector_recall"] for r in runs["amer"]], axis=0)
        row["single_recall"] = float(100 * np.mean([r["per_vector_recall"][0] for r in runs["single"]]))
        row.update({f"amer_v{j + 1}_recall": float(v) for j, v in enumerate(per_vector)})
        table.append(row)
    return table
