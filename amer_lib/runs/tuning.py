"""The paper's hyperparameter search, shared by notebooks 02 and 04 (appendix A.5 and A.6).

Every point of a grid over learning rate, batch size, temperature and epochs is trained once
(AMER, one seed) in folders of its own, so it is cached and resumed as any run is; the point with
the best validation MRecall@100 at the checkpoint kept by validation loss is picked. The paper
does not say what it picks by; validation loss cannot compare temperatures (it scales with 1/tau),
validation MRecall@100 can. Epochs become steps with `amer_lib.core.train.steps_for_epochs`.
Notebook 02's `tune` is in `amer_lib.experiments.synthetic`, notebook 04's in `amer_lib.experiments.real_data`.
"""

from __future__ import annotations

import itertools

from amer_lib.config import Config
from amer_lib.core.train import steps_for_epochs

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


def point_params(params: Config, point: dict, n_examples: int) -> Config:
    """`params` at one grid point, in folders of its own; `epochs` becomes steps over `n_examples`
    training examples (before the validation split) at the point's batch size."""
    tuned = params.replace(**{k: v for k, v in point.items() if k != "epochs"})
    name = "_".join(f"{key}{value}" for key, value in point.items())
    return tuned.replace(
        steps=steps_for_epochs(point["epochs"], n_examples, tuned.batch_size) if "epochs" in point else tuned.steps,
        results_dir=f"{params.results_dir}/tuning/{name}",
        runs_dir=f"{params.runs_dir}/tuning/{name}",
    )


def selected_checkpoint(result: dict) -> dict:
    """A training's history entry at the checkpoint it kept (the lowest validation loss)."""
    return next(h for h in result["history"] if h["step"] == result["best_step"])


def best_points(rows: list[dict], by: tuple[str, ...] = ("dataset",)) -> dict[str, dict]:
    """Per value of the `by` columns (joined by " / "), the row with the highest validation
    MRecall@100 (the first such on ties)."""
    best: dict[str, dict] = {}
    for row in rows:
        key = " / ".join(str(row[column]) for column in by)
        if key not in best or row["val_mrecall"] > best[key]["val_mrecall"]:
            best[key] = row
    return best


def best_point_lines(rows: list[dict], grid: dict[str, list], by: tuple[str, ...] = ("dataset",)) -> list[str]:
    """One line per group: its best point's validation MRecall@100 and grid values, to copy into a
    parameter file."""
    return [
        f"{key}: best validation MRecall@100 {best['val_mrecall']:.2f}% at "
        + ", ".join(f"{name} = {best[name]}" for name in grid)
        for key, best in best_points(rows, by).items()
    ]


def grid_cost(runs: list[Config]) -> str:
    """What a search will train, said before it starts: runs and optimizer steps."""
    return f"tuning grid: {len(runs)} runs, {sum(run.steps for run in runs):,} training steps in all"
