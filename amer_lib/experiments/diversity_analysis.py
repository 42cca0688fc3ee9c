"""Notebook 06: how diverse AMER's generated vectors are (the paper's Figure 5) and how far apart
the targets of one question are, against targets of two random questions (its appendix figure).

Similarities are cosines: for the vectors AMER generates for one question, the mean over their
pairs; for targets, one gold document per answer, as everywhere else in the library. The
notebook's last section compares seen with unseen questions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from amer_lib.core.device import resolve_device
from amer_lib.core.index import ShardedFlatIndex
from amer_lib.core.merge import PAPER_MERGE, get_merge
from amer_lib.core.metrics import K, mean_pairwise_cosine, mrecall_at_k, recall_at_k, same_vs_random_cosine
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.synthetic_task import task_from_params
from amer_lib.experiments.real_data_prep import PAPER_SIMILARITY, target_similarity
from amer_lib.experiments.synthetic import trained_synthetic_encoder
from amer_lib.progress import tqdm
from amer_lib.report.summaries import summary
from amer_lib.runs.configs import SYSTEMS, RealConfig, SyntheticConfig
from amer_lib.runs.query_encoders import generated_vectors, vector_prompts
from amer_lib.runs.run_context import RunContext, cached_result
from amer_lib.runs.store import SYNTHETIC_RUNS, synthetic_run_name


def synthetic_target_similarity(
    params: SyntheticConfig, setting: str, split: str = "train", n_random: int = 10_000, seed: int = 0
) -> list[dict]:
    """Same-question vs random-pair target cosine of notebook 02's task (rebuilt from its
    parameters, no training needed), per transform."""
    rows = []
    for transform in params.transforms:
        task = task_from_params(params, transform, setting)
        ids = {"train": task.train_target_ids, "test": task.test_target_ids}[split]
        found = same_vs_random_cosine(list(task.corpus[ids]), n_random, seed)
        rows.append({"data": f"synthetic, {transform}", "source": "synthetic", **found})
    return rows


def output_similarity(params: RealConfig, seeds: list[int], progress: bool = True) -> list[dict]:
    """For each dataset of a notebook-04 run and each seed: the mean pairwise cosine among the
    vectors AMER generates for each test question, beside the target cosine of the test and the
    training questions. Per-question values are kept for the distribution."""
    device = resolve_device(params.device)
    context = RunContext.of(params)
    rows = []
    jobs = [(dataset, seed) for dataset in params.datasets for seed in seeds]
    for dataset, seed in tqdm(jobs, desc=f"generate ({params.backbone})", disable=not progress):
        questions = context.benchmark.questions(dataset, "test")
        model = context.trained_encoder(params, dataset, "amer", seed, device)
        vectors = context.query_vectors(model, questions, context.n_queries(dataset, "amer"), device)
        train_targets = context.target_similarity(context.benchmark.questions(dataset, "train"))
        rows.append(
            _similarity_row(
                params.backbone_name,
                dataset,
                seed,
                mean_pairwise_cosine(list(vectors)),
                context.target_similarity(questions),
                train_targets,
            )
        )
    return rows


def _similarity_row(
    backbone: str, dataset: str, seed: int, outputs: np.ndarray, test_targets: np.ndarray, train_targets: np.ndarray
) -> dict:
    """Per-question output and target cosines `[Q]` summarised, the per-question values kept."""
    return {
        "backbone": backbone,
        "dataset": dataset,
        "seed": seed,
        "output_cos": float(outputs.mean()),
        "test_target_cos": float(test_targets.mean()),
        "train_target_cos": float(train_targets.mean()),
        "more_diverse_than_targets": float(np.mean(outputs < test_targets)),
        "per_question_output_cos": outputs.tolist(),
        "per_question_target_cos": test_targets.tolist(),
    }


def synthetic_output_similarity(params: SyntheticConfig, setting: str) -> list[dict]:
    """The same measurement on notebook 02's AMER runs (one seed), where AMER is known to work:
    a reference for how diverse its vectors are when the targets are far apart."""
    device = resolve_device(params.device)
    rows = []
    for transform in params.transforms:
        task = task_from_params(params, transform, setting)
        model = trained_synthetic_encoder(params, transform, setting, device)
        outputs = generated_vectors(model, vector_prompts(model, task.test_inputs, device), params.n_queries)
        rows.append(
            _similarity_row(
                Path(params.backbone).name,
                f"synthetic, {transform}",
                params.seed,
                mean_pairwise_cosine(list(outputs)),
                mean_pairwise_cosine(list(task.corpus[task.test_target_ids])),
                mean_pairwise_cosine(list(task.corpus[task.train_target_ids])),
            )
        )
    return rows


def figure5_rows(rows: list[dict]) -> list[dict]:
    """Per backbone and dataset: output cosine mean and std over seeds, and the target cosines."""
    table = []
    for key in dict.fromkeys((r["backbone"], r["dataset"]) for r in rows):
        runs = [r for r in rows if (r["backbone"], r["dataset"]) == key]
        outputs = np.array([r["output_cos"] for r in runs])
        table.append(
            {
                "backbone": key[0],
                "dataset": key[1],
                "seeds": len(runs),
                "output_cos_mean": float(outputs.mean()),
                "output_cos_std": float(outputs.std()),
                "train_target_cos": runs[0]["train_target_cos"],
                "test_target_cos": runs[0]["test_target_cos"],
                "more_diverse_than_targets": float(np.mean([r["more_diverse_than_targets"] for r in runs])),
            }
        )
    return table


def real_target_similarity(real_params: list[RealConfig], split: str = "train", n_random: int = 10_000) -> list[dict]:
    """Same-question vs random-pair target cosine of each benchmark the notebook-04 runs used
    (each prepared benchmark and encoder once), restricted to their datasets."""
    rows, seen = [], set()
    for params in real_params:
        key = (params.prepared_dir, params.encoder)
        if key in seen:
            continue
        seen.add(key)
        for row in target_similarity(Benchmark(params.prepared_dir), params.encoder, split, n_random):
            if row["dataset"] in params.datasets:
                rows.append({"data": row.pop("dataset"), "source": "real", **row})
    return rows


def reported_target_similarity() -> list[dict]:
    """The paper's reported values (AmbigQA, QAMPARI), in the same rows."""
    return [
        {
            "data": r["dataset"],
            "source": "paper (reported)",
            "same_question_cos": r["same_question_cos"],
            "random_pair_cos": r["random_pair_cos"],
        }
        for r in PAPER_SIMILARITY
    ]


