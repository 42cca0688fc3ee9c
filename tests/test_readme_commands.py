"""Every papermill, ir_measures, export and search command the README and docs/ show (docs/usage.md holds
the notebooks' examples), and the README's Python block, run as typed from the repository root (its
output notebooks and folders moved to a temporary one, and tiny sizes added with a last `-f` file,
which the command's own `-p` values still override).
Commands that need a paper-scale backbone must stop at once with what to fetch. Not run here: `make
test` (CI runs it), `make figures` (hours of CPU; run before each commit of figures/), pip / conda
set-up lines, the hand-started torchrun trainings and encodings (tests/runs/test_distributed.py runs
the same entries), the WordNet derivation (needs Debian's wordnet-base), `benchmarks/bench_core.py`
(timings, not behaviour), `benchmarks/bench_search.py` (timings, over notebook 04's offline runs)
and `benchmarks/bench_scale.py` (benchmarks/tests/test_bench_scale.py runs it at a tiny size)."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from conftest import documentation
from test_notebooks import tiny_real, tiny_synthetic

ROOT = Path(__file__).resolve().parent.parent
README = documentation()  # the README and docs/: every command shown there
pytestmark = pytest.mark.slow  # papermill runs


RUN_HERE = ("papermill ", "ir_measures ", "python -m amer_lib.export ", "python -m amer_lib.search ")


def readme_commands() -> list[str]:
    """The papermill, ir_measures, export and search commands in code blocks and inline code,
    whitespace normalised."""
    blocks = [line for block in re.findall(r"```bash\n(.*?)```", README, re.S) for line in block.splitlines()]
    inline = re.findall(r"`((?:papermill|ir_measures|python -m amer_lib\.(?:export|search)) [^`]+)`", README)
    found = [" ".join(c.split()) for c in blocks + inline if c.startswith(RUN_HERE)]
    return list(dict.fromkeys(found))


def readme_python() -> str:
    """The README's Python code block (using a trained AMER)."""
    [block] = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return block


TINY_PREP = {"encode_batch_size": 64, "device": "cpu", "ivfpq_factories": ["IVF4,PQ8x4"], "ivfpq_nprobes": [1, 4]}
TINY_TRAINING = {
    "steps": 2,
    "batch_size": 4,
    "eval_every": 1,
    "workers": 1,
    "device": "cpu",
    "bootstrap_resamples": 100,
}
NEEDS_WEIGHTS = {
    "paper_scale.yaml": "meta-llama/Llama-3.2-1B-Instruct",
    "-p backbone llama8b": "meta-llama/Llama-3.1-8B",
}


