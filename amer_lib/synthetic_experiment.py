"""Notebook 02: train and evaluate single-query and AMER on the six synthetic settings.

Each (transform, setting, system) run writes one results JSON; a rerun with the same
parameters loads it instead of training again, and an interrupted training resumes from its
checkpoint. Settings can run in parallel worker processes (`amer_lib.parallel`).
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from tqdm.auto import tqdm

from . import distributed
from .backbones import add_lora, get_backbone, load_backbone
from .data.synthetic import N_TARGETS, TASK_VERSION, SyntheticTask, make_task
from .io import git_commit, write_json
from .metrics import mrecall_at_k, recall_at_k
from .model import AMERQueryEncoder
from .parallel import run_parallel
from .search import VectorIndex, multi_vector_search, unit_norm
from .train import TrainConfig, VectorData, load_trainable_state, split_train_validation, train

VALIDATION_FRACTION = 0.1
KS = (10, 100)
METRIC_COLUMNS = tuple(f"{name}@{k}" for k in KS for name in ("mrecall", "recall"))
TASK_KEYS = ("dim", "n_train", "n_test", "corpus_size", "mlp_layers", "seed")


def build_task(params: dict, transform: str, setting: str) -> SyntheticTask:
    """The task of one setting as `params` describe it; a `train_transform` key (set by the MLP
    sweep, not a notebook parameter) builds the training targets with another transform."""
    return make_task(setting, transform, train_transform=params.get("train_transform"),
                     **{k: params[k] for k in TASK_KEYS})


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was asked for, but torch sees no GPU; use device='auto' or 'cpu'")
    return torch.device(name)


def build_encoder(params: dict, device: torch.device) -> AMERQueryEncoder:
    backbone = load_backbone(params["backbone"], seed=params["seed"],
                             config_overrides=params["backbone_overrides"] or None)
    if params["finetune"] == "lora":
        backbone = add_lora(backbone, get_backbone(params["backbone"]).lora)
    torch.manual_seed(params["seed"])
    return AMERQueryEncoder(backbone, params["dim"]).to(device)


def task_data(task: SyntheticTask, device: torch.device) -> tuple[VectorData, torch.Tensor]:
    """The training examples and the pool their negatives are drawn from (no test target)."""
    corpus = torch.from_numpy(task.corpus).to(device)
    ids = torch.from_numpy(task.train_target_ids).to(device)
    data = VectorData(torch.from_numpy(task.train_inputs).to(device), corpus[ids],
                      torch.ones(ids.shape, dtype=torch.bool, device=device))
    return data, corpus[torch.from_numpy(task.training_negative_ids).to(device)]


@torch.no_grad()
def generate_queries(model: AMERQueryEncoder, inputs: np.ndarray, n: int, device: torch.device,
                     batch_size: int = 1024) -> np.ndarray:
    chunks = []
    for start in range(0, len(inputs), batch_size):
        x = torch.from_numpy(inputs[start : start + batch_size]).to(device)
        chunks.append(model.generate(model.prompt_from_vectors(x), n).float().cpu().numpy())
    return np.concatenate(chunks)


def retrieval_metrics(index: VectorIndex, queries: np.ndarray, gold_ids: np.ndarray, depth: int) -> dict:
    """MRecall and Recall at 10 and 100 of round-robin-merged lists. `gold_ids [N, m]`: one
    corpus id per target (each target is its own cluster)."""
    retrieved = multi_vector_search(index, queries, max(KS), depth=depth)
    gold = gold_ids[:, :, None]
    metrics = {}
    for k in KS:
        metrics[f"mrecall@{k}"] = float(mrecall_at_k(retrieved, gold, k).mean())
        metrics[f"recall@{k}"] = float(recall_at_k(retrieved, gold, k).mean())
    return metrics


def mean_of_targets(task: SyntheticTask) -> np.ndarray:
    """The oracle single vector: normalised sum of a test input's normalised targets `[N, 1, d]`."""
    return unit_norm(task.corpus[task.test_target_ids].sum(1))[:, None]


