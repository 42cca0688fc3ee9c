"""Document corpora: TSV `id<TAB>text<TAB>title` (the DPR / QAMPARI chunk format, header line
optional) or BEIR `corpus.jsonl` (`_id`, `title`, `text`), plain or gzipped.

`iter_documents` streams (for a 25M-passage corpus); `Corpus` holds a small one in memory.
The text a document encoder sees is `title + " " + text`.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from amer_lib.data.questions import DataFormatError, require_file
from amer_lib.io import open_text

FORMATS = (".tsv", ".jsonl")


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str

    @property
    def full_text(self) -> str:
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
    path = require_file(path, "corpus")
    kind = corpus_format(path)
    with open_text(path) as lines:
        yield from (_tsv_documents(lines, path) if kind == ".tsv" else _jsonl_documents(lines, path))


def _tsv_documents(lines, path: Path) -> Iterator[Document]:
    csv.field_size_limit(sys.maxsize)
    for number, row in enumerate(csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
        if number == 1 and row[:1] == ["id"]:
            continue  # DPR's header line
        if len(row) != 3:
            raise DataFormatError(f"{path}:{number} has {len(row)} tab-separated fields; expected id, text, title")
        yield Document(row[0], row[2], row[1])


def _jsonl_documents(lines, path: Path) -> Iterator[Document]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{number} is not valid JSON ({exc.msg})") from exc
        if "_id" not in record or "text" not in record:
            raise DataFormatError(f"{path}:{number} lacks '_id' or 'text' (BEIR corpus.jsonl)")
        yield Document(str(record["_id"]), record.get("title", ""), record["text"])


class Corpus:
    """An in-memory corpus with an id -> row lookup; duplicate ids are an error."""

    def __init__(self, documents: list[Document], source: str = "corpus"):
        self.documents = documents
        self.row_of: dict[str, int] = {}
        for row, document in enumerate(documents):
            if document.id in self.row_of:
                raise DataFormatError(
                    f"{source} holds the document id {document.id!r} twice (rows {self.row_of[document.id]} and {row})"
                )
            self.row_of[document.id] = row

    @classmethod
    def read(cls, path: str | Path) -> Corpus:
        return cls(list(iter_documents(path)), str(path))

    def __len__(self) -> int:
        return len(self.documents)

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
