"""Notebook 07, beyond the paper: how many query vectors to emit, and how to merge their lists.

The paper fixes n per dataset and merges round-robin; its conclusion names both as open problems.
Here AMER is trained with a stop head (`amer_lib.core.model`, `amer_lib.core.loss.stop_loss`) and
decides n per input, and the lists of its vectors are merged by the coverage-aware merge or by
ranx's fusions (`amer_lib.core.merge`). Searching only the vectors an input keeps is the same as
masking the lists of the others, which is how a kept count is scored here: one search of all
`max_n` vectors serves every fixed n, the adaptive n and every merge.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from amer_lib.beyond.merges import WEIGHTINGS
from amer_lib.core.device import resolve_device
from amer_lib.core.index import ShardedFlatIndex, VectorIndex, kept_lists
from amer_lib.core.merge import MERGES, get_merge
from amer_lib.core.metrics import KS, K, evaluate, mean_scores
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.stopping import repeat_cosine, similarity_counts, stop_counts
from amer_lib.core.train import fit_stop_head
from amer_lib.data.questions import MultiAnswerQuestion
from amer_lib.data.synthetic_task import MAX_TARGETS, SyntheticTask, make_varying_task
from amer_lib.experiments import real_data
from amer_lib.experiments.synthetic import train_on_task
from amer_lib.io import git_commit
from amer_lib.progress import tqdm
from amer_lib.report.significance import CORRECTION_NAMES, adjust, compare
from amer_lib.report.summaries import summary, with_marks
from amer_lib.runs.configs import BeyondConfig, RealConfig, SyntheticConfig
from amer_lib.runs.query_encoders import (
    generated_states,
    generated_until_stop,
    load_trained,
    text_prompts,
    vector_prompts,
)
from amer_lib.runs.run_context import RunContext, cached_result
from amer_lib.runs.saved import save_pretrained
from amer_lib.runs.store import SYNTHETIC_RUNS


def scores_per_n(
    ids: np.ndarray,
    scores: np.ndarray,
    gold: np.ndarray,
    counts: dict[str, np.ndarray],
    merge: str = "round_robin",
    ks: tuple[int, ...] = KS,
    **merge_options,
) -> list[dict]:
    """MRecall and Recall at `ks` of every fixed n (1 .. n_max) and of every per-row count in
    `counts` (name: `[N]`, e.g. the stop head's and the true number of targets), mean and per
    input, with the mean number of vectors searched; `gold [N, C, D]` padded clusters of corpus rows."""
    merger = get_merge(merge, **merge_options)
    rows = []
    fixed = {f"n = {n}": np.full(len(ids), n) for n in range(1, ids.shape[1] + 1)}
    for name, kept in {**fixed, **counts}.items():
        scores_of = evaluate(merger(kept_lists(ids, kept), scores, max(ks)), gold, ks)
        rows.append(
            {
                "n": name,
                "vectors": float(np.mean(kept)),
                **mean_scores(scores_of),
                "per_input": {name: values.tolist() for name, values in scores_of.items()},
            }
        )
    return rows


def varying_runs(params: BeyondConfig, synthetic_config: SyntheticConfig, progress: bool = True) -> list[dict]:
    """`varying_run` of every synthetic seed: notebook 02's model, `synthetic_steps` steps."""
    return [varying_run(varying_config(params, synthetic_config, seed), progress) for seed in params.synthetic_seeds]


def varying_config(params: BeyondConfig, synthetic_config: SyntheticConfig, seed: int) -> SyntheticConfig:
    """The config of the varying task's run of `seed`."""
    return synthetic_config.replace(
        seed=seed,
        steps=params.synthetic_steps,
        stop_weight=params.stop_weight,
        results_dir=f"{params.results_dir}/varying",
        runs_dir=f"{params.runs_dir}/varying",
    )


def varying_table(runs: list[dict]):
    """The varying task's MRecall@10 and @100 in % (mean ± std over the seeds' runs) of every
    fixed n, the stop head's n and n told the true m, with the vectors searched per input."""
    import pandas as pd

    table = []
    for i, name in enumerate(r["n"] for r in runs[0]["rows"]):
        row = {"n": name, "Vectors": f"{np.mean([run['rows'][i]['vectors'] for run in runs]):.2f}"}
        for k in (10, 100):
            values = 100 * np.array([run["rows"][i][f"mrecall@{k}"] for run in runs])
            row[f"MRecall@{k}"] = f"{values.mean():.2f}±{values.std():.2f}"
        table.append(row)
    table = pd.DataFrame(table)
    table.attrs["note"] = "± is the population standard deviation over the seeds' runs (numpy's ddof = 0)."
    return table


def stop_accuracy(runs: list[dict]) -> dict:
    """The share of test inputs given exactly their number of targets by the stop head, and
    within one, pooled over the runs."""
    true = np.concatenate([run["true_counts"] for run in runs])
    predicted = np.concatenate([run["predicted_counts"] for run in runs])
    return {"exact": float(np.mean(true == predicted)), "within_one": float(np.mean(np.abs(true - predicted) <= 1))}


def stop_head_against_fixed(runs: list[dict], resamples: int, k: int = 10) -> dict:
    """The stop head's MRecall@k against the fixed n that searches as many vectors or more (the
    smallest n >= its mean count): means in % and the paired bootstrap over the runs (seeds) and
    their test inputs (`significance.compare`, one row per run, inputs paired within a run):
    `p_value` one-sided (ahead), `p_two_sided`."""
    stop = np.stack([_per_input(run, "stop head", k) for run in runs])
    n = int(np.ceil(np.mean([_row(run, "stop head")["vectors"] for run in runs]) - 1e-9))
    fixed = np.stack([_per_input(run, f"n = {n}", k) for run in runs])
    test = compare(fixed, stop, resamples)
    return {
        "fixed_n": n,
        "stop_head": float(100 * stop.mean()),
        "fixed": float(100 * fixed.mean()),
        "p_value": test.p_ahead,
        "p_two_sided": test.p,
    }


def _row(run: dict, name: str) -> dict:
    return next(r for r in run["rows"] if r["n"] == name)


def _per_input(run: dict, name: str, k: int) -> np.ndarray:
    return np.array(_row(run, name)["per_input"][f"mrecall@{k}"])


VARYING_THRESHOLD = 0.5  # the varying task's stop head stops past this probability


def varying_run_name(seed: int) -> str:
    return f"varying_linear_amer_seed{seed}"


def varying_task(params: SyntheticConfig) -> SyntheticTask:
    return make_varying_task(
        dim=params.dim, n_train=params.n_train, n_test=params.n_test, corpus_size=params.corpus_size, seed=params.seed
    )


def varying_run(params: SyntheticConfig, progress: bool = True) -> dict:
    """AMER with a stop head (`params.stop_weight > 0`) trained on the varying task (1 to 8
    targets per input), or read back: its test inputs' true and predicted numbers of targets and
    the MRecall of every fixed n against the stop head's n (round-robin)."""
    if params.stop_weight <= 0:
        raise ValueError(f"the varying task trains a stop head: stop_weight must be > 0, got {params.stop_weight}")
    name = varying_run_name(params.seed)
    cached = SYNTHETIC_RUNS.cached(params, name)
    if cached is not None:
        return cached
    device = resolve_device(params.device)
    task = varying_task(params)
    model, trained = train_on_task(params, task, MAX_TARGETS, device, SYNTHETIC_RUNS.run_dir(params, name), progress)
    prompts = vector_prompts(model, task.test_inputs, device)
    vectors, predicted = generated_until_stop(model, prompts, MAX_TARGETS, VARYING_THRESHOLD)
    scores, ids = VectorIndex(task.corpus).search(vectors, params.search_depth)
    true_counts = (task.test_target_ids >= 0).sum(1)
    rows = scores_per_n(
        ids, scores, task.test_target_ids[:, :, None], {"stop head": predicted, "true m (told)": true_counts}
    )
    result = dict(
        params=params.as_dict(),
        seed=params.seed,
        git_commit=git_commit(),
        rows=rows,
        true_counts=true_counts.tolist(),
        predicted_counts=predicted.tolist(),
        train_seconds=trained.seconds,
        best_step=trained.best_step,
        best_val_loss=trained.best_val_loss,
        history=trained.history,
    )
    return SYNTHETIC_RUNS.write(params, name, result)


# ----- the real benchmark: notebook 04's AMER runs, n per question, merges picked on validation ------
N_MODES = {  # how many vectors a question searches; each is merged by every merge
    "paper": "n = {paper_n} (paper)",
    "stop_head": "n = auto, stop head",
    "similarity": "n = auto, similarity rule",
    "true_m": "n = true m (oracle)",
}
# the cost curve: every fixed n from 1 to max_n, round-robin (mode "n<k>", label "n = k")
BASELINE = "paper/round_robin"  # the paper's system: notebook 04's AMER, its n, round-robin
MERGE_GRID: dict[str, list[dict]] = {
    "coverage": [
        dict(temperature=t, diversity=d, weighting=w) for t in (0.02, 0.05, 0.1) for d in (0.5, 1.0) for w in WEIGHTINGS
    ],
}


@dataclass
class SplitLists:
    """One split's per-vector lists `ids, scores [Q, max_n, depth]` (all max_n vectors searched),
    its gold clusters, and how many vectors each question keeps under every n mode (`N_MODES`)."""

    ids: np.ndarray
    scores: np.ndarray
    gold: np.ndarray
    counts: dict[str, np.ndarray]

    def merged(self, mode: str, merge: str, options: dict) -> np.ndarray:
        """Per-question MRecall@100 of `mode`'s kept vectors merged by `merge`."""
        ranked = get_merge(merge, **options)(kept_lists(self.ids, self.counts[mode]), self.scores, K)
        return evaluate(ranked, self.gold, (K,))[f"mrecall@{K}"]


def lists_with_stop_head(
    params: BeyondConfig, real_config: RealConfig, context: RunContext, dataset: str, seed: int
) -> dict:
    """One notebook-04 AMER run (its kept weights) given a stop head fitted on its training
    questions' generations (`fit_stop_head`), then its validation and test questions' lists of
    `max_n` generated vectors with every n mode's counts (`SplitLists`), the test questions'
    target similarity and the stop head's record."""
    paper_n = context.n_queries(dataset, "amer")
    if paper_n > params.max_n:
        raise ValueError(
            f"max_n = {params.max_n} is below {dataset}'s n = {paper_n}: the paper's system needs {paper_n}"
        )
    device = resolve_device(real_config.device)
    model = context.trained_encoder(real_config, dataset, "amer", seed, device)
    train_questions, val_questions = context.training_split(real_config, dataset, seed)
    splits = {
        "train": train_questions,
        "validation": val_questions,
        "test": context.benchmark.questions(dataset, "test"),
    }
    states = {split: _states(model, context, questions, params.max_n) for split, questions in splits.items()}
    targets = {split: np.array([len(q.targets) for q in questions]) for split, questions in splits.items()}
    losses = fit_stop_head(model, states["train"][1], torch.from_numpy(targets["train"]), seed=seed)
    index = ShardedFlatIndex(context.shards)
    lists = {}
    for split in ("validation", "test"):
        vectors, hidden = states[split]
        scores, ids = index.search(vectors, real_config.search_depth)
        rows = len(vectors)
        counts = {
            **{f"n{n}": np.full(rows, n) for n in range(1, params.max_n + 1)},
            "paper": np.full(rows, paper_n),
            "stop_head": stop_counts(model.stop_probability(hidden.to(device)), params.stop_threshold).cpu().numpy(),
            "similarity": similarity_counts(vectors, params.max_cosine),
            "true_m": np.minimum(targets[split], params.max_n),
        }
        lists[split] = SplitLists(ids, scores, context.gold(splits[split]), counts)
    test_counts = lists["test"].counts
    return dict(
        lists=lists,
        target_similarity=context.target_similarity(splits["test"]),
        paper_n=paper_n,
        stop_fit_loss=losses[-1],
        stop_exact=float(np.mean(test_counts["stop_head"] == test_counts["true_m"])),
        stop_within_one=float(np.mean(np.abs(test_counts["stop_head"] - test_counts["true_m"]) <= 1)),
        # why a later vector adds little: its median cosine to the closest earlier one, per position
        median_repeat_cosine=[round(float(c), 3) for c in np.median(repeat_cosine(states["test"][0])[:, 1:], axis=0)],
    )


def real_comparison(params: BeyondConfig, real_config: RealConfig, progress: bool = True) -> dict:
    """Every n mode with every merge of `params.merges` on notebook 04's AMER runs (seeds
    `params.real_seeds`): each merge's options picked by validation MRecall@100 averaged over the
    seeds, then per-question test MRecall@100 per seed. Returns the result dicts in
    `summary`'s format (system `mode/merge`, with the vectors searched), the options picked,
    the stop head's record per seed, and whether the paper's system reproduces notebook 04's
    stored scores."""
    if "round_robin" not in params.merges:
        raise ValueError(
            f"merges must include round_robin, the paper's merge every system is compared with; got {params.merges}"
        )
    context = RunContext.of(real_config)
    results, picked, stop_records, reproduced = [], [], [], []
    jobs = [(dataset, seed) for dataset in real_config.datasets for seed in params.real_seeds]
    by_seed = {}
    for dataset, seed in tqdm(jobs, desc="AMER runs: generation and search", disable=not progress):
        by_seed[dataset, seed] = lists_with_stop_head(params, real_config, context, dataset, seed)
    for dataset in real_config.datasets:
        seeds = {seed: by_seed[dataset, seed] for seed in params.real_seeds}
        for seed, record in seeds.items():
            stored = np.array(context_result(real_config, dataset, seed)["mrecall"])
            ours = record["lists"]["test"].merged("paper", "round_robin", {})
            reproduced.append(bool(np.allclose(stored, ours)))
            stop_records.append(
                dict(
                    dataset=dataset,
                    seed=seed,
                    **{k: v for k, v in record.items() if k.startswith(("stop_", "median_"))},
                )
            )
        paper_n = next(iter(seeds.values()))["paper_n"]

        def add(mode: str, label: str, merge: str, options: dict) -> None:
            for seed, record in seeds.items():
                test = record["lists"]["test"]
                results.append(
                    dict(
                        params=real_config.as_dict(),
                        dataset=dataset,
                        system=f"{mode}/{merge}",
                        label=f"{label}, {MERGES[merge].label}",
                        seed=seed,
                        mrecall=test.merged(mode, merge, options).tolist(),
                        vectors=float(test.counts[mode].mean()),
                        target_similarity=record["target_similarity"].tolist(),
                    )
                )

        for n in range(1, params.max_n + 1):
            add(f"n{n}", f"n = {n}", "round_robin", {})
        for mode, label in N_MODES.items():
            for merge in params.merges:
                choices = MERGE_GRID.get(merge, [{}])
                validation = [
                    float(np.mean([r["lists"]["validation"].merged(mode, merge, o).mean() for r in seeds.values()]))
                    for o in choices
                ]
                options = choices[int(np.argmax(validation))]  # the first of ties
                picked.append(
                    dict(dataset=dataset, mode=mode, merge=merge, options=options, validation=max(validation))
                )
                add(mode, label.format(paper_n=paper_n), merge, options)
    return dict(results=results, picked=picked, stop=stop_records, reproduces_notebook04=all(reproduced))


def _states(
    model: AMERQueryEncoder, context: RunContext, questions: list[MultiAnswerQuestion], max_n: int
) -> tuple[np.ndarray, torch.Tensor]:
    """`max_n` generated vectors of each question and the hidden states a stop head reads."""
    device = next(model.parameters()).device
    return generated_states(model, text_prompts(model, context.text_data(questions).to(device)), max_n)


def real_comparisons(params: BeyondConfig, progress: bool = True) -> dict:
    """`real_comparison` of every notebook-04 parameter file in `params.real_params` (one per
    backbone and dataset group), their AMER runs of `real_seeds` made first where missing
    (notebook 04's `run_all`), joined."""
    joined = dict(results=[], picked=[], stop=[], reproduces_notebook04=True)
    every = [RealConfig.from_yaml(path) for path in params.real_params]
    datasets = [dataset for real_config in every for dataset in real_config.datasets]
    if len(set(datasets)) < len(datasets):
        raise ValueError(f"real_params name a dataset twice ({datasets}): compare one backbone per dataset")
    for real_config in every:
        real_data.run_all(real_config.replace(systems=["amer"], baselines=[], seeds=params.real_seeds), progress)
        comparison = real_comparison(params, real_config, progress)
        for key in ("results", "picked", "stop"):
            joined[key] += comparison[key]
        joined["reproduces_notebook04"] &= comparison["reproduces_notebook04"]
    return joined


def context_result(real_config: RealConfig, dataset: str, seed: int) -> dict:
    """Notebook 04's stored results of one AMER run."""
    result = cached_result(real_config, dataset, "amer", seed)
    if result is None:
        raise FileNotFoundError(
            f"notebook 04 has no AMER run of {dataset}, seed {seed}, with {real_config.tag}'s parameters"
        )
    return result


def comparison_rows(comparison: dict, resamples: int) -> list[dict]:
    """`summary` rows of every system against the paper's (`BASELINE`), with the mean vectors
    searched per question."""
    rows = summary(comparison["results"], resamples, baseline=BASELINE)
    for row in rows:
        runs = [r for r in comparison["results"] if r["dataset"] == row["dataset"] and r["system"] == row["system"]]
        row["vectors"] = float(np.mean([r["vectors"] for r in runs]))
    return rows


NEW_MERGE = "coverage"  # the repository's own merge (its options picked on validation)
PAPER_SYSTEM = "the paper's system"  # BASELINE in the tables' notes


def chance_line(rows: list[dict], alpha: float = 0.05, method: str = "holm") -> str:
    """How many of the comparisons in `rows` (every system against the paper's, whole and
    low-similarity sets) pass two-sided p < `alpha` before and after `method`'s correction across
    all of them, and how many would pass before it by chance if no system differed (alpha x N)."""
    p = [r[f"{s}_p_two_sided"] for r in rows if r["system"] != BASELINE for s in ("whole", "low_sim")]
    raw = sum(value < alpha for value in p)
    corrected = int((adjust(p, method) < alpha).sum()) if p else 0
    return (
        f"{len(p)} comparisons against the paper's system (whole and low-similarity sets): {raw} pass two-sided "
        f"p < {alpha} uncorrected, {alpha * len(p):.1f} expected by chance if none differed; "
        f"{corrected} pass after {CORRECTION_NAMES[method]}'s correction across the {len(p)}"
    )


def real_table(rows: list[dict], merges: list[str], every_system: bool = False):
    """The comparison in the layout of the paper's tables (`real_results_table`), Δ and * against
    the paper's system, with the vectors searched: the fixed and adaptive n under round-robin,
    then the new merge at the paper's and the adaptive n; `every_system`: every row measured."""
    from amer_lib.report.tables import real_results_table

    if every_system:
        systems = list(dict.fromkeys(r["system"] for r in rows))
    else:
        fixed = sorted(
            {r["system"] for r in rows if r["system"].startswith("n")}, key=lambda s: int(s[1:].split("/")[0])
        )
        systems = [BASELINE, *fixed, *(f"{mode}/round_robin" for mode in N_MODES if mode != "paper")]
        if NEW_MERGE in merges:
            systems += [f"{mode}/{NEW_MERGE}" for mode in N_MODES if mode != "true_m"]
    return real_results_table(rows, systems=[(system, system) for system in systems], baseline=PAPER_SYSTEM)


def real_cost_points(rows: list[dict], merges: list[str]) -> list[dict]:
    """`cost_recall_figure`'s points of the real comparison (whole-set MRecall@100): the fixed n
    under round-robin, the adaptive n under round-robin and under the new merge."""
    shown = {f"{mode}/round_robin" for mode in N_MODES if mode != "paper"}
    shown |= {f"{mode}/{NEW_MERGE}" for mode in N_MODES} if NEW_MERGE in merges else set()
    return [
        dict(
            panel=r["dataset"],
            label=r["label"],
            vectors=r["vectors"],
            mean=r["whole_mean"],
            std=r["whole_std"],
            fixed=r["system"].startswith("n"),
        )
        for r in rows
        if r["system"].startswith("n") or r["system"] in shown
    ]


def varying_cost_points(runs: list[dict], k: int = 10) -> list[dict]:
    """`cost_recall_figure`'s points of the varying task (MRecall@k in %, mean and std over runs)."""
    points = []
    for i, name in enumerate(r["n"] for r in runs[0]["rows"]):
        values = 100 * np.array([run["rows"][i][f"mrecall@{k}"] for run in runs])
        vectors = float(np.mean([run["rows"][i]["vectors"] for run in runs]))
        fixed = name.startswith("n = ")
        points.append(
            dict(
                panel="synthetic, varying m",
                label=name,
                vectors=vectors,
                mean=values.mean(),
                std=values.std(),
                fixed=fixed,
            )
        )
    return points


def counts_of(runs: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The true and the stop head's predicted number of targets of every test input of the varying runs."""
    return np.concatenate([run["true_counts"] for run in runs]), np.concatenate(
        [run["predicted_counts"] for run in runs]
    )


def reading_lines(runs: list[dict], varying_results, rows: list[dict], resamples: int) -> list[str]:
    """Notebook 07 in words: the stop head on the varying task (its accuracy, against a fixed n of
    as many vectors, every n mode's MRecall@10), how many of the real comparisons pass p < 0.05
    before and after the correction against how many would by chance, and on each real dataset the
    systems that differ from the paper's with two-sided p < 0.05 before the correction (with their
    Holm-corrected p across all the comparisons)."""
    accuracy, versus = stop_accuracy(runs), stop_head_against_fixed(runs, resamples)
    lines = [
        f"synthetic: the stop head gives {100 * accuracy['exact']:.1f}% of the inputs their m "
        f"({100 * accuracy['within_one']:.1f}% within one)",
        f"  stop head MRecall@10 {versus['stop_head']:.2f}% against n = {versus['fixed_n']} (as many vectors or "
        f"more) {versus['fixed']:.2f}%, two-sided p = {versus['p_two_sided']:.4f} (seeds and inputs resampled)",
    ]
    lines += [
        f"  {row['n']}: {row['Vectors']} vectors, MRecall@10 {row['MRecall@10']}%"
        for _, row in varying_results.iterrows()
    ]
    lines.append(chance_line(rows))
    marked = with_marks(rows)
    for dataset in dict.fromkeys(r["dataset"] for r in marked):
        by_system = {r["system"]: r for r in marked if r["dataset"] == dataset}
        base = by_system[BASELINE]
        lines.append(f"{dataset}: the paper's system {base['whole_mean']:.2f}% with {base['vectors']:.2f} vectors")
        lines += [
            f"  {r['label']}: {r['whole_mean']:.2f}% ({100 * r['whole_delta']:+.1f}%, two-sided p = "
            f"{r['whole_p_two_sided']:.3f}, Holm {r['whole_p_adjusted']:.3f}) with {r['vectors']:.2f} vectors"
            for system, r in by_system.items()
            if system != BASELINE and not system.startswith("n") and r["whole_p_two_sided"] < 0.05
        ]
    return lines


def varying_records(runs: list[dict]) -> list[dict]:
    """What a figure of the varying task needs from each run: its seed, counts and validation loss."""
    return [{k: run[k] for k in ("seed", "true_counts", "predicted_counts", "best_val_loss")} for run in runs]


# ----- exported model folders ------------------------------------------------------------------------


def export_varying_run(params: BeyondConfig, seed: int, folder: str | Path) -> Path:
    """The varying task's run of `seed` (AMER with its trained stop head) as a model folder."""
    config = varying_config(params, SyntheticConfig.from_yaml(params.synthetic_params), seed)
    device = resolve_device(config.device)
    model, result = load_trained(SYNTHETIC_RUNS, config, varying_run_name(seed), config.dim, device)
    facts = {
        "trained on": f"the synthetic task with 1 to {MAX_TARGETS} linear targets per input, {config.n_train} inputs",
        "seed": seed,
        "steps": config.steps,
        "kept step": result["best_step"],
        "test inputs given their number of targets (%)": round(100 * stop_accuracy([result])["exact"], 2),
        "git commit": result.get("git_commit"),
    }
    return save_pretrained(
        model,
        folder,
        backbone=config.backbone,
        n_queries=MAX_TARGETS,
        stop={"threshold": VARYING_THRESHOLD, "max_n": MAX_TARGETS},
        backbone_overrides=config.backbone_overrides or None,
        recipe=SYNTHETIC_RUNS.recipe(config),
        facts=facts,
    )


def export_real_run(params: BeyondConfig, dataset: str, seed: int, folder: str | Path) -> Path:
    """Notebook 04's AMER run of `dataset` and `seed` with the stop head notebook 07 fits on its
    training questions, as a model folder: it searches the dataset's n vectors by default, the
    stop head's count with n = "auto"."""
    configs = [RealConfig.from_yaml(path) for path in params.real_params]
    found = [c for c in configs if dataset in c.datasets]
    if not found:
        held = sorted({d for c in configs for d in c.datasets})
        raise ValueError(f"no file of real_params holds dataset {dataset!r}; they hold: {', '.join(held)}")
    real_config = found[0]
    context = RunContext.of(real_config)
    model, result = context.trained_run(real_config, dataset, "amer", seed, resolve_device(real_config.device))
    train_questions = context.training_split(real_config, dataset, seed)[0]
    hidden = _states(model, context, train_questions, params.max_n)[1]
    losses = fit_stop_head(model, hidden, torch.tensor([len(q.targets) for q in train_questions]), seed=seed)
    return real_data.save_run(
        model,
        result,
        real_config,
        context,
        (dataset, "amer", seed),
        folder,
        stop={"threshold": params.stop_threshold, "max_n": params.max_n},
        facts={"stop head": f"fitted on the training questions' generations (final loss {losses[-1]:.4f})"},
    )
