"""Document corpora, plain or gzipped, in the three published layouts the paper's data comes in:

- TSV `id<TAB>text<TAB>title` with an optional `id text title` header: DPR's `psgs_w100.tsv` and
  the QAMPARI chunks as converted to TSV. Both are written by Python's `csv` module, so a field
  holding a quote, a tab or a line break is quoted and its inner quotes doubled
  (`"Aaron Aaron ( or ; ""Ahärôn"") ..."`); the reader undoes that quoting.
- BEIR `corpus.jsonl`: `_id`, `title`, `text`.
- QAMPARI's published chunks (jsonl): `id`, `contents` (the page title, then the chunk's text) and
  `meta` (with the page `title`).

`iter_documents` streams (for a 25M-passage corpus); `Corpus` holds a small one in memory;
`DocumentStore` keeps a large one on disk for random access by row (the gold mapping's).
What a document encoder, BM25 and the gold mapping see is the title once, then the text
(`Document.full_text`): a text that already begins with its title (QAMPARI's `contents`, the
authors' TSV made of it, DPR's first passage of a page) is not prefixed again.
"""

from __future__ import annotations

import csv
import json
import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from amer_lib.data.questions import DataFormatError, decoded_lines, json_lines, require_file
from amer_lib.io import atomic_folder, atomic_path, folder_damage, folder_files, open_text
from amer_lib.progress import tqdm

FORMATS = (".tsv", ".jsonl")
TSV_HEADER = ["id", "text", "title"]


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str

    @property
    def full_text(self) -> str:
        if not self.title or self.text == self.title or self.text.startswith(self.title + " "):
            return self.text.strip()
        return f"{self.title} {self.text}".strip()


def corpus_format(path: Path) -> str:
    suffixes = path.suffixes[-2:] if path.suffix == ".gz" else path.suffixes[-1:]
    kind = suffixes[0] if suffixes else ""
    if kind not in FORMATS:
        raise ValueError(
            f"cannot tell the corpus format of {path}; valid suffixes: "
            f"{', '.join(FORMATS)} (optionally followed by .gz)"
        )
    return kind


def iter_documents(path: str | Path) -> Iterator[Document]:
    return (document for _, document in numbered_documents(path))


def numbered_documents(path: str | Path) -> Iterator[tuple[int, Document]]:
    """Each document of a corpus file with the number of the file line it starts on."""
    path = require_file(path, "corpus")
    if corpus_format(path) == ".jsonl":
        yield from _jsonl_documents(path)
        return
    with open_text(path, newline="") as lines:  # newline="": csv reads line breaks inside quoted fields
        yield from _tsv_documents(decoded_lines(lines, path), path)


def _tsv_documents(lines: Iterable[str], path: Path) -> Iterator[tuple[int, Document]]:
    csv.field_size_limit(sys.maxsize)
    reader = csv.reader(lines, delimiter="\t", strict=True)
    start = 1
    try:
        for row in reader:
            if reader.line_num == 1 and row[:1] == ["id"]:
                start = reader.line_num + 1
                continue  # DPR's header line
            if len(row) != 3:
                where = _where(path, start, reader.line_num)
                raise DataFormatError(f"{where} has {len(row)} tab-separated fields; expected id, text, title")
            line, start = start, reader.line_num + 1
            yield line, Document(row[0], row[2], row[1])
    except csv.Error as exc:
        raise DataFormatError(f"{_where(path, start, reader.line_num)} is not a valid quoted TSV row ({exc})") from exc


def _where(path: Path, first: int, last: int) -> str:
    return f"{path}:{first}" if first >= last else f"{path}:{first}-{last}"


def _jsonl_documents(path: Path) -> Iterator[tuple[int, Document]]:
    for number, record in json_lines(path):
        if not isinstance(record, dict):
            raise DataFormatError(f"{path}:{number} is not a JSON object")
        if "contents" in record:
            yield number, _chunk_document(record, f"{path}:{number}")
        elif "_id" in record and "text" in record:
            yield number, Document(str(record["_id"]), record.get("title") or "", record["text"])
        else:
            raise DataFormatError(
                f"{path}:{number} is neither a BEIR corpus.jsonl record ('_id', 'text', 'title') nor a QAMPARI "
                f"chunk ('id', 'contents', 'meta'); its keys: {sorted(record)}"
            )


