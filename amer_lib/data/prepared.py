"""A prepared retrieval benchmark on disk: questions per dataset and split, the corpus, and the
corpus embeddings of each document encoder (notebook 03 writes it, notebook 04 reads it).

    <dir>/manifest.json                 {"corpus": <path of the corpus file>, "datasets": [...],
                                         "n_queries": {dataset: n}, "use_titles": bool, "recipe": {...}}
    <dir>/<dataset>_<split>.jsonl       the library's multi-answer format
    <dir>/qrels/<dataset>_<split>.qrels TREC qrels of the same questions
    <dir>/embeddings/<encoder>/         float16 shards + ids (amer_lib.data.encoders)
"""

from __future__ import annotations

import json
import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from amer_lib.core.config import Config, param
from amer_lib.core.device import DEVICES
from amer_lib.core.metrics import same_vs_random_cosine
from amer_lib.core.search import IVFPQIndex, ShardedFlatIndex, recall_against_exact, training_points_needed
from amer_lib.core.train import VALIDATION_FRACTION, split_train_validation, validation_size
from amer_lib.data import compound, wordnet
from amer_lib.data.compound import COMPONENT_KINDS
from amer_lib.data.corpus import Corpus, Document, iter_documents, write_tsv
from amer_lib.data.encoders import ENCODERS, DocumentEncoder, EmbeddingShards, encode_corpus
from amer_lib.data.gold import (
    DEPTH,
    ambigqa_splits,
    bm25_top_k,
    dense_top_k,
    map_gold_documents,
    proof_candidates,
    qampari_splits,
    question_candidates,
)
from amer_lib.data.questions import (
    DataFormatError,
    MultiAnswerQuestion,
    read_ambigqa,
    read_nq_open_multi,
    read_qampari,
    read_questions,
    write_questions,
)
from amer_lib.io import open_text, write_json, write_trec_qrels

# the offline WordNet benchmark, the paper's data from its files, or a dataset of your own (questions + corpus)
SOURCES = ("wordnet", "paper", "files", "compound")
SPLITS = ("train", "test")
# The paper's "development set and test set" of NQ-open (Lee et al., 2019), whose multi-answer
# questions join training: AmbigQA's nqopen-dev.json (8,757 questions held out of NQ's training
# set, like AmbigQA's own dev set) and nqopen-test.json (3,610: Google's NQ-open.dev.jsonl), the
# files the AMER authors read. Google's EfficientQA test set is not part of it.
NQ_OPEN_FILES = ("nqopen-dev.json", "nqopen-test.json")
# the paper's number of query vectors per dataset; the offline ones mirror AmbigQA and QAMPARI
N_QUERIES = {"ambigqa": 2, "qampari": 5, "wordnet_senses": 2, "wordnet_kinds": 5}
MAX_AUTO_QUERIES = 8  # a dataset of your own: n defaults to its median answer count, at most this
DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")  # it names files and runs


