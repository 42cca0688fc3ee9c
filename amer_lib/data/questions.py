"""Multi-answer questions: the library's jsonl format and readers for the published datasets.

The library's format (one JSON object per line)::

    {"qid": ..., "question": ..., "answers": [[alias, ...], ...], "targets": [[doc_id, ...], ...]}

`answers[i]` are the surface forms of answer cluster i and `targets[i]` its gold documents.
The readers below return questions without targets; `amer_lib.data.gold` maps them.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from amer_lib.io import atomic_path, open_text

DOWNLOADS = {
    "ambigqa": "AmbigQA light JSON (train_light.json, dev_light.json) from https://nlp.cs.washington.edu/ambigqa/",
    "qampari": "QAMPARI jsonl (train_data.jsonl, dev_data.jsonl) from https://samsam3232.github.io/qampari/",
    "nq_open": "NQ-open jsonl (NQ-open.dev.jsonl, NQ-open.efficientqa.test.1.1.jsonl) from "
    "https://github.com/google-research-datasets/natural-questions/tree/master/nq_open",
    "corpus": "the QAMPARI / DPR Wikipedia chunks as TSV (id<TAB>text<TAB>title) or a BEIR corpus.jsonl",
}


class DataFormatError(ValueError):
    """A data file does not have the structure its format promises."""


@dataclass
class MultiAnswerQuestion:
    qid: str
    question: str
    answers: list[list[str]]
    targets: list[list[str]] = field(default_factory=list)
    proofs: list[str] = field(default_factory=list)  # QAMPARI's evidence snippet per answer (mapping only)

    def to_json(self) -> dict:
        record = asdict(self)
        if not self.proofs:
            del record["proofs"]
        return record


def require_file(path: str | Path, dataset: str) -> Path:
    """`path` if it exists, else an error naming what to download and where to put it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist. Download {DOWNLOADS[dataset]} and put it at {path}")
    return path


def _json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    with open_text(path) as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataFormatError(f"{path}:{number} is not valid JSON ({exc.msg})") from exc


def read_questions(path: str | Path) -> list[MultiAnswerQuestion]:
    """The library's jsonl. Every question must have targets, one non-empty list per answer."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; build it with notebooks/03_real_data_prep.ipynb")
    questions, seen = [], set()
    for number, record in _json_lines(path):
        missing = {"qid", "question", "answers", "targets"} - set(record)
        if missing:
            raise DataFormatError(f"{path}:{number} lacks the key(s) {sorted(missing)}")
        question = MultiAnswerQuestion(
            str(record["qid"]),
            record["question"],
            record["answers"],
            [[str(d) for d in docs] for docs in record["targets"]],
            record.get("proofs", []),
        )
        if question.qid in seen:
            raise DataFormatError(f"{path}:{number} repeats the qid {question.qid!r}")
        seen.add(question.qid)
        _check_targets(question, f"{path}:{number}")
        questions.append(question)
    return questions


def _check_targets(question: MultiAnswerQuestion, where: str) -> None:
    if not question.targets:
        raise DataFormatError(f"{where}: question {question.qid!r} has no gold documents")
    if len(question.targets) != len(question.answers):
        raise DataFormatError(
            f"{where}: question {question.qid!r} has {len(question.answers)} answers but "
            f"{len(question.targets)} target lists"
        )
    empty = [i for i, docs in enumerate(question.targets) if not docs]
    if empty:
        raise DataFormatError(
            f"{where}: question {question.qid!r} has no gold document for answer(s) "
            f"{[question.answers[i][0] for i in empty]}"
        )


def write_questions(path: str | Path, questions: Iterable[MultiAnswerQuestion]) -> None:
    """Write atomically; every question must have a gold document for each answer."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for question in questions:
            _check_targets(question, str(path))
            out.write(json.dumps(question.to_json(), ensure_ascii=False) + "\n")


