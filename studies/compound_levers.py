"""Issue 43: levers that might bring AMER toward the decomposition oracle on the compound benchmark.

Each variant is notebook 04's compound recipe (params/04_real_data/compound.yaml, MiniLM, 400
steps) with some parameters changed; it trains in its own results and runs folders, so variants
never read each other's runs, and an interrupted variant resumes. Against today's recipe on the same
seeds, per dataset: MRecall@100 mean and std over seeds, the paired bootstrap over test questions
(seed-averaged per-question scores, one-sided: is the variant ahead?), AMER's share of the oracle's
lead over single-query, and the training seconds per run.

A lever that changes only AMER's loss (`AMER_ONLY`) trains only AMER and reads single-query and
the oracle from today's runs; any other lever trains single-query too, so its oracle (the k = 1
single-query model on each component) moves with it.

From the repository root, after notebook 03 has prepared the compound benchmark
(`make figures-compound`, or notebook 03 with params/03_real_data_prep/compound.yaml):

    .venv/bin/python studies/compound_levers.py --variants today lr_1e-4 --seeds 0
    .venv/bin/python studies/compound_levers.py --report   # studies/compound_levers.json, _table.md
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "04_real_data.ipynb"
RECIPE = ROOT / "params" / "04_real_data" / "compound.yaml"
FOLDER = ROOT / "results" / "studies" / "compound_levers"  # ignored by git, as every run's files

# name: the parameters changed from today's recipe
VARIANTS = {
    "today": {},
    "lr_1e-4": {"lr": 1e-4},
    "lr_3e-5": {"lr": 3e-5},
    "hard_0.5": {"hard_negative_share": 0.5},
    "spread_1": {"spread_weight": 1.0},
    "spread_4": {"spread_weight": 4.0},
    "fresh": {"train_compounds": 12_800},  # 400 steps x 32: no training compound seen twice
}
AMER_ONLY = {"spread_weight"}  # levers of the matched loss: single-query trains as today
DATASETS = ("compound_k1", "compound_k2", "compound_k3")


def amer_only(variant: str) -> bool:
    """Whether a variant changes only AMER's loss (single-query and the oracle are today's)."""
    changes = VARIANTS[variant]
    return bool(changes) and set(changes) <= AMER_ONLY


def params_of(variant: str, seeds: list[int], datasets: list[str]):
    """Notebook 04's config of a variant, its folders under `FOLDER` (absolute paths)."""
    from amer_lib.params import from_files

    changes = VARIANTS[variant]
    base = from_files(NOTEBOOK, RECIPE)
    folder = FOLDER / variant
    return base.replace(
        **changes,
        seeds=seeds,
        datasets=datasets,
        systems=["amer"] if amer_only(variant) else ["single", "amer"],
        prepared_dir=str((NOTEBOOK.parent / base.prepared_dir).resolve()),
        results_dir=str(folder / "results"),
        runs_dir=str(folder / "runs"),
        figures_dir=str(folder / "figures"),
    )


def train(variant: str, seeds: list[int], datasets: list[str]) -> list[dict]:
    """The variant's runs (made, or read back when made before)."""
    from amer_lib.experiments.real_data import run_all

    started = time.time()
    results = run_all(params_of(variant, seeds, datasets))
    print(f"{variant}: {len(results)} runs in {time.time() - started:.0f} s", flush=True)
    return results


def made_runs(variant: str) -> list[dict]:
    """Every finished run of a variant, from its results folder."""
    folder = FOLDER / variant / "results"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("compound_k*_seed*.json"))] if folder.is_dir() else []


