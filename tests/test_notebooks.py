"""Papermill smoke runs of the notebooks with tiny parameters."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from amer_lib.core.metrics import low_similarity_subset
from amer_lib.report.record import recorded
from amer_lib.report.significance import compare

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # papermill runs: 20 s to several minutes each


def run_notebook(name, params, tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    params_file = tmp_path / "params.yaml"
    params_file.write_text(yaml.safe_dump(params))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(ROOT / "notebooks" / name),
            str(tmp_path / "out.ipynb"),
            "-f",
            str(params_file),
            "--cwd",
            str(ROOT / "notebooks"),
            "-k",
            "python3",
        ],
        capture_output=True,
        text=True,
    )


def tiny_synthetic(tmp_path):
    return {
        "settings": ["single"],
        "transforms": ["linear", "mlp"],
        "dim": 16,
        "n_train": 120,
        "n_test": 20,
        "corpus_size": 1000,
        "backbone_overrides": {"hidden_size": 32, "intermediate_size": 64},
        "steps": 4,
        "batch_size": 16,
        "eval_every": 2,
        "mlp_sweep_dims": [16, 8],
        "mlp_sweep_depths": [2],
        "results_dir": str(tmp_path / "results"),
        "runs_dir": str(tmp_path / "runs"),
        "figures_dir": str(tmp_path / "figures"),
    }


def test_synthetic_notebook_smoke(tmp_path):
    run = run_notebook("02_synthetic.ipynb", tiny_synthetic(tmp_path), tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    figures = tmp_path / "figures"
    for name in (
        "figure2.png",
        "figure3.png",
        "figure3.pdf",
        "results.csv",
        "results.md",
        "results.tex",
        "params.yaml",
        "target_geometry.csv",
    ):
        assert (figures / name).exists(), name
    results = sorted((tmp_path / "results").glob("*.json"))
    assert len(results) == 6  # 2 transforms x (single, amer, oracle)
    # the numbers the notebook records are those of the runs' results files
    for row in recorded(tmp_path / "out.ipynb")["results"]:
        run = json.loads((tmp_path / "results" / f"{row['transform']}_single_{row['system']}_seed0.json").read_text())
        for metric in ("mrecall@10", "mrecall@100", "recall@10", "recall@100"):
            assert row[metric] == pytest.approx(run["metrics"][metric], abs=1e-12), (row, metric)
    sweep = pd.read_csv(figures / "mlp_sweep.csv")
    assert sweep[["d", "training data", "system"]].values.tolist() == [
        [16, "MLP targets", "single"],
        [16, "MLP targets", "amer"],
        [16, "MLP targets", "oracle"],
        [8, "MLP targets", "single"],
        [8, "MLP targets", "amer"],
        [8, "MLP targets", "oracle"],
        [16, "linear targets (authors' bug)", "single"],
        [8, "linear targets (authors' bug)", "single"],
    ]
    main = json.loads((tmp_path / "results" / "mlp_single_amer_seed0.json").read_text())
    assert sweep.loc[1, "mrecall@10"] == round(100 * main["metrics"]["mrecall@10"], 1)  # d = 16, depth 2: the main run
    amer = json.loads((tmp_path / "results" / "linear_single_amer_seed0.json").read_text())
    assert amer["params"]["steps"] == 4 and amer["n_queries"] == 5 and "git_commit" in amer
    table = pd.read_csv(figures / "results.csv").query("transform == 'linear' and setting == 'single'")
    [row] = table[table["system"] == "amer"].to_dict("records")
    assert row["mrecall@100"] == round(amer["metrics"]["mrecall@100"], 4)  # the table is the run's, rounded
    exported = json.loads((tmp_path / "results" / "models" / "linear_single_amer_seed0" / "amer.json").read_text())
    assert exported["facts"]["test mrecall@10 (%)"] == round(100 * amer["metrics"]["mrecall@10"], 2)

    rerun = run_notebook("02_synthetic.ipynb", tiny_synthetic(tmp_path), tmp_path)  # served from the results cache
    assert rerun.returncode == 0
    assert json.loads((tmp_path / "results" / "linear_single_amer_seed0.json").read_text()) == amer


def test_unknown_parameter_stops_the_notebook(tmp_path):
    run = run_notebook("02_synthetic.ipynb", {**tiny_synthetic(tmp_path), "n_trian": 5}, tmp_path)
    assert run.returncode != 0
    assert "unknown parameter(s) ['n_trian'] for notebook 02_synthetic ('n_trian': did you mean 'n_train'?)" in (
        run.stdout + run.stderr
    )


def test_a_runs_dir_that_cannot_be_written_stops_the_notebook_before_any_training(tmp_path):
    (tmp_path / "file").write_text("")  # a folder under a file cannot be made, by root either
    params = {**tiny_synthetic(tmp_path), "runs_dir": str(tmp_path / "file" / "runs")}
    run = run_notebook("02_synthetic.ipynb", params, tmp_path)
    assert run.returncode != 0
    assert f"runs_dir '{tmp_path / 'file' / 'runs'}' cannot be written" in run.stdout + run.stderr
    assert not (tmp_path / "results").exists()  # stopped at the parameters: nothing was trained or written


def tiny_prep(tmp_path):
    return {
        "max_train": 24,
        "max_test": 12,
        "corpus_size": 400,
        "encode_batch_size": 64,
        "shard_size": 150,
        "ivfpq_factories": ["IVF4,PQ8x2"],  # 39 x 4 centroids fit the 400 documents (8x4: 624 would not)
        "ivfpq_nprobes": [1, 4],
        "device": "cpu",
        "prepared_dir": str(tmp_path / "prepared"),
        "figures_dir": str(tmp_path / "figures03"),
    }


def tiny_real(tmp_path):
    return {
        "seeds": [0, 1],
        "steps": 2,
        "batch_size": 4,
        "eval_every": 1,
        "workers": 1,
        "device": "cpu",
        "bootstrap_resamples": 200,
        "prepared_dir": str(tmp_path / "prepared"),
        "results_dir": str(tmp_path / "results04"),
        "runs_dir": str(tmp_path / "runs04"),
        "figures_dir": str(tmp_path / "figures04"),
    }


# ----- the real-data chain: 03 prepares, 01 and 04 read it, 05 and 06 reuse 02's and 04's runs -----
# Each notebook is its own test; the notebooks it depends on run once per module as fixtures, so
# a failing notebook fails its own test and the tests that need its outputs, not the rest.
@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    return tmp_path_factory.mktemp("chain")


def run_once(chain, name, params):
    """Run `name` once per module (a fixture's notebook); fail with its error output."""
    done = chain / f"{name}.done"
    if not done.exists():
        run = run_notebook(name, params, chain / name.replace(".ipynb", ""))
        assert run.returncode == 0, f"{name} failed:\n" + run.stderr[-3000:]
        done.touch()
    return chain


@pytest.fixture(scope="module")
def prepared(chain):
    return run_once(chain, "03_real_data_prep.ipynb", tiny_prep(chain))


@pytest.fixture(scope="module")
def real_runs(prepared):
    return run_once(prepared, "04_real_data.ipynb", {**tiny_real(prepared), "tuning_grid": {"lr": [1e-3, 3e-4]}})


@pytest.fixture(scope="module")
def synthetic_runs(chain):
    return run_once(chain, "02_synthetic.ipynb", tiny_synthetic(chain))


def test_real_data_prep_notebook(prepared):
    """The fixture's run of notebook 03 (run once per module; a second run here read the same
    prepared folder back and rewrote the same files)."""
    tmp_path = prepared
    figures = tmp_path / "figures03"
    table1 = (figures / "table1.csv").read_text().splitlines()
    for row in recorded(tmp_path / "03_real_data_prep" / "out.ipynb")["table1"]:  # counted again from the files
        for split in ("train", "test"):
            lines = (tmp_path / "prepared" / f"{row['dataset']}_{split}.jsonl").read_text().splitlines()
            assert row[split] == len(lines), (row, split)
    assert table1[0] == "dataset,train,test,targets" and table1[1].startswith("wordnet_senses,24,12,")
    table4 = pd.read_csv(figures / "table4.csv")
    assert table4["Dataset"].tolist() == ["wordnet_senses", "wordnet_kinds"]
    for answers, evidence in zip(table4["Answers"], table4["Evidence documents"]):  # one document per shown answer
        shown = len(answers.split(" (+")[0].split(", "))
        assert evidence.startswith("[1] ") and f"[{shown}] " in evidence and f"[{shown + 1}] " not in evidence
    sweep = pd.read_csv(figures / "ivfpq_sweep.csv")
    assert sweep["index"].tolist() == ["exact (float16 shards)", "IVF4,PQ8x2", "IVF4,PQ8x2"]
    assert sweep["recall@100_vs_exact"].iloc[0] == 1.0 and sweep["bytes_per_doc"].tolist() == [768, 2, 2]
    assert sweep["recall@100_vs_exact"].iloc[1] <= sweep["recall@100_vs_exact"].iloc[2]  # 1 of 4 lists, then all
    manifest = json.loads((tmp_path / "prepared" / "embeddings" / "minilm" / "manifest.json").read_text())
    assert manifest["complete"] and manifest["n_shards"] >= 3


def test_failure_analysis_notebook(prepared):
    tmp_path = prepared
    failure = run_notebook(
        "01_failure_analysis.ipynb",
        {
            "prepared_dir": str(tmp_path / "prepared"),
            "min_questions": 4,
            "device": "cpu",
            "results_dir": str(tmp_path / "results01"),
            "figures_dir": str(tmp_path / "figures01"),
        },
        tmp_path / "01",
    )
    assert failure.returncode == 0, failure.stderr[-3000:]
    # 2 datasets x (MiniLM, BM25), each a TREC run and a results JSON of the 12 test questions
    assert len(list((tmp_path / "results01").glob("*.trec"))) == 4
    bm25 = json.loads((tmp_path / "results01" / "wordnet_kinds_bm25.json").read_text())
    assert len(bm25["mrecall"]) == len(bm25["cosine"]) == 12 and bm25["settings"]["distance_encoder"] == "minilm"
    figure1 = json.loads((tmp_path / "figures01" / "figure1.json").read_text())
    whole = [
        r for r in figure1 if r["answers"] == "all" and r["retriever"] == "minilm" and r["dataset"] == "wordnet_kinds"
    ]
    assert [r["questions"] for r in whole] == [3, 3, 3, 3]
    assert (tmp_path / "figures01" / "figure1.png").exists() and (tmp_path / "figures01" / "trends.md").exists()
    for row in recorded(tmp_path / "01" / "out.ipynb")["overall"]:  # recomputed from each run's results file
        run = json.loads((tmp_path / "results01" / f"{row['dataset']}_{row['retriever']}.json").read_text())
        assert row["MRecall@100 (%)"] == pytest.approx(100 * np.mean(run["mrecall"]), abs=0.005)


def test_real_data_notebook(real_runs):
    tmp_path = real_runs
    results = tmp_path / "results04"
    # 2 datasets x (single, AMER, query expansion, re-ranking) x 2 seeds
    assert len(list(results.glob("*.json"))) == len(list(results.glob("*.trec"))) == 2 * 4 * 2
    rerank = json.loads((results / "wordnet_senses_rerank_seed0.json").read_text())
    assert rerank["mmr_lambda"] in (0.5, 0.75, 0.9) and len(rerank["validation_mrecall"]) == 3
    table = (tmp_path / "figures04" / "full_results_minilm.csv").read_text()
    assert "+Re-ranking" in table and "not run" not in table
    run = json.loads((results / "wordnet_kinds_amer_seed1.json").read_text())
    assert run["n_queries"] == 5 and len(run["mrecall"]) == 12 and run["seed"] == 1
    first = (results / "wordnet_kinds_amer_seed1.trec").read_text().splitlines()[0].split()
    assert first[1] == "Q0" and first[3] == "1" and first[5] == "wordnet_kinds_amer_seed1"
    # the first run exported, and its first test question's list shown with the vector that found each document
    senses = json.loads((results / "wordnet_senses_amer_seed0.json").read_text())
    exported = json.loads((results / "models" / "wordnet_senses_amer_seed0" / "amer.json").read_text())
    assert exported["facts"]["test MRecall@100 (%)"] == round(100 * np.mean(senses["mrecall"]), 2)
    assert exported["n_queries"] == senses["n_queries"] == 2
    ranking = pd.DataFrame(recorded(tmp_path / "04_real_data" / "out.ipynb")["exported_ranking"])
    assert ranking["rank"].tolist() == list(range(1, 11)) and set(ranking["vector"]) == {1, 2}
    assert ranking["document"].is_unique  # the cosines are checked against brute force in tests/test_retriever.py
    tables = tmp_path / "figures04"
    assert (tables / "figure4.png").exists()
    curves = pd.read_csv(tables / "learning_curves_minilm_wordnet_senses+wordnet_kinds.csv")
    assert curves.groupby(["dataset", "system"])["step"].apply(list).tolist() == [[1, 2]] * 4  # eval_every 1, 2 steps
    assert (curves["seeds"] == 2).all()
    history = run["history"][-1]  # the last validation's retrieval, recomputed from the curve table
    kinds_amer = curves[(curves["dataset"] == "wordnet_kinds") & (curves["system"] == "amer") & (curves["step"] == 2)]
    seed0 = json.loads((results / "wordnet_kinds_amer_seed0.json").read_text())["history"][-1]
    assert kinds_amer["whole_mean"].item() == pytest.approx(
        50 * (history["val_mrecall"] + seed0["val_mrecall"]), abs=0.01
    )
    assert (tables / "learning_curves_minilm_wordnet_senses+wordnet_kinds.png").exists()
    per_seed = pd.read_csv(tables / "per_seed_minilm_wordnet_senses+wordnet_kinds.csv")
    assert len(per_seed) == 2 * 4 * 2  # every run, baselines included
    [row] = per_seed.query("dataset == 'wordnet_kinds' and system == 'amer' and seed == 1").to_dict("records")
    assert row["whole"] == round(100 * np.mean(run["mrecall"]), 4) and row["best_step"] == run["best_step"]
    assert row["best_val_loss"] == round(run["best_val_loss"], 6)
    table = (tables / "full_results_minilm.md").read_text()
    assert "| wordnet_kinds | +PRF keywords (RM3-style, no LLM) |" in table and "| wordnet_kinds | AMER |" in table
    tuning = pd.read_csv(tables / "tuning_minilm_wordnet_senses+wordnet_kinds.csv")
    assert tuning[["dataset", "lr", "steps"]].values.tolist() == [
        ["wordnet_senses", 1e-3, 2],
        ["wordnet_senses", 3e-4, 2],
        ["wordnet_kinds", 1e-3, 2],
        ["wordnet_kinds", 3e-4, 2],
    ]
    for row in tuning.to_dict("records"):  # each row: its tuned run's checkpoint of lowest validation loss
        tuned = json.loads((results / "tuning" / f"lr{row['lr']}" / f"{row['dataset']}_amer_seed0.json").read_text())
        kept = min(tuned["history"], key=lambda h: h["val_loss"])
        assert row["best_step"] == kept["step"] == tuned["best_step"]
        assert row["val_mrecall"] == round(100 * kept["val_mrecall"], 2) and row["val_loss"] == round(
            kept["val_loss"], 4
        )
    # the recorded summary, recomputed from the results files: mean over seeds of the per-question scores
    summary = {(r["dataset"], r["system"]): r for r in recorded(tmp_path / "04_real_data" / "out.ipynb")["summary"]}
    for dataset in ("wordnet_senses", "wordnet_kinds"):
        runs = {
            s: [json.loads((results / f"{dataset}_{s}_seed{k}.json").read_text()) for k in (0, 1)]
            for s in ("single", "amer")
        }
        low = low_similarity_subset(np.array(runs["single"][0]["target_similarity"]))
        for system, seeds in runs.items():
            scores = np.array([r["mrecall"] for r in seeds])
            assert summary[dataset, system]["whole_mean"] == pytest.approx(100 * scores.mean(), abs=1e-9)
            assert summary[dataset, system]["low_sim_mean"] == pytest.approx(100 * scores[:, low].mean(), abs=1e-9)
        single, amer = (100 * np.mean([r["mrecall"] for r in runs[s]]) for s in ("single", "amer"))
        expected = (amer - single) / single if single else float("nan")
        assert summary[dataset, "amer"]["whole_delta"] == pytest.approx(expected, abs=1e-9, nan_ok=True)
        single_scores, amer_scores = (np.array([r["mrecall"] for r in runs[s]]) for s in ("single", "amer"))
        resamples = yaml.safe_load((results / "params_minilm_wordnet_senses+wordnet_kinds.yaml").read_text())
        test = compare(single_scores, amer_scores, resamples["bootstrap_resamples"], 0)
        assert summary[dataset, "amer"]["whole_p"] == test.p_ahead  # paired over seeds (by seed) and questions
        assert summary[dataset, "amer"]["whole_p_two_sided"] == test.p
    table2 = (tables / "table2.csv").read_text()
    assert "+PRF keywords (RM3-style, no LLM)" in table2 and "not run" not in table2
    # the written TREC runs and qrels, read by ir_measures as the README shows, give the library's Recall@100
    # (WordNet answers have one gold document each, so answer recall is document recall)
    for dataset, system in (("wordnet_senses", "amer"), ("wordnet_kinds", "single")):
        qrels = tmp_path / "prepared" / "qrels" / f"{dataset}_test.qrels"
        trec = results / f"{dataset}_{system}_seed0.trec"
        printed = subprocess.run(
            [str(Path(sys.executable).parent / "ir_measures"), str(qrels), str(trec), "R@100"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        recall = json.loads((results / f"{dataset}_{system}_seed0.json").read_text())["recall"]
        assert printed[0] == "R@100" and float(printed[1]) == pytest.approx(np.mean(recall), abs=1e-4)


def test_ablations_notebook(real_runs, synthetic_runs):
    tmp_path = real_runs
    ablations = run_notebook(
        "05_ablations.ipynb",
        {
            "synthetic_params": str(tmp_path / "results" / "params.yaml"),
            "real_params": [str(tmp_path / "results04" / "params_minilm_wordnet_senses+wordnet_kinds.yaml")],
            "synthetic_setting": "single",
            "real_seeds": [1],
            "vector_counts": [1, 3, 6],
            "bootstrap_resamples": 100,
            "results_dir": str(tmp_path / "results05"),
            "runs_dir": str(tmp_path / "runs05"),
            "figures_dir": str(tmp_path / "figures05"),
        },
        tmp_path / "05",
    )
    assert ablations.returncode == 0, ablations.stderr[-3000:]
    figures05 = tmp_path / "figures05"
    table3 = pd.read_csv(figures05 / "table3.csv", keep_default_na=False)
    detail = json.loads((figures05 / "table3_per_backbone.json").read_text())
    assert table3["System"].tolist() == [
        "AMER (scheduled sampling)",
        "AMER (always predicted)",
        "AMER (teacher forcing only)",
    ]
    for row in detail:  # one backbone: Table 3's macro-average is its own gain
        column = f"{row['dataset']} (Whole Set)"
        assert table3.loc[table3["System"] == row["label"], column].item() == f"{100 * row['whole_delta']:+.2f}%"
    for label in table3["System"]:
        assert label in (figures05 / "sampling_synthetic.md").read_text()
    # the scheduled runs were notebook 04's and 02's; only the two other modes were trained here
    tag = "minilm_wordnet_senses+wordnet_kinds"
    assert sorted(p.name for p in (tmp_path / "results05").iterdir()) == [
        f"real_{tag}_predicted",
        f"real_{tag}_teacher",
        "synthetic_predicted",
        "synthetic_teacher",
    ]
    sweep = json.loads((figures05 / "vector_count_merge.json").read_text())
    assert len(sweep) == 3 * 3 * 3  # (synthetic + 2 datasets) x 3 counts x 3 merges
    assert (figures05 / "vector_count_merge.png").exists()


def test_diversity_notebook(real_runs, synthetic_runs):
    tmp_path = real_runs
    run = json.loads((tmp_path / "results04" / "wordnet_kinds_amer_seed1.json").read_text())
    diversity = run_notebook(
        "06_diversity_analysis.ipynb",
        {
            "real_params": [str(tmp_path / "results04" / "params_minilm_wordnet_senses+wordnet_kinds.yaml")],
            "synthetic_params": str(tmp_path / "results" / "params.yaml"),
            "synthetic_setting": "single",
            "seeds": [0, 1],
            "random_pairs": 500,
            "figures_dir": str(tmp_path / "figures06"),
        },
        tmp_path / "06",
    )
    assert diversity.returncode == 0, diversity.stderr[-3000:]
    figures06 = tmp_path / "figures06"
    outputs = json.loads((figures06 / "output_similarity.json").read_text())
    assert [(r["dataset"], r["seed"]) for r in outputs] == [
        ("wordnet_senses", 0),
        ("wordnet_senses", 1),
        ("wordnet_kinds", 0),
        ("wordnet_kinds", 1),
        ("synthetic, linear", 0),
        ("synthetic, mlp", 0),
    ]  # notebook 02's AMER runs as the reference
    for r in outputs[:4]:
        assert len(r["per_question_output_cos"]) == 12
        assert r["output_cos"] == pytest.approx(np.mean(r["per_question_output_cos"]))
    assert len(outputs[-1]["per_question_output_cos"]) == 20  # the tiny synthetic task's test inputs
    similarity = (figures06 / "similarity_and_gain.csv").read_text()
    for source in ("synthetic, linear", "synthetic, mlp", "wordnet_senses", "wordnet_kinds"):
        assert source in similarity
    assert (figures06 / "figure5.png").exists() and (figures06 / "figure6.png").exists()
    figure6 = pd.read_csv(figures06 / "figure6_data.csv")
    record = {r["data"]: r for r in recorded(tmp_path / "06" / "out.ipynb")["figure6"]}
    for row in figure6.itertuples():  # the table is the recorded values, rounded
        assert row.same_question_cos == pytest.approx(record[row.data]["same_question_cos"], abs=0.0005)
        assert row.random_pair_cos == pytest.approx(record[row.data]["random_pair_cos"], abs=0.0005)
    assert ((figure6["same_question_distance"] - (1 - figure6["same_question_cos"])).abs() <= 0.0015).all()
    seen = json.loads((figures06 / "seen_and_unseen.json").read_text())
    assert len(seen) == 2 * 2 * 2 * 2  # datasets x seeds x systems x (train, test)
    kinds = {(r["system"], r["questions"]): r for r in seen if r["dataset"] == "wordnet_kinds" and r["seed"] == 1}
    # the test split's MRecall@100 is what notebook 04 recorded for the same checkpoint
    assert kinds["amer", "test"]["mrecall"] == pytest.approx(sum(run["mrecall"]) / len(run["mrecall"]))
    assert (
        len(kinds["amer", "train"]["per_vector_recall"]) == 5 and len(kinds["single", "test"]["per_vector_recall"]) == 1
    )
    assert kinds["amer", "test"]["n_questions"] == 12 and kinds["amer", "train"]["n_questions"] > 12


def test_beyond_notebook(real_runs, synthetic_runs):
    tmp_path = real_runs
    beyond = run_notebook(
        "07_beyond.ipynb",
        {
            "synthetic_params": str(tmp_path / "results" / "params.yaml"),
            "synthetic_steps": 4,
            "real_params": [str(tmp_path / "results04" / "params_minilm_wordnet_senses+wordnet_kinds.yaml")],
            "real_seeds": [0, 1],
            "max_n": 5,  # kinds' n
            "merges": ["round_robin", "coverage", "combsum"],
            "bootstrap_resamples": 200,
            "results_dir": str(tmp_path / "results07"),
            "runs_dir": str(tmp_path / "runs07"),
            "figures_dir": str(tmp_path / "figures07"),
        },
        tmp_path / "07",
    )
    assert beyond.returncode == 0, beyond.stderr[-3000:]
    figures07, values = tmp_path / "figures07", recorded(tmp_path / "07" / "out.ipynb")
    # the varying task: every fixed n of its 8, the stop head's and the told m, as the table prints them
    varying = pd.read_csv(figures07 / "varying_task.csv")
    assert varying["n"].tolist() == [f"n = {n}" for n in range(1, 9)] + ["stop head", "true m (told)"]
    assert varying["n"].tolist() == [r["n"] for r in values["varying_task"]]
    varying_runs = [json.loads(p.read_text()) for p in sorted((tmp_path / "results07").rglob("*.json"))]
    varying_runs = [r for r in varying_runs if "predicted_counts" in r]
    true = np.concatenate([r["true_counts"] for r in varying_runs])
    predicted = np.concatenate([r["predicted_counts"] for r in varying_runs])
    assert len(varying_runs) >= 1 and values["varying_stop_accuracy"] == {
        "exact": pytest.approx(np.mean(true == predicted)),
        "within_one": pytest.approx(np.mean(np.abs(true - predicted) <= 1)),
    }
    # the real benchmark: the paper's system is notebook 04's AMER, read back score for score
    assert values["reproduces_notebook04"] is True
    rows = {(r["dataset"], r["system"]): r for r in values["beyond_real"]}
    for seed_count, dataset in ((2, "wordnet_senses"), (2, "wordnet_kinds")):
        stored = [
            json.loads((tmp_path / "results04" / f"{dataset}_amer_seed{s}.json").read_text()) for s in range(seed_count)
        ]
        paper = rows[dataset, "paper/round_robin"]
        assert paper["whole_mean"] == pytest.approx(100 * np.mean([np.mean(r["mrecall"]) for r in stored]))
        assert paper["vectors"] == stored[0]["n_queries"]
        for n in range(1, 6):
            assert rows[dataset, f"n{n}/round_robin"]["vectors"] == n
        for mode in ("stop_head", "similarity", "true_m"):
            assert 1 <= rows[dataset, f"{mode}/combsum"]["vectors"] <= 5
    table = pd.read_csv(figures07 / "beyond_real.csv")
    assert table.loc[0, "Whole Set Δ"] == "+0.00%" and "Vectors" in table.columns
    every = pd.read_csv(figures07 / "beyond_real_every_merge.csv")
    assert len(every) == 2 * (5 + 4 * 3)  # datasets x (fixed n + n modes x merges)
    for name in ("varying_predicted_n", "beyond_cost_real", "beyond_cost_synthetic"):
        assert (figures07 / f"{name}.png").exists()
    models = tmp_path / "results07" / "models"
    assert sorted(p.name for p in models.iterdir()) == [
        "varying_linear_amer_seed0",
        "wordnet_senses_amer_stop_head_seed0",
    ]
    exported = json.loads((models / "wordnet_senses_amer_stop_head_seed0" / "amer.json").read_text())
    assert exported["stop"] == {"threshold": 0.5, "max_n": 5} and exported["n_queries"] == 2


COMPOUND_DATASETS = ["compound_k1", "compound_k2"]


@pytest.fixture(scope="module")
def compound_runs(tmp_path_factory):
    """Notebook 03 prepares a tiny compound benchmark (k = 1 and 2), notebook 04 trains on it."""
    folder = tmp_path_factory.mktemp("compound")
    prep = {**tiny_prep(folder), "source": "compound", "compound_ks": [1, 2], "corpus_size": 800, "max_train": 40}
    run_once(folder, "03_real_data_prep.ipynb", prep)
    return run_once(folder, "04_real_data.ipynb", {**tiny_real(folder), "datasets": COMPOUND_DATASETS, "baselines": []})


def test_the_compound_notebooks_record_the_oracle_comparison_their_runs_give(compound_runs):
    """Notebook 04 on compound_k1 and k2 records the oracle comparison and the vector roles: each
    recorded mean is the mean of the run files it reads (the oracle's included), and the table
    prints them."""
    tmp_path = compound_runs
    values = recorded(tmp_path / "04_real_data" / "out.ipynb")
    rows = {(r["dataset"], r["system"]): r for r in values["compound_oracle"]}
    systems = ("single", "amer", "decomposition_oracle", "teacher_decomposition")
    assert set(rows) == {(d, s) for d in COMPOUND_DATASETS for s in systems}
    for (dataset, system), row in rows.items():
        seeded = [f"{dataset}_{system}_seed{s}" for s in (0, 1)]
        names = [f"{dataset}_{system}"] if system == "teacher_decomposition" else seeded  # the teacher: seed-free
        runs = [json.loads((tmp_path / "results04" / f"{name}.json").read_text()) for name in names]
        assert row["seeds"] == len(runs)
        for metric in ("mrecall", "recall", "mrecall_10"):
            assert row[f"{metric}_mean"] == pytest.approx(100 * np.mean([np.mean(r[metric]) for r in runs]))
    k1_single, k1_oracle = rows["compound_k1", "single"], rows["compound_k1", "decomposition_oracle"]
    assert k1_oracle["mrecall_mean"] == k1_single["mrecall_mean"]  # on one component the oracle is single-query
    for dataset in COMPOUND_DATASETS:  # the teacher's decomposition, searched and merged by hand
        teacher = json.loads((tmp_path / "results04" / f"{dataset}_teacher_decomposition.json").read_text())
        assert teacher["mrecall"] == teacher_decomposition_by_hand(tmp_path / "prepared", dataset)
        amer, single = rows[dataset, "amer"], rows[dataset, "single"]
        ceilings = {s: rows[dataset, s]["mrecall_mean"] for s in ("decomposition_oracle", "teacher_decomposition")}
        better = max(ceilings, key=ceilings.get)
        assert amer["ceiling"] == better
        lead = ceilings[better] - single["mrecall_mean"]
        gained = amer["mrecall_mean"] - single["mrecall_mean"]
        if lead > 0:
            assert amer["mrecall_ceiling_share"] == pytest.approx(gained / lead)
    [roles] = values["compound_vector_roles"]
    assert roles["dataset"] == "compound_k2" and roles["seeds"] == 2
    table = pd.read_csv(tmp_path / "figures04" / "compound_oracle_minilm_compound_k1+compound_k2.csv")
    labels = ["Single-Query", "AMER", "Decomposition oracle", "Decomposition, off-the-shelf encoder"]
    assert table["System"].tolist() == labels * 2
    assert {"better ceiling", "share of better ceiling's lead, MRecall@100"} <= set(table.columns)


def teacher_decomposition_by_hand(prepared: Path, dataset: str) -> list[float]:
    """MRecall@100 per test compound of the off-the-shelf encoder on each component: every corpus
    row scored by brute force, each component's top 100 taken in turn (rank 1 of each, then rank 2,
    ..., skipping documents taken) until 100, and a compound counted when each answer has a gold
    document among them."""
    from amer_lib.beyond import compound
    from amer_lib.data.benchmark import Benchmark
    from amer_lib.data.encoders import DocumentEncoder
    from amer_lib.runs.configs import RealConfig

    benchmark = Benchmark(prepared)
    shards = benchmark.embeddings(RealConfig().encoder)
    corpus = shards.rows(np.arange(len(shards)))
    by_qid = compound.component_questions()
    scores = []
    for question in benchmark.questions(dataset, "test"):
        texts = [by_qid[qid].question for qid in compound.components_of(question)]
        lists = np.argsort(-(DocumentEncoder(RealConfig().encoder).encode_queries(texts) @ corpus.T), axis=1)[:, :100]
        merged = []
        for rank in range(100):
            merged += [int(row) for row in lists[:, rank] if row not in merged]
        found = set(merged[:100])
        scores.append(float(all(found & {shards.row_of[d] for d in docs} for docs in question.targets)))
    return scores


def test_the_distilled_compound_files_run_beside_todays(compound_runs, synthetic_runs):
    """The levers of params/*/compound_distilled.yaml on the tiny compound benchmark: notebook 04
    trains AMER with the component term, every system on fresh compounds; at k = 1 (no other
    combination) single-query repeats today's runs question for question, and the oracle (built
    on that k = 1 model) does at every k; notebooks 06 and 07 read those runs. One seed (1, beside
    today's seed 1): a second seed trained every system again and checked nothing more."""
    tmp_path = compound_runs
    lever = yaml.safe_load((ROOT / "params" / "04_real_data" / "compound_distilled.yaml").read_text())
    lever = {k: lever[k] for k in ("component_weight", "component_distance", "train_compounds")}
    folders = {"results_dir": "results04d", "runs_dir": "runs04d", "figures_dir": "figures04d"}
    distilled = {
        **tiny_real(tmp_path),
        "datasets": COMPOUND_DATASETS,
        "baselines": [],
        "seeds": [1],
        **lever,
        **{k: str(tmp_path / v) for k, v in folders.items()},
    }
    training = run_notebook("04_real_data.ipynb", distilled, tmp_path / "04d")
    assert training.returncode == 0, training.stderr[-3000:]
    run = lambda folder, name: json.loads((tmp_path / folder / f"{name}.json").read_text())
    for dataset in COMPOUND_DATASETS:
        for system in ("single", "decomposition_oracle"):
            today, beside = (
                run("results04", f"{dataset}_{system}_seed1"),
                run("results04d", f"{dataset}_{system}_seed1"),
            )
            assert beside["params"]["component_weight"] == 0
            assert beside["params"]["train_compounds"] == lever["train_compounds"] > 0
            if system == "decomposition_oracle" or dataset == "compound_k1":
                assert beside["mrecall"] == today["mrecall"]
        amer = run("results04d", f"{dataset}_amer_seed1")
        assert {k: amer["params"][k] for k in lever} == lever and lever["component_weight"] > 0
    real_params = [str(tmp_path / "results04d" / "params_minilm_compound_k1+compound_k2.yaml")]
    diversity = run_notebook(
        "06_diversity_analysis.ipynb",
        {
            "synthetic_params": str(synthetic_runs / "results" / "params.yaml"),
            "real_params": real_params,
            "synthetic_setting": "single",
            "seeds": [1],
            "random_pairs": 500,
            "figures_dir": str(tmp_path / "figures06d"),
        },
        tmp_path / "06d",
    )
    assert diversity.returncode == 0, diversity.stderr[-3000:]
    outputs = json.loads((tmp_path / "figures06d" / "output_similarity.json").read_text())
    assert [(r["dataset"], r["seed"]) for r in outputs][:2] == [(d, 1) for d in COMPOUND_DATASETS]
    seen = json.loads((tmp_path / "figures06d" / "seen_and_unseen.json").read_text())
    [k2] = [
        r for r in seen if (r["dataset"], r["system"], r["seed"], r["questions"]) == ("compound_k2", "amer", 1, "test")
    ]
    assert k2["mrecall"] == pytest.approx(np.mean(run("results04d", "compound_k2_amer_seed1")["mrecall"]))
    beyond = run_notebook(
        "07_beyond.ipynb",
        {
            "synthetic_params": str(synthetic_runs / "results" / "params.yaml"),
            "synthetic_steps": 4,
            "real_params": real_params,
            "real_seeds": [1],
            "max_n": 4,
            "bootstrap_resamples": 200,
            "results_dir": str(tmp_path / "results07d"),
            "runs_dir": str(tmp_path / "runs07d"),
            "figures_dir": str(tmp_path / "figures07d"),
        },
        tmp_path / "07d",
    )
    assert beyond.returncode == 0, beyond.stderr[-3000:]
    values = recorded(tmp_path / "07d" / "out.ipynb")
    assert values["reproduces_notebook04"] is True  # the paper's system is the distilled AMER, read back


def test_notebooks_open_unchanged():
    """Each notebook is stored as nbformat writes it (JupyterLab shows no unsaved change on opening)
    and every cell has an id of its own (no MissingIDFieldWarning)."""
    import nbformat

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        raw = path.read_text()
        notebook = nbformat.reads(raw, as_version=4)
        ids = [cell.get("id") for cell in json.loads(raw)["cells"]]
        assert None not in ids and len(set(ids)) == len(ids), path.name
        assert nbformat.writes(notebook) + "\n" == raw, f"{path.name} is not stored as nbformat writes it"
