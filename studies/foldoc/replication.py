"""Issue 70's replication on FOLDOC, read once: the frozen recipes' test runs against their decision rule.

The recipes (`studies/frozen/foldoc_k2.yaml`, `foldoc_k3.yaml`) were committed before the benchmark
existed (`studies/foldoc/foldoc_data.json` names its files); `studies/frozen/run.py --split test`
ran each once, its notebook-04 run files under `results/studies/frozen/foldoc_k<k>/test/results/`.
This script keeps their per-question scores in a committed file and applies the recipes' rule:

* MRecall@100 over the 5 seeds for single-query, AMER with the term and the teacher's
  decomposition (seed-free), with the std over seeds;
* AMER against single-query by the paired bootstrap over seeds and questions (one-sided, 10,000
  resamples, Holm over the ks read), p at the bootstrap's resolution;
* AMER's share of the teacher's lead with its 95% interval, against WordNet's aims (75% at k = 2,
  50% at k = 3): met when the interval's lower end reaches the aim, missed when its upper end is
  below, undecided otherwise.

The recipes' bootstrap draws the test compounds as if independent, but the 600 compounds of a k are
made of a few dozen components, each in many compounds. Issue 79's reanalysis draws the components
instead (`significance.compare` and `share` with `clusters`: each compound's components, read from
its qid), seeds as before, and decides the same rule again under it (`*_by_components`): the
recipes' verdicts stay as they were read, beside the reanalysis.

From the repository root, after the test runs (`--collect` copies their scores into
`foldoc_scores.json`; without it the committed scores are read):

    .venv/bin/python studies/foldoc/replication.py --collect
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from urllib.parse import unquote

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from amer_lib.beyond.compound import component_qids  # noqa: E402
from amer_lib.io import write_json, write_text  # noqa: E402
from amer_lib.report.evidence import Estimate, Evidence  # noqa: E402
from amer_lib.report.significance import compare, holm, p_text, share  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNS = ROOT / "results" / "studies" / "frozen"
SCORES = HERE / "foldoc_scores.json"
AIMS = {2: 0.75, 3: 0.50}  # WordNet's aims, the better ceiling's lead AMER closes
SYSTEMS = ("single", "amer", "teacher_decomposition")
RESAMPLES = 10_000
DECOMPOSITION_KEYS = ("amer_vs_decomposition", "amer_vs_decomposition_by_components")


def collect(ks=(2, 3)) -> dict:
    """Per k read: each system's per-question MRecall@100 by seed (the teacher under `none`), the
    questions' ids, each run's kept step and AMER's vectors, from the frozen runs' result files."""
    found = {}
    for k in ks:
        folder = RUNS / f"foldoc_k{k}" / "test" / "results"
        runs = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
        runs = [r for r in runs if isinstance(r, dict) and r.get("system") in SYSTEMS]
        if not runs:
            continue
        qids = runs[0]["qids"]
        if any(r["qids"] != qids for r in runs):
            raise ValueError(f"{folder}: the runs hold other questions")
        entry = {"qids": qids, "systems": {}}
        for r in runs:
            seed = "none" if r["seed"] is None else str(r["seed"])
            entry["systems"].setdefault(r["system"], {})[seed] = {
                "mrecall": r["mrecall"],
                "best_step": r.get("best_step"),
                "n_queries": r.get("n_queries"),
                "validation": [[h["step"], h["val_mrecall"]] for h in r.get("history", [])],
            }
        questions = ROOT / "results" / "prepared" / f"foldoc_k{k}" / f"foldoc_k{k}_test.jsonl"
        entry["components_found"] = components_found(questions, folder, f"foldoc_k{k}")
        manifest = json.loads((ROOT / "results" / "prepared" / f"foldoc_k{k}" / "manifest.json").read_text())
        entry["validation_report"] = manifest["validation"][f"foldoc_k{k}"]  # notebook 03's draw
        roles = folder.parent / "figures" / f"compound_vector_roles_minilm_foldoc_k{k}.csv"
        entry["vector_roles"] = next(csv.DictReader(roles.open())) if roles.exists() else None
        found[str(k)] = entry
    return found


def components_found(questions_path: Path, folder: Path, dataset: str, depth: int = 100) -> dict:
    """Per system and seed, per test compound of `dataset`: how many of its components have every
    answer in the run's top `depth` (from the TREC run files in `folder` and the prepared test
    questions at `questions_path`, whose `answer_questions` name each answer's component)."""
    from amer_lib.data.questions import read_questions

    questions = read_questions(questions_path)
    found: dict[str, dict[str, list[int]]] = {}
    for path in sorted(folder.glob(f"{dataset}_*.trec")):
        ranked: dict[str, list[str]] = {}
        for line in path.read_text().splitlines():
            qid, _, doc, rank, *_ = line.split()
            if int(rank) <= depth:
                ranked.setdefault(unquote(qid), []).append(unquote(doc))  # as io.trec_id wrote them
        run = path.stem.removeprefix(f"{dataset}_")
        system, _, seed = run.rpartition("_seed") if "_seed" in run else (run, "", "none")
        counts = []
        for q in questions:
            seen = set(ranked.get(q.qid, []))
            parts: dict[str, bool] = {}
            for text, docs in zip(q.answer_questions, q.targets):
                parts[text] = parts.get(text, True) and bool(seen & set(docs))
            counts.append(sum(parts.values()))
        found.setdefault(system, {})[seed] = counts
    return found


