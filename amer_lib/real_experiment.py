"""Notebook 04: single-query and AMER query encoders on a prepared text benchmark.

Each (dataset, system, seed) run trains a query encoder against the frozen document
embeddings, keeps the best checkpoint by validation loss, retrieves the top 100 for every test
question (AMER: round-robin over its n vectors) and writes a TREC run file and a results JSON
with per-question scores, so that the tables, the bootstrap and the figures are recomputed
from files. A rerun with the same parameters reads the results back.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from . import distributed
from .backbones import add_lora, get_backbone, load_backbone, load_tokenizer
from .benchmark import N_QUERIES, Benchmark
from .data.questions import MultiAnswerQuestion
from .io import git_commit, write_json, write_trec_run
from .metrics import low_similarity_subset, mean_pairwise_cosine, mrecall_at_k, pad_clusters, paired_bootstrap, recall_at_k
from .model import AMERQueryEncoder
from .parallel import run_parallel
from .prompts import TextData, target_tensor, tokenize_prompts
from .search import ShardedFlatIndex, multi_vector_search
from .synthetic_experiment import params_digest, resolve_device, run_key
from .train import TrainConfig, load_trainable_state, split_train_validation, train

K = 100
VALIDATION_FRACTION = 0.1
NEGATIVE_POOL = 1_000_000  # random negatives are drawn from at most this many corpus rows
SYSTEMS = ("single", "amer")
# parameters that do not change what one (dataset, system, seed) run trains and retrieves
# (nproc_per_node shares each global batch among processes: the same run, up to float rounding)
NON_RUN_KEYS = ("datasets", "systems", "seeds", "baselines", "expansion", "expansion_model", "bootstrap_resamples",
                "figures_dir", "nproc_per_node", "tuning_grid")


def run_name(dataset: str, system: str, seed: int) -> str:
    return f"{dataset}_{system}_seed{seed}"


class RunContext:
    """What every run on one benchmark shares: questions, document embeddings, their index."""

    def __init__(self, params: dict):
        self.params = params
        self.benchmark = Benchmark(params["prepared_dir"])
        self.shards = self.benchmark.embeddings(params["encoder"])
        self.row_of = {doc_id: row for row, doc_id in enumerate(self.shards.ids)}
        self.tokenizer = load_tokenizer(params["backbone"])  # loaded once for training and retrieval
        rows = np.arange(len(self.shards))
        if len(rows) > NEGATIVE_POOL:  # a 25M x 1536 corpus does not fit in memory as float32
            rows = np.sort(np.random.default_rng(0).choice(len(rows), NEGATIVE_POOL, replace=False))
        self.negatives = torch.from_numpy(self.shards.rows(rows))

    def rows(self, doc_ids: list[str]) -> np.ndarray:
        return np.array([self.row_of[d] for d in doc_ids])

    def gold(self, questions: list[MultiAnswerQuestion]) -> np.ndarray:
        return pad_clusters([[self.rows(docs).tolist() for docs in q.targets] for q in questions])

    def text_data(self, questions: list[MultiAnswerQuestion], texts: list[str] | None = None) -> TextData:
        """Prompts of the questions (or of `texts`, e.g. expanded queries) and their targets."""
        backbone = self.params["backbone"]
        texts = [q.question for q in questions] if texts is None else texts
        ids, mask = tokenize_prompts(self.tokenizer, texts, get_backbone(backbone))
        targets, target_mask = target_tensor(questions, lambda docs: self.shards.rows(self.rows(docs)))
        return TextData(ids, mask, targets, target_mask)

    def target_similarity(self, questions: list[MultiAnswerQuestion]) -> np.ndarray:
        return mean_pairwise_cosine([self.shards.rows(self.rows([docs[0] for docs in q.targets])) for q in questions])


def build_query_encoder(params: dict, seed: int, dim: int, device: torch.device) -> AMERQueryEncoder:
    dtype = torch.bfloat16 if params["mixed_precision"] and device.type == "cuda" else torch.float32
    backbone = load_backbone(params["backbone"], seed=seed, dtype=dtype)
    if params["finetune"] == "lora":
        backbone = add_lora(backbone, get_backbone(params["backbone"]).lora)
    torch.manual_seed(seed)
    model = AMERQueryEncoder(backbone, dim)
    if get_backbone(params["backbone"]).identity_projections:
        model.identity_projections()
    return model.to(device)


def figure_tag(params: dict) -> str:
    """The name notebook 04 gives one backbone's figures and summary on its datasets."""
    return f"{params['backbone']}_{'+'.join(params['datasets'])}"