class Benchmark:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        manifest = self.directory / "manifest.json"
        if not manifest.exists():
            raise FileNotFoundError(
                f"{self.directory} holds no prepared benchmark; run notebooks/03_real_data_prep.ipynb first"
            )
        self.manifest = json.loads(manifest.read_text())

    @property
    def datasets(self) -> list[str]:
        return self.manifest["datasets"]

    def check(self, datasets: list[str]) -> None:
        """Fail before any work when a dataset asked for is not in this benchmark."""
        missing = [d for d in datasets if d not in self.datasets]
        if missing:
            raise ValueError(
                f"dataset(s) {missing} are not in the benchmark prepared in {self.directory}; it holds: "
                f"{', '.join(self.datasets)} (prepare another with notebooks/03_real_data_prep.ipynb)"
            )

    def n_queries(self, dataset: str) -> int:
        """How many query vectors AMER generates for the dataset's questions (benchmarks prepared
        before the manifest held it: the paper's number)."""
        self.check([dataset])
        return self.manifest.get("n_queries", N_QUERIES)[dataset]

    def training_split(self, dataset: str, seed: int) -> tuple[list[MultiAnswerQuestion], list[MultiAnswerQuestion]]:
        """The questions a run of `seed` trains on and those it validates on: the benchmark's own
        validation split where it has one (the compound benchmark's, made of components no training
        compound uses), else 10% of the training questions drawn by the seed (the paper's 90/10)."""
        questions = self.questions(dataset, "train")
        if (self.directory / f"{dataset}_validation.jsonl").exists():
            return questions, self.questions(dataset, "validation")
        train_idx, val_idx = split_train_validation(len(questions), seed)
        return [questions[i] for i in train_idx.tolist()], [questions[i] for i in val_idx.tolist()]

    def questions(self, dataset: str, split: str) -> list[MultiAnswerQuestion]:
        if dataset not in self.datasets:
            raise KeyError(f"dataset {dataset!r} is not in {self.directory}; it holds: {', '.join(self.datasets)}")
        return read_questions(self.directory / f"{dataset}_{split}.jsonl")

    def documents(self):
        """The corpus; without titles where it was prepared with `use_titles = False`."""
        documents = iter_documents(self.manifest["corpus"])
        if self.manifest.get("use_titles", True):
            return documents
        return (Document(d.id, "", d.text) for d in documents)

    def qrels(self, dataset: str, split: str = "test") -> Path:
        """The split's TREC qrels (every gold document of every answer relevant), written on first use:
        with the TREC run files of notebooks 01 and 04 they are what ir_measures, ranx and trec_eval read."""
        path = self.directory / "qrels" / f"{dataset}_{split}.qrels"
        if not path.exists():
            questions = self.questions(dataset, split)
            write_trec_qrels(path, {q.qid: [d for docs in q.targets for d in docs] for q in questions})
        return path

    def embeddings(self, encoder: str) -> EmbeddingShards:
        return EmbeddingShards(self.directory / "embeddings" / encoder)

    def encode(
        self, encoder, shard_size: int = 100_000, batch_size: int = 64, progress: bool = True
    ) -> EmbeddingShards:
        return encode_corpus(
            encoder,
            self.documents(),
            self.directory / "embeddings" / encoder.spec.name,
            shard_size,
            batch_size,
            total=self.manifest.get("corpus_size"),
            progress=progress,
        )


def _write(
    directory: Path,
    splits: dict[str, dict[str, list[MultiAnswerQuestion]]],
    corpus: str,
    corpus_size: int,
    extra: dict | None = None,
) -> Benchmark:
    """The questions, their qrels and the manifest (written last: a benchmark without one is not one);
    `extra` may give `n_queries` for datasets that are not built in."""
    for dataset, by_split in splits.items():
        for split, questions in by_split.items():
            write_questions(directory / f"{dataset}_{split}.jsonl", questions)
    manifest = {
        "corpus": str(corpus),
        "corpus_size": corpus_size,
        "datasets": list(splits),
        "n_queries": {d: N_QUERIES[d] for d in splits if d in N_QUERIES},
        **(extra or {}),
    }
    write_json(directory / "manifest.json", manifest)
    benchmark = Benchmark(directory)
    for dataset, by_split in splits.items():
        for split in by_split:
            benchmark.qrels(dataset, split)
    return benchmark


def existing(directory: str | Path, recipe: dict) -> Benchmark | None:
    """The benchmark already prepared in `directory` from the same `recipe`, or None if there is
    none; one from another recipe is an error (its embeddings would silently mismatch)."""
    manifest = Path(directory) / "manifest.json"
    if not manifest.exists():
        return None
    found = json.loads(manifest.read_text()).get("recipe")
    if found != recipe:
        raise ValueError(
            f"{directory} holds a benchmark prepared with {found}, not {recipe}; "
            "choose another prepared_dir or delete that one"
        )
    return Benchmark(directory)


def prepare_wordnet(directory: str | Path, max_train: int, max_test: int, corpus_size: int, seed: int = 0) -> Benchmark:
    """The offline benchmark, cut to CPU size: at most `max_train` / `max_test` questions per
    dataset (a seeded sample), and a corpus of every gold gloss of those questions plus random
    other glosses up to `corpus_size` documents."""
    directory = Path(directory)
    recipe = {
        "source": "wordnet",
        "max_train": max_train,
        "max_test": max_test,
        "corpus_size": corpus_size,
        "seed": seed,
    }
    if (found := existing(directory, recipe)) is not None:
        return found
    rng = np.random.default_rng(seed)
    splits = {}
    for kind in wordnet.KINDS:
        splits[f"wordnet_{kind}"] = {
            split: _sample(wordnet.load_questions(kind, split), limit, rng)
            for split, limit in (("train", max_train), ("test", max_test))
        }
    path, size = _wordnet_corpus(directory, splits, corpus_size, rng)
    return _write(directory, splits, path, size, {"recipe": recipe})


