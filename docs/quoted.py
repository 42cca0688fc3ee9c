"""The numbers README.md and docs/ quote, each computed once from the committed file it comes from
and rendered into every sentence that quotes it, as the README's verdict table is rendered from
figures/ (`amer_lib.report.results_page`).

    python docs/quoted.py          # names each quoted number that differs from its file (exit 1 if any)
    python docs/quoted.py --write  # renders every quoted number into the pages

The pages are README.md, docs/ and the markdown cells of the notebooks in `NOTEBOOKS` (each cell read
and rendered on its own, the notebook written back in Jupyter's layout). A source (`@source`) reads
one committed file and gives its quantities, each a string as the pages print it (`"search.load_s"`:
the name of the source, a dot, the quantity's). A sentence (`SENTENCES`) is a page's text with
`{name}` where a quantity stands; whitespace in it matches any whitespace, since the pages wrap their
lines. Every sentence must be found in some page, so a sentence reworded without its template fails
instead of going unchecked; every place it is found is rendered.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ("notebooks/02_synthetic.ipynb", "notebooks/04_real_data.ipynb")  # their markdown cells are pages too
PAGES = (
    "README.md",
    "docs/architecture.md",
    "docs/departures.md",
    "docs/paper_scale.md",
    "docs/results.md",
    "docs/usage.md",
)

SOURCES: dict[str, Callable[[], dict[str, str]]] = {}


def source(name: str):
    """Register a function reading one committed file as the source `name` of the quantities it gives."""

    def register(function: Callable[[], dict[str, str]]) -> Callable[[], dict[str, str]]:
        if name in SOURCES:
            raise ValueError(f"source {name!r} registered twice")
        SOURCES[name] = function
        return function

    return register


def read_json(path: str):
    return json.loads((ROOT / path).read_text())


def table_cells(text: str, first_cell: str) -> list[str]:
    """The cells after the first of the markdown table row of `text` whose first cell is `first_cell`."""
    line = next(line for line in text.splitlines() if line.startswith(f"| {first_cell} |"))
    return [cell.strip() for cell in line.strip().strip("|").split("|")][1:]


# ----- the sources ------------------------------------------------------------------------------------
@source("search")
def search_cost() -> dict[str, str]:
    """`benchmarks/bench_search.py`'s cost of using a trained model folder (`benchmarks/search.json`)."""
    amer, single = read_json("benchmarks/search.json")["rows"]
    if (amer["system"], single["system"]) != ("amer", "single"):
        raise ValueError(
            f"benchmarks/search.json: rows amer then single expected, got {amer['system']}, {single['system']}"
        )
    return {
        "load_s": str(amer["fresh_load_s"]),
        "import_s": str(amer["import_s"]),
        "amer_s": str(amer["search_s"]),
        "ms_per_question": str(amer["ms_per_question"]),
        "ratio": f"{amer['search_s'] / single['search_s']:.2f}",
    }


@source("smollm2_cpu")
def smollm2_cpu() -> dict[str, str]:
    """`benchmarks/bench_smollm2_cpu.py`'s SmolLM2 step times and hours, as benchmarks/RESULTS.md holds them."""
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    section = results[results.index("<!-- begin bench_smollm2_cpu -->") :]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith(("| 1 |", "| 5 |"))]
    seconds = {(int(n), int(threads)): float(s) for n, threads, s in rows}
    return {
        "one_thread": f"{seconds[1, 1]:.1f}-{seconds[5, 1]:.1f}",
        "two_threads": f"{seconds[1, 2]:.1f}-{seconds[5, 2]:.1f}",
        "hours": section.split("about ")[1].split(" hours")[0],
    }


@source("instruction_sets")
def instruction_sets() -> dict[str, str]:
    """`studies/instruction_sets`: one run trained under three instruction sets."""
    runs = read_json("studies/instruction_sets/instruction_sets.json")
    reference = runs["AVX512"]["val_loss"]
    most = max(abs(a - b) for run in runs.values() for a, b in zip(run["val_loss"], reference))
    return {
        **{isa.lower(): f"{runs[isa]['mrecall@100']:.2f}" for isa in ("AVX512", "AVX2", "DEFAULT")},
        "val_loss_moved": f"{most:.3f}",
    }


@source("check_figures")
def check_figures_time() -> dict[str, str]:
    """`make check-figures`'s last measured time (benchmarks/check_figures.md), in minutes."""
    measured = (ROOT / "benchmarks" / "check_figures.md").read_text()
    last_row = [line for line in measured.splitlines() if line.startswith("| ") and line[2].isalnum()][-1]
    return {"minutes": str(round(int(last_row.split("|")[3].strip().removesuffix(" s")) / 60))}


@source("own_data")
def own_data_commands() -> dict[str, str]:
    """The README's own-data commands, timed (benchmarks/own_data_commands.md)."""
    rows = [line.split("|") for line in (ROOT / "benchmarks" / "own_data_commands.md").read_text().splitlines()]
    seconds = {
        row[1].split()[2]: float(row[2]) for row in rows if len(row) > 3 and row[1].strip().startswith("`papermill")
    }
    return {
        "prep_s": str(round(seconds["notebooks/03_real_data_prep.ipynb"])),
        "train_min": str(round(seconds["notebooks/04_real_data.ipynb"] / 60)),
    }


