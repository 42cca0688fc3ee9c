"""The run store: what is read back, where checkpoints go, and that folders made before the
store existed are still found (their digests are pinned)."""

import json

import pytest

from amer_lib.runs.store import REAL_RUNS, SYNTHETIC_RUNS, RunStore, real_run_name, synthetic_run_name


def test_checkpoint_folders_keep_the_names_earlier_versions_gave_them():
    # digests computed by the code before the run store (commit 885295e), so cached runs stay valid
    synthetic = {
        "dim": 8,
        "steps": 10,
        "seed": 0,
        "settings": ["single"],
        "temperature": 0.05,
        "lr": 0.001,
        "results_dir": "res",
        "runs_dir": "runs",
    }
    name = synthetic_run_name("linear", "multi", "amer", 0)
    assert str(SYNTHETIC_RUNS.run_dir(synthetic, name)) == "runs/linear_multi_amer_seed0-e27f5a0e0f"
    real = {"datasets": ["a"], "seeds": [0], "steps": 10, "runs_dir": "runs", "sampling_rate": 1, "lr": 0.001}
    assert str(REAL_RUNS.run_dir(real, real_run_name("a", "amer", 0))) == "runs/a_amer_seed0-05229bf8b9"


def test_a_run_is_read_back_only_with_the_same_run_parameters_and_identity(tmp_path):
    store = RunStore("notebooks/xx.ipynb", non_run_keys=("seeds", "figures_dir"), identity={"version": 2})
    params = {"lr": 0.1, "seeds": [0], "results_dir": str(tmp_path), "runs_dir": str(tmp_path / "runs")}
    written = store.write(params, "a_seed0", {"params": params, "score": 0.5})
    assert written["version"] == 2 and json.loads((tmp_path / "a_seed0.json").read_text()) == written
    assert store.cached({**params, "seeds": [0, 1], "figures_dir": "f"}, "a_seed0") == written  # non-run keys
    assert store.cached({**params, "lr": 0.2}, "a_seed0") is None  # another run
    assert store.cached(params, "b_seed0") is None  # never made
    (tmp_path / "a_seed0.json").write_text(json.dumps({**written, "version": 1}))
    assert store.cached(params, "a_seed0") is None  # made for an older version


def test_checkpoint_folders_follow_the_run_parameters_only():
    store = RunStore("notebooks/xx.ipynb", non_run_keys=("seeds",))
    params = {"lr": 0.1, "seeds": [0], "runs_dir": "runs"}
    here = store.run_dir(params, "a")
    assert store.run_dir({**params, "seeds": [0, 1], "results_dir": "elsewhere"}, "a") == here
    assert store.run_dir({**params, "lr": 0.2}, "a") != here
    # a parameter added later, at the value earlier runs used, leaves the folder where it was
    assert store.run_dir({**params, "temperature": 0.05}, "a") == here
    assert store.run_dir({**params, "temperature": 0.02}, "a") != here


def test_loading_a_run_that_was_never_made_says_which_notebook_makes_it(tmp_path):
    params = {"lr": 0.1, "results_dir": str(tmp_path), "runs_dir": str(tmp_path / "runs")}
    store = RunStore("notebooks/04_real_data.ipynb", non_run_keys=())
    with pytest.raises(FileNotFoundError, match="run notebooks/04_real_data.ipynb"):
        store.best_checkpoint(params, "a_amer_seed0")
    store.write(params, "a_amer_seed0", {"params": params})
    with pytest.raises(FileNotFoundError, match="best.pt is missing.*to train the run again"):
        store.best_checkpoint(params, "a_amer_seed0")