def found_shares(found: dict, k: int) -> dict:
    """Per system of `found` (`components_found`'s counts): the % of compounds with 0, 1, ..., k
    components fully found, averaged over the seeds."""
    return {
        system: [
            round(100 * float(np.mean([np.mean(np.array(c) == n) for c in by_seed.values()])), 2) for n in range(k + 1)
        ]
        for system, by_seed in found.items()
    }


def found_cell(found: dict, systems) -> str:
    """`found_shares` of `systems` as a table cell: "0 / ... / k" per system, the systems apart by ";"."""
    return "; ".join(" / ".join(f"{v:.2f}" for v in found.get(s, [])) for s in systems)


def interval_cell(difference: dict) -> str:
    """A difference and its 95% interval as a table cell: "+1.23 (+0.45 to +2.01)"."""
    return f"{difference['delta']:+.2f} ({difference['low']:+.2f} to {difference['high']:+.2f})"


def write_report(folder: Path, stem: str, result: dict, text: str) -> None:
    """STEM.json and STEM_table.md in `folder`, each written whole (`amer_lib.io`); the table printed."""
    write_json(folder / f"{stem}.json", result)
    write_text(folder / f"{stem}_table.md", text)
    print(text)


def array(entry: dict, system: str) -> np.ndarray:
    """`[seeds, questions]` in percent, the seeds in order (one row for the seed-free teacher)."""
    by_seed = entry["systems"][system]
    return 100 * np.array([by_seed[s]["mrecall"] for s in sorted(by_seed)], float)


def verdict(low: float, high: float, aim: float) -> str:
    return "met" if low >= aim else "missed" if high < aim else "undecided"


def against_decomposition(amer: np.ndarray, teacher: np.ndarray, clusters: list, resamples: int) -> dict:
    """AMER minus the teacher's decomposition (the untrained baseline: each component question searched
    by the off-the-shelf encoder, the lists merged round-robin), two-sided: `amer_vs_decomposition`
    with the compounds resampled, `amer_vs_decomposition_by_components` with their components."""
    found = {}
    for key, by in (("amer_vs_decomposition", None), ("amer_vs_decomposition_by_components", clusters)):
        c = compare(teacher, amer, n_resamples=resamples, clusters=by)
        found[key] = {"delta": c.delta, "low": c.low, "high": c.high, "p_two_sided": c.p}
    return found


def holm_over_rows(rows: list[dict], key: str, resamples: int, field: str = "p_two_sided", sides: int = 2) -> None:
    """Holm's correction over the rows' `key` comparisons, written into each as `p_holm` and `p_text`."""
    adjusted = holm(np.array([r[key][field] for r in rows]))
    for row, p in zip(rows, adjusted):
        row[key]["p_holm"] = float(p)
        row[key]["p_text"] = p_text(float(p), resamples, comparisons=len(rows), sides=sides)


