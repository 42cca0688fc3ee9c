"""Beyond the paper: the compound benchmark's ceilings (the decomposition oracle and the teacher's
decomposition), AMER's share of their lead, and what AMER's vectors do on compound questions
(notebook 04 on a compound benchmark, `amer_lib.beyond.compound`).

The decomposition oracle knows what AMER must discover: a compound question's components. It runs
the single-query model trained on the components alone (`compound_k1`) on each component of a
test compound, one vector per component, and merges their lists as AMER's are (the run's `merge`,
round-robin in the paper). How close AMER comes to it is the measure of the method on these sets.
The teacher's decomposition is the same search with the off-the-shelf encoder that embedded the
corpus (`params.encoder`) on each component: nothing trained, so one seed-free run. That encoder
chose the findable test components and is the teacher of the component term (`beyond.component`),
so it can beat the trained oracle: the tables measure AMER against the better of the two.
`vector_roles` asks whether AMER's vectors each take a component, several, or repeat one another.
"""

from __future__ import annotations

import warnings

import numpy as np

from amer_lib.beyond import compound
from amer_lib.core.device import resolve_device
from amer_lib.core.index import ShardedFlatIndex, multi_vector_search
from amer_lib.core.metrics import K
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.questions import MultiAnswerQuestion
from amer_lib.progress import AmerWarning
from amer_lib.report.summaries import summary
from amer_lib.runs.configs import RealConfig
from amer_lib.runs.run_context import RunContext, cached_result, real_entry

ORACLE = "decomposition_oracle"
TEACHER = "teacher_decomposition"
CEILINGS = (ORACLE, TEACHER)
METRICS = {"mrecall": "MRecall@100", "mrecall_10": "MRecall@10", "recall": "Recall@100"}


def decomposition_oracle(params: RealConfig, dataset: str, seed: int) -> dict:
    """The oracle's run on `dataset`'s test compounds with seed `seed`'s `compound_k1` single-query
    model (trained by notebook 04 first); its results JSON and TREC run, like any run's."""
    params = params.for_system(ORACLE)
    cached = cached_result(params, dataset, ORACLE, seed)
    if cached is not None:
        return cached
    context = RunContext.of(params)
    device = resolve_device(params.device)
    model = context.trained_encoder(params, compound.dataset_name(1), "single", seed, device)
    test = context.benchmark.questions(dataset, "test")
    parts = _components(test)
    k = len(parts[0])
    vectors = context.query_vectors(model, [p for row in parts for p in row], 1, device)[:, 0]
    queries = vectors.reshape(len(test), k, vectors.shape[-1])
    return _decomposition_result(params, context, dataset, ORACLE, seed, test, queries, "Decomposition oracle")


def teacher_decomposition(params: RealConfig, dataset: str) -> dict:
    """The teacher's decomposition on `dataset`'s test compounds: the off-the-shelf encoder's
    vector of each component (`RunContext.part_vectors`), searched and merged like the oracle's;
    one seed-free run (nothing is trained), its results JSON and TREC run like any run's."""
    params = params.for_system(TEACHER)
    cached = cached_result(params, dataset, TEACHER, None)
    if cached is not None:
        return cached
    context = RunContext.of(params)
    test = context.benchmark.questions(dataset, "test")
    vectors, mask = context.part_vectors(test)
    if not mask.all():
        raise ValueError(f"{dataset}'s test questions have different numbers of components: not a compound dataset")
    label = "Decomposition, off-the-shelf encoder"
    return _decomposition_result(params, context, dataset, TEACHER, None, test, vectors.numpy(), label)


def _decomposition_result(
    params: RealConfig,
    context: RunContext,
    dataset: str,
    system: str,
    seed: int | None,
    test: list,
    queries: np.ndarray,
    label: str,
) -> dict:
    """Search each component's vector of `queries [Q, k, d]`, merge the lists as AMER's are
    (`merge`) and write the run's results."""
    index, depth = ShardedFlatIndex(context.shards), max(params.search_depth, K)
    ranked = multi_vector_search(index, queries, K, depth=depth, merge=params.merge)
    stored = real_entry(params, dataset, system, seed, context.benchmark)
    return context.write_result(stored, dataset, system, seed, test, ranked, label=label, n_queries=queries.shape[1])


def _components(questions: list[MultiAnswerQuestion]) -> list[list[MultiAnswerQuestion]]:
    """Each compound question's components in its answers' order, as questions of their own: the
    answers that share an `answer_questions` entry, under that text (for the compound benchmark,
    exactly its WordNet component questions; for a dataset of your own, what its file gives)."""
    parts = []
    for question in questions:
        groups: dict[str, list[int]] = {}
        for i, text in enumerate(question.answer_questions):
            groups.setdefault(text, []).append(i)
        answers, targets = question.answers, question.targets
        parts.append([
            MultiAnswerQuestion(f"{question.qid}#{c}", text, [answers[i] for i in rows], [targets[i] for i in rows])
            for c, (text, rows) in enumerate(groups.items())
        ])  # fmt: skip
    return parts


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
    context = RunContext.of(params)
    device = resolve_device(params.device)
    model = context.trained_encoder(params, dataset, "amer", seed, device)
    test = context.benchmark.questions(dataset, "test")
    vectors = context.query_vectors(model, test, context.n_queries(dataset, "amer"), device)
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


