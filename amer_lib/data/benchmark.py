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

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from amer_lib.core.train import split_train_validation
from amer_lib.data.corpus import Document, iter_documents
from amer_lib.data.encoders import EmbeddingShards, encode_corpus
from amer_lib.data.questions import (
    MultiAnswerQuestion,
    read_questions,
    write_questions,
)
from amer_lib.io import changed_since, write_json, write_trec_qrels

SPLITS = ("train", "test")
# the paper's number of query vectors per dataset; the offline ones mirror AmbigQA and QAMPARI
N_QUERIES = {"ambigqa": 2, "qampari": 5, "wordnet_senses": 2, "wordnet_kinds": 5}


@dataclass(frozen=True)
class TrainingDraw:
    """How a run draws its training questions other than the prepared split: `questions(benchmark,
    dataset, seed, **options)`, `check(benchmark, datasets, **options)` refusing options it cannot
    take before any work, and the options' `defaults` (at which a run trains on the prepared split).
    `fields` names the notebook field that sets each option (`draw_options`), and `check_options(**options)`
    refuses options no benchmark could take when a config is made."""

    defaults: dict
    check: Callable[..., None]
    questions: Callable[..., list[MultiAnswerQuestion]]
    fields: dict = field(default_factory=dict)
    check_options: Callable[..., None] | None = None


# the registered draws (beyond the paper: amer_lib.beyond.compound_draws, the compound benchmark's
# compounds drawn afresh); the library's own benchmarks train on their prepared split
TRAINING_DRAWS: list[TrainingDraw] = []


def register_training_draw(draw: TrainingDraw) -> TrainingDraw:
    """Add a training draw; its options may not be another's."""
    taken = {name for other in TRAINING_DRAWS for name in other.defaults}
    if taken & set(draw.defaults):
        raise ValueError(f"training-draw options {sorted(taken & set(draw.defaults))} are another draw's")
    TRAINING_DRAWS.append(draw)
    return draw


def training_draw(options: dict) -> TrainingDraw | None:
    """The registered draw whose options `options` are (None for none given); an unknown option is
    refused with the registered ones."""
    if not options:
        return None
    for draw in TRAINING_DRAWS:
        if set(options) <= set(draw.defaults):
            return draw
    known = sorted(name for draw in TRAINING_DRAWS for name in draw.defaults)
    raise TypeError(
        f"training-draw options {sorted(options)}: the registered draws take {known} (importing amer_lib.beyond "
        "registers the draws beyond the paper)"
    )


def draw_options(config) -> dict:
    """The training-draw options a notebook config's fields set (each registered draw's `fields`)."""
    return {
        option: getattr(config, name)
        for draw in TRAINING_DRAWS
        for name, option in draw.fields.items()
        if hasattr(config, name)
    }


def check_draw_options(options: dict) -> None:
    """Fail on options the registered draw they belong to refuses whatever the benchmark."""
    draw = training_draw(options)
    if draw is not None and draw.check_options is not None:
        draw.check_options(**{**draw.defaults, **options})


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
    def identity(self) -> str:
        """What was prepared, as one digest: the recipe, the sha256 of each input file, the datasets,
        their n and the corpus's size; not where the benchmark lies nor when its inputs were written.
        A run records it (`runs.run_context.run_facts`), so a benchmark prepared again from other
        data in the same folder does not read back the runs made on the old one."""
        inputs = {name: record["sha256"] for name, record in self.manifest.get("inputs", {}).items()}
        kept = {key: self.manifest.get(key) for key in ("recipe", "datasets", "n_queries", "corpus_size")}
        return hashlib.sha256(json.dumps({**kept, "inputs": inputs}, sort_keys=True).encode()).hexdigest()[:16]

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

    def check_draw(self, datasets: list[str], **options) -> None:
        """Fail before any work on training-draw options (`TRAINING_DRAWS`) these datasets cannot take."""
        draw = training_draw(options)
        if draw is not None:
            draw.check(self, datasets, **{**draw.defaults, **options})

    def n_queries(self, dataset: str) -> int:
        """How many query vectors AMER generates for the dataset's questions."""
        self.check([dataset])
        return self.manifest["n_queries"][dataset]

    def training_split(
        self, dataset: str, seed: int, **options
    ) -> tuple[list[MultiAnswerQuestion], list[MultiAnswerQuestion]]:
        """The questions a run of `seed` trains on and those it validates on: the benchmark's own
        validation split where it has one (one made of questions no training question shares, as
        notebook 03 holds out for answer questions), else 10% of the training questions drawn by the
        seed (the paper's 90/10). The training questions are the prepared split's, or, with `options`
        away from their defaults, what the registered draw they belong to gives (`TRAINING_DRAWS`)."""
        draw = training_draw(options)
        chosen = {**draw.defaults, **options} if draw else {}
        if draw is None or chosen == draw.defaults:
            questions = self.questions(dataset, "train")
        else:
            questions = draw.questions(self, dataset, seed, **chosen)
        if self._has_own_validation(dataset):
            return questions, self.questions(dataset, "validation")
        train_idx, val_idx = split_train_validation(len(questions), seed)
        return [questions[i] for i in train_idx.tolist()], [questions[i] for i in val_idx.tolist()]

    def validation_questions(self, dataset: str, seed: int, **options) -> list[MultiAnswerQuestion]:
        """The questions a run of `seed` validates on (`training_split`'s second), read without drawing
        the training questions where the benchmark has a validation split of its own."""
        if self._has_own_validation(dataset):
            return self.questions(dataset, "validation")
        return self.training_split(dataset, seed, **options)[1]

    def _has_own_validation(self, dataset: str) -> bool:
        return (self.directory / f"{dataset}_validation.jsonl").exists()

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


def existing(directory: str | Path, recipe: dict, inputs: dict[str, str | Path] | None = None) -> Benchmark | None:
    """The benchmark already prepared in `directory` from the same `recipe` and the same contents of
    its input files (`inputs`, by name: their `io.file_record`s in its manifest), or None if there is
    none. One from another recipe, or from an input file whose contents changed since, is an error
    naming it (its questions and embeddings would silently be the old ones). An input whose size and
    modification time are the recorded ones is taken as unchanged without reading it; another is
    read, and only a different sha256 is a change; one that is gone is not checked (the prepared
    benchmark keeps what was read from it)."""
    manifest = Path(directory) / "manifest.json"
    if not manifest.exists():
        return None
    kept = json.loads(manifest.read_text())
    found = kept.get("recipe")
    if found != recipe:
        raise ValueError(
            f"{directory} holds a benchmark prepared with {found}, not {recipe}; "
            "choose another prepared_dir or delete that one"
        )
    recorded = kept.get("inputs", {})
    for name, path in (inputs or {}).items():
        if not Path(path).exists():  # the prepared copy stands for it
            continue
        if name not in recorded:
            raise ValueError(
                f"{directory} was prepared from {path} before the contents of its input files were recorded; "
                f"delete {directory} to prepare it again (or choose another prepared_dir)"
            )
        if (change := changed_since(path, recorded[name])) is not None:
            raise ValueError(
                f"{path} ({name}) changed since {directory} was prepared from it ({change}): the prepared "
                f"questions and embeddings are the old file's. Delete {directory} to prepare it again from the file "
                "as it is now, or choose another prepared_dir"
            )
    return Benchmark(directory)
