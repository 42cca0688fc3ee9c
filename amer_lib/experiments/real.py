"""Notebook 04: single-query and AMER query encoders on a prepared text benchmark.

Each (dataset, system, seed) run trains a query encoder against the frozen document
embeddings, keeps the best checkpoint by validation loss, retrieves the top 100 for every test
question (AMER: round-robin over its n vectors) and writes a TREC run file and a results JSON
with per-question scores, so that the tables, the bootstrap and the figures are recomputed
from files (`amer_lib.report.summaries`). A rerun with the same parameters reads the results back
(`amer_lib.runs.store.REAL_RUNS`). The paper's hyperparameter search ends the module.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from amer_lib.core import distributed
from amer_lib.core.backbones import require_weights
from amer_lib.core.device import resolve_device
from amer_lib.core.metrics import (
    K,
    evaluate,
    low_similarity_subset,
)
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.search import ShardedFlatIndex, multi_vector_search
from amer_lib.core.train import train
from amer_lib.data.datasets import TextData
from amer_lib.data.encoders import DocumentEncoder
from amer_lib.data.prepared import Benchmark, PrepConfig, prepare
from amer_lib.data.questions import MultiAnswerQuestion
from amer_lib.progress import tqdm
from amer_lib.runs import torchrun
from amer_lib.runs.configs import SYSTEMS, RealConfig
from amer_lib.runs.models import build_query_encoder, train_config
from amer_lib.runs.parallel import run_parallel
from amer_lib.runs.store import REAL_RUNS, real_run_name
from amer_lib.runs.text import RunContext, cached_result, generated_vectors, query_vectors, run_facts, write_result
from amer_lib.runs.tuning import grid_cost, grid_points, point_params, selected_checkpoint


def run_one(
    params: RealConfig,
    dataset: str,
    system: str,
    seed: int,
    progress: bool = True,
    on_step: Callable[[], None] | None = None,
    device: torch.device | None = None,
) -> dict | None:
    """Train, retrieve and score one run; its results JSON is reused when the params match.

    On every rank of a torch.distributed group (`amer_lib.core.distributed`, with this rank's
    `device`): the ranks train together, rank 0 retrieves and writes, the others return None."""
    cached = cached_result(params, dataset, system, seed)
    if cached is not None:
        return cached
    context = RunContext(params)
    device = device or resolve_device(params.device)
    n_queries = context.n_queries(dataset, system)
    train_questions, val_questions = context.benchmark.training_split(dataset, seed)
    data = context.text_data(train_questions + val_questions).to(device)
    train_idx, val_idx = torch.arange(len(train_questions)), torch.arange(len(train_questions), len(data))
    model = build_query_encoder(params, seed, context.shards.dim, device)
    config = train_config(
        params,
        n_queries,
        seed,
        device,
        group_by_targets=True,
        exclude_fed_targets=params.exclude_fed_targets,
        single_target_step=params.single_target_step,
    )
    curve = validation_retrieval(context, val_questions, data.subset(val_idx.to(device)), n_queries)
    trained = train(
        model,
        data.subset(train_idx.to(device)),
        data.subset(val_idx.to(device)),
        context.negatives.to(device),
        config,
        run_dir=REAL_RUNS.run_dir(
            params, real_run_name(dataset, system, seed), run_facts(context.benchmark, dataset, system)
        ),
        progress=progress,
        on_step=on_step,
        evaluate=curve,
    )
    if not distributed.is_main():
        return None
    test_questions = context.benchmark.questions(dataset, "test")
    vectors = query_vectors(model, context, test_questions, n_queries, device)
    ranked = multi_vector_search(ShardedFlatIndex(context.shards), vectors, K, depth=max(params.search_depth, K))
    return write_result(
        context,
        dataset,
        system,
        seed,
        test_questions,
        ranked,
        n_queries=n_queries,
        train_seconds=trained.seconds,
        best_step=trained.best_step,
        best_val_loss=trained.best_val_loss,
        history=trained.history,
    )


def validation_retrieval(
    context: RunContext, questions: list[MultiAnswerQuestion], data: TextData, n_queries: int
) -> Callable[[AMERQueryEncoder], dict]:
    """The learning curves' metric: MRecall@100 of the validation questions (`data`: their
    prompts, tokenised once; fully autoregressive, round-robin), on all of them and on their
    low-similarity third."""
    index = ShardedFlatIndex(context.shards)
    gold = context.gold(questions)
    low = low_similarity_subset(context.target_similarity(questions))

    def score(model: AMERQueryEncoder) -> dict:
        ranked = multi_vector_search(index, generated_vectors(model, data, n_queries), K)
        scores = evaluate(ranked, gold, (K,))[f"mrecall@{K}"]
        return {"val_mrecall": float(scores.mean()), "val_mrecall_low_sim": float(scores[low].mean())}

    return score


def ready_benchmark(params: RealConfig, offline_recipe: PrepConfig, progress: bool = True) -> Benchmark:
    """The prepared benchmark the runs need, checked before any training: the backbone's weights are
    on this machine (else the error says what to fetch), the datasets are in the benchmark, and the
    corpus is encoded with `encoder`. The offline WordNet benchmark is prepared here when it is
    missing, with `offline_recipe` (notebook 03's defaults: the call notebook 03 makes); any other
    benchmark must come from notebook 03. Notebook 04 must train single-query: its tables compare
    with it."""
    if "single" not in params.systems:
        raise ValueError(
            f"systems {params.systems}: notebook 04's tables measure every system against single-query "
            "(the relative gains, the bootstrap, the baselines built on its model); add 'single' "
            f"(valid systems: {', '.join(SYSTEMS)})"
        )
    require_weights(params.backbone)
    directory = Path(params.prepared_dir)
    if not (directory / "manifest.json").exists():
        offline = [d for d in params.datasets if d.startswith("wordnet_")]
        if offline != params.datasets or offline_recipe.source != "wordnet":
            raise FileNotFoundError(
                f"{directory} holds no prepared benchmark; prepare {params.datasets} with "
                "notebooks/03_real_data_prep.ipynb first (its parameter file for your data)"
            )
        prepare(offline_recipe.replace(prepared_dir=str(directory), device=params.device), progress)
    benchmark = Benchmark(directory)
    benchmark.check(params.datasets)
    try:
        benchmark.embeddings(params.encoder)
    except (FileNotFoundError, RuntimeError):  # not encoded with this encoder yet, or interrupted: resume
        device = None if params.device == "auto" else params.device
        benchmark.encode(DocumentEncoder(params.encoder, device=device), progress=progress)
    return benchmark


def run_all(params: RealConfig, progress: bool = True) -> list[dict]:
    """Every (dataset, system, seed) run: one after the other, in `workers` processes side by side,
    or each trained by `nproc_per_node` processes (torchrun; one GPU each)."""
    jobs = [
        (params, dataset, system, seed)
        for dataset in params.datasets
        for system in params.systems
        for seed in params.seeds
    ]
    Benchmark(params.prepared_dir).check(params.datasets)
    distributed.check_processes(params.nproc_per_node, params.batch_size, params.workers, params.device)
    if params.nproc_per_node > 1:
        for job in jobs:
            if cached_result(*job) is None:
                torchrun.launch(run_one, job[0], job[1:], progress)
        return [cached_result(*job) for job in jobs]
    if params.workers == 1:
        return [run_one(*job, progress=progress) for job in jobs]
    # multi-vector runs first: the longest jobs start early, so no worker idles at the end
    order = sorted(range(len(jobs)), key=lambda i: jobs[i][2] == "single")
    done = run_parallel(
        run_one,
        [(*jobs[i], False) for i in order],
        params.workers,
        len(jobs) * params.steps,
        "training steps",
        progress,
    )
    return [done[order.index(i)] for i in range(len(jobs))]


# ----- the hyperparameter search ---------------------------------------------------------------------
# Notebook 04 runs it when `tuning_grid` is set, e.g. with the paper's grid (appendix A.6) for one
# dataset: `papermill notebooks/04_real_data.ipynb out.ipynb -f params/04_real_data/qampari_llama1b.yaml
# -f params/04_real_data/tuning_qampari.yaml` (`amer_lib.runs.tuning`).


def tune(
    params: RealConfig, grid: dict[str, list], seed: int = 0, system: str = "amer", progress: bool = True
) -> list[dict]:
    """One row per dataset and grid point: the point, its steps, the selected checkpoint's step,
    validation loss and validation MRecall@100 (in %)."""
    benchmark = Benchmark(params.prepared_dir)
    jobs = [
        (dataset, point, point_params(params, point, len(benchmark.questions(dataset, "train"))))
        for dataset in params.datasets
        for point in grid_points(grid)
    ]
    if progress:
        print(grid_cost([tuned for _, _, tuned in jobs]))
    rows = []
    for dataset, point, tuned in tqdm(jobs, desc="tuning grid", disable=not progress):
        result = run_one(tuned, dataset, system, seed, progress=False)
        selected = selected_checkpoint(result)
        rows.append(
            {
                "dataset": dataset,
                **point,
                "steps": tuned.steps,
                "best_step": result["best_step"],
                "val_loss": round(selected["val_loss"], 4),
                "val_mrecall": round(100 * selected["val_mrecall"], 2),
            }
        )
    return rows
