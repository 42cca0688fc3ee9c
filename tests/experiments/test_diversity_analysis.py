"""Target diversity of the synthetic task and the aggregation behind Figure 5."""

import pytest
from conftest import notebook_config

from amer_lib.data.benchmark import Benchmark
from amer_lib.experiments.diversity_analysis import figure5_rows, gain_over_single, synthetic_target_similarity
from amer_lib.runs.run_context import run_facts
from amer_lib.runs.store import REAL_RUNS, real_run_name


def test_linear_targets_are_two_antipodal_pairs():
    # targets x, Ax, Bx, -Ax, -Bx: of the 10 pairs two have cosine -1 and the rest are near 0 in
    # high dimension (independent random rotations), so the same-question mean is about -0.2
    params = notebook_config(
        "02_synthetic", transforms=["linear"], dim=256, n_train=300, n_test=10, corpus_size=2000, mlp_layers=2, seed=0
    )
    [row] = synthetic_target_similarity(params, "single", n_random=2000)
    assert row["data"] == "synthetic, linear"
    assert row["same_question_cos"] == pytest.approx(-0.2, abs=0.01)
    assert row["random_pair_cos"] == pytest.approx(0.0, abs=0.01)


def test_figure5_rows_average_over_seeds():
    runs = [
        {
            "backbone": "b",
            "dataset": "d",
            "seed": s,
            "output_cos": c,
            "train_target_cos": 0.5,
            "test_target_cos": 0.4,
            "more_diverse_than_targets": f,
        }
        for s, c, f in ((0, 0.2, 1.0), (1, 0.4, 0.5))
    ]
    [row] = figure5_rows(runs)
    assert row["seeds"] == 2 and row["output_cos_mean"] == pytest.approx(0.3)
    assert row["output_cos_std"] == pytest.approx(0.1) and row["more_diverse_than_targets"] == pytest.approx(0.75)


def test_real_gains_are_macro_averaged_over_backbones(tmp_path):
    (tmp_path / "prepared").mkdir()  # the runs' benchmark: its manifest gives n for the run key
    (tmp_path / "prepared" / "manifest.json").write_text(
        '{"corpus": "c.tsv", "datasets": ["wordnet_kinds"], "n_queries": {"wordnet_kinds": 5}}'
    )
    real = []
    for backbone, single, amer in (("minilm", 40, 44), ("smollm2", 50, 65)):  # hits among 100 test questions
        params = notebook_config(
            "04_real_data",
            backbone=backbone,
            datasets=["wordnet_kinds"],
            seeds=[0],
            results_dir=str(tmp_path / backbone),
            prepared_dir=str(tmp_path / "prepared"),
        )
        for system, hits in (("single", single), ("amer", amer)):
            run = {
                "params": params.as_dict(),
                "dataset": "wordnet_kinds",
                "system": system,
                "seed": 0,
                "mrecall": [1.0] * hits + [0.0] * (100 - hits),
                "target_similarity": [0.5] * 100,
            }
            facts = run_facts(Benchmark(tmp_path / "prepared"), "wordnet_kinds", system)  # as notebook 04's runs record
            REAL_RUNS.write(params, real_run_name("wordnet_kinds", system, 0), run, facts)
        real.append(params)
    synthetic = notebook_config("02_synthetic", transforms=["linear"], results_dir=str(tmp_path / "none"), seed=0)
    gains = gain_over_single(synthetic, "multi", real)  # no synthetic runs: left out
    assert gains == {
        "wordnet_kinds": {"gain_points": pytest.approx((4 + 15) / 2), "gain_relative": pytest.approx((0.1 + 0.3) / 2)}
    }


def test_the_dose_response_figure_joins_the_compound_sets_in_order_and_leaves_out_synthetic_and_missing_gains():
    from amer_lib.report.plots import similarity_gain_figure

    rows = [
        {"data": "compound_k3", "source": "real", "gap": 0.05, "gain_points": 9.0, "gain_relative": 2.0},
        {"data": "compound_k1", "source": "real", "gap": 0.30, "gain_points": -2.0, "gain_relative": -0.1},
        {"data": "compound_k2", "source": "real", "gap": 0.12, "gain_points": 6.0, "gain_relative": 0.5},
        {"data": "wordnet_kinds", "source": "real", "gap": 0.46, "gain_points": -2.35, "gain_relative": -0.05},
        {"data": "wordnet_senses", "source": "real", "gap": 0.29, "gain_points": float("nan"), "gain_relative": 0},
        {"data": "synthetic, linear", "source": "synthetic", "gap": -0.2, "gain_points": 100.0, "gain_relative": 1},
    ]
    fig = similarity_gain_figure(rows)
    ax, relative = fig.axes
    [line] = [line for line in ax.get_lines() if len(line.get_xdata()) == 3]
    assert list(line.get_xdata()) == [0.30, 0.12, 0.05] and list(line.get_ydata()) == [-2.0, 6.0, 9.0]
    [line] = [line for line in relative.get_lines() if len(line.get_xdata()) == 3]
    assert list(line.get_ydata()) == pytest.approx([-10.0, 50.0, 200.0])  # in %
    assert sorted(t.get_text() for t in ax.texts) == [
        "WordNet kinds",
        "compound, k = 1",
        "compound, k = 2",
        "compound, k = 3",
    ]