@source("durations")
def notebook_durations() -> dict[str, str]:
    """Each figures folder's wall time (its provenance.json), on the cores benchmarks/times.json says the
    sitting had (idle, or shared with the other figure targets or other work)."""
    steps = read_json("benchmarks/times.json")["steps"]

    def seconds(folder: str) -> float:
        return read_json(f"figures/{folder}/provenance.json")["wall_seconds"]

    def cores(step: str) -> str:
        return "2 cores shared" if steps[step]["shared"] else "2 idle cores"

    minutes = {
        folder: str(round(seconds(folder) / 60))
        for folder in ("02_synthetic", "02_synthetic_mlp_sweep", "03_real_data_prep", "04_real_data")
        + ("06_diversity_analysis", "07_beyond")
    }
    return {
        **{f"{folder}_min": value for folder, value in minutes.items()},
        "01_failure_analysis_s": str(round(seconds("01_failure_analysis"))),
        "02_synthetic_cores": cores("notebook 02"),
        "02_synthetic_mlp_sweep_cores": cores("make figures-mlp-sweep"),
        "03_real_data_prep_cores": cores("notebook 03"),
        "04_real_data_cores": cores("notebook 04"),
    }


@source("scale")
def scale() -> dict[str, str]:
    """The scale benchmark's measurements (benchmarks/scale.json) and what bench_scale.py projects from them
    (benchmarks/RESULTS.md)."""
    measured = read_json("benchmarks/scale.json")
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text()

    def row(n: int, operation: str) -> dict:
        return next(r for r in measured["index"] if (r["n"], r["dim"], r["operation"]) == (n, 1536, operation))

    def projected(operation: str, column: int = 0) -> str:
        return table_cells(results, operation)[1 + column]

    shards, ivfpq = "exact search, float16 shards", "IVF1024,PQ96 search, nprobe 64"
    conversion, calibration = measured["half_to_float"], measured["calibration"]["recall"]
    four = "encode, four GPUs (torchrun, alternate 250,000-row shards)"
    return {
        "shards_peak_1m": f"{row(1_000_000, shards)['peak_gib']:.2f}",
        "shards_peak_4m": f"{row(4_000_000, shards)['peak_gib']:.2f}",
        "in_memory_1m": f"{row(1_000_000, 'exact index build, in memory (float32)')['peak_gib']:.2f}",
        "conversion_speedup": f"{conversion['torch_gb_s'] / conversion['numpy_gb_s']:.1f}",
        "ivfpq_recall_1m": f"{row(1_000_000, ivfpq)['recall']:.3g}",
        "ivfpq_recall_4m": f"{row(4_000_000, ivfpq)['recall']:.3g}",
        "tree_recall": f"{calibration['tree vectors']:.3f}",
        "minilm_recall": f"{calibration['real MiniLM']:.3f}",
        "encode_one_gpu": projected("encode with inf-retriever-1.5B, one GPU"),
        "encode_four_gpus": projected(four),
        "encode_100m_four_gpus": projected(four, 1),
        "search_one_gpu": projected("exact search, one GPU streaming the shards (ShardedFlatIndex)"),
        "search_cpu": projected("exact search of the test sets, this CPU"),
        "ivf_train_cpu": projected("IVF65536 training (k-means over 2,621,440 vectors), this CPU"),
        "ivf_add_cpu": projected("IVF65536 adding (coarse assignment), this CPU"),
    }


@source("matched_loss")
def matched_loss() -> dict[str, str]:
    """`studies/matched_loss`: the matched loss summed against its mean."""
    study = read_json("studies/matched_loss/matched_loss.json")
    mean = next(r for r in study["against_single"] if r["system"] == "amer")
    summed = next(r for r in study["sum_against_mean"] if r["system"] == "amer_sum")
    return {
        "sum_whole": f"{summed['whole_mean']:.2f}",
        "mean_whole": f"{mean['whole_mean']:.2f}",
        "whole_p": f"{summed['whole_p']:.3f}",
        "sum_low": f"{summed['low_sim_mean']:.2f}",
        "mean_low": f"{mean['low_sim_mean']:.2f}",
        "low_p": f"{summed['low_sim_p']:.3f}",
    }


def figure_rows(path: str) -> list[dict]:
    """The rows of a CSV file under figures/."""
    import csv

    with open(ROOT / "figures" / path, newline="") as f:
        return list(csv.DictReader(f))


def signed(text: str) -> str:
    """A signed number as the pages print it: a minus sign for the hyphen."""
    return text.replace("-", "\u2212")


@source("table1")
def table1() -> dict[str, str]:
    """Notebook 03's Table 1 and target similarity (figures/03_real_data_prep)."""
    table = {row["dataset"]: row for row in figure_rows("03_real_data_prep/table1.csv")}
    similarity = {row["dataset"]: row for row in figure_rows("03_real_data_prep/target_similarity.csv")}
    values = {}
    for short, dataset in (("senses", "wordnet_senses"), ("kinds", "wordnet_kinds")):
        row = table[dataset]
        values |= {f"{short}_train": row["train"], f"{short}_test": row["test"]}
        values[f"{short}_targets"] = f"{float(row['targets']):.2f}"
        for column, name in (("same_question_cos", "same"), ("random_pair_cos", "random")):
            values[f"{short}_{name}"] = f"{float(similarity[dataset][column]):.3f}"
    for short, dataset in (("ambigqa", "AmbigQA (paper)"), ("qampari", "QAMPARI (paper)")):
        for column, name in (("same_question_cos", "same"), ("random_pair_cos", "random")):
            values[f"{short}_{name}"] = f"{float(similarity[dataset][column]):.2f}"
    return values


# the figures' names of the data, by the short name their quantities take
SHORT_NAMES = {
    "synthetic, linear": "linear",
    "synthetic, mlp": "mlp",
    "wordnet_senses": "senses",
    "wordnet_kinds": "kinds",
    "AmbigQA (paper)": "ambigqa",
    "QAMPARI (paper)": "qampari",
}


