"""Every parameter of notebook 03 (`PrepConfig`) bites: each reaches what `prepare(params)` and the
notebook's later cells (`index_check`) do with it, shown on small real benchmarks where that is
cheap (the shipped WordNet questions cut to a few, a dataset of ten questions of one's own, encoded
by a stand-in encoder) and by the arguments the expensive callees receive where it is not (the
compound benchmark, the paper's data). The registry and the meta-test are
tests/runs/test_notebook_knobs.py's."""

import json

import pytest
from conftest import notebook_config
from stand_ins import HashEncoder, documents
from test_notebook_knobs import bites

from amer_lib.beyond import compound_preparation
from amer_lib.data import preparation
from amer_lib.data.encoders import encode_corpus
from amer_lib.data.preparation import prepare


class CountingEncoder(HashEncoder):
    """The stand-in document encoder, recording each call's documents and the batch size it is asked for."""

    def __init__(self, name: str, device=None):
        super().__init__(name)
        self.device, self.batches = device, []

    def encode_documents(self, texts, batch_size):
        self.batches.append((len(texts), batch_size))
        return super().encode_documents(texts, batch_size)

    def encode_queries(self, texts):
        return self.encode_documents(texts, 8)


@pytest.fixture
def encoders(monkeypatch):
    """`prepare`'s document encoders replaced by counting stand-ins (no model is loaded); the list of them made."""
    made = []

    def make(name, device=None):
        made.append(CountingEncoder(name, device))
        return made[-1]

    monkeypatch.setattr(preparation, "DocumentEncoder", make)
    return made


def encoded(benchmark, name: str) -> dict:
    return json.loads((benchmark.directory / "embeddings" / name / "manifest.json").read_text())


@bites(
    "PrepConfig.source",
    "PrepConfig.max_train",
    "PrepConfig.max_test",
    "PrepConfig.corpus_size",
    "PrepConfig.seed",
    "PrepConfig.prepared_dir",
    "PrepConfig.encoder",
    "PrepConfig.device",
    "PrepConfig.shard_size",
    "PrepConfig.encode_batch_size",
)
def test_notebook_03_prepares_wordnet_to_its_sizes_and_seed_and_encodes_it_in_its_shards_and_batches(
    encoders, tmp_path
):
    """Source "wordnet": max_train / max_test questions per dataset, a corpus of corpus_size documents
    (the few questions' gold glosses fit in it), drawn by seed, written to prepared_dir; the corpus
    encoded by `encoder` on `device` (None for "auto") into ceil(100 / 40) = 3 shards of batches of
    at most 16 documents."""
    params = notebook_config(
        "03_real_data_prep",
        max_train=5,
        max_test=3,
        corpus_size=100,
        shard_size=40,
        encode_batch_size=16,
        encoder="contriever-msmarco",
        device="cpu",
        prepared_dir=str(tmp_path / "a"),
    )
    benchmark, mapping = prepare(params, progress=False)
    assert mapping == {} and benchmark.directory == tmp_path / "a" and (tmp_path / "a" / "manifest.json").exists()
    assert benchmark.datasets == ["wordnet_senses", "wordnet_kinds"]
    assert [
        (len(benchmark.questions(d, "train")), len(benchmark.questions(d, "test"))) for d in benchmark.datasets
    ] == [
        (5, 3),
        (5, 3),
    ]
    assert len(list(benchmark.documents())) == 100
    (encoder,) = encoders
    assert (encoder.spec.name, encoder.device) == ("contriever-msmarco", "cpu")
    manifest = encoded(benchmark, "contriever-msmarco")
    assert (manifest["n_documents"], manifest["n_shards"]) == (100, 3)
    assert encoder.batches == [(40, 16), (40, 16), (20, 16)]
    other = prepare(params.replace(seed=1, device="auto", prepared_dir=str(tmp_path / "b")), progress=False)[0]
    qids = lambda b: [q.qid for d in b.datasets for split in ("train", "test") for q in b.questions(d, split)]  # noqa: E731
    assert qids(other) != qids(benchmark) and encoders[1].device is None
    with pytest.raises(ValueError, match="use_titles = False applies to source 'files'"):
        prepare(params.replace(use_titles=False, prepared_dir=str(tmp_path / "c")), progress=False)