def _wordnet_corpus(
    directory: Path, splits: dict[str, dict[str, list[MultiAnswerQuestion]]], corpus_size: int, rng
) -> tuple[Path, int]:
    """`directory/corpus.tsv`: every gold gloss of the questions plus random other glosses up to
    `corpus_size` documents, in WordNet's order; its path and size."""
    corpus = wordnet.load_corpus()
    gold = {
        d for by_split in splits.values() for qs in by_split.values() for q in qs for docs in q.targets for d in docs
    }
    others = [d.id for d in corpus.documents if d.id not in gold]
    extra = rng.choice(len(others), max(0, min(len(others), corpus_size - len(gold))), replace=False)
    keep = gold | {others[i] for i in extra}
    chosen = [d for d in corpus.documents if d.id in keep]
    path = directory / "corpus.tsv"
    write_tsv(path, chosen)
    return path, len(chosen)


def prepare_compound(
    directory: str | Path,
    ks: list[int],
    max_train: int,
    max_test: int,
    corpus_size: int,
    max_answers: int,
    components: list[str],
    seed: int = 0,
    encoder=None,
    findable_depth: int = 0,
    shard_size: int = 100_000,
    batch_size: int = 64,
    progress: bool = True,
) -> Benchmark:
    """The compound benchmark (`amer_lib.data.compound`): for each k in `ks`, up to `max_train` /
    `max_test` compounds of k WordNet questions (`compound_k<k>`), at most `max_answers` answers
    each. With `findable_depth` > 0, only components whose answers `encoder` finds alone in its
    top `findable_depth` are drawn: the corpus is made first around the candidate components and
    encoded (the embeddings the benchmark keeps). AMER's n per dataset: the median answer count
    of its training compounds. Each dataset has its own validation split (`hold_out`)."""
    directory = Path(directory)
    recipe = {
        "source": "compound",
        "ks": ks,
        "max_train": max_train,
        "max_test": max_test,
        "corpus_size": corpus_size,
        "max_answers": max_answers,
        "components": components,
        "seed": seed,
        "validation_components": VALIDATION_FRACTION,
    }
    if findable_depth:
        if encoder is None:
            raise ValueError("findable components (findable_depth > 0) need the document encoder that finds them")
        recipe |= {"findable_depth": findable_depth, "findable_encoder": encoder.spec.name}
    if (found := existing(directory, recipe)) is not None:
        return found
    rng = np.random.default_rng(seed)
    pools = compound.component_pools(components)
    if findable_depth:
        pools = compound.candidates(pools, corpus_size, rng)
        path, size = _wordnet_corpus(directory, {"candidates": pools}, corpus_size, rng)
        shards = encode_corpus(
            encoder, iter_documents(path), directory / "embeddings" / encoder.spec.name, shard_size, batch_size,
            total=size, progress=progress,
        )  # fmt: skip
        pools = {split: compound.findable(pool, encoder, shards, findable_depth) for split, pool in pools.items()}
    pools["train"], pools["validation"] = compound.hold_out(pools["train"], VALIDATION_FRACTION, rng)
    limits = {"train": max_train, "validation": validation_size(max_train), "test": max_test}
    splits = {
        compound.dataset_name(k): {
            split: compound.sample_compounds(pools[split], k, limit, max_answers, rng)
            for split, limit in limits.items()
        }
        for k in ks
    }
    if not findable_depth:
        path, size = _wordnet_corpus(directory, splits, corpus_size, rng)
    n_queries = {dataset: default_n_queries(by_split["train"]) for dataset, by_split in splits.items()}
    manifest = {"recipe": recipe, "n_queries": n_queries, "components": {s: len(p) for s, p in pools.items()}}
    return _write(directory, splits, path, size, manifest)


def _sample(questions: list, limit: int, rng: np.random.Generator) -> list:
    if len(questions) <= limit:
        return questions
    return [questions[i] for i in sorted(rng.choice(len(questions), limit, replace=False))]