def run_params(params: dict) -> dict:
    return run_key(params, NON_RUN_KEYS)


def cached_result(params: dict, dataset: str, system: str, seed: int) -> dict | None:
    """A run's results JSON when it was made with the same run parameters."""
    path = Path(params["results_dir"]) / f"{run_name(dataset, system, seed)}.json"
    if path.exists():
        cached = json.loads(path.read_text())
        if run_params(cached.get("params", {})) == run_params(params):
            return cached
    return None


def run_dir(result: dict) -> Path:
    """Where a run's checkpoints are: keyed by the parameters that shape it, so that a rerun
    asking for other datasets, systems or seeds alongside resumes it."""
    params = result["params"]
    name = run_name(result["dataset"], result["system"], result["seed"])
    return Path(params["runs_dir"]) / f"{name}-{params_digest(run_params(params))}"


def run_one(params: dict, dataset: str, system: str, seed: int, progress: bool = True,
            on_step: Callable[[], None] | None = None, device: torch.device | None = None) -> dict | None:
    """Train, retrieve and score one run; its results JSON is reused when the params match.

    On every rank of a torch.distributed group (`amer_lib.distributed`, with this rank's
    `device`): the ranks train together, rank 0 retrieves and writes, the others return None."""
    cached = cached_result(params, dataset, system, seed)
    if cached is not None:
        return cached
    context = RunContext(params)
    device = device or resolve_device(params["device"])
    n_queries = 1 if system == "single" else N_QUERIES[dataset]
    train_questions = context.benchmark.questions(dataset, "train")
    data = context.text_data(train_questions).to(device)
    train_idx, val_idx = split_train_validation(len(data), VALIDATION_FRACTION, seed)
    model = build_query_encoder(params, seed, context.shards.dim, device)
    config = TrainConfig(n_outputs=n_queries, steps=params["steps"], batch_size=params["batch_size"],
                         lr=float(params["lr"]), sampling=params["sampling"], eval_every=params["eval_every"],
                         checkpoint_every=params["eval_every"], seed=seed, group_by_targets=True,
                         temperature=float(params["temperature"]),
                         exclude_fed_targets=params["exclude_fed_targets"],
                         single_target_step=params["single_target_step"],
                         mixed_precision=params["mixed_precision"] and device.type == "cuda")
    curve = validation_retrieval(context, [train_questions[i] for i in val_idx.tolist()], data.subset(val_idx.to(device)),
                                 n_queries)
    trained = train(model, data.subset(train_idx.to(device)), data.subset(val_idx.to(device)), context.negatives.to(device), config,
                    run_dir=run_dir(dict(params=params, dataset=dataset, system=system, seed=seed)),
                    progress=progress, on_step=on_step, evaluate=curve)
    if not distributed.is_main():
        return None
    test_questions = context.benchmark.questions(dataset, "test")
    vectors = query_vectors(model, context, test_questions, n_queries, device)
    ranked = multi_vector_search(ShardedFlatIndex(context.shards), vectors, K, depth=max(params["search_depth"], K))
    return write_result(context, dataset, system, seed, test_questions, ranked, n_queries=n_queries,
                        train_seconds=trained.seconds, best_step=trained.best_step,
                        best_val_loss=trained.best_val_loss, history=trained.history)


