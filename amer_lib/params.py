"""Notebook parameters: the schema of each notebook's keys, checked before anything runs.

A notebook's `parameters` cell holds literal defaults (papermill injects overrides after it).
`collect` takes every name the parameters cells defined and checks it against the schema, so
an unknown key or an invalid choice fails at once with the valid options.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amer_lib.core.backbones import BACKBONES, FINETUNE_MODES
from amer_lib.core.expansion import EXPANSION_SOURCES
from amer_lib.core.merge import MERGES
from amer_lib.core.metrics import DISTANCES
from amer_lib.core.train import SAMPLING_MODES
from amer_lib.data.encoders import ENCODERS, RETRIEVERS
from amer_lib.data.prepared import N_QUERIES, SOURCES
from amer_lib.data.synthetic import SETTINGS, TRANSFORMS
from amer_lib.runs.models import DEVICES
from amer_lib.runs.store import BASELINES, SYSTEMS


@dataclass(frozen=True)
class Param:
    kind: type | tuple[type, ...]
    choices: tuple | None = None  # for lists: the allowed elements
    is_list: bool = False
    minimum: int | None = None
    may_be_empty: bool = False  # lists only: [] switches the step it drives off


SCHEMAS: dict[str, dict[str, Param]] = {
    "01_failure_analysis": {
        "datasets": Param(str, tuple(N_QUERIES), is_list=True),
        "retrievers": Param(str, RETRIEVERS, is_list=True),
        "bm25_distance_encoder": Param(str, tuple(ENCODERS)),
        "distance": Param(str, DISTANCES),
        "min_questions": Param(int, minimum=4),
        "device": Param(str, DEVICES),
        "prepared_dir": Param(str),
        "results_dir": Param(str),
        "figures_dir": Param(str),
    },
    "02_synthetic": {
        "settings": Param(str, tuple(SETTINGS), is_list=True),
        "transforms": Param(str, TRANSFORMS, is_list=True),
        "systems": Param(str, SYSTEMS, is_list=True),
        "dim": Param(int, minimum=1),
        "n_train": Param(int, minimum=1),
        "n_test": Param(int, minimum=1),
        "corpus_size": Param(int, minimum=1),
        "mlp_layers": Param(int),
        "mlp_sweep_dims": Param(int, is_list=True, minimum=1, may_be_empty=True),  # [] skips the MLP sweep
        "mlp_sweep_depths": Param(int, is_list=True, minimum=1),
        "mlp_sweep_authors_bug": Param(bool),
        "backbone": Param(str, tuple(BACKBONES)),
        "backbone_overrides": Param(dict),
        "finetune": Param(str, FINETUNE_MODES),
        "n_queries": Param(int, minimum=1),
        "steps": Param(int, minimum=1),
        "batch_size": Param(int, minimum=1),
        "lr": Param((float, int)),
        "temperature": Param((float, int)),
        "sampling": Param(str, SAMPLING_MODES),
        "sampling_rate": Param((float, int)),
        "eval_every": Param(int, minimum=1),
        "search_depth": Param(int, minimum=1),
        "seed": Param(int),
        "device": Param(str, DEVICES),
        "mixed_precision": Param(bool),
        "workers": Param(int, minimum=1),
        "nproc_per_node": Param(int, minimum=1),
        "results_dir": Param(str),
        "runs_dir": Param(str),
        "figures_dir": Param(str),
    },
    "03_real_data_prep": {
        "source": Param(str, SOURCES),
        "max_train": Param(int, minimum=1),
        "max_test": Param(int, minimum=1),
        "corpus_size": Param(int, minimum=1),
        "raw_dir": Param(str),
        "corpus_path": Param(str),
        "encoder": Param(str, tuple(ENCODERS)),
        "mapping_encoders": Param(
            str, tuple(ENCODERS), is_list=True
        ),  # paper data: dense retrievers of the gold mapping
        "encode_batch_size": Param(int, minimum=1),
        "shard_size": Param(int, minimum=1),
        "ivfpq_factories": Param(str, is_list=True),
        "ivfpq_nprobes": Param(int, is_list=True, minimum=1),
        "seed": Param(int),
        "device": Param(str, DEVICES),
        "prepared_dir": Param(str),
        "figures_dir": Param(str),
    },
    "04_real_data": {
        "datasets": Param(str, tuple(N_QUERIES), is_list=True),
        "systems": Param(str, SYSTEMS, is_list=True),
        "baselines": Param(str, BASELINES, is_list=True),
        "expansion": Param(str, EXPANSION_SOURCES),
        "expansion_model": Param(str),
        "backbone": Param(str, tuple(BACKBONES)),
        "encoder": Param(str, tuple(ENCODERS)),
        "finetune": Param(str, FINETUNE_MODES),
        "seeds": Param(int, is_list=True),
        "steps": Param(int, minimum=1),
        "batch_size": Param(int, minimum=1),
        "lr": Param((float, int)),
        "temperature": Param((float, int)),
        "tuning_grid": Param(dict),  # {} or lists of lr, batch_size, temperature, epochs (amer_lib.experiments.tuning)
        "sampling": Param(str, SAMPLING_MODES),
        "exclude_fed_targets": Param(bool),
        "single_target_step": Param(bool),
        "eval_every": Param(int, minimum=1),
        "search_depth": Param(int, minimum=100),
        "bootstrap_resamples": Param(int, minimum=1),
        "workers": Param(int, minimum=1),
        "nproc_per_node": Param(int, minimum=1),
        "device": Param(str, DEVICES),
        "mixed_precision": Param(bool),
        "prepared_dir": Param(str),
        "results_dir": Param(str),
        "runs_dir": Param(str),
        "figures_dir": Param(str),
    },
    "05_ablations": {
        "synthetic_params": Param(str),  # notebook 02's params.yaml (its runs are reused)
        "real_params": Param(str, is_list=True),  # notebook 04's params_<tag>.yaml, one per backbone (runs reused)
        "synthetic_transforms": Param(str, TRANSFORMS, is_list=True),
        "synthetic_setting": Param(str, tuple(SETTINGS)),
        "sampling_modes": Param(str, SAMPLING_MODES, is_list=True),
        "real_seeds": Param(int, is_list=True),
        "vector_counts": Param(int, is_list=True, minimum=1),
        "merges": Param(str, tuple(MERGES), is_list=True),
        "bootstrap_resamples": Param(int, minimum=1),
        "results_dir": Param(str),
        "runs_dir": Param(str),
        "figures_dir": Param(str),
    },
    "06_diversity_analysis": {
        "real_params": Param(str, is_list=True),  # notebook 04's params_<tag>.yaml, one per backbone
        "synthetic_params": Param(str),  # notebook 02's params.yaml (only its task is rebuilt)
        "synthetic_setting": Param(str, tuple(SETTINGS)),
        "seeds": Param(int, is_list=True),
        "target_split": Param(str, ("train", "test")),
        "random_pairs": Param(int, minimum=1),
        "seen_questions": Param(int, minimum=1),
        "figures_dir": Param(str),
    },
}


def notebook_defaults(notebook_path: str | Path) -> dict[str, Any]:
    """A notebook's literal defaults: its `parameters` cell, executed alone."""
    cells = json.loads(Path(notebook_path).read_text())["cells"]
    cell = next(c for c in cells if "parameters" in c["metadata"].get("tags", []))
    namespace: dict[str, Any] = {}
    exec("".join(cell["source"]), namespace)
    return {k: v for k, v in namespace.items() if not k.startswith("__")}