def prepare_paper_data(
    raw_dir: str | Path,
    corpus_path: str | Path,
    directory: str | Path,
    dense_retrievers: list[tuple],
    seed: int = 0,
    progress: bool = True,
    depth: int = DEPTH,
) -> tuple[Benchmark, dict]:
    """AmbigQA (+ NQ-open multi-answer) and QAMPARI mapped to gold passages, in Table 1's splits.

    `raw_dir` holds the published files (AmbigQA train_light.json / dev_light.json, NQ-open
    NQ-open.dev.jsonl / NQ-open.efficientqa.test.1.1.jsonl, QAMPARI train_data.jsonl /
    dev_data.jsonl); `dense_retrievers` are (encoder, index of its corpus embeddings) pairs whose
    top `depth` (the paper: 500) join BM25's for the AmbigQA and NQ-open questions (the paper: Contriever and
    inf-retriever). Returns the benchmark and the mapping reports, with the number of training
    questions removed because they are AmbigQA test questions.
    """
    recipe = {
        "source": "paper",
        "raw_dir": str(raw_dir),
        "corpus": str(corpus_path),
        "seed": seed,
        "depth": depth,
        "dense_retrievers": [encoder.spec.name for encoder, _ in dense_retrievers],
    }
    if (found := existing(directory, recipe)) is not None:
        return found, found.manifest["mapping"]
    raw = Path(raw_dir)
    corpus = Corpus.read(corpus_path)
    reports = {}

    def mapped(name: str, questions: list[MultiAnswerQuestion], proofs: bool = False) -> list[MultiAnswerQuestion]:
        if proofs:
            candidates = proof_candidates(questions, corpus, depth, progress)
        else:
            texts = [q.question for q in questions]
            candidates = question_candidates(
                bm25_top_k(corpus, texts, depth, progress),
                *(dense_top_k(encoder, index, texts, depth) for encoder, index in dense_retrievers),
            )
        kept, reports[name] = map_gold_documents(questions, corpus, candidates)
        return kept

    ambigqa, removed = ambigqa_splits(
        mapped("ambigqa_train", read_ambigqa(raw / "train_light.json")),
        mapped("ambigqa_dev", read_ambigqa(raw / "dev_light.json")),
        mapped("nq_open", [q for name in NQ_OPEN_FILES for q in read_nq_open_multi(raw / name)]),
        seed,
    )
    qampari = qampari_splits(
        mapped("qampari_train", read_qampari(raw / "train_data.jsonl"), proofs=True),
        mapped("qampari_dev", read_qampari(raw / "dev_data.jsonl"), proofs=True),
    )
    mapping = {name: vars(report) for name, report in reports.items()}
    mapping["ambigqa_train_removed_as_test_questions"] = removed
    benchmark = _write(
        Path(directory),
        {"ambigqa": ambigqa, "qampari": qampari},
        Path(corpus_path).resolve(),
        len(corpus),
        {"recipe": recipe, "mapping": mapping},
    )
    return benchmark, mapping


