"""Readers of the published formats and of the library's own jsonl, on small fixtures."""

import csv
import gzip
import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, documentation

from amer_lib.data import corpus as corpus_module
from amer_lib.data import wordnet
from amer_lib.data.corpus import Corpus, Document, DocumentStore, iter_documents, write_tsv
from amer_lib.data.questions import (
    DataFormatError,
    MultiAnswerQuestion,
    cluster_aliases,
    component_texts,
    read_ambigqa,
    read_nq_open_multi,
    read_qampari,
    read_question_texts,
    read_questions,
    write_questions,
)

PUBLISHED = FIXTURES / "published"  # genuine published records; README.md there names each one's source


def test_ambigqa_keeps_what_its_evaluation_counts_as_multi_answer_with_every_annotators_answers():
    questions = {q.qid: q for q in read_ambigqa(PUBLISHED / "dev_light.sample.json")}
    # of the 11 records: 6 have only singleAnswer annotations; 8630912480840635425 (Cardinals) has a
    # singleAnswer beside its multipleQAs, so AmbigQA's evaluation counts it single-answer (dropped)
    assert list(questions) == [
        "5780388869788119926",
        "-962065981949449467",
        "8450376111876739069",
        "-6391747800866431933",
        "8267019542652470869",
    ]
    # two annotators naming the same three people: one cluster each, the second's alias NDZ joined
    assert questions["5780388869788119926"].answers == [
        ["Moussa Faki", "Moussa Faki Mahamat"],
        ["Nkosazana Clarice Dlamini-Zuma", "Nkosazana Dlamini-Zuma", "NDZ"],
        ["Jean Ping"],
    ]
    assert questions["8450376111876739069"].answers == [["4 November 2001"], ["16 November 2001"]]
    # the second annotator's "June 2004" is only in its list (the first reader read the first annotation only)
    assert questions["-6391747800866431933"].answers == [["late 1990s"], ["2004"], ["June 2004"]]
    assert questions["8267019542652470869"].answers[1] == ['Jón Þór "Jónsi" Birgisson']
    assert all(q.targets == [] for q in questions.values())


def test_qampari_keeps_every_proof_of_an_answer_with_its_page():
    simple, _, with_entity, composition = read_qampari(PUBLISHED / "qampari_dev_data.sample.jsonl")
    assert simple.qid == "799__wikidata_simple__dev" and simple.question == "What manga was drawn by Ryoichi Ikegami?"
    assert simple.answers[1] == ["Mai, the Psychic Girl"]
    assert simple.proofs[0] == [
        {
            "text": " is a seinen manga series written by buronson and illustrated by ryoichi ikegami.",
            "page": "Heat (manga)",
        }
    ]
    # a composition answer: the base question's evidence (Warlock) and the answer's own (Leigh Harline)
    assert composition.answers[0] == ["Leigh Harline"]
    assert [p["page"] for p in composition.proofs[0]] == ["Warlock", "Leigh Harline"]
    assert composition.proofs[0][1]["text"] == "His credits include [...] Warlock"
    assert [len(p) for p in with_entity.proofs] == [2] * 5 and with_entity.proofs[1][0]["page"] == "Ivan Megharoopan"
    assert with_entity.answers[1] == ["P. Balachandran"]  # also the question's entity
    [train] = read_qampari(PUBLISHED / "qampari_train_data.sample.jsonl")
    assert train.answers[3] == ["A Little Dream", "Little Dream"]


def test_nq_open_multi_answer_subset_of_googles_file():
    questions = read_nq_open_multi(PUBLISHED / "NQ-open.dev.sample.jsonl")
    assert len(questions) == 15  # of 34 lines; the other 19 have one answer string or aliases of one answer
    by_line = {int(q.qid.rsplit("-", 1)[1]): q for q in questions}
    assert by_line[2].answers == [["Bobby Scott"], ["Bob Russell"]]
    # "a presidential ..." and "presidential ..." are one answer (articles are not content)
    assert by_line[33].answers == [
        ["a presidential representative democratic republic", "presidential representative democratic republic"],
        ['"flawed democracy"'],
    ]
    assert by_line[31].answers == [["1999"], ["January\u00a015,\u00a01999"]]  # written with no-break spaces


