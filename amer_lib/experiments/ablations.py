"""Ablations (notebook 05): the sampling mode of training (Table 3), and at inference the number
of generated vectors searched (n = 1..8) and how their lists are merged.

Generation is autoregressive, so the first n of 8 generated vectors are exactly what a run
asked for n vectors would produce: one generation serves every n. Trained models and cached
runs come from notebooks 02 and 04 (through their parameter files); the sampling ablation
trains only the modes those notebooks did not.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from amer_lib.core.config import Config
from amer_lib.core.device import resolve_device
from amer_lib.core.merge import MERGES, get_merge
from amer_lib.core.metrics import KS, evaluate, mean_scores
from amer_lib.core.search import ShardedFlatIndex, VectorIndex
from amer_lib.data.synthetic import task_from_params
from amer_lib.report.summaries import summary
from amer_lib.report.tables import percent_change
from amer_lib.runs.configs import RealConfig, SyntheticConfig
from amer_lib.runs.models import generate_queries, trained_synthetic_encoder
from amer_lib.runs.text import RunContext, query_vectors


def vector_count_and_merge(
    vectors: np.ndarray,
    index,
    gold: np.ndarray,
    counts: tuple[int, ...],
    merges: tuple[str, ...] = tuple(MERGES),
    depth: int = 100,
) -> list[dict]:
    """MRecall and Recall at 10 and 100 for the first n of `vectors [Q, n_max, d]`, for every
    n in `counts` and every merge; `gold [Q, C, D]` padded clusters of corpus rows."""
    if max(counts) > vectors.shape[1]:
        raise ValueError(f"counts go up to {max(counts)} but only {vectors.shape[1]} vectors were generated")
    scores, ids = index.search(vectors, max(depth, max(KS)))
    rows = []
    for n in counts:
        for merge in merges:
            merged = get_merge(merge)(ids[:, :n], scores[:, :n], max(KS))
            rows.append({"n": n, "merge": merge, **mean_scores(evaluate(merged, gold, KS))})
    return rows


# ----- scheduled sampling vs always predicted vs teacher forcing (Table 3) ---------------------
SAMPLING_LABELS = {
    "scheduled": "AMER (scheduled sampling)",
    "predicted": "AMER (always predicted)",
    "teacher": "AMER (teacher forcing only)",
}


def _mode_params(base: Config, mode: str, results_dir: str, runs_dir: str, tag: str) -> Config:
    """`base` itself for its own sampling mode (its cached runs are reused), else a copy with
    the mode and its own result and run directories."""
    if mode == base.sampling:
        return base
    return base.replace(sampling=mode, results_dir=f"{results_dir}/{tag}_{mode}", runs_dir=f"{runs_dir}/{tag}_{mode}")


def synthetic_sampling(
    params02: SyntheticConfig,
    transforms: list[str],
    setting: str,
    modes: list[str],
    results_dir: str,
    runs_dir: str,
    run_all: Callable[..., list[dict]],
    progress: bool = True,
) -> list[dict]:
    """AMER trained under each sampling mode on notebook 02's task, plus its single-query run;
    `run_all` is notebook 02's runner (`amer_lib.experiments.synthetic.run_all`)."""
    base = params02.replace(transforms=transforms, settings=[setting], systems=["amer"])
    runs = run_all(base.replace(systems=["single"]), progress)
    for mode in modes:
        runs += run_all(_mode_params(base, mode, results_dir, runs_dir, "synthetic"), progress)
    return [r for r in runs if r["system"] != "oracle"]


def synthetic_sampling_table(runs: list[dict]):
    import pandas as pd

    rows = []
    for r in runs:
        label = "Single-Query" if r["system"] == "single" else SAMPLING_LABELS[r["params"]["sampling"]]
        rows.append(
            {
                "transform": r["transform"],
                "setting": r["setting"],
                "System": label,
                **{f"MRecall@{k}": round(100 * r["metrics"][f"mrecall@{k}"], 2) for k in KS},
            }
        )
    return pd.DataFrame(rows).sort_values(["transform", "setting"], kind="stable", ignore_index=True)