def validation_retrieval(context: RunContext, questions: list[MultiAnswerQuestion], data: TextData,
                         n_queries: int) -> Callable[[AMERQueryEncoder], dict]:
    """The learning curves' metric: MRecall@100 of the validation questions (`data`: their
    prompts, tokenised once; fully autoregressive, round-robin), on all of them and on their
    low-similarity third."""
    index = ShardedFlatIndex(context.shards)
    gold = context.gold(questions)
    low = low_similarity_subset(context.target_similarity(questions))

    def evaluate(model: AMERQueryEncoder) -> dict:
        ranked = multi_vector_search(index, generated_vectors(model, data, n_queries), K)
        scores = mrecall_at_k(ranked, gold, K)
        return {"val_mrecall": float(scores.mean()), "val_mrecall_low_sim": float(scores[low].mean())}

    return evaluate


def write_result(context: RunContext, dataset: str, system: str, seed: int, questions: list[MultiAnswerQuestion],
                 ranked: np.ndarray, **details) -> dict:
    """Score a ranked top K `[Q, K]` (corpus rows), write its TREC run file and results JSON."""
    params, name = context.params, run_name(dataset, system, seed)
    write_trec_run(Path(params["results_dir"]) / f"{name}.trec", [q.qid for q in questions],
                   [[context.shards.ids[r] for r in row if r >= 0] for row in ranked], name, K)
    gold = context.gold(questions)
    result = dict(params=params, seed=seed, git_commit=git_commit(), dataset=dataset, system=system,
                  qids=[q.qid for q in questions], mrecall=mrecall_at_k(ranked, gold, K).tolist(),
                  recall=recall_at_k(ranked, gold, K).tolist(),
                  target_similarity=context.target_similarity(questions).tolist(), **details)
    write_json(Path(params["results_dir"]) / f"{name}.json", result)
    return result


def query_vectors(model: AMERQueryEncoder, context: RunContext, questions: list[MultiAnswerQuestion], n_queries: int,
                  device: torch.device, texts: list[str] | None = None) -> np.ndarray:
    """The generated query vectors `[Q, n, d]` of the questions (or of `texts` in their place)."""
    return generated_vectors(model, context.text_data(questions, texts).to(device), n_queries)


@torch.no_grad()
def generated_vectors(model: AMERQueryEncoder, data: TextData, n_queries: int, batch_size: int = 128) -> np.ndarray:
    """`n_queries` generated vectors `[Q, n, d]` for every prompt of `data` (on the model's device)."""
    model.eval()
    vectors = []
    for start in range(0, len(data), batch_size):
        indices = torch.arange(start, min(start + batch_size, len(data)), device=data.input_ids.device)
        vectors.append(model.generate(data.prompt(model, indices), n_queries).float().cpu().numpy())
    return np.concatenate(vectors)


def load_trained(params: dict, dataset: str, system: str, seed: int, dim: int, device: torch.device) -> AMERQueryEncoder:
    """A finished run's best checkpoint (train it first with `run_all`)."""
    result = cached_result(params, dataset, system, seed)
    if result is None:
        raise FileNotFoundError(f"no results of {run_name(dataset, system, seed)} with these parameters in "
                                f"{params['results_dir']}: run its training (run_all) first")
    path = run_dir(result) / "best.pt"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing (its run directory was deleted?); delete "
                                f"{run_name(dataset, system, seed)}.json in {params['results_dir']} to train it again")
    model = build_query_encoder(result["params"], seed, dim, device)
    load_trainable_state(model, torch.load(path, map_location=device, weights_only=True), path)
    return model.eval()


