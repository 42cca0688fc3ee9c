"""FOLDOC, the Free On-line Dictionary of Computing, as a second compound benchmark (the FOLDOC
replication's data, a dictionary the team never tuned on).

Read from Debian's `dict-foldoc` (`/usr/share/dictd/foldoc.index` and `foldoc.dict.dz`, the dictd
format: each index line `headword<TAB>offset<TAB>length`, the numbers in dictd's base 64, several
headwords pointing to one record; a record is its headword lines, a blank line, then the text).
The benchmark is built as the WordNet compound benchmark is (`amer_lib.beyond.compound`):

* a component is an entry with 2-8 numbered senses (`1. ... 2. ...`), asked as
  `What does the word "X" mean?` (qid `senses:X`, as WordNet's senses questions); each sense is one
  answer, whose gold document is that sense's text;
* the corpus is every record: one document per numbered sense, one per record otherwise, each
  without its headwords (no title), FOLDOC's `{cross references}` kept as words and `<domains>`
  as a leading `domain:`, its date stamp dropped;
* components go to test by their qid's hash (15 in 100, `wordnet.split_of`); only the findable
  ones are kept (every sense in the off-the-shelf encoder's top 100 for the component alone,
  `compound.findable`); then compounds of k components are drawn by `compound.sample_compounds`
  (at most `MAX_ANSWERS` answers), each answer's `answer_questions` entry its component's text.

Its files are the README's own-data format (a corpus TSV and questions jsonl, one file a split),
for notebook 03 (`test_questions_path`), which draws the validation questions so that none shares
a component with training. From the repository root (13 min on 2 shared cores, most of it encoding
13,620 documents):

    .venv/bin/python studies/foldoc/build.py /usr/share/dictd results/foldoc --record studies/foldoc/foldoc_data.json
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from amer_lib.beyond import compound  # noqa: E402
from amer_lib.data import wordnet  # noqa: E402
from amer_lib.data.corpus import iter_documents  # noqa: E402
from amer_lib.data.encoders import DocumentEncoder, encode_corpus  # noqa: E402
from amer_lib.data.questions import MultiAnswerQuestion, write_questions  # noqa: E402
from amer_lib.io import write_json, write_text  # noqa: E402
from amer_lib.packaged import sha256_of  # noqa: E402

INDEX, DICT = "foldoc.index", "foldoc.dict.dz"
BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"  # dictd's digits
SENSE_RANGE = wordnet.SENSE_RANGE  # 2-8 senses, as WordNet's senses questions
KS = (2, 3)
MAX_ANSWERS = 8  # as the WordNet compound benchmark (params/03_real_data_prep/compound.yaml)
MAX_TRAIN, MAX_TEST = 3000, 600
FINDABLE_DEPTH = 100
ENCODER = "minilm"
SENSE = re.compile(r"^ {3}(\d+)\. ", re.MULTILINE)  # a numbered sense at a line's start
FIRST = re.compile(r"(?:^|\s)1\. ")  # sense 1 may follow a domain or a pronunciation on its line
DATE = re.compile(r"^ {3}\(\d{4}-\d{2}-\d{2}\)\s*$", re.MULTILINE)
DOMAIN = re.compile(r"^<([^>]+)>\s*")


@dataclass(frozen=True)
class Entry:
    headwords: tuple[str, ...]
    body: str  # the record's text after its headword lines, as the dictionary has it


def decode_number(digits: str) -> int:
    """A dictd index number (`Gb9L`): base 64, most significant digit first."""
    value = 0
    for digit in digits:
        if digit not in BASE64:
            raise ValueError(f"{digits!r} is not a dictd base-64 number (digits A-Z a-z 0-9 + /)")
        value = value * 64 + BASE64.index(digit)
    return value


def read_dictd(folder: str | Path) -> list[Entry]:
    """The records of a dictd dictionary in `folder` (`foldoc.index` and `foldoc.dict.dz`, or an
    uncompressed `foldoc.dict`), in the dictionary's order, each with every headword that points to
    it; the dictd bookkeeping records (`00-database-...`) left out."""
    folder = Path(folder)
    index = folder / INDEX
    data = folder / DICT if (folder / DICT).exists() else folder / "foldoc.dict"
    for path in (index, data):
        if not path.exists():
            raise FileNotFoundError(
                f"{path} not found: install Debian's dict-foldoc, or give the folder that holds {INDEX} and {DICT}"
            )
    raw = gzip.decompress(data.read_bytes()) if data.suffix == ".dz" else data.read_bytes()
    headwords: dict[tuple[int, int], list[str]] = {}
    for number, line in enumerate(index.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 3:
            raise ValueError(f"{index}:{number}: {len(fields)} fields, not word<TAB>offset<TAB>length")
        word, offset, length = fields
        if not word.startswith("00-database-") and not word.startswith("00database"):
            headwords.setdefault((decode_number(offset), decode_number(length)), []).append(word)
    entries = []
    for (offset, length), words in sorted(headwords.items()):
        record = raw[offset : offset + length].decode("utf-8")
        head, _, body = record.partition("\n\n")
        entries.append(Entry(tuple(dict.fromkeys([*head.splitlines()[:1], *words])), body))
    return entries


def numbered_senses(body: str) -> list[str]:
    """The texts of a record's numbered senses `1.`, `2.`, ... (each up to the next, the last up to
    the date stamp), or [] where the record has none or its numbers do not run 1, 2, 3, ... (a
    numbered list inside one meaning, e.g. years). Sense 1 may start inside its line, after the
    record's domain or pronunciation (`<jargon> 1. Originally, ...`), which no sense keeps."""
    found = [(int(m.group(1)), m.start(), m.end()) for m in SENSE.finditer(body)]
    if found and found[0][0] == 2 and (first := FIRST.search(body, 0, found[0][1])):
        found.insert(0, (1, first.start(), first.end()))
    if [number for number, _, _ in found] != list(range(1, len(found) + 1)):
        return []
    ends = [start for _, start, _ in found[1:]] + [len(body)]
    return [body[end_of_number:end] for (_, _, end_of_number), end in zip(found, ends)]


