"""Notebook 04's runs aggregated into the rows of the paper's tables and curves: per dataset and
system, mean and standard deviation over seeds on the whole test set and its low-similarity
third, the relative change against single-query with its paired-bootstrap p-values over seeds and
questions (`report.significance`), the marks those leave after correcting across a table's
comparisons, and the validation learning curves."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from amer_lib.core.metrics import low_similarity_subset
from amer_lib.io import staged_or_published
from amer_lib.report.significance import adjust, compare, mark


def _runs(results: list[dict], dataset: str, system: str) -> list[dict]:
    return sorted((r for r in results if r["dataset"] == dataset and r["system"] == system), key=lambda r: r["seed"])


def _per_question(
    results: list[dict], dataset: str, system: str, metric: str = "mrecall"
) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed scores `[seeds, Q]` of `metric` (a per-question list in each results JSON), rows in
    seed order, and the test questions' target similarity."""
    runs = _runs(results, dataset, system)
    missing = [r["seed"] for r in runs if metric not in r]
    if missing:
        raise KeyError(f"{dataset} {system} seed(s) {missing} hold no {metric!r} scores (scored before it was kept)")
    return np.array([r[metric] for r in runs]), np.array(runs[0]["target_similarity"])


def _check_paired_seeds(results: list[dict], dataset: str, system: str, baseline: str) -> None:
    """Seed rows are paired by position: a system compared with the baseline has its seeds, or one run."""
    seeds, base_seeds = ([r["seed"] for r in _runs(results, dataset, s)] for s in (system, baseline))
    if len(seeds) != 1 and seeds != base_seeds:
        raise ValueError(
            f"{dataset}: {system} ran seeds {seeds} and {baseline} seeds {base_seeds}; the paired comparison "
            f"needs the same seeds (or one run of a seed-free system): run the missing seeds or drop the extra ones"
        )


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
    systems, the comparison with the baseline by `significance.compare` on the per-seed per-question
    scores (seeds and questions resampled, seed rows paired by seed): `_p` (one-sided, ahead: the
    key's meaning before seeds were resampled), `_p_behind`, `_p_two_sided`, and the difference in
    points with its 95% interval (`_difference`, `_low`, `_high`); then the marks of `with_marks`,
    corrected across all the rows' comparisons."""
    rows = []
    for dataset in dict.fromkeys(r["dataset"] for r in results):
        base, similarity = _per_question(results, dataset, baseline, metric)
        subsets = {"whole": np.arange(base.shape[1]), "low_sim": low_similarity_subset(similarity)}
        for system in dict.fromkeys(r["system"] for r in results if r["dataset"] == dataset):
            scores, _ = _per_question(results, dataset, system, metric)
            if system != baseline:
                _check_paired_seeds(results, dataset, system, baseline)
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
                    test = compare(base[:, subset], scores[:, subset], n_resamples, seed)
                    row |= {f"{name}_p": test.p_ahead, f"{name}_p_behind": test.p_behind, f"{name}_p_two_sided": test.p}
                    row |= {f"{name}_{key}": 100 * getattr(test, key) for key in ("low", "high")}
                    row[f"{name}_difference"] = 100 * test.delta
            rows.append(row)
    return with_marks(rows)


SUBSETS = ("whole", "low_sim")


def _two_sided(row: dict, subset: str) -> float:
    """The two-sided p a summary row holds for `subset` (refused for a summary written before it)."""
    if f"{subset}_p_two_sided" not in row:
        raise KeyError(
            f"{row.get('dataset')} {row.get('system')} has no two-sided p for {subset!r} (a summary written before "
            "seeds were resampled): rerun the notebook's summary for it"
        )
    return row[f"{subset}_p_two_sided"]


def with_marks(rows: list[dict], alpha: float = 0.05, method: str = "holm", subsets=SUBSETS) -> list[dict]:
    """`rows` (summary rows) with, for each comparison they hold (each system but the baseline, each
    of `subsets`: a `<subset>_p` that is not NaN), the two-sided p corrected by `method` across all
    of them (`_p_adjusted`) and the mark it leaves at `alpha` (`_mark`: "*" ahead, "†" behind, ""
    neither), and the correction named (`correction`: method, number of comparisons, alpha). New
    dicts; `rows` is left as it is."""
    compared = lambda row, subset: not math.isnan(row.get(f"{subset}_p", math.nan))  # noqa: E731
    cells = [(i, subset) for i, row in enumerate(rows) for subset in subsets if compared(row, subset)]
    adjusted = adjust([_two_sided(rows[i], subset) for i, subset in cells], method) if cells else []
    out = [dict(row) for row in rows]
    for (i, subset), p in zip(cells, adjusted):
        row = out[i]
        row[f"{subset}_p_adjusted"] = float(p)
        row[f"{subset}_mark"] = mark(p, row[f"{subset}_p"], row[f"{subset}_p_behind"], alpha)
        row["correction"] = {"method": method, "comparisons": len(cells), "alpha": alpha}
    return out


def compared_count(rows: list[dict]) -> int:
    """How many comparisons `with_marks` corrected together in `rows` (0 when none)."""
    return next((row["correction"]["comparisons"] for row in rows if "correction" in row), 0)


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


VERDICTS = {"*": "ahead of", "†": "behind", "": "not shown to differ from"}


def verdicts(rows: list[dict], alpha: float = 0.05, method: str = "holm") -> list[str]:
    """One line per system other than single-query, dataset and subset: its MRecall@100 beside
    single-query's and what the seed-and-question bootstrap allows one to say after the correction
    across all the comparisons in `rows` (`with_marks`): ahead or behind where the corrected
    two-sided p < `alpha`, otherwise not shown, however large the difference looks (a few test
    questions or seeds make large swings)."""
    lines = []
    for row in with_marks(rows, alpha, method):
        if "whole_p" not in row:  # the baseline itself
            continue
        correction = f"{method} over {row['correction']['comparisons']}"
        for subset, name in SUBSET_NAMES.items():
            delta = row[f"{subset}_delta"]
            change = "single-query at 0%" if np.isnan(delta) else f"{100 * delta:+.1f}%"
            lines.append(
                f"{row['dataset']:16s} {name:19s}: {row['system']} {row[f'{subset}_mean']:.2f}% is "
                f"{VERDICTS[row[f'{subset}_mark']]} single-query ({change}, two-sided p = "
                f"{row[f'{subset}_p_two_sided']:.4f}, {correction}: {row[f'{subset}_p_adjusted']:.4f})"
            )
    return lines


def significance_count(rows: list[dict], alpha: float = 0.05, system: str = "amer", method: str = "holm") -> str:
    """The paper's summary of Tables 5-8: in how many settings (datasets here, dataset x backbone in
    the paper) `system` is significantly ahead of single-query, and in how many behind, on the whole
    test sets and on the low-similarity ones (two-sided p < `alpha` after `method`'s correction
    across all the comparisons in `rows`)."""
    marked = with_marks(rows, alpha, method)
    settings = [r for r in marked if r["system"] == system and "whole_p" in r]
    count = lambda subset, mark: sum(r[f"{subset}_mark"] == mark for r in settings)  # noqa: E731
    n = len(settings)
    comparisons = settings[0]["correction"]["comparisons"] if settings else 0
    return (
        f"{system} significantly ahead of single-query (two-sided p < {alpha}, {method}-corrected over "
        f"{comparisons} comparisons) in {count('whole', '*')}/{n} settings on the whole test sets and "
        f"{count('low_sim', '*')}/{n} on the low-similarity sets, behind in {count('whole', '†')}/{n} and "
        f"{count('low_sim', '†')}/{n} (the paper: 6/8 and 7/8 over four backbones x two datasets at "
        "p < 0.05, no correction stated)"
    )
