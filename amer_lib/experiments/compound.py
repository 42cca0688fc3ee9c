"""The compound benchmark's reference system and what AMER's vectors do on it (`amer_lib.data.compound`).

The decomposition oracle knows what AMER must discover: a compound question's components. It runs
the single-query model trained on the components alone (`compound_k1`) on each component of a
test compound, one vector per component, and merges their lists round-robin as AMER's are. How
close AMER comes to it is the measure of the method on these sets. `vector_roles` asks whether
AMER's vectors each take a component, several, or repeat one another.
"""

from __future__ import annotations

import numpy as np

from amer_lib.core.device import resolve_device
from amer_lib.core.metrics import K
from amer_lib.core.search import ShardedFlatIndex, multi_vector_search
from amer_lib.data import compound
from amer_lib.runs.configs import RealConfig
from amer_lib.runs.text import RunContext, cached_result, query_vectors, write_result

ORACLE = "decomposition_oracle"


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