@source("figure6")
def figure6() -> dict[str, str]:
    """Figure 6's same-question and random-pair target distances (figures/06_diversity_analysis), and
    the cosines of its real-data rows (their training questions)."""
    values = {}
    for row in figure_rows("06_diversity_analysis/figure6_data.csv"):
        for column, name in (("same_question_distance", "same"), ("random_pair_distance", "random")):
            values[f"{SHORT_NAMES[row['data']]}_{name}"] = f"{float(row[column]):.2f}"
        if row["source"] == "real":
            for column, name in (("same_question_cos", "same_cos"), ("random_pair_cos", "random_cos")):
                values[f"{SHORT_NAMES[row['data']]}_{name}"] = f"{float(row[column]):.3f}"
    return values


@source("gain_by_source")
def gain_by_source() -> dict[str, str]:
    """MRecall@100 gain over single-query by data source (figures/06_diversity_analysis/similarity_and_gain.csv)."""
    rows = {row["data"]: row for row in figure_rows("06_diversity_analysis/similarity_and_gain.csv")}
    return {
        "linear": signed(f"{float(rows['synthetic, linear']['gain_points']):+.0f}"),
        "mlp": signed(f"{float(rows['synthetic, mlp']['gain_points']):+.1f}"),
        **{
            f"{short}_{kind}": signed(f"{scale * float(rows[data][column]):+.1f}")
            for short, data in (("senses", "wordnet_senses"), ("kinds", "wordnet_kinds"))
            for kind, column, scale in (("points", "gain_points", 1), ("relative", "gain_relative", 100))
        },
    }


@source("table3")
def table3() -> dict[str, str]:
    """Table 3's relative gains over single-query by sampling mode (figures/05_ablations/table3.csv)."""
    modes = {
        "AMER (scheduled sampling)": "scheduled",
        "AMER (always predicted)": "predicted",
        "AMER (teacher forcing only)": "teacher",
    }
    values = {}
    for row in figure_rows("05_ablations/table3.csv"):
        mode = modes[row["System"]]
        for dataset in ("senses", "kinds"):
            values[f"{mode}_{dataset}"] = signed(row[f"wordnet_{dataset} (Whole Set)"])
        if mode == "scheduled":
            for dataset in ("senses", "kinds"):
                low = float(row[f"wordnet_{dataset} (Low Similarity Set)"].rstrip("%"))
                values[f"{mode}_{dataset}_low"] = signed(f"{low:+.1f}%")
    return values


def claim(holds: bool, words: str) -> None:
    """Fail where the data no longer support what the pages say in words (`words`)."""
    if not holds:
        raise ValueError(f"the pages say {words}, and the committed file no longer does")


@source("mlp_sweep")
def mlp_sweep() -> dict[str, str]:
    """Notebook 02's MLP sweep at MRecall@10 (figures/02_synthetic_mlp_sweep/mlp_sweep.csv)."""
    rows = figure_rows("02_synthetic_mlp_sweep/mlp_sweep.csv")
    sweep = {(int(r["d"]), int(r["depth"]), r["training data"].split()[0], r["system"]): r for r in rows}
    dims = (128, 512, 1024)

    def at10(d: int, depth: int, system: str, data: str = "MLP") -> float:
        return float(sweep[d, depth, data, system]["mrecall@10"])

    single2 = [at10(d, 2, "single") for d in dims]
    oracle3 = [at10(d, 3, "oracle") for d in (512, 1024)]
    amer3 = [at10(d, 3, "amer") for d in dims]
    claim(all(at10(d, 3, "single") == 0 for d in dims), "single-query fails completely at depth 3 (0%)")
    claim(all(at10(d, depth, "single", "linear") == 0 for d in dims for depth in (2, 3)), "the bug gives 0.0%")
    low, high = (
        float(sweep[128, 3, "MLP", "oracle"][k]) for k in ("oracle_min_target_cos", "oracle_best_negative_cos")
    )
    return {
        "single2": f"{min(single2):g}-{max(single2):g}",
        "single2_words": f"{min(single2):.1f}-{max(single2):.1f}",
        "oracle3": f"{min(oracle3):g}-{max(oracle3):.0f}",
        "oracle_least_target": f"{low:.3f}",
        "oracle_best_distractor": f"{high:.3f}",
        **{f"amer3_{d}": f"{value:.1f}" for d, value in zip(dims, amer3)},
    }


@source("ivfpq")
def ivfpq_sweep() -> dict[str, str]:
    """Notebook 03's IVF-PQ sweep (figures/03_real_data_prep/ivfpq_sweep.csv)."""
    rows = figure_rows("03_real_data_prep/ivfpq_sweep.csv")
    exact, approximate = rows[0], rows[1:]

    def recalls(index: str) -> str:
        return " / ".join(f"{float(r['recall@100_vs_exact']):.2f}" for r in approximate if r["index"] == index)

    slower = [(r["nprobe"], r["bytes_per_doc"]) for r in approximate if float(r["speedup_vs_exact"]) < 1]
    claim(
        slower == [("128", "48"), ("128", "96")], "IVF-PQ is slower than exact at 128 lists with 48- and 96-byte codes"
    )
    return {
        "pq16": recalls("IVF256,PQ16"),
        "pq48": recalls("IVF256,PQ48"),
        "pq96": recalls("IVF256,PQ96"),
        "exact_ms": f"{float(exact['ms_per_query']):.2f}",
        "fastest": f"{max(float(r['speedup_vs_exact']) for r in approximate):.1f}",
    }