def split_questions(
    questions: list[MultiAnswerQuestion], test_fraction: float, seed: int = 0
) -> dict[str, list[MultiAnswerQuestion]]:
    """A seeded train / test split: `test_fraction` of the questions (at least one) to test, each
    split in the input's order."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    if len(questions) < 2:
        raise ValueError(f"{len(questions)} question(s) cannot be split into a train and a test set")
    n_test = min(len(questions) - 1, max(1, round(test_fraction * len(questions))))
    test = set(np.random.default_rng(seed).permutation(len(questions))[:n_test].tolist())
    return {
        "train": [q for i, q in enumerate(questions) if i not in test],
        "test": [q for i, q in enumerate(questions) if i in test],
    }


def default_n_queries(questions: list[MultiAnswerQuestion]) -> int:
    """The median number of answers per question (rounded up), at most `MAX_AUTO_QUERIES`."""
    return int(min(MAX_AUTO_QUERIES, np.ceil(np.median([len(q.answers) for q in questions]))))


def prepare_files(
    directory: str | Path,
    dataset: str,
    questions_path: str | Path,
    corpus_path: str | Path,
    test_questions_path: str | Path | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    n_queries: int = 0,
    use_titles: bool = True,
) -> Benchmark:
    """A benchmark of your own: questions in the library's jsonl (`qid`, `question`, `answers`,
    `targets`: one list of gold document ids per answer) over a TSV or BEIR corpus.

    Test questions come from `test_questions_path` when given, else a seeded `test_fraction` of
    the questions (`split_questions`). `n_queries` is the number of query vectors AMER generates
    for the dataset (0: `default_n_queries` of the training questions). `use_titles = False`
    leaves the corpus titles out of what the document encoder and BM25 see (a title that names
    the answer makes retrieval lexical). Every problem is reported with its file and line."""
    if dataset in N_QUERIES or not DATASET_NAME.match(dataset):
        problem = "a built-in dataset's" if dataset in N_QUERIES else "not a valid name"
        raise ValueError(
            f"dataset name {dataset!r} is {problem}; choose a name of letters, digits, '_' and '-' "
            f"other than {', '.join(N_QUERIES)}"
        )
    recipe = {
        "source": "files",
        "dataset": dataset,
        "questions": str(Path(questions_path).resolve()),
        "test_questions": str(Path(test_questions_path).resolve()) if test_questions_path else None,
        "corpus": str(Path(corpus_path).resolve()),
        "test_fraction": None if test_questions_path else test_fraction,
        "seed": seed,
        "n_queries": n_queries,
        "use_titles": use_titles,
    }
    if (found := existing(directory, recipe)) is not None:
        return found
    if not Path(corpus_path).is_file():
        raise FileNotFoundError(
            f"corpus file {corpus_path} does not exist (source 'files': corpus_path, a TSV of "
            "id<TAB>text<TAB>title or a BEIR corpus.jsonl)"
        )
    corpus = Corpus.read(corpus_path)
    if len(corpus) == 0:
        raise DataFormatError(f"{corpus_path} holds no documents")
    questions = _checked_questions(questions_path, corpus)
    if test_questions_path:
        splits = {"train": questions, "test": _checked_questions(test_questions_path, corpus)}
        both = {q.qid for q in splits["train"]} & {q.qid for q in splits["test"]}
        if both:
            raise DataFormatError(
                f"{questions_path} and {test_questions_path} share the qid(s) {sorted(both)[:5]}: a test "
                "question must not be trained on"
            )
    else:
        splits = split_questions(questions, test_fraction, seed)
    n = n_queries or default_n_queries(splits["train"])
    return _write(
        Path(directory),
        {dataset: splits},
        Path(corpus_path).resolve(),
        len(corpus),
        {"recipe": recipe, "n_queries": {dataset: n}, "use_titles": use_titles},
    )


def _checked_questions(path: str | Path, corpus: Corpus) -> list[MultiAnswerQuestion]:
    """The questions of `path`; a gold document id that is not in the corpus is an error naming its line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"questions file {path} does not exist (source 'files': questions_path)")
    questions = read_questions(path)
    if not questions:
        raise DataFormatError(f"{path} holds no questions")
    for number, question in zip(_question_lines(path), questions):
        unknown = [d for docs in question.targets for d in docs if d not in corpus.row_of]
        if unknown:
            raise DataFormatError(
                f"{path}:{number}: question {question.qid!r} names gold document id(s) {unknown[:5]} "
                "that are not in the corpus"
            )
    return questions


def _question_lines(path: Path) -> list[int]:
    """The line number of each question of a jsonl (blank lines skipped, as read_questions does)."""
    with open_text(path) as lines:
        return [number for number, line in enumerate(lines, 1) if line.strip()]


@dataclass(frozen=True)
class PrepConfig(Config):
    """Notebook 03's parameters: which benchmark to prepare, and how to encode and index it."""

    source: str = param(choices=SOURCES)
    max_train: int = param(minimum=1)
    max_test: int = param(minimum=1)
    corpus_size: int = param(minimum=1)
    raw_dir: str = param()
    corpus_path: str = param()
    questions_path: str = param()  # source "files": your questions (jsonl), and the fields below
    test_questions_path: str = param()  # "" splits questions_path by test_fraction
    test_fraction: float = param()
    dataset_name: str = param()
    n_queries: int = param(minimum=0)  # 0: the median answer count of the training questions, at most 8
    compound_ks: list[int] = param(minimum=1)  # source "compound": components per question, one dataset each
    compound_components: list[str] = param(choices=COMPONENT_KINDS)  # the WordNet questions compounds join
    compound_max_answers: int = param(minimum=1)  # answers per compound question, at most
    compound_findable_depth: int = param(minimum=0)  # components the encoder answers alone in its top N; 0: all
    use_titles: bool = param()
    encoder: str = param(choices=tuple(ENCODERS))
    mapping_encoders: list[str] = param(choices=tuple(ENCODERS))  # paper data: the gold mapping's dense retrievers
    encode_batch_size: int = param(minimum=1)
    shard_size: int = param(minimum=1)
    ivfpq_factories: list[str] = param()
    ivfpq_nprobes: list[int] = param(minimum=1)
    seed: int = param()
    device: str = param(choices=DEVICES)
    prepared_dir: str = param()
    figures_dir: str = param()


