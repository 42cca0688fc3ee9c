"""Notebook 04's runs: single-query and AMER query encoders on a prepared text benchmark, the
paper's hyperparameter search, and a finished run exported as a model folder.

Each (dataset, system, seed) run trains a query encoder against the frozen document
embeddings, keeps the best checkpoint by validation loss, retrieves the top 100 for every test
question (AMER: its n vectors' lists merged by the run's `merge`, round-robin as in the paper) and
writes a TREC run file and a results JSON with per-question scores, so that the tables, the
bootstrap and the figures are recomputed from files (`amer_lib.report.summaries`). A rerun with
the same parameters reads the results back (`amer_lib.runs.store.REAL_RUNS`). The notebook's other
jobs: the memory preflight (`amer_lib.runs.preflight`), the baselines on the single-query model
(`amer_lib.baselines.runs`), and on a compound benchmark its ceilings and AMER's vector roles
(`amer_lib.beyond.decomposition`, beyond the paper).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from amer_lib.core import distributed
from amer_lib.core.backbones import BackboneUnavailableError, require_weights
from amer_lib.core.device import resolve_device
from amer_lib.core.index import ResidentFlatIndex, ShardedFlatIndex, faiss_sees_gpus, multi_vector_search
from amer_lib.core.merge import PAPER_MERGE
from amer_lib.core.metrics import K, evaluate, low_similarity_subset
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import train
from amer_lib.data.benchmark import Benchmark, draw_options
from amer_lib.data.datasets import TextData
from amer_lib.data.encoders import DocumentEncoder
from amer_lib.data.preparation import PrepConfig, prepared_benchmark, validation_resolution, warn_if_too_few_to_choose
from amer_lib.data.questions import MultiAnswerQuestion, component_texts
from amer_lib.io import require_writable
from amer_lib.runs.configs import SYSTEMS, RealConfig
from amer_lib.runs.dispatch import run_jobs
from amer_lib.runs.preflight import memory_preflight, preflight_without_weights
from amer_lib.runs.query_encoders import generated_vectors, new_query_encoder, text_prompts
from amer_lib.runs.run_context import RealRun, RunContext, cached_result, real_entry
from amer_lib.runs.saved import save_pretrained
from amer_lib.runs.store import REAL_RUNS
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
    """Train, retrieve and score one run (an interrupted one resumes from its checkpoint); `run_all`
    reads the runs made before back instead of calling this. The config is resolved once into the
    run's spec (`RealRun.of`), which the calls below take.

    On every rank of a torch.distributed group (`amer_lib.core.distributed`, with this rank's
    `device`): the ranks train together, rank 0 retrieves and writes, the others return None."""
    device = device or resolve_device(params.device)
    benchmark = Benchmark(params.prepared_dir)  # opened once for the run
    run = RealRun.of(params, benchmark, dataset, system, seed)
    # on a GPU whose FAISS sees it, the index keeps what fits beside the training's projected peak
    on_gpu = device.type == "cuda" and faiss_sees_gpus()
    gpu_peak = (
        memory_preflight(params.for_system(system), benchmark, dataset, progress=False).gpu_peak if on_gpu else None
    )
    return train_and_score(run, benchmark, device, gpu_peak, progress, on_step)


def train_and_score(
    run: RealRun,
    benchmark: Benchmark,
    device: torch.device,
    gpu_peak: int | None = None,
    progress: bool = True,
    on_step: Callable[[], None] | None = None,
) -> dict | None:
    """`run_one` of the resolved `run` on `device`; `gpu_peak`: the training's projected peak GPU
    memory (`memory_preflight`) where the run's index is kept on the GPU (`run_index`)."""
    context = RunContext(benchmark, run.document_encoder, run.encoder.backbone)
    train_questions, val_questions = benchmark.training_split(run.dataset, run.seed, **run.draw)
    questions = train_questions + val_questions
    data = context.training_data(
        questions, mined_negatives=run.mined_negatives, component_vectors=run.component_vectors
    ).to(device)
    train_idx, val_idx = torch.arange(len(train_questions)), torch.arange(len(train_questions), len(data))
    model = new_query_encoder(run.encoder, run.seed, context.shards.dim, device)
    index, curve = None, None
    # the others wait for its validations at the next collective (a checkpoint's, or the next step's all-reduce)
    if distributed.is_main():
        index = run_index(context, device, gpu_peak)
        val_data = data.subset(val_idx.to(device))
        curve = validation_retrieval(context, val_questions, val_data, run.n_queries, index=index, merge=run.merge)
    trained = train(
        model,
        data.subset(train_idx.to(device)),
        data.subset(val_idx.to(device)),
        context.negatives.to(device),
        run.training,
        run_dir=run.stored.folder,
        progress=progress,
        on_step=on_step,
        evaluate=curve,
    )
    if not distributed.is_main():
        return None
    test_questions = benchmark.questions(run.dataset, "test")
    vectors = context.query_vectors(model, test_questions, run.n_queries, device)
    ranked = multi_vector_search(index, vectors, K, depth=max(run.search_depth, K), merge=run.merge)
    return context.write_result(
        run.stored,
        run.dataset,
        run.system,
        run.seed,
        test_questions,
        ranked,
        n_queries=run.n_queries,
        train_seconds=trained.seconds,
        best_step=trained.best_step,
        best_val_loss=trained.best_val_loss,
        history=trained.history,
    )