def compare(variant: str, today: list[dict], n_resamples: int = 10_000) -> list[dict]:
    """Per dataset: the variant's AMER against today's (paired bootstrap on the seeds both have),
    with single-query and the oracle of the variant's own training (today's for an AMER-only lever)."""
    from amer_lib.core.metrics import paired_bootstrap
    from amer_lib.experiments.real_data import ORACLE

    mine = made_runs(variant)
    reference = today if amer_only(variant) else mine
    rows = []
    for dataset in DATASETS:
        runs = {s: _by_seed(mine if s == "amer" else reference, dataset, s) for s in ("amer", "single", ORACLE)}
        base = _by_seed(today, dataset, "amer")
        seeds = sorted(set(runs["amer"]) & set(base))
        if not seeds:
            continue
        score = lambda by, seed: np.asarray(by[seed]["mrecall"], float)  # noqa: E731
        row = {"variant": variant, "dataset": dataset, "seeds": seeds}
        for system, by in runs.items():
            if all(s in by for s in seeds):
                values = [100 * score(by, s).mean() for s in seeds]
                row[f"{system}_mean"], row[f"{system}_std"] = float(np.mean(values)), float(np.std(values))
        test = paired_bootstrap(
            np.mean([score(base, s) for s in seeds], 0),
            np.mean([score(runs["amer"], s) for s in seeds], 0),
            n_resamples,
        )
        row["today_amer_mean"] = float(np.mean([100 * score(base, s).mean() for s in seeds]))
        row["p_ahead_of_today"], row["p_behind_today"] = test["p_value"], test["p_value_behind"]
        if f"{ORACLE}_mean" in row and "single_mean" in row:
            lead = row[f"{ORACLE}_mean"] - row["single_mean"]
            row["oracle_share"] = (row["amer_mean"] - row["single_mean"]) / lead if lead > 0 else float("nan")
        row["train_seconds_per_run"] = float(np.mean([runs["amer"][s]["train_seconds"] for s in seeds]))
        rows.append(row)
    return rows


def _by_seed(results: list[dict], dataset: str, system: str) -> dict[int, dict]:
    return {r["seed"]: r for r in results if r["dataset"] == dataset and r["system"] == system}


def with_oracle(variant: str, seeds: list[int]) -> None:
    """The decomposition oracle's runs of a variant that trains single-query (its k = 1 model)."""
    from amer_lib.experiments.real_data import decomposition_oracle

    params = params_of(variant, seeds, list(DATASETS))
    for dataset in DATASETS[1:]:
        for seed in seeds:
            decomposition_oracle(params, dataset, seed)


def report() -> None:
    today = made_runs("today")
    rows = [row for variant in VARIANTS for row in compare(variant, today) if made_runs(variant)]
    (ROOT / "studies" / "compound_levers.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "| variant | k | seeds | single-query | AMER | oracle | AMER today | p ahead | p behind | oracle share "
        "| train s/run |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cell = lambda row, name: f"{row[name + '_mean']:.2f}±{row[name + '_std']:.2f}" if name + "_mean" in row else "-"  # noqa: E731
    for r in rows:
        share = f"{100 * r['oracle_share']:.0f}%" if "oracle_share" in r else "-"
        lines.append(
            f"| {r['variant']} | {r['dataset'][-1]} | {','.join(map(str, r['seeds']))} | {cell(r, 'single')} | "
            f"{cell(r, 'amer')} | {cell(r, 'decomposition_oracle')} | {r['today_amer_mean']:.2f} | "
            f"{r['p_ahead_of_today']:.4f} | {r['p_behind_today']:.4f} | {share} | {r['train_seconds_per_run']:.0f} |"
        )
    table = "\n".join(lines)
    (ROOT / "studies" / "compound_levers_table.md").write_text(table + "\n")
    print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", choices=tuple(VARIANTS), default=[])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument(
        "--report", action="store_true", help="write studies/compound_levers.json and _table.md, and print the table"
    )
    args = parser.parse_args()
    os.chdir(NOTEBOOK.parent)  # as a notebook runs: the recipe's relative paths are from notebooks/
    for variant in args.variants:
        train(variant, args.seeds, args.datasets)
        if not amer_only(variant) and "compound_k1" in args.datasets:
            with_oracle(variant, args.seeds)
    if args.report:
        report()


if __name__ == "__main__":
    main()
