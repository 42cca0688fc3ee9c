"""Notebook 07, beyond the paper: how many query vectors to emit, and how to merge their lists.

The paper fixes n per dataset and merges round-robin; its conclusion names both as open problems.
Here AMER is trained with a stop head (`amer_lib.core.model`, `amer_lib.core.loss.stop_loss`) and
decides n per input, and the lists of its vectors are merged by the coverage-aware merge or by
ranx's fusions (`amer_lib.core.merge`). Searching only the vectors an input keeps is the same as
masking the lists of the others, which is how a kept count is scored here: one search of all
`max_n` vectors serves every fixed n, the adaptive n and every merge.
"""

from __future__ import annotations

import numpy as np

from amer_lib.core.device import resolve_device
from amer_lib.core.merge import RANX_FUSIONS, WEIGHTINGS, get_merge
from amer_lib.core.metrics import KS, K, evaluate, mean_scores
from amer_lib.core.search import ShardedFlatIndex, VectorIndex
from amer_lib.core.train import split_train_validation
from amer_lib.data.synthetic import MAX_TARGETS, SyntheticTask, make_varying_task
from amer_lib.io import git_commit
from amer_lib.runs.configs import RealConfig, SyntheticConfig
from amer_lib.runs.models import generate_queries_until_stop, train_on_task
from amer_lib.runs.store import SYNTHETIC_RUNS
from amer_lib.runs.text import RunContext, query_vectors


def kept_lists(ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """`ids [N, n, K]` with the lists of the vectors past each row's count `[N]` emptied (-1)."""
    return np.where(np.arange(ids.shape[1])[None, :, None] < counts[:, None, None], ids, -1)


def count_rows(
    ids: np.ndarray,
    scores: np.ndarray,
    gold: np.ndarray,
    counts: dict[str, np.ndarray],
    merge: str = "round_robin",
    ks: tuple[int, ...] = KS,
    **merge_options,
) -> list[dict]:
    """MRecall and Recall at `ks` of every fixed n (1 .. n_max) and of every per-row count in
    `counts` (name: `[N]`, e.g. the stop head's and the true number of targets), with the mean
    number of vectors searched; `gold [N, C, D]` padded clusters of corpus rows."""
    merger = get_merge(merge, **merge_options)
    rows = []
    fixed = {f"n = {n}": np.full(len(ids), n) for n in range(1, ids.shape[1] + 1)}
    for name, kept in {**fixed, **counts}.items():
        merged = merger(kept_lists(ids, kept), scores, max(ks))
        rows.append({"n": name, "vectors": float(np.mean(kept)), **mean_scores(evaluate(merged, gold, ks))})
    return rows


def varying_task(params: SyntheticConfig) -> SyntheticTask:
    return make_varying_task(
        dim=params.dim, n_train=params.n_train, n_test=params.n_test, corpus_size=params.corpus_size, seed=params.seed
    )


def varying_run(params: SyntheticConfig, progress: bool = True) -> dict:
    """AMER with a stop head (`params.stop_weight > 0`) trained on the varying task (1 to 8
    targets per input), or read back: its test inputs' true and predicted numbers of targets and
    the MRecall of every fixed n against the stop head's n (round-robin)."""
    if params.stop_weight <= 0:
        raise ValueError(f"the varying task trains a stop head: stop_weight must be > 0, got {params.stop_weight}")
    name = f"varying_linear_amer_seed{params.seed}"
    cached = SYNTHETIC_RUNS.cached(params, name)
    if cached is not None:
        return cached
    device = resolve_device(params.device)
    task = varying_task(params)
    model, trained = train_on_task(params, task, MAX_TARGETS, device, SYNTHETIC_RUNS.run_dir(params, name), progress)
    vectors, predicted = generate_queries_until_stop(model, task.test_inputs, MAX_TARGETS, device)
    scores, ids = VectorIndex(task.corpus).search(vectors, params.search_depth)
    true_counts = (task.test_target_ids >= 0).sum(1)
    rows = count_rows(
        ids, scores, task.test_target_ids[:, :, None], {"stop head": predicted, "true m (told)": true_counts}
    )
    result = dict(
        params=params.as_dict(),
        seed=params.seed,
        git_commit=git_commit(),
        rows=rows,
        true_counts=true_counts.tolist(),
        predicted_counts=predicted.tolist(),
        train_seconds=trained.seconds,
        best_step=trained.best_step,
        best_val_loss=trained.best_val_loss,
        history=trained.history,
    )
    return SYNTHETIC_RUNS.write(params, name, result)


# ----- merges on the real benchmark: picked on validation questions, scored on test ------------
MERGE_GRID: dict[str, list[dict]] = {
    "round_robin": [{}],
    "coverage": [
        dict(temperature=t, diversity=d, weighting=w)
        for t in (0.01, 0.02, 0.05, 0.1)
        for d in (0.5, 1.0)
        for w in WEIGHTINGS
    ],
    **{name: [{}] for name in RANX_FUSIONS},
}


def split_lists(context: RunContext, model, questions: list, n: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The per-vector lists `ids, scores [Q, n, depth]` of n generated vectors per question."""
    device = next(model.parameters()).device
    scores, ids = ShardedFlatIndex(context.shards).search(query_vectors(model, context, questions, n, device), depth)
    return ids, scores


def merge_comparison(
    params: RealConfig, dataset: str, seed: int, n: int, grid: dict[str, list[dict]] = MERGE_GRID
) -> list[dict]:
    """Every merge of `grid` on a trained notebook-04 AMER run's first n vectors: each merge's
    options picked by validation MRecall@100 (the run's held-out training questions), then its
    per-question test MRecall@100 (one row per merge, with the options chosen)."""
    context = RunContext(params)
    model = context.trained_encoder(dataset, "amer", seed, resolve_device(params.device))
    train_questions = context.benchmark.questions(dataset, "train")
    _, val_idx = split_train_validation(len(train_questions), seed)
    splits = {
        "validation": [train_questions[i] for i in val_idx.tolist()],
        "test": context.benchmark.questions(dataset, "test"),
    }
    lists = {split: split_lists(context, model, qs, n, params.search_depth) for split, qs in splits.items()}
    gold = {split: context.gold(qs) for split, qs in splits.items()}

    def scores(split: str, merge: str, options: dict) -> np.ndarray:
        ids, similarity = lists[split]
        return evaluate(get_merge(merge, **options)(ids, similarity, K), gold[split], (K,))[f"mrecall@{K}"]

    rows = []
    for merge, choices in grid.items():
        validation = [float(scores("validation", merge, options).mean()) for options in choices]
        best = int(np.argmax(validation))  # the first of ties
        rows.append(
            dict(
                dataset=dataset,
                seed=seed,
                n=n,
                merge=merge,
                options=choices[best],
                validation_mrecall=validation[best],
                mrecall=scores("test", merge, choices[best]).tolist(),
            )
        )
    return rows
