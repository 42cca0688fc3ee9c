"""Readers of the published formats and of the library's own jsonl, on small fixtures."""

import gzip
import json
from pathlib import Path

import pytest

from amer_lib.data import wordnet
from amer_lib.data.corpus import Corpus, iter_documents
from amer_lib.data.questions import (
    DataFormatError,
    MultiAnswerQuestion,
    cluster_aliases,
    read_ambigqa,
    read_nq_open_multi,
    read_qampari,
    read_questions,
    write_questions,
)

FIXTURES = Path(__file__).parent / "fixtures"


def test_ambigqa_keeps_multi_answer_questions_with_their_aliases():
    questions = read_ambigqa(FIXTURES / "ambigqa_light.json")
    # single-answer entry dropped; the entry whose two qaPairs share one answer ("Slash"/"slash") too
    assert [q.qid for q in questions] == ["-4469503464110108318"]
    assert questions[0].answers == [["4 November 2001"], ["16 November 2001", "November 16, 2001"]]
    assert questions[0].targets == []


def test_qampari_reads_answers_aliases_and_proofs():
    [question] = read_qampari(FIXTURES / "qampari.jsonl")
    assert question.qid == "q-1" and question.question.startswith("Who are the directors")
    assert question.answers == [["Zack Snyder", "Zachary Snyder"], ["Ariel Schulman"]]
    assert question.proofs[1].startswith("Project Power is a 2020")


def test_nq_open_multi_answer_subset():
    questions = read_nq_open_multi(FIXTURES / "nq_open.jsonl")
    # "2017" / "2017 " and "1977" / "in 1977" / "the 1977" are one answer each: those questions are not multi-answer
    assert [q.question for q in questions] == [
        "who plays the mom in the movie",
        "when did harry potter and the sorcerer's stone movie come out",
    ]
    assert questions[0].answers == [["Jennifer Garner"], ["Kathy Bates"]]
    assert questions[1].answers == [["4 November 2001"], ["16 November 2001", "on 16 November 2001"]]


def test_alias_clustering_by_hand():
    assert cluster_aliases(["1977", "in 1977", "The 1977.", "1978"]) == [["1977", "in 1977", "The 1977."], ["1978"]]
    assert cluster_aliases(["November 2001", "2001"]) == [["November 2001"], ["2001"]]  # a content word differs
    assert cluster_aliases(["Slash", "slash", " Slash "]) == [["Slash", "slash"]]
    # transitive: "around 1990" ~ "1990" ~ "in 1990"
    assert cluster_aliases(["around 1990", "Bruce", "in 1990", "1990"]) == [
        ["around 1990", "in 1990", "1990"],
        ["Bruce"],
    ]


@pytest.mark.parametrize("name", ["corpus.tsv", "corpus.jsonl"])
def test_corpus_formats(name):
    documents = list(iter_documents(FIXTURES / name))
    assert documents[0].id == "1" and documents[0].title == "Harry Potter (film)"
    assert documents[1].full_text.startswith("Harry Potter (film) The film was released")


def test_gzipped_corpus(tmp_path):
    path = tmp_path / "corpus.tsv.gz"
    path.write_bytes(gzip.compress((FIXTURES / "corpus.tsv").read_bytes()))
    assert Corpus.read(path).ids == Corpus.read(FIXTURES / "corpus.tsv").ids


def test_duplicate_document_ids_are_an_error(tmp_path):
    path = tmp_path / "corpus.tsv"
    path.write_text("1\ta\tA\n2\tb\tB\n1\tc\tC\n")
    with pytest.raises(DataFormatError, match=r"document id '1' twice \(rows 0 and 2\)"):
        Corpus.read(path)


def test_bad_corpus_row_and_suffix(tmp_path):
    path = tmp_path / "corpus.tsv"
    path.write_text("1\tonly two fields\n")
    with pytest.raises(DataFormatError, match="corpus.tsv:1 has 2 tab-separated fields"):
        Corpus.read(path)
    with pytest.raises(ValueError, match="valid suffixes: .tsv, .jsonl"):
        Corpus.read(FIXTURES / "ambigqa_light.json")


@pytest.mark.parametrize(
    "reader,dataset", [(read_ambigqa, "AmbigQA"), (read_qampari, "QAMPARI"), (read_nq_open_multi, "NQ-open")]
)
def test_missing_file_says_what_to_download(reader, dataset, tmp_path):
    with pytest.raises(FileNotFoundError, match=f"does not exist. Download {dataset}.* and put it at"):
        reader(tmp_path / "absent.json")


def test_library_jsonl_round_trip(tmp_path):
    questions = [MultiAnswerQuestion("a", "q?", [["x"], ["y", "y2"]], [["1"], ["2", "3"]])]
    write_questions(tmp_path / "q.jsonl", questions)
    assert read_questions(tmp_path / "q.jsonl") == questions


def test_question_without_gold_document_is_refused(tmp_path):
    bad = MultiAnswerQuestion("a", "q?", [["x"], ["y"]], [["1"], []])
    with pytest.raises(DataFormatError, match=r"no gold document for answer\(s\) \['y'\]"):
        write_questions(tmp_path / "q.jsonl", [bad])
    assert not (tmp_path / "q.jsonl").exists()  # nothing half-written left behind
    (tmp_path / "r.jsonl").write_text(json.dumps(bad.to_json()) + "\n")
    with pytest.raises(DataFormatError, match="r.jsonl:1: question 'a' has no gold document"):
        read_questions(tmp_path / "r.jsonl")


WORDNET_LINES = """  1 This software and database is being provided to you, the LICENSEE, by
00001740 03 n 02 animal 0 beast 0 002 ~ 00002000 n 0000 ~i 00002100 n 0000 | a living organism; "an animal moves"
00002000 03 n 01 dog 0 001 @ 00001740 n 0000 | a domesticated canine
00002100 03 n 01 Rex 0 001 @i 00001740 n 0000 | a famous dog
"""


def test_wordnet_data_lines_are_parsed(tmp_path):
    for name in ("noun", "verb", "adj", "adv"):
        (tmp_path / f"data.{name}").write_text(WORDNET_LINES if name == "noun" else "")
    synsets = wordnet.read_synsets(tmp_path)
    assert synsets["n00001740"].lemmas == ["animal", "beast"]
    assert synsets["n00001740"].hyponyms == ["n00002000", "n00002100"]
    assert synsets["n00001740"].gloss == 'a living organism; "an animal moves"'
    assert set(synsets) == {"n00001740", "n00002000", "n00002100"}


def test_shipped_wordnet_benchmark_is_consistent():
    corpus = wordnet.load_corpus()
    assert len(corpus) == 117659  # every synset of WordNet 3.0
    for kind, (low, high) in (("senses", wordnet.SENSE_RANGE), ("kinds", wordnet.KINDS_RANGE)):
        questions = wordnet.load_questions(kind, "test")
        assert questions and all(low <= len(q.targets) <= high for q in questions)
        corpus.rows([d for q in questions for docs in q.targets for d in docs])  # every target is in the corpus
    with pytest.raises(ValueError, match="valid: senses, kinds"):
        wordnet.load_questions("colours", "test")


@pytest.mark.skipif(not Path("/usr/share/wordnet/data.noun").exists(), reason="Debian's wordnet-base is not installed")
def test_shipped_copy_is_what_the_script_derives(tmp_path):
    wordnet.derive("/usr/share/wordnet", tmp_path)
    for path in wordnet.SHIPPED.glob("*.gz"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
