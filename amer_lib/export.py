"""Export a finished run of notebook 02, 04 or 07 as a model folder that stands alone
(`amer_lib.runs.saved`), which `amer_lib.retriever` and `python -m amer_lib.search` read.

    python -m amer_lib.export 04_real_data results/own_data/04/params_minilm_kinds_mine.yaml \\
        --dataset kinds_mine --system amer --seed 0 --out models/kinds_mine_amer
    python -m amer_lib.export 02_synthetic results/02_synthetic/params.yaml \\
        --transform linear --setting ood --system amer --out models/linear_ood_amer
    python -m amer_lib.export 07_beyond figures/07_beyond/params.yaml --dataset wordnet_kinds --seed 0 --out ...
    python -m amer_lib.export 07_beyond figures/07_beyond/params.yaml --varying --seed 0 --out ...

The parameter file is the one the notebook wrote (notebooks 02 and 04 beside their runs, every
notebook beside its figures): it names the run, as the run store keys it. Its paths are relative
to `notebooks/`, where papermill runs the notebooks, and are read from there. An existing model
folder at `--out` is refused unless `--overwrite` is given; it is then replaced in one rename once
the new one is complete (an export that fails leaves it as it was).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from amer_lib.core.device import DeviceUnavailableError
from amer_lib.data.synthetic_task import SETTINGS, TRANSFORMS
from amer_lib.experiments import beyond, real_data, synthetic
from amer_lib.io import require_writable
from amer_lib.runs.configs import SYSTEMS, BeyondConfig, RealConfig, SyntheticConfig
from amer_lib.runs.saved import CONFIG

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m amer_lib.export", description=__doc__.splitlines()[0])
    notebooks = parser.add_subparsers(dest="notebook", required=True, metavar="NOTEBOOK")
    for name, help_ in (
        ("02_synthetic", "a synthetic run"),
        ("04_real_data", "a run on a prepared benchmark"),
        ("07_beyond", "a run with a stop head"),
    ):
        sub = notebooks.add_parser(name, help=help_)
        sub.add_argument("params", help="the params file the notebook wrote")
        sub.add_argument("--out", required=True, help="the model folder to write (a new one, unless --overwrite)")
        sub.add_argument(
            "--overwrite",
            action="store_true",
            help="replace the model folder at --out (kept if the export fails)",
        )
        if name == "02_synthetic":
            sub.add_argument("--transform", required=True, choices=TRANSFORMS)
            sub.add_argument("--setting", required=True, choices=list(SETTINGS))
            sub.add_argument("--system", required=True, choices=SYSTEMS)
        else:
            sub.add_argument("--seed", type=int, required=True)
        if name == "04_real_data":
            sub.add_argument("--dataset", required=True)
            sub.add_argument("--system", required=True, choices=SYSTEMS)
        if name == "07_beyond":
            which = sub.add_mutually_exclusive_group(required=True)
            which.add_argument("--dataset", help="notebook 04's AMER run with the stop head fitted on it")
            which.add_argument("--varying", action="store_true", help="the varying task's run")
    return parser.parse_args(argv)


def export(args: argparse.Namespace) -> Path:
    params, out = Path(args.params).resolve(), Path(args.out).resolve()
    check_out(out, args.overwrite)
    before = os.getcwd()
    os.chdir(NOTEBOOKS_DIR)  # where the parameter file's relative paths start
    try:
        return _export(args, params, out)
    finally:
        os.chdir(before)


def check_out(out: Path, overwrite: bool) -> None:
    """Before any work: `out` can be written and is new (or empty); with `overwrite`, an existing
    model folder (it holds amer.json) is replaced in one rename once the new one is complete, and
    any other folder is refused, so a mistyped --out never deletes a folder of something else."""
    require_writable(out.parent, "--out")
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} is a file: give a folder path")
    if not out.is_dir() or not any(out.iterdir()):
        return
    if not (out / CONFIG).exists():
        raise FileExistsError(
            f"--out {out} exists and is not a model folder (no {CONFIG}): give a new folder; "
            "--overwrite replaces only a model folder"
        )
    if not overwrite:
        raise FileExistsError(
            f"--out {out} holds a model already: give a new folder, or add --overwrite to replace it "
            "(the old one stays until the new one is complete)"
        )


def _export(args: argparse.Namespace, params: Path, out: Path) -> Path:
    if args.notebook == "02_synthetic":
        config = SyntheticConfig.from_yaml(params)
        return synthetic.export_run(config, args.transform, args.setting, args.system, out)
    if args.notebook == "04_real_data":
        return real_data.export_run(RealConfig.from_yaml(params), args.dataset, args.system, args.seed, out)
    if args.varying:
        return beyond.export_varying_run(BeyondConfig.from_yaml(params), args.seed, out)
    return beyond.export_real_run(BeyondConfig.from_yaml(params), args.dataset, args.seed, out)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        folder = export(args)
    except (OSError, DeviceUnavailableError, KeyError, ValueError, TypeError) as error:  # bad input: its message
        sys.exit(f"error: {error.args[0] if isinstance(error, KeyError) else error}")
    print(f"wrote {folder}", file=sys.stderr)


if __name__ == "__main__":
    main()
