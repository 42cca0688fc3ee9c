"""Gold-document mapping of the paper's appendix, and the train/test splits of its Table 1.

Neither AmbigQA nor QAMPARI names gold passages. For each question, candidate passages are the
union of the top 500 of BM25 and of the dense retrievers (appendix A.3: BM25, Contriever and
inf-retriever-v1-1.5b, queried with the AmbigQA question; QAMPARI: BM25 queried with each
answer's evidence snippet). A candidate is a gold document of an
answer when its text contains the answer, or one of its aliases, as an exact substring. A
question is kept only if every answer found a gold document.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import repeat

import numpy as np

from amer_lib.data.corpus import Corpus, DocumentStore
from amer_lib.data.questions import MultiAnswerQuestion, normalize_text

DEPTH = 500
QAMPARI_TARGETS = (5, 8)


def match_form(text: str) -> str:
    """The form answers and passages are compared in: NFC, white space (U+00A0 included) as single spaces."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def dense_top_k(encoder, index, queries: list[str], k: int = DEPTH) -> np.ndarray:
    """Rows `[len(queries), k]` from a dense encoder's query vectors and an index of its documents."""
    _, rows = index.search(encoder.encode_queries(queries), min(k, len(index)))
    return rows


@dataclass
class MappingReport:
    questions: int
    kept: int
    answers_without_gold: int

    def __add__(self, other: MappingReport) -> MappingReport:
        return MappingReport(*(a + b for a, b in zip(vars(self).values(), vars(other).values())))

    def __str__(self) -> str:
        return (
            f"{self.kept} of {self.questions} questions kept; {self.answers_without_gold} answers "
            "found no gold document"
        )


def map_gold_documents(
    questions: list[MultiAnswerQuestion], corpus: Corpus | DocumentStore, candidates: list
) -> tuple[list[MultiAnswerQuestion], MappingReport]:
    """Targets for each question from its candidate rows, -1 ignored: `candidates[i]` is one array
    searched for every answer of question i (AmbigQA: any union of result lists) or a list of one
    array per answer (QAMPARI: the results of that answer's own proofs). An answer's targets are
    its candidates that contain it, those on a page its proofs were found in first; questions with
    an answer left without a gold document are dropped."""
    if len(candidates) != len(questions):
        raise ValueError(f"{len(candidates)} candidate lists for {len(questions)} questions")
    kept, missing = [], 0
    for question, rows in zip(questions, candidates):
        per_answer = rows if isinstance(rows, list) else [rows] * len(question.answers)
        texts: dict[int, str] = {}  # each candidate normalised once for all of the question's answers
        targets = [
            _answer_targets(corpus, aliases, answer_rows, proofs, texts)
            for aliases, answer_rows, proofs in zip(question.answers, per_answer, question.proofs or repeat([]))
        ]
        unmatched = sum(not t for t in targets)
        missing += unmatched
        if not unmatched:
            kept.append(replace(question, targets=targets))
    return kept, MappingReport(len(questions), len(kept), missing)


def _answer_targets(
    corpus: Corpus | DocumentStore, aliases: list[str], rows: np.ndarray, proofs: list[dict], texts: dict[int, str]
) -> list[str]:
    """The ids of the candidate `rows` whose text holds an alias, in candidate order, those whose
    title is a page of the answer's `proofs` first (an answer that every candidate names, such as
    the question's own entity, then keeps its own evidence as its first target)."""
    sought = [f for f in map(match_form, aliases) if f]
    pages = {match_form(p["page"]).casefold() for p in proofs if p.get("page")}
    found = []
    for row in dict.fromkeys(int(r) for r in np.asarray(rows).reshape(-1) if r >= 0):
        document = corpus.document(row)
        if row not in texts:
            texts[row] = match_form(document.full_text)
        if any(f in texts[row] for f in sought):
            found.append((match_form(document.title).casefold() not in pages, document.id))
    return [doc_id for _, doc_id in sorted(found, key=lambda pair: pair[0])]  # stable: candidate order kept


def question_candidates(*ranked: np.ndarray) -> list[np.ndarray]:
    """Per question, the union of several retrievers' result rows `[Q, k]`."""
    return [np.concatenate([r[i] for r in ranked]) for i in range(len(ranked[0]))]


def proof_candidates(
    questions: list[MultiAnswerQuestion], search: Callable[[list[str], int], np.ndarray], k: int = DEPTH
) -> list[list[np.ndarray]]:
    """QAMPARI: per question, per answer, the top-k of each of its proofs by `search` (BM25's
    `Bm25Index.top_k`), interleaved by rank (a composition answer's two proofs both count: the
    first names the base question's answer, the second the answer itself). Each distinct snippet
    is searched once."""
    snippets = list(dict.fromkeys(p["text"] for q in questions for proofs in q.proofs for p in proofs))
    found = search(snippets, k) if snippets else np.zeros((0, k), int)
    row_of = {snippet: found[i] for i, snippet in enumerate(snippets)}
    empty = np.zeros(0, int)
    return [
        [np.stack([row_of[p["text"]] for p in proofs], 1).reshape(-1) if proofs else empty for proofs in q.proofs]
        for q in questions
    ]


def filter_target_count(questions: list[MultiAnswerQuestion], low: int, high: int) -> list[MultiAnswerQuestion]:
    return [q for q in questions if low <= len(q.targets) <= high]


def filter_answer_count(questions: list[MultiAnswerQuestion], low: int, high: int) -> list[MultiAnswerQuestion]:
    """Questions with `low`-`high` answers. A mapped question keeps one target list per answer,
    so filtering QAMPARI's 5-8 before the mapping keeps the questions and gold documents that
    filtering its targets after would, without searching the proofs of the others."""
    return [q for q in questions if low <= len(q.answers) <= high]


def without_test_questions(
    train: list[MultiAnswerQuestion], test: list[MultiAnswerQuestion]
) -> tuple[list[MultiAnswerQuestion], int]:
    """`train` without the questions whose text (in `normalize_text` form) is a test question's,
    and how many were removed. AmbigQA's questions are NQ-open questions, so the multi-answer
    NQ-open questions added to training hold AmbigQA test questions unless they are removed."""
    test_texts = {normalize_text(q.question) for q in test}
    kept = [q for q in train if normalize_text(q.question) not in test_texts]
    return kept, len(train) - len(kept)


def ambigqa_splits(
    train: list[MultiAnswerQuestion], dev: list[MultiAnswerQuestion], nq_open: list[MultiAnswerQuestion], seed: int = 0
) -> tuple[dict[str, list[MultiAnswerQuestion]], int]:
    """Table 1: test = a seeded half of the mapped AmbigQA dev set; train = mapped AmbigQA train +
    the other half of dev + the mapped multi-answer NQ-open questions, less every question that
    is also a test question. Returns the splits and the number of training questions removed."""
    order = np.random.default_rng(seed).permutation(len(dev))
    half = len(dev) // 2
    test = [dev[i] for i in sorted(order[:half])]
    train, removed = without_test_questions(train + [dev[i] for i in sorted(order[half:])] + nq_open, test)
    return {"train": train, "test": test}, removed


def qampari_splits(
    train: list[MultiAnswerQuestion], dev: list[MultiAnswerQuestion]
) -> dict[str, list[MultiAnswerQuestion]]:
    """Table 1: the mapped train and dev sets, each kept to questions with 5-8 targets."""
    return {"train": filter_target_count(train, *QAMPARI_TARGETS), "test": filter_target_count(dev, *QAMPARI_TARGETS)}
