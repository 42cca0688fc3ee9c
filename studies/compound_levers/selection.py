"""Issue 60: the compound levers ranked again on the validation compounds, and the kept recipe's test
scores over seven seeds against the better of two decompositions.

The kept recipe (the component term as a ranking distance at weight 10, with fresh compounds) was
chosen comparing variants on the test compounds (`compound_levers.md`), and its seven-seed test
scores were committed (7a7df97) before this script was written (d8039d5): what it adds is the check,
made afterwards, that the validation split picks the same recipe, and the test scores with
intervals over seeds and questions (`selection.md` tells the order of events).

Every lever of `compound_levers.md` that ran on a GPU left its run files in the committed archives
`benchmarks/device/compound_levers_{h100,h200,h200_distilled,h200_fresh}_runs.tar.gz` (read here
without unpacking). Each run file holds the validation MRecall@100 of the checkpoint it kept (the
best validation loss; the validation compounds are made of components no training compound holds)
and the per-question test scores. This script

1. ranks every AMER variant by its validation MRecall@100 at k = 2 and 3 (the aim's k), on the seeds
   every variant has (seed 0), then the leaders on all the seeds they share: the test scores are not
   read by this ranking (they had been read before it, in `compound_levers.md`);
2. reads the test scores of the chosen recipe over all its seeds, against single-query, today's
   AMER, the trained decomposition oracle (the k = 1 single-query model on each component) and the
   teacher's decomposition (the off-the-shelf encoder that selected the benchmark, on each component,
   merged round-robin; seed-free, measured here on the CPU from the prepared benchmark);
3. compares with `amer_lib.report.significance`: a paired bootstrap that resamples seeds and then
   questions, two-sided p corrected by Holm across the table's comparisons (a p below what the
   resamples resolve printed as at most `significance.p_floor`), AMER's share of the better
   ceiling's lead with its seed-and-question interval.

From the repository root, after notebook 03 has prepared the compound benchmark
(params/03_real_data_prep/compound.yaml):

    .venv/bin/python studies/compound_levers/selection.py   # selection.json, selection_table.md beside this file

`--single-term-results` adds the scores of single-query trained with the same term (the variant
`components_rank_10+fresh+single` of `compound_levers.py`, single-query alone) from its results folder.
`--table-only` prints selection_table.md again from selection.json, reading no run file.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import tarfile
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ARCHIVES = {  # the machine each archive's runs were made on
    "compound_levers_h100_runs.tar.gz": "H100",
    "compound_levers_h200_runs.tar.gz": "H200",
    "compound_levers_h200_distilled_runs.tar.gz": "H200",
    "compound_levers_h200_fresh_runs.tar.gz": "H200",
}
RUN_FILE = re.compile(
    r"compound_levers_gpu/(?P<variant>[^/]+)/results/(?P<dataset>compound_k\d)_(?P<system>\w+?)_seed(?P<seed>\d+)\.json$"
)
DATASETS = ("compound_k1", "compound_k2", "compound_k3")
AIM_DATASETS = ("compound_k2", "compound_k3")  # where the aim (75% / 50% of the lead) is set
AIM = {"compound_k2": 0.75, "compound_k3": 0.50}
NOTEBOOK = ROOT / "notebooks" / "04_real_data.ipynb"
RECIPE = ROOT / "params" / "04_real_data" / "compound.yaml"
TEACHER_FOLDER = ROOT / "results" / "studies" / "selection_teacher"  # ignored by git, as every run's files
RESAMPLES = 10_000  # the bootstrap's resamples; the committed selection.json's p-values reproduce with it
ORACLE, TEACHER = "decomposition_oracle", "teacher_decomposition"
FAIR_SCORES = ROOT / "studies" / "fair_control" / "fair_control_scores.json"  # the teacher's per-question scores


def read_runs(folder: Path = ROOT / "benchmarks" / "device") -> dict:
    """Every run file of the archives: {(variant, dataset, system): {seed: run}}. A run present in two
    archives (today's recipe, made again on the H200 question for question) is kept once, and must
    agree."""
    runs: dict = defaultdict(dict)
    for archive, machine in ARCHIVES.items():
        with tarfile.open(folder / archive) as tar:
            for member in tar.getmembers():
                match = RUN_FILE.search(member.name)
                if not match:
                    continue
                run = json.load(io.TextIOWrapper(tar.extractfile(member)))
                run["machine"] = machine
                key = (match["variant"], match["dataset"], match["system"])
                seed = int(match["seed"])
                if seed in runs[key] and runs[key][seed]["mrecall"] != run["mrecall"]:
                    raise ValueError(f"{key} seed {seed} differs between two archives")
                runs[key].setdefault(seed, run)
    return dict(runs)


def kept_validation(run: dict) -> float:
    """The validation MRecall@100 of the checkpoint a run kept (its best validation loss)."""
    return next(100 * h["val_mrecall"] for h in run["history"] if h["step"] == run["best_step"])


def validation_table(runs: dict) -> list[dict]:
    """Per AMER variant: its validation MRecall@100 per dataset and seed, and means."""
    variants = sorted({v for v, d, s in runs if s == "amer"})
    rows = []
    for variant in variants:
        row = {
            "variant": variant,
            "machine": sorted(
                {r["machine"] for (v, _, s), by in runs.items() if v == variant and s == "amer" for r in by.values()}
            ),
        }
        for dataset in DATASETS:
            by = runs.get((variant, dataset, "amer"), {})
            row[dataset] = {seed: round(kept_validation(run), 2) for seed, run in sorted(by.items())}
        rows.append(row)
    return rows


def aim_mean(row: dict, seeds: list[int]) -> float:
    """The mean validation MRecall@100 over k = 2 and 3 on `seeds`."""
    return float(np.mean([np.mean([row[d][s] for s in seeds]) for d in AIM_DATASETS]))


def shared_seeds(rows: list[dict]) -> list[int]:
    """The seeds every row has at k = 2 and 3."""
    return sorted(set.intersection(*[set(r[d]) for r in rows for d in AIM_DATASETS]))


def select(rows: list[dict], finalists: int = 3) -> dict:
    """Stage 1: every variant on the seeds all share at k = 2 and 3; stage 2: the `finalists` best
    of stage 1 that have three seeds or more, on all the seeds they share. The choice: stage 2's best."""
    first_seeds = shared_seeds(rows)
    stage1 = sorted(
        ({"variant": r["variant"], "validation": aim_mean(r, first_seeds)} for r in rows),
        key=lambda x: -x["validation"],
    )
    by_name = {r["variant"]: r for r in rows}
    deep = [x["variant"] for x in stage1 if len(shared_seeds([by_name[x["variant"]]])) >= 3][:finalists]
    second_seeds = shared_seeds([by_name[v] for v in deep])
    stage2 = sorted(
        ({"variant": v, "validation": aim_mean(by_name[v], second_seeds)} for v in deep), key=lambda x: -x["validation"]
    )
    return {
        "stage1_seeds": first_seeds,
        "stage1": stage1,
        "stage2_seeds": second_seeds,
        "stage2": stage2,
        "chosen": stage2[0]["variant"],
    }


def scores(runs: dict, variant: str, dataset: str, system: str, seeds: list[int]) -> tuple[np.ndarray, list[str]]:
    """Per-question test MRecall@100 `[seeds, questions]` (percent) and the questions' ids."""
    by = runs[(variant, dataset, system)]
    missing = [s for s in seeds if s not in by]
    if missing:
        raise ValueError(f"{variant} {dataset} {system}: no run for seeds {missing}")
    qids = by[seeds[0]]["qids"]
    if any(by[s]["qids"] != qids for s in seeds):
        raise ValueError(f"{variant} {dataset} {system}: the seeds' runs hold other questions")
    return 100 * np.array([by[s]["mrecall"] for s in seeds], float), qids


def teacher_scores(prepared: Path, dataset: str, qids: list[str]) -> np.ndarray:
    """The teacher's decomposition `[1, questions]` (percent) on the prepared benchmark's test
    compounds, in the order of `qids` (notebook 04's `beyond.decomposition.teacher_decomposition`: the
    off-the-shelf encoder on each component question, merged round-robin; its run files under
    `TEACHER_FOLDER`)."""
    if prepared.is_dir():
        from amer_lib.beyond.decomposition import teacher_decomposition
        from amer_lib.params import from_files

        folders = {name: str(TEACHER_FOLDER / name) for name in ("results", "runs", "figures")}
        params = from_files(NOTEBOOK, RECIPE).replace(
            prepared_dir=str(prepared.resolve()), **{f"{k}_dir": v for k, v in folders.items()}
        )
        result = teacher_decomposition(params, dataset)
        by_qid = dict(zip(result["qids"], result["mrecall"]))
    else:  # the same seed-free teacher on the same prepared compounds, as the fair control kept its scores
        entry = json.loads(FAIR_SCORES.read_text())[dataset.removeprefix("compound_k")]
        by_qid = dict(zip(entry["qids"], entry["systems"][TEACHER]["none"]["mrecall"]))
        print(f"{dataset}: the teacher's scores from {FAIR_SCORES.relative_to(ROOT)} ({prepared} is not prepared)")
    missing = [q for q in qids if q not in by_qid]
    if missing:
        raise ValueError(
            f"{dataset}: {len(missing)} test questions of the GPU runs are not in {prepared} (e.g. {missing[:2]})"
        )
    return 100 * np.array([[by_qid[q] for q in qids]], float)


def headline(runs: dict, chosen: str, prepared: Path, resamples: int) -> dict:
    """The chosen recipe's test scores against each reference, corrected across the table."""
    from amer_lib.beyond.compound import component_qids
    from amer_lib.report.significance import compare, holm, share

    seeds = sorted(runs[(chosen, "compound_k2", "amer")])
    rows, comparisons, by_components = [], [], []
    for dataset in DATASETS:
        amer, qids = scores(runs, chosen, dataset, "amer", seeds)
        refs = {
            "single": scores(runs, "today", dataset, "single", seeds)[0],
            "today_amer": scores(runs, "today", dataset, "amer", seeds)[0],
        }
        if dataset != "compound_k1":
            refs[ORACLE] = scores(runs, "today", dataset, ORACLE, seeds)[0]
            refs[TEACHER] = teacher_scores(prepared, dataset, qids)
        row = {"dataset": dataset, "seeds": seeds, "questions": len(qids)}
        for name, values in {"amer": amer, **refs}.items():
            row[name] = {
                "mean": float(values.mean()),
                "std": float(values.mean(1).std()),  # the population std over seeds, as figures/ gives it
                "by_seed": [round(float(v), 2) for v in values.mean(1)],
            }
        clusters = [component_qids(qid) for qid in qids]
        for name in refs:
            c = compare(refs[name], amer, n_resamples=resamples)
            comparisons.append((dataset, name, c))
            row[f"against_{name}"] = {
                "delta": c.delta,
                "low": c.low,
                "high": c.high,
                "p_ahead": c.p_ahead,
                "p_behind": c.p_behind,
                "p": c.p,
            }
            c = compare(refs[name], amer, n_resamples=resamples, clusters=clusters)
            by_components.append((dataset, name, c))
            row[f"against_{name}_by_components"] = {"delta": c.delta, "low": c.low, "high": c.high, "p": c.p}
        if dataset != "compound_k1":
            better = max((ORACLE, TEACHER), key=lambda name: refs[name].mean())
            row["better_ceiling"] = better
            for name in (ORACLE, TEACHER):
                for suffix, by in (("", None), ("_by_components", clusters)):
                    s = share(refs["single"], amer, refs[name], n_resamples=resamples, clusters=by)
                    row[f"share_{name}{suffix}"] = {"share": s.share, "low": s.low, "high": s.high}
            row["aim"] = AIM[dataset]
        rows.append(row)
    for listed, suffix in ((comparisons, ""), (by_components, "_by_components")):
        adjusted = holm(np.array([c.p for _, _, c in listed]))
        for (dataset, name, _), p in zip(listed, adjusted):
            next(r for r in rows if r["dataset"] == dataset)[f"against_{name}{suffix}"]["p_holm"] = float(p)
    return {
        "chosen": chosen,
        "comparisons": len(comparisons),
        "correction": "Holm across the table's comparisons",
        "resamples": resamples,
        "rows": rows,
    }


NAMES = {
    "amer": "AMER, chosen recipe",
    "single": "single-query (no term)",
    "today_amer": "AMER, today's recipe",
    ORACLE: "decomposition, trained (oracle)",
    TEACHER: "decomposition, off-the-shelf teacher",
}


def _row(*cells) -> str:
    return "| " + " | ".join(map(str, cells)) + " |"


def _share(s: dict) -> str:
    return f"{100 * s['share']:.0f}% ({100 * s['low']:.0f}-{100 * s['high']:.0f}%)"


def _system(r: dict, name: str) -> list[str]:
    values = r[name]
    return [f"{values['mean']:.2f}±{values['std']:.2f}", " / ".join(f"{v:.2f}" for v in values["by_seed"])]


def table(result: dict, resamples: int) -> str:
    """The study's tables: the validation choice, then the test headline, its p-values from
    `resamples` resamples (below the floor they resolve: "≤ floor", `significance.p_text`)."""
    from amer_lib.report.significance import p_text

    selection, head = result["selection"], result["headline"]
    rows = {r["variant"]: r for r in result["validation"]}
    out = [f"Stage 1: validation MRecall@100 of the kept checkpoint, seeds {selection['stage1_seeds']}\n"]
    out += [_row("variant", "machine", "k = 2", "k = 3", "mean"), _row(*["---"] * 5)]
    for item in selection["stage1"]:
        r = rows[item["variant"]]
        cells = [f"{np.mean([r[d][s] for s in selection['stage1_seeds']]):.2f}" for d in AIM_DATASETS]
        out.append(_row(item["variant"], ", ".join(r["machine"]), *cells, f"{item['validation']:.2f}"))
    stage2 = "; ".join(f"{x['variant']} {x['validation']:.2f}" for x in selection["stage2"])
    out.append(f"\nStage 2, seeds {selection['stage2_seeds']}: {stage2}. Chosen: **{selection['chosen']}**.\n")
    m = head["comparisons"]
    out.append(
        f"Test, for {head['chosen']} (its scores read before this ranking: `selection.md`): "
        f"{head['rows'][0]['questions']} questions a k; ± the population standard deviation over seeds "
        "(ddof = 0, as in `figures/`); AMER minus "
        f"each reference with its 95% interval and two-sided p, seeds and questions resampled ({resamples:,} "
        f"resamples: below what they resolve p reads {p_text(0.0, resamples)}, and {p_text(0.0, resamples, m)} "
        f"after the correction); p corrected by {head['correction']} ({m} comparisons).\n"
    )
    out += [_row("k", "system", "MRecall@100", "per seed", "AMER minus it", "p", "p, Holm"), _row(*["---"] * 7)]
    for r in head["rows"]:
        for name, label in NAMES.items():
            if name not in r:
                continue
            if name == "amer":
                out.append(_row(r["dataset"][-1], label, *_system(r, name), "", "", ""))
                continue
            c = r[f"against_{name}"]
            versus = f"{c['delta']:+.2f} ({c['low']:+.2f} to {c['high']:+.2f})"
            p, holm = p_text(c["p"], resamples), p_text(c["p_holm"], resamples, m)
            out.append(_row(r["dataset"][-1], label, *_system(r, name), versus, p, holm))
    out += ["", _row("k", "better ceiling", "share of its lead", "share of the trained oracle's lead", "aim")]
    out.append(_row(*["---"] * 5))
    for r in head["rows"]:
        if "better_ceiling" in r:
            better, oracle = r[f"share_{r['better_ceiling']}"], r[f"share_{ORACLE}"]
            out.append(
                _row(
                    r["dataset"][-1],
                    NAMES[r["better_ceiling"]],
                    _share(better),
                    _share(oracle),
                    f"{100 * r['aim']:.0f}%",
                )
            )
    if "share_teacher_decomposition_by_components" in head["rows"][1]:
        out += [
            "",
            "With the components resampled instead of the compounds (issue 79; seeds as above; p two-sided, Holm "
            f"over the {m} comparisons):",
            "",
            _row("k", "the better ceiling's share", "AMER minus the teacher's decomposition", "p, Holm"),
            _row(*["---"] * 4),
        ]
        for r in head["rows"]:
            if "better_ceiling" in r:
                c = r[f"against_{TEACHER}_by_components"]
                versus = f"{c['delta']:+.2f} ({c['low']:+.2f} to {c['high']:+.2f})"
                share = _share(r[f"share_{r['better_ceiling']}_by_components"])
                out.append(_row(r["dataset"][-1], share, versus, p_text(c["p_holm"], resamples, m)))
    return "\n".join(out) + "\n"


def single_with_term(results: Path) -> list[dict]:
    """The seed-0 pilot of single-query given the same term (the variant `components_rank_10+fresh+single`,
    single-query alone), from its run files in `results`: MRecall@100 per k with its training seconds."""
    rows = []
    for path in sorted(results.glob("compound_k*_single_seed*.json")):
        run = json.loads(path.read_text())
        if not run["params"]["component_single"] or run["params"]["component_distance"] != "ranking":
            raise ValueError(f"{path} is not a run of single-query with the ranking term")
        rows.append(
            {"dataset": run["dataset"], "seed": run["seed"], "mrecall": round(100 * float(np.mean(run["mrecall"])), 2)}
        )
        rows[-1] |= {"train_seconds": round(run["train_seconds"]), "git_commit": run["git_commit"]}
    if not rows:
        raise FileNotFoundError(f"no single-query run files in {results}")
    return rows


def write_atomic(path: Path, text: str) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def evidence_of(result: dict, resamples: int = RESAMPLES):
    """The headline's `Evidence` for the kept levers' claim: per k with an aim, AMER's share of the
    better decomposition's lead and AMER minus the teacher's decomposition, the components resampled,
    Holm over the table's comparisons."""
    from amer_lib.report.evidence import Estimate, Evidence
    from amer_lib.report.significance import p_text

    head = result["headline"]
    rows = [r for r in head["rows"] if r["dataset"] in AIM_DATASETS]
    k = {r["dataset"]: int(r["dataset"].removeprefix("compound_k")) for r in rows}
    return Evidence(
        claim="kept_levers",
        name="WordNet, the kept recipe's seven seeds",
        short="WordNet, seven seeds",
        record="studies/compound_levers/selection.md",
        held_out=False,
        same_supervision=False,
        seeds=min(len(r["seeds"]) for r in rows),
        interval="components",
        machine="one H200, the offline models (MiniLM and SmolLM2-135M)",
        shares={k[r["dataset"]]: Estimate.of(r[f"share_{r['better_ceiling']}_by_components"], "share") for r in rows},
        against_decomposition={
            k[r["dataset"]]: Estimate.of(r[f"against_{TEACHER}_by_components"], "delta") for r in rows
        },
        p_decomposition={
            k[r["dataset"]]: p_text(r[f"against_{TEACHER}_by_components"]["p_holm"], resamples, head["comparisons"])
            for r in rows
        },
    )


EVIDENCE = ROOT / "studies" / "evidence" / "selection.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--prepared",
        type=Path,
        default=ROOT / "results" / "prepared" / "compound",
        help="the prepared compound benchmark (notebook 03)",
    )
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--out", type=Path, default=HERE, help="where selection.json and selection_table.md go")
    parser.add_argument(
        "--single-term-results",
        type=Path,
        help="the results folder of the single-query-with-the-term pilot, to record its scores",
    )
    parser.add_argument(
        "--table-only", action="store_true", help="print selection_table.md again from selection.json, no run file read"
    )
    args = parser.parse_args()
    if args.table_only:
        result = json.loads((args.out / "selection.json").read_text())
        for row in result["validation"]:  # JSON keeps the seeds as strings
            row |= {d: {int(seed): v for seed, v in row[d].items()} for d in DATASETS}
        write_atomic(args.out / "selection_table.md", table(result, args.resamples))
        evidence_of(result, args.resamples).write(EVIDENCE)
        print(table(result, args.resamples))
        return
    runs = read_runs()
    validation = validation_table(runs)
    selection = select(validation)
    result = {
        "validation": validation,
        "selection": selection,
        "headline": headline(runs, selection["chosen"], args.prepared, args.resamples),
    }
    if args.single_term_results:
        result["single_with_term"] = single_with_term(args.single_term_results)
    write_atomic(args.out / "selection.json", json.dumps(result, indent=1, default=str) + "\n")
    write_atomic(args.out / "selection_table.md", table(result, args.resamples))
    evidence_of(result, args.resamples).write(EVIDENCE)
    print(table(result, args.resamples))


if __name__ == "__main__":
    main()
