"""A trained AMER as a retriever for new questions: a saved model folder (`amer_lib.runs.saved`)
and a corpus encoded by the document encoder it was trained against.

    retriever = AMERRetriever.from_pretrained("models/kinds_mine_amer", index="results/prepared/kinds_mine")
    results = retriever.search(["kinds of dog"], k=100)
    results.doc_ids[0], results.scores[0], results.vectors[0]

A question's n vectors are generated as in training (the prompt template the folder records),
each is searched exactly over the corpus embeddings to the depth of the run's evaluation, and the
lists are merged (round-robin, the paper's, or another merge of `amer_lib.core.merge`). The same
questions give the same ranked lists as the notebook's evaluation of the run the folder came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import amer_lib.beyond  # noqa: F401  (registers the merges beyond the paper in core.merge.MERGES)
from amer_lib.core.backbones import load_tokenizer
from amer_lib.core.device import resolve_device
from amer_lib.core.index import ShardedFlatIndex, VectorIndex, kept_search
from amer_lib.core.merge import found_by, get_merge
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.data.encoders import EmbeddingShards
from amer_lib.data.prompts import PromptTemplate
from amer_lib.io import write_trec_run
from amer_lib.progress import tqdm
from amer_lib.runs.query_encoders import generated_until_stop, generated_vectors, token_prompts
from amer_lib.runs.saved import from_pretrained, read_config

TREC_SCORES = ("rank", "cosine")  # what a TREC run's score column holds (`SearchResults.write_trec`)
GENERATION_BATCH = 128  # questions per forward pass, as in the notebooks' evaluation


@dataclass
class SearchResults:
    """The merged top k of each question: corpus ids, and for each document the vector that found
    it (`amer_lib.core.merge.found_by`) with its cosine to that vector; `counts`: the vectors
    searched per question (n, or the stop head's count)."""

    doc_ids: list[list[str]]
    scores: np.ndarray  # [Q, k] cosine to the vector that found the document; NaN past the list
    # [Q, k] which of the question's vectors found it, counted from 1 as the paper's e_1 ... e_n
    # (vector j is `query_vectors(...)[0][q, j - 1]`); 0 past the list
    vectors: np.ndarray
    counts: np.ndarray  # [Q]

    def ranking(self, question: int) -> pd.DataFrame:
        """One question's list: rank, document, the vector that found it and its cosine."""
        found = len(self.doc_ids[question])
        return pd.DataFrame(
            {
                "rank": range(1, found + 1),
                "document": self.doc_ids[question],
                "vector": self.vectors[question, :found],
                "cosine": self.scores[question, :found].round(4),
            }
        )

    def write_trec(self, path: str | Path, qids: list[str], tag: str, scores: str = "rank") -> None:
        """A TREC run file of the lists. `scores`: "rank" (k - rank + 1: a merged list has no native
        score, so the file's order is the merge's) or "cosine" (each document's cosine to the vector
        that found it; trec_eval then reorders a question's documents by cosine, ties by document id
        in reverse order, which is not the merged order)."""
        if scores not in TREC_SCORES:
            raise ValueError(f"unknown TREC scores {scores!r}; valid: {', '.join(TREC_SCORES)}")
        cosines = self.scores if scores == "cosine" else None
        write_trec_run(Path(path), qids, self.doc_ids, tag, self.scores.shape[1], cosines)


class AMERRetriever:
    def __init__(
        self,
        folder: Path,
        model: AMERQueryEncoder,
        config: dict,
        tokenizer,
        index: ShardedFlatIndex | VectorIndex,
        doc_ids: list[str],
    ):
        self.folder, self.model, self.config, self.tokenizer = Path(folder), model, config, tokenizer
        self.index, self.doc_ids = index, doc_ids
        self.prompt = PromptTemplate.from_json(config["prompt"])

    @classmethod
    def from_pretrained(
        cls,
        folder: str | Path,
        index: str | Path | EmbeddingShards | np.ndarray,
        doc_ids: list[str] | None = None,
        device: str = "auto",
        progress: bool = False,
    ) -> AMERRetriever:
        """The model saved in `folder` over `index`: a prepared benchmark's folder (its embeddings
        by the model's document encoder), an embeddings folder or `EmbeddingShards` (written by
        `amer_lib.data.encoders.encode_corpus`), or unit-norm embeddings `[N, d]` with their
        `doc_ids`. The index is checked against the model before its weights are loaded. `device`:
        auto, cpu or cuda, for the query encoder; `progress`: a bar over the corpus blocks of every
        search of a sharded corpus."""
        config = read_config(folder)
        if config["document_encoder"] is None:
            raise ValueError(
                f"{folder} was trained on the synthetic task's vectors, not on text: it has no document "
                "encoder or prompt to search a corpus with (load it with amer_lib.runs.saved.from_pretrained)"
            )
        searched, ids = open_index(index, config, doc_ids, progress)
        model = from_pretrained(folder, resolve_device(device))
        return cls(Path(folder), model, config, load_tokenizer(config["backbone"]), searched, ids)

    def query_vectors(self, questions: list[str], n: int | str | None = None, progress: bool = False):
        """Each question's generated vectors `[Q, n, d]` and how many of them it keeps `[Q]`
        (`n`: an int, "auto" for the stop head's count, up to the `max_n` the folder records, or
        None for the folder's n)."""
        n = self.config["n_queries"] if n is None else n
        auto = n == "auto"
        if auto and not self.config["stop"]:
            raise ValueError(
                "n = 'auto' needs a stop head, and this model has none; give n as an int "
                f"(it was trained with n = {self.config['n_queries']})"
            )
        if not auto and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(f"n must be a positive int, 'auto' or None, got {n!r}")
        device = next(self.model.parameters()).device
        ids, mask = self.prompt.tokenize(self.tokenizer, questions)  # padded together, as in the notebooks
        prompts = token_prompts(self.model, ids.to(device), mask.to(device), GENERATION_BATCH)
        bar = tqdm(prompts, total=-(-len(questions) // GENERATION_BATCH), desc="generate", disable=not progress)
        if not auto:
            vectors = generated_vectors(self.model, bar, n)
            return vectors, np.full(len(vectors), n)
        return generated_until_stop(self.model, bar, self.config["stop"]["max_n"], self.config["stop"]["threshold"])

    def search(
        self,
        questions: list[str],
        k: int = 100,
        n: int | str | None = None,
        merge: str = "round_robin",
        depth: int | None = None,
        progress: bool = False,
        **merge_options,
    ) -> SearchResults:
        """The merged top `k` of each question (`n`: see `query_vectors`; `merge`: one of
        `amer_lib.core.merge.MERGES`; `depth`: each vector's list, by default the run's
        evaluation depth or k, whichever is more)."""
        merger = get_merge(merge, **merge_options)
        vectors, counts = self.query_vectors(questions, n, progress)
        depth = depth or max(self.config["search_depth"] or k, k)
        kept = None if (counts == vectors.shape[1]).all() else counts
        scores, rows = kept_search(self.index, vectors, kept, depth)
        ranked = merger(rows, scores, k)
        found, cosines = found_by(rows, scores, ranked)
        doc_ids = [[self.doc_ids[r] for r in row if r >= 0] for row in ranked]
        return SearchResults(doc_ids, cosines, found + 1, counts)  # found_by's -1 past the list becomes 0


def open_index(
    index: str | Path | EmbeddingShards | np.ndarray,
    config: dict,
    doc_ids: list[str] | None = None,
    progress: bool = False,
) -> tuple[ShardedFlatIndex | VectorIndex, list[str]]:
    """The exact index of `index` (see `AMERRetriever.from_pretrained`) and its document ids, after
    checking that it holds the embeddings of the model's document encoder, of the model's size."""
    encoder, dim = config["document_encoder"], config["embedding_dim"]
    if isinstance(index, np.ndarray):
        if doc_ids is None or len(doc_ids) != len(index):
            raise ValueError(f"embeddings given as an array need their doc_ids, one per row ({len(index)} rows)")
        _check_dim(index.shape[-1], dim, "the embeddings given")
        return VectorIndex(index), list(doc_ids)
    shards = index if isinstance(index, EmbeddingShards) else EmbeddingShards(_embeddings_dir(Path(index), encoder))
    if shards.manifest["encoder"] != encoder:
        raise ValueError(
            f"{shards.directory} holds a corpus encoded by {shards.manifest['encoder']!r}, but the model was "
            f"trained against {encoder!r}: encode the corpus with {encoder!r} (notebook 03, or python -m "
            "amer_lib.runs.encode)"
        )
    _check_dim(shards.dim, dim, str(shards.directory))
    return ShardedFlatIndex(shards, progress=progress), shards.ids


def _embeddings_dir(path: Path, encoder: str) -> Path:
    """`path` itself when it is an embeddings folder; a prepared benchmark's folder of `encoder`'s."""
    manifest = path / "manifest.json"
    if not manifest.exists():
        raise FileNotFoundError(f"{path} is neither a prepared benchmark nor an embeddings folder (no manifest.json)")
    if "datasets" not in json.loads(manifest.read_text()):
        return path
    encoded = sorted(p.name for p in (path / "embeddings").glob("*") if p.is_dir())
    if encoder not in encoded:
        raise FileNotFoundError(
            f"the benchmark in {path} holds embeddings by {encoded or 'no encoder'}, not by {encoder!r}, which the "
            f"model was trained against: encode it with {encoder!r} (notebook 03 with -p encoder {encoder})"
        )
    return path / "embeddings" / encoder


def _check_dim(found: int, expected: int, what: str) -> None:
    if found != expected:
        raise ValueError(f"{what} holds vectors of dimension {found}, but the model generates dimension {expected}")
