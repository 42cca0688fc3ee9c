"""A dataset of your own (notebook 03's source "files"): questions jsonl + corpus, checked line by
line, split by seed, with its number of query vectors in the benchmark and in every run key."""

import json

import pytest

from amer_lib.data.benchmark import Benchmark
from amer_lib.data.preparation import default_n_queries, prepare_files, split_questions
from amer_lib.data.questions import DataFormatError, MultiAnswerQuestion
from amer_lib.runs.run_context import run_facts


def write_files(tmp_path, n_questions=10, answers=3, corpus_lines=None, questions=None):
    corpus = corpus_lines or ["id\ttext\ttitle"] + [f"d{i}\tpassage number {i}\tTitle {i}" for i in range(40)]
    (tmp_path / "corpus.tsv").write_text("\n".join(corpus) + "\n")
    records = questions or [
        {
            "qid": f"q{q}",
            "question": f"question {q}?",
            "answers": [[f"a{q}_{a}"] for a in range(answers)],
            "targets": [[f"d{(q + a) % 40}"] for a in range(answers)],
        }
        for q in range(n_questions)
    ]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path / "questions.jsonl", tmp_path / "corpus.tsv"


def test_a_dataset_of_your_own_is_split_by_seed_and_carries_its_number_of_vectors(tmp_path):
    questions, corpus = write_files(tmp_path)
    benchmark = prepare_files(tmp_path / "prepared", "mine", questions, corpus, test_fraction=0.3, seed=1)
    train, test = benchmark.questions("mine", "train"), benchmark.questions("mine", "test")
    assert len(test) == 3 and len(train) == 7 and {q.qid for q in train}.isdisjoint(q.qid for q in test)
    assert benchmark.n_queries("mine") == 3  # the median answer count
    again = prepare_files(tmp_path / "again", "mine", questions, corpus, test_fraction=0.3, seed=1)
    assert [q.qid for q in again.questions("mine", "test")] == [q.qid for q in test]  # the same seed, the same split
    qrels = benchmark.qrels("mine", "test").read_text().split("\n")
    assert qrels[0].split() == [test[0].qid, "0", test[0].targets[0][0], "1"]
    assert [d.full_text for d in benchmark.documents()][:1] == ["Title 0 passage number 0"]
    untitled = prepare_files(tmp_path / "untitled", "mine", questions, corpus, use_titles=False)
    assert [d.full_text for d in untitled.documents()][:1] == ["passage number 0"]
    fitted, validated = benchmark.training_split("mine", seed=4)  # no validation file: 10% of train, by seed
    assert len(validated) == 1 and sorted(q.qid for q in fitted + validated) == sorted(q.qid for q in train)
    assert benchmark.training_split("mine", seed=4) == (fitted, validated)
    assert {benchmark.training_split("mine", seed=s)[1][0].qid for s in range(10)} != {validated[0].qid}


def test_the_number_of_vectors_is_part_of_an_amer_runs_key(tmp_path):
    questions, corpus = write_files(tmp_path)
    two = prepare_files(tmp_path / "two", "mine", questions, corpus, n_queries=2)
    three = prepare_files(tmp_path / "three", "mine", questions, corpus, n_queries=3)
    assert [run_facts(b, "mine", "amer")["n_queries"] for b in (two, three)] == [2, 3]
    assert "n_queries" not in run_facts(three, "mine", "single")
    (tmp_path / "old").mkdir()  # a benchmark prepared before manifests held n: prepared again, not guessed
    (tmp_path / "old" / "manifest.json").write_text(json.dumps({"corpus": str(corpus), "datasets": ["wordnet_kinds"]}))
    with pytest.raises(ValueError, match="prepared by an older version.*03_real_data_prep"):
        Benchmark(tmp_path / "old")