def prepare(params: PrepConfig, progress: bool = True) -> tuple[Benchmark, dict]:
    """Notebook 03: the benchmark its parameters describe, with its corpus encoded.

    Paper data: the corpus is encoded first with every `mapping_encoders` model (the paper:
    Contriever and inf-retriever), since the gold mapping searches it with them besides BM25; the
    document encoder's embeddings are reused when it is one of them.
    """
    device = None if params.device == "auto" else params.device
    encoder = DocumentEncoder(params.encoder, device=device)
    directory = Path(params.prepared_dir)
    if not params.use_titles and params.source != "files":
        raise ValueError(f"use_titles = False applies to source 'files' (your own corpus), not {params.source!r}")
    if params.source == "wordnet":
        benchmark = prepare_wordnet(directory, params.max_train, params.max_test, params.corpus_size, params.seed)
        mapping = {}
    elif params.source == "compound":
        benchmark = prepare_compound(
            directory,
            params.compound_ks,
            params.max_train,
            params.max_test,
            params.corpus_size,
            params.compound_max_answers,
            params.compound_components,
            params.seed,
            encoder,
            params.compound_findable_depth,
            params.shard_size,
            params.encode_batch_size,
            progress,
        )
        mapping = {}
    elif params.source == "files":
        benchmark = prepare_files(
            directory,
            params.dataset_name,
            params.questions_path,
            params.corpus_path,
            params.test_questions_path or None,
            params.test_fraction,
            params.seed,
            params.n_queries,
            params.use_titles,
        )
        mapping = {}
    else:
        retrievers = []
        for name in params.mapping_encoders:
            mapper = encoder if name == encoder.spec.name else DocumentEncoder(name, device=device)
            shards = encode_corpus(
                mapper,
                iter_documents(params.corpus_path),
                directory / "embeddings" / name,
                params.shard_size,
                params.encode_batch_size,
                progress=progress,
            )
            retrievers.append((mapper, ShardedFlatIndex(shards)))
        benchmark, mapping = prepare_paper_data(
            params.raw_dir, params.corpus_path, directory, retrievers, params.seed, progress
        )
    benchmark.encode(encoder, params.shard_size, params.encode_batch_size, progress)
    return benchmark, mapping


def statistics(benchmark: Benchmark) -> list[dict]:
    """Table 1: questions per split and the mean number of targets in the test set."""
    rows = []
    for dataset in benchmark.datasets:
        train, test = (benchmark.questions(dataset, split) for split in SPLITS)
        rows.append(
            {
                "dataset": dataset,
                "train": len(train),
                "test": len(test),
                "targets": round(float(np.mean([len(q.targets) for q in test])), 2),
            }
        )
    return rows


def example_questions(
    benchmark: Benchmark, per_dataset: int = 1, max_answers: int = 3, snippet: int = 160, seed: int = 0
) -> list[dict]:
    """Table 4: per dataset, `per_dataset` seeded test questions, each with up to `max_answers`
    of its answers (the count of the others noted) and the start of each shown answer's first
    gold document, the answer in **bold**."""
    rng = np.random.default_rng(seed)
    picked = []
    for dataset in benchmark.datasets:
        test = benchmark.questions(dataset, "test")
        picked += [
            (dataset, test[i]) for i in sorted(rng.choice(len(test), min(per_dataset, len(test)), replace=False))
        ]
    wanted = {q.targets[i][0] for _, q in picked for i in range(min(max_answers, len(q.answers)))}
    texts = {doc.id: doc.full_text for doc in benchmark.documents() if doc.id in wanted}
    rows = []
    for dataset, question in picked:
        shown = list(zip(question.answers, question.targets))[:max_answers]
        more = len(question.answers) - len(shown)
        rows.append(
            {
                "Dataset": dataset,
                "Question": question.question,
                "Answers": ", ".join(aliases[0] for aliases, _ in shown) + (f" (+{more} more)" if more else ""),
                "Evidence documents": " ".join(
                    f"[{i + 1}] {_highlight(texts[targets[0]], aliases, snippet)}"
                    for i, (aliases, targets) in enumerate(shown)
                ),
            }
        )
    return rows


