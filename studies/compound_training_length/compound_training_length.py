"""Issue 30's last question: do the compound runs improve when trained until their validation
curves flatten? Seed 0 of compound_k2 and compound_k3 trained for 1000 steps (2.5 times the
offline recipe's 400) beside the 400-step runs of params/04_real_data/compound.yaml.

The 1000-step runs, from the repository root (after `make figures-compound`):

    papermill notebooks/04_real_data.ipynb build/executed/04_compound_1000.ipynb \\
        -f params/04_real_data/compound.yaml -p datasets '[compound_k2, compound_k3]' -p seeds '[0]' \\
        -p steps 1000 -p eval_every 200 -p results_dir ../results/04_compound_1000 \\
        -p runs_dir ../runs/04_compound_1000 -p figures_dir ../results/04_compound_1000/figures
    .venv/bin/python studies/compound_training_length/compound_training_length.py

Writes studies/compound_training_length/compound_training_length.md and .json from the runs' results JSON.
"""

import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = {400: ROOT / "results" / "04_compound", 1000: ROOT / "results" / "04_compound_1000"}


def run_row(steps: int, dataset: str, system: str) -> dict:
    result = json.loads((BUDGETS[steps] / f"{dataset}_{system}_seed0.json").read_text())
    return {
        "steps": steps,
        "dataset": dataset,
        "system": system,
        "test_mrecall": round(100 * float(np.mean(result["mrecall"])), 2),
        "test_recall": round(100 * float(np.mean(result["recall"])), 2),
        "best_step": result["best_step"],
        "train_seconds": round(result["train_seconds"]),
        "validation_mrecall": {h["step"]: round(100 * h["val_mrecall"], 2) for h in result["history"]},
    }


def main() -> None:
    rows = [run_row(s, d, y) for d in ("compound_k2", "compound_k3") for y in ("single", "amer") for s in BUDGETS]
    Path(__file__).resolve().with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "| k | system | steps | test MRecall@100 | test Recall@100 | kept step | validation MRecall@100 by step "
        "| train s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        curve = ", ".join(f"{step}: {value}" for step, value in r["validation_mrecall"].items())
        lines.append(
            f"| {r['dataset'][-1]} | {r['system']} | {r['steps']} | {r['test_mrecall']} | {r['test_recall']} | "
            f"{r['best_step']} | {curve} | {r['train_seconds']} |"
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
