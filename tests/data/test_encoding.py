"""Sharded corpus encoding (resume after an interruption) and search over the shards."""

import os
import signal
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from stand_ins import HashEncoder, documents

from amer_lib import io
from amer_lib.core.index import (
    IVFPQIndex,
    ShardedFlatIndex,
    VectorIndex,
    half_to_float,
    recall_against_exact,
)
from amer_lib.data.corpus import Document
from amer_lib.data.encoders import DamagedShardError, EmbeddingShards, EncodingStopped, encode_corpus
from amer_lib.data.questions import DataFormatError
from amer_lib.io import file_sha256
from amer_lib.progress import AmerWarning


def test_interrupted_encoding_resumes_to_the_same_shards(tmp_path):
    expected = encode_corpus(HashEncoder(), documents(50), tmp_path / "a", shard_size=8, batch_size=2, progress=False)
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(
            HashEncoder(fail_after=3), documents(50), tmp_path / "b", shard_size=8, batch_size=2, progress=False
        )  # one encode call covers 32 documents: dies in shard 3
    with pytest.raises(RuntimeError, match="incomplete; run encode_corpus again"):
        EmbeddingShards(tmp_path / "b")
    resumed_encoder = HashEncoder()
    resumed = encode_corpus(resumed_encoder, documents(50), tmp_path / "b", shard_size=8, batch_size=2, progress=False)
    assert resumed_encoder.calls == 4  # shards 0-2 were complete; 3-6 were encoded again
    assert resumed.ids == expected.ids == [f"d{i}" for i in range(50)]
    for a, b in zip(expected.shards, resumed.shards):
        assert a.dtype == np.float16 and np.array_equal(a, b)
    assert np.allclose(
        resumed.rows(np.array([[0, 49], [8, 9]])),
        HashEncoder().encode_documents([documents(50)[i].full_text for i in (0, 49, 8, 9)], 4).reshape(2, 2, 16),
        atol=1e-3,
    )


def test_duplicate_ids_stop_the_encoding(tmp_path):
    docs = documents(5) + [Document("d2", "again", "dup")]
    with pytest.raises(DataFormatError, match="document id 'd2' twice"):
        encode_corpus(HashEncoder(), docs, tmp_path, shard_size=4, progress=False)
    assert not (tmp_path / "shard_00001.npy").exists()  # the shard with the duplicate was not written


def test_sharded_flat_search_equals_one_flat_index(tmp_path):
    shards = encode_corpus(HashEncoder(), documents(300), tmp_path, shard_size=64, progress=False)
    queries = np.random.default_rng(1).normal(size=(7, 3, 16))
    exact_scores, exact_rows = VectorIndex(shards.rows(np.arange(300))).search(queries, 10)
    scores, rows = ShardedFlatIndex(shards, block_rows=40).search(queries, 10)
    assert rows.shape == (7, 3, 10)
    assert np.array_equal(rows, exact_rows)
    assert np.allclose(scores, exact_scores, atol=1e-5)


def test_ivfpq_recall_is_measured_against_exact_search(tmp_path):
    shards = encode_corpus(HashEncoder(), documents(2000), tmp_path, shard_size=512, progress=False)
    queries = shards.rows(np.arange(0, 2000, 20)) + 0.05 * np.random.default_rng(2).normal(size=(100, 16))
    _, exact = ShardedFlatIndex(shards).search(queries, 10)
    index = IVFPQIndex(shards, "IVF16,PQ4", nprobe=16)
    _, approx = index.search(queries, 10)
    recall = recall_against_exact(approx, exact)
    assert recall == pytest.approx(np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx, exact)]))
    assert 0.2 < recall < 1.0  # 4-byte codes lose some neighbours but find many
    assert recall_against_exact(exact, exact) == 1.0
    index.set_nprobe(1)  # one of the 16 lists: fewer of the exact neighbours are even looked at
    assert recall_against_exact(index.search(queries, 10)[1], exact) < recall


def test_query_of_another_dimension_is_refused(tmp_path):
    shards = encode_corpus(HashEncoder(), documents(20), tmp_path, shard_size=8, progress=False)
    with pytest.raises(ValueError, match="dimension 32, but the index holds dimension 16"):
        ShardedFlatIndex(shards).search(np.ones((2, 32)), 5)


def test_other_encoder_settings_need_another_directory(tmp_path):
    encode_corpus(HashEncoder(), documents(20), tmp_path, shard_size=8, progress=False)
    with pytest.raises(ValueError, match="Use another directory"):
        encode_corpus(HashEncoder(), documents(20), tmp_path, shard_size=4, progress=False)


