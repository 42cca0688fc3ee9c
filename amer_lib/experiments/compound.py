"""The compound benchmark's reference system and what AMER's vectors do on it (`amer_lib.data.compound`).

The decomposition oracle knows what AMER must discover: a compound question's components. It runs
the single-query model trained on the components alone (`compound_k1`) on each component of a
test compound, one vector per component, and merges their lists round-robin as AMER's are. How
close AMER comes to it is the measure of the method on these sets. `vector_roles` asks whether
AMER's vectors each take a component, several, or repeat one another.
"""

from __future__ import annotations

import warnings

import numpy as np

from amer_lib.core.device import resolve_device
from amer_lib.core.metrics import K
from amer_lib.core.search import ShardedFlatIndex, multi_vector_search
from amer_lib.data import compound
from amer_lib.report.summaries import summary
from amer_lib.runs.configs import RealConfig
from amer_lib.runs.text import RunContext, cached_result, query_vectors, write_result

ORACLE = "decomposition_oracle"
METRICS = {"mrecall": "MRecall@100", "mrecall_10": "MRecall@10", "recall": "Recall@100"}


def decomposition_oracle(params: RealConfig, dataset: str, seed: int) -> dict:
    """The oracle's run on `dataset`'s test compounds with seed `seed`'s `compound_k1` single-query
    model (trained by notebook 04 first); its results JSON and TREC run, like any run's."""
    cached = cached_result(params, dataset, ORACLE, seed)
    if cached is not None:
        return cached
    context = RunContext(params)
    device = resolve_device(params.device)
    model = context.trained_encoder(compound.dataset_name(1), "single", seed, device)
    test = context.benchmark.questions(dataset, "test")
    parts = _components(test)
    k = len(parts[0])
    vectors = query_vectors(model, context, [p for row in parts for p in row], 1, device)[:, 0]
    queries = vectors.reshape(len(test), k, vectors.shape[-1])
    ranked = multi_vector_search(ShardedFlatIndex(context.shards), queries, K, depth=max(params.search_depth, K))
    return write_result(context, dataset, ORACLE, seed, test, ranked, label="Decomposition oracle", n_queries=k)


def _components(questions: list) -> list[list]:
    """Each compound question's component questions, in its answers' order."""
    by_qid = compound.component_questions()
    return [[by_qid[qid] for qid in compound.components_of(q)] for q in questions]


def served_components(lists: np.ndarray, components: list[list[set[int]]]) -> list[tuple[int, int]]:
    """For each vector's ranked list `lists [n, depth]` (corpus rows): the component whose answers
    it finds most of and how many (an answer is found when one of its gold rows is in the list);
    (-1, 0) for a vector that finds none. `components`: per component, its answers' gold rows."""
    served = []
    for row in lists:
        seen = set(row.tolist())
        found = [sum(bool(gold & seen) for gold in answers) for answers in components]
        best = int(np.argmax(found))
        served.append((best, found[best]) if found[best] else (-1, 0))
    return served


def vector_roles(params: RealConfig, dataset: str, seed: int) -> dict:
    """What AMER's vectors do on `dataset`'s test compounds (seed `seed`'s trained run): the share
    of questions whose k components each get a vector of their own, the mean number of components
    served, and the share of vectors that serve none or repeat a component another vector serves."""
    context = RunContext(params)
    device = resolve_device(params.device)
    model = context.trained_encoder(dataset, "amer", seed, device)
    test = context.benchmark.questions(dataset, "test")
    vectors = query_vectors(model, context, test, context.n_queries(dataset, "amer"), device)
    _, lists = ShardedFlatIndex(context.shards).search(vectors, K)
    all_served, counts, idle, repeats = 0, [], 0, 0
    for parts, question_lists in zip(_components(test), lists):
        gold = [[set(context.rows(docs).tolist()) for docs in part.targets] for part in parts]
        served = [c for c, _ in served_components(question_lists, gold)]
        distinct = {c for c in served if c >= 0}
        all_served += len(distinct) == len(parts)
        counts.append(len(distinct))
        idle += served.count(-1)
        repeats += sum(c >= 0 for c in served) - len(distinct)
    n_vectors = lists.shape[0] * lists.shape[1]
    return {
        "dataset": dataset,
        "vectors": int(lists.shape[1]),
        "all_components_served": round(100 * all_served / len(test), 2),
        "components_served_mean": round(float(np.mean(counts)), 3),
        "vectors_serving_none": round(100 * idle / n_vectors, 2),
        "vectors_repeating_a_component": round(100 * repeats / n_vectors, 2),
    }


def compound_datasets(params: RealConfig) -> list[str]:
    return [d for d in params.datasets if compound.components_in(d) is not None]


def oracle_comparison(params: RealConfig, results: list[dict], n_resamples: int) -> list[dict]:
    """Per compound dataset: single-query, AMER and the decomposition oracle (run here for every
    seed), each metric of `METRICS` as mean and std over seeds (in %) with the paired bootstrap p
    against single-query, and AMER's share of the oracle's lead over single-query. The oracle runs
    the `compound_k1` single-query model: without `compound_k1` among the datasets it is left out,
    with a warning. [] without compound datasets."""
    datasets = compound_datasets(params)
    runs = [r for r in results if r["dataset"] in datasets and r["system"] in ("single", "amer")]
    if compound.dataset_name(1) in params.datasets:
        runs += [decomposition_oracle(params, d, seed) for d in datasets for seed in params.seeds]
    elif datasets:
        warnings.warn(
            f"the decomposition oracle runs the {compound.dataset_name(1)} single-query model, which these "
            f"datasets ({', '.join(datasets)}) do not include: the oracle is left out",
            stacklevel=2,
        )
    by_metric = {metric: summary(runs, n_resamples, metric=metric) for metric in METRICS}
    rows = []
    for i, base in enumerate(by_metric["mrecall"]):
        row = {"dataset": base["dataset"], "k": compound.components_in(base["dataset"]), "system": base["system"]}
        for metric, summaries in by_metric.items():
            found = summaries[i]
            row[f"{metric}_mean"], row[f"{metric}_std"] = found["whole_mean"], found["whole_std"]
            row[f"{metric}_p"] = found.get("whole_p", float("nan"))
        rows.append(row)
    with_oracle = {r["dataset"] for r in rows if r["system"] == ORACLE}
    for row in rows:
        if row["system"] == "amer" and row["dataset"] in with_oracle:
            single, oracle = (_row(rows, row["dataset"], s) for s in ("single", ORACLE))
            for metric in METRICS:
                lead = oracle[f"{metric}_mean"] - single[f"{metric}_mean"]
                gained = row[f"{metric}_mean"] - single[f"{metric}_mean"]
                row[f"{metric}_oracle_share"] = gained / lead if lead > 0 else float("nan")
    return rows


def _row(rows: list[dict], dataset: str, system: str) -> dict:
    return next(r for r in rows if r["dataset"] == dataset and r["system"] == system)


def vector_role_table(params: RealConfig) -> list[dict]:
    """`vector_roles` of each compound dataset with k >= 2, averaged over the seeds."""
    rows = []
    for dataset in compound_datasets(params):
        if compound.components_in(dataset) < 2:
            continue
        per_seed = [vector_roles(params, dataset, seed) for seed in params.seeds]
        row = {"dataset": dataset, "k": compound.components_in(dataset), "seeds": len(per_seed)}
        row |= {key: float(np.mean([r[key] for r in per_seed])) for key in per_seed[0] if key != "dataset"}
        rows.append(row)
    return rows
