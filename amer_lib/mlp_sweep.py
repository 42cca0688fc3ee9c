"""Notebook 02's MLP sweep: is the paper's "single-query <= 21% on MLP targets" a limit of one
vector, or of what a model learns?

For each dimension d and MLP depth (the paper's text: two layers; the authors' code: three
weights), the Single setting is trained with single-query and AMER at notebook 02's budget, next
to the mean-of-targets oracle (one vector, no training). A last group reproduces the authors'
data-path bug: both systems trained on the *linear* task's targets and tested on the MLP's.
Every cell is an ordinary notebook-02 run in a folder of its own, so it is cached and resumed
like the main runs.
"""
from __future__ import annotations

from pathlib import Path

from .synthetic_experiment import run_jobs

SETTING = "single"
TRAINING_DATA = {"mlp": "MLP targets", "linear": "linear targets (authors' bug)"}


def cell_params(params: dict, dim: int, depth: int, train_transform: str) -> dict:
    """Notebook 02's parameters for one sweep cell, with its own results and run folders; the
    notebook's own (d, depth) on MLP data is its main run, reused. Cells trained on the linear
    targets (the bug) train single-query only: the paper's 21% is single-query's."""
    if (dim, depth, train_transform) == (params["dim"], params["mlp_layers"], "mlp"):
        return {**params, "transforms": ["mlp"], "settings": [SETTING]}
    name = f"d{dim}_depth{depth}_train_{train_transform}"
    systems = ["single"] if train_transform == "linear" else params["systems"]
    return {**params, "dim": dim, "mlp_layers": depth, "train_transform": train_transform, "transforms": ["mlp"],
            "settings": [SETTING], "systems": systems, "results_dir": str(Path(params["results_dir"]) / "mlp_sweep" / name),
            "runs_dir": str(Path(params["runs_dir"]) / "mlp_sweep" / name)}


def mlp_sweep(params: dict, dims: list[int], depths: list[int], authors_bug: bool, progress: bool = True) -> list[dict]:
    """One row per (d, depth, training data, system): MRecall@10 / @100 and, for the oracle, how
    close one vector comes to the least similar target against the best random distractor."""
    if params["nproc_per_node"] > 1:
        raise ValueError("the MLP sweep trains its cells in `workers` processes, one device each; "
                         f"nproc_per_node must be 1 for it, got {params['nproc_per_node']}")
    cells = [(dim, depth, "mlp") for dim in dims for depth in depths]
    if authors_bug:
        cells += [(dim, depth, "linear") for dim in dims for depth in depths]
    jobs = [(cell_params(params, *cell), "mlp", SETTING) for cell in cells]
    rows = []
    for (dim, depth, train_transform), results in zip(cells, run_jobs(jobs, params["workers"], progress)):
        for result in results:
            if result["system"] == "oracle" and train_transform == "linear":
                continue  # the oracle uses no training data: the MLP cell already holds it
            rows.append(_row(dim, depth, train_transform, result))
    return rows


def _row(dim: int, depth: int, train_transform: str, result: dict) -> dict:
    row = {"d": dim, "depth": depth, "training data": TRAINING_DATA[train_transform], "system": result["system"],
           "mrecall@10": round(100 * result["metrics"]["mrecall@10"], 1),
           "mrecall@100": round(100 * result["metrics"]["mrecall@100"], 1)}
    if "geometry" in result:
        row["oracle_min_target_cos"] = round(result["geometry"]["oracle_min_target_cos"], 3)
        row["oracle_best_negative_cos"] = round(result["geometry"]["oracle_best_negative_cos"], 3)
    return row


def sweep_reading(rows: list[dict], ceiling: float = 21.0, success: float = 50.0) -> list[str]:
    """Per (d, depth): whether trained single-query fails (MRecall@10 <= the paper's `ceiling`)
    while the oracle succeeds (> `success`), and what the authors' bug gives single-query."""
    lines = []
    for dim, depth in dict.fromkeys((r["d"], r["depth"]) for r in rows):
        cell = {(r["training data"], r["system"]): r["mrecall@10"] for r in rows if r["d"] == dim and r["depth"] == depth}
        single, oracle = cell[TRAINING_DATA["mlp"], "single"], cell[TRAINING_DATA["mlp"], "oracle"]
        amer = cell[TRAINING_DATA["mlp"], "amer"]
        verdict = ("single-query fails where one vector suffices" if single <= ceiling < success < oracle
                   else "single-query fails and so does the oracle" if single <= ceiling
                   else "single-query is above the paper's 21%")
        line = (f"d = {dim}, depth {depth}: single-query {single:.1f}%, oracle {oracle:.1f}%, AMER {amer:.1f}% "
                f"MRecall@10: {verdict}")
        bug = cell.get((TRAINING_DATA["linear"], "single"))
        if bug is not None:
            line += f"; trained on linear targets (the authors' bug): single-query {bug:.1f}%"
        lines.append(line)
    return lines
