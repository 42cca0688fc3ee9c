"""Notebook parameters: each notebook's typed config, built before anything runs.

A notebook's `parameters` cell holds literal defaults (papermill injects overrides after it).
`collect` takes every name the parameters cells defined and builds the notebook's config
(`amer_lib.runs.configs`), so an unknown key or an invalid choice fails at once with the valid
options.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from amer_lib.core.config import Config
from amer_lib.data.prepared import PrepConfig
from amer_lib.runs.configs import (
    AblationConfig,
    BeyondConfig,
    DiversityConfig,
    FailureConfig,
    RealConfig,
    SyntheticConfig,
)

CONFIGS: dict[str, type[Config]] = {
    "01_failure_analysis": FailureConfig,
    "02_synthetic": SyntheticConfig,
    "03_real_data_prep": PrepConfig,
    "04_real_data": RealConfig,
    "05_ablations": AblationConfig,
    "06_diversity_analysis": DiversityConfig,
    "07_beyond": BeyondConfig,
}


def notebook_defaults(notebook_path: str | Path) -> dict[str, Any]:
    """A notebook's literal defaults: its `parameters` cell, executed alone."""
    cells = json.loads(Path(notebook_path).read_text())["cells"]
    cell = next(c for c in cells if "parameters" in c["metadata"].get("tags", []))
    namespace: dict[str, Any] = {}
    exec("".join(cell["source"]), namespace)
    return {k: v for k, v in namespace.items() if not k.startswith("__")}


def from_files(notebook_path: str | Path, *yaml_files: str | Path) -> Config:
    """What `papermill NOTEBOOK out.ipynb -f FILE ...` runs with: the defaults, each file's values
    over them, validated. For scripts that call the library without papermill."""
    import yaml

    params = notebook_defaults(notebook_path)
    for path in yaml_files:
        params.update(yaml.safe_load(Path(path).read_text()) or {})
    return validate(Path(notebook_path).stem, params)


NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def snapshot(namespace: dict) -> set[str]:
    """Names present before the parameters cell (call it in the cell above). The notebook's paths
    are relative to `notebooks/`: the kernel moves there, so that `papermill notebooks/X.ipynb
    out.ipynb ...` runs as typed from the repository root (as with `--cwd notebooks`)."""
    if NOTEBOOKS.is_dir():
        os.chdir(NOTEBOOKS)
    return set(namespace)


def collect(notebook: str, namespace: dict, before: set[str]) -> Config:
    """The notebook's config of the parameters defined since `before` (a list or mapping papermill's
    `-p` passed as text is read as YAML, and the notebook's own name for it then holds what was read)."""
    names = [n for n in namespace if n not in before and not n.startswith("_")]
    if notebook not in CONFIGS:
        raise KeyError(f"unknown notebook {notebook!r}; valid: {', '.join(CONFIGS)}")
    config = validate(notebook, CONFIGS[notebook].read_text_values({n: namespace[n] for n in names}))
    namespace.update({n: getattr(config, n) for n in names})
    return config


def validate(notebook: str, params: dict[str, Any]) -> Config:
    """The notebook's config of `params`; a wrong key or value fails naming it and what is valid."""
    if notebook not in CONFIGS:
        raise KeyError(f"unknown notebook {notebook!r}; valid: {', '.join(CONFIGS)}")
    return CONFIGS[notebook].from_dict(params, notebook)
