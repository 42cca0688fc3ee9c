"""The compound benchmark's reference systems (`amer_lib.data.compound`).

The decomposition oracle knows what AMER must discover: a compound question's components. It runs
the single-query model trained on the components alone (`compound_k1`) on each component of a
test compound, one vector per component, and merges their lists round-robin as AMER's are. How
close AMER comes to it is the measure of the method on these sets.
"""

from __future__ import annotations

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
    by_qid = compound.component_questions()
    parts = [[by_qid[qid] for qid in compound.components_of(q)] for q in test]
    k = len(parts[0])
    vectors = query_vectors(model, context, [p for row in parts for p in row], 1, device)[:, 0]
    queries = vectors.reshape(len(test), k, vectors.shape[-1])
    ranked = multi_vector_search(ShardedFlatIndex(context.shards), queries, K, depth=max(params.search_depth, K))
    return write_result(context, dataset, ORACLE, seed, test, ranked, label="Decomposition oracle", n_queries=k)
