"""Gold-document mapping on a hand-made corpus, and the Table 1 splits."""

import json
import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import FIXTURES

from amer_lib.data import bm25, preparation
from amer_lib.data.bm25 import Bm25Index
from amer_lib.data.corpus import Corpus, DocumentStore
from amer_lib.data.gold import (
    ambigqa_splits,
    map_gold_documents,
    qampari_splits,
    question_candidates,
    without_test_questions,
)
from amer_lib.data.preparation import prepare_paper_data
from amer_lib.data.questions import MultiAnswerQuestion, read_ambigqa, read_qampari

PUBLISHED = FIXTURES / "published"  # genuine published records (README.md there)
PAPER = FIXTURES / "paper"  # passages written for those records, in QAMPARI's chunk format


def test_exact_substring_mapping_keeps_questions_whose_every_answer_is_found():
    corpus = Corpus.read(FIXTURES / "corpus.tsv")  # rows 0..5 hold ids "1".."6"
    harry = next(q for q in read_ambigqa(PUBLISHED / "dev_light.sample.json") if q.qid == "8450376111876739069")
    director = MultiAnswerQuestion("d", "directors?", [["Zack Snyder"], ["Ariel Schulman"], ["Jose Padilha"]])
    # BM25 found rows 0, 4 and 5 for Harry Potter; the dense retriever rows 1 and 4 (4 twice: de-duplicated)
    candidates = question_candidates(np.array([[0, 4, 5], [2, 3, -1]]), np.array([[1, 4, -1], [0, 1, 2]]))
    mapped, report = map_gold_documents([harry, director], corpus, candidates)
    assert [q.qid for q in mapped] == [harry.qid]  # no document names Jose Padilha
    # "4 November 2001" is in doc 1; "16 November 2001" in doc 2 ("November" alone in doc 5 is no answer)
    assert mapped[0].targets == [["1"], ["2"]]
    assert (report.questions, report.kept, report.answers_without_gold) == (2, 1, 1)


def test_aliases_and_case_sensitivity():
    corpus = Corpus.read(FIXTURES / "corpus.tsv")
    question = MultiAnswerQuestion("q", "?", [["zack snyder", "Zack Snyder"], ["leonard cohen"]])
    mapped, report = map_gold_documents([question], corpus, [np.arange(6)])
    assert mapped == [] and report.answers_without_gold == 1  # "leonard cohen" is not an exact substring
    question = MultiAnswerQuestion("q", "?", [["zack snyder", "Zack Snyder"], ["Leonard Cohen"]])
    [mapped], _ = map_gold_documents([question], corpus, [np.arange(6)])
    assert mapped.targets == [["3"], ["6"]]


def test_table1_splits():
    make = lambda prefix, n, m=2: [MultiAnswerQuestion(f"{prefix}{i}", "?", [["a"]] * m, [["1"]] * m) for i in range(n)]
    make_texts = lambda prefix, n: [
        MultiAnswerQuestion(f"{prefix}{i}", f"{prefix} question {i}?", [["a"]] * 2, [["1"]] * 2) for i in range(n)
    ]
    splits, removed = ambigqa_splits(make_texts("t", 3), make_texts("d", 10), make_texts("nq", 2), seed=0)
    assert len(splits["test"]) == 5 and len(splits["train"]) == 3 + 5 + 2 and removed == 0
    assert not {q.qid for q in splits["test"]} & {q.qid for q in splits["train"]}
    assert (splits, removed) == ambigqa_splits(make_texts("t", 3), make_texts("d", 10), make_texts("nq", 2), seed=0)
    qampari = qampari_splits(make("t", 2, 4) + make("u", 2, 5) + make("v", 1, 9), make("d", 1, 8))
    assert [q.qid for q in qampari["train"]] == ["u0", "u1"] and len(qampari["test"]) == 1


def test_candidate_lists_must_match_questions():
    with pytest.raises(ValueError, match="1 candidate lists for 2 questions"):
        map_gold_documents(
            [MultiAnswerQuestion("a", "?", [["x"]])] * 2, Corpus.read(FIXTURES / "corpus.tsv"), [np.arange(2)]
        )


