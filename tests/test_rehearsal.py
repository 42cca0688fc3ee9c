"""Dress rehearsal of every paper parameter file: each notebook runs from the file under
`params/` exactly as a GPU user passes it (`papermill ... -f params/<notebook>/<file>.yaml`), then a
second file of substitutions only: sizes and steps made tiny, the backbone a local folder holding
a tiny Llama / Qwen3 with SmolLM2's tokenizer and the Llama-3.2 chat template, the encoders MiniLM,
GPT-4.1-mini an OpenAI-compatible server on 127.0.0.1, `device: cpu`, and the output folders in a
temporary directory. LoRA, the paper's matching and summed loss, MMR by the document encoder, search depth 500
and the tuning grid's selection run as the files say, and so does the GPU's precision:
`mixed_precision: true` is kept, so the LoRA runs load their frozen weights in bfloat16 and train,
validate, generate and export under CPU bfloat16 autocast, meeting the dtypes a GPU run meets.

The notebooks form one chain, as on a GPU: 03 prepares the paper's data (stand-in files in the
published layouts, tests/rehearsal.py), 01 and the 04 files read it, 05, 06 and 07 reuse 02's and
04's runs. Each test asserts the artefacts the paper numbers, with the values its runs recorded.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from rehearsal import ChatServer, backbone_folder, paper_raw_data

from amer_lib.data.prompts import INSTRUCTION
from amer_lib.report.record import recorded
from amer_lib.report.tables import percent_change

ROOT = Path(__file__).resolve().parent.parent
PARAMS = ROOT / "params"
BACKBONES = {"llama1b": "llama", "llama3b": "llama", "llama8b": "llama", "qwen4b": "qwen3"}


def rehearse(notebook: str, paper_files: list[str], substitutions: dict, out: Path, env: dict | None = None):
    """Run `notebook` with the paper files, then the substitutions (papermill merges -f files in order)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "substitutions.yaml").write_text(yaml.safe_dump(substitutions))
    files = [arg for name in paper_files for arg in ("-f", str(PARAMS / name))]
    command = [sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{notebook}.ipynb"), str(out / "out.ipynb")]
    command += [*files, "-f", str(out / "substitutions.yaml"), "--cwd", str(ROOT / "notebooks"), "-k", "python3"]
    run = subprocess.run(command, capture_output=True, text=True, env=env)
    assert run.returncode == 0, (
        f"{notebook} with {paper_files} failed: {_error(out / 'out.ipynb')}\n{run.stderr[-2000:]}"
    )
    return recorded(out / "out.ipynb")


def _error(notebook: Path) -> str:
    """The exception a failed notebook recorded (its name and message)."""
    if not notebook.exists():
        return "(no output notebook)"
    cells = json.loads(notebook.read_text())["cells"]
    errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    return f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else "(no error recorded)"


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    """The stand-ins: backbone folders named as the registry names them, the raw data, the corpus."""
    root = tmp_path_factory.mktemp("rehearsal")
    for name, architecture in BACKBONES.items():
        backbone_folder(root / "backbones" / name, architecture)
    paper_raw_data(root / "raw", root / "chunks.jsonl", n_ambigqa=30, n_qampari=12, extra_docs=600)
    return root


@pytest.fixture(scope="module")
def prepared(stage):
    substitutions = {
        "raw_dir": str(stage / "raw"),
        "corpus_path": str(stage / "chunks.jsonl"),
        "encoder": "minilm",
        "mapping_encoders": ["minilm"],
        "encode_batch_size": 64,
        "shard_size": 400,
        "ivfpq_factories": ["IVF8,PQ8x4"],
        "device": "cpu",
        "prepared_dir": str(stage / "prepared"),
        "figures_dir": str(stage / "figures03"),
    }
    return stage, rehearse("03_real_data_prep", ["03_real_data_prep/paper.yaml"], substitutions, stage / "03")


@pytest.mark.slow
def test_03_paper(prepared):
    stage, values = prepared
    manifest = json.loads((stage / "prepared" / "manifest.json").read_text())
    assert manifest["datasets"] == ["ambigqa", "qampari"] and manifest["recipe"]["source"] == "paper"
    assert manifest["recipe"]["depth"] == 500 and manifest["n_queries"] == {"ambigqa": 2, "qampari": 5}
    for row in values["table1"]:  # Table 1 counted again from the prepared files
        for split in ("train", "test"):
            lines = (stage / "prepared" / f"{row['dataset']}_{split}.jsonl").read_text().splitlines()
            assert row[split] == len(lines) > 0, (row, split)
    test = [json.loads(line) for line in (stage / "prepared" / "qampari_test.jsonl").read_text().splitlines()]
    assert all(5 <= len(q["targets"]) <= 8 for q in test)
    assert manifest["mapping"]["qampari_dev"]["kept"] == len(test)
    # NQ-open's dev file holds every AmbigQA dev question again: the test ones leave training
    ambigqa_test = [json.loads(line) for line in (stage / "prepared" / "ambigqa_test.jsonl").open()]
    train = {json.loads(line)["question"] for line in (stage / "prepared" / "ambigqa_train.jsonl").open()}
    assert manifest["mapping"]["ambigqa_train_removed_as_test_questions"] == len(ambigqa_test)
    assert not {q["question"].lower().rstrip("?") for q in ambigqa_test} & train
    shards = json.loads((stage / "prepared" / "embeddings" / "minilm" / "manifest.json").read_text())
    assert shards["complete"] and shards["n_shards"] == 3 and shards["n_documents"] == manifest["corpus_size"]
    assert pd.read_csv(stage / "figures03" / "table4.csv")["Dataset"].tolist() == ["ambigqa", "qampari"]
    sweep = pd.read_csv(stage / "figures03" / "ivfpq_sweep.csv")
    assert sweep["nprobe"].tolist() == ["-", "16", "64", "256"]  # the paper file's nprobes


@pytest.mark.slow
def test_01_paper(prepared):
    stage, _ = prepared
    substitutions = {
        "retrievers": ["minilm", "bm25"],
        "min_questions": 4,
        "device": "cpu",
        "prepared_dir": str(stage / "prepared"),
        "results_dir": str(stage / "results01"),
        "figures_dir": str(stage / "figures01"),
    }
    values = rehearse("01_failure_analysis", ["01_failure_analysis/paper.yaml"], substitutions, stage / "01")
    test_sizes = {
        d: len((stage / "prepared" / f"{d}_test.jsonl").read_text().splitlines()) for d in ("ambigqa", "qampari")
    }
    for row in values["overall"]:  # Figure 1's overall numbers, from each run's results file
        run = json.loads((stage / "results01" / f"{row['dataset']}_{row['retriever']}.json").read_text())
        assert len(run["mrecall"]) == test_sizes[row["dataset"]]
        assert row["MRecall@100 (%)"] == pytest.approx(100 * sum(run["mrecall"]) / len(run["mrecall"]), abs=0.005)
    assert {(r["dataset"], r["retriever"]) for r in values["overall"]} == {
        (d, r) for d in ("ambigqa", "qampari") for r in ("minilm", "bm25")
    }
    assert (stage / "figures01" / "figure1.png").exists()


PAPER_RUNS = [f"{d}_{b}" for b in BACKBONES for d in ("ambigqa", "qampari")]


def real_substitutions(stage: Path, backbone: str) -> dict:
    return {
        "backbone": str(stage / "backbones" / backbone),
        "encoder": "minilm",
        "steps": 2,
        "batch_size": 4,
        "eval_every": 1,
        "bootstrap_resamples": 200,
        "device": "cpu",
        "prepared_dir": str(stage / "prepared"),
        "results_dir": str(stage / "results04" / backbone),
        "runs_dir": str(stage / "runs04" / backbone),
        "figures_dir": str(stage / "figures04"),
    }


@pytest.fixture(scope="module")
def real_runs(prepared):
    """Every notebook-04 paper file, with query expansion asked of the local chat server."""
    stage, _ = prepared
    values = {}
    with ChatServer() as base_url:
        env = {**os.environ, "AMER_QE_BASE_URL": base_url, "AMER_QE_API_KEY": "rehearsal"}
        for name in PAPER_RUNS:
            backbone = name.split("_")[1]
            files = [f"04_real_data/{name}.yaml"]
            values[name] = rehearse(
                "04_real_data", files, real_substitutions(stage, backbone), stage / "04" / name, env
            )
        for dataset in ("ambigqa", "qampari"):  # the paper's grid on top of a backbone's file, cut to 4 points
            files = [f"04_real_data/{dataset}_llama1b.yaml", f"04_real_data/tuning_{dataset}.yaml"]
            grid = {"lr": [1e-5, 1e-4], "batch_size": [4], "temperature": [0.05, 0.02], "epochs": [1]}
            substitutions = {**real_substitutions(stage, "llama1b"), "tuning_grid": grid}
            rehearse("04_real_data", files, substitutions, stage / "04" / f"tuning_{dataset}", env)
    return stage, values


@pytest.mark.slow
def test_04_paper_files(real_runs):
    """Tables 2 and 5-8 and Figure 4 from the eight paper files, each file's runs as the file asks."""
    stage, values = real_runs
    for name, recorded_values in values.items():
        dataset, backbone = name.split("_")
        paper = yaml.safe_load((PARAMS / "04_real_data" / f"{name}.yaml").read_text())
        rows = recorded_values["summary"]
        assert {r["system"] for r in rows} == {"single", "amer", "query_expansion", "rerank"}
        for row in rows:  # each mean is the runs' own per-question MRecall@100, averaged over the file's seeds
            runs = [
                json.loads((stage / "results04" / backbone / f"{dataset}_{row['system']}_seed{seed}.json").read_text())
                for seed in paper["seeds"]
            ]
            means = [100 * sum(run["mrecall"]) / len(run["mrecall"]) for run in runs]
            assert row["seeds"] == 3 and row["whole_mean"] == pytest.approx(sum(means) / 3)
            for run in runs:
                used = run["params"]
                assert used["finetune"] == "lora" and used["search_depth"] == 500 and used["mixed_precision"]
                assert not used["single_target_step"] and not used["exclude_fed_targets"] and used["lr"] == paper["lr"]
                assert used["matched_loss"] == "sum" and used["steps"] == 2  # Equation 2; steps substituted
        expansion = json.loads((stage / "results04" / backbone / f"{dataset}_query_expansion_seed0.json").read_text())
        assert expansion["label"] == "+Query Expansion (gpt-4.1-mini)" and expansion["keyword_source"] == "gpt-4.1-mini"
        rerank = json.loads((stage / "results04" / backbone / f"{dataset}_rerank_seed0.json").read_text())
        assert rerank["mmr_query"] == "encoder"  # MMR's query relevance from the document encoder, as the paper
        # the first AMER run exported with its LoRA adapters and the paper's prompt, and searched
        exported = stage / "results04" / backbone / "models" / f"{dataset}_amer_seed0"
        card = json.loads((exported / "amer.json").read_text())
        assert card["finetune"] == "lora" and (exported / "adapter" / "adapter_model.safetensors").exists()
        assert card["prompt"]["instruction"] == INSTRUCTION and "{%" in card["prompt"]["chat_template"]
        assert card["search_depth"] == 500 and card["document_encoder"] == "minilm"  # every encoder substituted
        assert card["mixed_precision"] is True  # trained, evaluated and exported in the GPU's bfloat16
    assert ChatServer.requests > 0
    for backbone, number in (("llama8b", 5), ("qwen4b", 6), ("llama3b", 7), ("llama1b", 8)):  # Tables 5-8
        table = pd.read_csv(stage / "figures04" / f"table{number}_{backbone}.csv")
        assert table["Dataset"].drop_duplicates().tolist() == ["ambigqa", "qampari"] and len(table) == 8
        assert "**" in (stage / "figures04" / f"table{number}_{backbone}.md").read_text()  # the best in bold
    table2 = pd.read_csv(stage / "figures04" / "table2.csv", keep_default_na=False)
    amer = table2.loc[table2["System"] == "AMER"].iloc[0]
    summaries = [json.loads(path.read_text()) for path in (stage / "figures04").glob("summary_*.json")]
    assert len(summaries) == 8
    for dataset in ("ambigqa", "qampari"):  # Table 2: AMER's gain averaged over the four backbones' summaries
        gains = [
            r["whole_delta"] for rows in summaries for r in rows if r["dataset"] == dataset and r["system"] == "amer"
        ]
        assert len(gains) == 4 and amer[f"{dataset} (Whole Set)"] == percent_change(sum(gains) / 4)
    assert list(table2.columns)[1:] == [
        f"{d} ({s})" for d in ("ambigqa", "qampari") for s in ("Whole Set", "Low Similarity Set")
    ]
    assert (stage / "figures04" / "figure4.png").exists()


@pytest.fixture(scope="module")
def distilled_run(real_runs):
    """The AmbigQA file with the component term, in folders of its own beside the paper file's runs."""
    stage, _ = real_runs
    substitutions = {
        **real_substitutions(stage, "llama8b"),
        "results_dir": str(stage / "results04" / "llama8b_distilled"),
        "runs_dir": str(stage / "runs04" / "llama8b_distilled"),
        "figures_dir": str(stage / "figures04_distilled"),
    }
    with ChatServer() as base_url:
        env = {**os.environ, "AMER_QE_BASE_URL": base_url, "AMER_QE_API_KEY": "rehearsal"}
        files = ["04_real_data/ambigqa_llama8b_distilled.yaml"]
        rehearse("04_real_data", files, substitutions, stage / "04" / "ambigqa_llama8b_distilled", env)
    return stage


@pytest.mark.slow
def test_04_distilled_ambigqa_file(distilled_run):
    """The paper's AmbigQA recipe plus the component term: the prepared questions carry AmbigQA's
    disambiguated questions (NQ-open's none), AMER trains with the term on them, and its losses
    differ from the paper file's AMER run of the same seed; single-query and the baselines are the
    paper's recipe."""
    stage = distilled_run
    paper = yaml.safe_load((PARAMS / "04_real_data" / "ambigqa_llama8b.yaml").read_text())
    distilled = yaml.safe_load((PARAMS / "04_real_data" / "ambigqa_llama8b_distilled.yaml").read_text())
    lever = {"component_weight": 10.0, "component_distance": "ranking"}
    different = {k for k in distilled if paper.get(k) != distilled[k]}
    assert different == {*lever, "results_dir", "runs_dir", "figures_dir"}
    train = [json.loads(line) for line in (stage / "prepared" / "ambigqa_train.jsonl").open()]
    ambigqa = [q for q in train if not q["qid"].startswith("nq-")]
    assert ambigqa and all(len(q["answer_questions"]) == len(q["answers"]) for q in ambigqa)
    assert not any("answer_questions" in q for q in train if q["qid"].startswith("nq-"))
    results = stage / "results04" / "llama8b_distilled"
    for seed in paper["seeds"]:
        amer = json.loads((results / f"ambigqa_amer_seed{seed}.json").read_text())
        assert {k: amer["params"][k] for k in lever} == lever and amer["params"]["lr"] == paper["lr"]
        assert amer["params"]["finetune"] == "lora" and amer["params"]["matched_loss"] == "sum"
        single = json.loads((results / f"ambigqa_single_seed{seed}.json").read_text())
        assert single["params"]["component_weight"] == 0  # single-query trains as the paper's
        plain = json.loads((stage / "results04" / "llama8b" / f"ambigqa_amer_seed{seed}.json").read_text())
        assert plain["params"]["component_weight"] == 0
        assert [h["val_loss"] for h in amer["history"]] != pytest.approx([h["val_loss"] for h in plain["history"]])
    assert {p.stem.split("_seed")[0] for p in results.glob("ambigqa_*_seed0.json")} == {
        f"ambigqa_{s}" for s in ("single", "amer", "query_expansion", "rerank")
    }


@pytest.mark.slow
def test_04_tuning_files(real_runs):
    """The tuning grid's selection: each point's validation MRecall@100 is its run's, at the
    checkpoint chosen by validation loss; epochs become steps over the training split."""
    stage, _ = real_runs
    for dataset in ("ambigqa", "qampari"):
        table = pd.read_csv(stage / "figures04" / f"tuning_llama1b_{dataset}.csv")
        assert len(table) == 4 and set(table["lr"]) == {1e-5, 1e-4} and set(table["temperature"]) == {0.05, 0.02}
        questions = len((stage / "prepared" / f"{dataset}_train.jsonl").read_text().splitlines())
        assert set(table["steps"]) == {(questions - max(1, round(0.1 * questions))) // 4}
        for row in table.to_dict("records"):
            point = "_".join(f"{key}{row[key]}" for key in table.columns[1:5])  # the grid's keys, in its order
            run = json.loads(
                (stage / "results04" / "llama1b" / "tuning" / point / f"{dataset}_amer_seed0.json").read_text()
            )
            chosen = next(h for h in run["history"] if h["step"] == run["best_step"])
            assert row["val_mrecall"] == pytest.approx(round(100 * chosen["val_mrecall"], 2))


def synthetic_substitutions(stage: Path, name: str) -> dict:
    return {
        "dim": 16,
        "n_train": 120,
        "n_test": 20,
        "corpus_size": 1000,
        "steps": 4,
        "batch_size": 16,
        "eval_every": 2,
        "device": "cpu",
        "results_dir": str(stage / "results02" / name),
        "runs_dir": str(stage / "runs02" / name),
        "figures_dir": str(stage / "figures02" / name),
    }


@pytest.fixture(scope="module")
def synthetic_runs(stage):
    """Notebook 02's paper files (Figure 3), the first with the Llama-architecture folder as llama1b."""
    values = {}
    llama = {"backbone": str(stage / "backbones" / "llama1b")}
    tiny = {
        "backbone_overrides": {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
        }
    }
    for name, extra in (
        ("paper_scale", llama),
        ("paper_scale_mlp3", llama),
        ("gpu_tiny_d1024", tiny),
        ("mlp_sweep", {**tiny, "mlp_sweep_dims": [16, 8], "settings": ["single"]}),
    ):
        substitutions = {**synthetic_substitutions(stage, name), **extra}
        values[name] = rehearse("02_synthetic", [f"02_synthetic/{name}.yaml"], substitutions, stage / "02" / name)
    # appendix A.5's grid on top of the paper-scale file, cut to 2 points and one setting
    grid = {"lr": [1e-4, 1e-3], "batch_size": [16], "temperature": [0.05], "epochs": [1]}
    substitutions = {**synthetic_substitutions(stage, "tuning"), **llama, "tuning_grid": grid, "settings": ["single"]}
    files = ["02_synthetic/paper_scale.yaml", "02_synthetic/tuning.yaml"]
    rehearse("02_synthetic", files, substitutions, stage / "02" / "tuning")
    return stage, values


@pytest.mark.slow
def test_02_paper_files(synthetic_runs):
    stage, values = synthetic_runs
    for name, recorded_values in values.items():
        paper = yaml.safe_load((PARAMS / "02_synthetic" / f"{name}.yaml").read_text())
        results = stage / "results02" / name
        for row in recorded_values["results"]:  # Figure 3's bars are the runs' results
            run = json.loads((results / f"{row['transform']}_{row['setting']}_{row['system']}_seed0.json").read_text())
            assert row["mrecall@10"] == pytest.approx(run["metrics"]["mrecall@10"], abs=1e-12)
            assert run["params"]["finetune"] == paper.get("finetune", "full") and run["params"]["steps"] == 4
        transforms = {row["transform"] for row in recorded_values["results"]}
        assert transforms == set(paper.get("transforms", ["linear", "mlp"]))
        assert (stage / "figures02" / name / "figure3.png").exists() and (
            stage / "figures02" / name / "figure2.png"
        ).exists()
    assert len(pd.read_csv(stage / "figures02" / "mlp_sweep" / "mlp_sweep.csv")) > 0


@pytest.mark.slow
def test_02_tuning_file(synthetic_runs):
    """Appendix A.5's grid: each point's row is its own run's, at the paper file's recipe, with
    epochs turned into steps over the 108 training inputs left after validation."""
    stage, _ = synthetic_runs
    table = pd.read_csv(stage / "figures02" / "tuning" / "tuning.csv")
    assert table[["transform", "setting", "lr", "steps"]].values.tolist() == [
        ["linear", "single", 1e-4, 6],
        ["linear", "single", 1e-3, 6],
        ["mlp", "single", 1e-4, 6],
        ["mlp", "single", 1e-3, 6],
    ]
    for row in table.to_dict("records"):
        point = "_".join(f"{key}{row[key]}" for key in table.columns[2:6])  # the grid's keys, in its order
        results = stage / "results02" / "tuning" / "tuning" / point
        run = json.loads((results / f"{row['transform']}_single_amer_seed0.json").read_text())
        assert run["params"]["matched_loss"] == "sum" and run["params"]["steps"] == row["steps"] == 6
        assert row["val_mrecall"] == pytest.approx(round(100 * run["validation_metrics"]["mrecall@100"], 2))
        assert row["best_step"] == run["best_step"]


def real_params_of(stage: Path, paper_list: list[str]) -> list[str]:
    """Notebook 04's params files of the rehearsal, in the order of a paper file's list."""
    return [str(stage / "results04" / Path(p).parent.name / Path(p).name) for p in paper_list]


@pytest.mark.slow
def test_05_paper(real_runs, synthetic_runs):
    """Table 3: scheduled sampling against always-predicted, relative to single-query, macro-averaged
    over the four backbones; the scheduled runs are notebook 04's, the predicted ones trained here."""
    stage, _ = real_runs
    paper = yaml.safe_load((PARAMS / "05_ablations" / "paper.yaml").read_text())
    substitutions = {
        "synthetic_params": str(stage / "results02" / "paper_scale" / "params.yaml"),
        "real_params": real_params_of(stage, paper["real_params"]),
        "vector_counts": [1, 2, 5],
        "bootstrap_resamples": 200,
        "results_dir": str(stage / "results05"),
        "runs_dir": str(stage / "runs05"),
        "figures_dir": str(stage / "figures05"),
    }
    values = rehearse("05_ablations", ["05_ablations/paper.yaml"], substitutions, stage / "05")
    table3 = pd.read_csv(stage / "figures05" / "table3.csv", keep_default_na=False)
    assert table3["System"].tolist() == ["AMER (scheduled sampling)", "AMER (always predicted)"]
    assert table3.to_dict("records") == values["table3"]
    detail = json.loads((stage / "figures05" / "table3_per_backbone.json").read_text())
    assert {(r["backbone"], r["dataset"]) for r in detail} >= {
        (b, d) for b in BACKBONES for d in ("ambigqa", "qampari")
    }
    for row in detail:  # scheduled sampling's row is notebook 04's AMER runs, as they were recorded
        if row["label"] == "AMER (scheduled sampling)":
            summary = json.loads((stage / "figures04" / f"summary_{row['backbone']}_{row['dataset']}.json").read_text())
            amer = next(r for r in summary if r["system"] == "amer")
            assert row["whole_mean"] == pytest.approx(amer["whole_mean"])
    trained = sorted(p.name for p in (stage / "results05").iterdir())
    assert trained == sorted(
        [f"real_{b}_{d}_predicted" for b in BACKBONES for d in ("ambigqa", "qampari")] + ["synthetic_predicted"]
    )


@pytest.mark.slow
def test_06_paper(real_runs, synthetic_runs):
    """Figures 5 and 6 over the four backbones' AMER runs (seeds 0-2) and the synthetic reference."""
    stage, _ = real_runs
    paper = yaml.safe_load((PARAMS / "06_diversity_analysis" / "paper.yaml").read_text())
    substitutions = {
        "real_params": real_params_of(stage, paper["real_params"]),
        "synthetic_params": str(stage / "results02" / "paper_scale" / "params.yaml"),
        "random_pairs": 500,
        "figures_dir": str(stage / "figures06"),
    }
    values = rehearse("06_diversity_analysis", ["06_diversity_analysis/paper.yaml"], substitutions, stage / "06")
    outputs = json.loads((stage / "figures06" / "output_similarity.json").read_text())
    real = [r for r in outputs if not r["dataset"].startswith("synthetic")]
    assert len(real) == 8 * 3  # eight backbone x dataset runs, seeds 0-2
    assert {r["dataset"] for r in outputs} >= {"ambigqa", "qampari", "synthetic, linear", "synthetic, mlp"}
    figure6 = pd.read_csv(stage / "figures06" / "figure6_data.csv")
    recorded_rows = {r["data"]: r for r in values["figure6"]}
    for row in figure6.itertuples():
        assert row.same_question_cos == pytest.approx(recorded_rows[row.data]["same_question_cos"], abs=0.0005)
    assert (stage / "figures06" / "figure5.png").exists() and (stage / "figures06" / "figure6.png").exists()


@pytest.mark.slow
def test_07_paper(real_runs, synthetic_runs):
    """Notebook 07 from its paper file: the varying task on notebook 02's paper-scale model (three
    seeds) and the stop head and merges on the Llama-8B runs of both datasets, n up to 10."""
    stage, _ = real_runs
    paper = yaml.safe_load((PARAMS / "07_beyond" / "paper.yaml").read_text())
    substitutions = {
        "synthetic_params": str(stage / "results02" / "paper_scale" / "params.yaml"),
        "synthetic_steps": 4,
        "real_params": real_params_of(stage, paper["real_params"]),
        "bootstrap_resamples": 200,
        "results_dir": str(stage / "results07"),
        "runs_dir": str(stage / "runs07"),
        "figures_dir": str(stage / "figures07"),
    }
    values = rehearse("07_beyond", ["07_beyond/paper.yaml"], substitutions, stage / "07")
    assert values["reproduces_notebook04"] is True
    rows = {(r["dataset"], r["system"]): r for r in values["beyond_real"]}
    for dataset in ("ambigqa", "qampari"):
        stored = [
            json.loads((stage / "results04" / "llama8b" / f"{dataset}_amer_seed{s}.json").read_text()) for s in range(3)
        ]
        means = [100 * sum(r["mrecall"]) / len(r["mrecall"]) for r in stored]
        assert rows[dataset, "paper/round_robin"]["whole_mean"] == pytest.approx(sum(means) / 3)
        assert all(rows[dataset, f"n{n}/round_robin"]["vectors"] == n for n in range(1, 11))
    varying = json.loads((stage / "figures07" / "varying_task.json").read_text())
    assert [run["seed"] for run in varying] == [0, 1, 2]


# the paper files each rehearsal runs, by notebook (the tuning files run on top of a backbone's)
REHEARSED = {
    "03_real_data_prep": ["03_real_data_prep/paper.yaml"],
    "01_failure_analysis": ["01_failure_analysis/paper.yaml"],
    "04_real_data": [f"04_real_data/{name}.yaml" for name in PAPER_RUNS]
    + [f"04_real_data/tuning_{d}.yaml" for d in ("ambigqa", "qampari")]
    + ["04_real_data/ambigqa_llama8b_distilled.yaml"],
    "02_synthetic": [
        f"02_synthetic/{name}.yaml"
        for name in ("paper_scale", "paper_scale_mlp3", "gpu_tiny_d1024", "mlp_sweep", "tuning")
    ],
    "05_ablations": ["05_ablations/paper.yaml"],
    "06_diversity_analysis": ["06_diversity_analysis/paper.yaml"],
    "07_beyond": ["07_beyond/paper.yaml"],
}


def test_every_paper_file_and_every_recipe_command_is_rehearsed():  # fast: reads files only
    shipped = sorted(str(p.relative_to(PARAMS)) for p in PARAMS.glob("*/*.yaml"))
    offline_variants = {
        "03_real_data_prep/wordnet_all_train.yaml",
        "03_real_data_prep/compound.yaml",
        "04_real_data/compound.yaml",
        "01_failure_analysis/compound.yaml",
        "06_diversity_analysis/compound.yaml",
        "07_beyond/compound.yaml",
        "04_real_data/compound_distilled.yaml",
        "04_real_data/compound_fair_control.yaml",
        "04_real_data/compound_component_count.yaml",
        "06_diversity_analysis/compound_distilled.yaml",
        "07_beyond/compound_distilled.yaml",
        "04_real_data/wordnet_senses_all_train.yaml",
        "04_real_data/wordnet_smollm2.yaml",
        "02_synthetic/check_figures.yaml",
        "04_real_data/check_figures.yaml",
    }  # the offline benchmark's, run by make figures' and make check-figures' notebooks
    rehearsed = {f for files in REHEARSED.values() for f in files}
    assert set(shipped) - offline_variants == rehearsed
    readme = (ROOT / "README.md").read_text()
    recipe = readme[readme.index("## The paper at scale, step by step") :]
    block = re.search(r"```shell\n(.*?)```", recipe, re.S).group(1)
    commands = [line.split() for line in block.splitlines() if line.startswith("papermill ")]
    assert len(commands) == 14
    for command in commands:
        notebook = Path(command[1]).stem
        files = [command[i + 1].removeprefix("params/") for i, arg in enumerate(command) if arg == "-f"]
        assert command[:2] == ["papermill", f"notebooks/{notebook}.ipynb"] and "--cwd" not in command
        assert all(f in REHEARSED[notebook] for f in files), command
