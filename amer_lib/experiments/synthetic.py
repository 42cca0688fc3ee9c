"""Notebook 02: train and evaluate single-query and AMER on the six synthetic settings.

Each (transform, setting, system) run writes one results JSON; a rerun with the same
parameters loads it instead of training again, and an interrupted training resumes from its
checkpoint (`amer_lib.runs.store.SYNTHETIC_RUNS`). Settings can run in parallel worker processes
(`amer_lib.runs.parallel`). The MLP sweep at the end of the module asks where single-query's
failure on MLP targets begins.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from amer_lib.core import distributed
from amer_lib.core.device import resolve_device
from amer_lib.core.index import VectorIndex, multi_vector_search, unit_norm
from amer_lib.core.merge import PAPER_MERGE
from amer_lib.core.metrics import KS, evaluate, mean_scores
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import TrainResult, split_train_validation, train
from amer_lib.data.datasets import VectorData
from amer_lib.data.synthetic_task import N_TARGETS, SyntheticTask, task_from_params
from amer_lib.io import git_commit
from amer_lib.progress import report_done_before
from amer_lib.runs.configs import SyntheticConfig
from amer_lib.runs.dispatch import run_jobs
from amer_lib.runs.query_encoders import (
    build_query_encoder,
    generated_vectors,
    load_trained,
    train_config,
    vector_prompts,
)
from amer_lib.runs.saved import save_pretrained
from amer_lib.runs.store import SYNTHETIC_RUNS, synthetic_run_name
from amer_lib.runs.tuning import grid_cost, grid_points, point_params, selected_checkpoint

METRIC_COLUMNS = tuple(f"{name}@{k}" for k in KS for name in ("mrecall", "recall"))


def trained_synthetic_encoder(
    params: SyntheticConfig, transform: str, setting: str, device: torch.device
) -> AMERQueryEncoder:
    """The AMER encoder of a finished notebook-02 run of these parameters, with its kept weights."""
    name = synthetic_run_name(transform, setting, "amer", params.seed)
    return load_trained(SYNTHETIC_RUNS, params, name, params.dim, device)[0]


def export_run(params: SyntheticConfig, transform: str, setting: str, system: str, folder: str | Path) -> Path:
    """A finished notebook-02 run's encoder as a self-contained model folder (`amer_lib.runs.saved`),
    its card recording the task, steps, seed and test scores."""
    name = synthetic_run_name(transform, setting, system, params.seed)
    model, result = load_trained(SYNTHETIC_RUNS, params, name, params.dim, resolve_device(params.device))
    facts = {
        "trained on": f"the synthetic task: {transform} targets, setting {setting}, {params.n_train} inputs",
        "system": system,
        "seed": params.seed,
        "steps": params.steps,
        "kept step": result["best_step"],
        **{f"test {metric} (%)": round(100 * value, 2) for metric, value in result["metrics"].items()},
        "git commit": result.get("git_commit"),
    }
    return save_pretrained(
        model,
        folder,
        backbone=params.backbone,
        n_queries=result["n_queries"],
        backbone_overrides=params.backbone_overrides or None,
        recipe=SYNTHETIC_RUNS.recipe(params),
        facts=facts,
    )


def task_data(task: SyntheticTask, device: torch.device) -> tuple[VectorData, torch.Tensor]:
    """A synthetic task's training examples and the pool their negatives are drawn from (no test
    target); a target id of -1 is no target (the varying task)."""
    corpus = torch.from_numpy(task.corpus).to(device)
    ids = torch.from_numpy(task.train_target_ids).to(device)
    data = VectorData(torch.from_numpy(task.train_inputs).to(device), corpus[ids.clamp(min=0)], ids >= 0)
    return data, corpus[torch.from_numpy(task.training_negative_ids).to(device)]


def train_on_task(
    params: SyntheticConfig,
    task: SyntheticTask,
    n_outputs: int,
    device: torch.device,
    run_dir: Path,
    progress: bool = True,
    on_step: Callable[[], None] | None = None,
) -> tuple[AMERQueryEncoder, TrainResult]:
    """A fresh encoder of `params` trained on a synthetic task's training inputs (10% held out
    for validation), with its kept weights, and the training's record."""
    data, negative_pool = task_data(task, device)
    train_idx, val_idx = split_train_validation(len(data), params.seed)
    model = build_query_encoder(params, params.seed, params.dim, device)
    config = train_config(params, n_outputs, params.seed)
    trained = train(
        model,
        data.subset(train_idx.to(device)),
        data.subset(val_idx.to(device)),
        negative_pool,
        config,
        run_dir=run_dir,
        progress=progress,
        on_step=on_step,
    )
    return model, trained


