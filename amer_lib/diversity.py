"""Notebook 06: how diverse AMER's generated vectors are (the paper's Figure 5) and how far apart
the targets of one question are, against targets of two random questions (its appendix figure).

Similarities are cosines: for the vectors AMER generates for one question, the mean over their
pairs; for targets, one gold document per answer, as everywhere else in the library.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .benchmark import N_QUERIES, PAPER_SIMILARITY, Benchmark, target_similarity
from .metrics import mean_pairwise_cosine, same_vs_random_cosine
from .real_experiment import RunContext, figure_tag, load_trained, query_vectors
from .synthetic_experiment import build_task, cached_run, generate_queries, resolve_device
from .synthetic_experiment import load_trained as load_synthetic


def synthetic_target_similarity(params: dict, setting: str, split: str = "train", n_random: int = 10_000,
                                seed: int = 0) -> list[dict]:
    """Same-question vs random-pair target cosine of notebook 02's task (rebuilt from its
    parameters, no training needed), per transform."""
    rows = []
    for transform in params["transforms"]:
        task = build_task(params, transform, setting)
        ids = {"train": task.train_target_ids, "test": task.test_target_ids}[split]
        found = same_vs_random_cosine(list(task.corpus[ids]), n_random, seed)
        rows.append({"data": f"synthetic, {transform}", "source": "synthetic", **found})
    return rows


def output_similarity(params: dict, seeds: list[int], progress: bool = True) -> list[dict]:
    """For each dataset of a notebook-04 run and each seed: the mean pairwise cosine among the
    vectors AMER generates for each test question, beside the target cosine of the test and the
    training questions. Per-question values are kept for the distribution."""
    device = resolve_device(params["device"])
    context = RunContext(params)
    rows = []
    jobs = [(dataset, seed) for dataset in params["datasets"] for seed in seeds]
    for dataset, seed in tqdm(jobs, desc=f"generate ({params['backbone']})", disable=not progress):
        questions = context.benchmark.questions(dataset, "test")
        model = load_trained(params, dataset, "amer", seed, context.shards.dim, device)
        vectors = query_vectors(model, context, questions, N_QUERIES[dataset], device)
        train_targets = context.target_similarity(context.benchmark.questions(dataset, "train"))
        rows.append(_similarity_row(params["backbone"], dataset, seed, mean_pairwise_cosine(list(vectors)),
                                    context.target_similarity(questions), train_targets))
    return rows


def _similarity_row(backbone: str, dataset: str, seed: int, outputs: np.ndarray, test_targets: np.ndarray,
                    train_targets: np.ndarray) -> dict:
    """Per-question output and target cosines `[Q]` summarised, the per-question values kept."""
    return {"backbone": backbone, "dataset": dataset, "seed": seed, "output_cos": float(outputs.mean()),
            "test_target_cos": float(test_targets.mean()), "train_target_cos": float(train_targets.mean()),
            "more_diverse_than_targets": float(np.mean(outputs < test_targets)),
            "per_question_output_cos": outputs.tolist(), "per_question_target_cos": test_targets.tolist()}


def synthetic_output_similarity(params: dict, setting: str) -> list[dict]:
    """The same measurement on notebook 02's AMER runs (one seed), where AMER is known to work:
    a reference for how diverse its vectors are when the targets are far apart."""
    device = resolve_device(params["device"])
    rows = []
    for transform in params["transforms"]:
        task = build_task(params, transform, setting)
        model = load_synthetic(params, transform, setting, device)
        outputs = generate_queries(model, task.test_inputs, params["n_queries"], device)
        rows.append(_similarity_row(params["backbone"], f"synthetic, {transform}", params["seed"],
                                    mean_pairwise_cosine(list(outputs)),
                                    mean_pairwise_cosine(list(task.corpus[task.test_target_ids])),
                                    mean_pairwise_cosine(list(task.corpus[task.train_target_ids]))))
    return rows


def figure5_rows(rows: list[dict]) -> list[dict]:
    """Per backbone and dataset: output cosine mean and std over seeds, and the target cosines."""
    table = []
    for key in dict.fromkeys((r["backbone"], r["dataset"]) for r in rows):
        runs = [r for r in rows if (r["backbone"], r["dataset"]) == key]
        outputs = np.array([r["output_cos"] for r in runs])
        table.append({"backbone": key[0], "dataset": key[1], "seeds": len(runs),
                      "output_cos_mean": float(outputs.mean()), "output_cos_std": float(outputs.std()),
                      "train_target_cos": runs[0]["train_target_cos"], "test_target_cos": runs[0]["test_target_cos"],
                      "more_diverse_than_targets": float(np.mean([r["more_diverse_than_targets"] for r in runs]))})
    return table


def real_target_similarity(real_params: list[dict], split: str = "train", n_random: int = 10_000) -> list[dict]:
    """Same-question vs random-pair target cosine of each benchmark the notebook-04 runs used
    (each prepared benchmark and encoder once), restricted to their datasets."""
    rows, seen = [], set()
    for params in real_params:
        key = (params["prepared_dir"], params["encoder"])
        if key in seen:
            continue
        seen.add(key)
        for row in target_similarity(Benchmark(params["prepared_dir"]), params["encoder"], split, n_random):
            if row["dataset"] in params["datasets"]:
                rows.append({"data": row.pop("dataset"), "source": "real", **row})
    return rows


def reported_target_similarity() -> list[dict]:
    """The paper's reported values (AmbigQA, QAMPARI), in the same rows."""
    return [{"data": r["dataset"], "source": "paper (reported)", "same_question_cos": r["same_question_cos"],
             "random_pair_cos": r["random_pair_cos"]} for r in PAPER_SIMILARITY]


def gain_over_single(synthetic_params: dict, setting: str, real_params: list[dict]) -> dict[str, dict]:
    """AMER's MRecall@100 gain over single-query per data source, in points and relative,
    (B - A) / A (infinite where single-query finds nothing): the synthetic runs of notebook 02
    (`setting`), and notebook 04's summaries (whole test set, mean over seeds, macro-averaged over
    backbones as in Table 2). Sources without runs are left out."""
    gains = {}
    for transform in synthetic_params["transforms"]:
        single, amer = (cached_run(synthetic_params, transform, setting, system) for system in ("single", "amer"))
        if single and amer:
            a, b = (100 * run["metrics"]["mrecall@100"] for run in (single, amer))
            gains[f"synthetic, {transform}"] = {"gain_points": b - a, "gain_relative": (b - a) / a if a else float("inf")}
    real = {}
    for params in real_params:
        path = Path(params["figures_dir"]) / f"summary_{figure_tag(params)}.json"
        rows = json.loads(path.read_text()) if path.exists() else []
        base = {r["dataset"]: r["whole_mean"] for r in rows if r["system"] == "single"}
        for row in rows:
            if row["system"] == "amer":
                real.setdefault(row["dataset"], []).append((row["whole_mean"] - base[row["dataset"]], row["whole_delta"]))
    for dataset, values in real.items():
        points, relative = np.mean(values, axis=0)
        gains[dataset] = {"gain_points": float(points), "gain_relative": float(relative)}
    return gains