def test_a_questions_file_edited_in_place_is_refused_with_its_old_and_new_digests(tmp_path):
    """Issue 78: a rerun over a questions file changed since the preparation does not keep the old
    questions in silence; a file touched but not changed, or one that is gone, keeps the prepared copy."""
    import os

    from amer_lib.packaged import sha256_of

    questions, corpus = write_files(tmp_path, n_questions=10)
    prepared = prepare_files(tmp_path / "p", "mine", questions, corpus)
    before = sha256_of(questions)
    assert prepared.manifest["inputs"]["questions"]["sha256"] == before
    os.utime(questions, ns=(1, 1))  # touched: its size and time differ from the record, its bytes do not
    assert prepare_files(tmp_path / "p", "mine", questions, corpus).questions("mine", "train")
    write_files(tmp_path, n_questions=6)  # the same path, fewer questions
    now = sha256_of(questions)
    changed = rf"{questions} \(questions\) changed since .*p was prepared from it \(sha256 {before[:12]} then, "
    with pytest.raises(ValueError, match=changed + rf"{now[:12]} now;.*Delete .*p to prepare it again"):
        prepare_files(tmp_path / "p", "mine", questions, corpus)
    questions.unlink()  # gone: the prepared copy stands for it
    assert prepare_files(tmp_path / "p", "mine", questions, corpus).identity == prepared.identity
    (tmp_path / "second").mkdir()
    second_questions, second_corpus = write_files(tmp_path / "second")
    prepare_files(tmp_path / "p2", "mine", second_questions, second_corpus)
    second_corpus.write_text("id\ttext\ttitle\n" + "".join(f"d{i}\tanother passage {i}\tT\n" for i in range(40)))
    with pytest.raises(ValueError, match=r"corpus.tsv \(corpus\) changed since .*p2 was prepared from it"):
        prepare_files(tmp_path / "p2", "mine", second_questions, second_corpus)


def test_a_benchmark_prepared_again_from_other_questions_does_not_read_back_the_old_runs(tmp_path):
    """Runs record the prepared benchmark's contents (`Benchmark.identity`): the same files prepared
    again give the same identity (the runs are read back), other questions another one, and a
    benchmark prepared before its inputs were recorded is refused by name."""
    questions, corpus = write_files(tmp_path)
    first = prepare_files(tmp_path / "a", "mine", questions, corpus)
    again = prepare_files(tmp_path / "b", "mine", questions, corpus)
    assert first.identity == again.identity and run_facts(first, "mine", "single") == run_facts(again, "mine", "single")
    (tmp_path / "other").mkdir()
    other_questions, _ = write_files(tmp_path / "other", n_questions=8)
    other = prepare_files(tmp_path / "c", "mine", other_questions, corpus)
    assert other.identity != first.identity
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    del manifest["inputs"]  # as written before the inputs' contents were recorded
    (tmp_path / "a" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="prepared from .*questions.jsonl before the contents of its input files"):
        prepare_files(tmp_path / "a", "mine", questions, corpus)


def test_your_own_test_split_is_used_and_must_not_share_questions(tmp_path):
    questions, corpus = write_files(tmp_path)
    records = [json.loads(line) for line in questions.read_text().splitlines()]
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[:2]))
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[2:]))
    benchmark = prepare_files(tmp_path / "p", "mine", tmp_path / "train.jsonl", corpus, tmp_path / "test.jsonl")
    assert [q.qid for q in benchmark.questions("mine", "test")] == ["q0", "q1"]
    with pytest.raises(DataFormatError, match=r"share the qid\(s\) \['q0', 'q1'\]"):
        prepare_files(tmp_path / "p2", "mine", questions, corpus, tmp_path / "test.jsonl")


def bad(tmp_path, **kwargs):
    questions, corpus = write_files(tmp_path, **kwargs)
    return lambda name="mine": prepare_files(tmp_path / "prepared", name, questions, corpus)


