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
    # low-similarity set (questions 1 and 3): AMER gains 1 on both under seed 0, and under seed 1 on
    # question 1 only; no gain only when a resample draws seed 1 twice and question 3 twice, 1/4 x 1/4
    # (over the seed-averaged questions, as before seeds were resampled, it would be 0)
    assert amer["low_sim_p"] == pytest.approx(1 / 16, abs=0.02) and 0.0 < amer["whole_p"] < 0.5
    assert amer["low_sim_p_behind"] == 1.0  # never below 0
    assert amer["low_sim_p_two_sided"] == min(1.0, 2 * min(amer["low_sim_p"], amer["low_sim_p_behind"]))
    assert amer["low_sim_difference"] == pytest.approx(75.0) and (amer["low_sim_low"], amer["low_sim_high"]) == (0, 100)
    assert amer["whole_difference"] == pytest.approx(75 - 175 / 3)
    assert amer["whole_low"] < amer["whole_difference"] < amer["whole_high"]
    # two comparisons (whole, low-similarity), Holm: neither two-sided p below 0.05 after it
    assert amer["correction"] == {"method": "holm", "comparisons": 2, "alpha": 0.05}
    assert amer["low_sim_p_adjusted"] >= amer["low_sim_p_two_sided"] and amer["low_sim_mark"] == ""
    assert "whole_p" not in single and "whole_mark" not in single


