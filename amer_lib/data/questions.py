"""Multi-answer questions: the library's jsonl format and readers for the published datasets.

The library's format (one JSON object per line)::

    {"qid": ..., "question": ..., "answers": [[alias, ...], ...], "targets": [[doc_id, ...], ...],
     "answer_questions": [question, ...]}

`answers[i]` are the surface forms of answer cluster i and `targets[i]` its gold documents.
`answer_questions` (optional) holds, for each answer, a question of its own that has it as its
answer (`answer_questions[i]` for `answers[i]`; answers of one part share its text): a compound
question's component, AmbigQA's disambiguated question. The component term of the loss reads it
(`component_texts`). The readers below return questions without targets; `amer_lib.data.gold`
maps them.
"""

from __future__ import annotations

import gzip
import json
import re
import string
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote

from amer_lib.io import atomic_path, open_text

DOWNLOADS = {  # the README's "The paper at scale, step by step" gives each as a command
    "ambigqa": "AmbigQA light JSON (train_light.json, dev_light.json in "
    "https://nlp.cs.washington.edu/ambigqa/data/ambignq_light.zip)",
    "qampari": "QAMPARI jsonl (train_data.jsonl, dev_data.jsonl in https://aggreg-qa.s3.amazonaws.com/qampari.zip)",
    "nq_open": "NQ-open as AmbigQA splits it (nqopen-dev.json, nqopen-test.json in "
    "https://nlp.cs.washington.edu/ambigqa/data/nqopen.zip)",
    "corpus": "the corpus: QAMPARI's chunked Wikipedia (the chunks_v5/*.jsonl of "
    "https://aggreg-qa.s3.amazonaws.com/chunked_wikipedia.tar.gz, concatenated), a TSV "
    "(id<TAB>text<TAB>title) such as DPR's, or a BEIR corpus.jsonl",
}


class DataFormatError(ValueError):
    """A data file does not have the structure its format promises."""


@dataclass
class MultiAnswerQuestion:
    qid: str
    question: str
    answers: list[list[str]]
    targets: list[list[str]] = field(default_factory=list)
    # QAMPARI, per answer: its evidence snippets with their pages, [{"text", "page"}, ...] (gold mapping only)
    proofs: list[list[dict]] = field(default_factory=list)
    # per answer, a question of its own that has it as its answer (None: the data gives none)
    answer_questions: list[str] | None = None

    def to_json(self) -> dict:
        record = asdict(self)
        if not self.proofs:
            del record["proofs"]
        if self.answer_questions is None:
            del record["answer_questions"]
        return record