def test_half_to_float_reads_a_read_only_memory_map_into_the_front_of_a_buffer(tmp_path):
    rows = np.random.default_rng(3).normal(size=(50, 16)).astype(np.float16)
    np.save(tmp_path / "rows.npy", rows)
    mapped = np.load(tmp_path / "rows.npy", mmap_mode="r")
    buffer = np.full((80, 16), np.nan, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's warning about a non-writable array is silenced
        out = half_to_float(mapped[10:40], buffer)
    assert out.shape == (30, 16) and np.shares_memory(out, buffer)
    assert np.array_equal(out, rows[10:40].astype(np.float32))
    assert np.isnan(buffer[30:]).all()


def test_ivfpq_build_reports_its_training_and_adding_time(tmp_path):
    shards = encode_corpus(HashEncoder(), documents(600), tmp_path, shard_size=256, progress=False)
    index = IVFPQIndex(shards, "IVF8,PQ4", nprobe=8)
    assert set(index.build_seconds) == {"train", "add"} and min(index.build_seconds.values()) > 0
    assert len(index) == 600 and index.code_size == 4


def test_an_index_the_corpus_is_too_small_to_train_is_skipped_saying_so(tmp_path):
    """faiss asks for 39 training points per centroid: 39 x 16 inverted lists = 624 fit 700
    documents; 8-bit PQ codes (256 centroids per part) need 9,984 and are skipped, with a warning
    (before this check they took minutes to train on a few hundred documents)."""
    from amer_lib.core.index import training_points_needed
    from amer_lib.experiments.real_data_prep import index_check

    assert training_points_needed("IVF16,PQ4x4", 16) == 624 and training_points_needed("IVF16,PQ4", 16) == 9984
    shards = encode_corpus(HashEncoder(), documents(700), tmp_path, shard_size=256, progress=False)
    with pytest.warns(AmerWarning, match=r"IVF16,PQ4 skipped: the corpus has 700 documents and faiss needs 9,984"):
        rows = index_check(BenchmarkView(shards), QueryEncoder(), ["IVF16,PQ4x4", "IVF16,PQ4"], [4, 16])
    assert [(r["index"], r["nprobe"]) for r in rows] == [
        ("exact (float16 shards)", "-"),
        ("IVF16,PQ4x4", 4),
        ("IVF16,PQ4x4", 16),
    ]


class QueryEncoder(HashEncoder):
    def encode_queries(self, texts):
        return self.encode_documents(texts, 8)


@dataclass
class Question:
    question: str


class BenchmarkView:  # the benchmark's view index_check reads: one dataset, five test questions
    datasets = ["mine"]

    def __init__(self, shards):
        self.shards = shards

    def embeddings(self, name):
        return self.shards

    def questions(self, dataset, split):
        return [Question(f"question {i}") for i in range(5)]


def test_the_ivfpq_sweep_shows_each_step_as_it_begins(tmp_path, monkeypatch):
    """Notebook 03's sweep ran for 8-23 minutes without a word: its bar counts one step for exact
    search, then per factory its training, its adding and each nprobe's searches, and names each
    step when it begins (the IVF-PQ index calls back before training and before adding)."""
    import amer_lib.progress
    from amer_lib.experiments.real_data_prep import index_check

    bars = []

    class Bar:  # records what index_check's bar is told
        def __init__(self, total, desc, **options):
            self.total, self.desc, self.n, self.shown, self.closed = total, desc, 0, [], False
            bars.append(self)

        def update(self, n=1):
            self.n += n

        def set_postfix_str(self, text):
            self.shown.append((self.n, text))

        def close(self):
            self.closed = True

    monkeypatch.setattr(amer_lib.progress, "tqdm", Bar)
    shards = encode_corpus(HashEncoder(), documents(700), tmp_path, shard_size=256, progress=False)
    with pytest.warns(UserWarning, match="IVF16,PQ4 skipped"):  # a skipped factory is no step
        index_check(BenchmarkView(shards), QueryEncoder(), ["IVF16,PQ4x4", "IVF16,PQ4"], [4, 16])
    (bar,) = bars
    assert (bar.desc, bar.total, bar.n, bar.closed) == ("IVF-PQ sweep", 5, 5, True)
    assert bar.shown == [
        (0, "exact search"),
        (1, "IVF16,PQ4x4 train"),
        (2, "IVF16,PQ4x4 add"),
        (3, "IVF16,PQ4x4 nprobe 4"),
        (4, "IVF16,PQ4x4 nprobe 16"),
    ]


def test_the_ivfpq_sweep_bar_reads_complete_in_the_saved_output(tmp_path, capsys):
    from amer_lib.experiments.real_data_prep import index_check

    shards = encode_corpus(HashEncoder(), documents(700), tmp_path, shard_size=256, progress=False)
    index_check(BenchmarkView(shards), QueryEncoder(), ["IVF16,PQ4x4"], [4])
    shown = capsys.readouterr().out
    assert "IVF-PQ sweep: 100%" in shown and "4/4" in shown and "IVF16,PQ4x4 nprobe 4" in shown


def _files(directory):
    return {p.name: p.read_bytes() for p in directory.iterdir()}


def test_an_interrupted_shard_resumes_after_its_last_part_to_the_same_bytes(tmp_path):
    """Parts of 2 x 16 = 32 documents: shard 0 (80 documents) is three encoder calls, shard 1 is
    three more; the interruption comes in shard 1's second part, and the rerun encodes only its last
    two parts and the shards after it."""
    expected = encode_corpus(HashEncoder(), documents(200), tmp_path / "a", shard_size=80, batch_size=2, progress=False)
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(
            HashEncoder(fail_after=4), documents(200), tmp_path / "b", shard_size=80, batch_size=2, progress=False
        )
    assert sorted(p.name for p in (tmp_path / "b" / "shard_00001.parts").iterdir()) == [
        "rows_000000000.npy",
        "settings.json",
    ]
    resumed_encoder = HashEncoder()
    resumed = encode_corpus(
        resumed_encoder, documents(200), tmp_path / "b", shard_size=80, batch_size=2, progress=False
    )
    assert resumed_encoder.calls == 2 + 2  # shard 1's two parts left, then shard 2's 40 documents in two
    assert len(resumed) == len(expected) == 200
    assert _files(tmp_path / "b") == _files(tmp_path / "a")  # no parts left behind, every byte the same


def test_parts_of_another_batch_size_are_encoded_again(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(HashEncoder(fail_after=1), documents(80), tmp_path, shard_size=80, batch_size=2, progress=False)
    encoder = HashEncoder()
    encode_corpus(encoder, documents(80), tmp_path, shard_size=80, batch_size=4, progress=False)
    assert encoder.calls == 2  # 64 + 16 documents: the 32-document part of batch size 2 was not kept


def _damage_first_vector(path):  # the header intact, one value changed, the size unchanged
    data = bytearray(path.read_bytes())
    data[-2:] = bytes([data[-2] ^ 0xFF, data[-1]])
    path.write_bytes(bytes(data))


DAMAGES = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:-32]),
    "random values, header intact": lambda p: np.save(
        p, np.random.default_rng(0).normal(size=(8, 16)).astype(np.float16)
    ),
    "one value changed": _damage_first_vector,
    "garbage": lambda p: p.write_bytes(bytes(len(p.read_bytes()))),
    "gone": lambda p: p.unlink(),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_shard_is_refused_on_reading_and_encoded_again_alone(tmp_path, damage, capsys):
    encode_corpus(HashEncoder(), documents(30), tmp_path, shard_size=8, batch_size=2, progress=False)
    before = _files(tmp_path)
    DAMAGES[damage](tmp_path / "shard_00001.npy")
    with pytest.raises(DamagedShardError, match=r"shard_00001\.npy is damaged \(.+\); encode the corpus into .+ again"):
        EmbeddingShards(tmp_path)
    encoder = HashEncoder()
    shards = encode_corpus(encoder, documents(30), tmp_path, shard_size=8, batch_size=2, progress=False)
    assert encoder.calls == 1  # shard 1 alone
    assert f"shard 1 of {tmp_path} is damaged" in capsys.readouterr().out
    assert _files(tmp_path) == before and len(shards) == 30


