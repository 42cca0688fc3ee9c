"""The paper's baselines as runs: query expansion and MMR re-ranking on each seed's trained
single-query model of notebook 04 (the diversity baselines of Tables 2-4 and 6-8), each evaluated
like a trained run (TREC run file and results JSON per dataset and seed).

Both reuse the trained single-query checkpoint of the same seed; nothing is trained here.
Re-ranking: MMR over the trained model's top 500, lambda tuned on the run's own validation split
(the 10% of the training questions it held out). Its query relevance is the document encoder's
own query embedding (`mmr_query = "encoder"`, the paper: "for both similarity, we use the
Inf-Retriever") or the trained single-query vector (`"trained"`, the offline default). Query
expansion: the question followed by keywords from the chosen source (`expansion`: `chat`
endpoint, local `hf` model, or offline `prf`, which is pseudo-relevance feedback, not an LLM, and
is labelled so).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from amer_lib.baselines.expansion import (
    ChatEndpointGenerator,
    GenerationCache,
    HFGenerator,
    PseudoRelevanceFeedback,
    expanded_query,
    generate_keywords,
)
from amer_lib.baselines.mmr import mmr_rerank, tune_lambda
from amer_lib.core.device import resolve_device
from amer_lib.core.index import ShardedFlatIndex
from amer_lib.core.metrics import K
from amer_lib.data.encoders import DocumentEncoder
from amer_lib.runs.configs import BASELINES, EXPANSION_SOURCES, RealConfig
from amer_lib.runs.run_context import RunContext, cached_result, real_entry

RERANK_DEPTH = 500  # |R| in the paper


def keyword_source(params: RealConfig, context: RunContext):
    source, model = params.expansion, params.expansion_model
    if source == "prf":
        return PseudoRelevanceFeedback([doc.full_text for doc in context.benchmark.documents()])
    if source == "chat":
        return ChatEndpointGenerator.from_env(model)
    if source == "hf":
        if not model:
            raise ValueError("expansion='hf' needs expansion_model (a Hugging Face model id or directory)")
        return HFGenerator(model, device=str(resolve_device(params.device)))
    raise ValueError(f"unknown expansion source {source!r}; valid: {', '.join(EXPANSION_SOURCES)}")


def run_baseline(params: RealConfig, dataset: str, system: str, seed: int, progress: bool = True) -> dict:
    """One baseline on one dataset and seed; its results JSON is reused when the params match."""
    if system not in BASELINES:
        raise ValueError(f"unknown baseline {system!r}; valid: {', '.join(BASELINES)}")
    params = params.for_system(system)
    cached = cached_result(params, dataset, system, seed)
    if cached is not None and _same_baseline(cached, params, system):
        return cached
    context = RunContext.of(params)
    device = resolve_device(params.device)
    model = context.trained_encoder(params, dataset, "single", seed, device)
    index = ShardedFlatIndex(context.shards)
    test = context.benchmark.questions(dataset, "test")
    if system == "rerank":
        _, val = context.benchmark.training_split(dataset, seed)

        def candidates(questions):
            vectors = context.query_vectors(model, questions, 1, device)[:, 0]
            return relevance_queries(params, questions, vectors), index.search(vectors, RERANK_DEPTH)[1]

        lam, scores = tune_lambda(*candidates(val), context.shards.rows, context.gold(val), K)
        ranked = mmr_rerank(*candidates(test), context.shards.rows, lam, K)
        facts = dict(mmr_lambda=lam, validation_mrecall=scores, mmr_query=params.mmr_query, expansion=None)
    else:
        source = keyword_source(params, context)
        if isinstance(source, PseudoRelevanceFeedback):
            keywords = source.keywords([q.question for q in test], progress=progress)
        else:
            cache = GenerationCache(Path(params.results_dir) / "expansion_cache.jsonl")
            keywords = generate_keywords([q.question for q in test], source, cache, progress=progress)
        texts = [expanded_query(q.question, words) for q, words in zip(test, keywords)]
        ranked = index.search(context.query_vectors(model, test, 1, device, texts=texts)[:, 0], K)[1]
        facts = dict(
            label=f"+{source.label}",
            expansion=_expansion_key(params, system),
            keyword_source=source.name,
            keywords=keywords,
        )
    stored = real_entry(params, dataset, system, seed, context.benchmark)
    return context.write_result(stored, dataset, system, seed, test, ranked, **facts)


def relevance_queries(params: RealConfig, questions: list, trained: np.ndarray) -> np.ndarray:
    """MMR's query vectors for `Sim_q`: the document encoder's embedding of each question, or the
    `trained` single-query vectors that found the candidates."""
    if params.mmr_query == "trained":
        return trained
    device = None if params.device == "auto" else params.device
    return DocumentEncoder(params.encoder, device=device).encode_queries([q.question for q in questions])


def _same_baseline(cached: dict, params: RealConfig, system: str) -> bool:
    """A cached baseline was made the way `params` ask (a result without `mmr_query` re-ranked the
    trained single-query model's vectors: "trained")."""
    if system == "rerank":
        return cached.get("mmr_query", "trained") == params.mmr_query
    return cached.get("expansion") == _expansion_key(params, system)


def _expansion_key(params: RealConfig, system: str) -> str | None:
    return f"{params.expansion}:{params.expansion_model}" if system == "query_expansion" else None


def run_baselines(params: RealConfig, progress: bool = True) -> list[dict]:
    return [
        run_baseline(params, dataset, system, seed, progress)
        for dataset in params.datasets
        for system in params.baselines
        for seed in params.seeds
    ]