def test_summary_refuses_seeds_that_do_not_pair():
    results = [
        run("single", 0, [1, 0, 1, 0, 1, 0], SIMILARITY),
        run("single", 1, [1, 0, 1, 1, 1, 0], SIMILARITY),
        run("amer", 0, [1, 1, 1, 1, 1, 0], SIMILARITY),
        run("amer", 2, [1, 1, 1, 1, 0, 0], SIMILARITY),
    ]
    with pytest.raises(ValueError, match=r"d: amer ran seeds \[0, 2\] and single seeds \[0, 1\]; the paired"):
        summary(results, n_resamples=100)
    # one run of a system (a seed-free one) is compared with every seed of the baseline
    encoder = [run("encoder", seed, [1, 1, 1, 1, 1, 1], SIMILARITY) for seed in (0, 1)]
    once, twice = (summary(results[:2] + runs, n_resamples=500)[1] for runs in (encoder[:1], encoder))
    assert once["whole_difference"] == pytest.approx(100 - 175 / 3) and once["seeds"] == 1
    assert once["whole_p"] == twice["whole_p"] and once["low_sim_p_two_sided"] == twice["low_sim_p_two_sided"]


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
        **{f"{s}_{key}": 1.0 for s in ("whole", "low_sim") for key in ("p", "p_behind", "p_two_sided")
           if system != "single"},  # the baseline is compared with nothing
        "whole_mean": whole, "whole_std": 0.0, "whole_delta": 0.0,
        "low_sim_mean": low, "low_sim_std": 0.0, "low_sim_delta": 0.0,
    }  # fmt: skip
    rows = [
        row("a", "single", 10.0, 5.0),
        row("a", "amer", 12.0, 5.0),
        row("b", "single", 30.0, 8.0),
        row("b", "amer", 20.0, 7.0),
    ]
    table = real_results_table(rows)
    write_table(table, tmp_path / "t")
    *markdown, blank, note = (tmp_path / "t.md").read_text().splitlines()[2:]
    assert blank == "" and note.startswith("± is the population standard deviation over seeds (numpy's ddof = 0). ")
    assert "two-sided p < 0.05 Holm-corrected across the table's 4 comparisons" in note  # 2 datasets x 2 subsets
    # dataset a: AMER best on the whole set, a tie on the low-similarity set (both bold); b: single-query
    assert [line.count("**") // 2 for line in markdown] == [1, 0, 0, 2, 2, 0, 0, 0]
    assert "**12.00±0.00**" in markdown[3] and "**30.00±0.00**" in markdown[4] and "**8.00±0.00**" in markdown[4]
    latex = (tmp_path / "t.tex").read_text()
    assert r"\textbf{12.00±0.00}" in latex and latex.count(r"\textbf{") == 5
    assert (tmp_path / "t.csv").read_text().count("**") == 0  # plain values in the CSV


def _two_sided(p: dict) -> dict:
    return {**p, "p_two_sided": min(1.0, 2 * min(p["p"], p["p_behind"]))}


def test_a_verdict_needs_the_corrected_bootstrap_not_only_a_larger_mean():
    """Notebook 04 once printed "75.00% is ahead of single-query (+50.0%), p = 0.3168" on four test
    questions: a difference the bootstrap does not separate is reported as not shown, and the
    two-sided p is corrected across the rows' comparisons (Holm) before it separates anything."""

    def row(system, delta, p):
        extra = {} if p is None else {f"{s}_{k}": v for s in ("whole", "low_sim") for k, v in _two_sided(p).items()}
        return {
            "dataset": "qampari",
            "system": system,
            **{f"{s}_mean": 50 * (1 + delta) for s in ("whole", "low_sim")},
            **{f"{s}_delta": delta for s in ("whole", "low_sim")},
            **extra,
        }

    rows = [
        row("single", 0.0, None),
        row("amer", 0.5, {"p": 0.3168, "p_behind": 0.7}),
        row("rerank", 0.1, {"p": 0.01, "p_behind": 0.99}),
        row("x", -0.2, {"p": 0.999, "p_behind": 0.001}),  # behind
        row("y", -0.3, {"p": 0.9, "p_behind": 0.2}),
    ]
    lines = verdicts(rows)
    # eight comparisons, two-sided p 0.002 (x) twice, 0.02 (rerank) twice, 0.4, 0.6336: Holm multiplies
    # the smallest by 8 (0.016), the third by 6 (0.12), and the rest reach 1
    assert [line.split(": ", 1)[1] for line in lines[::2]] == [
        "amer 75.00% is not shown to differ from single-query (+50.0%, two-sided p = 0.6336, holm over 8: 1.0000)",
        "rerank 55.00% is not shown to differ from single-query (+10.0%, two-sided p = 0.0200, holm over 8: 0.1200)",
        "x 40.00% is behind single-query (-20.0%, two-sided p = 0.0020, holm over 8: 0.0160)",
        "y 35.00% is not shown to differ from single-query (-30.0%, two-sided p = 0.4000, holm over 8: 1.0000)",
    ]
    assert len(lines) == 8 and "low-similarity set" in lines[1]
    uncorrected = verdicts(rows, method="none")[2].split(": ", 1)[1]
    assert uncorrected == "rerank 55.00% is ahead of single-query (+10.0%, two-sided p = 0.0200, none over 8: 0.0200)"
    zero = {**row("amer", float("nan"), {"p": 1.0, "p_behind": 1.0}), "whole_mean": 0.0, "low_sim_mean": 0.0}
    assert verdicts([zero])[0].endswith(
        "amer 0.00% is not shown to differ from single-query (single-query at 0%, two-sided p = 1.0000, "
        "holm over 2: 1.0000)"
    )
    assert percent_change(float("nan")) == "n/a" and percent_change(-0.00001) == "+0.00%"


def test_the_significance_count_counts_gains_and_losses_the_corrected_bootstrap_separates():
    """Hand-made rows: eight comparisons, two-sided p 0.0002 twice, 0.001 three times, 0.002, 0.02
    and 0.2; after Holm (x8 .. x1, running maximum) all but the 0.2 stay below 0.05. Single-query
    has no comparison; another system is counted on its own."""

    def row(dataset, system, whole, low_sim):
        cells = {"dataset": dataset, "system": system}
        for subset, (p, p_behind) in (("whole", whole), ("low_sim", low_sim)):
            cells.update({f"{subset}_{k}": v for k, v in _two_sided({"p": p, "p_behind": p_behind}).items()})
        return cells

    rows = [
        {"dataset": "a", "system": "single"},
        row("a", "amer", (0.001, 0.999), (0.01, 0.99)),
        row("b", "amer", (0.1, 0.9), (0.0005, 0.9995)),
        row("c", "amer", (0.9999, 0.0001), (0.9999, 0.0001)),
        row("a", "mmr", (0.0005, 0.9995), (0.0005, 0.9995)),
    ]
    line = significance_count(rows)
    assert line.startswith(
        "amer significantly ahead of single-query (two-sided p < 0.05, holm-corrected over 8 comparisons) in 1/3 "
        "settings on the whole test sets and 2/3 on the low-similarity sets, behind in 1/3 and 1/3"
    )
    assert "in 1/1 settings" in significance_count(rows, system="mmr")
