"""A prepared retrieval benchmark on disk: questions per dataset and split, the corpus, and the
corpus embeddings of each document encoder (notebook 03 writes it, notebooks 01 and 04-07 read it).

    <dir>/manifest.json                 {"corpus": <the corpus file, relative to <dir>>,
                                         "corpus_from": "benchmark", "datasets": [...],
                                         "n_queries": {dataset: n}, "use_titles": bool, "recipe": {...}}
    <dir>/<dataset>_<split>.jsonl       the library's multi-answer format
    <dir>/qrels/<dataset>_<split>.qrels TREC qrels of the same questions
    <dir>/embeddings/<encoder>/         float16 shards + ids (amer_lib.data.encoders)
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from pathlib import Path

import numpy as np

from amer_lib.core.train import split_train_validation
from amer_lib.data import compound
from amer_lib.data.corpus import Document, iter_documents
from amer_lib.data.encoders import EmbeddingShards, encode_corpus
from amer_lib.data.questions import (
    MultiAnswerQuestion,
    read_questions,
    write_questions,
)
from amer_lib.io import write_json, write_trec_qrels
from amer_lib.progress import AmerWarning

SPLITS = ("train", "test")
# the paper's number of query vectors per dataset; the offline ones mirror AmbigQA and QAMPARI
N_QUERIES = {"ambigqa": 2, "qampari": 5, "wordnet_senses": 2, "wordnet_kinds": 5}


class Benchmark:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        manifest = self.directory / "manifest.json"
        if not manifest.exists():
            raise FileNotFoundError(
                f"{self.directory} holds no prepared benchmark; run notebooks/03_real_data_prep.ipynb first"
            )
        self.manifest = json.loads(manifest.read_text())
        if "n_queries" not in self.manifest:
            raise ValueError(
                f"{self.directory} was prepared by an older version (its manifest has no n_queries); "
                "prepare it again with notebooks/03_real_data_prep.ipynb"
            )

    @property
    def datasets(self) -> list[str]:
        return self.manifest["datasets"]

    @property
    def corpus_path(self) -> Path:
        """The corpus file. The manifest holds it relative to this folder (`"corpus_from":
        "benchmark"`), so a benchmark reads from any working directory; one written before that
        holds the path as given at preparation (relative to notebooks/ for the shipped recipes),
        which is read from the working directory as it always was."""
        from_benchmark = self.manifest.get("corpus_from") == "benchmark"
        path = self.directory / self.manifest["corpus"] if from_benchmark else Path(self.manifest["corpus"])
        if not path.exists():
            where = "this folder" if from_benchmark else f"the working directory {Path.cwd()}"
            raise FileNotFoundError(
                f"the corpus of the benchmark in {self.directory} is not at {path} (its manifest's "
                f"{self.manifest['corpus']!r}, relative to {where}); prepare it again with "
                "notebooks/03_real_data_prep.ipynb or put the corpus back"
            )
        return path

    def check(self, datasets: list[str]) -> None:
        """Fail before any work when a dataset asked for is not in this benchmark."""
        missing = [d for d in datasets if d not in self.datasets]
        if missing:
            raise ValueError(
                f"dataset(s) {missing} are not in the benchmark prepared in {self.directory}; it holds: "
                f"{', '.join(self.datasets)} (prepare another with notebooks/03_real_data_prep.ipynb)"
            )

    def check_compound(self, datasets: list[str], parameter: str = "train_compounds", setting: str = "> 0") -> None:
        """Fail before any work when a dataset is not one of the compound benchmark's, which
        `parameter` (at `setting`) needs."""
        self.check(datasets)
        if self.manifest.get("recipe", {}).get("source") != "compound":
            raise ValueError(
                f"{parameter} {setting} redraws a compound benchmark's training compounds; {self.directory} holds "
                f"{', '.join(self.datasets)}, not one (prepare it with params/03_real_data_prep/compound.yaml), "
                f"or leave {parameter} at its default"
            )

    def n_queries(self, dataset: str) -> int:
        """How many query vectors AMER generates for the dataset's questions."""
        self.check([dataset])
        return self.manifest["n_queries"][dataset]

    def training_split(
        self, dataset: str, seed: int, compounds: int = 0, components: str = "findable", component_count: int = 0
    ) -> tuple[list[MultiAnswerQuestion], list[MultiAnswerQuestion]]:
        """The questions a run of `seed` trains on and those it validates on: the benchmark's own
        validation split where it has one (the compound benchmark's, made of components no training
        compound uses), else 10% of the training questions drawn by the seed (the paper's 90/10).
        On a compound benchmark only: with `compounds` > 0 the run trains on that many compounds
        drawn by the seed from the training compounds' components (`redrawn_compounds`); with
        `components` = "corpus", on compounds drawn by the seed from every training component in
        the corpus (`compound.corpus_components`), as many as the prepared split has unless
        `compounds` says; with `components` = "disjoint", likewise from the training compounds'
        components less those sharing a gold document with a test or validation compound
        (`compound.disjoint`). `component_count` > 0 (with a redrawn, corpus or disjoint draw): the
        compounds are made of that many of those components, drawn by the seed (`compound.subset`)."""
        if components not in compound.TRAIN_COMPONENTS:
            raise ValueError(f"train_components {components!r}: choose one of {', '.join(compound.TRAIN_COMPONENTS)}")
        compound.check_component_count(component_count, compounds, components)
        if components == "corpus":
            questions = self.corpus_compounds(dataset, compounds, seed, component_count)
        elif components == "disjoint":
            questions = self.disjoint_compounds(dataset, compounds, seed, component_count)
        elif compounds:
            questions = self.redrawn_compounds(dataset, compounds, seed, component_count)
        else:
            questions = self.questions(dataset, "train")
        if (self.directory / f"{dataset}_validation.jsonl").exists():
            return questions, self.questions(dataset, "validation")
        train_idx, val_idx = split_train_validation(len(questions), seed)
        return [questions[i] for i in train_idx.tolist()], [questions[i] for i in val_idx.tolist()]

    def redrawn_compounds(self, dataset: str, n: int, seed: int, count: int = 0) -> list[MultiAnswerQuestion]:
        """`n` distinct training compounds drawn by `seed` afresh from the components `dataset`'s
        training compounds are made of (`count` > 0: from that many of them): a run that draws as
        many as it trains on (steps x batch size) sees no compound twice, where the prepared split
        repeats each of its compounds (beyond the paper: its third direction, training data at a
        larger scale). k = 1 gives the components back (a component alone has no other combination)."""
        self.check_compound([dataset])
        pool = compound.training_components(self.questions(dataset, "train"))
        return self._drawn(dataset, pool, n, seed, count)

    def corpus_compounds(self, dataset: str, n: int, seed: int, count: int = 0) -> list[MultiAnswerQuestion]:
        """Training compounds of `dataset`'s k drawn by `seed` from every training component in the
        corpus (`corpus_components`; `count` > 0: from that many of them): `n`, or as many as the
        prepared training split holds."""
        self.check_compound([dataset], "train_components", '= "corpus"')
        return self._drawn(dataset, self.corpus_components, n, seed, count)

    def disjoint_compounds(self, dataset: str, n: int, seed: int, count: int = 0) -> list[MultiAnswerQuestion]:
        """Training compounds of `dataset`'s k drawn by `seed` from its training compounds' components
        less those sharing a gold document with any dataset's test or validation compounds
        (`compound.disjoint`; `count` > 0: from that many of them): `n`, or as many as the prepared
        training split holds."""
        self.check_compound([dataset], "train_components", '= "disjoint"')
        pool, _ = compound.disjoint(self.questions(dataset, "train"), self.held_documents)
        return self._drawn(dataset, pool, n, seed, count)

    def _drawn(
        self, dataset: str, pool: list[MultiAnswerQuestion], n: int, seed: int, count: int = 0
    ) -> list[MultiAnswerQuestion]:
        """`n` compounds of `dataset`'s k (or as many as its prepared training split holds) drawn by
        `seed` from the components `pool` (`compound.drawn_from`), or from `count` of them drawn by
        the seed first (`compound.subset`)."""
        n = n or len(self.questions(dataset, "train"))
        rng = np.random.default_rng(seed)
        if count:
            pool = compound.subset(pool, count, rng)
        k = compound.components_in(dataset)
        drawn = compound.drawn_from(pool, k, n, self.manifest["recipe"]["max_answers"], rng)
        if k > 1 and len(drawn) < n:
            warnings.warn(
                f"{dataset}: only {len(drawn)} of the {n} training compounds asked for could be drawn from "
                f"{len(pool)} components; training repeats them",
                AmerWarning,
                stacklevel=2,
            )
        return drawn

    @functools.cached_property
    def held_documents(self) -> set[str]:
        """The gold documents of every dataset's test and validation compounds (read once)."""
        splits = [self.questions(d, split) for d in self.datasets for split in ("test", "validation")]
        return compound.gold_documents([q for questions in splits for q in questions])

    @functools.cached_property
    def corpus_components(self) -> list[MultiAnswerQuestion]:
        """`compound.corpus_components` of this benchmark (read once): no word of any dataset's
        validation compounds."""
        recipe = self.manifest["recipe"]
        validation = [q for d in self.datasets for q in self.questions(d, "validation")]
        corpus_ids = {d.id for d in iter_documents(self.corpus_path)}
        return compound.corpus_components(recipe["components"], corpus_ids, validation, recipe["max_answers"])

    def questions(self, dataset: str, split: str) -> list[MultiAnswerQuestion]:
        if dataset not in self.datasets:
            raise KeyError(f"dataset {dataset!r} is not in {self.directory}; it holds: {', '.join(self.datasets)}")
        return read_questions(self.directory / f"{dataset}_{split}.jsonl")

    def documents(self):
        """The corpus; without titles where it was prepared with `use_titles = False`."""
        documents = iter_documents(self.corpus_path)
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


def write_benchmark(
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
        "corpus": os.path.relpath(Path(corpus).resolve(), Path(directory).resolve()),
        "corpus_from": "benchmark",
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
