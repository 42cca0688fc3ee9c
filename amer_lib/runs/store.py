"""The run store: where every run of an experiment lives on disk, keyed by what shapes it.

A run has a name (`linear_multi_amer_seed0`, `wordnet_kinds_single_seed1`). Its results JSON is
`results_dir/NAME.json`, read back instead of running again when the parameters that shape the
run match; its TREC run file sits beside it; its checkpoints are in `runs_dir/NAME-DIGEST/`
(`checkpoint.pt` to resume, `best.pt` the one kept), DIGEST a hash of the same parameters, so a
run asked for again beside other choices (more datasets, seeds or settings) resumes it, and a run
with other parameters never resumes another's checkpoint.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from amer_lib.data.synthetic import TASK_VERSION
from amer_lib.io import write_json, write_text

SYSTEMS = ("single", "amer")  # one query vector, or the autoregressive sequence of n
BASELINES = ("query_expansion", "rerank")  # derived from notebook 04's single-query runs
# parameters added after runs were cached, with the value those runs used: at that value a
# parameter is left out of the run key, so the cached runs and their checkpoint folders stay valid
ADDED_LATER = {"temperature": 0.05, "sampling_rate": 1}


def params_digest(params: dict) -> str:
    """A short hash of the parameters that shape a run (not where its files go)."""
    shaping = {k: v for k, v in params.items() if not k.endswith("_dir")}
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class RunStore:
    """The runs of one notebook.

    `non_run_keys`: the notebook's parameters that choose which runs to make or where figures go,
    not what one run trains and measures. `identity`: fields every result of this store carries
    and must match to be read back, also part of the checkpoint digest (e.g. the synthetic task's
    version, so runs of an older task are made again)."""

    notebook: str  # e.g. "notebooks/02_synthetic.ipynb", named in errors
    non_run_keys: tuple[str, ...]
    identity: dict = field(default_factory=dict)

    def run_params(self, params: dict) -> dict:
        return {
            k: v
            for k, v in params.items()
            if k not in self.non_run_keys and not (k in ADDED_LATER and v == ADDED_LATER[k])
        }

    def result_path(self, params: dict, name: str, suffix: str = ".json") -> Path:
        return Path(params["results_dir"]) / f"{name}{suffix}"

    def cached(self, params: dict, name: str) -> dict | None:
        """The run's results when they were made with the same run parameters, else None."""
        path = self.result_path(params, name)
        if not path.exists():
            return None
        result = json.loads(path.read_text())
        if any(result.get(k) != v for k, v in self.identity.items()):
            return None
        return result if self.run_params(result.get("params", {})) == self.run_params(params) else None

    def write(self, params: dict, name: str, result: dict) -> dict:
        """Write the run's results (with the store's identity fields) atomically; returns them."""
        result = {**result, **self.identity}
        write_json(self.result_path(params, name), result)
        return result

    def write_params(self, params: dict, tag: str = "") -> Path:
        """The notebook's parameters beside its runs (`params.yaml`, or `params_<tag>.yaml` for one
        group of runs), which the notebooks that reuse the runs read (05 and 06)."""
        path = Path(params["results_dir"]) / (f"params_{tag}.yaml" if tag else "params.yaml")
        write_text(path, yaml.safe_dump(params, sort_keys=False))
        return path

    def run_dir(self, params: dict, name: str) -> Path:
        """The run's checkpoint folder."""
        return Path(params["runs_dir"]) / f"{name}-{params_digest({**self.run_params(params), **self.identity})}"

    def best_checkpoint(self, params: dict, name: str) -> tuple[dict, Path]:
        """A finished run's results and its kept checkpoint, or an error saying how to make them."""
        result = self.cached(params, name)
        if result is None:
            raise FileNotFoundError(
                f"no results of run {name} with these parameters in {params['results_dir']}: "
                f"run {self.notebook} (or its run_all) first"
            )
        path = self.run_dir(result["params"], name) / "best.pt"
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing (its run directory was deleted?); delete "
                f"{self.result_path(params, name)} to train the run again"
            )
        return result, path


# ----- the stores of the notebooks that train runs ----------------------------------------------
# Their non-run keys choose which runs to make, how many processes share one, or where figures go;
# nproc_per_node shares each global batch among processes: the same run, up to float rounding.
SYNTHETIC_RUNS = RunStore(
    "notebooks/02_synthetic.ipynb",
    non_run_keys=(
        "settings",
        "transforms",
        "systems",
        "figures_dir",
        "nproc_per_node",
        "mlp_sweep_dims",
        "mlp_sweep_depths",
        "mlp_sweep_authors_bug",
    ),
    identity={"task_version": TASK_VERSION},
)
REAL_RUNS = RunStore(
    "notebooks/04_real_data.ipynb",
    non_run_keys=(
        "datasets",
        "systems",
        "seeds",
        "baselines",
        "expansion",
        "expansion_model",
        "bootstrap_resamples",
        "figures_dir",
        "nproc_per_node",
        "tuning_grid",
    ),
)


def synthetic_run_name(transform: str, setting: str, system: str, seed: int) -> str:
    return f"{transform}_{setting}_{system}_seed{seed}"


def real_run_name(dataset: str, system: str, seed: int) -> str:
    return f"{dataset}_{system}_seed{seed}"


def figure_tag(params: dict) -> str:
    """The name notebook 04 gives one backbone's figures and summary on its datasets."""
    return f"{params['backbone']}_{'+'.join(params['datasets'])}"
