"""studies/frozen/run.py: a test split is read only from a recipe committed, unmodified, before its
data existed; validation at any time. Each case in a temporary git repository, the evaluation a
stub (a notebook run is the study's, not a test's): what is checked is whether it is called."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("frozen_run", ROOT / "studies" / "frozen" / "run.py")
frozen = importlib.util.module_from_spec(spec)
sys.modules["frozen_run"] = frozen
spec.loader.exec_module(frozen)

RECIPE = """notebook: 04_real_data
parameters: {datasets: [foldoc_k2], component_weight: 10, component_distance: ranking, steps: 400}
seeds: [0, 1, 2, 3, 4]
data: [data/questions.jsonl]
metric: mrecall
decision: AMER with the term reaches 75% of the teacher's lead at k = 2, read once
"""
ABC_SHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256 of b"abc"
HOUR = 3600


def git(repo: Path, *args: str, when: int | None = None) -> str:
    env = os.environ | {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@t"}
    if when is not None:
        env |= {"GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "data").mkdir()
    (tmp_path / "recipe.yaml").write_text(RECIPE)
    return tmp_path


def write_data(repo: Path, mtime: float | None = None) -> Path:
    path = repo / "data" / "questions.jsonl"
    path.write_bytes(b"abc")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def commit(repo: Path, *paths: str, when: int | None = None) -> str:
    git(repo, "add", *paths)
    git(repo, "commit", "-q", "-m", "x", when=when)
    return git(repo, "rev-parse", "HEAD").strip()


class Stub:
    """The evaluation: records each call and gives fixed scores."""

    def __init__(self):
        self.calls = []

    def __call__(self, recipe, split, folder):
        self.calls.append(split)
        return {"foldoc_k2/amer/0": 45.5}


def test_an_uncommitted_recipe_is_refused_and_nothing_is_evaluated(repo):
    write_data(repo)
    stub = Stub()
    with pytest.raises(frozen.NotFrozen, match=r"recipe recipe.yaml is not committed.*git add recipe.yaml"):
        frozen.run(repo / "recipe.yaml", "test", stub)
    assert stub.calls == [] and not (repo / "recipe_test.json").exists()


def test_a_recipe_modified_after_its_commit_is_refused(repo):
    now = int(os.path.getmtime(repo / "recipe.yaml"))
    commit(repo, "recipe.yaml", when=now - 2 * HOUR)
    write_data(repo)
    (repo / "recipe.yaml").write_text(RECIPE.replace("steps: 400", "steps: 1200"))
    stub = Stub()
    with pytest.raises(frozen.NotFrozen, match=r"recipe recipe.yaml differs from its commit .*git checkout -- recipe"):
        frozen.run(repo / "recipe.yaml", "test", stub)
    assert stub.calls == []


def test_data_older_than_the_recipe_is_refused_by_its_time_or_by_git(repo):
    now = int(os.path.getmtime(repo / "recipe.yaml"))
    write_data(repo, mtime=now - 3 * HOUR)  # made three hours before the recipe was committed
    commit(repo, "recipe.yaml", when=now - HOUR)
    stub = Stub()
    with pytest.raises(frozen.NotFrozen, match=r"data file data/questions.jsonl was last modified at .* before the"):
        frozen.run(repo / "recipe.yaml", "test", stub)
    other = repo / "other"  # committed data: the data's commit first, the recipe's after
    other.mkdir()
    git(other, "init", "-q")
    (other / "data").mkdir()
    write_data(other)
    data_commit = commit(other, "data/questions.jsonl", when=now - 3 * HOUR)
    (other / "recipe.yaml").write_text(RECIPE)
    commit(other, "recipe.yaml", when=now - 2 * HOUR)
    with pytest.raises(frozen.NotFrozen, match=rf"first committed at {data_commit[:10]}, not after the recipe's"):
        frozen.run(other / "recipe.yaml", "test", stub)
    assert stub.calls == []


def test_data_committed_with_the_recipe_is_refused(repo):
    write_data(repo)
    commit(repo, "recipe.yaml", "data/questions.jsonl")
    with pytest.raises(frozen.NotFrozen, match="not after the recipe's commit"):
        frozen.run(repo / "recipe.yaml", "test", Stub())


def test_the_clean_order_reads_the_test_split_and_keeps_the_commit_and_the_hashes(repo):
    now = int(os.path.getmtime(repo / "recipe.yaml"))
    recipe_commit = commit(repo, "recipe.yaml", when=now - 2 * HOUR)
    write_data(repo)  # made now, after the recipe's commit two hours ago; not in git: its time is checked
    stub = Stub()
    result = frozen.run(repo / "recipe.yaml", "test", stub)
    assert stub.calls == ["test"]
    written = json.loads((repo / "recipe_test.json").read_text())
    assert written == result
    assert written["recipe"] == {"path": "recipe.yaml", "commit": recipe_commit, "time": now - 2 * HOUR} | {
        "state": "committed"
    }
    assert written["data"][0]["sha256"] == ABC_SHA256 and written["data"][0]["check"].startswith("mtime (weak")
    assert written["scores"] == {"foldoc_k2/amer/0": 45.5} and written["seeds"] == [0, 1, 2, 3, 4]
    data_commit = commit(repo, "data/questions.jsonl", when=now - HOUR)  # committed after the recipe: git decides
    written = frozen.run(repo / "recipe.yaml", "test", stub)["data"][0]
    assert (written["check"], written["first_commit"], written["after"]) == ("git", data_commit, True)
    (repo / "data" / "questions.jsonl").write_bytes(b"abd")  # changed after its commit
    with pytest.raises(frozen.NotFrozen, match="was modified in the working tree after its commit"):
        frozen.run(repo / "recipe.yaml", "test", stub)


def test_validation_is_read_at_any_time_and_says_the_recipes_state(repo):
    write_data(repo)
    stub = Stub()
    result = frozen.run(repo / "recipe.yaml", "validation", stub)  # the recipe not even committed
    assert stub.calls == ["validation"] and result["recipe"]["state"] == "not committed"
    assert json.loads((repo / "recipe_validation.json").read_text())["split"] == "validation"


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda r: r.replace("04_real_data", "02_synthetic"), r"notebook '02_synthetic'; choose one of 04_real_data"),
        (lambda r: r.replace("steps: 400}", "steps: 400, results_dir: x}"), r"without seeds, results_dir"),
        (lambda r: r.replace("metric: mrecall\n", ""), r"missing \['metric'\]"),
        (lambda r: r + "split: test\n", r"unknown \['split'\]"),
    ],
)
def test_a_bad_recipe_names_its_field(repo, edit, message):
    (repo / "recipe.yaml").write_text(edit(RECIPE))
    with pytest.raises(ValueError, match=message):
        frozen.run(repo / "recipe.yaml", "validation", Stub())


def test_the_validation_view_holds_no_test_question(tmp_path):
    """A prepared benchmark of your own seen through the view: its test file is the validation split,
    and no file of the view names a test question."""
    from amer_lib.data.benchmark import Benchmark
    from amer_lib.data.preparation import prepare_files

    (tmp_path / "corpus.tsv").write_text("".join(f"d{i}\tpassage {i}\t\n" for i in range(5)))
    records = [{"qid": f"q{i}", "question": f"q {i}?", "answers": [["a"]], "targets": [["d1"]]} for i in range(20)]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    benchmark = prepare_files(tmp_path / "p", "mine", tmp_path / "questions.jsonl", tmp_path / "corpus.tsv")
    view = frozen.validation_view(tmp_path / "p", tmp_path / "view")
    seen = Benchmark(view)
    test_ids = {q.qid for q in benchmark.questions("mine", "test")}  # 4 of the 20 (test_fraction 0.2)
    assert [q.qid for q in seen.questions("mine", "test")] == [q.qid for q in seen.questions("mine", "validation")]
    assert len(seen.questions("mine", "validation")) == 2 and len(seen.questions("mine", "train")) == 14
    in_view = {json.loads(line)["qid"] for path in view.glob("*.jsonl") for line in path.read_text().splitlines()}
    assert len(test_ids) == 4 and in_view.isdisjoint(test_ids) and len(in_view) == 16
    assert seen.corpus_path.resolve() == (tmp_path / "corpus.tsv").resolve()


def test_scores_read_seeded_and_seed_free_runs(tmp_path):
    """`read_scores`: the metric's mean x 100 per run file, a seed-free run (the teacher's
    decomposition) under `none`, a JSON that is not a run file skipped."""
    from amer_lib.io import write_json

    write_json(tmp_path / "d_amer_seed3.json", {"dataset": "d", "system": "amer", "seed": 3, "mrecall": [1, 0, 0, 1]})
    write_json(
        tmp_path / "d_teacher_decomposition.json",
        {"dataset": "d", "system": "teacher_decomposition", "seed": None, "mrecall": [1, 1, 1, 0]},
    )  # noqa: E501
    write_json(tmp_path / "compound_rows.json", [{"dataset": "d"}])
    assert frozen.read_scores(tmp_path, "mrecall") == {"d/amer/3": 50.0, "d/teacher_decomposition/none": 75.0}
