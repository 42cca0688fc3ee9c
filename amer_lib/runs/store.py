"""The run store: where every run of an experiment lives on disk, keyed by what shapes it.

A run has a name (`linear_multi_amer_seed0`, `wordnet_kinds_single_seed1`). Its results JSON is
`results_dir/NAME.json`, read back instead of running again when the parameters that shape the
run match; its TREC run file sits beside it; its checkpoints are in `runs_dir/NAME-DIGEST/`
(`checkpoint.pt` to resume, removed once the results are written; `best.pt` the one kept),
DIGEST a hash of the same parameters, so a run asked for again beside other choices (more
datasets, seeds or settings) resumes it, and a run with other parameters never resumes another's
checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from amer_lib.config import Config
from amer_lib.data.synthetic_task import TASK_VERSION
from amer_lib.io import file_matches, remove_recorded, write_json, write_text
from amer_lib.progress import AmerWarning
from amer_lib.runs.configs import RealConfig, SyntheticConfig

# The shape of the run key. A change to what a key holds (a parameter added, a fact about the data)
# bumps it, and every run of an older version is made again instead of being matched by a shim.
# Version 2: every config field (the library's own at their defaults too) and, for AMER on a text
# benchmark, the dataset's number of query vectors. Version 3: each training process's CPU threads
# (`threads`, 1 by default) instead of the machine's threads divided by the workers, which made a
# run's numbers depend on the core count; `workers` left the key. Version 4: notebook 04's levers
# beyond the paper (`hard_negative_share`, `spread_weight`) joined the key; at their defaults (off) a
# run computes what a version-3 run did, but is made again all the same. Version 5: the compound
# benchmark's redrawn training compounds (`train_compounds`, off at 0) joined it, likewise. Version 6:
# the compound benchmark's training components (`train_components`, "findable" as before), likewise.
# Version 7: the first query vector's loss (`first_vector`, "matched" as before), likewise.
# Version 8: the component term (`component_weight`, 0 as before), likewise. Version 9: its
# distance (`component_distance`, "cosine" as in version 8), likewise. Version 10: a single-query run
# (and the oracle's and baselines') keyed without AMER's loss levers (`RealConfig.for_system`), and
# `component_single` (false) joined the key. Version 11: the number of training components
# (`train_component_count`, 0: all of them, as before), likewise. Version 12: on a text benchmark,
# the prepared benchmark's contents (`Benchmark.identity`: a benchmark prepared again from other
# files in the same folder is another benchmark).
CACHE_VERSION = 12


def params_digest(params: dict) -> str:
    """A short hash of the parameters that shape a run (not where its files go)."""
    shaping = {k: v for k, v in params.items() if not k.endswith("_dir")}
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class RunStore:
    """The runs of one notebook, keyed by its config (`amer_lib.runs.configs`).

    The run key is the config's fields that shape a run (not those marked `run=False`).
    `identity`: fields every result of this store carries and must match to be read back, also
    part of the checkpoint digest (e.g. the synthetic task's version, so runs of an older task are
    made again)."""

    notebook: str  # e.g. "notebooks/02_synthetic.ipynb", named in errors
    config: type[Config]
    identity: dict = field(default_factory=dict)

    def run_params(self, params: dict) -> dict:
        """The run key of a config's `as_dict()` (or of the parameters a results JSON holds): its
        fields that shape a run, less those out of the key at their default (`keyed_at_default`)."""
        non_run, unkeyed = self.config.non_run_keys(), self.config.unkeyed_defaults()
        return {k: v for k, v in params.items() if k not in non_run and not (k in unkeyed and v == unkeyed[k])}

    def recipe(self, params: Config) -> dict:
        """The run key without where the run was made (its folders, device and processes): the
        training recipe a model card records."""
        where = ("device", "nproc_per_node", "threads")
        return {k: v for k, v in self.run_params(params.as_dict()).items() if not k.endswith("_dir") and k not in where}

    def entry(self, params: Config, name: str, facts: dict | None = None) -> StoredRun:
        """Run `name` of `params` (and `facts`: what shapes the run beyond its config, e.g. its
        dataset's number of query vectors) in this store: its files and what its results record."""
        values = params.as_dict()
        key = {**self.run_params(values), **self.identity, **(facts or {})}
        return StoredRun(
            store=self,
            name=name,
            results_dir=Path(params.results_dir),
            folder=Path(params.runs_dir) / f"{name}-{params_digest(key)}",
            params=values,
            facts=dict(facts or {}),
        )

    def result_path(self, params: Config, name: str, suffix: str = ".json") -> Path:
        return Path(params.results_dir) / f"{name}{suffix}"

    def cached(self, params: Config, name: str, facts: dict | None = None) -> dict | None:
        """The run's results when they were made with the same run parameters, else None (`StoredRun.cached`)."""
        return self.entry(params, name, facts).cached()

    def write(self, params: Config, name: str, result: dict, facts: dict | None = None) -> dict:
        """`StoredRun.write` of run `name` of `params`."""
        return self.entry(params, name, facts).write(result)

    def write_params(self, params: Config, tag: str = "") -> Path:
        """The notebook's parameters beside its runs (`params.yaml`, or `params_<tag>.yaml` for one
        group of runs), which the notebooks that reuse the runs read (05 and 06)."""
        path = Path(params.results_dir) / (f"params_{tag}.yaml" if tag else "params.yaml")
        write_text(path, params.to_yaml())
        return path

    def run_dir(self, params: Config, name: str, facts: dict | None = None) -> Path:
        """The run's checkpoint folder."""
        return self.entry(params, name, facts).folder

    def best_checkpoint(self, params: Config, name: str, facts: dict | None = None) -> tuple[dict, Path]:
        """A finished run's results and its kept checkpoint, or an error saying how to make them."""
        result = self.cached(params, name, facts)
        if result is None:
            raise FileNotFoundError(
                f"no results of run {name} with these parameters in {params.results_dir}: "
                f"run {self.notebook} (or its run_all) first"
            )
        path = self.run_dir(params, name, facts) / "best.pt"
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing (its run directory was deleted?); delete "
                f"{self.result_path(params, name)} to train the run again"
            )
        return result, path