def _highlight(text: str, aliases: list[str], width: int) -> str:
    """`text` cut to about `width` characters around the first alias found in it, that alias in bold."""
    alias, start = next(((a, text.find(a)) for a in aliases if a in text), (None, 0))
    begin = text.rfind(" ", 0, max(0, start - width // 2)) + 1 if alias else 0  # at a word's start
    end = min(len(text), begin + width)
    cut = text[begin:end]
    if alias and alias in cut:
        cut = cut.replace(alias, f"**{alias}**", 1)
    return ("[...] " if begin else "") + cut + (" [...]" if end < len(text) else "")


def target_similarity(
    benchmark: Benchmark, encoder: str, split: str = "test", n_random: int = 10_000, seed: int = 0
) -> list[dict]:
    """Cosine between targets of one question vs between targets of two random questions (the
    paper's appendix figure), with the first gold document of each answer."""
    shards = benchmark.embeddings(encoder)
    rows = []
    for number, dataset in enumerate(benchmark.datasets):
        questions = benchmark.questions(dataset, split)
        vectors = [shards.answer_vectors(q) for q in questions]
        found = same_vs_random_cosine(vectors, n_random, seed + number)
        rows.append({"dataset": dataset, **{name: round(value, 3) for name, value in found.items()}})
    return rows


PAPER_SIMILARITY = [  # the paper's appendix figure: cosine among targets (inf-retriever embeddings)
    {"dataset": "AmbigQA (paper)", "same_question_cos": 0.90, "random_pair_cos": 0.77},
    {"dataset": "QAMPARI (paper)", "same_question_cos": 0.86, "random_pair_cos": 0.74},
]


def index_check(
    benchmark: Benchmark,
    encoder: DocumentEncoder,
    factories: list[str],
    nprobes: list[int],
    k: int = 100,
    seed: int = 0,
) -> list[dict]:
    """IVF-PQ against exact search, one row per (factory, nprobe): recall of the exact top-k for
    the test questions (each encoded as one query by the document encoder), bytes per document,
    and search time per query beside exact search's, measured in the same run. A factory the corpus
    is too small to train (`training_points_needed`) is skipped with a warning that says so."""
    shards = benchmark.embeddings(encoder.spec.name)
    trainable = []
    for factory in factories:
        needed = training_points_needed(factory, shards.dim)
        if len(shards) < needed:
            warnings.warn(
                f"IVF-PQ check of {factory} skipped: the corpus has {len(shards):,} documents and faiss needs "
                f"{needed:,} to train it (an index this size is for larger corpora; exact search suffices here)",
                stacklevel=2,
            )
        else:
            trainable.append(factory)
    factories = trainable
    questions = [q.question for dataset in benchmark.datasets for q in benchmark.questions(dataset, "test")]
    queries = encoder.encode_queries(questions)
    # once: over a 25M-passage corpus exact search streams 77 GB of shards
    exact_ms, (_, exact) = _timed(ShardedFlatIndex(shards).search, queries, k, repeats=1)
    rows = []
    for factory in factories:
        approximate = IVFPQIndex(shards, factory, nprobe=nprobes[0], seed=seed)
        for nprobe in nprobes:
            approximate.set_nprobe(nprobe)
            ms, (_, found) = _timed(approximate.search, queries, k)
            rows.append(
                {
                    "index": factory,
                    "nprobe": nprobe,
                    f"recall@{k}_vs_exact": round(recall_against_exact(found, exact), 4),
                    "bytes_per_doc": approximate.code_size,
                    "ms_per_query": round(ms / len(questions), 4),
                    "speedup_vs_exact": round(exact_ms / ms, 1),
                }
            )
    exact_row = {
        "index": "exact (float16 shards)",
        "nprobe": "-",
        f"recall@{k}_vs_exact": 1.0,
        "bytes_per_doc": 2 * shards.dim,
        "ms_per_query": round(exact_ms / len(questions), 4),
        "speedup_vs_exact": 1.0,
    }
    return [exact_row, *rows]


def _timed(search, queries: np.ndarray, k: int, repeats: int = 3) -> tuple[float, tuple]:
    """Milliseconds of `search(queries, k)` (best of `repeats`) and its result."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        found = search(queries, k)
        times.append(1000 * (time.perf_counter() - began))
    return min(times), found
