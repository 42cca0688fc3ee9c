"""The FOLDOC reader and benchmark builder (`studies/foldoc/build.py`) on genuine FOLDOC records
(`tests/fixtures/foldoc/`, their source in its README)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from amer_lib.data import wordnet
from amer_lib.data.corpus import iter_documents
from amer_lib.data.questions import read_questions
from amer_lib.packaged import sha256_of

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "foldoc"
spec = importlib.util.spec_from_file_location("foldoc_build", ROOT / "studies" / "foldoc" / "build.py")
foldoc = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # its dataclasses look their module up
spec.loader.exec_module(foldoc)


@pytest.fixture(scope="module")
def entries():
    return foldoc.read_dictd(FIXTURE)


def by_word(entries, word):
    return next(e for e in entries if e.headwords[0] == word)


def test_dictd_numbers_are_base_64():
    # G=6, b=27, 9=61, L=11: ((6 * 64 + 27) * 64 + 61) * 64 + 11
    assert foldoc.decode_number("Gb9L") == 1_687_371
    assert foldoc.decode_number("A") == 0 and foldoc.decode_number("/") == 63
    with pytest.raises(ValueError, match="not a dictd base-64 number"):
        foldoc.decode_number("G-9")


def test_records_with_every_headword_and_no_bookkeeping(entries):
    assert [e.headwords[0] for e in entries] == [
        "ABC", "abort", "accumulator", "glitch", "hack", "hash", "Intel 80186", "random", "stack", "zorch",
    ]  # fmt: skip
    # the record's own first line, then the index's headwords (lowercased there) in its order
    assert by_word(entries, "stack").headwords == ("stack", "filo", "last-in first-out", "lifo")
    assert by_word(entries, "hash").body.startswith("   1. <character> {hash character}.")


def test_numbered_senses(entries):
    hash_senses = [foldoc.clean(s) for s in foldoc.numbered_senses(by_word(entries, "hash").body)]
    assert hash_senses == [
        "character: hash character.",
        "programming: hash coding.",
        "The preferred term for a Perl associative array.",
    ]
    hack = [foldoc.clean(s) for s in foldoc.numbered_senses(by_word(entries, "hack").body)]
    assert hack[0] == "Originally, a quick job that produces what is needed, but not well."  # after "<jargon> 1."
    assert hack[1].startswith("An incredibly good, and perhaps very time-consuming, piece of work")
    assert len(hack) == 9
    # numbers that repeat (ABC: 1, 2, 2; glitch: 1, 2, 2, 4), years, no senses: not a sense list
    for word in ("ABC", "glitch", "Intel 80186", "accumulator", "abort", "stack"):
        assert foldoc.numbered_senses(by_word(entries, word).body) == [], word


def test_clean_drops_the_date_and_braces():
    text = "   <programming> A {data structure} for\n   storing items.\n\n   (1995-03-06)\n\n"
    assert foldoc.clean(text) == "programming: A data structure for storing items."


def test_corpus_and_components(entries):
    documents, components = foldoc.corpus_and_components(entries)
    ids = [i for i, _ in documents]
    assert len(ids) == len(set(ids))
    # one document per sense of the sense records (hack 9, hash 3, random 10, zorch 7), one per other record
    assert len(documents) == 9 + 3 + 10 + 7 + 6
    # components: 2-8 senses (hack's 9 and random's 10 are out)
    assert [c.qid for c in components] == ["senses:hash", "senses:zorch"]
    hash_question = components[0]
    assert hash_question.question == 'What does the word "hash" mean?'
    assert hash_question.targets == [["f5.1"], ["f5.2"], ["f5.3"]]
    assert dict(documents)["f5.3"] == "The preferred term for a Perl associative array."
    assert hash_question.answers[1] == ["programming: hash coding."]


def test_build_writes_the_own_data_format(tmp_path, monkeypatch):
    """Depth 0 (no encoder): every component kept. The fixture's two components both hash to
    training, so here zorch is sent to test, and with k = 1 each split has one compound; the files
    follow the README's own-data format."""
    assert wordnet.split_of("senses:hash") == wordnet.split_of("senses:zorch") == "train"
    monkeypatch.setattr(foldoc.wordnet, "split_of", lambda qid: "test" if qid == "senses:zorch" else "train")
    manifest = foldoc.build(FIXTURE, tmp_path / "out", depth=0, ks=(1,), progress=False)
    out = tmp_path / "out"
    assert manifest["counts"] == {"components_train": 1, "components_test": 1, "train_k1": 1, "test_k1": 1}
    (train,), (test,) = read_questions(out / "train_k1.jsonl"), read_questions(out / "test_k1.jsonl")
    assert (train.qid, test.qid) == ("foldoc_k1:senses:hash", "foldoc_k1:senses:zorch")
    assert train.answer_questions == ['What does the word "hash" mean?'] * 3
    corpus = {d.id: d.text for d in iter_documents(out / "corpus.tsv")}
    assert len(corpus) == manifest["documents"] == 35
    assert corpus["f5.2"] == "programming: hash coding."
    assert all(d in corpus for q in (train, test) for docs in q.targets for d in docs)
    names = ("corpus.tsv", "train_k1.jsonl", "test_k1.jsonl")
    assert manifest["files"] == {name: sha256_of(out / name) for name in names}
    assert json.loads((out / "manifest.json").read_text()) == manifest


def test_a_split_without_components_is_named(tmp_path):
    """Both fixture components are training ones: no test compound can be drawn, and the error says so."""
    with pytest.raises(ValueError, match="no test components"):
        foldoc.build(FIXTURE, tmp_path / "out", depth=0, ks=(2,), max_answers=10, progress=False)


def test_corpus_texts_with_quotes_and_tabs_read_back(tmp_path):
    documents = [("f1", '"Daemon" is how it is spelled.'), ("f2", 'He said "no".'), ("f3", "plain")]
    foldoc.write_corpus(tmp_path / "corpus.tsv", documents)
    assert [(d.id, d.text, d.title) for d in iter_documents(tmp_path / "corpus.tsv")] == [
        (i, t, "") for i, t in documents
    ]


def test_missing_dictionary_names_the_package(tmp_path):
    with pytest.raises(FileNotFoundError, match="dict-foldoc"):
        foldoc.read_dictd(tmp_path)