def _chunk_document(record: dict, where: str) -> Document:
    """A QAMPARI chunk: `contents` (which begins with the title) and the page title of `meta`."""
    if "id" not in record or not isinstance(record["contents"], str):
        raise DataFormatError(f"{where}: a QAMPARI chunk needs an 'id' and a 'contents' string")
    return Document(str(record["id"]), (record.get("meta") or {}).get("title") or "", record["contents"])


def write_tsv(path: str | Path, documents: Iterable[Document]) -> None:
    """A corpus TSV with DPR's header and quoting (read back by `iter_documents` unchanged)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow(TSV_HEADER)
        writer.writerows([d.id, d.text, d.title] for d in documents)


class Corpus:
    """An in-memory corpus with an id -> row lookup; duplicate ids are an error."""

    def __init__(self, documents: list[Document], source: str = "corpus", lines: list[int] | None = None):
        """`lines`: the file line each document starts on, which a duplicate id's error names (else its rows)."""
        self.documents = documents
        self.row_of: dict[str, int] = {}
        for row, document in enumerate(documents):
            if document.id in self.row_of:
                first = self.row_of[document.id]
                where = f"lines {lines[first]} and {lines[row]}" if lines else f"rows {first} and {row}"
                raise DataFormatError(f"{source} holds the document id {document.id!r} twice ({where})")
            self.row_of[document.id] = row

    @classmethod
    def read(cls, path: str | Path) -> Corpus:
        numbered = list(numbered_documents(path))
        return cls([document for _, document in numbered], str(path), [line for line, _ in numbered])

    def __len__(self) -> int:
        return len(self.documents)

    def document(self, row: int) -> Document:
        return self.documents[row]

    @property
    def ids(self) -> list[str]:
        return [d.id for d in self.documents]

    def texts(self) -> list[str]:
        return [d.full_text for d in self.documents]

    def rows(self, ids: list[str]) -> list[int]:
        unknown = [i for i in ids if i not in self.row_of]
        if unknown:
            raise KeyError(f"document id(s) {unknown[:5]} are not in the corpus")
        return [self.row_of[i] for i in ids]


_id_hash = hash  # the store's check for repeated ids compares only the ids whose hashes are equal


