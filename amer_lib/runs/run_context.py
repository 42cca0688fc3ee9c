"""What every run on a prepared text benchmark shares (notebook 04's runs, their baselines and the
analyses that reload them): the questions, the document embeddings and their index, the query
vectors a trained encoder generates, and the scored, written results of a run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from amer_lib.core.backbones import get_backbone, load_tokenizer
from amer_lib.core.metrics import KS, K, evaluate, mean_pairwise_cosine, pad_clusters
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import TrainConfig
from amer_lib.data import hard_negatives
from amer_lib.data.benchmark import Benchmark, draw_options
from amer_lib.data.datasets import ComponentTextData, MinedTextData, TextData, padded_vectors, target_tensor
from amer_lib.data.encoders import DocumentEncoder
from amer_lib.data.prompts import PromptTemplate
from amer_lib.data.questions import MultiAnswerQuestion, component_texts
from amer_lib.io import git_commit, write_trec_run
from amer_lib.runs.configs import RealConfig
from amer_lib.runs.query_encoders import EncoderRecipe, generated_vectors, load_trained, text_prompts, train_config
from amer_lib.runs.store import REAL_RUNS, StoredRun, real_run_name

NEGATIVE_POOL = 1_000_000  # random negatives are drawn from at most this many corpus rows


class RunContext:
    """What every run on one benchmark shares: questions, document embeddings (of `encoder`), the
    negatives drawn from them, and `backbone`'s tokenizer and prompt."""

    def __init__(self, benchmark: Benchmark, encoder: str, backbone: str):
        self.benchmark = benchmark
        self.encoder = encoder
        self.shards = benchmark.embeddings(encoder)
        self.backbone = get_backbone(backbone)
        self.tokenizer = load_tokenizer(backbone)  # loaded once for training and retrieval
        self.prompt = PromptTemplate.of(self.backbone, self.tokenizer)
        rows = np.arange(len(self.shards))
        if len(rows) > NEGATIVE_POOL:  # a 25M x 1536 corpus does not fit in memory as float32
            rows = np.sort(np.random.default_rng(0).choice(len(rows), NEGATIVE_POOL, replace=False))
        # in the shards' float16 (6.1 GB less for 1M x 1536 than float32, the same values): each
        # batch's draw is made float32 (`core.train.draw_batch`)
        self.negatives = torch.from_numpy(self.shards.rows(rows, dtype=self.shards.shards[0].dtype))

    @classmethod
    def of(cls, params: RealConfig, benchmark: Benchmark | None = None) -> RunContext:
        """The context of notebook 04's runs of `params` (`benchmark`: when the caller has opened it)."""
        return cls(benchmark or Benchmark(params.prepared_dir), params.encoder, params.backbone)

    def trained_encoder(
        self, params: RealConfig, dataset: str, system: str, seed: int, device: torch.device
    ) -> AMERQueryEncoder:
        """The encoder of a finished notebook-04 run of `params`, with its kept weights."""
        return self.trained_run(params, dataset, system, seed, device)[0]

    def trained_run(
        self, params: RealConfig, dataset: str, system: str, seed: int, device: torch.device
    ) -> tuple[AMERQueryEncoder, dict]:
        """`trained_encoder` and the run's results."""
        name, facts = real_run_name(dataset, system, seed), run_facts(self.benchmark, dataset, system)
        return load_trained(REAL_RUNS, params.for_system(system), name, self.shards.dim, device, facts)

    def training_split(
        self, params: RealConfig, dataset: str, seed: int
    ) -> tuple[list[MultiAnswerQuestion], list[MultiAnswerQuestion]]:
        """The questions a run of `params` trains and validates on (`Benchmark.training_split` with the
        training draw its fields set, `draw_options`)."""
        return self.benchmark.training_split(dataset, seed, **draw_options(params))

    def n_queries(self, dataset: str, system: str) -> int:
        """Query vectors per question: one for single-query, the dataset's number for AMER."""
        return 1 if system == "single" else self.benchmark.n_queries(dataset)

    def rows(self, doc_ids: list[str]) -> np.ndarray:
        return np.array([self.shards.row_of[d] for d in doc_ids])

    def gold(self, questions: list[MultiAnswerQuestion]) -> np.ndarray:
        return pad_clusters([[self.rows(docs).tolist() for docs in q.targets] for q in questions])

    def text_data(self, questions: list[MultiAnswerQuestion], texts: list[str] | None = None) -> TextData:
        """Prompts of the questions (or of `texts`, e.g. expanded queries) and their targets."""
        texts = [q.question for q in questions] if texts is None else texts
        ids, mask = self.prompt.tokenize(self.tokenizer, texts)
        targets, target_mask = target_tensor(questions, lambda docs: self.shards.rows(self.rows(docs)))
        return TextData(ids, mask, targets, target_mask)

    def mined_text_data(self, questions: list[MultiAnswerQuestion]) -> MinedTextData:
        """`text_data` with each question's hard negatives mined by the off-the-shelf encoder that
        embedded the corpus, kept in the benchmark's folder for the runs after this one."""
        folder = self.benchmark.directory / "hard_negatives"
        rows = hard_negatives.cached_mine(folder, questions, DocumentEncoder(self.encoder), self.shards)
        hard = torch.from_numpy(self.shards.rows(rows.reshape(-1)).reshape(*rows.shape, -1))
        return MinedTextData(*self.text_data(questions)._tensors(), hard)

    def training_data(
        self, questions: list[MultiAnswerQuestion], *, mined_negatives: bool = False, component_vectors: bool = False
    ) -> TextData:
        """The data a notebook-04 run trains on: `text_data`, with the mined hard negatives or the
        component vectors its levers need (beyond the paper; not both at once: `RealRun.of` refuses it)."""
        if mined_negatives:
            return self.mined_text_data(questions)
        return self.component_text_data(questions) if component_vectors else self.text_data(questions)

    def part_vectors(self, questions: list[MultiAnswerQuestion]) -> tuple[torch.Tensor, torch.Tensor]:
        """The off-the-shelf encoder's query vectors of the questions each one is made of `[Q, C, d]`
        and their mask `[Q, C]` (valid first), read from its `answer_questions`
        (`questions.component_texts`: a compound question's components in its answers' order,
        AmbigQA's disambiguated questions; a question without them itself; an error when none has
        them). The one place the component texts are read."""
        parts = component_texts(questions)
        texts = sorted({text for row in parts for text in row})  # each component encoded once
        encoded = dict(zip(texts, DocumentEncoder(self.encoder).encode_queries(texts)))
        return padded_vectors(parts, lambda items: np.stack([encoded[text] for text in items]))

    def component_text_data(self, questions: list[MultiAnswerQuestion]) -> ComponentTextData:
        """`text_data` with `part_vectors`, the targets of the component term (beyond the paper)."""
        return ComponentTextData(*self.text_data(questions)._tensors(), *self.part_vectors(questions))

    def query_vectors(
        self,
        model: AMERQueryEncoder,
        questions: list[MultiAnswerQuestion],
        n_queries: int,
        device: torch.device,
        texts: list[str] | None = None,
    ) -> np.ndarray:
        """The generated query vectors `[Q, n, d]` of the questions (or of `texts` in their place)."""
        return generated_vectors(model, text_prompts(model, self.text_data(questions, texts).to(device)), n_queries)

    def target_similarity(self, questions: list[MultiAnswerQuestion]) -> np.ndarray:
        return mean_pairwise_cosine([self.shards.answer_vectors(q) for q in questions])

    def write_result(
        self,
        stored: StoredRun,
        dataset: str,
        system: str,
        seed: int,
        questions: list[MultiAnswerQuestion],
        ranked: np.ndarray,
        **details,
    ) -> dict:
        """Score a ranked top K `[Q, K]` (corpus rows), write its TREC run file (its qrels are the
        prepared benchmark's) and the results JSON of the notebook-04 run `stored` (`real_entry`)."""
        self.benchmark.qrels(dataset)
        trec = write_trec_run(
            stored.path(".trec"),
            [q.qid for q in questions],
            [[self.shards.ids[r] for r in row if r >= 0] for row in ranked],
            stored.name,
            K,
        )
        scores = evaluate(ranked, self.gold(questions), KS)
        result = dict(
            params=stored.params,
            seed=seed,
            git_commit=git_commit(),
            dataset=dataset,
            system=system,
            qids=[q.qid for q in questions],
            mrecall=scores[f"mrecall@{K}"].tolist(),
            recall=scores[f"recall@{K}"].tolist(),
            **{f"{m}_{k}": scores[f"{m}@{k}"].tolist() for m in ("mrecall", "recall") for k in KS if k != K},
            target_similarity=self.target_similarity(questions).tolist(),
            trec_sha256=trec,
            **details,
        )
        return stored.write(result)


