"""The committed folders under figures/ tell one story: where a notebook reuses another's runs, its
numbers are the other's (no folder left from an older regeneration beside a newer one)."""

import csv
import json

import pytest
from conftest import ROOT

FIGURES = ROOT / "figures"


def rows(name: str) -> list[dict]:
    with open(FIGURES / name, newline="") as f:
        return list(csv.DictReader(f))


def per_seed(tag: str = "minilm_wordnet_senses+wordnet_kinds") -> dict:
    return {(r["dataset"], r["system"], r["seed"]): r for r in rows(f"04_real_data/per_seed_{tag}.csv")}


@pytest.mark.parametrize("dataset", ["wordnet_senses", "wordnet_kinds"])
def test_notebook07s_paper_system_is_notebook04s_amer(dataset):
    full = {(r["Dataset"], r["System"]): r for r in rows("04_real_data/full_results_minilm.csv")}
    amer = full[dataset, "AMER"]
    paper_n = {"wordnet_senses": 2, "wordnet_kinds": 5}[dataset]
    beyond = {(r["Dataset"], r["System"]): r for r in rows("07_beyond/beyond_real.csv")}
    paper = beyond[dataset, f"n = {paper_n} (paper), round-robin (paper)"]
    assert paper["Whole Set MRec@100"].strip("*") == amer["Whole Set MRec@100"].strip("*")
    assert paper["Low Similarity Set MRec@100"].strip("*") == amer["Low Similarity Set MRec@100"].strip("*")


def test_table3s_scheduled_sampling_row_is_notebook04s_seed0_amer():
    seeds = per_seed()
    table3 = json.loads((FIGURES / "05_ablations" / "table3_per_backbone.json").read_text())
    scheduled = [r for r in table3 if r["sampling"] == "scheduled"]
    assert len(scheduled) == 2
    for row in scheduled:
        run = seeds[row["dataset"], "amer", "0"]
        assert row["whole_mean"] == pytest.approx(float(run["whole"]), abs=1e-3)
        assert row["low_sim_mean"] == pytest.approx(float(run["low_sim"]), abs=1e-3)


@pytest.mark.parametrize(
    "folder, tag, datasets",
    [
        ("", "wordnet_senses+wordnet_kinds", ("wordnet_senses", "wordnet_kinds")),
        ("_compound", "compound_k1+compound_k2+compound_k3", ("compound_k1", "compound_k2", "compound_k3")),
        (
            "_compound_distilled",
            "compound_k1+compound_k2+compound_k3",
            ("compound_k1", "compound_k2", "compound_k3"),
        ),
    ],
)
def test_notebook06s_real_gain_is_notebook04s_amer_minus_single_query(folder, tag, datasets):
    summary = json.loads((FIGURES / f"04_real_data{folder}" / f"summary_minilm_{tag}.json").read_text())
    mean = {(r["dataset"], r["system"]): r["whole_mean"] for r in summary}
    gains = {r["data"]: float(r["gain_points"]) for r in rows(f"06_diversity_analysis{folder}/similarity_and_gain.csv")}
    for dataset in datasets:
        assert gains[dataset] == pytest.approx(mean[dataset, "amer"] - mean[dataset, "single"], abs=1e-3)


@pytest.mark.parametrize(
    "folder", ["06_diversity_analysis", "06_diversity_analysis_compound", "06_diversity_analysis_compound_distilled"]
)
def test_notebook06s_synthetic_gain_is_notebook02s_multi_setting(folder):
    synthetic = {(r["transform"], r["setting"], r["system"]): r for r in rows("02_synthetic/results.csv")}
    gains = {r["data"]: float(r["gain_points"]) for r in rows(f"{folder}/similarity_and_gain.csv")}
    for transform in ("linear", "mlp"):
        amer, single = (float(synthetic[transform, "multi", s]["mrecall@100"]) for s in ("amer", "single"))
        assert gains[f"synthetic, {transform}"] == pytest.approx(100 * (amer - single), abs=0.05)


COMPOUND_FOLDERS = ["_compound", "_compound_distilled"]


@pytest.mark.parametrize("folder", COMPOUND_FOLDERS)
def test_the_compound_notebook07s_synthetic_task_is_notebook07s(folder):
    assert rows(f"07_beyond{folder}/varying_task.csv") == rows("07_beyond/varying_task.csv")


@pytest.mark.parametrize("folder", COMPOUND_FOLDERS)
def test_the_compound_notebook07s_paper_system_is_the_compound_notebook04s_amer(folder):
    full = {r["Dataset"]: r for r in rows(f"04_real_data{folder}/full_results_minilm.csv") if r["System"] == "AMER"}
    paper = {
        r["Dataset"]: r for r in rows(f"07_beyond{folder}/beyond_real.csv") if "(paper), round-robin" in r["System"]
    }
    assert set(paper) == set(full) == {"compound_k1", "compound_k2", "compound_k3"}
    for dataset, row in paper.items():
        strip = lambda cell: cell.strip("*†")  # noqa: E731
        assert strip(row["Whole Set MRec@100"]) == strip(full[dataset]["Whole Set MRec@100"])