def test_training_questions_that_are_test_questions_are_removed():
    dev = [MultiAnswerQuestion(f"d{i}", f"Who wrote song {i}?", [["a"], ["b"]], [["1"], ["2"]]) for i in range(4)]
    splits, _ = ambigqa_splits([], dev, [], seed=0)
    leaked = splits["test"][0]
    # NQ-open writes the same question in lower case without the question mark
    nq = [
        MultiAnswerQuestion("nq1", leaked.question.lower().rstrip("?"), [["a"], ["b"]], [["1"], ["2"]]),
        MultiAnswerQuestion("nq2", "who wrote another song", [["a"], ["b"]], [["1"], ["2"]]),
    ]
    splits, removed = ambigqa_splits([], dev, nq, seed=0)
    assert removed == 1 and "nq1" not in {q.qid for q in splits["train"]} and "nq2" in {q.qid for q in splits["train"]}
    kept, removed = without_test_questions(nq, [leaked])
    assert [q.qid for q in kept] == ["nq2"] and removed == 1


class FixedRetriever:
    """A dense retriever stub for `prepare_paper_data`: each question text retrieves fixed corpus ids."""

    def __init__(self, name: str, corpus: Corpus, ids: dict[str, list[str]]):
        self.spec, self.rows = SimpleNamespace(name=name), {q: corpus.rows(d) for q, d in ids.items()}
        self.size = len(corpus)

    def encode_queries(self, texts):
        return texts

    def __len__(self):
        return self.size

    def search(self, texts, k):
        return None, np.array([(self.rows.get(t, []) + [-1] * k)[:k] for t in texts])