@dataclass(frozen=True)
class StoredRun:
    """One run's place in its store (`RunStore.entry`): its results JSON and the files beside it in
    `results_dir`, its checkpoint folder, the config's fields its results record (`params`) and what
    shapes it beyond them (`facts`)."""

    store: RunStore
    name: str
    results_dir: Path
    folder: Path
    params: dict
    facts: dict

    def path(self, suffix: str = ".json") -> Path:
        return self.results_dir / f"{self.name}{suffix}"  # as `RunStore.result_path`

    def cached(self) -> dict | None:
        """The run's results when they were made with the same run parameters and facts, else None;
        a damaged results file, or a TREC run that is not the one they record, is said (`kept_json`,
        `trec_as_written`) and the run made again."""
        result = kept_json(self.path())
        if result is None or any(result.get(k) != v for k, v in {**self.store.identity, **self.facts}.items()):
            return None
        if self.store.run_params(result.get("params", {})) != self.store.run_params(self.params):
            return None
        if "trec_sha256" in result and not trec_as_written(self.path(".trec"), result["trec_sha256"]):
            return None
        return result

    def write(self, result: dict) -> dict:
        """Write the run's results (with its facts and the store's identity fields) atomically, then
        remove its resume checkpoint (optimizer state and all: hundreds of MB a run), which a
        finished run no longer needs; `best.pt` stays. Returns the results."""
        result = {**result, **self.facts, **self.store.identity}
        write_json(self.path(), result)
        remove_recorded(self.folder / "checkpoint.pt")
        return result


def kept_json(path: Path) -> dict | None:
    """The results JSON a run wrote at `path`; None where there is none, and, said with its path,
    where it is not JSON (cut short, overwritten), for the run to be made again."""
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        reason = error.reason if isinstance(error, UnicodeDecodeError) else error.msg
        warnings.warn(f"{path} is damaged ({reason}): not read back; the run is made again", AmerWarning, 3)
        return None


def trec_as_written(trec: Path, sha256: str | None) -> bool:
    """Whether `trec` is the TREC run whose sha256 its results keep (`io.write_trec_run`'s); one
    that is missing, changed or cut short is said with its path, for the run to be made again."""
    if sha256 is not None and file_matches(trec, sha256):
        return True
    warnings.warn(f"{trec} is missing or not the file its run wrote: the run is made again", AmerWarning, 3)
    return False


# the stores of the notebooks that train runs
SYNTHETIC_RUNS = RunStore(
    "notebooks/02_synthetic.ipynb",
    SyntheticConfig,
    identity={"cache_version": CACHE_VERSION, "task_version": TASK_VERSION},
)
REAL_RUNS = RunStore("notebooks/04_real_data.ipynb", RealConfig, identity={"cache_version": CACHE_VERSION})


def synthetic_run_name(transform: str, setting: str, system: str, seed: int) -> str:
    return f"{transform}_{setting}_{system}_seed{seed}"


def real_run_name(dataset: str, system: str, seed: int | None) -> str:
    """A run's name; a seed-free run's (`seed` None: nothing trained) has no seed in it."""
    return f"{dataset}_{system}" if seed is None else f"{dataset}_{system}_seed{seed}"