def compound_datasets(params: RealConfig) -> dict[str, int]:
    """The datasets whose test questions are compounds, with their k: the compound benchmark's
    (`compound_k<k>`), and a dataset of your own whose every test question carries
    `answer_questions` naming the same number of component questions, 2 or more (the FOLDOC
    replication, `studies/foldoc/build.py`): for those the teacher's decomposition is run as for the
    compound benchmark (the trained oracle needs the compound benchmark's `compound_k1`)."""
    found, benchmark = {}, None
    for dataset in params.datasets:
        k = compound.components_in(dataset)
        if k is None:
            benchmark = benchmark or Benchmark(params.prepared_dir)
            k = components_per_question(benchmark.questions(dataset, "test"))
        if k is not None:
            found[dataset] = k
    return found


def components_per_question(questions: list[MultiAnswerQuestion]) -> int | None:
    """The number of component questions every one of `questions` has (distinct `answer_questions`),
    when it is the same for all and at least 2; None otherwise."""
    counts = {len(set(q.answer_questions)) if q.answer_questions else 1 for q in questions}
    return counts.pop() if len(counts) == 1 and min(counts) >= 2 else None


def oracle_comparison(params: RealConfig, results: list[dict], n_resamples: int) -> list[dict]:
    """Per compound dataset: single-query, AMER, the decomposition oracle (run here for every seed)
    and the teacher's decomposition (run here once, seed-free), each metric of `METRICS` as mean and
    std over seeds (in %) with the paired bootstrap p's against single-query (over seeds and
    questions: `_p` ahead, `_p_behind`, `_p_two_sided`), and AMER's share of each ceiling's lead
    over single-query (`ceiling_shares`). The oracle runs the `compound_k1` single-query model:
    without `compound_k1` among the datasets it is left out, with a warning. [] without compound
    datasets."""
    datasets = compound_datasets(params)
    runs = [r for r in results if r["dataset"] in datasets and r["system"] in ("single", "amer")]
    if compound.dataset_name(1) in params.datasets:
        runs += [decomposition_oracle(params, d, seed) for d in datasets for seed in params.seeds]
    elif datasets:
        warnings.warn(
            f"the trained decomposition oracle runs the {compound.dataset_name(1)} single-query model, which "
            f"these datasets ({', '.join(datasets)}) do not include: the trained oracle is left out, and the "
            "compounds are compared with the off-the-shelf encoder's decomposition alone",
            AmerWarning,
            stacklevel=2,
        )
    runs += [teacher_decomposition(params, d) for d in datasets]
    by_metric = {metric: summary(runs, n_resamples, metric=metric) for metric in METRICS}
    rows = []
    for i, base in enumerate(by_metric["mrecall"]):
        row = {"dataset": base["dataset"], "k": datasets[base["dataset"]], "system": base["system"]}
        row["seeds"] = base["seeds"]
        for metric, summaries in by_metric.items():
            found = summaries[i]
            row[f"{metric}_mean"], row[f"{metric}_std"] = found["whole_mean"], found["whole_std"]
            row[f"{metric}_p"] = found.get("whole_p", float("nan"))
            if "whole_p" in found:  # the systems compared with single-query: the rest of the comparison
                row[f"{metric}_p_behind"] = found["whole_p_behind"]
                row[f"{metric}_p_two_sided"] = found["whole_p_two_sided"]
        rows.append(row)
    return ceiling_shares(rows)


def ceiling_shares(rows: list[dict]) -> list[dict]:
    """`rows` (one per dataset and system, each metric of `METRICS` as `<metric>_mean`) with AMER's
    share of each ceiling's lead over single-query added to AMER's rows: `<metric>_oracle_share`
    (the trained oracle), `<metric>_teacher_share` (the teacher's decomposition) and
    `<metric>_ceiling_share` against the better ceiling, the one of higher MRecall@100 mean, named
    in `ceiling` (one of `CEILINGS`). A share is NaN where the ceiling does not lead."""
    for row in rows:
        if row["system"] != "amer":
            continue
        present = {r["system"]: r for r in rows if r["dataset"] == row["dataset"] and r["system"] in CEILINGS}
        if not present:
            continue
        single = _row(rows, row["dataset"], "single")
        for system, name in ((ORACLE, "oracle"), (TEACHER, "teacher")):
            if system in present:
                for metric in METRICS:
                    row[f"{metric}_{name}_share"] = _share(row, single, present[system], metric)
        row["ceiling"] = max(present, key=lambda system: present[system]["mrecall_mean"])
        for metric in METRICS:
            row[f"{metric}_ceiling_share"] = _share(row, single, present[row["ceiling"]], metric)
    return rows


def _share(amer: dict, single: dict, ceiling: dict, metric: str) -> float:
    """AMER's share of the ceiling's lead over single-query on `metric` (NaN without a lead)."""
    lead = ceiling[f"{metric}_mean"] - single[f"{metric}_mean"]
    return (amer[f"{metric}_mean"] - single[f"{metric}_mean"]) / lead if lead > 0 else float("nan")


def _row(rows: list[dict], dataset: str, system: str) -> dict:
    return next(r for r in rows if r["dataset"] == dataset and r["system"] == system)


def vector_role_table(params: RealConfig) -> list[dict]:
    """`vector_roles` of each compound dataset with k >= 2, averaged over the seeds."""
    rows = []
    for dataset, k in compound_datasets(params).items():
        if k < 2:
            continue
        per_seed = [vector_roles(params, dataset, seed) for seed in params.seeds]
        row = {"dataset": dataset, "k": k, "seeds": len(per_seed)}
        row |= {key: float(np.mean([r[key] for r in per_seed])) for key in per_seed[0] if key != "dataset"}
        rows.append(row)
    return rows