def test_nq_open_in_ambigqas_json_list_keeps_its_ids(tmp_path):
    """AmbigQA's nqopen-{dev,test}.json: a list of {id, question, answer}. No public copy was found, so
    this one holds Google's lines 31-32 of the sample with ids of ours (fixtures/published/README.md)."""
    lines = (PUBLISHED / "NQ-open.dev.sample.jsonl").read_text(encoding="utf-8").splitlines()
    records = [{"id": f"id{n}", **json.loads(lines[n - 1])} for n in (1, 4, 31)]
    (tmp_path / "nqopen-test.json").write_text(json.dumps(records))
    questions = read_nq_open_multi(tmp_path / "nqopen-test.json")
    assert [q.qid for q in questions] == ["nq-id1", "nq-id31"]


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


def test_dprs_quoted_tsv_rows_are_unquoted():
    """DPR's psgs_w100.tsv, its first rows as published: the text field CSV-quoted, inner quotes doubled."""
    first, second = iter_documents(PUBLISHED / "psgs_w100.head.tsv")
    assert (first.id, first.title) == ("1", "Aaron")
    assert first.text.startswith('Aaron Aaron ( or ; "Ahärôn") is a prophet, high priest, and the brother of Moses')
    assert first.text.endswith("Part of the Law (Torah) that Moses received from")
    assert '(""prophet"")' not in first.text and '("prophet")' in first.text
    assert second.text.startswith("God at Sinai granted Aaron") and second.title == "Aaron"


def test_a_quoted_field_may_hold_tabs_and_line_breaks_and_rows_may_end_in_crlf(tmp_path):
    """The AMER authors' conversion of QAMPARI's chunks: csv.writer's quoting, CRLF after every row."""
    path = tmp_path / "chunks.tsv"
    with open(path, "w", encoding="utf-8", newline="") as out:
        csv.writer(out, delimiter="\t").writerows(
            [
                ["id", "text", "title"],
                ["7__0", 'Jón Þór "Jónsi" Birgisson\tand\nmore', "Jónsi"],
                ["7__1", "plain", "Jónsi"],
            ]
        )
    assert path.read_bytes().count(b"\r\n") == 3
    documents = list(iter_documents(path))
    assert [d.text for d in documents] == ['Jón Þór "Jónsi" Birgisson\tand\nmore', "plain"]
    write_tsv(tmp_path / "again.tsv", documents)
    assert list(iter_documents(tmp_path / "again.tsv")) == documents


def test_a_text_that_begins_with_its_title_gets_no_second_title():
    """QAMPARI's chunks (`contents` = title + text), the authors' TSV of them and DPR's first passage
    of a page all begin with the title: the encoder sees it once."""
    chunks = list(iter_documents(FIXTURES / "paper" / "chunks.jsonl"))
    pavithram = next(d for d in chunks if d.title == "Pavithram")
    assert pavithram.id == "9010__0"
    assert pavithram.full_text == "Pavithram Pavithram is a 1994 Indian Malayalam-language drama film directed by " + (
        "T. K. Rajeev Kumar and written by P. Balachandran from a story by Balachandran and Kumar."
    )  # the page title, then the article's own first words
    aaron, god = iter_documents(PUBLISHED / "psgs_w100.head.tsv")
    assert aaron.full_text == aaron.text and aaron.full_text.startswith("Aaron Aaron ( or ;")
    assert god.full_text.startswith("Aaron God at Sinai")
    assert Document("1", "A title", "More text").full_text == "A title More text"


@pytest.mark.parametrize(
    "name,content,message",
    [
        (
            "corpus.jsonl",
            '{"id": "1__0", "meta": {"title": "A"}}\n',
            "corpus.jsonl:1 is neither a BEIR .* nor a QAMPARI",
        ),
        (
            "corpus.jsonl",
            '{"id": "1__0", "contents": "A b"}\n{"id": "1__1", "conte\n',
            "corpus.jsonl:2 is not valid JSON",
        ),
        (
            "corpus.tsv",
            'id\ttext\ttitle\n1\t"never closed\tA\n2\tb\tB\n',
            "corpus.tsv:2-3 is not a valid quoted TSV row",
        ),
        ("corpus.tsv", "id\ttext\ttitle\n1\tok\tA\n2\tone field only\n", "corpus.tsv:3 has 2 tab-separated fields"),
    ],
)
def test_bad_published_corpus_input_names_file_and_line(tmp_path, name, content, message):
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        Corpus.read(tmp_path / name)