def run_index(context: RunContext, device: torch.device, gpu_peak: int | None = None) -> ResidentFlatIndex:
    """The exact index a run searches at each validation and at its test, built once per run: on a
    GPU whose FAISS sees it, the shards' float16 blocks that fit beside the training's projected
    peak (`gpu_peak`: `memory_preflight`'s, whose search term is this index's float32 block) are kept
    on it, the rest read from the shards at every search; on the CPU, and on a GPU whose FAISS is the
    CPU build (as `ShardedFlatIndex` does: a small corpus needs no GPU build), every block is read
    from the memory-mapped shards (the page cache keeps them) and made float32 on every core. Both
    return `ShardedFlatIndex`'s rows."""
    if gpu_peak is None or device.type != "cuda" or not faiss_sees_gpus():
        return ResidentFlatIndex(context.shards, "cpu", resident_bytes=0)
    total = torch.cuda.get_device_properties(device).total_memory
    return ResidentFlatIndex(context.shards, device, resident_bytes=max(0, total - gpu_peak))


def validation_retrieval(
    context: RunContext,
    questions: list[MultiAnswerQuestion],
    data: TextData,
    n_queries: int,
    index: ResidentFlatIndex | None = None,
    merge: str = PAPER_MERGE,
) -> Callable[[AMERQueryEncoder], dict]:
    """The learning curves' metric: MRecall@100 of the validation questions (`data`: their
    prompts, tokenised once; fully autoregressive, the run's merge), on all of them and on their
    low-similarity third. `index`: the run's (`run_index`); the shards streamed when None. `merge`:
    the run's (`amer_lib.core.merge.MERGES`)."""
    index = index or ShardedFlatIndex(context.shards)
    gold = context.gold(questions)
    low = low_similarity_subset(context.target_similarity(questions))

    def score(model: AMERQueryEncoder) -> dict:
        vectors = generated_vectors(model, text_prompts(model, data), n_queries)
        ranked = multi_vector_search(index, vectors, K, merge=merge)
        scores = evaluate(ranked, gold, (K,))[f"mrecall@{K}"]
        return {"val_mrecall": float(scores.mean()), "val_mrecall_low_sim": float(scores[low].mean())}

    return score


