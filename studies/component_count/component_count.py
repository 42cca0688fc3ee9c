"""Issue 70: does the number of training components decide whether AMER's vectors split a k = 3 compound?

FOLDOC's k = 3 failed (28% of the teacher's lead; each component a vector of its own in 52.7% of its
test compounds) with 266 findable training components; WordNet's k = 3 in the fair control, with
1036, split in 84.73% and reached 63%. The recipe, `params/04_real_data/compound_component_count.yaml`,
committed before its runs with its decision rule, trains WordNet's k = 3 as the fair control did
but on 266 of its components (`train_component_count`, drawn by each seed). Notebook 04 ran it with
the figure targets' kernels (the Makefile's FIGURE_KERNELS), from the repository root:

    export OMP_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2 \
        MKL_ENABLE_INSTRUCTIONS=AVX2 OPENBLAS_CORETYPE=Haswell FAISS_SIMD_LEVEL=AVX2
    .venv/bin/python -m papermill notebooks/04_real_data.ipynb build/executed/04_component_count.ipynb -k python3 \
        -f params/04_real_data/compound_component_count.yaml -p workers 2

This script keeps the runs' per-question scores, validation curves and per-seed vector roles in a
committed file (`--collect`, which asks the trained models for their vector roles; without it the
committed file is read) and applies the rule against the fair control's seeds
(`fair_control_roles.json`, made before the runs by `fair_control_roles.py`; the fair control's
per-question scores are `studies/fair_control/fair_control_scores.json`):

* primary: each component a vector of its own, per seed, 266 against 1036 components: supported
  when every seed of 266 is below every seed of 1036 (an exact one-sided permutation p over the
  252 ways to split 10 seeds 5 and 5: 1/252) and the mean drop is at least 10 points; rejected when
  the drop is under 5 points; undecided otherwise;
* secondary: MRecall@100 of single-query, AMER and the teacher, AMER's share of the teacher's lead
  with its seed-and-question interval at each count, the components each system finds fully, and
  both systems on the validation compounds at the kept step.

    .venv/bin/python studies/component_count/component_count.py --collect
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for path in (ROOT, ROOT / "studies" / "foldoc"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from replication import (  # noqa: E402
    array,
    components_found,
    found_cell,
    found_shares,
    interval_cell,
    write_report,
)

from amer_lib.beyond.compound import component_qids  # noqa: E402
from amer_lib.io import write_json  # noqa: E402
from amer_lib.report.significance import compare, p_text, share  # noqa: E402

RECIPE = ROOT / "params" / "04_real_data" / "compound_component_count.yaml"
RESULTS = {
    "266": ROOT / "results" / "04_compound_component_count",
    "1036": ROOT / "results" / "04_compound_fair_control",
}
PREPARED = ROOT / "results" / "prepared" / "compound"
BASELINE_ROLES = HERE / "fair_control_roles.json"
FAIR_SCORES = ROOT / "studies" / "fair_control" / "fair_control_scores.json"
FAIR_RECORD = ROOT / "studies" / "fair_control" / "fair_control.json"  # the 1036 arm's comparison, Holm over its k
SCORES = HERE / "component_count_scores.json"
DATASET = "compound_k3"
SYSTEMS = ("single", "amer", "teacher_decomposition")
RESAMPLES = 10_000
SUPPORTED, REJECTED = 10.0, 5.0  # the recipe's mean drops, in points


def collect() -> dict:
    """Per count (266 here; 1036: the fair control): per system and seed the per-question MRecall@100,
    kept step, vectors and validation curve; the components found fully; and, for 266, each seed's
    vector roles from its trained model (the fair control's are `fair_control_roles.json`)."""
    from amer_lib.beyond import decomposition
    from amer_lib.params import validate

    found = {}
    for count, folder in RESULTS.items():
        runs = [json.loads(p.read_text()) for p in sorted(folder.glob(f"{DATASET}_*.json"))]
        runs = [r for r in runs if isinstance(r, dict) and r.get("system") in SYSTEMS]
        qids = runs[0]["qids"]
        if any(r["qids"] != qids for r in runs):
            raise ValueError(f"{folder}: the {DATASET} runs hold other questions")
        entry = {"qids": qids, "systems": {}}
        for r in runs:
            seed = "none" if r["seed"] is None else str(r["seed"])
            entry["systems"].setdefault(r["system"], {})[seed] = {
                "mrecall": r["mrecall"],
                "best_step": r.get("best_step"),
                "n_queries": r.get("n_queries"),
                "validation": [[h["step"], h["val_mrecall"]] for h in r.get("history", [])],
            }
        entry["components_found"] = components_found(PREPARED / f"{DATASET}_test.jsonl", folder, DATASET)
        found[count] = entry
    written = yaml.safe_load((RESULTS["266"] / f"params_minilm_{DATASET}.yaml").read_text())
    os.chdir(ROOT / "notebooks")  # the notebook's paths are from notebooks/, as papermill ran it
    params = validate("04_real_data", written)
    found["266"]["vector_roles"] = {str(s): decomposition.vector_roles(params, DATASET, s) for s in params.seeds}
    found["266"]["train_component_count"] = params.train_component_count
    return found


def permutation_p(lower: list[float], higher: list[float]) -> float:
    """The exact one-sided p that `lower`'s mean falls as far below `higher`'s by chance: the share of
    the ways to split the pooled values into groups of their sizes whose difference of means
    (higher's group minus lower's) is at least the observed one."""
    pooled = np.array(list(lower) + list(higher), float)
    observed = np.mean(higher) - np.mean(lower)
    splits = list(itertools.combinations(range(len(pooled)), len(lower)))
    hits = 0
    for chosen in splits:
        mask = np.zeros(len(pooled), bool)
        mask[list(chosen)] = True
        hits += pooled[~mask].mean() - pooled[mask].mean() >= observed - 1e-12
    return hits / len(splits)


def sign_flip_p(lower: list[float], higher: list[float]) -> float:
    """The exact one-sided p of the paired differences, `higher` minus `lower` seed by seed (the two
    arms share their seeds): the share of the 2^n sign flips whose mean difference is at least the
    observed one."""
    differences = np.array(higher, float) - np.array(lower, float)
    flips = np.array(list(itertools.product((1, -1), repeat=len(differences))))
    return float(np.mean((flips * differences).mean(1) >= differences.mean() - 1e-12))


def decision(fewer: list[float], more: list[float]) -> dict:
    """The recipe's rule on "each component a vector of its own" per seed, `fewer` components against `more`."""
    drop = float(np.mean(more) - np.mean(fewer))
    below = max(fewer) < min(more)
    if below and drop >= SUPPORTED:
        verdict = "supported"
    elif drop < REJECTED:
        verdict = "rejected"
    else:
        verdict = "undecided"
    return {
        "drop": round(drop, 2),
        "every_seed_below": bool(below),
        "p_permutation": permutation_p(fewer, more),
        "p_paired": sign_flip_p(fewer, more),
        "verdict": verdict,
    }


def at_kept_step(run: dict) -> float:
    """A run's validation MRecall@100 (%) at its kept step."""
    return round(100 * dict(run["validation"])[run["best_step"]], 2)


def analyse(scores: dict, baseline_roles: dict, resamples: int = RESAMPLES, fair: Path | None = FAIR_RECORD) -> dict:
    """The rule's numbers, then per count the secondary ones; the 1036 arm's comparison with single-query
    quotes `fair`'s p (the fair control's record, where that arm's runs come from)."""
    roles = {"266": scores["266"]["vector_roles"], "1036": baseline_roles}
    by_count = {}
    for count, entry in scores.items():
        arrays = {s: array(entry, s) for s in SYSTEMS}
        row = {"seeds": len(arrays["amer"]), "questions": arrays["amer"].shape[1]}
        for name, values in arrays.items():
            means = values.mean(1)
            row[name] = {
                "mean": float(values.mean()),
                "std": float(means.std()),  # the population std over seeds, as figures/ gives it
                "by_seed": [round(float(v), 2) for v in means],
            }
        c = compare(arrays["single"], arrays["amer"], n_resamples=resamples)
        row["amer_vs_single"] = {"delta": c.delta, "low": c.low, "high": c.high, "p_two_sided": c.p}
        row["amer_vs_single"]["p_text"] = p_text(c.p, resamples, sides=2)
        if count == "1036" and fair is not None:  # the fair control's comparison: its one p, as its record has it
            same = next(r for r in json.loads(fair.read_text())["rows"] if r["k"] == 3)["amer_vs_single"]
            if abs(same["p_two_sided"] - c.p) > 1e-12:
                raise ValueError(f"{fair}'s k = 3 comparison is not this one: p {same['p_two_sided']} against {c.p}")
            row["amer_vs_single"]["p_text"] = f"{same['p_text']} (Holm over the fair control's 3 k)"
        s = share(arrays["single"], arrays["amer"], arrays["teacher_decomposition"], n_resamples=resamples)
        row["teacher_share"] = {"share": s.share, "low": s.low, "high": s.high}
        clusters = [component_qids(qid) for qid in entry["qids"]]
        s = share(*(arrays[name] for name in SYSTEMS), n_resamples=resamples, clusters=clusters)
        row["teacher_share_by_components"] = {"share": s.share, "low": s.low, "high": s.high}
        row["components_found"] = found_shares(entry["components_found"], 3)
        row["validation_at_kept_step"] = {
            system: [at_kept_step(entry["systems"][system][seed]) for seed in sorted(entry["systems"][system])]
            for system in ("single", "amer")
        }
        row["amer_best_steps"] = [entry["systems"]["amer"][s]["best_step"] for s in sorted(entry["systems"]["amer"])]
        per_seed = [roles[count][s] for s in sorted(roles[count])]
        row["vector_roles"] = {
            key: [r[key] for r in per_seed]
            for key in ("all_components_served", "components_served_mean", "vectors_repeating_a_component")
        }
        row["vector_roles_mean"] = {key: round(float(np.mean(v)), 2) for key, v in row["vector_roles"].items()}
        by_count[count] = row
    served = {count: by_count[count]["vector_roles"]["all_components_served"] for count in by_count}
    return {
        "dataset": DATASET,
        "resamples": resamples,
        "rule": {"supported_drop": SUPPORTED, "rejected_drop": REJECTED},
        "decision": decision(served["266"], served["1036"]),
        "counts": by_count,
    }


def table(result: dict) -> str:
    d = result["decision"]
    lines = [
        "| training components | each component a vector of its own, by seed | mean | vectors repeating a component "
        "(mean) | components served (mean of 3) |",
        "|---|---|---|---|---|",
    ]
    for count in ("1036", "266"):
        r = result["counts"][count]
        roles, means = r["vector_roles"], r["vector_roles_mean"]
        lines.append(
            f"| {count} | {', '.join(f'{v:.2f}' for v in roles['all_components_served'])} | "
            f"{means['all_components_served']:.2f} | {means['vectors_repeating_a_component']:.2f} | "
            f"{means['components_served_mean']:.2f} |"
        )
    lines += [
        "",
        f"Decision: drop {d['drop']:.2f} points, every seed below: {'yes' if d['every_seed_below'] else 'no'}, "
        f"exact permutation p = {d['p_permutation']:.4f} (one-sided, the arms unpaired, as the rule reads it): "
        f"**{d['verdict']}**. Paired by seed (both arms ran seeds 0-4), the exact sign-flip p is "
        f"{d['p_paired']:.4f} (one-sided), the smallest {result['counts']['266']['seeds']} seeds can give.",
        "",
        "| training components | seeds x questions | single-query | AMER | teacher | AMER - single (95%) | "
        "p (two-sided; 266: one comparison, uncorrected) | share of the teacher's lead (95%) | "
        "components resampled (95%) | compounds with 0 / 1 / 2 / 3 components "
        "fully found: single-query; AMER; teacher | validation at the kept step, single-query; AMER | "
        "AMER's kept step by seed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for count in ("1036", "266"):
        r = result["counts"][count]
        s, v, c = r["teacher_share"], r["validation_at_kept_step"], r["teacher_share_by_components"]
        lines.append(
            f"| {count} | {r['seeds']} x {r['questions']} | {r['single']['mean']:.2f} ± {r['single']['std']:.2f} | "
            f"{r['amer']['mean']:.2f} ± {r['amer']['std']:.2f} | {r['teacher_decomposition']['mean']:.2f} | "
            f"{interval_cell(r['amer_vs_single'])} | {r['amer_vs_single']['p_text']} | "
            f"{100 * s['share']:.0f}% ({100 * s['low']:.0f}-{100 * s['high']:.0f}%) | "
            f"{100 * c['share']:.0f}% ({100 * c['low']:.0f}-{100 * c['high']:.0f}%) | "
            f"{found_cell(r['components_found'], SYSTEMS)} | "
            f"{np.mean(v['single']):.2f}; {np.mean(v['amer']):.2f} | {', '.join(map(str, r['amer_best_steps']))} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collect", action="store_true", help="copy the runs' scores and vector roles first")
    args = parser.parse_args()
    if args.collect:
        write_json(SCORES, collect())
    baseline = json.loads(BASELINE_ROLES.read_text())["roles"]
    result = analyse(json.loads(SCORES.read_text()), baseline)
    write_report(HERE, "component_count", result, table(result))


if __name__ == "__main__":
    main()
