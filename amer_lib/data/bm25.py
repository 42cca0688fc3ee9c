"""BM25 over a corpus (bm25s, English stopwords), built once in bounded memory and kept on disk.

The gold mapping of notebook 03 searches one corpus five times (AmbigQA's train and dev questions,
NQ-open's, QAMPARI's train and dev proofs). `Bm25Index.of_corpus` builds the index once, saves it
beside the prepared benchmark in bm25s's own files and searches it memory-mapped.

The build streams the documents (`write_index`): each run of `RUN_DOCUMENTS` documents is
tokenized and its postings (token, document, term frequency), sorted by token, go to disk; then
the runs are merged a block of tokens at a time into bm25s's score matrix (CSC: per token, its
documents in order and their scores), written as it grows. Memory holds one run or one block,
the vocabulary and the documents' lengths, whatever the corpus size. The scores are bm25s's
("lucene" BM25, k1 1.5, b 0.75), computed with its formulas in the same floating-point order, so
the files equal those `bm25s.BM25().index(...)` saves (a test compares them).

`top_k` gives the rows `bm25s.BM25().index(bm25s.tokenize(texts, stopwords="en"))` and `retrieve`
gave (a test compares them), always with bm25s's numpy selection: its numba and JAX selections
order equal scores otherwise, which would move gold documents with the installed packages.

That selection (`np.argpartition` over every score, then `np.argsort` of the k best) is slow when
most scores are exactly zero, as they are for real questions over millions of passages, and which
of equal scores it keeps, and in what order, depends on the CPU: numpy runs x86-simd-sort's AVX-512
or AVX2 code where it can and its own C code elsewhere, each ordering ties its own way
(`benchmarks/bench_topk_ties.py`). Only a scan of every score by that same code gives its rows,
so `top_k` keeps it by default (`ties="bm25s"`: the gold mapping of before, on the same CPU).
`ties="row"` orders equal scores by row instead (zero scores fill the list from the first row):
the same on every machine, and selected among the positive scores alone, several times faster
(`benchmarks/bench_prep.py`), but other rows than bm25s's wherever scores tie.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import tempfile
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

import numpy as np

from amer_lib.io import atomic_folder, end_with_parent, folder_damage, folder_files
from amer_lib.progress import tqdm

STOPWORDS = "en"
TOKENIZE_BATCH = 100_000  # documents tokenized at a time
RUN_DOCUMENTS = 500_000  # documents whose postings are sorted in memory and written as one run
MERGE_POSTINGS = 25_000_000  # postings merged and scored at a time
MANIFEST = "amer_bm25.json"
TIES = ("bm25s", "row")  # `select_top_k`'s orders of equal scores
FILES = {"data": "data.csc.index.npy", "indices": "indices.csc.index.npy", "indptr": "indptr.csc.index.npy"}


def _batches(items: Iterable, size: int) -> Iterator[list]:
    items = iter(items)
    while batch := list(islice(items, size)):
        yield batch


class _Runs:
    """Sorted postings of successive document runs on disk (`run-N.token|doc|tf`, int32 each),
    with the counts a BM25 score needs: documents' lengths and tokens' document frequencies."""

    def __init__(self, folder: Path):
        self.folder, self.sizes, self.lengths = folder, [], []
        self.document_frequency = np.zeros(0, dtype=np.int64)

    def add(self, token_lists: list[np.ndarray], first_document: int) -> None:
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
        tokens = np.concatenate(token_lists) if token_lists else np.zeros(0, np.int32)
        documents = np.repeat(np.arange(len(token_lists), dtype=np.int64), lengths)
        keys = (tokens.astype(np.int64) << 32) | documents  # by token, then by document
        del tokens, documents
        keys.sort()
        first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else keys[:0]
        frequency = np.diff(np.append(first, len(keys))).astype(np.int32)
        keys = keys[first]
        token = (keys >> 32).astype(np.int32)
        run = len(self.sizes)
        token.tofile(self.path(run, "token"))
        ((keys & 0xFFFFFFFF) + first_document).astype(np.int32).tofile(self.path(run, "doc"))
        frequency.tofile(self.path(run, "tf"))
        counts = np.bincount(token, minlength=len(self.document_frequency))
        counts[: len(self.document_frequency)] += self.document_frequency
        self.document_frequency = counts
        self.sizes.append(len(keys))
        self.lengths.append(lengths)

    def path(self, run: int, field: str) -> Path:
        return self.folder / f"run-{run:05d}.{field}"

    def read(self, run: int, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Postings `start:stop` of a run: tokens, documents, term frequencies (plain reads, not
        mapped pages: the resident memory stays what the block needs)."""
        return tuple(
            np.fromfile(self.path(run, field), dtype=np.int32, count=stop - start, offset=4 * start)
            for field in ("token", "doc", "tf")
        )

    def positions(self, run: int, tokens: np.ndarray) -> np.ndarray:
        """Where each of the (sorted) `tokens` begins in a run."""
        if self.sizes[run] == 0:
            return np.zeros(len(tokens), dtype=np.int64)
        return np.searchsorted(np.memmap(self.path(run, "token"), dtype=np.int32, mode="r"), tokens)