def own_files(folder, n_questions=10, answers=3):
    """Ten questions of three answers each over a corpus of 40 titled passages."""
    folder.mkdir()
    lines = ["id\ttext\ttitle", *(f"d{i}\tpassage number {i}\tTitle {i}" for i in range(40))]
    (folder / "corpus.tsv").write_text("\n".join(lines) + "\n")
    records = [
        {
            "qid": f"q{q}",
            "question": f"question {q}?",
            "answers": [[f"a{q}_{a}"] for a in range(answers)],
            "targets": [[f"d{(q + a) % 40}"] for a in range(answers)],
        }
        for q in range(n_questions)
    ]
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "test.jsonl").write_text("".join(json.dumps({**r, "qid": f"t{r['qid']}"}) + "\n" for r in records[:2]))
    return folder


@bites("PrepConfig.validation_questions_path")
def test_notebook_03_validates_on_your_validation_file_and_refuses_it_for_other_sources(encoders, tmp_path):
    files = own_files(tmp_path / "own")
    records = [json.loads(line) for line in (files / "questions.jsonl").read_text().splitlines()]
    (files / "validation.jsonl").write_text(
        "".join(json.dumps({**r, "qid": f"v{r['qid']}"}) + "\n" for r in records[:3])
    )
    params = notebook_config(
        "03_real_data_prep",
        source="files",
        questions_path=str(files / "questions.jsonl"),
        corpus_path=str(files / "corpus.tsv"),
        validation_questions_path=str(files / "validation.jsonl"),
        dataset_name="mine",
        device="cpu",
        prepared_dir=str(tmp_path / "a"),
    )
    with pytest.warns(UserWarning, match="3 validation question"):
        benchmark = prepare(params, progress=False)[0]
    expected = [f"v{r['qid']}" for r in records[:3]]
    assert [q.qid for q in benchmark.questions("mine", "validation")] == expected
    assert [q.qid for q in benchmark.training_split("mine", 4)[1]] == expected
    with pytest.raises(ValueError, match="validation_questions_path applies to source 'files'"):
        prepare(params.replace(source="wordnet", prepared_dir=str(tmp_path / "b")), progress=False)


@bites(
    "PrepConfig.questions_path",
    "PrepConfig.corpus_path",
    "PrepConfig.test_questions_path",
    "PrepConfig.test_fraction",
    "PrepConfig.dataset_name",
    "PrepConfig.n_queries",
    "PrepConfig.use_titles",
)
def test_notebook_03_prepares_a_dataset_of_your_own_by_its_name_split_vectors_and_titles(encoders, tmp_path):
    files = own_files(tmp_path / "own")
    params = notebook_config(
        "03_real_data_prep",
        source="files",
        questions_path=str(files / "questions.jsonl"),
        corpus_path=str(files / "corpus.tsv"),
        dataset_name="mine",
        test_fraction=0.3,
        device="cpu",
        prepared_dir=str(tmp_path / "a"),
    )
    benchmark = prepare(params, progress=False)[0]
    assert benchmark.datasets == ["mine"] and len(list(benchmark.documents())) == 40
    assert (len(benchmark.questions("mine", "train")), len(benchmark.questions("mine", "test"))) == (7, 3)
    assert benchmark.n_queries("mine") == 3  # n_queries = 0: the median answer count
    assert next(benchmark.documents()).full_text == "Title 0 passage number 0"
    other = prepare(
        params.replace(
            dataset_name="yours",
            test_questions_path=str(files / "test.jsonl"),
            n_queries=2,
            use_titles=False,
            prepared_dir=str(tmp_path / "b"),
        ),
        progress=False,
    )[0]
    assert other.datasets == ["yours"] and other.n_queries("yours") == 2
    assert [q.qid for q in other.questions("yours", "test")] == ["tq0", "tq1"]  # the file's, not a draw
    assert len(other.questions("yours", "train")) == 10
    assert next(other.documents()).full_text == "passage number 0"
    with pytest.raises(FileNotFoundError, match="nowhere.tsv does not exist"):
        prepare(params.replace(corpus_path=str(tmp_path / "nowhere.tsv"), prepared_dir=str(tmp_path / "c")), False)