class DocumentStore:
    """A corpus file's documents on disk, read by row: each field (`id`, `title`, `text`) one file
    of UTF-8 bytes, memory-mapped, and an int64 offset per document. What a 25M-passage corpus
    needs for random access costs 0.6 GB of offsets in memory instead of the whole text as Python
    strings (about 1 GiB a million passages); the files take about the corpus's size on disk."""

    FIELDS = ("id", "title", "text")
    MANIFEST = "store.json"

    def __init__(self, directory: Path, n_documents: int):
        self.directory, self.n_documents = directory, n_documents
        stored = [f for f in self.FIELDS if (directory / f"{f}.bytes").stat().st_size]  # np.memmap refuses empty files
        self.bytes = {f: np.memmap(directory / f"{f}.bytes", dtype=np.uint8, mode="r") for f in stored}
        # offsets in memory (24 bytes a document: 0.6 GB at 25M), the bytes mapped: a read is about 3x faster
        self.offsets = {f: np.load(directory / f"{f}.offsets.npy") for f in self.FIELDS}

    @classmethod
    def of_corpus(cls, path: str | Path, directory: str | Path, key: dict, progress: bool = True) -> DocumentStore:
        """The store of the corpus file `path` in `directory`, written there first (atomically)
        unless it was written for the same `key` (the file's path, size and time) and its files are
        as its manifest records them (`io.folder_damage`; one that is not is said and written again)."""
        directory = Path(directory)
        manifest = directory / cls.MANIFEST
        saved = json.loads(manifest.read_text()) if manifest.exists() else None
        same = saved is not None and saved["key"] == key
        damage = folder_damage(directory, saved.get("files"), manifest) if same else None
        if damage is not None:
            print(f"the corpus store {directory} is damaged ({damage}): writing it again", flush=True)
        if not same or damage is not None:
            with atomic_folder(directory) as staging:
                n_documents = cls._write(path, staging, progress)
                files = folder_files(staging, cls.MANIFEST)
                (staging / cls.MANIFEST).write_text(
                    json.dumps({"key": key, "n_documents": n_documents, "files": files})
                )
        return cls(directory, json.loads(manifest.read_text())["n_documents"])

    @classmethod
    def _write(cls, path: str | Path, directory: Path, progress: bool) -> int:
        offsets = {f: array("q", [0]) for f in cls.FIELDS}
        id_hashes = array("q")  # 8 bytes a document where a set of the ids would take about 120
        files = {f: open(directory / f"{f}.bytes", "wb") for f in cls.FIELDS}
        try:
            for document in tqdm(iter_documents(path), desc="corpus store", unit="doc", disable=not progress):
                id_hashes.append(_id_hash(document.id))
                for field in cls.FIELDS:
                    encoded = getattr(document, field).encode("utf-8")
                    files[field].write(encoded)
                    offsets[field].append(offsets[field][-1] + len(encoded))
        finally:
            for file in files.values():
                file.close()
        for field, values in offsets.items():
            np.save(directory / f"{field}.offsets.npy", np.frombuffer(values, dtype=np.int64))
        n_documents = len(id_hashes)
        cls(directory, n_documents)._require_unique_ids(np.frombuffer(id_hashes, dtype=np.int64), path)
        return n_documents

    def _require_unique_ids(self, id_hashes: np.ndarray, path) -> None:
        """A repeated id is an error naming its rows; only rows whose ids share a hash are compared."""
        order = np.argsort(id_hashes, kind="stable")
        ranked = id_hashes[order]
        shared = np.flatnonzero(ranked[1:] == ranked[:-1])
        for run in np.split(shared, np.flatnonzero(np.diff(shared) != 1) + 1) if len(shared) else []:
            rows_of: dict[str, int] = {}
            for row in order[run[0] : run[-1] + 2].tolist():  # the rows of one shared hash, in row order
                doc_id = self._field("id", row)
                if doc_id in rows_of:
                    twice = f"rows {rows_of[doc_id]} and {row}"
                    raise DataFormatError(f"{path} holds the document id {doc_id!r} twice ({twice})")
                rows_of[doc_id] = row

    def __len__(self) -> int:
        return self.n_documents

    def _field(self, field: str, row: int) -> str:
        start, stop = self.offsets[field][row], self.offsets[field][row + 1]
        return bytes(self.bytes[field][start:stop]).decode("utf-8") if stop > start else ""

    def document(self, row: int) -> Document:
        if not 0 <= row < self.n_documents:
            raise IndexError(f"row {row} is outside the corpus's {self.n_documents} documents")
        return Document(*(self._field(field, row) for field in self.FIELDS))

    def texts(self, block: int = 10_000) -> Iterator[str]:
        """Every document's `full_text`, in row order, read `block` documents at a time with plain
        reads (a pass through mapped pages would leave the whole corpus in the resident memory)."""
        with open(self.directory / "title.bytes", "rb") as titles, open(self.directory / "text.bytes", "rb") as texts:
            for start in range(0, self.n_documents, block):
                stop = min(start + block, self.n_documents)
                fields = [self._read(file, field, start, stop) for file, field in ((titles, "title"), (texts, "text"))]
                for title, text in zip(*fields):
                    yield Document("", title, text).full_text

    def _read(self, file, field: str, start: int, stop: int) -> list[str]:
        offsets = np.asarray(self.offsets[field][start : stop + 1])
        file.seek(int(offsets[0]))
        data = file.read(int(offsets[-1] - offsets[0]))
        ends = offsets - offsets[0]
        return [data[a:b].decode("utf-8") for a, b in zip(ends[:-1].tolist(), ends[1:].tolist())]
