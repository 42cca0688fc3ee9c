"""The offline multi-answer benchmark derived from WordNet 3.0.

Two question types with genuinely different answers, and a corpus of every synset's gloss:

* `senses` (AmbigQA-like): an ambiguous noun; each of its 2-8 noun senses is one answer, whose
  gold document is that sense's gloss.
* `kinds` (QAMPARI-like): a noun category with 5-8 direct hyponyms or instances (its name being
  unambiguous); each hyponym is one answer, its gloss the gold document.

Documents are glosses only (no lemma as title), so a question cannot be answered by matching
its word against a title. The repository ships the derived copy under `amer_lib/data/wordnet/`
(with WordNet's licence); `python -m amer_lib.data.wordnet /usr/share/wordnet` (Debian's
`wordnet-base`) derives it again, byte for byte.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from amer_lib.data.corpus import Corpus
from amer_lib.data.questions import MultiAnswerQuestion, read_questions
from amer_lib.io import atomic_path

SHIPPED = Path(__file__).with_name("wordnet")
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}  # satellites ('s') live in data.adj
KINDS = ("senses", "kinds")
SPLITS = ("train", "test")
TEST_PERCENT = 15
SENSE_RANGE = (2, 8)
KINDS_RANGE = (5, 8)
HYPONYM_POINTERS = ("~", "~i")


@dataclass
class Synset:
    id: str  # pos letter + 8-digit offset, e.g. n02084071
    lemmas: list[str]
    gloss: str
    hyponyms: list[str] = field(default_factory=list)


def _parse_data_line(line: str, pos: str) -> Synset:
    """One line of a `data.<pos>` file (format: wndb(5WN))."""
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    offset, n_words = fields[0], int(fields[3], 16)
    lemmas = [fields[4 + 2 * i].replace("_", " ") for i in range(n_words)]
    cursor = 4 + 2 * n_words
    n_pointers = int(fields[cursor])
    hyponyms = []
    for i in range(n_pointers):
        symbol, target, target_pos = fields[cursor + 1 + 4 * i : cursor + 4 + 4 * i]
        if symbol in HYPONYM_POINTERS and target_pos == "n":
            hyponyms.append(f"n{target}")
    return Synset(f"{pos}{offset}", lemmas, gloss.strip(), hyponyms)


def read_synsets(wordnet_dir: str | Path) -> dict[str, Synset]:
    wordnet_dir = Path(wordnet_dir)
    synsets = {}
    for pos, name in POS_FILES.items():
        path = wordnet_dir / f"data.{name}"
        if not path.exists():
            raise FileNotFoundError(
                f"{path} does not exist; install Debian's wordnet-base (WordNet 3.0) "
                "or point at a WordNet 3.0 'dict' directory"
            )
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if not line.startswith("  "):  # the licence header lines start with two spaces
                    synset = _parse_data_line(line, pos)
                    synsets[synset.id] = synset
    return synsets


def read_noun_senses(wordnet_dir: str | Path) -> dict[str, list[str]]:
    """Noun lemma -> its synset ids, in WordNet's sense order (`index.noun`)."""
    senses = {}
    with open(Path(wordnet_dir) / "index.noun", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("  "):
                continue
            fields = line.split()
            n_synsets = int(fields[2])
            senses[fields[0].replace("_", " ")] = [f"n{offset}" for offset in fields[-n_synsets:]]
    return senses


def split_of(qid: str) -> str:
    """A question's split, by its qid's hash: `TEST_PERCENT` in 100 go to test, the same on any machine."""
    bucket = int(hashlib.sha256(qid.encode()).hexdigest(), 16) % 100
    return "test" if bucket < TEST_PERCENT else "train"


def _question(qid: str, text: str, ids: list[str], synsets: dict[str, Synset]) -> MultiAnswerQuestion:
    """A question whose answers are the synsets `ids`, each its own gold document (its gloss)."""
    return MultiAnswerQuestion(qid, text, [synsets[i].lemmas for i in ids], [[i] for i in ids])


def sense_questions(synsets: dict[str, Synset], senses: dict[str, list[str]]) -> list[MultiAnswerQuestion]:
    questions = []
    for lemma, ids in senses.items():
        if SENSE_RANGE[0] <= len(ids) <= SENSE_RANGE[1] and lemma.replace(" ", "").isalpha():
            questions.append(_question(f"senses:{lemma}", f'What does the word "{lemma}" mean?', ids, synsets))
    return questions


def kind_questions(synsets: dict[str, Synset], senses: dict[str, list[str]]) -> list[MultiAnswerQuestion]:
    questions = []
    for synset in synsets.values():
        name = synset.lemmas[0]
        unique = list(dict.fromkeys(synset.hyponyms))
        if KINDS_RANGE[0] <= len(unique) <= KINDS_RANGE[1] and len(senses.get(name.lower(), [])) == 1:
            questions.append(_question(f"kinds:{synset.id}", f"What are examples of {name}?", unique, synsets))
    return questions


def derive(wordnet_dir: str | Path, out_dir: str | Path = SHIPPED) -> dict[str, int]:
    """Write corpus.tsv.gz and {senses,kinds}_{train,test}.jsonl.gz; returns the counts."""
    synsets = read_synsets(wordnet_dir)
    senses = read_noun_senses(wordnet_dir)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{s.id}\t{_clean(s.gloss)}\t\n" for s in sorted(synsets.values(), key=lambda s: s.id))
    _write_gz(out_dir / "corpus.tsv.gz", "id\ttext\ttitle\n" + rows)
    counts = {"corpus": len(synsets)}
    for kind, questions in (("senses", sense_questions(synsets, senses)), ("kinds", kind_questions(synsets, senses))):
        for split in SPLITS:
            chosen = sorted((q for q in questions if split_of(q.qid) == split), key=lambda q: q.qid)
            _write_gz(
                out_dir / f"{kind}_{split}.jsonl.gz",
                "".join(json.dumps(q.to_json(), ensure_ascii=False) + "\n" for q in chosen),
            )
            counts[f"{kind}_{split}"] = len(chosen)
    return counts


def _clean(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


def _write_gz(path: Path, text: str) -> None:
    """Deterministic gzip (no timestamp or file name in the header), written atomically."""
    with atomic_path(path) as tmp:
        buffer = io.BytesIO()
        with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as zipped:
            zipped.write(text.encode("utf-8"))
        tmp.write_bytes(buffer.getvalue())


def load_corpus(directory: str | Path = SHIPPED) -> Corpus:
    return Corpus.read(Path(directory) / "corpus.tsv.gz")


def load_questions(kind: str, split: str, directory: str | Path = SHIPPED) -> list[MultiAnswerQuestion]:
    if kind not in KINDS:
        raise ValueError(f"unknown WordNet question kind {kind!r}; valid: {', '.join(KINDS)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    return read_questions(Path(directory) / f"{kind}_{split}.jsonl.gz")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wordnet_dir", help="WordNet 3.0 database directory, e.g. /usr/share/wordnet")
    parser.add_argument("--out", default=str(SHIPPED), help="output directory (default: the shipped copy)")
    args = parser.parse_args()
    print(json.dumps(derive(args.wordnet_dir, args.out), indent=1))


if __name__ == "__main__":
    main()