def retrieval_metrics(
    index: VectorIndex, queries: np.ndarray, gold_ids: np.ndarray, depth: int, merge: str = PAPER_MERGE
) -> dict:
    """MRecall and Recall at 10 and 100 of the lists merged by `merge`. `gold_ids [N, m]`: one
    corpus id per target (each target is its own cluster)."""
    retrieved = multi_vector_search(index, queries, max(KS), depth=depth, merge=merge)
    return mean_scores(evaluate(retrieved, gold_ids[:, :, None], KS))


def mean_of_targets(task: SyntheticTask) -> np.ndarray:
    """The oracle single vector: normalised sum of a test input's normalised targets `[N, 1, d]`."""
    return unit_norm(task.corpus[task.test_target_ids].sum(1))[:, None]


def target_geometry(task: SyntheticTask, n_sample: int = 200, seed: int = 0) -> dict:
    """How far apart a question's targets are, how close the oracle vector is to each, and how
    close the oracle's best random distractor comes (cosines)."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(task.test_target_ids), min(n_sample, len(task.test_target_ids)), replace=False)
    targets = task.corpus[task.test_target_ids[rows]]
    pair = np.einsum("nid,njd->nij", targets, targets)[:, ~np.eye(N_TARGETS, dtype=bool)]
    oracle = mean_of_targets(task)[rows, 0]
    to_targets = np.einsum("nd,nid->ni", oracle, targets)
    negatives = task.corpus[(task.train_target_ids.size + task.test_target_ids.size) :]
    best_negative = (oracle @ negatives.T).max(1) if len(negatives) else np.full(len(rows), np.nan)
    return {
        "target_pair_cos": float(pair.mean()),
        "oracle_target_cos": float(to_targets.mean()),
        "oracle_min_target_cos": float(to_targets.min(1).mean()),
        "oracle_best_negative_cos": float(best_negative.mean()),
    }


def _cached_setting(params: SyntheticConfig, transform: str, setting: str) -> tuple[list[str], list[dict | None]]:
    names = [synthetic_run_name(transform, setting, s, params.seed) for s in [*params.systems, "oracle"]]
    return names, [SYNTHETIC_RUNS.cached(params, name) for name in names]


def run_setting(
    params: SyntheticConfig,
    transform: str,
    setting: str,
    progress: bool = True,
    on_step: Callable[[], None] | None = None,
    device: torch.device | None = None,
) -> list[dict] | None:
    """Every system of one setting, plus the mean-of-targets oracle; one results JSON each.

    On every rank of a torch.distributed group (`amer_lib.core.distributed`, with this rank's
    `device`): the ranks train together, rank 0 evaluates and writes, the others return None."""
    names, cached = _cached_setting(params, transform, setting)
    if all(cached):
        return cached
    device = device or resolve_device(params.device)
    task = task_from_params(params, transform, setting)
    index = VectorIndex(task.corpus) if distributed.is_main() else None  # the other ranks never search
    results = []
    for system, name, hit in zip([*params.systems, "oracle"], names, cached):
        if hit:
            results.append(hit)
            report_done_before(on_step, params.steps if system != "oracle" else 0)  # the job's steps count it
            continue
        if system == "oracle" and not distributed.is_main():
            continue
        result = dict(
            params=params.as_dict(),
            seed=params.seed,
            git_commit=git_commit(),
            transform=transform,
            setting=setting,
            system=system,
        )
        if system == "oracle":
            result["metrics"] = retrieval_metrics(
                index, mean_of_targets(task), task.test_target_ids, params.search_depth
            )
            result["geometry"] = target_geometry(task)
        else:
            result.update(
                _train_and_evaluate(
                    params, task, index, system, device, SYNTHETIC_RUNS.run_dir(params, name), progress, on_step
                )
            )
        if distributed.is_main():
            results.append(SYNTHETIC_RUNS.write(params, name, result))
    return results if distributed.is_main() else None


def _train_and_evaluate(
    params: SyntheticConfig,
    task: SyntheticTask,
    index: VectorIndex,
    system: str,
    device: torch.device,
    run_dir: Path,
    progress: bool,
    on_step: Callable[[], None] | None,
) -> dict:
    n_queries = 1 if system == "single" else params.n_queries
    model, trained = train_on_task(params, task, n_queries, device, run_dir, progress, on_step)
    if not distributed.is_main():
        return {}
    began = time.perf_counter()
    queries = generated_vectors(model, vector_prompts(model, task.test_inputs, device), n_queries)
    metrics = retrieval_metrics(index, queries, task.test_target_ids, params.search_depth, params.merge)
    val_inputs, val_target_ids = validation_split(task, params.seed)
    val_queries = generated_vectors(model, vector_prompts(model, val_inputs, device), n_queries)
    return dict(
        metrics=metrics,
        validation_metrics=retrieval_metrics(index, val_queries, val_target_ids, params.search_depth, params.merge),
        n_queries=n_queries,
        train_seconds=trained.seconds,
        eval_seconds=time.perf_counter() - began,
        best_step=trained.best_step,
        best_val_loss=trained.best_val_loss,
        history=trained.history,
    )


def validation_split(task: SyntheticTask, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The training inputs held out for validation (`train_on_task`'s split) and their target ids:
    their targets are in the corpus, so they are searched as the test inputs are."""
    _, val_idx = split_train_validation(len(task.train_inputs), seed)
    return task.train_inputs[val_idx.numpy()], task.train_target_ids[val_idx.numpy()]