def target_geometry(task: SyntheticTask, n_sample: int = 200, seed: int = 0) -> dict:
    """How far apart a question's targets are, how close the oracle vector is to each, and how
    close the oracle's best random distractor comes (cosines)."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(task.test_target_ids), min(n_sample, len(task.test_target_ids)), replace=False)
    targets = task.corpus[task.test_target_ids[rows]]
    pair = np.einsum("nid,njd->nij", targets, targets)[:, ~np.eye(N_TARGETS, dtype=bool)]
    oracle = mean_of_targets(task)[rows, 0]
    to_targets = np.einsum("nd,nid->ni", oracle, targets)
    negatives = task.corpus[(task.train_target_ids.size + task.test_target_ids.size):]
    best_negative = (oracle @ negatives.T).max(1) if len(negatives) else np.full(len(rows), np.nan)
    return {"target_pair_cos": float(pair.mean()), "oracle_target_cos": float(to_targets.mean()),
            "oracle_min_target_cos": float(to_targets.min(1).mean()),
            "oracle_best_negative_cos": float(best_negative.mean())}


def run_name(transform: str, setting: str, system: str, seed: int) -> str:
    return f"{transform}_{setting}_{system}_seed{seed}"


def params_digest(params: dict) -> str:
    """A short hash of the parameters that shape a run (not where its files go), so that a
    checkpoint is only resumed by a run with the same parameters."""
    shaping = {k: v for k, v in params.items() if not k.endswith("_dir")}
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:10]


# parameters that do not change what one (transform, setting, system) run trains and measures
# (nproc_per_node shares each global batch among processes: the same run, up to float rounding)
NON_RUN_KEYS = ("settings", "transforms", "systems", "figures_dir", "nproc_per_node", "mlp_sweep_dims",
                "mlp_sweep_depths", "mlp_sweep_authors_bug")
# parameters added after runs were cached, with the value those runs used: at that value a
# parameter is left out of the run key, so the cached runs and their checkpoint folders stay valid
ADDED_LATER = {"temperature": 0.05, "sampling_rate": 1}


def run_key(params: dict, non_run_keys: tuple[str, ...]) -> dict:
    """The parameters that shape one run (of notebook 02 or 04)."""
    return {k: v for k, v in params.items()
            if k not in non_run_keys and not (k in ADDED_LATER and v == ADDED_LATER[k])}


def run_params(params: dict) -> dict:
    return run_key(params, NON_RUN_KEYS)


def _cached(path: Path, params: dict) -> dict | None:
    if not path.exists():
        return None
    result = json.loads(path.read_text())
    same_task = result.get("task_version") == TASK_VERSION
    return result if same_task and run_params(result.get("params", {})) == run_params(params) else None


def cached_run(params: dict, transform: str, setting: str, system: str) -> dict | None:
    """A run's results JSON when it was made with the same run parameters."""
    return _cached(Path(params["results_dir"]) / f"{run_name(transform, setting, system, params['seed'])}.json", params)


def run_dir(params: dict, transform: str, setting: str, system: str) -> Path:
    """Where a run's checkpoints are: keyed by the parameters that shape it, so that a rerun
    asking for other settings alongside resumes it."""
    digest = params_digest({**run_params(params), "task_version": TASK_VERSION})
    return Path(params["runs_dir"]) / f"{run_name(transform, setting, system, params['seed'])}-{digest}"


def load_trained(params: dict, transform: str, setting: str, device: torch.device) -> AMERQueryEncoder:
    """The best checkpoint of a finished AMER run (run notebook 02 first)."""
    result = cached_run(params, transform, setting, "amer")
    if result is None:
        raise FileNotFoundError(f"no AMER results for {transform}/{setting} with these parameters in "
                                f"{params['results_dir']}: run notebooks/02_synthetic.ipynb first")
    trained = result["params"]
    model = build_encoder(trained, device)
    path = run_dir(trained, transform, setting, "amer") / "best.pt"
    load_trainable_state(model, torch.load(path, map_location=device, weights_only=True), path)
    return model.eval()


def _cached_setting(params: dict, transform: str, setting: str) -> tuple[list[str], list[dict | None]]:
    systems = [*params["systems"], "oracle"]
    return ([run_name(transform, setting, s, params["seed"]) for s in systems],
            [cached_run(params, transform, setting, s) for s in systems])


def run_setting(params: dict, transform: str, setting: str, progress: bool = True,
                on_step: Callable[[], None] | None = None, device: torch.device | None = None) -> list[dict] | None:
    """Every system of one setting, plus the mean-of-targets oracle; one results JSON each.

    On every rank of a torch.distributed group (`amer_lib.distributed`, with this rank's
    `device`): the ranks train together, rank 0 evaluates and writes, the others return None."""
    results_dir = Path(params["results_dir"])
    names, cached = _cached_setting(params, transform, setting)
    if all(cached):
        return cached
    device = device or resolve_device(params["device"])
    task = build_task(params, transform, setting)
    index = VectorIndex(task.corpus)
    results = []
    for system, name, hit in zip([*params["systems"], "oracle"], names, cached):
        if hit:
            results.append(hit)
            continue
        if system == "oracle" and not distributed.is_main():
            continue
        result = dict(params=params, seed=params["seed"], task_version=TASK_VERSION, git_commit=git_commit(),
                      transform=transform, setting=setting, system=system)
        if system == "oracle":
            result["metrics"] = retrieval_metrics(index, mean_of_targets(task), task.test_target_ids, params["search_depth"])
            result["geometry"] = target_geometry(task)
        else:
            result.update(_train_and_evaluate(params, task, index, system, device,
                                              run_dir(params, transform, setting, system), progress, on_step))
        if distributed.is_main():
            write_json(results_dir / f"{name}.json", result)
            results.append(result)
    return results if distributed.is_main() else None


