"""Notebook parameters: each notebook's typed config, built before anything runs.

Each parameter is declared once, as a field of the notebook's config (`amer_lib.runs.configs`:
type, default, choices, help). The notebook's `parameters` cell, where papermill injects its
overrides, is written from those fields (`parameters_cell`; `python -m amer_lib.params --write`
rewrites every notebook's, a test checks they match). `collect` takes every name the parameters
cells defined and builds the notebook's config, so an unknown key or an invalid choice fails at
once with the valid options. Levers measured to lose (`param(study=True)`) stay fields of the
config, and of the run key, but leave the cell: one `study_levers` mapping sets them for a study
(`{"spread_weight": 1.0}`), each name checked.

    python -m amer_lib.params 04_real_data     # every parameter: type, default, choices, help
    python -m amer_lib.params --write          # the notebooks' parameters cells, from the configs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

from amer_lib.clean_notebook import dumps as notebook_json
from amer_lib.config import Config, did_you_mean, read_parameter_file
from amer_lib.core.backbones import BackboneUnavailableError, require_weights
from amer_lib.core.device import DeviceUnavailableError, resolve_device
from amer_lib.data.preparation import PrepConfig
from amer_lib.io import require_writable, write_text
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


STUDY_LEVERS = "study_levers"  # the parameters cell's mapping of the config's study levers


def cell_defaults(notebook: str) -> dict[str, Any]:
    """What the notebook's `parameters` cell holds: the config's defaults, its study levers left
    to an empty `study_levers` mapping (where the config has any)."""
    config = CONFIGS[notebook]
    levers = config.study_lever_names()
    defaults = {name: value for name, value in config.defaults().items() if name not in levers}
    return {**defaults, STUDY_LEVERS: {}} if levers else defaults


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
    at its default with its help as a comment beside it (its rest on comment lines below: `_assignment`)."""
    config = CONFIGS[notebook]
    lines = ["# " + line for line in textwrap.wrap(config.CELL_HEADER, WIDTH - 2)]
    defaults = config.defaults()
    levers = config.study_lever_names()
    for field in dataclasses.fields(config):
        if field.name in levers[-1:]:  # the study levers, together where the last of them stood
            lines += _assignment(STUDY_LEVERS, {}, _study_levers_help(notebook))
        if field.name in defaults and field.name not in levers:
            lines += _assignment(field.name, defaults[field.name], field.metadata["help"])
    return "\n".join(lines)


def _assignment(name: str, value: Any, help_: str) -> list[str]:
    """A parameter's lines in the cell: its help as a comment beside its last line, where papermill
    reads it (`papermill --help-notebook`), as much as the line allows; the rest on comment lines
    below, which papermill skips. Papermill's parser drops a line holding a second `=`, so a help
    with one fails here."""
    if not help_ or "=" in help_:
        raise ValueError(
            f"parameter {name!r}: its help {help_!r} must be given and hold no '=' "
            "(papermill shows the comment beside the line as the help, and skips a line with a second '=')"
        )
    assignment = f"{name} = {_literal(value)}"
    if len(assignment) > WIDTH:  # one item per line, as ruff formats it
        items = ",\n".join("    " + _literal(item) for item in value)
        assignment = f"{name} = [\n{items},\n]"
    *above, last = assignment.split("\n")
    words = {"break_long_words": False, "break_on_hyphens": False}  # a name or path stays whole
    beside, *rest = textwrap.wrap(help_, WIDTH - len(last) - 4, **words)
    rest = textwrap.wrap(" ".join(rest), WIDTH - 4, **words)
    return above + [f"{last}  # {beside}"] + ["#   " + line for line in rest]


def _study_levers_help(notebook: str) -> str:
    config = CONFIGS[notebook]
    return (
        f'{config.STUDY_LEVERS_HELP}: any of {", ".join(config.study_lever_names())}, e.g. {{"spread_weight": 1.0}}; '
        f"python -m amer_lib.params {notebook} describes each"
    )


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
            write_text(path, notebook_json(document))  # atomic, in the layout Jupyter writes
            changed.append(path)
    return changed


def describe(notebook: str) -> str:
    """Every parameter of the notebook: type, default, choices, help; the study levers under
    `study_levers`, where the parameters cell has it."""
    config = CONFIGS[notebook]
    hints = typing.get_type_hints(config)
    lines = [f"{notebook}: {config.__doc__.splitlines()[0]}"]
    defaults = config.defaults()
    levers = config.study_lever_names()
    study = (
        [f"  {STUDY_LEVERS} (dict) = {{}}"]
        + ["      " + line for line in textwrap.wrap(_study_levers_help(notebook), WIDTH - 6)]
        if levers
        else []
    )
    for field in dataclasses.fields(config):
        if field.name not in defaults:
            continue
        if field.name in levers:
            study += _listing(field.name, hints[field.name], defaults[field.name], field.metadata, "      ")
            lines += study if field.name == levers[-1] else []
        else:
            lines += _listing(field.name, hints[field.name], defaults[field.name], field.metadata, "  ")
    return "\n".join(lines)