@bites(
    "PrepConfig.compound_ks",
    "PrepConfig.compound_components",
    "PrepConfig.compound_max_answers",
    "PrepConfig.compound_findable_depth",
)
def test_notebook_03_hands_the_compound_benchmark_its_ks_components_answers_and_depth(encoders, monkeypatch, tmp_path):
    """Source "compound": `prepare_compound` (stopped there) receives the config's values, and the
    encoder that finds the components, in the order of its signature."""

    class Asked(Exception):
        pass

    def asked(*args):
        raise Asked(*args)

    monkeypatch.setattr(compound_preparation, "prepare_compound", asked)
    params = notebook_config(
        "03_real_data_prep",
        source="compound",
        compound_ks=[2, 4],
        compound_components=["kinds"],
        compound_max_answers=5,
        compound_findable_depth=0,
        max_train=7,
        max_test=3,
        corpus_size=90,
        shard_size=11,
        encode_batch_size=12,
        seed=6,
        device="cpu",
        prepared_dir=str(tmp_path / "a"),
    )
    with pytest.raises(Asked) as raised:
        prepare(params, progress=False)
    directory, *rest, progress = raised.value.args
    assert directory == tmp_path / "a" and progress is False
    assert rest == [[2, 4], 7, 3, 90, 5, ["kinds"], 6, encoders[0], 0, 11, 12]


@bites("PrepConfig.raw_dir", "PrepConfig.mapping_encoders")
def test_notebook_03_maps_the_paper_data_with_each_mapping_encoder_and_reads_the_raw_files(
    encoders, monkeypatch, tmp_path
):
    """Source "paper": the corpus encoded with every mapping encoder (the document encoder's own
    encoding reused when it is one of them), each searched by the gold mapping of `raw_dir`'s files
    (`prepare_paper_data`, stopped there)."""

    class Asked(Exception):
        pass

    def asked(*args):
        raise Asked(*args)

    encodings = []
    monkeypatch.setattr(preparation, "prepare_paper_data", asked)
    monkeypatch.setattr(preparation, "iter_documents", lambda path: iter(documents(5)))
    monkeypatch.setattr(preparation, "ShardedFlatIndex", lambda shards: shards)
    monkeypatch.setattr(
        preparation,
        "encode_corpus",
        lambda encoder, docs, directory, *args, **options: encodings.append(directory.name) or encoder.spec.name,
    )
    params = notebook_config(
        "03_real_data_prep",
        source="paper",
        raw_dir=str(tmp_path / "raw"),
        corpus_path=str(tmp_path / "chunks.jsonl"),
        encoder="contriever-msmarco",
        mapping_encoders=["minilm", "contriever-msmarco"],
        seed=3,
        device="cpu",
        prepared_dir=str(tmp_path / "a"),
    )
    with pytest.raises(Asked) as raised:
        prepare(params, progress=False)
    raw_dir, corpus_path, directory, retrievers, seed, progress = raised.value.args
    assert (raw_dir, corpus_path, directory, seed) == (
        str(tmp_path / "raw"),
        str(tmp_path / "chunks.jsonl"),
        tmp_path / "a",
        3,
    )
    assert encodings == ["minilm", "contriever-msmarco"]
    assert [encoder.spec.name for encoder, _ in retrievers] == ["minilm", "contriever-msmarco"]
    assert retrievers[1][0] is encoders[0]  # the document encoder, not a second one of the same name
    assert [e.spec.name for e in encoders] == ["contriever-msmarco", "minilm"]


@bites("PrepConfig.ivfpq_factories", "PrepConfig.ivfpq_nprobes")
def test_the_ivfpq_sweep_builds_the_configs_factories_and_searches_at_its_nprobes(tmp_path):
    """Notebook 03's `index_check(benchmark, encoder, ivfpq_factories, ivfpq_nprobes, seed=seed)`: one
    row per factory and nprobe after exact search's; a factory the encoder's dimension cannot hold is
    refused by the config, before any encoding."""
    from dataclasses import dataclass

    from amer_lib.experiments.real_data_prep import index_check

    @dataclass
    class Question:
        question: str

    class Benchmark:  # what index_check reads: one dataset of five test questions, and the embeddings
        datasets = ["mine"]

        def embeddings(self, name):
            return shards

        def questions(self, dataset, split):
            return [Question(f"question {i}") for i in range(5)]

    shards = encode_corpus(HashEncoder(), documents(700), tmp_path, shard_size=256, progress=False)
    params = notebook_config("03_real_data_prep", ivfpq_factories=["IVF16,PQ4x4"], ivfpq_nprobes=[2, 8])
    rows = index_check(Benchmark(), CountingEncoder("hash"), params.ivfpq_factories, params.ivfpq_nprobes, seed=1)
    assert [(r["index"], r["nprobe"]) for r in rows] == [
        ("exact (float16 shards)", "-"),
        ("IVF16,PQ4x4", 2),
        ("IVF16,PQ4x4", 8),
    ]
    with pytest.raises(ValueError, match="PQ5"):  # minilm's 384 dimensions do not split into 5 parts
        notebook_config("03_real_data_prep", ivfpq_factories=["IVF16,PQ5"])