def gain_over_single(synthetic_params: SyntheticConfig, setting: str, real_params: list[RealConfig]) -> dict[str, dict]:
    """AMER's MRecall@100 gain over single-query per data source, in points and relative,
    (B - A) / A (infinite where single-query finds nothing): the synthetic runs of notebook 02
    (`setting`), and notebook 04's runs (whole test set, mean over seeds, macro-averaged over
    backbones as in Table 2). Sources without all their runs are left out."""
    gains = {}
    for transform in synthetic_params.transforms:
        single, amer = (
            SYNTHETIC_RUNS.cached(
                synthetic_params, synthetic_run_name(transform, setting, system, synthetic_params.seed)
            )
            for system in SYSTEMS
        )
        if single and amer:
            a, b = (100 * run["metrics"]["mrecall@100"] for run in (single, amer))
            gains[f"synthetic, {transform}"] = {
                "gain_points": b - a,
                "gain_relative": (b - a) / a if a else float("inf"),
            }
    real = {}
    for params in real_params:
        runs = [cached_result(params, d, s, seed) for d in params.datasets for s in SYSTEMS for seed in params.seeds]
        rows = summary(runs, n_resamples=100) if all(runs) else []  # the gains only: no p-value is read
        base = {r["dataset"]: r["whole_mean"] for r in rows if r["system"] == "single"}
        for row in rows:
            if row["system"] == "amer":
                real.setdefault(row["dataset"], []).append(
                    (row["whole_mean"] - base[row["dataset"]], row["whole_delta"])
                )
    for dataset, values in real.items():
        points, relative = np.mean(values, axis=0)
        gains[dataset] = {"gain_points": float(points), "gain_relative": float(relative)}
    return gains


# ----- seen against unseen questions -----------------------------------------------------------------
# Seen against unseen questions (notebook 06): does a trained model find the answers of the
# questions it was trained on, and of new ones, and which of AMER's vectors find them?
#
# The offline benchmark's AMER trails single-query on its test questions; this separates a method
# that cannot represent several answers (low recall on the training questions too) from one that
# memorises them and fails to generalise from few training questions (high on training, low on
# test). Per-vector recall says whether the later vectors of the sequence carry their share.


def trained_questions(params: RealConfig, context: RunContext, dataset: str, seed: int, limit: int) -> list:
    """The first `limit` questions a run of this seed trained on (its validation share left out)."""
    return context.training_split(params, dataset, seed)[0][:limit]


def retrieval_row(
    vectors: np.ndarray, index: ShardedFlatIndex, gold: np.ndarray, k: int = K, merge: str = PAPER_MERGE
) -> dict:
    """MRecall@k of the `merge` of `vectors [Q, n, d]`'s lists and each vector's own Recall@k
    (the share of answers in its top k, as if it were searched alone)."""
    scores, ids = index.search(vectors, k)
    return {
        "mrecall": float(mrecall_at_k(get_merge(merge)(ids, scores, k), gold, k).mean()),
        "per_vector_recall": [float(recall_at_k(ids[:, j], gold, k).mean()) for j in range(ids.shape[1])],
    }


