"""Issue 60: the teacher's decomposition on the compound benchmark, the ceiling beside the trained oracle.

The off-the-shelf MiniLM that embedded the corpus, chose the findable test components and is the
component term's teacher, run on each component of a test compound and the lists merged
round-robin (notebook 04's `beyond.decomposition.teacher_decomposition`: nothing trained, one seed-free run).
Per k: MRecall@100, MRecall@10 and Recall@100 in % over the 600 test compounds, and the commit of
the code that ran it. The compound oracle tables committed before notebook 04 ran it lack it.

From the repository root, after notebook 03 has prepared the compound benchmark
(`make figures-compound`, or notebook 03 with params/03_real_data_prep/compound.yaml), under the
figure targets' kernels (the Makefile's FIGURE_KERNELS):

    .venv/bin/python studies/teacher_decomposition/teacher_decomposition.py   # teacher_decomposition.json beside it
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "04_real_data.ipynb"
RECIPE = ROOT / "params" / "04_real_data" / "compound.yaml"
FOLDER = ROOT / "results" / "studies" / "teacher_decomposition"  # ignored by git, as every run's files


def measure(prepared_dir: str | None = None, folder: Path = FOLDER) -> list[dict]:
    """The teacher's decomposition on each compound dataset of notebook 04's compound recipe."""
    from amer_lib.beyond.decomposition import teacher_decomposition
    from amer_lib.params import from_files

    params = from_files(NOTEBOOK, RECIPE).replace(
        results_dir=str(folder / "results"), runs_dir=str(folder / "runs"), figures_dir=str(folder / "figures")
    )
    if prepared_dir:
        params = params.replace(prepared_dir=prepared_dir)
    rows = []
    for dataset in params.datasets:
        result = teacher_decomposition(params, dataset)
        row = {"dataset": dataset, "questions": len(result["mrecall"])}
        row |= {
            metric: round(100 * float(np.mean(result[metric])), 2) for metric in ("mrecall", "mrecall_10", "recall")
        }
        rows.append(row | {"git_commit": result["git_commit"]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--prepared-dir", help="the prepared compound benchmark (default: the recipe's, from notebooks/)"
    )
    parser.add_argument("--folder", type=Path, default=FOLDER, help=f"where the run's files go (default {FOLDER})")
    args = parser.parse_args()
    folder = args.folder.resolve()
    prepared = str(Path(args.prepared_dir).resolve()) if args.prepared_dir else None
    os.chdir(NOTEBOOK.parent)  # as a notebook runs: the recipe's relative paths are from notebooks/
    rows = measure(prepared, folder)
    (Path(__file__).resolve().parent / "teacher_decomposition.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
