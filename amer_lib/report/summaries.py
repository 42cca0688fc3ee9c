"""Notebook 04's runs aggregated into the rows of the paper's tables and curves: per dataset and
system, mean and standard deviation over seeds on the whole test set and its low-similarity
third, the relative change against single-query with its paired-bootstrap p-value, and the
validation learning curves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from amer_lib.core.metrics import low_similarity_subset, paired_bootstrap
from amer_lib.io import staged_or_published


def _per_question(
    results: list[dict], dataset: str, system: str, metric: str = "mrecall"
) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed scores `[seeds, Q]` of `metric` (a per-question list in each results JSON) and the
    test questions' target similarity."""
    runs = sorted((r for r in results if r["dataset"] == dataset and r["system"] == system), key=lambda r: r["seed"])
    missing = [r["seed"] for r in runs if metric not in r]
    if missing:
        raise KeyError(f"{dataset} {system} seed(s) {missing} hold no {metric!r} scores (scored before it was kept)")
    return np.array([r[metric] for r in runs]), np.array(runs[0]["target_similarity"])


CURVE_METRICS = {"whole": "val_mrecall", "low_sim": "val_mrecall_low_sim"}


def learning_curves(results: list[dict]) -> list[dict]:
    """Per dataset, system and validation step: validation MRecall@100 (in %) on all validation
    questions and on their low-similarity third, mean and std over the seeds that reached the
    step, with the validation loss. Runs trained before the curves were recorded are skipped."""
    points: dict[tuple, list[dict]] = {}
    for run in results:
        for entry in run.get("history", []):
            if CURVE_METRICS["whole"] in entry:
                points.setdefault((run["dataset"], run["system"], entry["step"]), []).append(entry)
    rows = []
    for (dataset, system, step), entries in points.items():
        row = {
            "dataset": dataset,
            "system": system,
            "step": step,
            "seeds": len(entries),
            "val_loss": float(np.mean([e["val_loss"] for e in entries])),
        }
        for subset, key in CURVE_METRICS.items():
            values = 100 * np.array([e[key] for e in entries])
            row[f"{subset}_mean"], row[f"{subset}_std"] = float(values.mean()), float(values.std())
        rows.append(row)
    return sorted(rows, key=lambda r: (r["dataset"], r["system"] != "single", r["system"], r["step"]))


def summary(
    results: list[dict], n_resamples: int = 10_000, seed: int = 0, baseline: str = "single", metric: str = "mrecall"
) -> list[dict]:
    """Per dataset and system: MRecall@100 (or another per-question `metric`: `recall`,
    `mrecall_10`, ...) mean and std over seeds (in %), relative gain over the `baseline` system
    (the paper's: single-query), on the whole test set and the low-similarity third; for the other
    systems, the paired bootstrap p-value against the baseline on seed-averaged per-question scores."""
    rows = []
    for dataset in dict.fromkeys(r["dataset"] for r in results):
        base, similarity = _per_question(results, dataset, baseline, metric)
        subsets = {"whole": np.arange(base.shape[1]), "low_sim": low_similarity_subset(similarity)}
        for system in dict.fromkeys(r["system"] for r in results if r["dataset"] == dataset):
            scores, _ = _per_question(results, dataset, system, metric)
            label = next(r.get("label") for r in results if r["dataset"] == dataset and r["system"] == system)
            row = {
                "backbone": Path(results[0]["params"]["backbone"]).name,  # a local folder: its last part
                "dataset": dataset,
                "system": system,
                "label": label,
                "seeds": len(scores),
            }
            for name, subset in subsets.items():
                per_seed = 100 * scores[:, subset].mean(1)
                reference = 100 * base[:, subset].mean()
                row[f"{name}_mean"], row[f"{name}_std"] = float(per_seed.mean()), float(per_seed.std())
                row[f"{name}_delta"] = float((per_seed.mean() - reference) / reference) if reference else float("nan")
                if system != baseline:
                    test = paired_bootstrap(base[:, subset].mean(0), scores[:, subset].mean(0), n_resamples, seed)
                    row[f"{name}_p"], row[f"{name}_p_behind"] = test["p_value"], test["p_value_behind"]
            rows.append(row)
    return rows


