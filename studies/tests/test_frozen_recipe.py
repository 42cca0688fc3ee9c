"""studies/frozen/run.py: a test split is read only from a recipe committed, unmodified, before its
data existed; validation at any time. Each case in a temporary git repository, the evaluation a
stub (a notebook run is the study's, not a test's): what is checked is whether it is called."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
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


def freeze_and_commit(repo: Path, when: int | None = None) -> str:
    """The recipe frozen in the ledger and committed with it; the commit."""
    frozen.freeze(repo / "recipe.yaml")
    return commit(repo, "recipe.yaml", str(frozen.LEDGER), when=when)


def test_data_committed_before_the_recipe_is_refused_by_git(repo):
    write_data(repo)
    data_commit = commit(repo, "data/questions.jsonl")
    freeze_and_commit(repo)
    with pytest.raises(frozen.NotFrozen, match=rf"first committed at {data_commit[:10]}, not after the recipe's"):
        frozen.run(repo / "recipe.yaml", "test", Stub())


def test_data_committed_with_the_recipe_is_refused(repo):
    write_data(repo)
    frozen.freeze(repo / "recipe.yaml")
    commit(repo, "recipe.yaml", str(frozen.LEDGER), "data/questions.jsonl")
    with pytest.raises(frozen.NotFrozen, match="not after the recipe's commit"):
        frozen.run(repo / "recipe.yaml", "test", Stub())


def test_a_recipe_without_a_freeze_in_its_commit_is_refused(repo):
    commit(repo, "recipe.yaml")
    write_data(repo)
    frozen.freeze(repo / "recipe.yaml")  # frozen after its commit: the ledger of the commit holds no freeze
    commit(repo, str(frozen.LEDGER))
    with pytest.raises(frozen.NotFrozen, match=r"has no freeze in the ledger of its commit .* --freeze before"):
        frozen.run(repo / "recipe.yaml", "test", Stub())


def test_a_data_file_that_existed_at_the_freeze_is_refused_however_it_is_touched(repo):
    """Issue 79: the guard checked a file outside git by its modification time, which `touch` sets;
    the freeze keeps its bytes' sha256 instead, which a touch or a copy leaves as they were."""
    path = write_data(repo)  # made before the recipe was frozen
    freeze_and_commit(repo)
    later = time.time() + HOUR
    os.utime(path, (later, later))
    stub = Stub()
    with pytest.raises(frozen.NotFrozen, match=r"holds the bytes it held when the recipe was frozen .* a touch"):
        frozen.run(repo / "recipe.yaml", "test", stub)
    path.write_bytes(b"abd")  # made again: other bytes
    assert frozen.run(repo / "recipe.yaml", "test", stub)["data"][0]["at_freeze"] == ABC_SHA256
    assert stub.calls == ["test"]


def test_a_dirty_tree_is_refused(repo):
    (repo / "notes.md").write_text("committed\n")
    freeze_and_commit(repo)
    commit(repo, "notes.md")
    write_data(repo)
    (repo / "notes.md").write_text("changed, not committed\n")
    with pytest.raises(frozen.NotFrozen, match=r"uncommitted changes \(notes.md\): a test read runs committed"):
        frozen.run(repo / "recipe.yaml", "test", Stub())


def test_code_changed_since_the_recipe_is_refused(repo):
    (repo / "amer_lib").mkdir()
    (repo / "amer_lib" / "train.py").write_text("steps = 400\n")
    commit(repo, "amer_lib/train.py")
    recipe_commit = freeze_and_commit(repo)
    (repo / "amer_lib" / "train.py").write_text("steps = 401\n")
    commit(repo, "amer_lib/train.py")
    write_data(repo)
    with pytest.raises(frozen.NotFrozen, match=rf"the code changed since the recipe's commit {recipe_commit[:10]}"):
        frozen.run(repo / "recipe.yaml", "test", Stub())


def test_a_file_the_evaluation_opens_that_the_recipe_does_not_list_is_refused(repo):
    """FOLDOC's recipe listed the raw files, not the prepared test file notebook 04 opens."""
    prepared = repo / "results" / "prepared" / "p"
    (repo / "recipe.yaml").write_text(RECIPE.replace("steps: 400}", "steps: 400, prepared_dir: ../results/prepared/p}"))
    freeze_and_commit(repo)
    write_data(repo)
    prepared.mkdir(parents=True)
    (prepared / "foldoc_k2_test.jsonl").write_text("{}\n")
    with pytest.raises(frozen.NotFrozen, match=r"opens results/prepared/p/foldoc_k2_test.jsonl, which the recipe"):
        frozen.run(repo / "recipe.yaml", "test", Stub())


def test_the_clean_order_reads_once_logs_the_read_and_a_second_read_only_when_forced(repo):
    now = int(os.path.getmtime(repo / "recipe.yaml"))
    recipe_commit = freeze_and_commit(repo, when=now - 2 * HOUR)
    write_data(repo)  # made after the freeze, not in git: absent from the freeze
    stub = Stub()
    result = frozen.run(repo / "recipe.yaml", "test", stub)
    assert stub.calls == ["test"]
    written = json.loads((repo / "recipe_test.json").read_text())
    assert written == result and written["reads"] == 1
    assert written["recipe"] == {"path": "recipe.yaml", "commit": recipe_commit, "time": now - 2 * HOUR} | {
        "state": "committed"
    }
    assert written["data"][0] == {
        "path": "data/questions.jsonl",
        "sha256": ABC_SHA256,
        "check": "freeze",
        "at_freeze": None,
        "after": True,
    }
    assert written["scores"] == {"foldoc_k2/amer/0": 45.5} and written["seeds"] == [0, 1, 2, 3, 4]
    read = frozen.read_ledger(repo)[-1]
    head = git(repo, "rev-parse", "HEAD").strip()
    assert read | {"time": None} == {
        "event": "read",
        "recipe": "recipe.yaml",
        "recipe_commit": recipe_commit,
        "code_commit": head,
        "time": None,
        "files": {"data/questions.jsonl": ABC_SHA256},
        "forced": False,
    }
    commit(repo, str(frozen.LEDGER))  # the read, committed with its result
    with pytest.raises(frozen.NotFrozen, match=r"was read on the test split 1 time\(s\) already .* --force"):
        frozen.run(repo / "recipe.yaml", "test", stub)
    again = frozen.run(repo / "recipe.yaml", "test", stub, force=True)
    assert again["reads"] == 2 and frozen.read_ledger(repo)[-1]["forced"] is True
    assert stub.calls == ["test", "test"]


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
