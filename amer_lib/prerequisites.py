"""What a notebook reads of another notebook's results, checked before it does any work.

Notebooks 05, 06 and 07 reuse the runs of notebooks 02 and 04, through the parameter files those
write beside their runs (`amer_lib.runs.store.RunStore.write_params`). A missing one fails at once
naming the notebook that makes it, the command, and what that notebook took when its figures were
last published (its `figures/<folder>/provenance.json`). Notebooks 01 and 04 prepare the offline
benchmark themselves when it is missing, as notebook 03 would; 02 and 03 read no other notebook's
results.

    require_inputs("06_diversity_analysis", params)  # the first code cell after the parameters
"""

from __future__ import annotations

import json
from pathlib import Path

from amer_lib.config import Config
from amer_lib.io import FIGURES, PROVENANCE
from amer_lib.params import NOTEBOOKS, from_files

# notebook -> (its parameter naming the files, the notebook that writes them)
INPUTS: dict[str, list[tuple[str, str]]] = {
    "01_failure_analysis": [],  # prepares the offline benchmark itself
    "02_synthetic": [],
    "03_real_data_prep": [],
    "04_real_data": [],  # prepares the offline benchmark itself
    "05_ablations": [("synthetic_params", "02_synthetic"), ("real_params", "04_real_data")],
    "06_diversity_analysis": [("real_params", "04_real_data"), ("synthetic_params", "02_synthetic")],
    "07_beyond": [("synthetic_params", "02_synthetic"), ("real_params", "04_real_data")],
}


class MissingInputError(FileNotFoundError):
    """A notebook's input made by another notebook is not there."""


def require_inputs(notebook: str, params: Config, root: Path = NOTEBOOKS.parent) -> None:
    """Fail, before any work, naming each file `params` reads from another notebook that is
    missing: the notebook that writes it, the command that runs it (from `root`, the repository)
    and that notebook's measured wall time where a committed provenance.json records it."""
    if notebook not in INPUTS:
        raise KeyError(f"unknown notebook {notebook!r}; valid: {', '.join(INPUTS)}")
    missing = []
    for parameter, maker in INPUTS[notebook]:
        value = getattr(params, parameter)
        for path in [value] if isinstance(value, str) else value:
            if not (root / "notebooks" / path).exists():
                missing.append(f"{parameter} = {str(path)!r}: {how_to_make(maker, path, root)}")
    if missing:
        raise MissingInputError(
            f"notebook {notebook} reuses other notebooks' runs; missing (paths relative to notebooks/), with what "
            "makes each: run that first, or point the parameter at your file:\n- " + "\n- ".join(missing)
        )


def how_to_make(maker: str, path: str | Path, root: Path) -> str:
    """The notebook that writes `path` (a path relative to notebooks/, or absolute), the command
    that runs it from the repository root, and its last published wall time."""
    files = [None, *sorted((root / "params" / maker).glob("*.yaml"))]  # the defaults, then each parameter file
    for file in files:
        try:
            config = from_files(f"{maker}.ipynb", *([file] if file else []))
        except (KeyError, ValueError, TypeError):  # a file meant to go with another
            continue
        if _same(_written_by(maker, config), path, root):
            command = f"papermill notebooks/{maker}.ipynb build/executed/{maker}.ipynb"
            if file:
                command += f" -f {file.relative_to(root)}"
            return f"notebook {maker} writes it: {command} (or run it in JupyterLab){_cost(config, maker, root)}"
    return f"notebook {maker} writes it, with the parameters whose results_dir holds it"


def _written_by(maker: str, config: Config) -> Path:
    """The parameter file notebook `maker` writes beside its runs (`RunStore.write_params`)."""
    name = f"params_{config.tag}.yaml" if maker == "04_real_data" else "params.yaml"
    return Path(config.results_dir) / name


def _same(written: Path, path: str | Path, root: Path) -> bool:
    """Whether two paths relative to notebooks/ (or absolute) name one file."""
    return (root / "notebooks" / written).resolve() == (root / "notebooks" / path).resolve()


def _cost(config: Config, maker: str, root: Path) -> str:
    """'; its published run took N min ...' from the provenance of `config`'s published figures, else ''."""
    published = Path(config.figures_dir or Path(FIGURES) / maker)
    record = (root / "notebooks" / published / PROVENANCE).resolve()
    try:
        made = json.loads(record.read_text())
    except (OSError, ValueError):
        return ""
    if not made.get("wall_seconds"):
        return ""
    cores = f" on {made['cpu_count']} cores" if made.get("cpu_count") else ""
    return (
        f"; its published run took {made['wall_seconds'] / 60:.0f} min{cores} under {made.get('command', '?')!r}, "
        f"runs it found already made not counted ({record.relative_to(root.resolve())})"
    )
