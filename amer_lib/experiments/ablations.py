"""Ablations (notebook 05): the sampling mode of training (Table 3), and at inference the number
of generated vectors searched (n = 1..8) and how their lists are merged.

Generation is autoregressive, so the first n of 8 generated vectors are exactly what a run
asked for n vectors would produce: one generation serves every n. Trained models and cached
runs come from notebooks 02 and 04 (through their parameter files); the sampling ablation
trains only the modes those notebooks did not.
"""

from __future__ import annotations

import numpy as np

from amer_lib.config import Config
from amer_lib.core.device import resolve_device
from amer_lib.core.index import ShardedFlatIndex, VectorIndex
from amer_lib.core.merge import MERGES, get_merge
from amer_lib.core.metrics import KS, evaluate, mean_scores
from amer_lib.data.synthetic_task import task_from_params
from amer_lib.experiments import real_data, synthetic
from amer_lib.experiments.synthetic import trained_synthetic_encoder
from amer_lib.report.significance import note
from amer_lib.report.summaries import compared_count, summary, with_marks
from amer_lib.report.tables import percent_change
from amer_lib.runs.configs import RealConfig, SyntheticConfig
from amer_lib.runs.query_encoders import generated_vectors, vector_prompts
from amer_lib.runs.run_context import RunContext


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
    synthetic_config: SyntheticConfig,
    transforms: list[str],
    setting: str,
    modes: list[str],
    results_dir: str,
    runs_dir: str,
    progress: bool = True,
) -> list[dict]:
    """AMER trained under each sampling mode on notebook 02's task, plus its single-query run
    (notebook 02's runs, read back where they exist)."""
    base = synthetic_config.replace(transforms=transforms, settings=[setting], systems=["amer"])
    runs = synthetic.run_all(base.replace(systems=["single"]), progress)
    for mode in modes:
        runs += synthetic.run_all(_mode_params(base, mode, results_dir, runs_dir, "synthetic"), progress)
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
    real_config: RealConfig,
    modes: list[str],
    seeds: list[int],
    results_dir: str,
    runs_dir: str,
    resamples: int = 10_000,
    progress: bool = True,
) -> list[dict]:
    """Summary rows (mean, std, relative gain over single-query, bootstrap p) of AMER trained
    under each sampling mode on one backbone's notebook-04 datasets; single-query from notebook 04."""
    base = real_config.replace(seeds=seeds, baselines=[], systems=["amer"])
    single = real_data.run_all(base.replace(systems=["single"]), progress)
    rows = []
    for mode in modes:
        amer = real_data.run_all(_mode_params(base, mode, results_dir, runs_dir, f"real_{real_config.tag}"), progress)
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


def real_sampling_table(rows: list[dict], alpha: float = 0.05, method: str = "holm"):
    """Table 3's detail for each backbone: relative gain over single-query per dataset and
    subset, with the MRecall@100 behind it; * / † = significantly ahead of / behind single-query
    (two-sided p of the paired bootstrap over seeds and questions below alpha after `method`'s
    correction across the table's comparisons, said in the table's note)."""
    import pandas as pd

    rows = with_marks(rows, alpha, method)
    table = []
    for backbone, mode in dict.fromkeys((r["backbone"], r["sampling"]) for r in rows):
        row = {"Backbone": backbone, "System": SAMPLING_LABELS[mode]}
        for r in (r for r in rows if r["sampling"] == mode and r["backbone"] == backbone):
            for subset, name in (("whole", "Whole"), ("low_sim", "Low Sim.")):
                row[f"{r['dataset']} {name} Δ"] = percent_change(r[f"{subset}_delta"]) + r[f"{subset}_mark"]
                row[f"{r['dataset']} {name} MRec@100"] = f"{r[f'{subset}_mean']:.2f}"
        table.append(row)
    table = pd.DataFrame(table)
    table.attrs["note"] = note(compared_count(rows), alpha, method)
    return table


