"""Issue 43: the compound recipe's kept lever on the offline WordNet kinds set, whatever the sign.

The lever is the component term of params/04_real_data/compound_distilled.yaml (its weight and
distance, read from that file); the file's other lever, fresh compounds (`train_compounds`), finds
nothing to redraw here. On plain questions a question's one component is itself, so the term
holds AMER's matched vector's ranking of the batch's candidates to the ranking the off-the-shelf
MiniLM gives the question. Notebook 04's offline recipe on wordnet_kinds (300 steps,
3 seeds): today's AMER and single-query, and AMER with the term (single-query is the recipe's,
`RealConfig.for_system`). Per test set (whole, low-similarity third): MRecall@100 mean and std over
the seeds, the paired bootstrap over questions (seed-averaged scores) of AMER with the term against
today's AMER, and against single-query (is it behind?).

From the repository root, after notebook 03 has prepared the WordNet benchmark (`make figures`):

    .venv/bin/python studies/kinds_distilled/kinds_distilled.py            # kinds_distilled.json and .md, here
    .venv/bin/python studies/kinds_distilled/kinds_distilled.py --today-params \
        ../results/04_real_data/params_minilm_wordnet_senses+wordnet_kinds.yaml

`--today-params` reads today's runs where notebook 04 made them (`make figures`), from the parameter
file it wrote beside them (paths from notebooks/, as the notebook's); without it they train under
the study's folder.

Since issue 60 the term reads each question's `answer_questions` and refuses a training split where
no question has them (`docs/usage.md`), which is this study's case: its committed numbers were made
before, when a plain question was its own component. That is what the refusal rests on (the term
on the question itself did not help here); rerunning the study needs the WordNet questions given
`answer_questions` equal to the question for each answer.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "04_real_data.ipynb"
LEVER_FILE = ROOT / "params" / "04_real_data" / "compound_distilled.yaml"
FOLDER = ROOT / "results" / "studies" / "kinds_distilled"  # ignored by git, as every run's files
HERE = Path(__file__).resolve().parent  # the study's folder: its reports
DATASET = "wordnet_kinds"


def lever() -> dict:
    """The component term's parameters as the compound recipe keeps them."""
    kept = yaml.safe_load(LEVER_FILE.read_text())
    return {name: kept[name] for name in ("component_weight", "component_distance")}


def configs(seeds: list[int], folder: Path = FOLDER, today_params: str | None = None):
    """Notebook 04's offline recipe on wordnet_kinds: today's runs (single-query and AMER) and AMER
    with the lever. `today_params`: the parameter file notebook 04 wrote beside today's runs, which
    are then read from its folders (else the notebook's defaults, its runs under `folder`)."""
    from amer_lib.params import from_files
    from amer_lib.runs.configs import RealConfig

    base = RealConfig.from_yaml(today_params) if today_params else from_files(NOTEBOOK)
    base = base.replace(datasets=[DATASET], baselines=[], seeds=seeds)
    folders = lambda name: {"results_dir": str(folder / name / "results"), "runs_dir": str(folder / name / "runs")}  # noqa: E731
    today = base.replace(systems=["single", "amer"], **({} if today_params else folders("today")))
    return today, base.replace(systems=["amer"], **lever(), **folders("distilled"))


def compare(today: list[dict], distilled: list[dict], n_resamples: int = 10_000) -> list[dict]:
    """Per test set: each system's MRecall@100 (mean, std over the seeds both AMERs have) and the
    paired bootstrap of the lever's AMER against today's AMER and against single-query."""
    from amer_lib.core.metrics import low_similarity_subset
    from amer_lib.report.significance import paired_bootstrap

    by = lambda runs, system: {r["seed"]: r for r in runs if r["system"] == system}  # noqa: E731
    systems = {"single": by(today, "single"), "amer": by(today, "amer"), "distilled": by(distilled, "amer")}
    seeds = sorted(set(systems["amer"]) & set(systems["distilled"]) & set(systems["single"]))
    if not seeds:
        raise SystemExit("no seed has today's single-query and AMER runs and the lever's AMER run")
    similarity = np.asarray(systems["amer"][seeds[0]]["target_similarity"], float)
    rows = []
    for subset, chosen in (
        ("whole", np.arange(len(similarity))),
        ("low-similarity", low_similarity_subset(similarity)),
    ):
        scores = {
            name: np.array([np.asarray(runs[s]["mrecall"], float)[chosen] for s in seeds])
            for name, runs in systems.items()
        }
        row = {"test set": subset, "questions": len(chosen), "seeds": seeds}
        for name, values in scores.items():
            means = 100 * values.mean(axis=1)
            row[f"{name}_mean"], row[f"{name}_std"] = float(means.mean()), float(means.std())
        averaged = {name: values.mean(axis=0) for name, values in scores.items()}
        row["p_ahead_of_today"] = paired_bootstrap(averaged["amer"], averaged["distilled"], n_resamples)["p_value"]
        against_single = paired_bootstrap(averaged["single"], averaged["distilled"], n_resamples)
        row["p_behind_single"] = against_single["p_value_behind"]
        row["train_seconds_per_run"] = float(np.mean([systems["distilled"][s]["train_seconds"] for s in seeds]))
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    cell = lambda row, name: f"{row[name + '_mean']:.2f}±{row[name + '_std']:.2f}"  # noqa: E731
    lines = [
        "| test set | questions | seeds | single-query | AMER today | AMER with the term | p ahead of today "
        "| p behind single-query | train s/run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['test set']} | {r['questions']} | {','.join(map(str, r['seeds']))} | {cell(r, 'single')} | "
            f"{cell(r, 'amer')} | {cell(r, 'distilled')} | {r['p_ahead_of_today']:.4f} | {r['p_behind_single']:.4f} | "
            f"{r['train_seconds_per_run']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    from amer_lib.experiments.real_data import run_all

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--today-params", help="notebook 04's parameter file beside today's runs (from notebooks/)")
    parser.add_argument("--folder", type=Path, default=FOLDER, help=f"where the study's runs live (default {FOLDER})")
    parser.add_argument(
        "--name", default="kinds_distilled", help="the report's file stem under studies/kinds_distilled/"
    )
    args = parser.parse_args()
    folder = args.folder.resolve()
    os.chdir(NOTEBOOK.parent)  # as a notebook runs: the recipe's relative paths are from notebooks/
    today, distilled = configs(args.seeds, folder, args.today_params)
    rows = compare(run_all(today), run_all(distilled))
    (HERE / f"{args.name}.json").write_text(json.dumps(rows, indent=1) + "\n")
    (HERE / f"{args.name}_table.md").write_text(table(rows))
    print(table(rows))


if __name__ == "__main__":
    main()