@source("figure5")
def figure5() -> dict[str, str]:
    """Figure 5's mean cosine between AMER's vectors and between the targets (figures/06_diversity_analysis)."""
    rows = {row["dataset"]: row for row in figure_rows("06_diversity_analysis/figure5_data.csv")}
    values = {}
    for short, data, digits in (
        ("senses", "wordnet_senses", 2),
        ("kinds", "wordnet_kinds", 2),
        ("mlp", "synthetic, mlp", 2),
        ("linear", "synthetic, linear", 3),
    ):
        values[f"{short}_vectors"] = signed(f"{float(rows[data]['output_cos_mean']):.{digits}f}")
        values[f"{short}_targets"] = signed(f"{float(rows[data]['train_target_cos']):.{digits}f}")
    return values


@source("figure1")
def figure1() -> dict[str, str]:
    """Figure 1's trends: MRecall@100 by target-similarity bin (figures/01_failure_analysis/trends.csv)."""
    rows = figure_rows("01_failure_analysis/trends.csv")
    values = {}
    for row in rows:
        key = f"{row['dataset'].removeprefix('wordnet_')}_{row['retriever']}"
        for column in ("mrecall", "nearest", "farthest"):
            values[f"{key}_{column}"] = f"{float(row[column]):.1f}"
        values[f"{key}_columns"] = row["size_columns_falling"]
        values[f"{key}_rho"] = signed(f"{float(row['spearman']):.2f}")
    same_bin = [100 * float(row["cos_euclid_same_bin"]) for row in rows]
    return {**values, "same_bin": f"{min(same_bin):.0f}-{max(same_bin):.0f}"}


def pair(a: float, b: float) -> str:
    """MRecall@10 / @100 as the tables print them."""
    return f"{a:.1f} / {b:.1f}"


@source("notebook02")
def notebook02_table() -> dict[str, str]:
    """Notebook 02's MRecall@10 / @100 per transform, setting and system (figures/02_synthetic/results.csv)."""
    values = {}
    for row in figure_rows("02_synthetic/results.csv"):
        mrecall = pair(100 * float(row["mrecall@10"]), 100 * float(row["mrecall@100"]))
        values[f"{row['transform']}_{row['setting']}_{row['system']}"] = mrecall
    return values


@source("mlp_table")
def mlp_sweep_table() -> dict[str, str]:
    """The MLP sweep's table: MRecall@10 / @100 per d, depth and system, the oracle's cosines, the
    authors' bug (figures/02_synthetic_mlp_sweep/mlp_sweep.csv)."""
    values = {}
    for row in figure_rows("02_synthetic_mlp_sweep/mlp_sweep.csv"):
        key = f"d{row['d']}_depth{row['depth']}"
        mrecall = pair(float(row["mrecall@10"]), float(row["mrecall@100"]))
        if row["training data"].startswith("linear"):
            values[f"{key}_bug"] = mrecall
            continue
        values[f"{key}_{row['system']}"] = mrecall
        if row["system"] == "oracle":
            low, high = float(row["oracle_min_target_cos"]), float(row["oracle_best_negative_cos"])
            values[f"{key}_cosines"] = f"{low:.3f} / {high:.3f}"
    return values


@source("figure5_table")
def figure5_table() -> dict[str, str]:
    """Figure 5's table: the mean cosine between AMER's vectors (± its std over seeds), between the
    training targets, and the share of questions whose vectors are more diverse than their targets."""
    values = {}
    for row in figure_rows("06_diversity_analysis/figure5_data.csv"):
        key, seeds = SHORT_NAMES[row["dataset"]], int(row["seeds"])
        mean, std = float(row["output_cos_mean"]), float(row["output_cos_std"])
        values[f"{key}_vectors"] = signed(f"{mean:.3f} ± {std:.3f}" if seeds > 1 else f"{mean:.3f}")
        values[f"{key}_targets"] = signed(f"{float(row['train_target_cos']):.3f}")
        share = 100 * float(row["more_diverse_than_targets"])
        values[f"{key}_share"] = f"{share:.1f}%" if seeds > 1 else f"{share:.0f}%"
    return values


@source("seen_unseen")
def seen_and_unseen() -> dict[str, str]:
    """MRecall@100 on the questions trained on and the test questions, and each vector's Recall@100
    (figures/06_diversity_analysis/seen_and_unseen.csv); the better system's MRecall in bold."""
    values = {}
    for row in figure_rows("06_diversity_analysis/seen_and_unseen.csv"):
        key = f"{row['dataset'].removeprefix('wordnet_')}_{row['questions']}"
        single, amer = float(row["single_mrecall_mean"]), float(row["amer_mrecall_mean"])
        values[f"{key}_single"] = f"**{single:.1f}**" if single > amer else f"{single:.1f}"
        values[f"{key}_amer"] = f"**{amer:.1f}**" if amer > single else f"{amer:.1f}"
        values[f"{key}_single_vector"] = f"{float(row['single_recall']):.1f}"
        vectors = [float(row[f"amer_v{i}_recall"]) for i in range(1, 6) if row[f"amer_v{i}_recall"]]
        values[f"{key}_vectors"] = (
            ", ".join(f"{v:.1f}" for v in vectors) if len(vectors) == 2 else f"{min(vectors):.1f}-{max(vectors):.1f}"
        )
    return values