# ----- the vector-count x merge sweep on trained models ---------------------------------------
def synthetic_sweep(
    synthetic_config: SyntheticConfig, transform: str, setting: str, counts: tuple[int, ...], merges: tuple[str, ...]
) -> list[dict]:
    """The sweep on notebook 02's trained AMER model of one (transform, setting)."""
    device = resolve_device(synthetic_config.device)
    model = trained_synthetic_encoder(synthetic_config, transform, setting, device)
    task = task_from_params(synthetic_config, transform, setting)
    vectors = generated_vectors(model, vector_prompts(model, task.test_inputs, device), max(counts))
    rows = vector_count_and_merge(
        vectors,
        VectorIndex(task.corpus),
        task.test_target_ids[:, :, None],
        counts,
        merges,
        depth=synthetic_config.search_depth,
    )
    return [{"benchmark": f"synthetic {transform} {setting}", **row} for row in rows]


def real_sweep(
    real_config: RealConfig, dataset: str, seed: int, counts: tuple[int, ...], merges: tuple[str, ...]
) -> list[dict]:
    """The sweep on notebook 04's trained AMER model of one dataset and seed."""
    context = RunContext.of(real_config)
    device = resolve_device(real_config.device)
    model = context.trained_encoder(real_config, dataset, "amer", seed, device)
    test = context.benchmark.questions(dataset, "test")
    vectors = context.query_vectors(model, test, max(counts), device)
    rows = vector_count_and_merge(
        vectors, ShardedFlatIndex(context.shards), context.gold(test), counts, merges, depth=real_config.search_depth
    )
    return [{"benchmark": f"{dataset} ({real_config.backbone}, seed {seed})", **row} for row in rows]


def real_sweeps(
    real_configs: list[RealConfig], seed: int, counts: tuple[int, ...], merges: tuple[str, ...]
) -> list[dict]:
    """`real_sweep` of every dataset of every notebook-04 config."""
    return [row for p in real_configs for dataset in p.datasets for row in real_sweep(p, dataset, seed, counts, merges)]


def reading_lines(sampling_synthetic, real_rows: list[dict], sweep: list[dict]) -> list[str]:
    """The ablations in words: the best sampling mode per synthetic setting and per backbone,
    dataset and subset; where round-robin's MRecall@100 peaks in n and every merge at that n."""
    lines = []
    for (transform, setting), group in sampling_synthetic.groupby(["transform", "setting"], sort=False):
        best = group.loc[group["MRecall@100"].idxmax()]
        lines.append(
            f"synthetic {transform}/{setting}: best MRecall@100 {best['MRecall@100']:.2f}% by {best['System']}"
        )
    for backbone, dataset in dict.fromkeys((r["backbone"], r["dataset"]) for r in real_rows):
        rows = [r for r in real_rows if r["dataset"] == dataset and r["backbone"] == backbone]
        for subset in ("whole", "low_sim"):
            best = max(rows, key=lambda r: r[f"{subset}_mean"])
            lines.append(
                f"{backbone} {dataset} {subset}: best {best['label']} {best[f'{subset}_mean']:.2f}% "
                f"({100 * best[f'{subset}_delta']:+.1f}% vs single-query, two-sided p = "
                f"{best[f'{subset}_p_two_sided']:.3f})"
            )
    for benchmark in dict.fromkeys(r["benchmark"] for r in sweep):
        rows = [r for r in sweep if r["benchmark"] == benchmark]
        rr = max((r for r in rows if r["merge"] == "round_robin"), key=lambda r: (r["mrecall@100"], -r["n"]))
        at_n = {r["merge"]: 100 * r["mrecall@100"] for r in rows if r["n"] == rr["n"]}
        lines.append(
            f"{benchmark}: round-robin MRecall@100 peaks at n = {rr['n']} ({100 * rr['mrecall@100']:.2f}%); at that n "
            + ", ".join(f"{m} {v:.2f}%" for m, v in at_n.items())
        )
    return lines
