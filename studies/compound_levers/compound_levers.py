"""Issue 43: levers that might bring AMER toward the decomposition oracle on the compound benchmark.

Each variant is notebook 04's compound recipe (params/04_real_data/compound.yaml, MiniLM, 400
steps) with some parameters changed; it trains in its own results and runs folders, so variants
never read each other's runs, and an interrupted variant resumes. Against a baseline variant on the
same seeds (today's recipe, or lr 1e-4 for a lever tried on top of that rate), per dataset:
MRecall@100 mean and std over seeds, the paired bootstrap over test questions (seed-averaged
per-question scores, one-sided: is the variant ahead?), AMER's share of the oracle's lead over
single-query, and the training seconds per run.

A lever that changes only AMER's loss (`AMER_ONLY`) trains only AMER and reads single-query and
the oracle from the variant without it (`reference`); any other lever trains single-query too, so
its oracle (the k = 1 single-query model on each component) moves with it. A variant's changes are
fields of notebook 04's config (`RealConfig`), set by name; the levers measured to lose here left
the notebook's parameters cell, and a notebook run sets the same fields through its `study_levers`
(`-p study_levers '{spread_weight: 1.0}'`: the same run key, so pointed at a variant's folders the
notebook reads its runs back).

From the repository root, after notebook 03 has prepared the compound benchmark
(`make figures-compound`, or notebook 03 with params/03_real_data_prep/compound.yaml):

    .venv/bin/python studies/compound_levers/compound_levers.py --variants today lr_1e-4 --seeds 0
    .venv/bin/python studies/compound_levers/compound_levers.py --report   # compound_levers.json, _table.md, here

`--folder` and `--name` keep another study apart (its runs, its JSON and table), such as the one
`benchmarks/device_compound_levers.py` runs on a lent GPU; `--set KEY=YAML` changes a parameter of
every variant (workers, device), which the run key then records; `--quartiles` and `--curves` write
where a variant gains or loses by target similarity, and its learning curves (`NAME_curves.json`);
`--vectors-alone` scores AMER's first n vectors from each run's weights (`NAME_vectors.json`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "04_real_data.ipynb"
RECIPE = ROOT / "params" / "04_real_data" / "compound.yaml"
FOLDER = ROOT / "results" / "studies" / "compound_levers"  # ignored by git, as every run's files
HERE = Path(__file__).resolve().parent  # the study's folder: its reports

# the component term as a ranking distillation at weight 10, the lever first kept
TERM = {"component_weight": 10.0, "component_distance": "ranking"}
# the levers params/*/compound_distilled.yaml keep: the term and a fresh compound for every example
KEPT = {**TERM, "train_compounds": 12_800}
# name: the parameters changed from today's recipe (RealConfig's fields; RealConfig.study_lever_names() are
# those notebook 04 sets through its `study_levers`)
VARIANTS = {
    "today": {},
    "lr_1e-4": {"lr": 1e-4},
    "lr_3e-5": {"lr": 3e-5},
    "hard_0.5": {"hard_negative_share": 0.5},
    "spread_1": {"spread_weight": 1.0},
    "spread_4": {"spread_weight": 4.0},
    "fresh": {"train_compounds": 12_800},  # 400 steps x 32: no training compound seen twice
    "corpus": {"train_components": "corpus"},  # every training component in the corpus, not only the findable
    "single_step": {"single_target_step": True},  # the authors' extra step: vector 1 also trained as single-query
    "first_single": {"first_vector": "single"},  # vector 1 trained as single-query only, the others matched
    "first_single+spread_1": {"first_vector": "single", "spread_weight": 1.0},  # and the later vectors kept apart
    # the vectors pulled onto the off-the-shelf encoder's vectors of the components (three weights)
    "components_1": {"component_weight": 1.0},
    "components_10": {"component_weight": 10.0},
    "components_100": {"component_weight": 100.0},
    # the same term for single-query too (its one vector pulled onto its nearest component's)
    "components_10+single": {"component_weight": 10.0, "component_single": True},
    # the term with 2.5 times the steps (both systems), for vectors that come closer to the components
    "components_10+steps_1000": {"component_weight": 10.0, "steps": 1000},
    # the term as a ranking distillation (the query's softmax over the batch's candidates held to the component's)
    "components_rank_1": {"component_weight": 1.0, "component_distance": "ranking"},
    "components_rank_3": {"component_weight": 3.0, "component_distance": "ranking"},
    "components_rank_10": TERM,
    # the term beside the earlier levers: vectors kept apart, a fresh compound every example (kept)
    "components_rank_10+spread_1": {**TERM, "spread_weight": 1.0},
    "components_rank_10+fresh": KEPT,
    # the kept recipe with single-query given the term too (its one vector held to the mean of its components'
    # rankings): the same supervision for both systems (issue 60; single-query alone: --set 'systems=[single]')
    "components_rank_10+fresh+single": {**KEPT, "component_single": True},
    # the same runs under one name, tested against today's recipe (the figures' compound_distilled runs)
    "kept": KEPT,
    # and with half as many steps again (both systems): validation still rises steeply at step 400
    "components_rank_10+steps_600": {**TERM, "steps": 600},
    # and at the lower rate (both systems): the term's validation climbs as its rate decays
    "components_rank_10+lr_1e-4": {**TERM, "lr": 1e-4},
    # each lever at the rate carried forward (lr 1e-4), then all of them together
    "lr_1e-4+fresh": {"lr": 1e-4, "train_compounds": 12_800},
    "lr_1e-4+hard_0.5": {"lr": 1e-4, "hard_negative_share": 0.5},
    "lr_1e-4+spread_1": {"lr": 1e-4, "spread_weight": 1.0},
    "lr_1e-4+all": {"lr": 1e-4, "train_compounds": 12_800, "hard_negative_share": 0.5, "spread_weight": 1.0},
}
# levers of AMER's training alone: single-query trains as without them (amer_lib.runs.configs.AMER_LOSS_LEVERS
# but component_single, which gives single-query the component term too)
AMER_ONLY = {"spread_weight", "single_target_step", "first_vector", "component_weight", "component_distance"}
DATASETS = ("compound_k1", "compound_k2", "compound_k3")


def reference(variant: str) -> str:
    """The variant whose single-query and oracle runs this one reports: itself, or for a lever of
    AMER's loss alone, the variant without that lever (`component_single`: the component term
    given to single-query as well, so both systems train)."""
    others = {k: v for k, v in VARIANTS[variant].items() if k not in AMER_ONLY}
    return next((name for name, changes in VARIANTS.items() if changes == others), variant)


def amer_only(variant: str) -> bool:
    """Whether a variant trains AMER alone (its single-query and oracle are another variant's)."""
    return reference(variant) != variant


# the variants other levers are tried on top of, each tested against the variant alone
STACKED_ON = ("lr_1e-4", "components_rank_10")


def baseline(variant: str) -> str:
    """The variant whose AMER this one is tested against: lr 1e-4 for a lever tried at that rate,
    the component term for one tried beside it, otherwise today's recipe."""
    head, stacked, _ = variant.partition("+")
    return head if stacked and head in STACKED_ON else "today"


def params_of(variant: str, seeds: list[int], datasets: list[str], folder: Path = FOLDER, overrides=None):
    """Notebook 04's config of a variant, its folders under `folder` (absolute paths)."""
    from amer_lib.params import from_files

    changes = VARIANTS[variant]
    overrides = dict(overrides or {})
    base = from_files(NOTEBOOK, RECIPE)
    prepared = overrides.pop("prepared_dir", base.prepared_dir)  # another clone's, to read its runs
    systems = overrides.pop("systems", ["amer"] if amer_only(variant) else ["single", "amer"])
    folder = folder / variant
    return base.replace(
        **overrides,
        **changes,
        seeds=seeds,
        datasets=datasets,
        systems=systems,
        prepared_dir=str((NOTEBOOK.parent / prepared).resolve()),
        results_dir=str(folder / "results"),
        runs_dir=str(folder / "runs"),
        figures_dir=str(folder / "figures"),
    )


def train(variant: str, seeds: list[int], datasets: list[str], folder: Path = FOLDER, overrides=None) -> list[dict]:
    """The variant's runs (made, or read back when made before)."""
    from amer_lib.experiments.real_data import run_all

    started = time.time()
    results = run_all(params_of(variant, seeds, datasets, folder, overrides))
    print(f"{variant}: {len(results)} runs in {time.time() - started:.0f} s", flush=True)
    return results


def made_runs(folder: Path = FOLDER) -> dict[str, list[dict]]:
    """Every finished run under `folder`, by variant (read once; a variant without runs is left out)."""
    runs = {}
    for variant in VARIANTS:
        results = folder / variant / "results"
        if results.is_dir() and (found := sorted(results.glob("compound_k*_seed*.json"))):
            runs[variant] = [json.loads(path.read_text()) for path in found]
    return runs


def compare(variant: str, made: dict[str, list[dict]], only=None, n_resamples: int = 10_000) -> list[dict]:
    """Per dataset: the variant's AMER against its baseline's (paired bootstrap on the seeds both
    have, within `only` if given), with single-query and the oracle of its reference variant's
    training; `made` is `made_runs`."""
    from amer_lib.beyond.decomposition import ORACLE
    from amer_lib.report.significance import paired_bootstrap, share_interval

    mine, against, others = (made.get(name, []) for name in (variant, baseline(variant), reference(variant)))
    rows = []
    for dataset in DATASETS:
        runs = {s: _by_seed(mine if s == "amer" else others, dataset, s) for s in ("amer", "single", ORACLE)}
        base = _by_seed(against, dataset, "amer")
        seeds = [s for s in sorted(set(runs["amer"]) & set(base)) if only is None or s in only]
        if not seeds:
            continue
        score = lambda by, seed: np.asarray(by[seed]["mrecall"], float)  # noqa: E731
        row = {"variant": variant, "dataset": dataset, "seeds": seeds, "against": baseline(variant)}
        seed_means = lambda by: [float(100 * score(by, s).mean()) for s in seeds]  # noqa: E731
        by_seed = {system: seed_means(by) for system, by in runs.items() if all(s in by for s in seeds)}
        for system, values in by_seed.items():
            row[f"{system}_mean"], row[f"{system}_std"] = float(np.mean(values)), float(np.std(values))
        per_question = lambda by: np.mean([score(by, s) for s in seeds], 0)  # noqa: E731  (over the seeds)
        amer = per_question(runs["amer"])
        test = paired_bootstrap(per_question(base), amer, n_resamples)
        row["amer_by_seed"], row["against_by_seed"] = by_seed["amer"], seed_means(base)
        row["against_amer_mean"] = float(np.mean(row["against_by_seed"]))
        row["p_ahead"], row["p_behind"], row["resamples"] = test["p_value"], test["p_value_behind"], n_resamples
        if all(s in runs["single"] for s in seeds):  # the k = 1 bar: AMER no worse than single-query
            single = per_question(runs["single"])
            row["p_behind_single"] = paired_bootstrap(single, amer, n_resamples)["p_value_behind"]
        lead = row.get(f"{ORACLE}_mean", 0.0) - row.get("single_mean", 0.0)
        if f"{ORACLE}_mean" in row and lead > 0:  # at k = 1 the oracle is single-query: no lead, no share
            row["oracle_share"] = (row["amer_mean"] - row["single_mean"]) / lead
            interval = share_interval(single, amer, per_question(runs[ORACLE]), n_resamples)
            row["oracle_share_low"], row["oracle_share_high"] = interval
        row["train_seconds_per_run"] = float(np.mean([runs["amer"][s]["train_seconds"] for s in seeds]))
        rows.append(row)
    return rows


def _by_seed(results: list[dict], dataset: str, system: str) -> dict[int, dict]:
    return {r["seed"]: r for r in results if r["dataset"] == dataset and r["system"] == system}


def with_oracle(variant: str, seeds: list[int], folder: Path = FOLDER, overrides=None) -> None:
    """The decomposition oracle's runs of a variant that trains single-query (its k = 1 model)."""
    from amer_lib.beyond.decomposition import decomposition_oracle

    params = params_of(variant, seeds, list(DATASETS), folder, overrides)
    for dataset in DATASETS[1:]:
        for seed in seeds:
            decomposition_oracle(params, dataset, seed)


def report(made: dict[str, list[dict]], name: str = "compound_levers", only=None) -> None:
    """NAME.json and NAME_table.md in the study's folder from the runs `made` (`made_runs`; the seeds in
    `only`, if given)."""
    rows = [row for variant in made for row in compare(variant, made, only)]
    (HERE / f"{name}.json").write_text(json.dumps(rows, indent=1) + "\n")
    (HERE / f"{name}_table.md").write_text(table(rows))
    print(table(rows))


# the reports whose NAME.json holds `compare`'s rows (the others: quartiles, curves, vectors)
def reports() -> list[str]:
    """The stems of the study's committed reports, each NAME.json beside its NAME_table.md."""
    return sorted(p.stem.removesuffix("_table") for p in HERE.glob("compound_levers*_table.md"))


def table(rows: list[dict]) -> str:
    """A report's table from its rows: the one-sided p's, uncorrected, at the bootstrap's resolution
    (the committed rows made theirs with 10,000 resamples: "≤ 0.0001", never 0.0000)."""
    from amer_lib.report.significance import p_text

    interval = " (95% interval over questions)" if any("oracle_share_low" in r for r in rows) else ""
    lines = [
        "| variant | k | seeds | single-query | AMER | oracle | against | its AMER | p ahead | p behind "
        f"| p behind single-query | oracle share{interval} | train s/run |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cell = lambda row, name: f"{row[name + '_mean']:.2f}±{row[name + '_std']:.2f}" if name + "_mean" in row else "-"  # noqa: E731
    for r in rows:
        share = f"{100 * r['oracle_share']:.0f}%" if "oracle_share" in r else "-"
        if "oracle_share_low" in r:
            share += f" ({100 * r['oracle_share_low']:.0f}-{100 * r['oracle_share_high']:.0f}%)"
        p = lambda value: p_text(value, r.get("resamples", 10_000), sides=1)  # noqa: E731
        behind_single = p(r["p_behind_single"]) if "p_behind_single" in r else "-"
        lines.append(
            f"| {r['variant']} | {r['dataset'][-1]} | {','.join(map(str, r['seeds']))} | {cell(r, 'single')} | "
            f"{cell(r, 'amer')} | {cell(r, 'decomposition_oracle')} | {r['against']} | {r['against_amer_mean']:.2f} | "
            f"{p(r['p_ahead'])} | {p(r['p_behind'])} | {behind_single} | {share} | {r['train_seconds_per_run']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def by_target_similarity(variant: str, made: dict[str, list[dict]]) -> list[dict]:
    """Where a variant's AMER gains or loses against its baseline's: per dataset (k >= 2) and
    quartile of the test questions' target similarity (the mean pairwise cosine of their answers'
    documents, as the run files hold it), MRecall@100 averaged over the seeds both have; `made`
    is `made_runs`."""
    rows = []
    for dataset in DATASETS[1:]:
        mine = _by_seed(made.get(variant, []), dataset, "amer")
        base = _by_seed(made.get(baseline(variant), []), dataset, "amer")
        seeds = sorted(set(mine) & set(base))
        if not seeds:
            continue
        similarity = np.asarray(base[seeds[0]]["target_similarity"], float)
        edges = np.quantile(similarity, [0.25, 0.5, 0.75])
        quartile = np.digitize(similarity, edges)
        scores = {name: np.mean([by[s]["mrecall"] for s in seeds], 0) for name, by in (("amer", mine), ("base", base))}
        for number in range(4):
            chosen = quartile == number
            row = {"variant": variant, "against": baseline(variant), "dataset": dataset, "seeds": seeds}
            row |= {"quartile": number + 1, "questions": int(chosen.sum())}
            row |= {f"{name}_mean": float(100 * values[chosen].mean()) for name, values in scores.items()}
            rows.append(row)
    return rows


def learning_curves(variant: str, made: dict[str, list[dict]], only=None) -> list[dict]:
    """A variant's training loss and validation MRecall@100 at each evaluation, per dataset and
    system, averaged over its seeds (within `only` if given; the run files' `history`); `made` is
    `made_runs`."""
    rows = []
    for dataset in DATASETS:
        for system in ("single", "amer"):
            by = _by_seed(made.get(variant, []), dataset, system)
            by = {s: run for s, run in by.items() if only is None or s in only}
            if not by:
                continue
            histories = [by[s]["history"] for s in sorted(by)]
            row = {"variant": variant, "dataset": dataset, "system": system, "seeds": sorted(by)}
            row["steps"] = [h["step"] for h in histories[0]]
            for key in ("train_loss", "val_mrecall"):
                row[key] = [float(np.mean([h[i][key] for h in histories])) for i in range(len(row["steps"]))]
            rows.append(row)
    return rows


def vectors_alone(
    variant: str, seeds: list[int], dataset: str, max_n: int = 0, folder: Path = FOLDER, overrides=None
) -> list[dict]:
    """Per seed: the test MRecall@100 of the variant's AMER with its first n vectors (round-robin,
    n = 1 .. `max_n`, or the recipe's n), generated by the run's kept weights, whether the recipe's
    n reproduces the run's stored score, and how close each later vector comes to an earlier one.
    Tells a weak first vector from a merge that dilutes it, and later vectors that repeat."""
    from amer_lib.beyond import compound
    from amer_lib.core.device import resolve_device
    from amer_lib.core.index import ShardedFlatIndex
    from amer_lib.core.metrics import K
    from amer_lib.core.stopping import repeat_cosine
    from amer_lib.experiments.beyond import context_result, scores_per_n
    from amer_lib.runs.query_encoders import generated_vectors, text_prompts
    from amer_lib.runs.run_context import RunContext

    params = params_of(variant, seeds, [dataset], folder, overrides)
    context, device = RunContext.of(params), resolve_device(params.device)
    paper_n = context.n_queries(dataset, "amer")
    max_n = max_n or paper_n
    if max_n < paper_n:
        raise SystemExit(f"--max-n {max_n} is below {dataset}'s n = {paper_n}, which the check against the run needs")
    questions = context.benchmark.questions(dataset, "test")
    gold, index = context.gold(questions), ShardedFlatIndex(context.shards)
    components = context.part_vectors(questions)[0].numpy() if compound.components_in(dataset) > 1 else None
    rows = []
    for seed in seeds:
        model = context.trained_encoder(params, dataset, "amer", seed, device)
        vectors = generated_vectors(model, text_prompts(model, context.text_data(questions).to(device)), max_n)
        scores, ids = index.search(vectors, params.search_depth)
        per_n = [row["per_input"][f"mrecall@{K}"] for row in scores_per_n(ids, scores, gold, {}, ks=(K,))]
        row = {"variant": variant, "dataset": dataset, "seed": seed}
        row |= {f"n{n}": float(100 * np.mean(values)) for n, values in enumerate(per_n, 1)}
        row["reproduces_run"] = bool(np.allclose(per_n[paper_n - 1], context_result(params, dataset, seed)["mrecall"]))
        # per vector after the first: the median cosine to the closest vector before it (1: a repeat)
        median = np.median(repeat_cosine(vectors)[:, 1:], axis=0)
        row["median_repeat_cosine"] = [round(float(c), 3) for c in median]
        if compound.components_in(dataset) > 1:
            row |= component_match(vectors[:, :paper_n], components, index, gold, params.search_depth)
        rows.append(row)
    return rows


def component_match(vectors: np.ndarray, components: np.ndarray, index, gold: np.ndarray, depth: int) -> dict:
    """How AMER's vectors `[Q, n, d]` stand to the off-the-shelf vectors of the question's
    components `[Q, k, d]`: each component matched to a vector of its own (Hungarian, cosine), the
    mean matched cosine, how often each position is matched, and the MRecall@100 of the matched k
    vectors alone (round-robin, as if AMER knew which of its vectors to keep) beside that of the
    components' own vectors (the off-the-shelf decomposition: notebook 04's
    `beyond.decomposition.teacher_decomposition`)."""
    from scipy.optimize import linear_sum_assignment

    from amer_lib.core.index import multi_vector_search
    from amer_lib.core.metrics import K, evaluate

    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    cosine = np.einsum("qnd,qkd->qnk", unit, components)
    picked, matched = [], []
    for q in range(len(cosine)):
        rows, cols = linear_sum_assignment(cosine[q], maximize=True)
        picked.append(rows[np.argsort(cols)])
        matched.append(cosine[q, rows, cols].mean())
    picked = np.array(picked)
    selected = np.take_along_axis(vectors, picked[..., None], axis=1)

    def mrecall(queries):
        ranked = multi_vector_search(index, queries, K, depth=max(depth, K))
        return round(float(100 * evaluate(ranked, gold, [K])[f"mrecall@{K}"].mean()), 2)

    return {
        "component_cosine": round(float(np.mean(matched)), 3),
        "component_positions": np.bincount(picked.ravel(), minlength=vectors.shape[1]).tolist(),
        "matched_vectors_mrecall": mrecall(selected),
        "components_own_mrecall": mrecall(components),
    }


def overrides_of(items: list[str]) -> dict:
    """`KEY=YAML` items as parameters (`lr=1e-4` a float, `datasets=[compound_k3]` a list)."""
    bad = [item for item in items if "=" not in item]
    if bad:
        raise SystemExit(f"--set takes KEY=YAML, got {bad}")
    return {key: _value(text) for key, text in (item.split("=", 1) for item in items)}


def _value(text: str):
    """A JSON value where the text is one (YAML 1.1 reads 1e-4 as a string), else YAML's."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return yaml.safe_load(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", choices=tuple(VARIANTS), default=[])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--folder", type=Path, default=FOLDER, help=f"where the runs live (default {FOLDER})")
    parser.add_argument(
        "--name", default="compound_levers", help="the report's file stem under studies/compound_levers/"
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=YAML", help="a parameter of every variant")
    parser.add_argument(
        "--quartiles",
        nargs="+",
        choices=tuple(VARIANTS),
        default=[],
        help="write studies/compound_levers/NAME_quartiles.json",
    )
    parser.add_argument(
        "--curves",
        nargs="+",
        choices=tuple(VARIANTS),
        default=[],
        help="write studies/compound_levers/NAME_curves.json",
    )
    parser.add_argument(
        "--vectors-alone",
        nargs="+",
        choices=tuple(VARIANTS),
        default=[],
        help="write NAME_vectors.json here: MRecall@100 of AMER's first n vectors, per seed and dataset",
    )
    parser.add_argument("--max-n", type=int, default=0, help="--vectors-alone's most vectors (0: the recipe's n)")
    parser.add_argument(
        "--report-seeds", action="store_true", help="the report and curves read only the runs of --seeds"
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="write studies/compound_levers/NAME.json and NAME_table.md, and print the table",
    )
    parser.add_argument(
        "--rerender", action="store_true", help="write every committed NAME_table.md again from its NAME.json"
    )
    args = parser.parse_args()
    if args.rerender:
        for name in reports():
            (HERE / f"{name}_table.md").write_text(table(json.loads((HERE / f"{name}.json").read_text())))
    folder, overrides = args.folder.resolve(), overrides_of(args.set)
    os.chdir(NOTEBOOK.parent)  # as a notebook runs: the recipe's relative paths are from notebooks/
    for variant in args.variants:
        train(variant, args.seeds, args.datasets, folder, overrides)
        if not amer_only(variant) and "compound_k1" in args.datasets:
            with_oracle(variant, args.seeds, folder, overrides)
    made = made_runs(folder) if args.report or args.quartiles or args.curves else {}  # read once
    if args.report:
        report(made, args.name, args.seeds if args.report_seeds else None)
    if args.quartiles:
        rows = [row for variant in args.quartiles for row in by_target_similarity(variant, made)]
        (HERE / f"{args.name}_quartiles.json").write_text(json.dumps(rows, indent=1) + "\n")
        for r in rows:
            where = f"{r['variant']} k={r['dataset'][-1]} quartile {r['quartile']}"
            print(f"{where}: {r['amer_mean']:.2f} against {r['base_mean']:.2f}")

    if args.curves:
        only = args.seeds if args.report_seeds else None
        rows = [row for variant in args.curves for row in learning_curves(variant, made, only)]
        (HERE / f"{args.name}_curves.json").write_text(json.dumps(rows, indent=1) + "\n")
    if args.vectors_alone:
        # the rows of other variants and datasets stay: runs are read by the library of their cache version
        path = HERE / f"{args.name}_vectors.json"
        kept = json.loads(path.read_text()) if path.exists() else []
        asked = [(variant, dataset) for variant in args.vectors_alone for dataset in args.datasets]
        kept = [r for r in kept if (r["variant"], r["dataset"]) not in asked]
        for variant, dataset in asked:
            kept += vectors_alone(variant, args.seeds, dataset, args.max_n, folder, overrides)
        rows = sorted(kept, key=lambda r: (list(VARIANTS).index(r["variant"]), r["dataset"], r["seed"]))
        path.write_text(json.dumps(rows, indent=1) + "\n")
        for r in rows:
            print(r)


if __name__ == "__main__":
    main()