@source("vector_count")
def vector_count() -> dict[str, str]:
    """Notebook 05's sweep of the vector count and the merge, seed 0 (figures/05_ablations/vector_count_merge.json),
    beside notebook 04's single-query runs of seed 0 (figures/04_real_data/per_seed_*.csv)."""
    rows = read_json("figures/05_ablations/vector_count_merge.json")

    def value(benchmark: str, merge: str, n: int, k: int) -> float:
        (row,) = [r for r in rows if r["benchmark"].startswith(benchmark) and r["merge"] == merge and r["n"] == n]
        return 100 * row[f"mrecall@{k}"]

    def spread(benchmark: str, merge: str) -> str:  # MRecall@100 over n = 2..8
        values = [value(benchmark, merge, n, 100) for n in range(2, 9)]
        return f"{min(values):.1f}-{max(values):.1f}"

    senses, kinds, mlp = "wordnet_senses", "wordnet_kinds", "synthetic mlp"
    single = {
        row["dataset"]: float(row["whole"])
        for row in figure_rows("04_real_data/per_seed_minilm_wordnet_senses+wordnet_kinds.csv")
        if row["system"] == "single" and row["seed"] == "0"
    }
    best = max(value(senses, m, n, 100) for m in ("round_robin", "rrf", "max_score") for n in range(1, 9))
    claim(all(value(mlp, "round_robin", n, 10) == 0 for n in (1, 2)), "MRecall@10 is 0% for n <= 2")
    claim(all(value(mlp, "round_robin", n, 10) == 100 for n in range(5, 9)), "100% from n = 5 on")
    max_score = [value(mlp, "max_score", n, 10) for n in range(5, 9)]
    claim(min(max_score) >= 99.9, "max-score merging matches round-robin within 0.1 point")
    rrf = [value(mlp, "rrf", n, 10) for n in range(6, 9)]
    return {
        "senses_first": f"{value(senses, 'round_robin', 1, 100):.1f}",
        "kinds_first": f"{value(kinds, 'round_robin', 1, 100):.1f}",
        "senses_single": f"{single[senses]:.1f}",
        "kinds_single": f"{single[kinds]:.1f}",
        "senses_n2": f"{value(senses, 'round_robin', 2, 100):.1f}",
        "senses_best": f"{best:.1f}",
        "kinds_round_robin": spread(kinds, "round_robin"),
        "kinds_rrf": spread(kinds, "rrf"),
        "kinds_max_score": spread(kinds, "max_score"),
        "mlp_n3": f"{value(mlp, 'round_robin', 3, 10):.1f}",
        "mlp_n4": f"{value(mlp, 'round_robin', 4, 10):.1f}",
        "mlp_max_score": f"{min(max_score):.1f}-{max(max_score):.0f}",
        "mlp_rrf": f"{min(rrf):.1f}-{max(rrf):.1f}",
    }


@source("targets")
def targets() -> dict[str, str]:
    """Issue 77's targets this file itself measures (docs/architecture.md): the per-sentence checks
    left in tests/test_readme_numbers.py and those of the lab's records, this registry's size, the lab's
    test functions."""
    import ast

    def test_functions(folder: str) -> int:
        paths = sorted((ROOT / folder).glob("test_*.py"))
        return sum(
            isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
            for path in paths
            for node in ast.parse(path.read_text()).body
        )

    checks = (ROOT / "tests" / "test_readme_numbers.py").read_text()
    records = (ROOT / "studies" / "tests" / "test_study_records.py").read_text()
    return {
        "readme_numbers_lines": f"{len(checks.splitlines()):,}",
        "readme_numbers_tests": str(checks.count("\ndef test_")),
        "record_checks": str(records.count("\ndef test_")),
        "sources": str(len(SOURCES)),
        "sentences": str(len(SENTENCES)),
        "lab_tests": str(test_functions("studies/tests") + test_functions("benchmarks/tests")),
    }


