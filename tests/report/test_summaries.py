"""Aggregation of real-data runs: seeds, low-similarity subset, relative gains, bootstrap, tables."""

import numpy as np
import pytest

from amer_lib.report.summaries import per_seed, significance_count, summary, verdicts
from amer_lib.report.tables import percent_change, real_results_table, relative_gain_table


def run(system, seed, mrecall, similarity):
    return {
        "params": {"backbone": "minilm"},
        "dataset": "d",
        "system": system,
        "seed": seed,
        "mrecall": mrecall,
        "target_similarity": similarity,
    }


SIMILARITY = [0.9, 0.1, 0.5, 0.2, 0.8, 0.3]  # low-similarity third: questions 1 and 3


def test_summary_by_hand():
    results = [
        run("single", 0, [1, 0, 1, 0, 1, 0], SIMILARITY),
        run("single", 1, [1, 0, 1, 1, 1, 0], SIMILARITY),
        run("amer", 0, [1, 1, 1, 1, 1, 0], SIMILARITY),
        run("amer", 1, [1, 1, 1, 1, 0, 0], SIMILARITY),
    ]
    single, amer = summary(results, n_resamples=2000)
    assert single["whole_mean"] == pytest.approx(100 * (3 / 6 + 4 / 6) / 2)
    assert single["whole_std"] == pytest.approx(100 * np.std([3 / 6, 4 / 6]))
    assert single["low_sim_mean"] == pytest.approx(25.0) and single["whole_delta"] == pytest.approx(0.0, abs=1e-12)
    assert amer["whole_mean"] == pytest.approx(100 * (5 / 6 + 4 / 6) / 2)
    assert amer["low_sim_mean"] == pytest.approx(100.0) and amer["low_sim_delta"] == pytest.approx(3.0)
    assert amer["whole_delta"] == pytest.approx((75 - 175 / 3) / (175 / 3))
    # low-similarity set: AMER better on both questions on every resample
    assert amer["low_sim_p"] == 0.0 and 0.0 < amer["whole_p"] < 0.5


def test_per_seed_rows_hold_each_runs_scores_by_hand():
    trained = {**run("amer", 1, [1, 1, 0, 0, 1, 0], SIMILARITY), "best_step": 200, "best_val_loss": 3.1234567}
    rows = per_seed([trained, run("single", 0, [1, 0, 1, 0, 1, 0], SIMILARITY)])
    assert rows == [
        {
            "dataset": "d",
            "system": "single",
            "seed": 0,
            "whole": 50.0,
            "low_sim": 0.0,
            "best_step": None,
            "best_val_loss": None,
        },
        {
            "dataset": "d",
            "system": "amer",
            "seed": 1,
            "whole": 50.0,
            "low_sim": 50.0,
            "best_step": 200,
            "best_val_loss": 3.123457,
        },
    ]  # low-similarity third: questions 1 and 3


def test_results_table_layout():
    results = [run("single", 0, [1, 0, 1], [0.1, 0.2, 0.3]), run("amer", 0, [1, 1, 1], [0.1, 0.2, 0.3])]
    rows = summary(results, n_resamples=500)
    table = real_results_table(rows)
    assert table["System"].tolist() == ["Single-Query", "+Query Expansion", "+Re-ranking", "AMER"]
    assert table.iloc[0]["Whole Set MRec@100"] == "66.67±0.00" and table.iloc[3]["Whole Set Δ"] == "+50.00%"
    assert table.iloc[1]["Low Similarity Set Δ"] == "not run"
    gains = relative_gain_table({"minilm": rows, "tiny": rows})
    assert gains.loc[gains["System"] == "AMER", "d (Whole Set)"].item() == "+50.00%"


def test_learning_curves_average_the_seeds_at_each_validation_step():
    from amer_lib.report.summaries import learning_curves

    def curve_run(system, seed, values):
        history = [
            {"step": 10 * (i + 1), "val_loss": 1.0 + seed, "val_mrecall": whole, "val_mrecall_low_sim": low}
            for i, (whole, low) in enumerate(values)
        ]
        return {"dataset": "d", "system": system, "seed": seed, "history": history}

    results = [
        curve_run("amer", 0, [(0.2, 0.0), (0.4, 0.1)]),
        curve_run("amer", 1, [(0.4, 0.2), (0.6, 0.3)]),
        curve_run("single", 0, [(0.5, 0.5)]),
        {"dataset": "d", "system": "single", "seed": 1, "history": [{"step": 10, "val_loss": 3.0}]},
    ]  # no curve: skipped
    rows = learning_curves(results)
    assert [(r["system"], r["step"], r["seeds"]) for r in rows] == [("single", 10, 1), ("amer", 10, 2), ("amer", 20, 2)]
    assert rows[1]["whole_mean"] == pytest.approx(30.0) and rows[1]["whole_std"] == pytest.approx(10.0)
    assert rows[2]["low_sim_mean"] == pytest.approx(20.0) and rows[2]["val_loss"] == pytest.approx(1.5)