def run(command: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`command` from the repository root, writing under `tmp_path` only."""
    command = command.replace("../results/", f"{tmp_path}/results/").replace("../runs/", f"{tmp_path}/runs/")
    args = shlex.split(command)
    if args[0] == "python":  # the export and search commands, their folders moved
        moved = [re.sub(r"^(results|models)/", f"{tmp_path}/\\1/", a) for a in args[1:]]
        return subprocess.run([sys.executable, *moved], cwd=ROOT, capture_output=True, text=True)
    if args[0] == "ir_measures":
        args = [str(Path(sys.executable).parent / "ir_measures")] + [
            f"{tmp_path}/{a}" if a.startswith("results/") else a for a in args[1:]
        ]
        return subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    source, executed = [i for i, a in enumerate(args) if a.endswith(".ipynb")]  # options may come first
    notebook = Path(args[source]).stem
    args[executed] = str(tmp_path / args[executed])
    tiny = {
        # validation every 250 steps: the README's `-p steps 500` run validated 250 times at the tiny default
        "02_synthetic": {**tiny_synthetic(tmp_path / "02"), "transforms": ["linear"], "eval_every": 250},
        "03_real_data_prep": TINY_PREP,
        "04_real_data": {**tiny_real(tmp_path / "04"), **TINY_TRAINING},
    }[notebook]
    if "-p prepared_dir" in command:  # a command that names its folders keeps them
        tiny = {k: v for k, v in tiny.items() if not k.endswith("_dir")}
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / f"tiny_{notebook}.yaml").write_text(yaml.safe_dump(tiny))
    args = [sys.executable, "-m", *args, "-f", str(tmp_path / f"tiny_{notebook}.yaml")]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True)


def test_the_readme_shows_the_commands_this_module_runs():
    commands = readme_commands()
    assert len(commands) == 9, commands
    assert sum("-f params/02_synthetic/mlp_sweep.yaml" in c for c in commands) == 1


@pytest.mark.parametrize("needs", sorted(NEEDS_WEIGHTS))
def test_a_paper_scale_backbone_stops_at_once_with_what_to_fetch(tmp_path, needs):
    [command] = [c for c in readme_commands() if needs in c]
    design_card = "04_real_data" in command
    # the design card's command at its own device, auto (the tiny file's cpu put back: it stops before any work)
    result = run(command + " -p device auto" if design_card else command, tmp_path)
    assert result.returncode != 0
    assert f"hf download {NEEDS_WEIGHTS[needs]}" in result.stdout + result.stderr
    assert not (tmp_path / "04" / "prepared").exists() and not list(tmp_path.rglob("*.pt"))  # nothing long began
    if design_card:  # with the memory the weights will need, on the GPU they are for: LoRA, bfloat16 weights
        assert "memory preflight, wordnet_senses:\n  GPU peak" in result.stdout + result.stderr
        here = "this machine's GPU (" if torch.cuda.is_available() else "a GPU: "
        assert f"projected for {here}" in result.stdout + result.stderr
        assert f"weights {7_504_924_672 * 2 / 2**30:.1f} GiB," in result.stdout + result.stderr  # Llama-3.1-8B


def test_notebook02_commands_run(tmp_path):
    overrides, sweep = [c for c in readme_commands() if "02_synthetic" in c and "paper_scale" not in c]
    result = run(overrides, tmp_path / "p")
    assert result.returncode == 0, result.stderr[-3000:]
    params = yaml.safe_load((tmp_path / "p" / "02" / "figures" / "params.yaml").read_text())
    assert params["settings"] == ["ood"] and params["steps"] == 500  # -p with a list, read as YAML
    result = run(sweep, tmp_path / "s")
    assert result.returncode == 0, result.stderr[-3000:]
    sweep = pd.read_csv(tmp_path / "s" / "02" / "figures" / "mlp_sweep.csv")
    # the file's sweep at the tiny dims (16, 8) and depth 2: three systems per d, then the authors' bug per d
    assert sweep[["d", "depth", "training data", "system"]].values.tolist() == [
        *[[d, 2, "MLP targets", s] for d in (16, 8) for s in ("single", "amer", "oracle")],
        *[[d, 2, "linear targets (authors' bug)", "single"] for d in (16, 8)],
    ]


def test_your_own_data_from_two_files_to_results_and_ir_measures(tmp_path):
    prep, train, score = [c for c in readme_commands() if "kinds_mine" in c and not c.startswith("python")]
    for command in (prep, train):
        result = run(command, tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
    # --log-output: the run is not silent; the cells' output (the verdicts at the end) reach the terminal
    assert "significantly ahead of single-query" in result.stdout + result.stderr
    prepared = tmp_path / "results" / "prepared" / "kinds_mine"
    manifest = json.loads((prepared / "manifest.json").read_text())
    train_questions = [json.loads(line) for line in (prepared / "kinds_mine_train.jsonl").read_text().splitlines()]
    n = int(min(8, np.ceil(np.median([len(q["answers"]) for q in train_questions]))))
    assert manifest["use_titles"] is False and manifest["n_queries"] == {"kinds_mine": n} and len(train_questions) == 48
    amer = json.loads((tmp_path / "results" / "own_data" / "04" / "kinds_mine_amer_seed0.json").read_text())
    assert amer["n_queries"] == n and len(amer["mrecall"]) == 12
    table = (tmp_path / "results" / "own_data" / "figures04" / "full_results_minilm.md").read_text()
    assert "| kinds_mine | AMER |" in table
    trec = tmp_path / "results" / "own_data" / "04" / "kinds_mine_amer_seed0.trec"
    printed = run(score, tmp_path)
    assert printed.returncode == 0, printed.stderr
    measured = dict(line.split("\t") for line in printed.stdout.strip().splitlines())
    assert float(measured["R@100"]) == pytest.approx(np.mean(amer["recall"]), abs=1e-4)  # one gold document per answer
    assert float(measured["nDCG@10"]) == pytest.approx(
        plain_ndcg10(prepared / "qrels" / "kinds_mine_test.qrels", trec), abs=1e-4
    )
    use_a_trained_amer(tmp_path, amer)


def test_your_own_data_with_answer_questions_trains_with_the_component_term(tmp_path):
    """The README's own-data commands on a questions.jsonl whose every other question has
    `answer_questions` (the rest: the question itself), with `-p component_weight 10 -p
    component_distance ranking`: the prepared files keep the field, the AMER run is made with the
    term, its component vectors are the off-the-shelf encoder's of the field's texts, and its
    losses differ from the same run without the term (single-query's run is the recipe's)."""
    import torch

    from amer_lib.data.encoders import DocumentEncoder
    from amer_lib.data.questions import read_questions
    from amer_lib.runs.configs import RealConfig
    from amer_lib.runs.run_context import RunContext

    questions = [
        json.loads(line) for line in (ROOT / "tests/fixtures/own_data/questions.jsonl").read_text().splitlines()
    ]
    for record in questions[::2]:
        kind = record["question"].removeprefix("What are examples of ").rstrip("?")
        record["answer_questions"] = [f"What is {aliases[0]}, a kind of {kind}?" for aliases in record["answers"]]
    given = tmp_path / "questions.jsonl"
    given.write_text("".join(json.dumps(record) + "\n" for record in questions))
    prep, train, _ = [c for c in readme_commands() if "kinds_mine" in c and not c.startswith("python")]
    prep = prep.replace("../tests/fixtures/own_data/questions.jsonl", str(given))
    term = " -p component_weight 10 -p component_distance ranking"
    plain = train.replace("own_data/04 ", "own_data/04_plain ").replace(
        "own_data/figures04", "own_data/figures04_plain"
    )
    for command in (prep, train + term, plain):
        result = run(command, tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
    prepared = tmp_path / "results" / "prepared" / "kinds_mine"
    kept = {
        q.qid: q.answer_questions
        for name in ("train", "validation", "test")  # validation: no component question shared with training
        for q in read_questions(prepared / f"kinds_mine_{name}.jsonl")
    }
    assert kept == {r["qid"]: r.get("answer_questions") for r in questions}
    runs = {folder: tmp_path / "results" / "own_data" / folder for folder in ("04", "04_plain")}
    amer, without = (json.loads((runs[f] / "kinds_mine_amer_seed0.json").read_text()) for f in runs)
    assert (amer["params"]["component_weight"], amer["params"]["component_distance"]) == (10.0, "ranking")
    assert without["params"]["component_weight"] == 0
    assert [h["val_loss"] for h in amer["history"]] != pytest.approx([h["val_loss"] for h in without["history"]])
    params = RealConfig.from_dict(amer["params"] | {"prepared_dir": str(prepared)})
    context = RunContext.of(params)
    train_questions = context.benchmark.questions("kinds_mine", "train")
    data = context.training_data(train_questions, component_vectors=params.component_weight > 0)
    vectors, mask = data.components(torch.arange(len(train_questions)))
    encoder = DocumentEncoder("minilm")
    for row, q in enumerate(train_questions):
        texts = list(dict.fromkeys(q.answer_questions)) if q.answer_questions else [q.question]
        assert mask[row].sum() == len(texts)
        np.testing.assert_allclose(vectors[row, : len(texts)].numpy(), encoder.encode_queries(texts), atol=1e-5)


def plain_ndcg10(qrels: Path, run: Path) -> float:
    """nDCG@10 with binary gains written out: per question, sum 1 / log2(rank + 1) over the relevant
    documents in the top 10 (ranked by score, ties by document id descending, as trec_eval), over
    the same sum for the best possible top 10; the mean over the run's questions."""
    relevant: dict[str, set[str]] = {}
    for line in qrels.read_text().splitlines():
        qid, _, doc, grade = line.split()
        if int(grade) > 0:
            relevant.setdefault(qid, set()).add(doc)
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line in run.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        ranked.setdefault(qid, []).append((float(score), doc))
    values = []
    for qid, docs in ranked.items():
        top = [doc for _, doc in sorted(docs, reverse=True)[:10]]
        dcg = sum(1 / np.log2(rank + 1) for rank, doc in enumerate(top, 1) if doc in relevant.get(qid, ()))
        ideal = sum(1 / np.log2(rank + 1) for rank in range(1, min(10, len(relevant.get(qid, ()))) + 1))
        values.append(dcg / ideal if ideal else 0.0)
    return float(np.mean(values))


def use_a_trained_amer(tmp_path: Path, trained: dict) -> None:
    """The README's "Use a trained AMER": the own-data run notebook 04 exported, new plain-text
    questions searched by the command and in Python."""
    [search] = [c for c in readme_commands() if c.startswith("python -m amer_lib.search")]
    result = run(search, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    model = tmp_path / "results" / "own_data" / "04" / "models" / "kinds_mine_amer_seed0"
    card = json.loads((model / "amer.json").read_text())
    assert card["facts"]["test MRecall@100 (%)"] == round(100 * np.mean(trained["mrecall"]), 2)
    lines = [
        line.split() for line in (tmp_path / "results" / "own_data" / "new_questions.trec").read_text().splitlines()
    ]
    assert [qid for qid, *_ in lines] == ["1"] * 100 + ["2"] * 100 + [
        "4"
    ] * 100  # line numbers; the blank line 3 skipped
    assert {tag for *_, tag in lines} == {"kinds_mine_amer_seed0"}
    code = readme_python().replace('"models/', f'"{tmp_path}/models/').replace('"results/', f'"{tmp_path}/results/')
    code += "print(len(results.doc_ids[0]), sorted(set(results.vectors[0].tolist())))\n"
    printed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr[-3000:]
    assert printed.stdout.split("\n")[-2] == f"100 {list(range(1, card['n_queries'] + 1))}"  # counted from 1


def test_the_export_command_names_every_notebook_it_exports(tmp_path):
    [command] = [c for c in readme_commands() if c.endswith("--help")]
    printed = run(command, tmp_path)
    assert printed.returncode == 0 and all(n in printed.stdout for n in ("02_synthetic", "04_real_data", "07_beyond"))