def seen_and_unseen(
    params: RealConfig, seeds: list[int], limit: int = 600, depths: tuple[int, ...] = (), progress: bool = True
) -> list[dict]:
    """For each dataset of a notebook-04 run, seed and system: MRecall@100 and per-vector
    Recall@100 on up to `limit` of its training questions and on its test questions; on the
    test questions also the MRecall at each of `depths` (`mrecall_at_depth`), each merged by the run's merge."""
    device = resolve_device(params.device)
    context = RunContext.of(params)
    index = ShardedFlatIndex(context.shards)
    rows = []
    jobs = [(d, s, system) for d in params.datasets for s in seeds for system in SYSTEMS]
    for dataset, seed, system in tqdm(jobs, desc=f"seen vs unseen ({params.backbone})", disable=not progress):
        model = context.trained_encoder(params, dataset, system, seed, device)
        n_queries = context.n_queries(dataset, system)
        for split, questions in (
            ("train", trained_questions(params, context, dataset, seed, limit)),
            ("test", context.benchmark.questions(dataset, "test")),
        ):
            vectors = context.query_vectors(model, questions, n_queries, device)
            gold = context.gold(questions)
            row = {
                "backbone": params.backbone_name,
                "dataset": dataset,
                "seed": seed,
                "system": system,
                "questions": split,
                "n_questions": len(questions),
                **retrieval_row(vectors, index, gold, merge=params.merge),
            }
            if split == "test" and depths:
                row["mrecall_at_depth"] = {
                    k: retrieval_row(vectors, index, gold, k, params.merge)["mrecall"] for k in depths
                }
            rows.append(row)
    return rows


def seen_and_unseen_table(rows: list[dict]) -> list[dict]:
    """Per backbone, dataset and question split: both systems' MRecall@100 (mean and std over
    seeds, %) and AMER's per-vector Recall@100 (mean over seeds, %)."""
    table = []
    for key in dict.fromkeys((r["backbone"], r["dataset"], r["questions"]) for r in rows):
        runs = {
            system: [r for r in rows if (r["backbone"], r["dataset"], r["questions"]) == key and r["system"] == system]
            for system in SYSTEMS
        }
        row = {"backbone": key[0], "dataset": key[1], "questions": key[2], "seeds": len(runs["amer"])}
        for system, found in runs.items():
            values = 100 * np.array([r["mrecall"] for r in found])
            row[f"{system}_mrecall_mean"], row[f"{system}_mrecall_std"] = float(values.mean()), float(values.std())
        per_vector = 100 * np.mean([r["per_vector_recall"] for r in runs["amer"]], axis=0)
        row["single_recall"] = float(100 * np.mean([r["per_vector_recall"][0] for r in runs["single"]]))
        row.update({f"amer_v{j + 1}_recall": float(v) for j, v in enumerate(per_vector)})
        table.append(row)
    return table


def figure5_lines(table5: list[dict]) -> list[str]:
    """Figure 5 in words: are AMER's vectors more or less diverse than the targets."""
    lines = []
    for row in table5:
        verdict = "more" if row["output_cos_mean"] < row["train_target_cos"] else "less"
        lines.append(
            f"{row['backbone']} on {row['dataset']}: AMER's vectors are {verdict} diverse than the training targets "
            f"(cosine {row['output_cos_mean']:.3f} ± {row['output_cos_std']:.3f} vs {row['train_target_cos']:.3f}; "
            f"test targets {row['test_target_cos']:.3f}); more diverse than its own targets on "
            f"{100 * row['more_diverse_than_targets']:.0f}% of test questions"
        )
    return lines


def seen_lines(seen_table: list[dict]) -> list[str]:
    """`seen_and_unseen_table` in words: AMER's lead over single-query per question set."""
    return [
        f"{row['backbone']} on {row['dataset']}, {row['questions']} questions: AMER {row['amer_mrecall_mean']:.1f}% vs "
        f"single-query {row['single_mrecall_mean']:.1f}% MRecall@100 "
        f"({row['amer_mrecall_mean'] - row['single_mrecall_mean']:+.1f} points)"
        for row in seen_table
    ]


def similarity_table(rows: list[dict]):
    """Figure 6's rows with the gap (same-question minus random-pair cosine) and both as distances."""
    import pandas as pd

    table = pd.DataFrame(rows)
    table["gap"] = table["same_question_cos"] - table["random_pair_cos"]
    table["same_question_distance"] = 1 - table["same_question_cos"]
    table["random_pair_distance"] = 1 - table["random_pair_cos"]
    return table


def similarity_and_gain(similarity, gains: dict[str, dict]):
    """The measured rows of `similarity_table` with AMER's gain over single-query on each (NaN
    where no runs were found), from the most similar targets to the least."""
    measured = similarity[similarity["source"] != "paper (reported)"].copy()
    for key in ("gain_points", "gain_relative"):
        measured[key] = [gains.get(data, {}).get(key, float("nan")) for data in measured["data"]]
    return measured.sort_values("same_question_cos")


def gain_lines(measured) -> list[str]:
    """`similarity_and_gain` in words, one line per data source."""
    lines = []
    for row in measured.to_dict("records"):
        gain = (
            "no runs found"
            if np.isnan(row["gain_points"])
            else f"{row['gain_points']:+.1f} points ({100 * row['gain_relative']:+.1f}% relative)"
        )
        lines.append(
            f"{row['data']:20s}: same-question cosine {row['same_question_cos']:+.3f} "
            f"(random pairs {row['random_pair_cos']:+.3f}); AMER vs single-query MRecall@100: {gain}"
        )
    return lines