def analyse(scores: dict, resamples: int = RESAMPLES) -> dict:
    """The decision rule's numbers per k, Holm over the ks present."""
    rows = []
    for k, entry in sorted(scores.items()):
        single, amer, teacher = (array(entry, s) for s in SYSTEMS)
        c = compare(single, amer, n_resamples=resamples)
        s = share(single, amer, teacher, n_resamples=resamples)
        clusters = [component_qids(qid) for qid in entry["qids"]]
        c_components = compare(single, amer, n_resamples=resamples, clusters=clusters)
        s_components = share(single, amer, teacher, n_resamples=resamples, clusters=clusters)
        row = {"k": int(k), "seeds": len(amer), "questions": amer.shape[1]}
        row["components"] = len({name for names in clusters for name in names})
        for name, values in zip(SYSTEMS, (single, amer, teacher)):
            row[name] = {
                "mean": float(values.mean()),
                "std": float(values.mean(1).std()),  # the population std over seeds, as figures/ gives it
            }
            row[name]["by_seed"] = [round(float(v), 2) for v in values.mean(1)]
        row["amer_vs_single"] = {"delta": c.delta, "low": c.low, "high": c.high, "p_one_sided": c.p_ahead}
        row["share"] = {"share": s.share, "low": s.low, "high": s.high}
        row["aim"] = AIMS[int(k)]
        row["reach"] = verdict(s.low, s.high, AIMS[int(k)])
        row["amer_vs_single_by_components"] = {
            "delta": c_components.delta,
            "low": c_components.low,
            "high": c_components.high,
            "p_one_sided": c_components.p_ahead,
        }
        row["share_by_components"] = {"share": s_components.share, "low": s_components.low, "high": s_components.high}
        row["reach_by_components"] = verdict(s_components.low, s_components.high, AIMS[int(k)])
        row.update(against_decomposition(amer, teacher, clusters, resamples))
        row["amer_best_steps"] = [
            entry["systems"]["amer"][seed]["best_step"] for seed in sorted(entry["systems"]["amer"])
        ]
        row["amer_vectors"] = entry["systems"]["amer"][sorted(entry["systems"]["amer"])[0]]["n_queries"]
        row["validation_by_step"] = {
            system: {
                str(step): round(100 * float(np.mean([dict(run["validation"])[step] for run in by_seed.values()])), 2)
                for step, _ in next(iter(by_seed.values()))["validation"]
            }
            for system, by_seed in entry["systems"].items()
            if system != "teacher_decomposition"
        }  # MRecall@100 on the validation compounds (no component trained on), mean over seeds
        row["validation_report"] = entry["validation_report"]
        row["vector_roles"] = entry.get("vector_roles")  # notebook 04's vector_role_table, mean over the seeds
        row["components_found"] = found_shares(entry["components_found"], int(k))
        rows.append(row)
    for key, replicates in (
        ("amer_vs_single", "replicates"),
        ("amer_vs_single_by_components", "replicates_by_components"),
    ):
        holm_over_rows(rows, key, resamples, field="p_one_sided", sides=1)
        for row in rows:
            row[replicates] = bool(row[key]["p_holm"] < 0.05)
    for key in DECOMPOSITION_KEYS:
        holm_over_rows(rows, key, resamples)
    return {"resamples": resamples, "correction": f"Holm over {len(rows)} k", "rows": rows}


