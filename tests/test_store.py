"""The run store: what is read back, where checkpoints go, and that folders made before the
store and the typed configs existed are still found (their digests are pinned)."""

import json
from dataclasses import dataclass

import pytest
from conftest import notebook_config

from amer_lib.core.config import Config, param
from amer_lib.runs.store import REAL_RUNS, SYNTHETIC_RUNS, RunStore, params_digest, real_run_name, synthetic_run_name


def test_checkpoint_folders_keep_the_names_earlier_versions_gave_them():
    # digests computed by the code before the run store (commit 885295e) on partial parameter dicts
    synthetic = {"dim": 8, "steps": 10, "seed": 0, "settings": ["single"], "temperature": 0.05, "lr": 0.001}
    key = {**SYNTHETIC_RUNS.run_params(synthetic), **SYNTHETIC_RUNS.identity}
    assert params_digest(key) == "e27f5a0e0f"
    real = {"datasets": ["a"], "seeds": [0], "steps": 10, "sampling_rate": 1, "lr": 0.001}
    assert params_digest(REAL_RUNS.run_params(real)) == "05229bf8b9"
    # and by the code before the typed configs (commit 2671923) on the notebooks' defaults
    name = synthetic_run_name("linear", "multi", "amer", 0)
    assert SYNTHETIC_RUNS.run_dir(notebook_config("02_synthetic"), name).name == f"{name}-c687f0144d"
    sweep_cell = notebook_config("02_synthetic", train_transform="linear", dim=512)
    assert SYNTHETIC_RUNS.run_dir(sweep_cell, "mlp_single_single_seed0").name == "mlp_single_single_seed0-e432f175eb"
    name = real_run_name("wordnet_kinds", "amer", 0)
    assert REAL_RUNS.run_dir(notebook_config("04_real_data"), name).name == f"{name}-9ae6fd6c72"
    assert REAL_RUNS.run_dir(notebook_config("04_real_data", temperature=0.02), name).name == f"{name}-469bd42b37"


@dataclass(frozen=True)
class Toy(Config):
    lr: float = param()
    temperature: float = param()
    seeds: list[int] = param(run=False)
    results_dir: str = param()
    runs_dir: str = param()
    figures_dir: str = param(run=False)


def toy(tmp_path, **changes) -> Toy:
    values = dict(lr=0.1, temperature=0.05, seeds=[0], results_dir=str(tmp_path), runs_dir=str(tmp_path / "runs"))
    return Toy(**{"figures_dir": "f", **values, **changes})


def test_a_run_is_read_back_only_with_the_same_run_parameters_and_identity(tmp_path):
    store = RunStore("notebooks/xx.ipynb", Toy, identity={"version": 2})
    params = toy(tmp_path)
    written = store.write(params, "a_seed0", {"params": params.as_dict(), "score": 0.5})
    assert written["version"] == 2 and json.loads((tmp_path / "a_seed0.json").read_text()) == written
    assert store.cached(params.replace(seeds=[0, 1], figures_dir="g"), "a_seed0") == written  # non-run keys
    assert store.cached(params.replace(lr=0.2), "a_seed0") is None  # another run
    assert store.cached(params, "b_seed0") is None  # never made
    (tmp_path / "a_seed0.json").write_text(json.dumps({**written, "version": 1}))
    assert store.cached(params, "a_seed0") is None  # made for an older version


def test_checkpoint_folders_follow_the_run_parameters_only(tmp_path):
    store = RunStore("notebooks/xx.ipynb", Toy)
    params = toy(tmp_path)
    here = store.run_dir(params, "a")
    assert store.run_dir(params.replace(seeds=[0, 1], results_dir="elsewhere"), "a") == here
    assert store.run_dir(params.replace(lr=0.2), "a") != here
    assert store.run_dir(params.replace(temperature=0.02), "a") != here
    # a parameter added later, at the value earlier runs used, leaves the run key as it was
    without = {k: v for k, v in params.as_dict().items() if k != "temperature"}
    assert store.run_params(params.as_dict()) == store.run_params(without)


def test_loading_a_run_that_was_never_made_says_which_notebook_makes_it(tmp_path):
    params = toy(tmp_path)
    store = RunStore("notebooks/04_real_data.ipynb", Toy)
    with pytest.raises(FileNotFoundError, match="run notebooks/04_real_data.ipynb"):
        store.best_checkpoint(params, "a_amer_seed0")
    store.write(params, "a_amer_seed0", {"params": params.as_dict()})
    with pytest.raises(FileNotFoundError, match="best.pt is missing.*to train the run again"):
        store.best_checkpoint(params, "a_amer_seed0")