def _listing(name: str, hint: Any, default: Any, meta: typing.Mapping, indent: str) -> list[str]:
    """One parameter in `describe`'s listing: name, type, default, choices, then its help."""
    kind = str(hint) if typing.get_args(hint) else hint.__name__
    choices = f"; one of {', '.join(map(str, meta['choices']))}" if meta["choices"] else ""
    lines = [f"{indent}{name} ({kind}) = {_literal(default)}{choices}"]
    return lines + [indent + "    " + line for line in textwrap.wrap(meta["help"], WIDTH - len(indent) - 4)]


def from_files(notebook_path: str | Path, *yaml_files: str | Path) -> Config:
    """What `papermill NOTEBOOK out.ipynb -f FILE ...` runs with: the defaults, each file's values
    over them, validated. For scripts that call the library without papermill, and for `--check`:
    a syntax error names the file and line, a wrong key or value the file that set it."""
    params, source = CONFIGS[Path(notebook_path).stem].defaults(), {}
    for path in yaml_files:
        values = read_parameter_file(path)
        params.update(values)
        source.update(dict.fromkeys(values, str(path)))
    try:
        return validate(Path(notebook_path).stem, params)
    except (KeyError, ValueError, TypeError) as error:
        named = {name: path for name, path in source.items() if repr(name) in str(error.args[0])}
        if not named:
            raise
        where = "; ".join(f"{name!r} is set in {path}" for name, path in named.items())
        raise type(error)(f"{error.args[0]} ({where})") from error


NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def parameter_names(notebook: str | None = None) -> set[str]:
    """The names a parameters cell may assign: the notebook's config fields and `study_levers`
    (every notebook's, without `notebook`)."""
    configs = [CONFIGS[notebook]] if notebook else CONFIGS.values()
    return {STUDY_LEVERS, *(field.name for config in configs for field in dataclasses.fields(config))}


def snapshot(namespace: dict, notebook: str | None = None) -> set[str]:
    """Names present before the parameters cell (call it in the cell above), once the names a
    parameters cell assigns (`parameter_names`: the notebook's, or every notebook's) are removed
    from `namespace`: a second Run All in the same kernel finds there what its previous pass left,
    so without this `collect` would see no parameter as new, and a parameter deleted from the cell
    since would keep its old value. The notebooks define none of those names above the parameters
    cell (tests/test_run_twice.py checks). The notebook's paths are relative to `notebooks/`: the
    kernel moves there (again, harmlessly, on a second pass), so that `papermill notebooks/X.ipynb
    out.ipynb ...` runs as typed from the repository root (as with `--cwd notebooks`)."""
    if NOTEBOOKS.is_dir():
        os.chdir(NOTEBOOKS)
    if notebook is not None and notebook not in CONFIGS:
        raise KeyError(f"unknown notebook {notebook!r}; valid: {', '.join(CONFIGS)}")
    for name in parameter_names(notebook) & set(namespace):
        del namespace[name]
    return set(namespace)


def collect(notebook: str, namespace: dict, before: set[str]) -> Config:
    """The notebook's config of the parameters defined since `before` (a list or mapping papermill's
    `-p` passed as text is read as YAML, and the notebook's own name for it then holds what was read).
    With `before` from `snapshot`, that is what the parameters cell (and papermill's cell after it)
    assigned in this pass: a parameter it no longer assigns is missing, as on a first pass."""
    names = [n for n in namespace if n not in before and not n.startswith("_")]
    if notebook not in CONFIGS:
        raise KeyError(f"unknown notebook {notebook!r}; valid: {', '.join(CONFIGS)}")
    values = CONFIGS[notebook].read_text_values({n: namespace[n] for n in names})
    if STUDY_LEVERS in values:
        values[STUDY_LEVERS] = _mapping(values[STUDY_LEVERS])
    config = validate(notebook, values)
    check_outputs_and_device(config)
    namespace.update({n: values[n] if n == STUDY_LEVERS else getattr(config, n) for n in names})
    return config


OUTPUT_DIRS = ("results_dir", "runs_dir")  # what a run writes as it goes (figures_dir: published at its end)