def run_facts(benchmark: Benchmark, dataset: str, system: str) -> dict:
    """What shapes a run beyond its config: the prepared benchmark's contents (`Benchmark.identity`)
    and AMER's number of query vectors on the dataset."""
    facts = {"benchmark": benchmark.identity}
    return {**facts, "n_queries": benchmark.n_queries(dataset)} if system == "amer" else facts


def real_entry(params: RealConfig, dataset: str, system: str, seed: int, benchmark: Benchmark) -> StoredRun:
    """Notebook 04's run of `system` in the run store (`REAL_RUNS`), keyed by the config `system`
    trains by (`RealConfig.for_system`) and the dataset's number of query vectors (`run_facts`)."""
    name, facts = real_run_name(dataset, system, seed), run_facts(benchmark, dataset, system)
    return REAL_RUNS.entry(params.for_system(system), name, facts)


def cached_result(
    params: RealConfig, dataset: str, system: str, seed: int, benchmark: Benchmark | None = None
) -> dict | None:
    """The run's results when it was made with these run parameters, else None; `benchmark`: the
    prepared benchmark when the caller has opened it already."""
    return real_entry(params, dataset, system, seed, benchmark or Benchmark(params.prepared_dir)).cached()


@dataclass(frozen=True)
class RealRun:
    """One notebook-04 run, resolved from the notebook's config once (`RealRun.of`): what its
    training, search and results need, and its place in the run store."""

    dataset: str
    system: str
    seed: int
    encoder: EncoderRecipe  # the query encoder it trains
    document_encoder: str  # the corpus embeddings it searches
    training: TrainConfig  # n_outputs: its number of query vectors
    draw: dict  # the training draw's options (`data.benchmark.TRAINING_DRAWS`)
    mined_negatives: bool  # beyond the paper: trains on the mined hard negatives
    component_vectors: bool  # beyond the paper: the component term's vectors
    merge: str
    search_depth: int
    device: str
    stored: StoredRun

    @classmethod
    def of(cls, params: RealConfig, benchmark: Benchmark, dataset: str, system: str, seed: int) -> RealRun:
        params = params.for_system(system)  # single-query trains without AMER's loss levers
        n_queries = 1 if system == "single" else benchmark.n_queries(dataset)
        mined, components = params.hard_negative_share > 0, params.component_weight > 0
        if mined and components:
            raise ValueError(
                "hard_negative_share > 0 and component_weight > 0 cannot be combined: choose one of the two levers"
            )
        return cls(
            dataset=dataset,
            system=system,
            seed=seed,
            encoder=EncoderRecipe.of(params),
            document_encoder=params.encoder,
            training=train_config(params, n_queries, seed, group_by_targets=True),
            draw=draw_options(params),
            mined_negatives=mined,
            component_vectors=components,
            merge=params.merge,
            search_depth=params.search_depth,
            device=params.device,
            stored=real_entry(params, dataset, system, seed, benchmark),
        )

    @property
    def n_queries(self) -> int:
        return self.training.n_outputs