def write_index(texts: Iterable[str], directory: Path, total: int | None = None, progress: bool = True) -> int:
    """bm25s's index files of `texts` in `directory` (which exists); the number of documents."""
    import bm25s
    from bm25s.tokenization import Tokenizer

    retriever = bm25s.BM25()
    tokenizer = Tokenizer(stopwords=STOPWORDS)
    with tempfile.TemporaryDirectory(prefix=".runs-", dir=directory) as folder:
        runs = _Runs(Path(folder))
        bar = tqdm(total=total, desc="BM25 tokenize", unit="doc", disable=not progress)
        n_documents = 0
        for run in _batches(texts, RUN_DOCUMENTS):
            token_lists = []
            for batch in _batches(run, TOKENIZE_BATCH):
                tokenized = tokenizer.tokenize(batch, update_vocab=True, return_as="ids", show_progress=False)
                token_lists += [np.asarray(doc, dtype=np.int32) for doc in tokenized]
                bar.update(len(batch))
            runs.add(token_lists, n_documents)
            n_documents += len(run)
        bar.close()
        vocabulary = tokenizer.get_vocab_dict()
        frequency = np.zeros(len(vocabulary), dtype=np.int64)
        frequency[: len(runs.document_frequency)] = runs.document_frequency
        merge_runs(runs, frequency, n_documents, retriever, directory, progress)
    if "" not in vocabulary:  # bm25s's index adds the empty token after the vocabulary
        vocabulary[""] = max(vocabulary.values(), default=-1) + 1
    (directory / "vocab.index.json").write_text(json.dumps(vocabulary, ensure_ascii=False), encoding="utf-8")
    params = {f: getattr(retriever, f) for f in ("k1", "b", "delta", "method", "idf_method", "dtype", "int_dtype")}
    params.update(num_docs=n_documents, version=bm25s.__version__, backend=retriever.backend)
    (directory / "params.index.json").write_text(json.dumps(params, indent=4))
    return n_documents


def merge_runs(
    runs: _Runs, frequency: np.ndarray, n_documents: int, retriever, directory: Path, progress: bool
) -> None:
    """The runs merged into bm25s's CSC score matrix, `MERGE_POSTINGS` postings at a time: per
    token, its documents in order (the runs are in document order) and their BM25 scores."""
    from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

    if retriever.method in retriever.methods_requiring_nonoccurrence:
        raise ValueError(f"BM25 variant {retriever.method!r} is not supported by the bounded build")
    indptr = np.zeros(len(frequency) + 1, dtype=np.int64)
    np.cumsum(frequency, out=indptr[1:])
    np.save(directory / FILES["indptr"], indptr)
    # as bm25s: idf from each distinct document frequency with math.log, stored in its dtype ...
    idf_of = _select_idf_scorer(retriever.idf_method)
    distinct, where = np.unique(frequency, return_inverse=True)
    idf = np.array([idf_of(int(df), N=n_documents) if df else 0.0 for df in distinct], dtype=retriever.dtype)[where]
    # ... and the average length of the documents' token lists
    lengths = np.concatenate(runs.lengths) if runs.lengths else np.zeros(0, np.int64)
    average_length = lengths.mean() if len(lengths) else 0.0
    tfc = _select_tfc_scorer(retriever.method)
    bounds = _token_blocks(indptr, MERGE_POSTINGS)
    blocks = list(zip(bounds[:-1], bounds[1:]))
    size = indptr[-1]
    with _NpyWriter(directory / FILES["data"], retriever.dtype, size) as data:
        with _NpyWriter(directory / FILES["indices"], retriever.int_dtype, size) as indices:
            for low, high in tqdm(blocks, desc="BM25 merge", unit="block", disable=not progress):
                token, document, tf = _block(runs, low, high)
                tf = tf.astype(retriever.dtype)
                scored = tfc(tf_array=tf, l_d=lengths[document], l_avg=average_length, k1=retriever.k1, b=retriever.b)
                data.write(idf[token] * scored)
                indices.write(document)