def run_all(params: SyntheticConfig, progress: bool = True) -> list[dict]:
    """All (transform, setting) pairs of `params`, in order (`run_settings`)."""
    pairs = [(t, s) for t in params.transforms for s in params.settings]
    return [r for job in run_settings([(params, *pair) for pair in pairs], params.workers, progress) for r in job]


def run_settings(jobs: list[tuple[SyntheticConfig, str, str]], workers: int, progress: bool = True) -> list[list[dict]]:
    """Every (params, transform, setting) job's results (`amer_lib.runs.dispatch.run_jobs`)."""
    steps = lambda job: len(job[0].systems) * job[0].steps  # every system of the setting trains
    return run_jobs(run_setting, jobs, _all_cached, workers, progress, steps)


def _all_cached(params: SyntheticConfig, transform: str, setting: str) -> list[dict] | None:
    cached = _cached_setting(params, transform, setting)[1]
    return cached if all(cached) else None


def tune(params: SyntheticConfig, grid: dict[str, list], progress: bool = True) -> list[dict]:
    """The paper's search of appendix A.5 (`amer_lib.runs.tuning`): AMER trained at every
    grid point on each (transform, setting) of `params`; one row per pair and point with its steps,
    the kept checkpoint's step and validation loss, and its validation MRecall@100 (in %), the
    held-out training inputs searched in the corpus as the test inputs are."""
    amer_only = params.replace(systems=["amer"])
    cells = [
        (transform, setting, point, point_params(amer_only, point, params.n_train))
        for transform in params.transforms
        for setting in params.settings
        for point in grid_points(grid)
    ]
    if progress:
        print(grid_cost([tuned for *_, tuned in cells]))
    jobs = [(tuned, transform, setting) for transform, setting, _, tuned in cells]
    rows = []
    for (transform, setting, point, tuned), results in zip(cells, run_settings(jobs, params.workers, progress)):
        amer = next(r for r in results if r["system"] == "amer")
        rows.append(
            {
                "transform": transform,
                "setting": setting,
                **point,
                "steps": tuned.steps,
                "best_step": amer["best_step"],
                "val_loss": round(selected_checkpoint(amer)["val_loss"], 4),
                "val_mrecall": round(100 * amer["validation_metrics"]["mrecall@100"], 2),
            }
        )
    return rows


GEOMETRY_COLUMNS = ("target_pair_cos", "oracle_target_cos", "oracle_min_target_cos", "oracle_best_negative_cos")


def geometry_table(results: list[dict]):
    """The target geometry recorded with each oracle run, one row per setting."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "transform": r["transform"],
                "setting": r["setting"],
                **{key: round(r["geometry"][key], 3) for key in GEOMETRY_COLUMNS},
            }
            for r in results
            if r["system"] == "oracle"
        ]
    )


def summary_table(results: list[dict]):
    """One row per run: transform, setting, system, MRecall and Recall at 10 / 100, train time."""
    import pandas as pd

    rows = []
    for r in results:
        rows.append(
            {
                "transform": r["transform"],
                "setting": r["setting"],
                "system": r["system"],
                **{m: round(r["metrics"][m], 4) for m in METRIC_COLUMNS},
                "train_seconds": round(r.get("train_seconds", 0.0), 1),
            }
        )
    return pd.DataFrame(rows)


def ceiling_lines(table, ceiling: float = 0.21) -> list[str]:
    """`summary_table` in words: MRecall@10 of every system per (transform, setting), and on MLP
    data whether single-query is within the paper's 21% ceiling."""
    pivot = table.pivot_table(index=["transform", "setting"], columns="system", values="mrecall@10")
    lines = []
    for (transform, setting), row in pivot.iterrows():
        parts = ", ".join(f"{system} {100 * row[system]:.1f}%" for system in pivot.columns)
        lines.append(f"MRecall@10 {transform:6s} {setting:6s}: {parts}")
        if transform == "mlp" and "single" in pivot.columns:
            verdict = "above" if row["single"] > ceiling else "within"
            lines.append(f"    single-query is {verdict} the paper's 21% ceiling on MLP data")
    return lines