def clean(text: str) -> str:
    """A sense's or record's text as a document: the date stamp dropped, a leading `<domain>` as
    `domain:`, cross references' braces removed, whitespace collapsed."""
    text = " ".join(DATE.sub("", text).split())
    text = DOMAIN.sub(lambda m: f"{m.group(1)}: ", text)
    return text.replace("{", "").replace("}", "")


def corpus_and_components(entries: list[Entry]) -> tuple[list[tuple[str, str]], list[MultiAnswerQuestion]]:
    """The corpus `(id, text)` (one document per numbered sense, `f<record>.<sense>`, one per record
    otherwise, `f<record>`; empty texts left out) and the components: each record with 2-8
    numbered senses, under its first headword (the first record of a word, case folded, kept)."""
    documents, components, words = [], [], set()
    low, high = SENSE_RANGE
    for number, entry in enumerate(entries):
        senses = [clean(text) for text in numbered_senses(entry.body)]
        if not senses:
            if text := clean(entry.body):
                documents.append((f"f{number}", text))
            continue
        ids = [f"f{number}.{s}" for s in range(1, len(senses) + 1)]
        documents += [(i, text) for i, text in zip(ids, senses) if text]
        word = entry.headwords[0]
        if low <= len(senses) <= high and all(senses) and word.lower() not in words:
            words.add(word.lower())
            answers = [[" ".join(text.split()[:10])] for text in senses]
            text = f'What does the word "{word}" mean?'
            components.append(MultiAnswerQuestion(f"senses:{word}", text, answers, [[i] for i in ids]))
    return documents, components


def dataset_name(k: int) -> str:
    return f"foldoc_k{k}"


def named(question: MultiAnswerQuestion, k: int) -> MultiAnswerQuestion:
    """A compound of `compound.join` under this benchmark's name (`foldoc_k2:senses:hash+senses:zorch`),
    so that nothing takes its components for WordNet's."""
    return replace(question, qid=f"{dataset_name(k)}:{question.qid.partition(':')[2]}")