def published_raw(tmp_path) -> tuple[Path, FixedRetriever]:
    """The paper's raw files as published records (tests/fixtures/published) and a dense stub."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("train_light", "dev_light"):
        shutil.copy(PUBLISHED / f"{name}.sample.json", raw / f"{name}.json")
    for name in ("train_data", "dev_data"):
        shutil.copy(PUBLISHED / f"qampari_{name}.sample.jsonl", raw / f"{name}.jsonl")
    google = [json.loads(line) for line in (PUBLISHED / "NQ-open.dev.sample.jsonl").read_text().splitlines()]
    # AmbigQA's NQ-open files (no public copy: Google's lines with ids of ours); the dev file holds
    # the Harry Potter question as NQ writes it, which must not be trained on if it is a test question
    harry_nq = {
        "id": "harry",
        "question": "when did harry potter and the sorcerer's stone movie come out",
        "answer": ["4 November 2001", "16 November 2001"],
    }
    (raw / "nqopen-dev.json").write_text(json.dumps([harry_nq]))
    (raw / "nqopen-test.json").write_text(json.dumps([{"id": f"t{n}", **r} for n, r in enumerate(google, 1)]))
    corpus = Corpus.read(PAPER / "chunks.jsonl")
    pages = {d.title: d.id for d in corpus.documents}
    food = "When did the food stamp card come out?"
    dragon = "Who wrote the music for how to train your dragon?"
    dense = FixedRetriever(
        "inf-retriever-v1-1.5b",
        corpus,
        {
            food: [pages["Electronic benefit transfer"]],
            "When did harry potter and the sorcerer's stone movie come out?": ["9019__0", "9019__1"],
            harry_nq["question"]: ["9019__0", "9019__1"],
            dragon: ["9022__0", "9023__0"],  # John Powell's and Jónsi's passages
            "when did the movie varsity blues come out": [pages["Varsity Blues (film)"]],
        },
    )
    return raw, dense


def prepared_paper(tmp_path, raw, dense, folder="prepared"):
    return prepare_paper_data(
        raw, PAPER / "chunks.jsonl", tmp_path / folder, [(dense, dense)], seed=1, progress=False, depth=1
    )


def test_the_whole_paper_preparation_on_published_records(tmp_path):
    """AmbigQA, NQ-open and QAMPARI records as published, over a corpus in QAMPARI's chunk format
    (fixtures/paper/chunks.jsonl, written for these questions). Depth 1: BM25 gives each query its
    top passage, the stub dense retriever the one named below. Gold sets checked by hand."""
    benchmark, mapping = prepared_paper(tmp_path, *published_raw(tmp_path))
    corpus = Corpus.read(PAPER / "chunks.jsonl")
    questions = {
        q.qid: q
        for dataset in ("ambigqa", "qampari")
        for split in ("train", "test")
        for q in benchmark.questions(dataset, split)
    }
    by_title = {d.id: d.title for d in corpus.documents}
    titles = lambda qid: [[by_title[d] for d in docs] for docs in questions[qid].targets]
    # QAMPARI composition: the first proofs' pages (Warlock, All That Jazz, Grand Prix) do not name
    # the composers; their second proofs find the pages that do
    assert titles("9001__wikidata_comp__dev") == [
        ["Leigh Harline"],
        ["Edge of the City"],
        ["Ralph Burns"],
        ["Maurice Jarre"],
        ["The Lost Man"],
    ]
    # P. Balachandran, the question's entity, is named by all five films' passages; its target is
    # its own evidence, not Kamal's film
    assert titles("366__wikidata_comp__dev") == [
        ["Ulladakkam"],
        ["Ivan Megharoopan"],
        ["Pavithram"],
        ["Police (2005 film)"],
        ["Kammatipaadam"],
    ]
    # a quoted answer in a passage read from the corpus; the second annotator's "June 2004"
    assert titles("8267019542652470869") == [["How to Train Your Dragon (film)"], ["Sticks & Stones (Jónsi song)"]]
    assert titles("-6391747800866431933") == [["Electronic benefit transfer"]] * 3
    # NQ-open writes "January 15, 1999" with no-break spaces; the passage with plain ones
    assert titles("nq-t31") == [["Varsity Blues (film)"], ["Varsity Blues (film)"]]
    assert mapping["qampari_dev"] == {"questions": 4, "kept": 2, "answers_without_gold": 13}
    assert mapping["qampari_dev_read"] == 4  # every published sample has 5-8 answers
    assert mapping["ambigqa_dev"]["questions"] == 5 and mapping["nq_open"]["questions"] == 16
    test = {q.qid for q in benchmark.questions("ambigqa", "test")}
    train = {q.qid for q in benchmark.questions("ambigqa", "train")}
    # seed 1 draws Harry Potter for the test half: its NQ-open twin leaves training
    assert test == {"8450376111876739069"} and mapping["ambigqa_train_removed_as_test_questions"] == 1
    assert train == {"-6391747800866431933", "8267019542652470869", "nq-t31", "nq-t32"}
    # the prepared files keep AmbigQA's disambiguated questions (the component term's); NQ-open and
    # QAMPARI have none, and the recipe says so: a folder prepared before is prepared again
    assert questions["8267019542652470869"].answer_questions == [
        "Who scored the music for How to Train Your Dragon?",
        'Who wrote the song "Sticks & Stones" for the film How to Train Your Dragon?',
    ]
    assert questions["8450376111876739069"].answer_questions[1] == (
        "When did harry potter and the sorcerer's stone movie come out in the United Kingdom and the United States?"
    )
    assert (
        questions["nq-t31"].answer_questions is None and questions["366__wikidata_comp__dev"].answer_questions is None
    )
    assert benchmark.manifest["recipe"]["answer_questions"] == "kept"
    assert {q.qid for q in benchmark.questions("qampari", "test")} == {
        "9001__wikidata_comp__dev",
        "366__wikidata_comp__dev",
    }


def test_an_answer_keeps_the_passages_of_its_own_evidence_page_first():
    corpus = Corpus.read(PAPER / "chunks.jsonl")
    [_, _, entity, _] = read_qampari(PUBLISHED / "qampari_dev_data.sample.jsonl")
    entity = replace(entity, answers=entity.answers[:2], proofs=entity.proofs[:2])  # Kamal, P. Balachandran
    rows = corpus.rows(["9008__0", "9009__0"])  # Ulladakkam (Kamal's film), then Ivan Megharoopan
    [mapped], _ = map_gold_documents([entity], corpus, [[np.array(rows)] * 2])
    assert mapped.targets[1] == ["9009__0", "9008__0"]  # P. Balachandran: his evidence page first
    assert mapped.targets[0] == ["9008__0"]  # only Ulladakkam names Kamal


def benchmark_questions(benchmark) -> dict:
    return {
        (dataset, split): [q.to_json() for q in benchmark.questions(dataset, split)]
        for dataset in ("ambigqa", "qampari")
        for split in ("train", "test")
    }


class Killed(Exception):
    pass


def test_a_mapping_killed_after_its_first_split_resumes_without_redoing_it(tmp_path, monkeypatch):
    """The published records' preparation stopped while mapping its second split: the rerun reads
    the BM25 index and the first split's mapping back, maps the rest, and writes what a run that
    was never stopped writes."""
    raw, dense = published_raw(tmp_path)
    expected, expected_mapping = prepared_paper(tmp_path, raw, dense, "uninterrupted")
    mapped_first_questions, kill_at = [], [2]  # each part's first question; the call that dies
    original = preparation.map_gold_documents

    def spied(questions, corpus, candidates):
        mapped_first_questions.append(questions[0].qid)
        if len(mapped_first_questions) == kill_at[0]:
            raise Killed
        return original(questions, corpus, candidates)

    monkeypatch.setattr(preparation, "map_gold_documents", spied)
    with pytest.raises(Killed):
        prepared_paper(tmp_path, raw, dense)
    first = mapped_first_questions[0]
    assert (tmp_path / "prepared" / "mapping" / "ambigqa_train" / "part-00000.json").exists()
    assert not (tmp_path / "prepared" / "manifest.json").exists()  # no benchmark until the end

    mapped_first_questions.clear()
    kill_at[0] = 0
    monkeypatch.setattr(bm25, "write_index", lambda *a, **k: pytest.fail("the kept BM25 index was built again"))
    monkeypatch.setattr(DocumentStore, "_write", lambda *a, **k: pytest.fail("the kept corpus store was written again"))
    benchmark, mapping = prepared_paper(tmp_path, raw, dense)
    assert first not in mapped_first_questions and len(mapped_first_questions) == 4  # four splits left
    assert mapping == expected_mapping and benchmark_questions(benchmark) == benchmark_questions(expected)


def test_qampari_questions_outside_five_to_eight_answers_are_not_searched(tmp_path, monkeypatch):
    """An edge record of ours (a QAMPARI question with 3 answers, each with a proof) joins the
    published dev records: its proofs are never searched and the benchmark is as before."""
    raw, dense = published_raw(tmp_path)
    expected, _ = prepared_paper(tmp_path, raw, dense, "without_edge")
    proof = lambda text: {"proof_text": text, "found_in_url": "https://en.wikipedia.org/wiki/X", "pid": "p"}
    answers = [{"answer_text": f"a{i}", "aliases": [], "proof": [proof(f"edge proof {i} of three")]} for i in range(3)]
    edge = {"question_text": "Which three things?", "answer_list": answers, "qid": "edge__dev"}
    with open(raw / "dev_data.jsonl", "a") as out:
        out.write(json.dumps(edge) + "\n")
    searched = []
    original = Bm25Index.top_k
    monkeypatch.setattr(
        Bm25Index,
        "top_k",
        lambda self, texts, k, **options: searched.extend(texts) or original(self, texts, k, **options),
    )
    benchmark, mapping = prepared_paper(tmp_path, raw, dense)
    assert searched and not [text for text in searched if text.startswith("edge proof")]
    assert mapping["qampari_dev_read"] == 5 and mapping["qampari_dev"]["questions"] == 4
    assert benchmark_questions(benchmark) == benchmark_questions(expected)


def test_the_paper_mapping_orders_equal_bm25_scores_by_row(tmp_path, monkeypatch):
    """Every BM25 search of the paper data (questions and QAMPARI's proofs) orders equal scores by
    row, the same on every CPU (bm25s's numpy selection orders them by the CPU's SIMD code), and the
    prepared benchmark's recipe says so (a folder prepared the other way is not read back)."""
    asked = []
    searched = bm25.Bm25Index.top_k

    def recorded(self, queries, k, progress=True, processes=1, ties="bm25s"):
        asked.append(ties)
        return searched(self, queries, k, progress, processes, ties)

    monkeypatch.setattr(bm25.Bm25Index, "top_k", recorded)
    benchmark, _ = prepared_paper(tmp_path, *published_raw(tmp_path))
    assert len(asked) >= 5 and set(asked) == {"row"}  # AmbigQA train and dev, NQ-open, QAMPARI's two splits
    assert benchmark.manifest["recipe"]["bm25_ties"] == "row"
