"""Seen vs unseen questions and MRecall against the search depth, for finished notebook-04 runs.

    python studies/minilm_wordnet_cpu/seen_unseen.py RESULTS_DIR DATASET --seeds 0 --out OUT.json

RESULTS_DIR is a notebook-04 results folder (relative to notebooks/, as in its parameters) that
holds both systems' runs of DATASET for the seeds; their checkpoints must still be in runs_dir.
Writes `amer_lib.experiments.diversity_analysis.seen_and_unseen`'s rows and, on the test questions, both systems'
round-robin MRecall at depths 10 ... 1000.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DEPTHS = (10, 20, 50, 100, 200, 500, 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dir")
    parser.add_argument("dataset")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--limit", type=int, default=600, help="training questions per run")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    out = args.out.resolve()
    os.chdir(ROOT / "notebooks")
    from amer_lib.experiments.diversity_analysis import seen_and_unseen, seen_and_unseen_table

    result = Path(args.results_dir) / f"{args.dataset}_amer_seed{args.seeds[0]}.json"
    params = {**json.loads(result.read_text())["params"], "datasets": [args.dataset]}
    seen = seen_and_unseen(params, args.seeds, args.limit, DEPTHS)
    depths = [
        {"seed": r["seed"], "system": r["system"], "depth": k, "mrecall": value}
        for r in seen
        if r["questions"] == "test"
        for k, value in r.pop("mrecall_at_depth").items()
    ]
    out.write_text(json.dumps({"params": params, "seen_and_unseen": seen, "depths": depths}, indent=1))
    print(pd.DataFrame(seen_and_unseen_table(seen)).round(1).to_string())
    print(pd.DataFrame(depths).pivot_table(index="system", columns="depth", values="mrecall").mul(100).round(1))


if __name__ == "__main__":
    main()
