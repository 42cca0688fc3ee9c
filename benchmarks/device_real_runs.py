"""Notebook 04's runs for parameter files, without papermill: for the lent GPU machine.

    python benchmarks/device_real_runs.py params/04_real_data/wordnet_smollm2.yaml --set workers=4 --out OUT

Trains every (dataset, system, seed) run of notebook 04 with the files' parameters (paths are
relative to notebooks/, as in the notebook), then writes the summary rows and the learning curves
to OUT as JSON, and the results folder as a tarball, to be read back where the figures are made.
"""

from __future__ import annotations

import argparse
import json
import os
import tarfile
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", help="notebook-04 parameter files, applied in order")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=YAML", help="one more override")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    from amer_lib.experiments.real_data import run_all
    from amer_lib.params import from_files, validate
    from amer_lib.report.summaries import summary

    notebook = ROOT / "notebooks" / "04_real_data.ipynb"
    params = from_files(notebook, *[Path(f).resolve() for f in args.files])
    params = validate(
        "04_real_data",
        {**params.as_dict(), **{k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}},
    )
    os.chdir(ROOT / "notebooks")
    began = time.perf_counter()
    results = run_all(params)
    seconds = time.perf_counter() - began
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    curves = [
        dict(
            dataset=r["dataset"],
            system=r["system"],
            seed=r["seed"],
            train_seconds=r["train_seconds"],
            best_step=r["best_step"],
            history=r["history"],
        )
        for r in results
    ]
    report = dict(device=device, wall_seconds=seconds, params=params.as_dict(), summary=summary(results), curves=curves)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    with tarfile.open(args.out / "results.tar.gz", "w:gz") as tar:
        tar.add(params.results_dir, arcname=Path(params.results_dir).name)
    print(json.dumps(report["summary"], indent=1))
    print(f"{len(results)} runs in {seconds:.0f} s on {device}")


if __name__ == "__main__":
    main()
