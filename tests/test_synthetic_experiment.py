"""The notebook-02 runner: parallel workers give the same results as one process."""

import json
from pathlib import Path

import torch

from amer_lib.experiments.synthetic import run_all
from amer_lib.runs.configs import SyntheticConfig
from amer_lib.runs.store import SYNTHETIC_RUNS


def tiny_params(tmp_path, workers) -> SyntheticConfig:
    return SyntheticConfig(
        **{
            "settings": ["single", "ood"],
            "transforms": ["linear"],
            "systems": ["single", "amer"],
            "dim": 8,
            "n_train": 60,
            "n_test": 10,
            "corpus_size": 500,
            "mlp_layers": 2,
            "mlp_sweep_dims": [],
            "mlp_sweep_depths": [2],
            "mlp_sweep_authors_bug": False,
            "backbone": "tiny",
            "backbone_overrides": {
                "hidden_size": 16,
                "intermediate_size": 32,
                "num_attention_heads": 2,
                "num_key_value_heads": 2,
            },
            "finetune": "full",
            "n_queries": 5,
            "steps": 3,
            "batch_size": 8,
            "lr": 1e-3,
            "temperature": 0.05,
            "matched_loss": "mean",
            "tuning_grid": {},
            "sampling": "scheduled",
            "sampling_rate": 1,
            "eval_every": 3,
            "search_depth": 20,
            "seed": 0,
            "device": "cpu",
            "mixed_precision": False,
            "workers": workers,
            "nproc_per_node": 1,
            "results_dir": str(tmp_path / f"results{workers}"),
            "runs_dir": str(tmp_path / f"runs{workers}"),
            "figures_dir": str(tmp_path / "figures"),
        }
    )


def strip(results):
    timing = {"train_seconds", "eval_seconds", "params", "git_commit"}
    return [{k: v for k, v in r.items() if k not in timing} for r in results]


def test_workers_reproduce_a_single_process_run(tmp_path):
    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, threads // 2))  # what each of the two workers gets
    try:
        serial = run_all(tiny_params(tmp_path, 1), progress=False)
    finally:
        torch.set_num_threads(threads)
    parallel = run_all(tiny_params(tmp_path, 2), progress=False)
    assert [(r["setting"], r["system"]) for r in parallel] == [
        (s, m) for s in ("single", "ood") for m in ("single", "amer", "oracle")
    ]
    assert strip(parallel) == strip(serial)


def test_runs_cached_for_an_older_task_are_not_reused(tmp_path):
    params = tiny_params(tmp_path, 1).replace(settings=["single"], systems=["single"])
    [run, _] = run_all(params, progress=False)
    assert SYNTHETIC_RUNS.cached(params, "linear_single_single_seed0") == run
    path = Path(params.results_dir) / "linear_single_single_seed0.json"
    path.write_text(json.dumps({**run, "task_version": run["task_version"] - 1}))
    assert SYNTHETIC_RUNS.cached(params, "linear_single_single_seed0") is None