def _block(runs: _Runs, low: int, high: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of tokens `low:high` from every run, by token and then document (the runs
    are in document order, each sorted by token and document)."""
    bounds = np.array([low, high])
    parts = [runs.read(run, *runs.positions(run, bounds)) for run in range(len(runs.sizes))]
    token, document, tf = (np.concatenate(field) for field in zip(*parts))
    order = np.argsort(token, kind="stable")
    return token[order], document[order], tf[order]


def _token_blocks(indptr: np.ndarray, postings: int) -> list[int]:
    """Token boundaries of blocks of about `postings` postings each (a block holds at least one token)."""
    bounds, low = [0], 0
    n_tokens = len(indptr) - 1
    while low < n_tokens:
        high = int(np.searchsorted(indptr, indptr[low] + postings, side="right")) - 1
        low = min(max(high, low + 1), n_tokens)
        bounds.append(low)
    return bounds


class _NpyWriter:
    """A `.npy` file of one-dimensional `length` items of `dtype`, written in consecutive parts."""

    def __init__(self, path: Path, dtype, length: int):
        self.path, self.dtype, self.length, self.written = path, np.dtype(dtype), int(length), 0

    def __enter__(self):
        self.file = open(self.path, "wb")
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (self.length,)}
        np.lib.format.write_array_header_1_0(self.file, header)
        return self

    def write(self, part: np.ndarray) -> None:
        self.file.write(np.ascontiguousarray(part, dtype=self.dtype).tobytes())
        self.written += len(part)

    def __exit__(self, *failed):
        self.file.close()
        if not failed[0] and self.written != self.length:
            raise RuntimeError(f"{self.path}: wrote {self.written} of {self.length} items")


class Bm25Index:
    """A bm25s index of `n_documents` documents (rows in corpus order)."""

    def __init__(self, retriever, n_documents: int):
        self.retriever, self.n_documents = retriever, n_documents

    @classmethod
    def build(cls, texts: Iterable[str], total: int | None = None, progress: bool = True) -> Bm25Index:
        """The index of `texts`, built on disk in bounded memory and read back into memory (a
        small corpus: notebook 01's); `of_corpus` keeps it instead."""
        import bm25s

        with tempfile.TemporaryDirectory(prefix="amer-bm25-") as folder:
            n_documents = write_index(texts, Path(folder), total, progress)
            return cls(bm25s.BM25.load(folder, mmap=False, show_progress=False), n_documents)

    @classmethod
    def of_corpus(
        cls, texts: Iterable[str], n_documents: int, directory: str | Path, key: dict, progress: bool = True
    ) -> Bm25Index:
        """The index of `texts` (the corpus's full texts, in row order), memory-mapped from
        `directory` when it was built there for the same `key` (the corpus file's path, size and
        time), else built there atomically first (a killed build leaves nothing half written)."""
        if (found := cls.load(directory, key)) is None:
            with atomic_folder(directory) as staging:
                written = write_index(texts, staging, n_documents, progress)
                files = folder_files(staging, MANIFEST)
                (staging / MANIFEST).write_text(json.dumps({"key": key, "n_documents": written, "files": files}))
            found = cls.load(directory, key)
        return found

    @classmethod
    def load(cls, directory: str | Path, key: dict) -> Bm25Index | None:
        """The index saved in `directory` for `key`, memory-mapped; None when there is none, it was
        built for another key, or its files are not as its manifest records them (said)."""
        import bm25s

        manifest = Path(directory) / MANIFEST
        if not manifest.exists():
            return None
        saved = json.loads(manifest.read_text())
        if saved["key"] != key:
            return None
        if (damage := folder_damage(Path(directory), saved.get("files"), manifest)) is not None:
            print(f"the BM25 index {directory} is damaged ({damage}): building it again", flush=True)
            return None
        return cls(bm25s.BM25.load(str(directory), mmap=True, show_progress=False), saved["n_documents"])

    def top_k(
        self, queries: list[str], k: int, progress: bool = True, processes: int = 1, ties: str = "bm25s"
    ) -> np.ndarray:
        """Rows `[len(queries), min(k, documents)]` of the best documents of each query: bm25s's
        scores and its numpy selection, as `bm25s.BM25.retrieve` gives them without JAX (or equal
        scores by row: `select_top_k`'s `ties`). With `processes` > 1 the queries are spread over
        that many forked processes (each query's rows are its own, so the result does not depend on
        how many)."""
        check_ties(ties)
        k = min(k, self.n_documents)
        chunks = [queries[start : start + QUERY_CHUNK] for start in range(0, len(queries), QUERY_CHUNK)]
        bar = dict(desc="BM25 search", unit="chunk", total=len(chunks), disable=not progress or len(chunks) < 2)
        if processes <= 1 or len(chunks) < 2:
            found = [self._top_k(chunk, k, ties) for chunk in tqdm(chunks, **bar)]
        else:
            global _SEARCHED
            _SEARCHED = self  # the forked processes find the index here (its arrays are shared, not copied)
            gc.freeze()  # the children's garbage collector leaves the parent's objects (a corpus) unwritten
            context = multiprocessing.get_context("fork")
            try:
                workers = min(processes, len(chunks))
                with context.Pool(workers, initializer=end_with_parent, initargs=(os.getpid(),)) as pool:
                    found = list(tqdm(pool.imap(_searched_top_k, [(chunk, k, ties) for chunk in chunks]), **bar))
            finally:
                gc.unfreeze()
                _SEARCHED = None
        return np.concatenate(found) if found else np.zeros((0, k), dtype=np.int64)

    def _top_k(self, queries: list[str], k: int, ties: str) -> np.ndarray:
        import bm25s

        tokens = bm25s.tokenize(queries, stopwords=STOPWORDS, show_progress=False, return_ids=False)
        found = np.empty((len(queries), k), dtype=np.int64)
        for i, query in enumerate(tokens):
            scores = self.retriever.get_scores(query) if query else np.zeros(self.n_documents, self.retriever.dtype)
            found[i] = select_top_k(scores, k, ties)
        return found


def check_ties(ties: str) -> str:
    if ties not in TIES:
        raise ValueError(f"unknown order of equal BM25 scores {ties!r}; choose one of {TIES}")
    return ties


def select_top_k(scores: np.ndarray, k: int, ties: str = "bm25s") -> np.ndarray:
    """The rows of the `k` best `scores`, best first. Equal scores in the order of bm25s's numpy
    selection (`ties="bm25s"`: `bm25s.selection.topk(scores, k, backend="numpy", sorted=True)`,
    which scans every score) or by row (`ties="row"`), found among the positive scores, the first
    rows whose score is not positive filling the list when fewer than k are."""
    from bm25s.selection import topk

    check_ties(ties)
    if scores.ndim != 1 or not 0 <= k <= len(scores):
        raise ValueError(f"need one row of scores and 0 <= k <= its length {len(scores)}; got {scores.shape}, k {k}")
    if ties == "bm25s":
        return topk(scores, k, backend="numpy", sorted=True)[1]
    positive = np.flatnonzero(scores > 0)  # what a query matched: 35-54% of the passages in bench_prep
    values = scores[positive]
    if len(positive) > k > 0:  # those above the k-th best score, then the first rows that equal it
        kth = np.partition(values, len(values) - k)[len(values) - k]
        above = values > kth
        equal = np.flatnonzero(values == kth)[: k - np.count_nonzero(above)]
        kept = np.sort(np.concatenate([np.flatnonzero(above), equal]))
        positive, values = positive[kept], values[kept]
    rows = positive[np.argsort(-values, kind="stable")]  # by row within equal scores
    if len(rows) < k:
        rows = np.concatenate([rows, np.flatnonzero(scores[: 2 * k] <= 0)[: k - len(rows)]])
    return rows[:k]


QUERY_CHUNK = 256  # queries a process searches at a time
_SEARCHED: Bm25Index | None = None  # the index a forked search process reads


def _searched_top_k(job: tuple[list[str], int, str]) -> np.ndarray:
    return _SEARCHED._top_k(*job)
