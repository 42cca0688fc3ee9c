"""Notebook parameters: each notebook's typed config, built before anything runs.

Each parameter is declared once, as a field of the notebook's config (`amer_lib.runs.configs`:
type, default, choices, help). The notebook's `parameters` cell, where papermill injects its
overrides, is written from those fields (`parameters_cell`; `python -m amer_lib.params --write`
rewrites every notebook's, a test checks they match). `collect` takes every name the parameters
cells defined and builds the notebook's config, so an unknown key or an invalid choice fails at
once with the valid options.

    python -m amer_lib.params 04_real_data     # every parameter: type, default, choices, help
    python -m amer_lib.params --write          # the notebooks' parameters cells, from the configs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import textwrap
import typing
from pathlib import Path
from typing import Any

from amer_lib.core.config import Config
from amer_lib.data.preparation import PrepConfig
from amer_lib.io import write_text
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
    namespace: dict[str, Any] = {}
    exec("".join(_parameters_cell(json.loads(Path(notebook_path).read_text()))["source"]), namespace)
    return {k: v for k, v in namespace.items() if not k.startswith("__")}


def _parameters_cell(document: dict) -> dict:
    """The cell tagged `parameters` of a notebook's JSON."""
    return next(c for c in document["cells"] if "parameters" in c["metadata"].get("tags", []))


WIDTH = 120  # ruff's line length, which the notebooks keep too


def parameters_cell(notebook: str) -> str:
    """The notebook's `parameters` cell, written from its config: the header, then every parameter
    at its default with its help as a comment (beside it where the line allows, else above)."""
    config = CONFIGS[notebook]
    lines = ["# " + line for line in textwrap.wrap(config.CELL_HEADER, WIDTH - 2)]
    defaults = config.defaults()
    for field in dataclasses.fields(config):
        if field.name not in defaults:
            continue
        assignment, help_ = f"{field.name} = {_literal(defaults[field.name])}", field.metadata["help"]
        if len(assignment) > WIDTH:  # one item per line, as ruff formats it
            items = ",\n".join("    " + _literal(item) for item in defaults[field.name])
            assignment = f"{field.name} = [\n{items},\n]"
        if help_ and len(assignment) + len(help_) + 4 <= WIDTH and "\n" not in assignment:
            lines.append(f"{assignment}  # {help_}")
        else:
            lines += ["# " + line for line in textwrap.wrap(help_, WIDTH - 2)] + [assignment]
    return "\n".join(lines)


def _literal(value: Any) -> str:
    """`value` as Python source in ruff's style (double quotes)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def write_parameters_cells(notebooks_dir: Path) -> list[Path]:
    """Rewrite every notebook's `parameters` cell from its config; the notebooks changed."""
    changed = []
    for notebook in CONFIGS:
        path = notebooks_dir / f"{notebook}.ipynb"
        document = json.loads(path.read_text())
        cell = _parameters_cell(document)
        text = parameters_cell(notebook)
        if "".join(cell["source"]) != text:
            cell["source"] = text.splitlines(keepends=True)
            write_text(path, json.dumps(document, indent=1, ensure_ascii=False) + "\n")  # atomic
            changed.append(path)
    return changed


def describe(notebook: str) -> str:
    """Every parameter of the notebook: type, default, choices, help."""
    config = CONFIGS[notebook]
    hints = typing.get_type_hints(config)
    lines = [f"{notebook}: {config.__doc__.splitlines()[0]}"]
    defaults = config.defaults()
    for field in dataclasses.fields(config):
        if field.name not in defaults:
            continue
        meta = field.metadata
        hint = hints[field.name]
        kind = str(hint) if typing.get_args(hint) else hint.__name__
        choices = f"; one of {', '.join(map(str, meta['choices']))}" if meta["choices"] else ""
        lines.append(f"  {field.name} ({kind}) = {_literal(defaults[field.name])}{choices}")
        if meta["help"]:
            lines += ["      " + line for line in textwrap.wrap(meta["help"], WIDTH - 6)]
    return "\n".join(lines)


def from_files(notebook_path: str | Path, *yaml_files: str | Path) -> Config:
    """What `papermill NOTEBOOK out.ipynb -f FILE ...` runs with: the defaults, each file's values
    over them, validated. For scripts that call the library without papermill."""
    import yaml

    params = CONFIGS[Path(notebook_path).stem].defaults()
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the notebooks' parameters, declared in their configs")
    parser.add_argument("notebook", nargs="?", choices=sorted(CONFIGS), help="list this notebook's parameters")
    parser.add_argument("--write", action="store_true", help="rewrite every notebook's parameters cell")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_parameters_cells(NOTEBOOKS):
            print(f"rewrote the parameters cell of {path}")
    if args.notebook:
        print(describe(args.notebook))
    if not (args.write or args.notebook):
        parser.error("name a notebook, or --write")


if __name__ == "__main__":
    main()
