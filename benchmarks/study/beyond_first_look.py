"""A first look at issue 16's two questions before notebook 07 exists, at the offline scale:

1. the varying synthetic task (1 to 8 targets per input, d = 128, notebook 02's budget: 1000
   steps, batch 256): AMER trained with a stop head, its MRecall at every fixed n against the
   stop head's n and against n told the true m, with the vectors searched per input;
2. notebook 04's AMER runs (seeds 0-2, the paper's n): every merge of `MERGE_GRID`, options
   picked by validation MRecall@100, test MRecall@100 against round-robin (paired bootstrap).

    python benchmarks/study/beyond_first_look.py --out benchmarks/study/beyond_first_look
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def varying_rows() -> tuple[list[dict], dict]:
    from amer_lib.experiments.beyond import varying_run
    from amer_lib.params import from_files

    params = from_files(ROOT / "notebooks" / "02_synthetic.ipynb").replace(
        results_dir="../results/study/varying", runs_dir="../runs/study/varying", stop_weight=1.0
    )
    run = varying_run(params)
    true, predicted = np.array(run["true_counts"]), np.array(run["predicted_counts"])
    stop = {
        "stop head right": float(np.mean(true == predicted)),
        "within one": float(np.mean(np.abs(true - predicted) <= 1)),
        "last validation loss": run["history"][-1]["val_loss"],
    }
    return run["rows"], stop


def merge_rows() -> list[dict]:
    from amer_lib.core.metrics import paired_bootstrap
    from amer_lib.experiments.beyond import merge_comparison
    from amer_lib.params import from_files

    params = from_files(ROOT / "notebooks" / "04_real_data.ipynb")
    rows = []
    for dataset in params.datasets:
        for seed in params.seeds:
            compared = merge_comparison(params, dataset, seed, {"wordnet_senses": 2, "wordnet_kinds": 5}[dataset])
            baseline = np.array(compared[0]["mrecall"])
            for row in compared:
                scores = np.array(row["mrecall"])
                p = paired_bootstrap(baseline, scores)["p_value"] if row["merge"] != "round_robin" else None
                rows.append(
                    {
                        "dataset": dataset,
                        "seed": seed,
                        "merge": row["merge"],
                        "options": row["options"] or "",
                        "validation": round(100 * row["validation_mrecall"], 2),
                        "test": round(100 * scores.mean(), 2),
                        "p vs round-robin": p,
                    }
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="path without suffix: writes .json and .md")
    args = parser.parse_args()
    out = args.out.resolve()
    os.chdir(ROOT / "notebooks")
    import pandas as pd

    from amer_lib.io import write_json, write_text
    from amer_lib.report.tables import to_markdown

    counts, stop = varying_rows()
    merges = merge_rows()
    write_json(out.with_suffix(".json"), {"varying": counts, "stop": stop, "merges": merges})
    text = "# Issue 16, a first look (offline scale, this machine)\n\n" + __doc__.split("\n\n")[1] + "\n"
    text += f"\n## Varying task: fixed n against the stop head's n\n\n{to_markdown(pd.DataFrame(counts).round(3))}"
    text += "\n" + ", ".join(f"{k}: {v:.3f}" for k, v in stop.items()) + "\n"
    text += f"\n## Merges on notebook 04's AMER runs (MRecall@100 in %)\n\n{to_markdown(pd.DataFrame(merges))}"
    write_text(out.with_suffix(".md"), text)
    print(text)


if __name__ == "__main__":
    main()
