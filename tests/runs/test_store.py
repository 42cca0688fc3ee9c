"""The run store: what is read back, where checkpoints go, and that folder names hold within a
cache version (their digests are pinned)."""

import json
from dataclasses import dataclass

import pytest
from conftest import notebook_config

from amer_lib.config import Config, param
from amer_lib.runs.store import (
    CACHE_VERSION,
    REAL_RUNS,
    SYNTHETIC_RUNS,
    RunStore,
    real_run_name,
    synthetic_run_name,
)


def test_checkpoint_folders_keep_their_names_within_a_cache_version():
    """Pinned digests of version 12: a change to what a run key holds fails here, and must bump
    `CACHE_VERSION` (runs of the older version are then made again, none matched by a shim)."""
    assert CACHE_VERSION == 12
    name = synthetic_run_name("linear", "multi", "amer", 0)
    assert SYNTHETIC_RUNS.run_dir(notebook_config("02_synthetic"), name).name == f"{name}-dd4d7a180c"
    sweep_cell = notebook_config("02_synthetic", train_transform="linear", dim=512)
    assert SYNTHETIC_RUNS.run_dir(sweep_cell, "mlp_single_single_seed0").name == "mlp_single_single_seed0-95213eb9e7"
    name, facts = real_run_name("wordnet_kinds", "amer", 0), {"n_queries": 5}
    assert REAL_RUNS.run_dir(notebook_config("04_real_data"), name, facts).name == f"{name}-9fbea42497"
    changed = notebook_config("04_real_data", temperature=0.02)
    assert REAL_RUNS.run_dir(changed, name, facts).name == f"{name}-20ce73c637"


def test_a_run_of_another_cache_version_is_made_again(tmp_path):
    params = notebook_config("04_real_data", results_dir=str(tmp_path))
    written = REAL_RUNS.write(params, "a_seed0", {"params": params.as_dict()})
    assert REAL_RUNS.cached(params, "a_seed0") == written
    (tmp_path / "a_seed0.json").write_text(json.dumps({**written, "cache_version": CACHE_VERSION - 1}))
    assert REAL_RUNS.cached(params, "a_seed0") is None


@pytest.mark.parametrize("damage", ["cut short", "garbage"])
def test_a_damaged_results_file_is_said_with_its_path_and_the_run_made_again(tmp_path, damage):
    """Issue 78: a results JSON cut short at a line boundary or overwritten with bytes that are not
    text is not a raw JSONDecodeError or UnicodeDecodeError: the store says which file and reads
    nothing back, so the run is made again and writes it whole."""
    from amer_lib.progress import AmerWarning

    params = notebook_config("04_real_data", results_dir=str(tmp_path))
    written = REAL_RUNS.write(params, "a_seed0", {"params": params.as_dict(), "mrecall": [1.0, 0.0]})
    path = tmp_path / "a_seed0.json"
    text = path.read_text()
    path.write_bytes(text[: len(text) // 2].encode() if damage == "cut short" else b"\xff\xfe\x00garbage")
    with pytest.warns(AmerWarning, match=rf"{path} is damaged \(.+\): not read back; the run is made again"):
        assert REAL_RUNS.cached(params, "a_seed0") is None
    assert REAL_RUNS.write(params, "a_seed0", {"params": params.as_dict(), "mrecall": [1.0, 0.0]}) == written
    assert REAL_RUNS.cached(params, "a_seed0") == written


def test_a_trec_run_cut_short_is_said_and_its_run_made_again(tmp_path):
    """Issue 78: a results JSON keeps its TREC run's sha256; the TREC file cut short at a line boundary
    (which ir_measures would score without complaint) or gone is said with its path, and the run is
    made again instead of being read back."""
    from amer_lib.io import write_trec_run
    from amer_lib.progress import AmerWarning

    params = notebook_config("04_real_data", results_dir=str(tmp_path))
    stored = REAL_RUNS.entry(params, "a_seed0")
    trec = write_trec_run(stored.path(".trec"), ["q1", "q2"], [["d1", "d2"], ["d3", "d4"]], "a_seed0", 2)
    stored.write({"params": params.as_dict(), "trec_sha256": trec})
    assert stored.cached() is not None
    lines = stored.path(".trec").read_text().splitlines(keepends=True)
    stored.path(".trec").write_text("".join(lines[:2]))  # q2's lines lost
    with pytest.warns(AmerWarning, match=rf"{stored.path('.trec')} is missing or not the file its run wrote"):
        assert stored.cached() is None
    stored.path(".trec").unlink()
    with pytest.warns(AmerWarning, match="is missing or not the file its run wrote"):
        assert stored.cached() is None


def test_a_parameter_keyed_only_when_set_keeps_the_keys_of_the_runs_made_before_it(tmp_path):
    """`merge` (`keyed_at_default=False`): at round-robin, the paper's merge and what every run made
    before the parameter merged with, a run's key and folder are those of a run without it (the
    pinned digests above), and a results JSON written without it is read back; another merge is
    another run, with a folder of its own."""
    params = notebook_config("04_real_data", results_dir=str(tmp_path))
    name, facts = real_run_name("wordnet_kinds", "amer", 0), {"n_queries": 5}
    assert "merge" not in REAL_RUNS.run_params(params.as_dict())
    before = {k: v for k, v in params.as_dict().items() if k != "merge"}  # as a run made before it wrote
    REAL_RUNS.write(params, name, {"params": before}, facts)
    assert REAL_RUNS.cached(params, name, facts) is not None
    other = params.replace(merge="max_score")
    assert REAL_RUNS.run_params(other.as_dict())["merge"] == "max_score"
    assert REAL_RUNS.cached(other, name, facts) is None
    assert REAL_RUNS.run_dir(other, name, facts) != REAL_RUNS.run_dir(params, name, facts)
    assert type(params).from_dict(before).merge == "round_robin"  # a file without it reads as its default


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


def test_loading_a_run_that_was_never_made_says_which_notebook_makes_it(tmp_path):
    params = toy(tmp_path)
    store = RunStore("notebooks/04_real_data.ipynb", Toy)
    with pytest.raises(FileNotFoundError, match="run notebooks/04_real_data.ipynb"):
        store.best_checkpoint(params, "a_amer_seed0")
    store.write(params, "a_amer_seed0", {"params": params.as_dict()})
    with pytest.raises(FileNotFoundError, match="best.pt is missing.*to train the run again"):
        store.best_checkpoint(params, "a_amer_seed0")


def test_a_finished_runs_resume_checkpoint_goes_and_its_best_weights_stay(tmp_path):
    params = notebook_config("04_real_data", results_dir=str(tmp_path / "results"), runs_dir=str(tmp_path / "runs"))
    facts = {"n_queries": 5}
    folder = REAL_RUNS.run_dir(params, "a_seed0", facts)
    folder.mkdir(parents=True)
    (folder / "checkpoint.pt").write_bytes(b"optimizer state")
    (folder / "best.pt").write_bytes(b"weights")
    REAL_RUNS.write(params, "a_seed0", {"params": params.as_dict()}, facts)
    assert not (folder / "checkpoint.pt").exists() and (folder / "best.pt").read_bytes() == b"weights"
    assert REAL_RUNS.best_checkpoint(params, "a_seed0", facts)[1] == folder / "best.pt"