# ----- the MLP sweep ---------------------------------------------------------------------------------
# Notebook 02's MLP sweep: is the paper's "single-query <= 21% on MLP targets" a limit of one
# vector, or of what a model learns?
#
# For each dimension d and MLP depth (the paper's text: two layers; the authors' code: three
# weights), the Single setting is trained with single-query and AMER at notebook 02's budget, next
# to the mean-of-targets oracle (one vector, no training). A last group reproduces the authors'
# data-path bug: both systems trained on the *linear* task's targets and tested on the MLP's.
# Every cell is an ordinary notebook-02 run in a folder of its own, so it is cached and resumed
# like the main runs.

SETTING = "single"
TRAINING_DATA = {"mlp": "MLP targets", "linear": "linear targets (authors' bug)"}


def cell_params(params: SyntheticConfig, dim: int, depth: int, train_transform: str) -> SyntheticConfig:
    """Notebook 02's parameters for one sweep cell, with its own results and run folders; the
    notebook's own (d, depth) on MLP data is its main run, reused. Cells trained on the linear
    targets (the bug) train single-query only: the paper's 21% is single-query's."""
    if (dim, depth, train_transform) == (params.dim, params.mlp_layers, "mlp"):
        return params.replace(transforms=["mlp"], settings=[SETTING])
    name = f"d{dim}_depth{depth}_train_{train_transform}"
    systems = ["single"] if train_transform == "linear" else params.systems
    return params.replace(
        dim=dim,
        mlp_layers=depth,
        train_transform=train_transform,
        transforms=["mlp"],
        settings=[SETTING],
        systems=systems,
        results_dir=str(Path(params.results_dir) / "mlp_sweep" / name),
        runs_dir=str(Path(params.runs_dir) / "mlp_sweep" / name),
    )


def mlp_sweep(
    params: SyntheticConfig, dims: list[int], depths: list[int], authors_bug: bool, progress: bool = True
) -> list[dict]:
    """One row per (d, depth, training data, system): MRecall@10 / @100 and, for the oracle, how
    close one vector comes to the least similar target against the best random distractor."""
    cells = [(dim, depth, "mlp") for dim in dims for depth in depths]
    if authors_bug:
        cells += [(dim, depth, "linear") for dim in dims for depth in depths]
    jobs = [(cell_params(params, *cell), "mlp", SETTING) for cell in cells]
    rows = []
    for (dim, depth, train_transform), results in zip(cells, run_settings(jobs, params.workers, progress)):
        for result in results:
            if result["system"] == "oracle" and train_transform == "linear":
                continue  # the oracle uses no training data: the MLP cell already holds it
            rows.append(_row(dim, depth, train_transform, result))
    return rows


def _row(dim: int, depth: int, train_transform: str, result: dict) -> dict:
    row = {
        "d": dim,
        "depth": depth,
        "training data": TRAINING_DATA[train_transform],
        "system": result["system"],
        "mrecall@10": round(100 * result["metrics"]["mrecall@10"], 1),
        "mrecall@100": round(100 * result["metrics"]["mrecall@100"], 1),
    }
    if "geometry" in result:
        row["oracle_min_target_cos"] = round(result["geometry"]["oracle_min_target_cos"], 3)
        row["oracle_best_negative_cos"] = round(result["geometry"]["oracle_best_negative_cos"], 3)
    return row


def sweep_reading(rows: list[dict], ceiling: float = 21.0, success: float = 50.0) -> list[str]:
    """Per (d, depth): whether trained single-query fails (MRecall@10 <= the paper's `ceiling`)
    while the oracle succeeds (> `success`), and what the authors' bug gives single-query."""
    lines = []
    for dim, depth in dict.fromkeys((r["d"], r["depth"]) for r in rows):
        cell = {
            (r["training data"], r["system"]): r["mrecall@10"] for r in rows if r["d"] == dim and r["depth"] == depth
        }
        single, oracle = cell[TRAINING_DATA["mlp"], "single"], cell[TRAINING_DATA["mlp"], "oracle"]
        amer = cell[TRAINING_DATA["mlp"], "amer"]
        verdict = (
            "single-query fails where one vector suffices"
            if single <= ceiling < success < oracle
            else "single-query fails and so does the oracle"
            if single <= ceiling
            else "single-query is above the paper's 21%"
        )
        line = (
            f"d = {dim}, depth {depth}: single-query {single:.1f}%, oracle {oracle:.1f}%, AMER {amer:.1f}% "
            f"MRecall@10: {verdict}"
        )
        bug = cell.get((TRAINING_DATA["linear"], "single"))
        if bug is not None:
            line += f"; trained on linear targets (the authors' bug): single-query {bug:.1f}%"
        lines.append(line)
    return lines