def test_an_edited_ids_file_is_a_damaged_shard(tmp_path):
    encode_corpus(HashEncoder(), documents(16), tmp_path, shard_size=8, batch_size=2, progress=False)
    ids = tmp_path / "shard_00000.ids"
    ids.write_text(ids.read_text().replace("d3\n", "d99\n"))
    with pytest.raises(DamagedShardError, match=r"shard_00000\.ids is not the one written with it"):
        EmbeddingShards(tmp_path)


def test_a_shard_touched_but_unchanged_is_kept_and_checked_once(tmp_path, monkeypatch):
    encode_corpus(HashEncoder(), documents(16), tmp_path, shard_size=8, batch_size=2, progress=False)
    vectors = tmp_path / "shard_00000.npy"
    later = (tmp_path / "shard_00000.json").stat().st_mtime_ns + 10**9
    os.utime(vectors, ns=(later, later))  # copied, or touched: modified after its record
    hashed = []
    monkeypatch.setattr(io, "file_sha256", lambda path: hashed.append(path) or file_sha256(path))
    EmbeddingShards(tmp_path)
    EmbeddingShards(tmp_path)
    assert hashed == [vectors]  # read once; the record touched, so the second look is cheap


class SignallingEncoder(HashEncoder):
    """Sends its own process `signum` during its `at`-th call, as Ctrl-C or `kill` would."""

    def __init__(self, signum, at):
        super().__init__()
        self.signum, self.at = signum, at

    def encode_documents(self, texts, batch_size):
        if self.calls + 1 == self.at:
            os.kill(os.getpid(), self.signum)
        return super().encode_documents(texts, batch_size)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_encoding_after_its_part_and_the_rerun_resumes_there(tmp_path, capsys, signum):
    encode_corpus(HashEncoder(), documents(200), tmp_path / "a", shard_size=80, batch_size=2, progress=False)
    with pytest.raises(EncodingStopped):  # during shard 1's first part (the 4th call)
        encode_corpus(
            SignallingEncoder(signum, 4), documents(200), tmp_path / "b", shard_size=80, batch_size=2, progress=False
        )
    name = signal.Signals(signum).name
    assert capsys.readouterr().out.splitlines() == [
        f"stopped encoding {tmp_path / 'b'} in shard 1, after 32 of its 80 documents ({name}); "
        "the same command resumes there"
    ]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    resumed_encoder = HashEncoder()
    encode_corpus(resumed_encoder, documents(200), tmp_path / "b", shard_size=80, batch_size=2, progress=False)
    assert resumed_encoder.calls == 2 + 2
    assert _files(tmp_path / "b") == _files(tmp_path / "a")