def table(result: dict) -> str:
    lines = [
        "| k | seeds x questions | single-query | AMER with the term | teacher's decomposition | AMER - single (95%) | "
        "p (one-sided, Holm) | share of the teacher's lead (95%) | aim | reach |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        d, s = r["amer_vs_single"], r["share"]
        lines.append(
            f"| {r['k']} | {r['seeds']} x {r['questions']} | {r['single']['mean']:.2f} ± {r['single']['std']:.2f} | "
            f"{r['amer']['mean']:.2f} ± {r['amer']['std']:.2f} | {r['teacher_decomposition']['mean']:.2f} | "
            f"{interval_cell(d)} | {d['p_text']} | "
            f"{100 * s['share']:.0f}% ({100 * s['low']:.0f}-{100 * s['high']:.0f}%) | {100 * r['aim']:.0f}% | "
            f"{r['reach']} |"
        )
    lines += [
        "",
        "Reanalysis, the components resampled instead of the compounds (issue 79; seeds as above):",
        "",
        "| k | components | AMER - single (95%) | p (one-sided, Holm) | share of the teacher's lead (95%) | aim | "
        "reach |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        d, s = r["amer_vs_single_by_components"], r["share_by_components"]
        lines.append(
            f"| {r['k']} | {r['components']} | {interval_cell(d)} | {d['p_text']} | "
            f"{100 * s['share']:.0f}% ({100 * s['low']:.0f}-{100 * s['high']:.0f}%) | {100 * r['aim']:.0f}% | "
            f"{r['reach_by_components']} |"
        )
    lines += decomposition_lines(result["rows"])
    lines += [
        "",
        "| k | AMER's vectors | compounds with 0 / 1 / ... / k components fully found: single-query; AMER; teacher | "
        "each component a vector of its own | vectors repeating a component | validation compounds | AMER on "
        "validation by step (100 / 200 / 300 / 400) | AMER's kept step by seed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        found = found_cell(r["components_found"], SYSTEMS)
        roles = r["vector_roles"] or {}
        curve = " / ".join(f"{v:.2f}" for v in r["validation_by_step"]["amer"].values())
        lines.append(
            f"| {r['k']} | {r['amer_vectors']} | {found} | {roles.get('all_components_served', '')}% | "
            f"{roles.get('vectors_repeating_a_component', '')}% | {r['validation_report']['drawn']} | {curve} | "
            f"{', '.join(str(s) for s in r['amer_best_steps'])} |"
        )
    return "\n".join(lines) + "\n"


def decomposition_lines(rows: list[dict]) -> list[str]:
    """AMER against the untrained decomposition, k by k, with the compounds and with the components
    resampled (`against_decomposition`)."""
    lines = [
        "",
        "AMER against the teacher's decomposition, the untrained baseline (two-sided, Holm over the ks):",
        "",
        "| k | AMER - decomposition, compounds resampled (95%) | p | components resampled (95%) | p |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        by_compounds, by_components = (r[key] for key in DECOMPOSITION_KEYS)
        lines.append(
            f"| {r['k']} | {interval_cell(by_compounds)} | {by_compounds['p_text']} | "
            f"{interval_cell(by_components)} | {by_components['p_text']} |"
        )
    return lines


def evidence_of(
    result: dict,
    *,
    name: str,
    short: str,
    record: str,
    held_out: bool,
    same_supervision: bool,
    share_key: str = "share",
) -> Evidence:
    """The result's `Evidence` for the kept levers' claim: per k, AMER's share of the better
    decomposition's lead (`share_key` + `_by_components`) and AMER minus the teacher's decomposition,
    both with the components resampled, on the AMD EPYC the studies ran on."""
    rows = [r for r in result["rows"] if f"{share_key}_by_components" in r]
    return Evidence(
        claim="kept_levers",
        name=name,
        short=short,
        record=record,
        held_out=held_out,
        same_supervision=same_supervision,
        seeds=min(r["seeds"] for r in rows),
        interval="components",
        machine="2-core AMD EPYC",
        shares={r["k"]: Estimate.of(r[f"{share_key}_by_components"], "share") for r in rows},
        against_decomposition={r["k"]: Estimate.of(r["amer_vs_decomposition_by_components"], "delta") for r in rows},
        p_decomposition={r["k"]: r["amer_vs_decomposition_by_components"]["p_text"] for r in rows},
    )


EVIDENCE = ROOT / "studies" / "evidence"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collect", action="store_true", help="copy the frozen test runs' scores first")
    args = parser.parse_args()
    if args.collect:
        write_json(SCORES, collect())
    result = analyse(json.loads(SCORES.read_text()))
    write_report(HERE, "replication", result, table(result))
    evidence_of(
        result,
        name="FOLDOC, the recipe frozen before its data",
        short="FOLDOC",
        record="studies/foldoc/foldoc.md",
        held_out=True,
        same_supervision=False,
    ).write(EVIDENCE / "foldoc_replication.json")


if __name__ == "__main__":
    main()