def real_sampling(
    params04: RealConfig,
    modes: list[str],
    seeds: list[int],
    results_dir: str,
    runs_dir: str,
    run_all: Callable[..., list[dict]],
    resamples: int = 10_000,
    progress: bool = True,
) -> list[dict]:
    """Summary rows (mean, std, relative gain over single-query, bootstrap p) of AMER trained
    under each sampling mode on one backbone's notebook-04 datasets; single-query from notebook 04.
    `run_all` is notebook 04's runner (`amer_lib.experiments.real.run_all`)."""
    base = params04.replace(seeds=seeds, baselines=[], systems=["amer"])
    single = run_all(base.replace(systems=["single"]), progress)
    rows = []
    for mode in modes:
        amer = run_all(_mode_params(base, mode, results_dir, runs_dir, f"real_{params04.tag}"), progress)
        rows += [
            {**row, "sampling": mode, "label": SAMPLING_LABELS[mode]}
            for row in summary(single + amer, resamples)
            if row["system"] == "amer"
        ]
    return rows


SUBSETS = (("whole", "Whole Set"), ("low_sim", "Low Similarity Set"))


def sampling_gain_table(rows: list[dict]):
    """Table 3: each sampling mode's relative gain over single-query, macro-averaged over the
    backbones in `rows` (`real_sampling` rows of every backbone), per dataset and subset."""
    import pandas as pd

    table = []
    for mode in dict.fromkeys(r["sampling"] for r in rows):
        row = {"System": SAMPLING_LABELS[mode]}
        for dataset in dict.fromkeys(r["dataset"] for r in rows):
            for subset, name in SUBSETS:
                gains = [r[f"{subset}_delta"] for r in rows if r["sampling"] == mode and r["dataset"] == dataset]
                row[f"{dataset} ({name})"] = percent_change(np.mean(gains))
        table.append(row)
    table = pd.DataFrame(table)
    table.attrs["backbones"] = sorted({r["backbone"] for r in rows})
    return table


def real_sampling_table(rows: list[dict], alpha: float = 0.05):
    """Table 3's detail for each backbone: relative gain over single-query per dataset and
    subset, with the MRecall@100 behind it; * = p < alpha against single-query."""
    import pandas as pd

    table = []
    for backbone, mode in dict.fromkeys((r["backbone"], r["sampling"]) for r in rows):
        row = {"Backbone": backbone, "System": SAMPLING_LABELS[mode]}
        for r in (r for r in rows if r["sampling"] == mode and r["backbone"] == backbone):
            for subset, name in (("whole", "Whole"), ("low_sim", "Low Sim.")):
                star = "*" if r[f"{subset}_p"] < alpha else ""
                row[f"{r['dataset']} {name} Δ"] = percent_change(r[f"{subset}_delta"]) + star
                row[f"{r['dataset']} {name} MRec@100"] = f"{r[f'{subset}_mean']:.2f}"
        table.append(row)
    return pd.DataFrame(table)


# ----- the vector-count x merge sweep on trained models ---------------------------------------
def synthetic_sweep(
    params02: SyntheticConfig, transform: str, setting: str, counts: tuple[int, ...], merges: tuple[str, ...]
) -> list[dict]:
    """The sweep on notebook 02's trained AMER model of one (transform, setting)."""
    device = resolve_device(params02.device)
    model = trained_synthetic_encoder(params02, transform, setting, device)
    task = task_from_params(params02, transform, setting)
    vectors = generate_queries(model, task.test_inputs, max(counts), device)
    rows = vector_count_and_merge(
        vectors,
        VectorIndex(task.corpus),
        task.test_target_ids[:, :, None],
        counts,
        merges,
        depth=params02.search_depth,
    )
    return [{"benchmark": f"synthetic {transform} {setting}", **row} for row in rows]


def real_sweep(
    params04: RealConfig, dataset: str, seed: int, counts: tuple[int, ...], merges: tuple[str, ...]
) -> list[dict]:
    """The sweep on notebook 04's trained AMER model of one dataset and seed."""
    context = RunContext(params04)
    device = resolve_device(params04.device)
    model = context.trained_encoder(dataset, "amer", seed, device)
    test = context.benchmark.questions(dataset, "test")
    vectors = query_vectors(model, context, test, max(counts), device)
    rows = vector_count_and_merge(
        vectors, ShardedFlatIndex(context.shards), context.gold(test), counts, merges, depth=params04.search_depth
    )
    return [{"benchmark": f"{dataset} ({params04.backbone}, seed {seed})", **row} for row in rows]
