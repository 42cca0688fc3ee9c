"""Mined hard negatives (beyond the paper): each question's highest-ranked non-gold documents, a
compound's components searched too, against numpy's own ranking."""

import numpy as np
import pytest
from stand_ins import HashEncoder, documents

from amer_lib.beyond import compound
from amer_lib.data import hard_negatives, wordnet
from amer_lib.data.encoders import encode_corpus
from amer_lib.data.questions import MultiAnswerQuestion
from amer_lib.io import recorded_damage


class QueryingHashEncoder(HashEncoder):
    def encode_queries(self, texts, batch_size=64):
        return self.encode_documents(texts, batch_size)


def test_interleave_reads_the_lists_rank_by_rank_without_gold_repeats_or_padding():
    rankings = [np.array([5, 1, 7, 9]), np.array([1, 3, 5, -1]), np.array([-1, 2])]
    # rank 1: 5, 1 (-1 is padding); rank 2: 1 again, 3, 2; rank 3: 7 is gold, 5 again; rank 4: 9
    assert hard_negatives.interleave(rankings, {7}, 5) == [5, 1, 3, 2, 9]
    assert hard_negatives.interleave(rankings, {7}, 2) == [5, 1]
    assert hard_negatives.interleave(rankings, {1, 2, 3, 5, 7, 9}, 3) == []


def test_a_plain_questions_negatives_are_numpys_top_non_gold_documents(tmp_path):
    encoder = QueryingHashEncoder("hash", 16)
    shards = encode_corpus(encoder, documents(60), tmp_path / "hash", progress=False)
    corpus = shards.rows(np.arange(len(shards))).astype(np.float32)
    questions = [
        MultiAnswerQuestion(f"q{i}", f"question {i}", [["a"], ["b"]], [[f"d{i}"], [f"d{i + 1}"]]) for i in range(5)
    ]
    mined = hard_negatives.mine(questions, encoder, shards, count=6, depth=20)
    for row, question in zip(mined, questions):
        order = np.argsort(-(corpus @ encoder.encode_queries([question.question])[0]), kind="stable")
        gold = {shards.row_of[d] for docs in question.targets for d in docs}
        assert row.tolist() == [int(r) for r in order if r not in gold][:6]
    with pytest.raises(ValueError, match=r"'q0': only [345] non-gold documents in the top 5 .* 6 wanted"):
        hard_negatives.mine(questions[:1], encoder, shards, count=6, depth=5)


def test_a_compound_is_searched_whole_and_by_each_component():
    first, second = wordnet.load_questions("senses", "test")[:2]
    joined = compound.join([first, second], 1)
    assert hard_negatives.query_texts(joined) == [joined.question, first.question, second.question]
    assert hard_negatives.query_texts(first) == [first.question]


def test_mined_rows_are_kept_once_per_question_set(tmp_path, monkeypatch):
    encoder = QueryingHashEncoder("hash", 16)
    shards = encode_corpus(encoder, documents(40), tmp_path / "hash", progress=False)
    questions = [MultiAnswerQuestion("q", "question", [["a"]], [["d3"]])]
    first = hard_negatives.cached_mine(tmp_path / "mined", questions, encoder, shards, count=4)
    monkeypatch.setattr(hard_negatives, "mine", lambda *a, **k: pytest.fail("mined again"))
    assert np.array_equal(hard_negatives.cached_mine(tmp_path / "mined", questions, encoder, shards, count=4), first)
    assert len(list((tmp_path / "mined").glob("*.npy"))) == 1  # no temporary file left, a record beside it
    assert len(list((tmp_path / "mined").iterdir())) == 2


@pytest.mark.parametrize("damage", ["truncated", "one value changed"])
def test_kept_rows_that_were_damaged_are_said_and_mined_again(tmp_path, capsys, damage):
    encoder = QueryingHashEncoder("hash", 16)
    shards = encode_corpus(encoder, documents(40), tmp_path / "hash", progress=False)
    questions = [MultiAnswerQuestion("q", "question", [["a"]], [["d3"]])]
    first = hard_negatives.cached_mine(tmp_path / "mined", questions, encoder, shards, count=4)
    (path,) = (tmp_path / "mined").glob("*.npy")
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[:-8]
    else:
        data[-8] ^= 0x01  # another document's row: np.load would read it without a word
    path.write_bytes(bytes(data))
    again = hard_negatives.cached_mine(tmp_path / "mined", questions, encoder, shards, count=4)
    assert np.array_equal(again, first)
    assert f"{path} is damaged (its sha256 is" in capsys.readouterr().out
    assert recorded_damage(path) is None  # written again, with its record
