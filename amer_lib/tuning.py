"""The paper's hyperparameter search (appendix A.5 and A.6): every point of a grid over learning
rate, batch size, temperature and epochs is trained on one seed, and the point with the best
validation MRecall@100 (at the checkpoint chosen by validation loss) is picked.

Notebook 04 runs it when `tuning_grid` is set, e.g. with the paper's grid for one dataset:
`papermill notebooks/04_real_data.ipynb out.ipynb -f params/04_real_data/qampari_llama1b.yaml
-f params/04_real_data/tuning_qampari.yaml`.
"""
from __future__ import annotations

import itertools
import math

from tqdm.auto import tqdm

TUNABLE = ("lr", "batch_size", "temperature", "epochs")


def grid_points(grid: dict[str, list]) -> list[dict]:
    """Every combination of the grid's values, in the order the grid lists them."""
    unknown = sorted(set(grid) - set(TUNABLE))
    if unknown:
        raise ValueError(f"unknown tuning parameter(s) {unknown}; valid: {', '.join(TUNABLE)}")
    empty = [name for name, values in grid.items() if not values]
    if empty:
        raise ValueError(f"tuning parameter(s) {empty} have no values")
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def point_params(params: dict, point: dict, n_train: int) -> dict:
    """`params` at one grid point, in folders of its own; `epochs` becomes steps over the
    `n_train` training questions (validation split excluded) at the point's batch size."""
    tuned = {**params, **{k: v for k, v in point.items() if k != "epochs"}}
    if "epochs" in point:
        tuned["steps"] = point["epochs"] * max(1, math.floor(n_train / tuned["batch_size"]))
    name = "_".join(f"{key}{value}" for key, value in point.items())
    tuned["results_dir"] = f"{params['results_dir']}/tuning/{name}"
    tuned["runs_dir"] = f"{params['runs_dir']}/tuning/{name}"
    return tuned


def tune(params: dict, grid: dict[str, list], seed: int = 0, system: str = "amer", progress: bool = True) -> list[dict]:
    """One row per dataset and grid point: the point, its steps, the selected checkpoint's step,
    validation loss and validation MRecall@100 (in %)."""
    from .benchmark import Benchmark
    from .real_experiment import VALIDATION_FRACTION, run_one

    benchmark = Benchmark(params["prepared_dir"])
    rows = []
    jobs = [(dataset, point) for dataset in params["datasets"] for point in grid_points(grid)]
    for dataset, point in tqdm(jobs, desc="tuning grid", disable=not progress):
        questions = len(benchmark.questions(dataset, "train"))
        n_train = questions - max(1, round(VALIDATION_FRACTION * questions))  # as split_train_validation
        tuned = point_params(params, point, n_train)
        result = run_one(tuned, dataset, system, seed, progress=False)
        selected = next(h for h in result["history"] if h["step"] == result["best_step"])
        rows.append({"dataset": dataset, **point, "steps": tuned["steps"], "best_step": result["best_step"],
                     "val_loss": round(selected["val_loss"], 4), "val_mrecall": round(100 * selected["val_mrecall"], 2)})
    return rows


def best_points(rows: list[dict]) -> dict[str, dict]:
    """Per dataset, the row with the highest validation MRecall@100 (the first such on ties)."""
    best: dict[str, dict] = {}
    for row in rows:
        if row["dataset"] not in best or row["val_mrecall"] > best[row["dataset"]]["val_mrecall"]:
            best[row["dataset"]] = row
    return best