def run_all(params: dict, progress: bool = True) -> list[dict]:
    """Every (dataset, system, seed) run: one after the other, in `workers` processes side by side,
    or each trained by `nproc_per_node` processes (torchrun; one GPU each)."""
    jobs = [(params, dataset, system, seed) for dataset in params["datasets"] for system in params["systems"]
            for seed in params["seeds"]]
    distributed.check_processes(params["nproc_per_node"], params["batch_size"], params["workers"], params["device"])
    if params["nproc_per_node"] > 1:
        for job in jobs:
            if cached_result(*job) is None:
                distributed.launch("04_real_data", job[0], job[1:], progress)
        return [cached_result(*job) for job in jobs]
    if params["workers"] == 1:
        return [run_one(*job, progress=progress) for job in jobs]
    # multi-vector runs first: the longest jobs start early, so no worker idles at the end
    order = sorted(range(len(jobs)), key=lambda i: jobs[i][2] == "single")
    done = run_parallel(run_one, [(*jobs[i], False) for i in order], params["workers"],
                        len(jobs) * params["steps"], "training steps", progress)
    return [done[order.index(i)] for i in range(len(jobs))]


# ----- aggregation ---------------------------------------------------------------------------
def _per_question(results: list[dict], dataset: str, system: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed MRecall `[seeds, Q]` and the test questions' target similarity."""
    runs = sorted((r for r in results if r["dataset"] == dataset and r["system"] == system), key=lambda r: r["seed"])
    return np.array([r["mrecall"] for r in runs]), np.array(runs[0]["target_similarity"])


CURVE_METRICS = {"whole": "val_mrecall", "low_sim": "val_mrecall_low_sim"}


def learning_curves(results: list[dict]) -> list[dict]:
    """Per dataset, system and validation step: validation MRecall@100 (in %) on all validation
    questions and on their low-similarity third, mean and std over the seeds that reached the
    step, with the validation loss. Runs trained before the curves were recorded are skipped."""
    points: dict[tuple, list[dict]] = {}
    for run in results:
        for entry in run.get("history", []):
            if CURVE_METRICS["whole"] in entry:
                points.setdefault((run["dataset"], run["system"], entry["step"]), []).append(entry)
    rows = []
    for (dataset, system, step), entries in points.items():
        row = {"dataset": dataset, "system": system, "step": step, "seeds": len(entries),
               "val_loss": float(np.mean([e["val_loss"] for e in entries]))}
        for subset, key in CURVE_METRICS.items():
            values = 100 * np.array([e[key] for e in entries])
            row[f"{subset}_mean"], row[f"{subset}_std"] = float(values.mean()), float(values.std())
        rows.append(row)
    return sorted(rows, key=lambda r: (r["dataset"], r["system"] != "single", r["system"], r["step"]))


def summary(results: list[dict], n_resamples: int = 10_000, seed: int = 0) -> list[dict]:
    """Per dataset and system: MRecall@100 mean and std over seeds (in %), relative gain over
    single-query, on the whole test set and the low-similarity third; for AMER, the paired
    bootstrap p-value against single-query on seed-averaged per-question scores."""
    rows = []
    for dataset in dict.fromkeys(r["dataset"] for r in results):
        base, similarity = _per_question(results, dataset, "single")
        subsets = {"whole": np.arange(base.shape[1]), "low_sim": low_similarity_subset(similarity)}
        for system in dict.fromkeys(r["system"] for r in results if r["dataset"] == dataset):
            scores, _ = _per_question(results, dataset, system)
            label = next(r.get("label") for r in results if r["dataset"] == dataset and r["system"] == system)
            row = {"backbone": results[0]["params"]["backbone"], "dataset": dataset, "system": system,
                   "label": label, "seeds": len(scores)}
            for name, subset in subsets.items():
                per_seed = 100 * scores[:, subset].mean(1)
                reference = 100 * base[:, subset].mean()
                row[f"{name}_mean"], row[f"{name}_std"] = float(per_seed.mean()), float(per_seed.std())
                row[f"{name}_delta"] = float((per_seed.mean() - reference) / reference) if reference else float("nan")
                if system != "single":
                    row[f"{name}_p"] = paired_bootstrap(base[:, subset].mean(0), scores[:, subset].mean(0),
                                                        n_resamples, seed)["p_value"]
            rows.append(row)
    return rows