def read_ambigqa(path: str | Path) -> list[MultiAnswerQuestion]:
    """AmbigQA's JSON list. A question is kept when an annotation of type `multipleQAs` has at
    least two `qaPairs`; each pair's `answer` list is one answer cluster (its aliases). Where
    several annotators disagree, the first `multipleQAs` annotation is used."""
    path = require_file(path, "ambigqa")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{path} is not valid JSON ({exc.msg})") from exc
    questions = []
    for position, record in enumerate(records):
        if "annotations" not in record or "question" not in record:
            raise DataFormatError(f"{path}: entry {position} lacks 'question' or 'annotations'")
        multi = [a for a in record["annotations"] if a.get("type") == "multipleQAs"]
        if not multi:
            continue
        clusters = _unique_clusters([pair["answer"] for pair in multi[0]["qaPairs"]])
        if len(clusters) >= 2:
            questions.append(MultiAnswerQuestion(str(record.get("id", position)), record["question"], clusters))
    return questions


PUNCTUATION = frozenset(string.punctuation)


def normalize_text(text: str) -> str:
    """SQuAD-style normal form: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in PUNCTUATION)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


# words an annotator may put around the same answer ("in 1977", "about 50"); not content
FUNCTION_WORDS = frozenset("in on at of by from to for about around approximately nearly over since until".split())


def same_answer(first: str, second: str) -> bool:
    """Whether two NQ answer strings name one answer: equal normal forms, or one normal form is
    the other's tokens plus function words only ("1977" and "in 1977", not "2001" and "November 2001")."""
    a, b = normalize_text(first).split(), normalize_text(second).split()
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    for start in range(len(long) - len(short) + 1):
        if long[start : start + len(short)] == short:
            extra = long[:start] + long[start + len(short) :]
            return bool(short) and all(word in FUNCTION_WORDS for word in extra)
    return False


def cluster_aliases(answers: list[str]) -> list[list[str]]:
    """NQ-open lists every annotator's string; strings naming one answer (`same_answer`, taken
    transitively) form one cluster, in order of first appearance."""
    answers = [a.strip() for a in answers if a and a.strip()]
    parent = list(range(len(answers)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(answers)):
        for j in range(i):
            if same_answer(answers[i], answers[j]):
                parent[root(i)] = root(j)
    clusters: dict[int, list[str]] = {}
    for i, answer in enumerate(answers):
        cluster = clusters.setdefault(root(i), [])
        if answer not in cluster:
            cluster.append(answer)
    return list(clusters.values())


def read_nq_open_multi(path: str | Path) -> list[MultiAnswerQuestion]:
    """The multi-answer subset of NQ-open (jsonl `question`, `answer`): questions whose answer
    strings form two or more clusters (`cluster_aliases`), each cluster one answer with its aliases."""
    path = require_file(path, "nq_open")
    questions = []
    for number, record in _json_lines(path):
        if "question" not in record or "answer" not in record:
            raise DataFormatError(f"{path}:{number} lacks 'question' or 'answer'")
        clusters = cluster_aliases(record["answer"])
        if len(clusters) >= 2:
            questions.append(MultiAnswerQuestion(f"nq-{path.stem}-{number}", record["question"], clusters))
    return questions


def read_qampari(path: str | Path) -> list[MultiAnswerQuestion]:
    """QAMPARI jsonl: `question_text` and an `answer_list` of {answer_text, aliases, proof}.
    The first proof's text is kept per answer: the gold mapping searches with it."""
    path = require_file(path, "qampari")
    questions = []
    for number, record in _json_lines(path):
        if "question_text" not in record or "answer_list" not in record:
            raise DataFormatError(f"{path}:{number} lacks 'question_text' or 'answer_list'")
        answers, proofs = [], []
        for answer in record["answer_list"]:
            aliases = [answer["answer_text"], *[a for a in answer.get("aliases", []) if a != answer["answer_text"]]]
            answers.append(aliases)
            proof = answer.get("proof") or []
            proofs.append(proof[0].get("proof_text", "") if proof else "")
        questions.append(
            MultiAnswerQuestion(str(record.get("qid", number)), record["question_text"], answers, proofs=proofs)
        )
    return questions


def _unique_clusters(clusters: list[list[str]]) -> list[list[str]]:
    """Drop empty clusters and clusters whose first alias repeats an earlier one."""
    seen, unique = set(), []
    for cluster in clusters:
        aliases = [a.strip() for a in cluster if a and a.strip()]
        if aliases and aliases[0].lower() not in seen:
            seen.add(aliases[0].lower())
            unique.append(aliases)
    return unique