def test_a_signal_in_a_shards_last_part_stops_once_the_shard_is_written(tmp_path, capsys):
    with pytest.raises(EncodingStopped):
        encode_corpus(
            SignallingEncoder(signal.SIGTERM, 3), documents(200), tmp_path, shard_size=80, batch_size=2, progress=False
        )
    assert capsys.readouterr().out.splitlines() == [
        f"stopped encoding {tmp_path} after shard 0 (SIGTERM); the same command resumes there"
    ]
    assert (tmp_path / "shard_00000.json").exists() and not (tmp_path / "shard_00001.parts").exists()


def test_an_encoding_made_with_other_weights_is_not_added_to(tmp_path):
    """The same encoder name with other weights (a newer snapshot in the Hugging Face cache) would mix
    two models' vectors in one index."""
    old = HashEncoder()
    old.weights = "hash@1111"
    encode_corpus(old, documents(20), tmp_path, shard_size=8, progress=False)
    assert EmbeddingShards(tmp_path).manifest["weights"] == "hash@1111"
    new = HashEncoder()
    new.weights = "hash@2222"
    with pytest.raises(ValueError, match=r"other settings \(weights 'hash@1111', asked 'hash@2222'\)\. Use another"):
        encode_corpus(new, documents(20), tmp_path, shard_size=8, progress=False)


def test_the_offline_encoder_names_its_weights_by_their_sha256():
    from amer_lib.data.encoders import DocumentEncoder
    from amer_lib.packaged import MINILM

    assert DocumentEncoder("minilm").weights == f"sha256:{MINILM.sha256}"


def test_an_encoding_of_a_file_that_changed_since_is_refused_and_a_touched_one_reused(tmp_path):
    from amer_lib.data.corpus import iter_documents

    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("id\ttext\ttitle\n" + "".join(f"d{i}\ttext number {i}\ttitle {i}\n" for i in range(20)))
    encode = lambda encoder: encode_corpus(  # noqa: E731
        encoder, iter_documents(corpus), tmp_path / "out", shard_size=8, progress=False, source=corpus
    )
    encode(HashEncoder())
    os.utime(corpus)  # touched, the same bytes: reused without encoding
    untouched = HashEncoder()
    encode(untouched)
    assert untouched.calls == 0
    corpus.write_text(corpus.read_text().replace("text number 3\t", "text number three\t"))  # the same ids
    with pytest.raises(ValueError, match=r"corpus\.tsv changed since .*out was encoded from it \(sha256 \w+ then"):
        encode(HashEncoder())