def write_corpus(path: Path, documents: list[tuple[str, str]]) -> None:
    """The corpus as TSV `id<TAB>text<TAB>title` with the header, titles empty, a text that starts
    with a quote quoted as the reader (`csv`, `corpus.iter_documents`) expects."""
    rows = io.StringIO()
    writer = csv.writer(rows, delimiter="\t", lineterminator="\n")
    writer.writerow(["id", "text", "title"])
    writer.writerows([i, text, ""] for i, text in documents)
    write_text(path, rows.getvalue())


def build(
    folder: str | Path,
    out: str | Path,
    encoder=None,
    seed: int = 0,
    ks: tuple[int, ...] = KS,
    max_train: int = MAX_TRAIN,
    max_test: int = MAX_TEST,
    max_answers: int = MAX_ANSWERS,
    depth: int = FINDABLE_DEPTH,
    progress: bool = True,
) -> dict:
    """The FOLDOC compound benchmark in `out`: `corpus.tsv`, and per k `train_k<k>.jsonl` and
    `test_k<k>.jsonl` (dataset `foldoc_k<k>`); returns (and writes as `manifest.json`) the counts,
    the recipe and each file's sha256. `encoder` (default: the off-the-shelf MiniLM) finds the findable components; with
    `depth` 0 every component is kept."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    entries = read_dictd(folder)
    documents, components = corpus_and_components(entries)
    write_corpus(out / "corpus.tsv", documents)
    pools = {split: [c for c in components if wordnet.split_of(c.qid) == split] for split in wordnet.SPLITS}
    counts = {f"components_{split}": len(pool) for split, pool in pools.items()}
    if depth:
        encoder = encoder or DocumentEncoder(ENCODER)
        shards = encode_corpus(
            encoder, iter_documents(out / "corpus.tsv"), out / "embeddings" / encoder.spec.name,
            total=len(documents), progress=progress,
        )  # fmt: skip
        pools = {split: compound.findable(pool, encoder, shards, depth) for split, pool in pools.items()}
        counts |= {f"findable_{split}": len(pool) for split, pool in pools.items()}
    for split, pool in pools.items():
        if not pool:
            raise ValueError(
                f"no {split} components in {folder} (of {len(components)}): no {split} compound can be drawn"
            )
    rng = np.random.default_rng(seed)
    files = {"corpus.tsv": out / "corpus.tsv"}
    for k in ks:
        for split, limit in (("train", max_train), ("test", max_test)):
            drawn = [named(q, k) for q in compound.sample_compounds(pools[split], k, limit, max_answers, rng)]
            files[f"{split}_k{k}.jsonl"] = out / f"{split}_k{k}.jsonl"
            write_questions(files[f"{split}_k{k}.jsonl"], drawn)
            counts[f"{split}_k{k}"] = len(drawn)
    manifest = {
        "source": {name: sha256_of(Path(folder) / name) for name in (INDEX, DICT) if (Path(folder) / name).exists()},
        "recipe": {
            "seed": seed,
            "ks": list(ks),
            "max_train": max_train,
            "max_test": max_test,
            "max_answers": max_answers,
            "findable_depth": depth,
            "findable_encoder": encoder.spec.name if depth else None,
            "sense_range": list(SENSE_RANGE),
            "test_percent": wordnet.TEST_PERCENT,
        },  # fmt: skip
        "records": len(entries),
        "documents": len(documents),
        "counts": counts,
        "files": {name: sha256_of(path) for name, path in files.items()},
    }
    write_json(out / "manifest.json", manifest)
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dictd", type=Path, help="the folder of foldoc.index and .dict.dz (Debian: /usr/share/dictd)")
    parser.add_argument("out", type=Path, help="the benchmark's folder (the corpus, the questions, manifest.json)")
    parser.add_argument("--record", type=Path, help="also write the manifest here (a file to commit)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    manifest = build(args.dictd, args.out, seed=args.seed)
    if args.record:
        write_json(args.record, manifest)
    print(manifest["counts"])


if __name__ == "__main__":
    main()