def require_file(path: str | Path, dataset: str) -> Path:
    """`path` if it exists, else an error naming what to download and where to put it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist. Download {DOWNLOADS[dataset]} and put it at {path}")
    return path


def decoded_lines(lines: Iterable[str], path: Path) -> Iterator[str]:
    """`lines` of a file opened as UTF-8; a byte that is not UTF-8 stops with the file and line."""
    try:
        yield from lines
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{_first_undecodable_line(path)} is not UTF-8 text ({exc.reason})") from exc


def _first_undecodable_line(path: Path) -> str:
    """`path:line` of the first line that is not UTF-8 (the decoder reads ahead, so it cannot say)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as raw:
        for number, line in enumerate(raw, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return f"{path}:{number}"
    return str(path)


def json_lines(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, value) of each non-blank line of a jsonl file; bad JSON stops with file and line."""
    with open_text(path) as lines:
        for number, line in enumerate(decoded_lines(lines, path), 1):
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
    for number, record in json_lines(path):
        missing = {"qid", "question", "answers", "targets"} - set(record)
        if missing:
            raise DataFormatError(f"{path}:{number} lacks the key(s) {sorted(missing)}")
        question = MultiAnswerQuestion(
            str(record["qid"]),
            record["question"],
            record["answers"],
            [[str(d) for d in docs] for docs in record["targets"]],
            record.get("proofs", []),
            record.get("answer_questions"),
        )
        if question.qid in seen:
            raise DataFormatError(f"{path}:{number} repeats the qid {question.qid!r}")
        seen.add(question.qid)
        _check_targets(question, f"{path}:{number}")
        _check_answer_questions(question, f"{path}:{number}")
        questions.append(question)
    return questions


QUESTION_FILES = (
    ".txt: one question per line, its qid its line number in the file (blank lines skipped but counted)",
    ".jsonl: objects with qid and question (the library's), or BEIR's queries.jsonl (_id and text)",
    ".tsv: qid<TAB>question, as TREC and MS MARCO topic files",
)


def _question_record(record, where: str) -> tuple[str, str]:
    if isinstance(record, dict) and {"qid", "question"} <= set(record):
        return str(record["qid"]), record["question"]
    if isinstance(record, dict) and {"_id", "text"} <= set(record):  # BEIR's queries.jsonl
        return str(record["_id"]), record["text"]
    raise DataFormatError(f"{where} is neither an object with a qid and a question nor BEIR's (_id and text)")


def read_question_texts(path: str | Path) -> tuple[list[str], list[str]]:
    """Questions without gold, `(qids, questions)`, from any of `QUESTION_FILES`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if path.suffix == ".txt":
        with open_text(path) as lines:
            numbered = [(str(n), line.strip()) for n, line in enumerate(decoded_lines(lines, path), 1) if line.strip()]
    elif path.suffix == ".jsonl":
        numbered = [_question_record(record, f"{path}:{number}") for number, record in json_lines(path)]
    elif path.suffix == ".tsv":
        numbered = []
        with open_text(path) as lines:
            for number, line in enumerate(decoded_lines(lines, path), 1):
                if not line.strip():
                    continue
                fields = line.rstrip("\r\n").split("\t")
                if len(fields) != 2 or not fields[0].strip():
                    found = f"{len(fields)} tab-separated fields" if len(fields) != 2 else "no qid"
                    raise DataFormatError(f"{path}:{number} has {found}; expected qid<TAB>question")
                numbered.append((fields[0].strip(), fields[1].strip()))
    else:
        raise ValueError(f"{path}: questions are read from these files: {'; '.join(QUESTION_FILES)}")
    qids = [qid for qid, _ in numbered]
    repeated = sorted(qid for qid, times in Counter(qids).items() if times > 1)
    if repeated:
        raise DataFormatError(f"{path} repeats the qid(s) {repeated[:5]}")
    if not numbered:
        raise DataFormatError(f"{path} holds no question")
    return qids, [question for _, question in numbered]


def _check_targets(question: MultiAnswerQuestion, where: str) -> None:
    if not question.answers:
        raise DataFormatError(f"{where}: question {question.qid!r} has no answers (each needs one or more)")
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


def _check_answer_questions(question: MultiAnswerQuestion, where: str) -> None:
    """`answer_questions`, when given: a list of non-empty strings, one per answer."""
    given = question.answer_questions
    if given is None:
        return
    if not isinstance(given, list) or not all(isinstance(text, str) and text.strip() for text in given):
        raise DataFormatError(
            f"{where}: question {question.qid!r} has answer_questions {given!r:.200}; expected a list of "
            "non-empty strings, one question per answer (or no answer_questions key)"
        )
    if len(given) != len(question.answers):
        raise DataFormatError(
            f"{where}: question {question.qid!r} has {len(question.answers)} answers but {len(given)} "
            "answer_questions; give one question per answer, in the answers' order"
        )


def question_parts(question: MultiAnswerQuestion) -> list[str]:
    """The questions a question is made of: its distinct `answer_questions` in order of first
    appearance (a compound's components in its answers' order, AmbigQA's disambiguated questions),
    or the question itself when it has none."""
    return list(dict.fromkeys(question.answer_questions)) if question.answer_questions else [question.question]


def component_texts(questions: list[MultiAnswerQuestion], where: str = "") -> list[list[str]]:
    """The questions each question is made of (`question_parts`), for the component term of the
    loss. When no
    question has them, the term has nothing to learn from: an error naming the fix (`where`: the
    questions' file, for the message)."""
    if not any(q.answer_questions for q in questions):
        raise ValueError(
            f"component_weight > 0 needs component questions, and none of the {len(questions)} questions{where} "
            "has answer_questions (one question per answer; docs/usage.md). Add answer_questions to the "
            "questions.jsonl and prepare the benchmark again with notebooks/03_real_data_prep.ipynb (a compound "
            "or AmbigQA benchmark prepared before they were kept must be prepared again), or set component_weight 0"
        )
    return [question_parts(q) for q in questions]


def write_questions(path: str | Path, questions: Iterable[MultiAnswerQuestion]) -> None:
    """Write atomically; every question must have a gold document for each answer (and, when it
    has answer_questions, one of them per answer)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for question in questions:
            _check_targets(question, str(path))
            _check_answer_questions(question, str(path))
            out.write(json.dumps(question.to_json(), ensure_ascii=False) + "\n")


def read_ambigqa(path: str | Path) -> list[MultiAnswerQuestion]:
    """AmbigQA's JSON list (`train_light.json`, `dev_light.json`). A question is kept when AmbigQA's
    own evaluation counts it as multi-answer (every annotation is of type `multipleQAs`: one
    `singleAnswer` annotation makes it single-answer) and it has two answers or more. Its answers
    are every annotator's, each `qaPairs` entry's `answer` list one cluster of aliases, clusters
    that name one answer (`same_answer`) merged; each answer's `answer_questions` entry is its
    first cluster's `qaPairs` question (the disambiguated question it answers). A question with a
    `singleAnswer` annotation is not read, so no question here is without answer_questions."""
    path = require_file(path, "ambigqa")
    records = _json_list(path)
    questions = []
    for position, record in enumerate(records):
        if not isinstance(record, dict) or not {"question", "annotations"} <= set(record):
            raise DataFormatError(f"{path}: entry {position} lacks 'question' or 'annotations'")
        annotations = record["annotations"]
        if not annotations or any(a.get("type") != "multipleQAs" for a in annotations):
            continue
        pairs = [pair for a in annotations for pair in a.get("qaPairs", [])]
        if any("answer" not in pair for pair in pairs):
            raise DataFormatError(f"{path}: entry {position} has a qaPair without 'answer'")
        if any(not isinstance(pair.get("question"), str) or not pair["question"].strip() for pair in pairs):
            raise DataFormatError(f"{path}: entry {position} has a qaPair without its disambiguated 'question'")
        aliases = [[a.strip() for a in pair["answer"] if a and a.strip()] for pair in pairs]
        pairs, aliases = [p for p, c in zip(pairs, aliases) if c], [c for c in aliases if c]
        groups = merged_groups(aliases)
        if len(groups) >= 2:
            clusters = [_joined(aliases[i] for i in group) for group in groups]
            asked = [pairs[group[0]]["question"].strip() for group in groups]
            qid = str(record.get("id", position))
            questions.append(MultiAnswerQuestion(qid, record["question"], clusters, answer_questions=asked))
    return questions


def _json_list(path: Path) -> list:
    """A whole JSON file that must hold a list; bad JSON is reported with its line."""
    with open_text(path) as lines:
        text = "".join(decoded_lines(lines, path))
    try:
        records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{path}:{exc.lineno} is not valid JSON ({exc.msg})") from exc
    if not isinstance(records, list):
        raise DataFormatError(f"{path} holds a JSON {type(records).__name__}, not the list of questions expected")
    return records


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
    """NQ-open lists every annotator's string; strings naming one answer form one cluster."""
    return merge_clusters([[a.strip()] for a in answers if a and a.strip()])


def read_nq_open_multi(path: str | Path) -> list[MultiAnswerQuestion]:
    """The multi-answer subset of NQ-open: questions whose answer strings form two or more clusters
    (`cluster_aliases`), each cluster one answer with its aliases. Reads AmbigQA's NQ-open split
    (`nqopen-dev.json`, `nqopen-test.json`: a JSON list of `id`, `question`, `answer`) or Google's
    jsonl (`NQ-open.dev.jsonl`: one `question`, `answer` object per line)."""
    path = require_file(path, "nq_open")
    if path.name.removesuffix(".gz").endswith(".json"):  # (where, record, id) of each question
        records = [
            (f"{path}: entry {i}", r, r.get("id", i) if isinstance(r, dict) else i)
            for i, r in enumerate(_json_list(path))
        ]
    else:
        records = [(f"{path}:{number}", r, f"{path.stem}-{number}") for number, r in json_lines(path)]
    questions = []
    for where, record, source_id in records:
        if not isinstance(record, dict) or "question" not in record or "answer" not in record:
            raise DataFormatError(f"{where} lacks 'question' or 'answer'")
        clusters = cluster_aliases(record["answer"])
        if len(clusters) >= 2:
            questions.append(MultiAnswerQuestion(f"nq-{source_id}", record["question"], clusters))
    return questions


def read_qampari(path: str | Path) -> list[MultiAnswerQuestion]:
    """QAMPARI jsonl: `question_text`, `qid` and an `answer_list` of {answer_text, aliases, proof}.
    Every proof of an answer is kept (a composition answer has two: the second names the answer;
    an intersection answer has one per condition) with the page it was found in (`found_in_url`):
    the gold mapping searches with each proof and prefers passages of those pages."""
    path = require_file(path, "qampari")
    questions = []
    for number, record in json_lines(path):
        if "question_text" not in record or "answer_list" not in record:
            raise DataFormatError(f"{path}:{number} lacks 'question_text' or 'answer_list'")
        answers, proofs = [], []
        for position, answer in enumerate(record["answer_list"]):
            if not answer.get("answer_text"):
                raise DataFormatError(f"{path}:{number}: answer {position} has no 'answer_text'")
            aliases = [answer["answer_text"], *[a for a in answer.get("aliases", []) if a != answer["answer_text"]]]
            answers.append(aliases)
            proofs.append([_proof(proof, f"{path}:{number}: answer {position}") for proof in answer.get("proof") or []])
        questions.append(
            MultiAnswerQuestion(str(record.get("qid", number)), record["question_text"], answers, proofs=proofs)
        )
    return questions


def _proof(proof: dict, where: str) -> dict:
    """{"text": the evidence snippet, "page": the title of the Wikipedia page it was found in}."""
    if not isinstance(proof, dict) or not str(proof.get("proof_text") or "").strip():
        raise DataFormatError(f"{where} has a proof without 'proof_text'")
    url = proof.get("found_in_url") or ""
    page = unquote(url.rsplit("/wiki/", 1)[1]).replace("_", " ") if "/wiki/" in url else ""
    return {"text": proof["proof_text"], "page": page}


def merge_clusters(clusters: list[list[str]]) -> list[list[str]]:
    """Clusters of aliases joined when an alias of one and an alias of the other name one answer
    (`same_answer`, taken transitively: annotators write one answer differently), each joined
    cluster's aliases without repeats, in order of first appearance."""
    return [_joined(clusters[i] for i in group) for group in merged_groups(clusters)]


def merged_groups(clusters: list[list[str]]) -> list[list[int]]:
    """Which of `clusters` `merge_clusters` joins: the indices of each joined cluster's members,
    the joined clusters in order of their first member."""
    parent = list(range(len(clusters)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(clusters)):
        for j in range(i):
            if any(same_answer(a, b) for a in clusters[i] for b in clusters[j]):
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(clusters)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _joined(clusters: Iterable[list[str]]) -> list[str]:
    """The aliases of several clusters without repeats, in order of first appearance."""
    return list(dict.fromkeys(alias for cluster in clusters for alias in cluster))
