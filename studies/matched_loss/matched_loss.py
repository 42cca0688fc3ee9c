"""Equation 2 against the authors' code on the offline kinds set (5-8 targets per question): AMER
trained with an example's matched terms summed (`matched_loss: sum`, the paper files) or averaged
(`mean`, the offline default), notebook 04's offline recipe otherwise, seeds 0-2; single-query
beside them. MRecall@100 on the whole test set and its low-similarity third, mean and standard
deviation over seeds, and the paired bootstrap of sum against mean.

The mean runs and single-query are notebook 04's own (read from its cache when it ran); the sum
runs train into `results/study/matched_loss_sum`.

    python studies/matched_loss/matched_loss.py --out studies/matched_loss/matched_loss
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATASET = "wordnet_kinds"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output path without suffix (.json and .md)")
    out = parser.parse_args().out.resolve()
    os.chdir(ROOT / "notebooks")  # the notebooks' relative paths
    from amer_lib.experiments.real_data import ready_benchmark, run_all
    from amer_lib.io import write_json, write_text
    from amer_lib.params import from_files
    from amer_lib.report.summaries import summary

    defaults = from_files("04_real_data.ipynb").replace(datasets=[DATASET], baselines=[])
    ready_benchmark(defaults, from_files("03_real_data_prep.ipynb"))
    averaged = run_all(defaults)
    summed = run_all(
        defaults.replace(
            systems=["amer"],
            matched_loss="sum",
            results_dir="../results/study/matched_loss_sum",
            runs_dir="../runs/study/matched_loss_sum",
        )
    )
    runs = averaged + [{**r, "system": "amer_sum"} for r in summed]
    rows, against_mean = summary(runs), summary(runs, baseline="amer")
    write_json(out.with_suffix(".json"), {"against_single": rows, "sum_against_mean": against_mean})
    lines = [
        "# Matched loss: Equation 2's sum against the authors' mean (wordnet_kinds, seeds 0-2)",
        "",
        "Written by `studies/matched_loss/matched_loss.py`. MRecall@100 in %, mean ± std over seeds; Δ relative",
        "to the row named in the heading; p: paired bootstrap over seed-averaged per-question scores.",
        "",
        "| system | whole | Δ vs single | p | low-sim | Δ vs single | p |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['system']} | {r['whole_mean']:.2f} ± {r['whole_std']:.2f} | {100 * r['whole_delta']:+.1f}% | "
            f"{r.get('whole_p', float('nan')):.3f} | {r['low_sim_mean']:.2f} ± {r['low_sim_std']:.2f} | "
            f"{100 * r['low_sim_delta']:+.1f}% | {r.get('low_sim_p', float('nan')):.3f} |"
        )
    (sum_row,) = [r for r in against_mean if r["system"] == "amer_sum"]
    lines += [
        "",
        f"Sum against mean: whole {100 * sum_row['whole_delta']:+.1f}% (p = {sum_row['whole_p']:.3f}), "
        f"low-similarity {100 * sum_row['low_sim_delta']:+.1f}% (p = {sum_row['low_sim_p']:.3f}).",
    ]
    write_text(out.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))
    print(json.dumps(sum_row, indent=1))


if __name__ == "__main__":
    main()