def test_the_best_value_per_dataset_and_subset_is_bold_in_markdown_and_latex(tmp_path):
    from amer_lib.report.tables import real_results_table, write_table

    row = lambda dataset, system, whole, low: {
        "dataset": dataset, "system": system, "label": None,
        "whole_mean": whole, "whole_std": 0.0, "whole_delta": 0.0, "whole_p": 1.0,
        "low_sim_mean": low, "low_sim_std": 0.0, "low_sim_delta": 0.0, "low_sim_p": 1.0,
    }  # fmt: skip
    rows = [
        row("a", "single", 10.0, 5.0),
        row("a", "amer", 12.0, 5.0),
        row("b", "single", 30.0, 8.0),
        row("b", "amer", 20.0, 7.0),
    ]
    table = real_results_table(rows)
    write_table(table, tmp_path / "t")
    markdown = (tmp_path / "t.md").read_text().splitlines()[2:]
    # dataset a: AMER best on the whole set, a tie on the low-similarity set (both bold); b: single-query
    assert [line.count("**") // 2 for line in markdown] == [1, 0, 0, 2, 2, 0, 0, 0]
    assert "**12.00±0.00**" in markdown[3] and "**30.00±0.00**" in markdown[4] and "**8.00±0.00**" in markdown[4]
    latex = (tmp_path / "t.tex").read_text()
    assert r"\textbf{12.00±0.00}" in latex and latex.count(r"\textbf{") == 5
    assert (tmp_path / "t.csv").read_text().count("**") == 0  # plain values in the CSV


def test_a_verdict_needs_the_bootstrap_not_only_a_larger_mean():
    """Notebook 04 once printed "75.00% is ahead of single-query (+50.0%), p = 0.3168" on four test
    questions: a difference the bootstrap does not separate is now reported as not shown."""

    def row(system, delta, p):
        extra = {} if p is None else {f"{s}_{k}": v for s in ("whole", "low_sim") for k, v in p.items()}
        return {
            "dataset": "qampari",
            "system": system,
            **{f"{s}_mean": 50 * (1 + delta) for s in ("whole", "low_sim")},
            **{f"{s}_delta": delta for s in ("whole", "low_sim")},
            **extra,
        }

    lines = verdicts(
        [
            row("single", 0.0, None),
            row("amer", 0.5, {"p": 0.3168, "p_behind": 0.7}),
            row("rerank", 0.1, {"p": 0.01, "p_behind": 0.99}),
            row("x", -0.2, {"p": 0.999, "p_behind": 0.001}),  # behind: read by the test in its direction
            row("y", -0.3, {"p": 0.9, "p_behind": 0.2}),
        ]
    )
    assert [line.split(": ", 1)[1] for line in lines[::2]] == [
        "amer 75.00% is not shown to differ from single-query (+50.0%, bootstrap p = 0.3168)",
        "rerank 55.00% is ahead of single-query (+10.0%, bootstrap p = 0.0100)",
        "x 40.00% is behind single-query (-20.0%, bootstrap p = 0.0010)",
        "y 35.00% is not shown to differ from single-query (-30.0%, bootstrap p = 0.2000)",
    ]
    assert len(lines) == 8 and "low-similarity set" in lines[1]
    zero = {**row("amer", float("nan"), {"p": 1.0, "p_behind": 1.0}), "whole_mean": 0.0, "low_sim_mean": 0.0}
    assert verdicts([zero])[0].endswith(
        "amer 0.00% is not shown to differ from single-query (single-query at 0%, bootstrap p = 1.0000)"
    )
    assert percent_change(float("nan")) == "n/a" and percent_change(-0.00001) == "+0.00%"


def test_the_significance_count_counts_only_gains_the_bootstrap_separates():
    """Hand-made rows: ahead and separated; ahead but p = 0.2; behind with a small p (not a gain);
    single-query and another system left out."""

    def row(dataset, system, whole, low_sim):
        return {
            "dataset": dataset,
            "system": system,
            "whole_delta": whole[0],
            "whole_p": whole[1],
            "low_sim_delta": low_sim[0],
            "low_sim_p": low_sim[1],
        }

    rows = [
        {"dataset": "a", "system": "single"},
        row("a", "amer", (0.10, 0.01), (0.20, 0.03)),
        row("b", "amer", (0.05, 0.20), (0.30, 0.001)),
        row("c", "amer", (-0.10, 0.0001), (-0.2, 0.0001)),
        row("a", "mmr", (0.50, 0.001), (0.50, 0.001)),
    ]
    line = significance_count(rows)
    assert line.startswith("amer significantly ahead of single-query (p < 0.05) in 1/3 settings on the whole")
    assert "and 2/3 on the low-similarity sets" in line
    assert "in 1/1 settings" in significance_count(rows, system="mmr")