def _train_and_evaluate(params: dict, task: SyntheticTask, index: VectorIndex, system: str,
                        device: torch.device, run_dir: Path, progress: bool,
                        on_step: Callable[[], None] | None) -> dict:
    n_queries = 1 if system == "single" else params["n_queries"]
    data, negative_pool = task_data(task, device)
    train_idx, val_idx = split_train_validation(len(data), VALIDATION_FRACTION, params["seed"])
    model = build_encoder(params, device)
    config = TrainConfig(n_outputs=n_queries, steps=params["steps"], batch_size=params["batch_size"],
                         lr=float(params["lr"]), sampling=params["sampling"], eval_every=params["eval_every"],
                         checkpoint_every=params["eval_every"], seed=params["seed"],
                         temperature=float(params["temperature"]), sampling_rate=float(params["sampling_rate"]),
                         mixed_precision=params["mixed_precision"] and device.type == "cuda")
    trained = train(model, data.subset(train_idx.to(device)), data.subset(val_idx.to(device)), negative_pool, config,
                    run_dir=run_dir, progress=progress, on_step=on_step)
    if not distributed.is_main():
        return {}
    began = time.perf_counter()
    queries = generate_queries(model, task.test_inputs, n_queries, device)
    metrics = retrieval_metrics(index, queries, task.test_target_ids, params["search_depth"])
    return dict(metrics=metrics, n_queries=n_queries, train_seconds=trained.seconds,
                eval_seconds=time.perf_counter() - began, best_step=trained.best_step,
                best_val_loss=trained.best_val_loss, history=trained.history)


def run_all(params: dict, progress: bool = True) -> list[dict]:
    """All (transform, setting) pairs of `params`, in order: one after the other, in `workers`
    processes side by side, or each trained by `nproc_per_node` processes (torchrun; one GPU each)."""
    pairs = [(t, s) for t in params["transforms"] for s in params["settings"]]
    distributed.check_processes(params["nproc_per_node"], params["batch_size"], params["workers"], params["device"])
    if params["nproc_per_node"] > 1:
        results = []
        for pair in pairs:
            if not all(_cached_setting(params, *pair)[1]):
                distributed.launch("02_synthetic", params, pair, progress)
            results += _cached_setting(params, *pair)[1]
        return results
    return [r for job in run_jobs([(params, *pair) for pair in pairs], params["workers"], progress) for r in job]


def run_jobs(jobs: list[tuple[dict, str, str]], workers: int, progress: bool = True) -> list[list[dict]]:
    """Every (params, transform, setting) job's results: cached ones read back, the others
    trained one after the other (`workers == 1`) or in `workers` processes side by side."""
    results = [_cached_setting(*job)[1] for job in jobs]
    todo = [i for i, cached in enumerate(results) if not all(cached)]
    if workers == 1:
        for i in tqdm(todo, desc="settings", disable=not progress or not todo):
            results[i] = run_setting(*jobs[i], progress)
    elif todo:
        total = sum(len(jobs[i][0]["systems"]) * jobs[i][0]["steps"] for i in todo)
        done = run_parallel(run_setting, [(*jobs[i], False) for i in todo], workers, total, "training steps", progress)
        for i, result in zip(todo, done):
            results[i] = result
    return results


GEOMETRY_COLUMNS = ("target_pair_cos", "oracle_target_cos", "oracle_min_target_cos", "oracle_best_negative_cos")


def geometry_table(results: list[dict]):
    """The target geometry recorded with each oracle run, one row per setting."""
    import pandas as pd

    return pd.DataFrame([{"transform": r["transform"], "setting": r["setting"],
                          **{key: round(r["geometry"][key], 3) for key in GEOMETRY_COLUMNS}}
                         for r in results if r["system"] == "oracle"])


def summary_table(results: list[dict]):
    """One row per run: transform, setting, system, MRecall and Recall at 10 / 100, train time."""
    import pandas as pd

    rows = []
    for r in results:
        rows.append({"transform": r["transform"], "setting": r["setting"], "system": r["system"],
                     **{m: round(r["metrics"][m], 4) for m in METRIC_COLUMNS},
                     "train_seconds": round(r.get("train_seconds", 0.0), 1)})
    return pd.DataFrame(rows)