def test_bad_published_question_input_names_file_and_line(tmp_path):
    lines = (PUBLISHED / "qampari_dev_data.sample.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "dev_data.jsonl").write_text(lines[0] + "\n" + lines[1][:200] + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="dev_data.jsonl:2 is not valid JSON"):
        read_qampari(tmp_path / "dev_data.jsonl")
    record = json.loads(lines[0])
    record["answer_list"][2]["proof"][0]["proof_text"] = ""
    (tmp_path / "dev_data.jsonl").write_text(lines[1] + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="dev_data.jsonl:2: answer 2 has a proof without 'proof_text'"):
        read_qampari(tmp_path / "dev_data.jsonl")
    (tmp_path / "dev_light.json").write_text(
        '[\n{"id": "1",\n "question": "q?", "annotations": [}\n]', encoding="utf-8"
    )
    with pytest.raises(DataFormatError, match="dev_light.json:3 is not valid JSON"):
        read_ambigqa(tmp_path / "dev_light.json")


@pytest.mark.parametrize("reader", [read_qampari, read_nq_open_multi, Corpus.read])
def test_a_byte_that_is_not_utf8_names_file_and_line(tmp_path, reader):
    lines = (PUBLISHED / "NQ-open.dev.sample.jsonl").read_bytes().splitlines(keepends=True)
    name = "corpus.jsonl" if reader is Corpus.read else "data.jsonl"
    (tmp_path / name).write_bytes(b"".join(lines[:3]) + b'{"question": "caf\xe9"}\n')
    with pytest.raises(DataFormatError, match=f"{name}:4 is not UTF-8 text"):
        reader(tmp_path / name)


def test_gzipped_corpus(tmp_path):
    """A gzipped TSV reads as its rows split by hand: id, text, title."""
    path = tmp_path / "corpus.tsv.gz"
    path.write_bytes(gzip.compress((FIXTURES / "corpus.tsv").read_bytes()))
    rows = [line.split("\t") for line in (FIXTURES / "corpus.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    corpus = Corpus.read(path)
    assert corpus.ids == [row[0] for row in rows] and len(rows) > 2
    for row in (0, len(rows) - 1):
        document = corpus.document(row)
        assert (document.id, document.title, document.text) == (rows[row][0], rows[row][2], rows[row][1])


def test_duplicate_document_ids_are_an_error_naming_their_file_lines(tmp_path):
    """The lines of the file, as an editor numbers them (issue 78: rows 8 and 9 were named for lines
    10 and 11), with or without the header line, and in a BEIR corpus.jsonl."""
    path = tmp_path / "corpus.tsv"
    path.write_text("1\ta\tA\n2\tb\tB\n1\tc\tC\n")
    with pytest.raises(DataFormatError, match=r"document id '1' twice \(lines 1 and 3\)"):
        Corpus.read(path)
    documents = [f"{i}\tpassage {i}\tT" for i in range(8)] + ["dup\tx\tX", "dup\ty\tY"]
    path.write_text("id\ttext\ttitle\n" + "\n".join(documents) + "\n")
    with pytest.raises(DataFormatError, match=r"document id 'dup' twice \(lines 10 and 11\)"):
        Corpus.read(path)
    beir = tmp_path / "corpus.jsonl"
    beir.write_text("".join(json.dumps({"_id": i, "title": "", "text": "t"}) + "\n" for i in ("a", "b", "a")))
    with pytest.raises(DataFormatError, match=r"document id 'a' twice \(lines 1 and 3\)"):
        Corpus.read(beir)


def test_bad_corpus_row_and_suffix(tmp_path):
    path = tmp_path / "corpus.tsv"
    path.write_text("1\tonly two fields\n")
    with pytest.raises(DataFormatError, match="corpus.tsv:1 has 2 tab-separated fields"):
        Corpus.read(path)
    with pytest.raises(ValueError, match="valid suffixes: .tsv, .jsonl"):
        Corpus.read(PUBLISHED / "dev_light.sample.json")


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


WHOLE = PUBLISHED / "whole"  # whole published files, gzipped (sources in ../README.md)


def test_counts_on_whole_published_files_are_the_readmes():
    """The README's table of questions kept per file, recomputed from the published files."""
    rows = {}
    for split, name in (("dev", "AmbigQA `dev_light.json`"), ("train", "AmbigQA `train_light.json`")):
        with gzip.open(WHOLE / f"{split}_light.json.gz", "rt", encoding="utf-8") as file:
            records = json.load(file)
        kept = read_ambigqa(WHOLE / f"{split}_light.json.gz")
        authors = sum(any(a["type"] == "multipleQAs" for a in r["annotations"]) for r in records)
        by_rule = sum(all(a["type"] == "multipleQAs" for a in r["annotations"]) for r in records)
        rows[name] = (len(records), authors, by_rule, len(kept), sum(len(q.answers) for q in kept) / len(kept))
    with gzip.open(WHOLE / "NQ-open.dev.jsonl.gz", "rt", encoding="utf-8") as file:
        nq = [json.loads(line) for line in file]
    kept = read_nq_open_multi(WHOLE / "NQ-open.dev.jsonl.gz")
    nbsp = sum(any(all("\u00a0" in alias for alias in aliases) for aliases in q.answers) for q in kept)
    dev_records, dev_authors, dev_rule, dev_kept, dev_answers = rows["AmbigQA `dev_light.json`"]
    train_records, train_authors, _, train_kept, _ = rows["AmbigQA `train_light.json`"]
    readme = documentation()
    for line in (
        f"| AmbigQA `dev_light.json` | {dev_records:,} | {dev_authors:,} (a `multipleQAs` annotation) | "
        f"{dev_kept:,} ({dev_rule:,} multi-answer by AmbigQA's rule, {dev_rule - dev_kept} of them with one "
        f"distinct answer); {dev_answers:.2f} answers per question |",
        f"| AmbigQA `train_light.json` | {train_records:,} | {train_authors:,} | {train_kept:,} |",
        f"| Google's `NQ-open.dev.jsonl` (Lee et al.'s test set, as `nqopen-test.json`) | {len(nq):,} | "
        f"{sum(len(r['answer']) > 1 for r in nq):,} (more than one answer string) | {len(kept):,} ({nbsp} with an "
        "answer written only with no-break spaces) |",
    ):
        assert line in readme


def test_the_document_store_reads_back_every_record_by_row(tmp_path, monkeypatch):
    """DPR's published rows (quoted, inner quotes doubled), then edge rows of ours written with
    csv's quoting (a line break and a tab inside a field, non-ASCII text, an empty title), gzipped:
    the store gives the reader's documents by row, and is reused for the same key."""
    path = tmp_path / "passages.tsv"
    shutil.copy(PUBLISHED / "psgs_w100.head.tsv", path)
    with open(path, "a", encoding="utf-8", newline="") as out:
        csv.writer(out, delimiter="\t", lineterminator="\n").writerows(
            [["3", 'Jón Þór "Jónsi"\tBirgisson\nsings', "Jónsi"], ["4", "no title", ""], ["5", "", "Only a title"]]
        )
    gzipped = tmp_path / "passages.tsv.gz"
    gzipped.write_bytes(gzip.compress(path.read_bytes()))
    expected = list(iter_documents(path))
    store = DocumentStore.of_corpus(gzipped, tmp_path / "store", {"file": 1}, progress=False)
    assert len(store) == 5 and [store.document(row) for row in range(5)] == expected
    assert list(store.texts()) == [d.full_text for d in expected]
    assert store.document(2).text == 'Jón Þór "Jónsi"\tBirgisson\nsings'
    with pytest.raises(IndexError, match="outside the corpus's 5 documents"):
        store.document(5)
    monkeypatch.setattr(DocumentStore, "_write", lambda *a: pytest.fail("written again"))
    assert DocumentStore.of_corpus(gzipped, tmp_path / "store", {"file": 1}).document(4) == expected[4]


@pytest.mark.parametrize("id_hash", [hash, len])  # len: every id of one length shares a hash
def test_the_document_store_refuses_a_corpus_with_a_repeated_id(tmp_path, monkeypatch, id_hash):
    monkeypatch.setattr(corpus_module, "_id_hash", id_hash)
    path = tmp_path / "twice.tsv"
    path.write_text("id\ttext\ttitle\n7\tone\tA\n8\ttwo\tB\n9\tthree\tC\n8\tfour\tD\n10\tfive\tE\n")
    with pytest.raises(DataFormatError, match=r"document id '8' twice \(rows 1 and 3\)"):
        DocumentStore.of_corpus(path, tmp_path / "store", {"file": 1}, progress=False)
    assert list(tmp_path.iterdir()) == [path]  # nothing half written
    path.write_text("id\ttext\ttitle\n7\tone\tA\n8\ttwo\tB\n9\tthree\tC\n10\tfive\tE\n")
    assert len(DocumentStore.of_corpus(path, tmp_path / "store", {"file": 2}, progress=False)) == 4


def test_questions_without_gold_in_the_fields_query_files():
    """Genuine records: BEIR's Climate-FEVER queries.jsonl (`_id`, `text`, and metadata left unread)
    and MS MARCO's queries.dev.small.tsv (`qid<TAB>text`, one text with a leading space)."""
    qids, texts = read_question_texts(PUBLISHED / "beir_climate_fever_queries.head.jsonl")
    assert qids == ["0", "5", "6"] and texts[0] == "Global warming is driving polar bears toward extinction"
    assert texts[1].startswith("The sun has gone into \u2018lockdown\u2019")
    qids, texts = read_question_texts(PUBLISHED / "msmarco_queries.dev.small.head.tsv")
    assert len(qids) == 10 and (qids[0], texts[0]) == ("1048585", "what is paula deen's brother")
    assert (qids[1], texts[1]) == ("2", "Androgen receptor define")


def test_question_files_that_are_not_one_say_where(tmp_path):
    three = tmp_path / "topics.tsv"
    three.write_text("1\tfirst\n2\tsecond\textra\n")
    with pytest.raises(DataFormatError, match=r"topics.tsv:2 has 3 tab-separated fields; expected qid<TAB>question"):
        read_question_texts(three)
    neither = tmp_path / "q.jsonl"
    neither.write_text('{"id": "1", "query": "x"}\n')
    with pytest.raises(DataFormatError, match=r"q.jsonl:1 is neither an object with a qid and a question nor BEIR's"):
        read_question_texts(neither)
    lines = tmp_path / "q.txt"
    lines.write_text("first\n\nthird\n")
    assert read_question_texts(lines) == (["1", "3"], ["first", "third"])  # qids: line numbers in the file


def test_answer_questions_round_trip_and_stay_absent_when_not_given(tmp_path):
    given = MultiAnswerQuestion("a", "q?", [["x"], ["y"]], [["1"], ["2"]], answer_questions=["qx?", "qy?"])
    plain = MultiAnswerQuestion("b", "r?", [["z"]], [["3"]])
    write_questions(tmp_path / "q.jsonl", [given, plain])
    assert read_questions(tmp_path / "q.jsonl") == [given, plain]
    records = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert records[0]["answer_questions"] == ["qx?", "qy?"] and "answer_questions" not in records[1]
    assert read_questions(tmp_path / "q.jsonl")[1].answer_questions is None


@pytest.mark.parametrize(
    "answer_questions,message",
    [
        (["qx?"], r"q.jsonl:2: question 'a' has 2 answers but 1 answer_questions; give one question per answer"),
        (["qx?", "qy?", "qz?"], r"question 'a' has 2 answers but 3 answer_questions"),
        ("qx?", r"q.jsonl:2: question 'a' has answer_questions 'qx\?'; expected a list of non-empty strings"),
        (["qx?", " "], r"has answer_questions \['qx\?', ' '\]; expected a list of non-empty strings, one"),
        (["qx?", 3], r"expected a list of non-empty strings, one question per answer"),
    ],
)
def test_misaligned_answer_questions_name_the_line_qid_and_lengths(tmp_path, answer_questions, message):
    plain = {"qid": "p", "question": "p?", "answers": [["w"]], "targets": [["0"]]}
    bad = {"qid": "a", "question": "q?", "answers": [["x"], ["y"]], "targets": [["1"], ["2"]]}
    lines = [json.dumps(plain), json.dumps(bad | {"answer_questions": answer_questions})]
    (tmp_path / "q.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError, match=message):
        read_questions(tmp_path / "q.jsonl")
    question = MultiAnswerQuestion("a", "q?", [["x"], ["y"]], [["1"], ["2"]], answer_questions=answer_questions)
    with pytest.raises(DataFormatError, match=message.replace("q.jsonl:2", "w.jsonl")):
        write_questions(tmp_path / "w.jsonl", [question])


def test_ambigqa_keeps_each_answers_disambiguated_question():
    """Checked by hand against the records' `qaPairs`. A joined cluster keeps its first pair's
    question: the African Union chairmen, asked by two annotators (by rank, then by year), keep
    the first's; the food stamp card's "June 2004" is only the second annotator's, so its question
    is the second's. A record with a singleAnswer annotation (the doctor in Dexter, singleAnswer
    only) is not read at all, so no question comes without answer_questions."""
    questions = {q.qid: q for q in read_ambigqa(PUBLISHED / "dev_light.sample.json")}
    assert questions["5780388869788119926"].answer_questions == [
        "Who is the 4th chairman of african union commission?",
        "Who is the 3rd chairman of african union commission?",
        "Who is the 2nd chairman of african union commission?",
    ]
    assert questions["-6391747800866431933"].answer_questions == [
        "When did the first food stamp card come out?",
        "When did the food stamp card replace food stamps in all states?",
        "When did the food stamp card come out in all states?",
    ]
    assert "-807825952267713091" not in questions  # "Who plays the doctor in dexter season 1?": singleAnswer
    assert all(len(q.answer_questions) == len(q.answers) for q in questions.values())
    train = {q.qid: q for q in read_ambigqa(PUBLISHED / "train_light.sample.json")}
    assert train["-6631915997977101143"].answers[0] == ["18 years of age", "18"]
    assert train["-6631915997977101143"].answer_questions[1] == (
        "What is the legal age of marriage, without parental consent or other authorization, in Nebraska?"
    )
    assert "4790842463458965203" not in train  # George Washington in John Adams: singleAnswer only
    assert all(q.answer_questions is None for q in read_qampari(PUBLISHED / "qampari_dev_data.sample.jsonl"))
    assert all(q.answer_questions is None for q in read_nq_open_multi(PUBLISHED / "NQ-open.dev.sample.jsonl"))


def test_ambigqa_pair_without_its_question_is_an_error(tmp_path):
    records = json.loads((PUBLISHED / "dev_light.sample.json").read_text(encoding="utf-8"))
    del records[7]["annotations"][0]["qaPairs"][1]["question"]
    (tmp_path / "dev_light.json").write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(DataFormatError, match="entry 7 has a qaPair without its disambiguated 'question'"):
        read_ambigqa(tmp_path / "dev_light.json")


def test_the_term_reads_answer_questions_and_refuses_questions_without_any():
    """Each question's distinct answer_questions in order; one without them is itself (a mixed set,
    e.g. AmbigQA's with NQ-open's); none with them at all is refused with the fix named."""
    compound = MultiAnswerQuestion("c", "a? b?", [["x"], ["y"], ["z"]], answer_questions=["a?", "a?", "b?"])
    plain = MultiAnswerQuestion("p", "plain?", [["w"]])
    assert component_texts([compound, plain]) == [["a?", "b?"], ["plain?"]]
    with pytest.raises(ValueError, match="none of the 1 questions in f.jsonl has answer_questions.*component_weight 0"):
        component_texts([plain], " in f.jsonl")


@pytest.mark.parametrize("damage", ["cut short", "one byte changed", "gone"])
def test_a_damaged_document_store_is_said_and_written_again(tmp_path, capsys, damage):
    path = tmp_path / "passages.tsv"
    shutil.copy(PUBLISHED / "psgs_w100.head.tsv", path)
    expected = list(iter_documents(path))
    DocumentStore.of_corpus(path, tmp_path / "store", {"file": 1}, progress=False)
    text = tmp_path / "store" / "text.bytes"
    if damage == "cut short":
        text.write_bytes(text.read_bytes()[:-5])
    elif damage == "one byte changed":
        data = bytearray(text.read_bytes())
        data[3] ^= 0x01  # a letter of the first passage: the store would read it without a word
        text.write_bytes(bytes(data))
    else:
        text.unlink()
    store = DocumentStore.of_corpus(path, tmp_path / "store", {"file": 1}, progress=False)
    assert f"the corpus store {tmp_path / 'store'} is damaged (text.bytes " in capsys.readouterr().out
    assert [store.document(row) for row in range(len(store))] == expected
