"""Beyond the paper: the compound benchmark (`compound`) prepared by notebook 03, registered as its
source "compound" (`amer_lib.data.preparation.PREPARATIONS`). The notebook fields that set it:
`compound_ks`, `compound_components`, `compound_max_answers`, `compound_findable_depth`, with the
shared `max_train`, `max_test`, `corpus_size`, `seed`, `shard_size` and `encode_batch_size`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from amer_lib.beyond import compound
from amer_lib.core.train import VALIDATION_FRACTION, validation_size
from amer_lib.data.benchmark import Benchmark, existing, write_benchmark
from amer_lib.data.corpus import iter_documents
from amer_lib.data.encoders import DocumentEncoder, encode_corpus
from amer_lib.data.preparation import (
    ANSWER_QUESTIONS,
    PrepConfig,
    default_n_queries,
    register_preparation,
    wordnet_corpus,
)


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
    """The compound benchmark (`compound`): for each k in `ks`, up to `max_train` /
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
        "answer_questions": ANSWER_QUESTIONS,
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
        path, size = wordnet_corpus(directory, {"candidates": pools}, corpus_size, rng)
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
        path, size = wordnet_corpus(directory, splits, corpus_size, rng)
    n_queries = {dataset: default_n_queries(by_split["train"]) for dataset, by_split in splits.items()}
    manifest = {"recipe": recipe, "n_queries": n_queries, "components": {s: len(p) for s, p in pools.items()}}
    return write_benchmark(directory, splits, path, size, manifest)


def _from_config(params: PrepConfig, encoder: DocumentEncoder, progress: bool) -> tuple[Benchmark, dict]:
    benchmark = prepare_compound(
        Path(params.prepared_dir),
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
    return benchmark, {}


register_preparation("compound", _from_config)