def half_up(value: float, digits: int) -> str:
    """`value` rounded half up at `digits` decimals from its decimal text (0.355 -> 0.36), as the
    pages round a file's three decimals to two."""
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(str(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


@source("similarity04")
def target_similarity_in_notebook04() -> dict[str, str]:
    """Notebook 03's target similarity as notebook 04's markdown rounds it (figures/03_real_data_prep)."""
    rows = {row["dataset"]: row for row in figure_rows("03_real_data_prep/target_similarity.csv")}
    return {
        f"{short}_{name}": half_up(float(rows[f"wordnet_{short}"][column]), 2)
        for short in ("senses", "kinds")
        for name, column in (("same", "same_question_cos"), ("random", "random_pair_cos"))
    }


@source("departures")
def departures() -> dict[str, str]:
    """`studies/departures`: the sampling rate on notebook 02, the fed targets and the single-target step on
    notebook 04."""
    study = read_json("studies/departures/departures.json")
    rate = {r["sampling_rate"]: r for r in study["sampling_rate"]}
    default, paper = study["fed_targets"]
    senses, kinds = study["single_target_step"]
    return {
        "rate1_mrecall": f"{rate[1]['mrecall@10']:.1f}",
        "rate2_mrecall": f"{rate[2]['mrecall@10']:.1f}",
        "rate1_loss": f"{rate[1]['final_val_loss']:.2f}",
        "rate2_loss": f"{rate[2]['final_val_loss']:.2f}",
        "paper_copies": f"{100 * paper['copies_fed_target']:.1f}",
        "default_copies": f"{100 * default['copies_fed_target']:.1f}",
        "paper_mrecall": f"{paper['mrecall@100']:.1f}",
        "default_mrecall": f"{default['mrecall@100']:.1f}",
        "paper_cosine": f"{paper['cosine_first_second']:.2f}",
        "default_cosine": f"{default['cosine_first_second']:.2f}",
        "senses_amer": f"{senses['amer']:.1f}",
        "senses_step": f"{senses['amer_single_target_step']:.1f}",
        "kinds_amer": f"{kinds['amer']:.1f}",
        "kinds_step": f"{kinds['amer_single_target_step']:.1f}",
        "senses_single": f"{senses['single']:.1f}",
        "kinds_single": f"{kinds['single']:.1f}",
    }


# ----- the sentences that quote them ---------------------------------------------------------------
FIGURE1_COLUMNS = ("mrecall", "nearest", "farthest", "columns", "rho")  # docs/results.md's Figure 1 table
SENTENCES = (
    "a model folder loads in {search.load_s} s after {search.import_s} s of imports, and 100 questions over the "
    "offline corpus (30,000 documents, exact search) take {search.amer_s} s with AMER's 5 vectors, "
    "{search.ms_per_question} ms per question ({search.ratio}x single-query's time)",
    "a training step at batch 32 takes {smollm2_cpu.one_thread} s on one thread and {smollm2_cpu.two_threads} s on two",
    "are about {smollm2_cpu.hours} hours of training steps before validation",
    "MRecall@100 read {instruction_sets.avx512}, {instruction_sets.avx2} and {instruction_sets.default}: about a point",
    "moved in the second decimal (at most {instruction_sets.val_loss_moved})",
    "compared to the last digit ({check_figures.minutes} min, shared cores)",
    "these commands prepare it ({own_data.prep_s} s on 2 idle cores), train single-query and AMER on it "
    "({own_data.train_min} min;",
    "- Time: {durations.02_synthetic_min} minutes on {durations.02_synthetic_cores} (`provenance.json`",
    "its last sitting took {durations.02_synthetic_mlp_sweep_min} minutes on {durations.02_synthetic_mlp_sweep_cores} "
    "with the other figure targets",
    "Notebook 03 at its default ({durations.03_real_data_prep_min} minutes on {durations.03_real_data_prep_cores} "
    "with other work",
    "Notebook 04 at its default: {durations.04_real_data_min} minutes on {durations.04_real_data_cores} "
    "with other work",
    "(notebook 06, {durations.06_diversity_analysis_min} minutes after 02 and 04)",
    "(notebook 07, {durations.07_beyond_min} minutes after 02 and 04)",
    "(notebook 01, {durations.01_failure_analysis_s} seconds after notebook 03)",
    "its peak grew by {scale.shards_peak_1m} GiB at 1M x 1536 and {scale.shards_peak_4m} GiB at 4M x 1536, while an "
    "in-memory float32 index of 1M x 1536 takes {scale.in_memory_1m} GiB",
    "a reused buffer, {scale.conversion_speedup}x faster than numpy's",
    "IVF1024,PQ96 finds {scale.ivfpq_recall_1m} of the exact top 100 at 1M x 1536 and {scale.ivfpq_recall_4m} at 4M",
    "IVF256,PQ24 finds {scale.tree_recall} of the exact top 100 on 30,000 of them and {scale.minilm_recall} on "
    "notebook 03's 30,000 MiniLM embeddings",
    "takes about {scale.encode_one_gpu} on one H100 and {scale.encode_four_gpus} on four "
    "({scale.encode_100m_four_gpus} for 100M",
    "through one GPU in about {scale.search_one_gpu}, against {scale.search_cpu} on this CPU",
    "would take {scale.ivf_train_cpu} and {scale.ivf_add_cpu} on this CPU",
    "the sum gave AMER {matched_loss.sum_whole}% MRecall@100 against the mean's {matched_loss.mean_whole}% "
    "(paired bootstrap p = {matched_loss.whole_p}), {matched_loss.sum_low}% against {matched_loss.mean_low}% on the "
    "low-similarity third (p = {matched_loss.low_p})",
    "wordnet_senses: {table1.senses_train} train / {table1.senses_test} test questions, {table1.senses_targets} "
    "targets per test question; wordnet_kinds: {table1.kinds_train} / {table1.kinds_test}, {table1.kinds_targets} "
    "(the paper:",
    "(MiniLM): {table1.senses_same} vs {table1.senses_random} (senses), {table1.kinds_same} vs {table1.kinds_random} "
    "(kinds); Figure 6 (notebook 06) reads the training questions instead: {figure6.senses_same_cos} vs "
    "{figure6.senses_random_cos} (senses), {figure6.kinds_same_cos} vs {figure6.kinds_random_cos} (kinds). The "
    "paper measured {table1.ambigqa_same} vs {table1.ambigqa_random} (AmbigQA) and "
    "{table1.qampari_same} vs {table1.qampari_random} (QAMPARI)",
    "synthetic linear {figure6.linear_same} vs {figure6.linear_random}, MLP {figure6.mlp_same} vs "
    "{figure6.mlp_random}, wordnet_senses {figure6.senses_same} vs {figure6.senses_random}, wordnet_kinds "
    "{figure6.kinds_same} vs {figure6.kinds_random};",
    "distances of {figure6.ambigqa_same} vs {figure6.ambigqa_random} and {figure6.qampari_same} vs "
    "{figure6.qampari_random} (`figure6_data.csv`",
    "by data source: synthetic linear {gain_by_source.linear} points, MLP {gain_by_source.mlp} points (Multi "
    "setting), wordnet_senses {gain_by_source.senses_points} points ({gain_by_source.senses_relative}%), "
    "wordnet_kinds {gain_by_source.kinds_points} points ({gain_by_source.kinds_relative}%):",
    "scheduled sampling {table3.scheduled_senses} / {table3.scheduled_kinds} on the whole senses / kinds sets "
    "({table3.scheduled_senses_low} / {table3.scheduled_kinds_low} on their low-similarity thirds, a few questions), "
    "always predicted {table3.predicted_senses} / {table3.predicted_kinds}, teacher forcing only "
    "{table3.teacher_senses} / {table3.teacher_kinds}.",
    "trained single-query finds all five targets for {mlp_sweep.single2}% of inputs:",
    "({mlp_sweep.single2_words}% MRecall@10 at d = 128 / 512 / 1024); on the authors' code's 3-weight MLP it "
    "finds none",
    "trained single-query fails completely at every d (0%)",
    "the oracle, also one vector, succeeds for {mlp_sweep.oracle3}% of inputs:",
    "cos {mlp_sweep.oracle_least_target}, lies below its best random distractor, {mlp_sweep.oracle_best_distractor}), "
    "the situation",
    "there AMER reaches {mlp_sweep.amer3_128}%. AMER falls with d at this budget ({mlp_sweep.amer3_128}, "
    "{mlp_sweep.amer3_512}, {mlp_sweep.amer3_1024}%).",
    "gives 0.0% in every cell:",
    "probed ({ivfpq.pq16} with 8 / 32 / 128 of 256 lists); 48-byte codes reach {ivfpq.pq48} and 96-byte codes "
    "{ivfpq.pq96} (the last digit",
    "exact search takes {ivfpq.exact_ms} ms per query",
    "so IVF-PQ is at most {ivfpq.fastest}x faster, and slower than exact at 128 lists with 48- and 96-byte codes;",
    "the WordNet targets ({figure5.senses_vectors} / {figure5.kinds_vectors} against {figure5.senses_targets} / "
    "{figure5.kinds_targets}), which",
    "they have cosine {figure5.mlp_vectors} against the targets' {figure5.mlp_targets} and",
    "reproduce the targets' geometry ({figure5.linear_vectors} against {figure5.linear_targets};",
    *(
        f"| wordnet_{dataset} | {retriever} | "
        + " | ".join(f"{{figure1.{dataset}_{short}_{column}}}" for column in FIGURE1_COLUMNS)
        + " |"
        for dataset in ("senses", "kinds")
        for short, retriever in (("minilm", "all-MiniLM-L6-v2"), ("bm25", "BM25"))
    ),
    "Cosine and Euclidean distance put {figure1.same_bin}% of questions",
    "farther apart here ({similarity04.senses_same} / {similarity04.kinds_same} against the paper's",
    "; random pairs {similarity04.senses_random} / {similarity04.kinds_random} against 0.77 / 0.74, notebook 03)",
    "from {departures.rate1_mrecall}% to {departures.rate2_mrecall}% and the final validation loss from "
    "{departures.rate1_loss} to {departures.rate2_loss} (",
    "from {departures.rate1_mrecall}% to {departures.rate2_mrecall}% and its final validation loss from "
    "{departures.rate1_loss} to {departures.rate2_loss} (",
    "for {departures.paper_copies}% of the test questions, against {departures.default_copies}% with the fed target "
    "excluded; MRecall@100 {departures.paper_mrecall}% against {departures.default_mrecall}%.",
    "mean cosine {departures.paper_cosine} and {departures.default_cosine} between the first two",
    "from {departures.senses_amer} to {departures.senses_step}% on `wordnet_senses` and from {departures.kinds_amer} "
    "to {departures.kinds_step}% on `wordnet_kinds` (single-query: {departures.senses_single} and "
    "{departures.kinds_single}%;",
    "| 1,713 lines of per-sentence checks | {targets.readme_numbers_lines} lines ({targets.readme_numbers_tests} test "
    "functions) left for the README and docs/; the rest rendered by `docs/quoted.py`: {targets.sources} sources, "
    "{targets.sentences} sentences; the lab's records (the compound-lever and mutation studies) checked by "
    "{targets.record_checks} test functions of their own (`studies/tests/test_study_records.py`) |",
    "| in tests/, beside the library's | {targets.lab_tests} test functions in `studies/tests` and `benchmarks/tests`,",
    "({vector_count.senses_first} vs {vector_count.senses_single}% on senses, {vector_count.kinds_first} vs "
    "{vector_count.kinds_single}% on kinds; seed 0)",
    "the gap ({vector_count.senses_n2}% at n = 2, the paper's n for AmbigQA, and {vector_count.senses_best}% at most)",
    "round-robin to {vector_count.kinds_round_robin}% for n = 2-8, below single-query's {vector_count.kinds_single}%,",
    "(RRF {vector_count.kinds_rrf}%, max-score {vector_count.kinds_max_score}%)",
    "MRecall@10 is 0% for n <= 2, {vector_count.mlp_n3}% at n = 3 and {vector_count.mlp_n4}% at n = 4, and 100% from "
    "n = 5",
    "within 0.1 point ({vector_count.mlp_max_score}% for n >= 5); reciprocal-rank fusion falls to "
    "{vector_count.mlp_rrf}% at @10 for n >= 6",
    *(
        f"| {transform} | {setting} | "
        + " | ".join(
            f"{{notebook02.{transform.lower()}_{setting.lower()}_{system}}}" for system in ("single", "oracle", "amer")
        )
        + " |"
        for transform in ("linear", "MLP")
        for setting in ("Single", "Multi", "OOD")
    ),
    *(
        f"| {d} | {depth} ({source}) | "
        + " | ".join(
            f"{{mlp_table.d{d}_depth{depth}_{column}}}" for column in ("single", "oracle", "cosines", "amer", "bug")
        )
        + " |"
        for depth, source in ((2, "paper's text"), (3, "authors' code"))
        for d in (128, 512, 1024)
    ),
    *(
        f"| {label} | "
        + " | ".join(f"{{figure5_table.{key}_{column}}}" for column in ("vectors", "targets", "share"))
        + " |"
        for key, label in (
            ("senses", "wordnet_senses (MiniLM, n = 2)"),
            ("kinds", "wordnet_kinds (MiniLM, n = 5)"),
            ("linear", "synthetic, linear (tiny Llama, n = 5)"),
            ("mlp", "synthetic, MLP (tiny Llama, n = 5)"),
        )
    ),
    *(
        f"| wordnet_{dataset} | {label} | "
        + " | ".join(
            f"{{seen_unseen.{dataset}_{questions}_{column}}}"
            for column in ("single", "amer", "single_vector", "vectors")
        )
        + " |"
        for dataset in ("senses", "kinds")
        for questions, label in (("train", "trained on"), ("test", "test"))
    ),
)

SLOT = re.compile(r"\{([a-z0-9_]+\.[a-z0-9_]+)\}")


def quantities() -> dict[str, str]:
    """Every source's quantities, each read once, by its full name ("source.quantity")."""
    values = {}
    for name, function in SOURCES.items():
        values.update({f"{name}.{key}": value for key, value in function().items()})
    return values


def pattern(sentence: str) -> re.Pattern:
    """`sentence` as a regular expression: each quantity a group of up to six words, each run of
    whitespace any whitespace."""
    literals = SLOT.split(sentence)[::2]
    if not literals[0].strip() or not literals[-1].strip():
        raise ValueError(f"a sentence begins and ends with words, not a quantity (they bound it): {sentence!r}")
    words = [r"\s+".join(re.escape(word) for word in literal.split(" ")) for literal in literals]
    # a quantity: as little text as the words after it allow, never ending inside a number (1.43 is
    # not 1 before ".43") nor with closing punctuation, which is the sentence's own
    # nor holding a backtick or an opening parenthesis, which no quantity prints
    return re.compile(r"([^\s`(]+?(?:\s+[^\s`(]+?){0,5}?)(?<![),;:\]])(?![.,]?\d)".join(words))


def render(text: str, sentences: tuple[str, ...], values: dict[str, str]) -> tuple[str, set[str]]:
    """`text` with each quantity of each sentence found in it replaced by its value (left as it is where it
    reads the same, whitespace aside, so that the page's line breaks stay), and the sentences found."""
    edits, found = [], set()
    for sentence in sentences:
        names = SLOT.findall(sentence)
        for match in pattern(sentence).finditer(text):
            found.add(sentence)
            for group, name in enumerate(names, start=1):
                if " ".join(match.group(group).split()) != values[name]:
                    edits.append((match.start(group), match.end(group), values[name]))
    for start, end, value in sorted(edits, reverse=True):
        text = text[:start] + value + text[end:]
    return text, found


def check_registry(values: dict[str, str]) -> None:
    """Each sentence names registered quantities only, and every quantity is quoted by some sentence."""
    named = {name for sentence in SENTENCES for name in SLOT.findall(sentence)}
    unknown = sorted(named - set(values))
    if unknown:
        raise KeyError(
            f"sentences quote quantities no source gives: {', '.join(unknown)}; sources: {', '.join(SOURCES)}"
        )
    unquoted = sorted(set(values) - named)
    if unquoted:
        raise ValueError(f"quantities no sentence quotes: {', '.join(unquoted)}")


def page_texts(page: str, root: Path = ROOT) -> list[str]:
    """The texts sentences are found in: a Markdown page whole, a notebook's markdown cells one each."""
    text = (root / page).read_text()
    if not page.endswith(".ipynb"):
        return [text]
    return ["".join(cell["source"]) for cell in json.loads(text)["cells"] if cell["cell_type"] == "markdown"]


def rendered_page(page: str, values: dict[str, str], root: Path = ROOT) -> tuple[str, str, set[str]]:
    """A page's file as it is and as rendered, and the sentences found in it."""
    text = (root / page).read_text()
    if not page.endswith(".ipynb"):
        new, found = render(text, SENTENCES, values)
        return text, new, found
    notebook, found, changed = json.loads(text), set(), False
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"])
            new, seen = render(source, SENTENCES, values)
            found |= seen
            if new != source:
                cell["source"], changed = new.splitlines(keepends=True), True
    if not changed:
        return text, text, found
    sys.path.insert(0, str(ROOT))
    from amer_lib.clean_notebook import dumps  # the layout Jupyter writes, as the committed notebooks are

    return text, dumps(notebook), found


def rendered_pages(root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """Each page's file as it is and as rendered; fails naming a sentence found in no page."""
    values = quantities()
    check_registry(values)
    pages, found = {}, set()
    for page in (*PAGES, *NOTEBOOKS):
        text, new, seen = rendered_page(page, values, root)
        pages[page], found = (text, new), found | seen
    missing = [sentence for sentence in SENTENCES if sentence not in found]
    if missing:
        raise ValueError(
            "sentences found in no page (reworded? change the template in docs/quoted.py with the page): "
            + "; ".join(repr(sentence) for sentence in missing)
        )
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="render every quoted number into its pages")
    args = parser.parse_args(argv)
    stale = []
    for page, (text, new) in rendered_pages().items():
        if new != text:
            stale.append(page)
            if args.write:
                sys.path.insert(0, str(ROOT))
                from amer_lib.io import write_text  # atomic: a page is whole or as it was

                write_text(ROOT / page, new)
    if stale and not args.write:
        print(f"quoted numbers differ from their files in {', '.join(stale)}: python docs/quoted.py --write")
        return 1
    print(f"rendered {', '.join(stale)}" if stale else "every quoted number is its file's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
