"""What every run on a prepared text benchmark shares (notebook 04's runs, their baselines and the
analyses that reload them): the questions, the document embeddings and their index, the query
vectors a trained encoder generates, and the scored, written results of a run."""

from __future__ import annotations

import numpy as np
import torch

from amer_lib.core.backbones import get_backbone, load_tokenizer
from amer_lib.core.metrics import KS, K, evaluate, mean_pairwise_cosine, pad_clusters
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.data.datasets import TextData, target_tensor
from amer_lib.data.prepared import N_QUERIES, Benchmark
from amer_lib.data.prompts import tokenize_prompts
from amer_lib.data.questions import MultiAnswerQuestion
from amer_lib.io import git_commit, write_trec_run
from amer_lib.runs.configs import RealConfig
from amer_lib.runs.models import load_trained
from amer_lib.runs.store import REAL_RUNS, real_run_name

NEGATIVE_POOL = 1_000_000  # random negatives are drawn from at most this many corpus rows


class RunContext:
    """What every run on one benchmark shares: questions, document embeddings, their index."""

    def __init__(self, params: RealConfig):
        self.params = params
        self.benchmark = Benchmark(params.prepared_dir)
        self.shards = self.benchmark.embeddings(params.encoder)
        self.tokenizer = load_tokenizer(params.backbone)  # loaded once for training and retrieval
        rows = np.arange(len(self.shards))
        if len(rows) > NEGATIVE_POOL:  # a 25M x 1536 corpus does not fit in memory as float32
            rows = np.sort(np.random.default_rng(0).choice(len(rows), NEGATIVE_POOL, replace=False))
        self.negatives = torch.from_numpy(self.shards.rows(rows))

    def trained_encoder(self, dataset: str, system: str, seed: int, device: torch.device) -> AMERQueryEncoder:
        """The encoder of a finished notebook-04 run of these parameters, with its kept weights."""
        name, facts = real_run_name(dataset, system, seed), run_facts(self.benchmark, dataset, system)
        return load_trained(REAL_RUNS, self.params, name, self.shards.dim, device, facts)

    def n_queries(self, dataset: str, system: str) -> int:
        """Query vectors per question: one for single-query, the dataset's number for AMER."""
        return 1 if system == "single" else self.benchmark.n_queries(dataset)

    def rows(self, doc_ids: list[str]) -> np.ndarray:
        return np.array([self.shards.row_of[d] for d in doc_ids])

    def gold(self, questions: list[MultiAnswerQuestion]) -> np.ndarray:
        return pad_clusters([[self.rows(docs).tolist() for docs in q.targets] for q in questions])

    def text_data(self, questions: list[MultiAnswerQuestion], texts: list[str] | None = None) -> TextData:
        """Prompts of the questions (or of `texts`, e.g. expanded queries) and their targets."""
        backbone = self.params.backbone
        texts = [q.question for q in questions] if texts is None else texts
        ids, mask = tokenize_prompts(self.tokenizer, texts, get_backbone(backbone))
        targets, target_mask = target_tensor(questions, lambda docs: self.shards.rows(self.rows(docs)))
        return TextData(ids, mask, targets, target_mask)

    def target_similarity(self, questions: list[MultiAnswerQuestion]) -> np.ndarray:
        return mean_pairwise_cosine([self.shards.answer_vectors(q) for q in questions])


def run_facts(benchmark: Benchmark, dataset: str, system: str) -> dict:
    """What shapes an AMER run beyond its config: its dataset's number of query vectors, from the
    prepared benchmark. Left out where it is the paper's number for a built-in dataset, so the runs
    made before it was part of the key keep their results and checkpoint folders."""
    if system != "amer" or N_QUERIES.get(dataset) == benchmark.n_queries(dataset):
        return {}
    return {"n_queries": benchmark.n_queries(dataset)}


def cached_result(params: RealConfig, dataset: str, system: str, seed: int) -> dict | None:
    """The run's results when it was made with these run parameters, else None."""
    facts = run_facts(Benchmark(params.prepared_dir), dataset, system)
    return REAL_RUNS.cached(params, real_run_name(dataset, system, seed), facts)


def write_result(
    context: RunContext,
    dataset: str,
    system: str,
    seed: int,
    questions: list[MultiAnswerQuestion],
    ranked: np.ndarray,
    **details,
) -> dict:
    """Score a ranked top K `[Q, K]` (corpus rows), write its TREC run file (its qrels are the
    prepared benchmark's) and results JSON."""
    params, name = context.params, real_run_name(dataset, system, seed)
    context.benchmark.qrels(dataset)
    write_trec_run(
        REAL_RUNS.result_path(params, name, ".trec"),
        [q.qid for q in questions],
        [[context.shards.ids[r] for r in row if r >= 0] for row in ranked],
        name,
        K,
    )
    scores = evaluate(ranked, context.gold(questions), KS)
    result = dict(
        params=params.as_dict(),
        seed=seed,
        git_commit=git_commit(),
        dataset=dataset,
        system=system,
        qids=[q.qid for q in questions],
        mrecall=scores[f"mrecall@{K}"].tolist(),
        recall=scores[f"recall@{K}"].tolist(),
        **{f"{m}_{k}": scores[f"{m}@{k}"].tolist() for m in ("mrecall", "recall") for k in KS if k != K},
        target_similarity=context.target_similarity(questions).tolist(),
        **details,
    )
    return REAL_RUNS.write(params, name, result)


def query_vectors(
    model: AMERQueryEncoder,
    context: RunContext,
    questions: list[MultiAnswerQuestion],
    n_queries: int,
    device: torch.device,
    texts: list[str] | None = None,
) -> np.ndarray:
    """The generated query vectors `[Q, n, d]` of the questions (or of `texts` in their place)."""
    return generated_vectors(model, context.text_data(questions, texts).to(device), n_queries)


@torch.no_grad()
def generated_vectors(model: AMERQueryEncoder, data: TextData, n_queries: int, batch_size: int = 128) -> np.ndarray:
    """`n_queries` generated vectors `[Q, n, d]` for every prompt of `data` (on the model's device)."""
    return np.concatenate(
        [model.generate(prompt, n_queries).float().cpu().numpy() for prompt in _prompts(model, data, batch_size)]
    )


@torch.no_grad()
def generated_states(
    model: AMERQueryEncoder, data: TextData, n_queries: int, batch_size: int = 128
) -> tuple[np.ndarray, torch.Tensor]:
    """`generated_vectors` and the hidden states they were read from `[Q, n, H]` (float32, on the
    CPU): what a stop head reads (notebook 07)."""
    vectors, states = [], []
    for prompt in _prompts(model, data, batch_size):
        generated, hidden = model.generate_with_states(prompt, n_queries)
        vectors.append(generated.float().cpu().numpy())
        states.append(hidden.float().cpu())
    return np.concatenate(vectors), torch.cat(states)


def _prompts(model: AMERQueryEncoder, data: TextData, batch_size: int):
    """The prompts of `data`, `batch_size` at a time, with the model in eval mode."""
    model.eval()
    for start in range(0, len(data), batch_size):
        yield data.prompt(model, torch.arange(start, min(start + batch_size, len(data)), device=data.input_ids.device))