def record(qid, targets, answers=None):
    answers = answers or [[f"a{i}"] for i in range(len(targets))]
    return {"qid": qid, "question": "?", "answers": answers, "targets": targets}


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        (
            {"questions": [record("q0", [["d1"]]), record("q1", [])]},
            DataFormatError,
            r"questions.jsonl:2: question 'q1' has no answers",
        ),
        (
            {"questions": [record("q0", [["d1"]]), record("q1", [], answers=[["x"]])]},
            DataFormatError,
            r"questions.jsonl:2: question 'q1' has no gold documents",
        ),
        (
            {"questions": [record("q0", [["d1"]]), record("q1", [["d1"], ["d99"]])]},
            DataFormatError,
            r"questions.jsonl:2: question 'q1' names gold document id\(s\) \['d99'\] that are not in the corpus "
            r"\S*corpus.tsv",
        ),
        (
            {"questions": [record("q0", [["d1"]]), record("q0", [["d2"]])]},
            DataFormatError,
            r"questions.jsonl:2 repeats the qid 'q0'",
        ),
        ({"corpus_lines": ["d1\tx\t", "d1\ty\t"]}, DataFormatError, r"holds the document id 'd1' twice"),
        ({"corpus_lines": ["id\ttext\ttitle"]}, DataFormatError, r"corpus.tsv holds no documents"),
        ({"corpus_lines": ["d1,text,title"]}, DataFormatError, r"corpus.tsv:1 has 1 tab-separated fields"),
    ],
)
def test_bad_input_names_its_file_and_line(tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        bad(tmp_path, **kwargs)()


def test_a_questions_file_in_another_format_and_a_builtin_name_are_refused(tmp_path):
    questions, corpus = write_files(tmp_path)
    questions.write_text("qid\tquestion\nq0\twhat?\n")
    with pytest.raises(DataFormatError, match=r"questions.jsonl:1 is not valid JSON"):
        prepare_files(tmp_path / "p", "mine", questions, corpus)
    with pytest.raises(ValueError, match=r"dataset name 'qampari' is a built-in dataset's; choose a name"):
        prepare_files(tmp_path / "p", "qampari", questions, corpus)
    with pytest.raises(ValueError, match=r"dataset name 'my data' is not a valid name"):
        prepare_files(tmp_path / "p", "my data", questions, corpus)


def test_split_and_default_number_of_vectors_by_hand():
    questions = [MultiAnswerQuestion(f"q{i}", "?", [["a"]] * m, [["d"]] * m) for i, m in enumerate([1, 2, 2, 9, 30])]
    assert default_n_queries(questions) == 2 and default_n_queries(questions[3:]) == 8  # median, capped at 8
    assert default_n_queries(questions[:2]) == 2  # median 1.5, rounded up
    split = split_questions(questions, 0.4, seed=0)
    assert len(split["test"]) == 2 and sorted(q.qid for q in split["train"] + split["test"]) == [
        q.qid for q in questions
    ]
    with pytest.raises(ValueError, match="between 0 and 1"):
        split_questions(questions, 1.0)


def test_a_missing_corpus_and_bytes_that_are_not_utf8_are_named(tmp_path):
    questions, corpus = write_files(tmp_path)
    with pytest.raises(
        FileNotFoundError, match=r"corpus file .*nothing.tsv does not exist \(source 'files': corpus_path"
    ):
        prepare_files(tmp_path / "p", "mine", questions, tmp_path / "nothing.tsv")
    lines = corpus.read_bytes().split(b"\n")
    corpus.write_bytes(b"\n".join([*lines[:3], b"d99\tcaf\xe9\t", *lines[3:]]))  # Latin-1, line 4
    with pytest.raises(DataFormatError, match=r"corpus.tsv:4 is not UTF-8 text"):
        prepare_files(tmp_path / "p", "mine", questions, corpus)
    questions, corpus = write_files(tmp_path)
    questions.write_bytes(questions.read_bytes().replace(b"question 1?", b"question \xff?"))
    with pytest.raises(DataFormatError, match=r"questions.jsonl:2 is not UTF-8 text"):
        prepare_files(tmp_path / "p", "mine", questions, corpus)


def test_the_corpus_is_found_from_any_working_directory(tmp_path, monkeypatch):
    """The manifest holds the corpus relative to the benchmark's folder: prepared with a path
    relative to one working directory (as notebook 03 runs, from notebooks/), read from another."""
    questions, corpus = write_files(tmp_path)
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    prepare_files("../prepared", "mine", "../questions.jsonl", "../corpus.tsv", seed=1)
    manifest = json.loads((tmp_path / "prepared" / "manifest.json").read_text())
    assert manifest["corpus"] == "../corpus.tsv" and manifest["corpus_from"] == "benchmark"
    monkeypatch.chdir(tmp_path / "prepared")
    benchmark = Benchmark(".")
    assert benchmark.corpus_path.resolve() == corpus.resolve()
    assert [d.id for d in benchmark.documents()][:2] == ["d0", "d1"]
    # a manifest written before: its path as given at preparation, read from the working directory
    legacy = {k: v for k, v in manifest.items() if k != "corpus_from"} | {"corpus": "../corpus.tsv"}
    (tmp_path / "prepared" / "manifest.json").write_text(json.dumps(legacy))
    monkeypatch.chdir(tmp_path / "notebooks")
    assert Benchmark("../prepared").corpus_path.resolve() == corpus.resolve()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"not at \.\./corpus\.tsv.*relative to the working directory"):
        Benchmark("prepared").corpus_path