def ready_benchmark(params: RealConfig, offline_recipe: PrepConfig, progress: bool = True) -> Benchmark:
    """The prepared benchmark the runs need, checked before any training: the backbone's weights are
    on this machine (else the error says what to fetch, and the memory preflight of what they will
    need: `preflight_without_weights`), the datasets are in the benchmark, and the
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
    try:
        require_weights(params.backbone)
    except BackboneUnavailableError as error:  # what the weights will need, said with what to fetch
        raise BackboneUnavailableError(f"{error}\n\n{preflight_without_weights(params, offline_recipe)}") from None
    benchmark = prepared_benchmark(params.prepared_dir, params.datasets, offline_recipe, params.device, progress)
    try:
        benchmark.embeddings(params.encoder)
    except (FileNotFoundError, RuntimeError):  # not encoded with this encoder yet, or interrupted: resume
        require_writable(params.prepared_dir, "prepared_dir")  # the embeddings are written there
        device = None if params.device == "auto" else params.device
        benchmark.encode(DocumentEncoder(params.encoder, device=device), progress=progress)
    return benchmark


def run_all(params: RealConfig, progress: bool = True) -> list[dict]:
    """Every (dataset, system, seed) run (`amer_lib.runs.dispatch.run_jobs`), after the memory
    preflight of the runs still to train; with component_weight > 0, a dataset whose training
    questions have no `answer_questions` at all stops them first (`questions.component_texts`)."""
    benchmark = Benchmark(params.prepared_dir)
    benchmark.check(params.datasets)
    benchmark.check_draw(params.datasets, **draw_options(params))
    if any(params.for_system(s).component_weight > 0 for s in params.systems):  # a split with no component question
        for dataset in params.datasets:
            component_texts(benchmark.questions(dataset, "train"), f" in {benchmark.directory}/{dataset}_train.jsonl")
    jobs = [
        (params, dataset, system, seed)
        for dataset in params.datasets
        for system in params.systems
        for seed in params.seeds
    ]
    entries = {job[1:]: real_entry(*job, benchmark=benchmark) for job in jobs}  # each run's place, found once
    done = {run: entry.cached() for run, entry in entries.items()}  # read (and checked) once
    # a run not made yet is looked for again once the dispatcher has trained it
    cached = lambda params, *run: done[run] if done[run] is not None else entries[run].cached()  # noqa: E731
    for dataset in dict.fromkeys(run[0] for run, result in done.items() if result is None):
        validated = len(benchmark.validation_questions(dataset, params.seeds[0], **draw_options(params)))
        if progress:
            print(f"{dataset}: {validated} validation questions; {validation_resolution(validated)}")
        warn_if_too_few_to_choose(dataset, validated)
        memory_preflight(params, benchmark, dataset, progress)
    multi_vector = lambda job: job[2] != "single"  # noqa: E731
    return run_jobs(run_one, jobs, cached, params.workers, progress, first=multi_vector)


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
    cells = [
        (dataset, point, point_params(params, point, len(benchmark.questions(dataset, "train"))))
        for dataset in params.datasets
        for point in grid_points(grid)
    ]
    if progress:
        print(grid_cost([tuned for _, _, tuned in cells]))
    jobs = [(tuned, dataset, system, seed) for dataset, _, tuned in cells]
    cached = lambda *job: cached_result(*job, benchmark)
    results = run_jobs(run_one, jobs, cached, params.workers, progress)
    rows = []
    for (dataset, point, tuned), result in zip(cells, results):
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


# ----- a finished run as a model folder ----------------------------------------------------------------
def export_run(params: RealConfig, dataset: str, system: str, seed: int, folder: str | Path) -> Path:
    """A finished notebook-04 run's encoder as a self-contained model folder
    (`amer_lib.runs.saved`), its card recording the training data, steps, seed and test scores."""
    context = RunContext.of(params)
    model, result = context.trained_run(params, dataset, system, seed, resolve_device(params.device))
    return save_run(model, result, params, context, (dataset, system, seed), folder)


def save_run(
    model: AMERQueryEncoder,
    result: dict,
    params: RealConfig,
    context: RunContext,
    run: tuple[str, str, int],
    folder: str | Path,
    stop: dict | None = None,
    facts: dict | None = None,
) -> Path:
    """`model`, the encoder of the finished run `(dataset, system, seed)` whose results are
    `result`, as a model folder: its prompt, document encoder, search depth and recipe, and a card
    with the run's training data, steps, seed and test scores (and `facts`); `stop`: its stop
    head's settings (`runs.saved.save_pretrained`)."""
    dataset, system, seed = run
    params = params.for_system(system)
    trained_on = context.training_split(params, dataset, seed)[0]
    card = {
        "trained on": f"{dataset} ({len(trained_on)} questions)",
        "system": system,
        "seed": seed,
        "steps": params.steps,
        "kept step": result["best_step"],
        "test MRecall@100 (%)": round(100 * float(np.mean(result["mrecall"])), 2),
        "test Recall@100 (%)": round(100 * float(np.mean(result["recall"])), 2),
        "git commit": result.get("git_commit"),
    }
    return save_pretrained(
        model,
        folder,
        backbone=params.backbone,
        n_queries=context.n_queries(dataset, system),
        document_encoder=params.encoder,
        prompt=context.prompt.to_json(),
        search_depth=params.search_depth,
        stop=stop,
        recipe=REAL_RUNS.recipe(params),
        facts={**card, **(facts or {})},
    )
