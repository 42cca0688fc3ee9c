"""Notebook 07's scoring of fixed and adaptive numbers of query vectors."""

import numpy as np
import pytest
import torch
from conftest import notebook_config
from stand_ins import tiny_synthetic_params, tiny_wordnet_runs

from amer_lib.data.synthetic_task import MAX_TARGETS
from amer_lib.experiments.beyond import (
    lists_with_stop_head,
    scores_per_n,
    varying_runs,
    varying_task,
)
from amer_lib.experiments.real_data import run_all
from amer_lib.export import main
from amer_lib.retriever import AMERRetriever
from amer_lib.runs.run_context import RunContext
from amer_lib.runs.saved import from_pretrained, read_config
from amer_lib.runs.store import REAL_RUNS


def test_count_rows_by_hand():
    # query 0 has one target (doc 1), first in vector 0's list; query 1 has two, one first in each
    # vector's list: one vector finds all of query 0's, two find all of both
    ids = np.array([[[1, 2], [8, 9]], [[3, 4], [5, 6]]])
    scores = np.ones(ids.shape)
    gold = np.array([[[1], [-1]], [[3], [5]]])
    rows = scores_per_n(ids, scores, gold, {"told": np.array([1, 2])}, ks=(1, 2))
    by_name = {r["n"]: r for r in rows}
    assert list(by_name) == ["n = 1", "n = 2", "told"]
    assert by_name["n = 1"]["mrecall@2"] == 0.5 and by_name["n = 1"]["vectors"] == 1
    assert by_name["n = 2"]["mrecall@2"] == 1.0 and by_name["n = 2"]["vectors"] == 2
    assert by_name["told"]["mrecall@2"] == 1.0 and by_name["told"]["vectors"] == 1.5
    assert by_name["told"]["recall@1"] == pytest.approx((1 + 0.5) / 2)


def test_count_matrix_by_hand():
    from amer_lib.report.plots import count_matrix

    # m = 1: both right; m = 2: one given 2, one given 3; no input with m = 3
    matrix = count_matrix([1, 1, 2, 2], [1, 1, 2, 3], max_n=3)
    assert matrix.tolist() == [[1, 0, 0], [0, 0.5, 0.5], [0, 0, 0]]


def test_predicted_count_figure_shows_the_count_matrix_in_percent(tmp_path):
    from amer_lib.report.plots import predicted_count_figure

    fig = predicted_count_figure([1, 2, 3, 3], [1, 2, 2, 3], 3, tmp_path / "counts")
    # each row: the inputs with m targets, split by the n emitted (m = 3: one given 2, one given 3)
    cells = [text.get_text() for text in fig.axes[0].texts]
    assert cells == ["100", "0", "0", "0", "100", "0", "0", "50", "50"]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1", "2", "3"]
    assert (tmp_path / "counts.png").exists() and (tmp_path / "counts.pdf").exists()


def test_every_merge_has_a_colour_and_a_label_in_the_figures():
    from matplotlib.colors import is_color_like

    import amer_lib.beyond  # noqa: F401  (registers the merges beyond the paper)
    from amer_lib.core.merge import MERGES

    assert {"round_robin", "rrf", "max_score", "coverage", "combsum"} <= set(MERGES)
    assert all(merge.label and is_color_like(merge.color) for merge in MERGES.values())
    labels = [merge.label for merge in MERGES.values()]
    assert len(set(labels)) == len(labels)  # a figure's legend tells them apart


def test_stop_head_against_the_fixed_n_of_no_less_search_by_hand():
    from amer_lib.experiments.beyond import stop_head_against_fixed

    def row(name, vectors, scores):
        return {"n": name, "vectors": vectors, "per_input": {"mrecall@10": scores}}

    # the stop head searches 2.5 vectors on average: it is compared with n = 3, which it beats on
    # every input of both runs (p = 0), not with n = 2
    runs = [
        {"rows": [row("n = 2", 2, [0, 0]), row("n = 3", 3, [0, 0.5]), row("stop head", 2.4, [1, 1])]},
        {"rows": [row("n = 2", 2, [1, 1]), row("n = 3", 3, [0.5, 0]), row("stop head", 2.6, [1, 1])]},
    ]
    result = stop_head_against_fixed(runs, 200)
    assert result["fixed_n"] == 3 and result["stop_head"] == 100 and result["fixed"] == 25
    assert result["p_value"] == 0 and result["p_two_sided"] == 0
    # the runs are seeds: ahead in one run only, the resamples that draw the other run twice are not ahead
    runs[1]["rows"][2] = row("stop head", 2.6, [0.5, 0])
    result = stop_head_against_fixed(runs, 2000)
    assert result["p_value"] == pytest.approx(0.25, abs=0.04) and result["p_two_sided"] == 2 * result["p_value"]