def from_files(notebook_path: str | Path, *yaml_files: str | Path) -> dict[str, Any]:
    """What `papermill NOTEBOOK out.ipynb -f FILE ...` runs with: the defaults, each file's values
    over them, validated. For scripts that call the library without papermill."""
    import yaml

    params = notebook_defaults(notebook_path)
    for path in yaml_files:
        params.update(yaml.safe_load(Path(path).read_text()) or {})
    return validate(Path(notebook_path).stem, params)


def snapshot(namespace: dict) -> set[str]:
    """Names present before the parameters cell (call it in the cell above)."""
    return set(namespace)


def collect(notebook: str, namespace: dict, before: set[str]) -> dict[str, Any]:
    """The parameters defined since `before`, validated against the notebook's schema."""
    names = [n for n in namespace if n not in before and not n.startswith("_")]
    return validate(notebook, {n: namespace[n] for n in names})


def validate(notebook: str, params: dict[str, Any]) -> dict[str, Any]:
    if notebook not in SCHEMAS:
        raise KeyError(f"unknown notebook {notebook!r}; valid: {', '.join(SCHEMAS)}")
    schema = SCHEMAS[notebook]
    unknown = sorted(set(params) - set(schema))
    if unknown:
        raise KeyError(f"unknown parameter(s) {unknown} for notebook {notebook}; valid keys: {', '.join(schema)}")
    missing = sorted(set(schema) - set(params))
    if missing:
        raise KeyError(f"missing parameter(s) {missing} for notebook {notebook}")
    for name, value in params.items():
        _check(name, value, schema[name])
    return dict(params)


def _check(name: str, value: Any, param: Param) -> None:
    values = value if param.is_list else [value]
    if param.is_list and not (isinstance(value, (list, tuple)) and (value or param.may_be_empty)):
        raise ValueError(f"parameter {name!r} must be a non-empty list, got {value!r}")
    for item in values:
        if not isinstance(item, param.kind) or (param.kind is int and isinstance(item, bool)):
            raise TypeError(f"parameter {name!r} must be of type {param.kind}, got {item!r}")
        if param.choices is not None and item not in param.choices:
            raise ValueError(
                f"invalid value {item!r} for parameter {name!r}; valid choices: {', '.join(map(str, param.choices))}"
            )
        if param.minimum is not None and item < param.minimum:
            raise ValueError(f"parameter {name!r} must be >= {param.minimum}, got {item!r}")
