"""BM25 over a corpus (bm25s, English stopwords), built once and kept on disk.

The gold mapping of notebook 03 searches one corpus five times (AmbigQA's train and dev questions,
NQ-open's, QAMPARI's train and dev proofs). `Bm25Index.of_corpus` builds the index once from the
documents as a stream (token ids held as one int32 array, not as Python lists), saves it beside
the prepared benchmark and searches it memory-mapped. `top_k` gives the rows
`bm25s.BM25().index(bm25s.tokenize(texts, stopwords="en"))` and `retrieve` gave (a test compares
them), always with bm25s's numpy selection: its numba and JAX selections order equal scores
otherwise, which would move gold documents with the installed packages.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from amer_lib.progress import tqdm

STOPWORDS = "en"
TOKENIZE_BATCH = 100_000  # documents tokenized at a time
MANIFEST = "amer_bm25.json"


class TokenIds(Sequence):
    """Every document's token ids as one int32 array and offsets: what bm25s's index reads in
    several passes, at 4 bytes a token instead of a Python list's 36."""

    def __init__(self, ids: np.ndarray, offsets: np.ndarray):
        self.ids, self.offsets = ids, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:  # a slice past the end is empty, not an IndexError
        return (self[i] for i in range(len(self)))


def tokenized_stream(texts: Iterable[str], total: int | None = None, progress: bool = True):
    """`TokenIds` of the texts and the vocabulary, tokenizing `TOKENIZE_BATCH` texts at a time
    (bm25s's tokenizer: lower case, English stopwords, words of two characters or more)."""
    from bm25s.tokenization import Tokenizer

    tokenizer = Tokenizer(stopwords=STOPWORDS)
    parts, lengths, batch = [], [], []
    bar = tqdm(total=total, desc="BM25 tokenize", unit="doc", disable=not progress)

    def flush():
        for doc in tokenizer.tokenize(batch, update_vocab=True, return_as="ids", show_progress=False):
            parts.append(np.asarray(doc, dtype=np.int32))
            lengths.append(len(doc))
        bar.update(len(batch))
        batch.clear()

    for text in texts:
        batch.append(text)
        if len(batch) == TOKENIZE_BATCH:
            flush()
    if batch:
        flush()
    bar.close()
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    return TokenIds(ids, offsets), tokenizer.get_vocab_dict()


class Bm25Index:
    """A bm25s index of `n_documents` documents (rows in corpus order)."""

    def __init__(self, retriever, n_documents: int):
        self.retriever, self.n_documents = retriever, n_documents

    @classmethod
    def build(cls, texts: Iterable[str], total: int | None = None, progress: bool = True) -> Bm25Index:
        import bm25s
        from bm25s.tokenization import Tokenized

        token_ids, vocab = tokenized_stream(texts, total, progress)
        retriever = bm25s.BM25()
        retriever.index(Tokenized(ids=token_ids, vocab=vocab), show_progress=progress)
        return cls(retriever, len(token_ids))

    @classmethod
    def of_corpus(
        cls, documents: Iterable, n_documents: int, directory: str | Path | None, key: dict, progress: bool = True
    ) -> Bm25Index:
        """The index of `documents` (their `full_text`), memory-mapped from `directory` when it was
        built there for the same `key` (the corpus file's path, size and time), else built, saved
        there atomically (a killed build leaves nothing half written) and mapped back, so that the
        build's memory is freed and search processes share the mapped pages."""
        if directory is None:
            return cls.build((d.full_text for d in documents), n_documents, progress)
        if (found := cls.load(directory, key)) is None:
            cls.build((d.full_text for d in documents), n_documents, progress).save(directory, key)
            found = cls.load(directory, key)
        return found

    def save(self, directory: str | Path, key: dict) -> None:
        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
        umask = os.umask(0)
        os.umask(umask)
        staging.chmod(0o777 & ~umask)  # mkdtemp's folder is private; the index is as shareable as the benchmark
        try:
            self.retriever.save(str(staging))
            (staging / MANIFEST).write_text(json.dumps({"key": key, "n_documents": self.n_documents}))
            if directory.exists():
                shutil.rmtree(directory)
            os.replace(staging, directory)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    @classmethod
    def load(cls, directory: str | Path, key: dict) -> Bm25Index | None:
        """The index saved in `directory` for `key`, memory-mapped; None when there is none or it
        was built for another key."""
        import bm25s

        manifest = Path(directory) / MANIFEST
        if not manifest.exists():
            return None
        saved = json.loads(manifest.read_text())
        if saved["key"] != key:
            return None
        return cls(bm25s.BM25.load(str(directory), mmap=True), saved["n_documents"])

    def top_k(self, queries: list[str], k: int, progress: bool = True, processes: int = 1) -> np.ndarray:
        """Rows `[len(queries), min(k, documents)]` of the best documents of each query: bm25s's
        scores and its numpy selection, as `bm25s.BM25.retrieve` gives them without JAX. With
        `processes` > 1 the queries are spread over that many forked processes (each query's rows
        are its own, so the result does not depend on how many)."""
        k = min(k, self.n_documents)
        chunks = [queries[start : start + QUERY_CHUNK] for start in range(0, len(queries), QUERY_CHUNK)]
        bar = dict(desc="BM25 search", unit="chunk", total=len(chunks), disable=not progress or len(chunks) < 2)
        if processes <= 1 or len(chunks) < 2:
            found = [self._top_k(chunk, k) for chunk in tqdm(chunks, **bar)]
        else:
            global _SEARCHED
            _SEARCHED = self  # the forked processes find the index here (its arrays are shared, not copied)
            gc.freeze()  # the children's garbage collector leaves the parent's objects (a corpus) unwritten
            context = multiprocessing.get_context("fork")
            try:
                with context.Pool(min(processes, len(chunks)), initializer=_end_with, initargs=(os.getpid(),)) as pool:
                    found = list(tqdm(pool.imap(_searched_top_k, [(chunk, k) for chunk in chunks]), **bar))
            finally:
                gc.unfreeze()
                _SEARCHED = None
        return np.concatenate(found) if found else np.zeros((0, k), dtype=np.int64)

    def _top_k(self, queries: list[str], k: int) -> np.ndarray:
        import bm25s
        from bm25s.selection import topk

        tokens = bm25s.tokenize(queries, stopwords=STOPWORDS, show_progress=False, return_ids=False)
        found = np.empty((len(queries), k), dtype=np.int64)
        for i, query in enumerate(tokens):
            scores = self.retriever.get_scores(query) if query else np.zeros(self.n_documents, self.retriever.dtype)
            found[i] = topk(scores, k, backend="numpy", sorted=True)[1]
        return found


QUERY_CHUNK = 256  # queries a process searches at a time
_SEARCHED: Bm25Index | None = None  # the index a forked search process reads


def _searched_top_k(job: tuple[list[str], int]) -> np.ndarray:
    return _SEARCHED._top_k(*job)


def _end_with(parent: int) -> None:
    """A search process ends when its parent is gone (a killed notebook leaves none behind)."""

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