@pytest.mark.slow  # 45-50 s on 2 cores
def test_an_exported_run_with_its_stop_head_asks_for_the_counts_notebook_07_scored(tmp_path):
    """Notebook 04's AMER run with the stop head notebook 07 fits on it, exported: the folder's
    n = "auto" gives each test question the count notebook 07 scored for it."""
    real_config = tiny_wordnet_runs(tmp_path, systems=["amer"])
    run_all(real_config, progress=False)
    params = notebook_config(
        "07_beyond",
        real_params=[str(REAL_RUNS.write_params(real_config, real_config.tag))],
        real_seeds=[0],
        max_n=6,
        stop_threshold=0.4,
    )
    params_file, folder = tmp_path / "params07.yaml", tmp_path / "model"
    params_file.write_text(params.to_yaml())
    main(["07_beyond", str(params_file), "--dataset", "wordnet_kinds", "--seed", "0", "--out", str(folder)])
    assert read_config(folder)["stop"] == {"threshold": 0.4, "max_n": 6} and read_config(folder)["n_queries"] == 5
    context = RunContext.of(real_config)
    scored = lists_with_stop_head(params, real_config, context, "wordnet_kinds", 0)["lists"]["test"].counts
    test = [q.question for q in context.benchmark.questions("wordnet_kinds", "test")]
    counts = AMERRetriever.from_pretrained(folder, index=real_config.prepared_dir).query_vectors(test, n="auto")[1]
    assert np.array_equal(counts, scored["stop_head"]) and len(set(counts)) > 1


def test_an_exported_varying_task_run_keeps_its_stop_heads_counts(tmp_path):
    synthetic = tiny_synthetic_params(tmp_path, 1)
    synthetic_params = tmp_path / "params.yaml"
    synthetic_params.write_text(synthetic.to_yaml())
    params = notebook_config(
        "07_beyond",
        synthetic_params=str(synthetic_params),
        synthetic_steps=3,
        results_dir=str(tmp_path / "07"),
        runs_dir=str(tmp_path / "07runs"),
    )
    [run] = varying_runs(params, synthetic, progress=False)
    params_file = tmp_path / "params07.yaml"
    params_file.write_text(params.to_yaml())  # as notebook 07 leaves it beside its figures
    main(["07_beyond", str(params_file), "--varying", "--seed", "0", "--out", str(tmp_path / "model")])
    model = from_pretrained(tmp_path / "model")
    inputs = torch.from_numpy(varying_task(synthetic).test_inputs)
    counts = model.generate_until_stop(model.prompt_from_vectors(inputs), MAX_TARGETS, 0.5)[1]
    assert counts.tolist() == run["predicted_counts"]


def test_the_chance_line_counts_before_and_after_the_correction_by_hand():
    from amer_lib.experiments.beyond import BASELINE, chance_line

    def row(system, whole, low_sim):
        return {"system": system, "whole_p_two_sided": whole, "low_sim_p_two_sided": low_sim}

    rows = [row(BASELINE, 1.0, 1.0), row("a", 0.001, 0.03), row("b", 0.04, 0.5), row("c", 0.2, 0.9)]
    # six comparisons, three below 0.05 uncorrected (0.3 expected by chance); Holm: 0.006, then 0.03 x 5 = 0.15
    assert chance_line(rows) == (
        "6 comparisons against the paper's system (whole and low-similarity sets): 3 pass two-sided p < 0.05 "
        "uncorrected, 0.3 expected by chance if none differed; 1 pass after Holm's correction across the 6"
    )


def test_the_varying_table_names_its_spread():
    from amer_lib.experiments.beyond import varying_table

    runs = [{"rows": [{"n": "n = 1", "vectors": 1, "mrecall@10": m, "mrecall@100": m}]} for m in (0.2, 0.4)]
    table = varying_table(runs)
    assert table.loc[0, "MRecall@10"] == "30.00±10.00"  # population std of 20 and 40 (ddof 0; ddof 1 gives 14.14)
    assert table.attrs["note"] == "± is the population standard deviation over the seeds' runs (numpy's ddof = 0)."