def per_seed(results: list[dict]) -> list[dict]:
    """One row per run (dataset, system, seed): MRecall@100 in % on the whole test set and its
    low-similarity third, and for a trained run its kept step and validation loss there; the numbers
    behind every mean of `summary`, which `make check-figures` compares to the last digit."""
    rows = []
    for run in sorted(results, key=lambda r: (r["dataset"], r["system"] != "single", r["system"], r["seed"])):
        scores = np.array(run["mrecall"], dtype=float)
        low_sim = low_similarity_subset(np.array(run["target_similarity"]))
        rows.append(
            {
                "dataset": run["dataset"],
                "system": run["system"],
                "seed": run["seed"],
                "whole": round(float(100 * scores.mean()), 4),
                "low_sim": round(float(100 * scores[low_sim].mean()), 4),
                "best_step": run.get("best_step"),
                "best_val_loss": None if run.get("best_val_loss") is None else round(float(run["best_val_loss"]), 6),
            }
        )
    return rows


def backbone_summaries(figures_dir: str | Path) -> dict[str, list[dict]]:
    """Notebook 04's summaries in `figures_dir` (`summary_<tag>.json`, one per run of the notebook;
    in a `stage` folder, the run's own beside the published ones), grouped by backbone: each
    backbone's rows on every dataset it ran on."""
    summaries: dict[str, list[dict]] = {}
    for path in staged_or_published(figures_dir, "summary_*.json"):
        for row in json.loads(path.read_text()):
            summaries.setdefault(row["backbone"], []).append(row)
    return summaries


SUBSET_NAMES = {"whole": "whole set", "low_sim": "low-similarity set"}


def verdicts(rows: list[dict], alpha: float = 0.05) -> list[str]:
    """One line per system other than single-query, dataset and subset: its MRecall@100 beside
    single-query's and what the paired bootstrap allows one to say, tested one-sided in the
    direction the means point (ahead: `_p`; behind: `_p_behind`). A difference with p >= `alpha`
    is reported as not shown, however large it looks (a few test questions make large swings)."""
    lines = []
    for row in rows:
        if "whole_p" not in row:  # the baseline itself
            continue
        for subset, name in SUBSET_NAMES.items():
            delta = row[f"{subset}_delta"]
            behind = delta < 0  # the one-sided test in the direction the means point
            p = row.get(f"{subset}_p_behind", 1.0) if behind else row[f"{subset}_p"]
            if p < alpha:
                verdict = "behind" if behind else "ahead of"
            else:
                verdict = "not shown to differ from"
            change = "single-query at 0%" if np.isnan(delta) else f"{100 * delta:+.1f}%"
            lines.append(
                f"{row['dataset']:16s} {name:19s}: {row['system']} {row[f'{subset}_mean']:.2f}% is {verdict} "
                f"single-query ({change}, bootstrap p = {p:.4f})"
            )
    return lines


def significance_count(rows: list[dict], alpha: float = 0.05, system: str = "amer") -> str:
    """The paper's summary of Tables 5-8: in how many settings (datasets here, dataset x backbone in
    the paper) `system` is significantly ahead of single-query (p < `alpha`, one-sided), on the
    whole test sets and on the low-similarity ones."""
    settings = [r for r in rows if r["system"] == system and "whole_p" in r]
    counts = {
        subset: sum(r[f"{subset}_delta"] > 0 and r[f"{subset}_p"] < alpha for r in settings) for subset in SUBSET_NAMES
    }
    return (
        f"{system} significantly ahead of single-query (p < {alpha}) in {counts['whole']}/{len(settings)} settings on "
        f"the whole test sets and {counts['low_sim']}/{len(settings)} on the low-similarity sets "
        "(the paper: 6/8 and 7/8 over four backbones x two datasets)"
    )