def check_outputs_and_device(config: Config) -> None:
    """Before any work: every folder the run writes as it goes can be written, and its `device` is
    here (a read-only runs_dir would fail after the first training step, `cuda` at the first model)."""
    for name in OUTPUT_DIRS:
        if hasattr(config, name):
            require_writable(getattr(config, name), name)
    if hasattr(config, "device"):
        try:
            resolve_device(config.device)
        except DeviceUnavailableError as error:  # and the weights to fetch, if any: wherever it runs next
            raise DeviceUnavailableError(f"{error}{_weights_to_fetch(config)}") from None


def _weights_to_fetch(config: Config) -> str:
    """'. Besides, <what to fetch>' when the run's backbone weights are not on this machine, else ''."""
    try:
        if hasattr(config, "backbone"):
            require_weights(config.backbone)
    except BackboneUnavailableError as missing:
        return f". Besides, {missing}"
    return ""


def validate(notebook: str, params: dict[str, Any]) -> Config:
    """The notebook's config of `params`; a wrong key or value fails naming it and what is valid."""
    if notebook not in CONFIGS:
        raise KeyError(f"unknown notebook {notebook!r}; valid: {', '.join(CONFIGS)}")
    return CONFIGS[notebook].from_dict(_with_study_levers(CONFIGS[notebook], params), notebook)


def _with_study_levers(config: type[Config], params: dict[str, Any]) -> dict[str, Any]:
    """`params` with the levers its `study_levers` mapping names set as the config's fields, the
    others at their defaults. A name that is not a study lever fails listing those, as does a lever
    also given by its own name (as the parameter files a notebook writes give them) with another
    value than the mapping's."""
    levers = config.study_lever_names()
    if STUDY_LEVERS not in params or not levers:  # none: the config refuses the key as unknown
        return params
    params = dict(params)
    chosen = _mapping(params.pop(STUDY_LEVERS))
    unknown = sorted(set(chosen) - set(levers))
    if unknown:
        raise KeyError(
            f"unknown study lever(s) {unknown} in {STUDY_LEVERS}{did_you_mean(unknown, levers)}; "
            f"valid: {', '.join(levers)} (any other parameter is set by its own name)"
        )
    defaults = config.defaults()
    twice = sorted(name for name in chosen if params.get(name, defaults[name]) not in (defaults[name], chosen[name]))
    if twice:
        raise ValueError(
            f"study lever(s) {twice} set both by name and in {STUDY_LEVERS}, to different values: set each once"
        )
    return {**{name: defaults[name] for name in levers}, **params, **chosen}  # the mapping stands for them all


def _mapping(value: Any) -> dict:
    """`study_levers` as a mapping (papermill's `-p` passes it as YAML text)."""
    import yaml

    if isinstance(value, str):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as error:
            raise ValueError(
                f"parameter {STUDY_LEVERS!r} takes a mapping; {value!r} is not one in YAML: {error}"
            ) from error
    if not isinstance(value, dict):
        raise TypeError(
            f"parameter {STUDY_LEVERS!r} must be a mapping of lever names to values "
            f"(e.g. {{spread_weight: 1.0}}), got {value!r}"
        )
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the notebooks' parameters, declared in their configs")
    parser.add_argument("notebook", nargs="?", choices=sorted(CONFIGS), help="list this notebook's parameters")
    parser.add_argument("--write", action="store_true", help="rewrite every notebook's parameters cell")
    parser.add_argument(
        "--check", nargs="+", metavar="FILE", help="check parameter files for papermill's -f, in its order (file, line)"
    )
    args = parser.parse_args(argv)
    if args.check:
        check_files(parser, args.notebook, args.check)
        return
    if args.write:
        for path in write_parameters_cells(NOTEBOOKS):
            print(f"rewrote the parameters cell of {path}")
    if args.notebook:
        print(describe(args.notebook))
    if not (args.write or args.notebook):
        parser.error("name a notebook, or --write")


def check_files(parser: argparse.ArgumentParser, notebook: str | None, files: list[str]) -> None:
    """`--check`: the files read as papermill's `-f` reads them, over the notebook's defaults, and
    validated; the notebook is the one named, else the folder of the first file (params/<notebook>/)."""
    notebook = notebook or Path(files[0]).parent.name
    if notebook not in CONFIGS:
        parser.error(f"name the notebook the files are for: one of {', '.join(CONFIGS)}")
    try:
        from_files(f"{notebook}.ipynb", *files)
    except (OSError, KeyError, ValueError, TypeError) as error:
        sys.exit(f"error: {error.args[0] if isinstance(error, KeyError) else error}")
    print(f"{', '.join(files)}: valid parameters for notebook {notebook}")


if __name__ == "__main__":
    main()
