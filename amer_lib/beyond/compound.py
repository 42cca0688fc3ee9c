"""Compound questions: the target spread as a dial on real text.

A compound question joins k component questions of the shipped WordNet benchmark into one whose
answers are the union of theirs ("What are examples of feat? And what does the word "bass" mean?").
With k = 1 it is a component alone; with k = 2 and 3 the answers fall into k unrelated groups, so
the spread of a question's targets grows with k while the text, the documents, the encoder and
the answer type stay real. Training compounds are made of training components only, test
compounds of test components only, and no component's word (the noun asked about) is on both
sides; the validation compounds are made of training components held out from the training
compounds (`hold_out`). The number of answers is capped near the paper's QAMPARI (5-8) by
choosing components that fit, never by dropping answers. Components can be limited to the findable ones (every answer
in the off-the-shelf encoder's top 100 for the component alone, `findable`): the experiment is
about the spread of the targets, and a component neither system can answer alone only adds zeros.
The qid names the components in order (`compound_k2:kinds:n00036762+senses:bass`), and each
answer's `answer_questions` entry is its component's text, which the component term reads.
"""

from __future__ import annotations

import functools

import numpy as np

from amer_lib.core.index import ShardedFlatIndex
from amer_lib.core.metrics import mrecall_at_k, pad_clusters
from amer_lib.data import wordnet
from amer_lib.data.questions import MultiAnswerQuestion

COMPONENT_KINDS = wordnet.KINDS  # "senses" (what a word means) and "kinds" (examples of a category)
KINDS_PREFIX = "What are examples of "
SEPARATOR = "+"


def dataset_name(k: int) -> str:
    return f"compound_k{k}"


def components_in(dataset: str) -> int | None:
    """k of a compound dataset's name (`compound_k2` -> 2); None for any other dataset."""
    prefix = dataset_name(0)[:-1]
    rest = dataset[len(prefix) :] if dataset.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


def component_word(question: MultiAnswerQuestion) -> str:
    """The noun a WordNet question asks about, lowercased: the word of a senses question, the
    category of a kinds question."""
    kind, _, rest = question.qid.partition(":")
    if kind == "senses":
        return rest.lower()
    if kind == "kinds" and question.question.startswith(KINDS_PREFIX):
        return question.question[len(KINDS_PREFIX) :].rstrip("?").lower()
    raise ValueError(f"{question.qid!r} is not a WordNet senses or kinds question")


def component_pools(kinds: list[str]) -> dict[str, list[MultiAnswerQuestion]]:
    """The components per split: WordNet's questions of `kinds`, the training ones without any
    whose word a test component asks about (so no word is shared across the split)."""
    unknown = sorted(set(kinds) - set(COMPONENT_KINDS))
    if unknown or not kinds:
        raise ValueError(f"compound components {kinds}: choose one or more of {', '.join(COMPONENT_KINDS)}")
    pools = {split: [q for kind in kinds for q in wordnet.load_questions(kind, split)] for split in wordnet.SPLITS}
    test_words = {component_word(q) for q in pools["test"]}
    pools["train"] = [q for q in pools["train"] if component_word(q) not in test_words]
    return pools


def hold_out(
    pool: list[MultiAnswerQuestion], fraction: float, rng: np.random.Generator
) -> tuple[list[MultiAnswerQuestion], list[MultiAnswerQuestion]]:
    """The training components split into those training compounds are made of and a `fraction`
    held out for validation compounds, no word on both sides: validation then measures what test
    measures (compounds of components never trained on), not components learned."""
    held = {int(i) for i in rng.choice(len(pool), max(1, round(fraction * len(pool))), replace=False)}
    validation = [q for i, q in enumerate(pool) if i in held]
    words = {component_word(q) for q in validation}
    return [q for i, q in enumerate(pool) if i not in held and component_word(q) not in words], validation


def candidates(
    pools: dict[str, list[MultiAnswerQuestion]], corpus_size: int, rng: np.random.Generator
) -> dict[str, list[MultiAnswerQuestion]]:
    """The components whose findability is tested, before compounds are drawn: each split's pool in
    random order, as many as keep their gold glosses within a quarter (test) or a half (train) of
    the corpus, which a random rest fills."""
    budgets = {"test": corpus_size // 4, "train": corpus_size // 2}
    chosen = {}
    for split, pool in pools.items():
        kept, docs = [], 0
        for i in rng.permutation(len(pool)):
            docs += len(pool[i].targets)
            if docs > budgets[split]:
                break
            kept.append(pool[i])
        chosen[split] = kept
    return chosen


def findable(
    questions: list[MultiAnswerQuestion], encoder, shards, depth: int, batch_size: int = 64
) -> list[MultiAnswerQuestion]:
    """The questions whose every answer has a gold document in `encoder`'s top `depth` for the
    question alone, searched exactly in `shards` (the prepared corpus)."""
    row_of = shards.row_of
    vectors = encoder.encode_queries([q.question for q in questions], batch_size)
    _, lists = ShardedFlatIndex(shards).search(vectors, depth)
    gold = pad_clusters([[[row_of[d] for d in docs if d in row_of] for docs in q.targets] for q in questions])
    found = mrecall_at_k(lists, gold, depth) == 1
    return [q for q, ok in zip(questions, found) if ok]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


# each joins the component questions (in their drawn order) into one question's text
TEMPLATES = (
    lambda parts: " ".join(parts),
    lambda parts: " ".join([parts[0], *(f"And {_lower_first(p)}" for p in parts[1:])]),
    lambda parts: ", ".join(p.rstrip("?") for p in parts[:-1]) + f", and {_lower_first(parts[-1])}",
    lambda parts: f"{len(parts)} questions: " + " ".join(parts),
)


def join(components: list[MultiAnswerQuestion], template: int) -> MultiAnswerQuestion:
    """One compound question of `components`, worded by `TEMPLATES[template]` (a single component
    keeps its own text): answers and targets the components', in their order, each answer's
    `answer_questions` entry its component's text."""
    k = len(components)
    text = components[0].question if k == 1 else TEMPLATES[template]([c.question for c in components])
    return MultiAnswerQuestion(
        f"{dataset_name(k)}:" + SEPARATOR.join(c.qid for c in components),
        text,
        [answer for c in components for answer in c.answers],
        [docs for c in components for docs in c.targets],
        answer_questions=[c.question for c in components for _ in c.answers],
    )


def sample_compounds(
    pool: list[MultiAnswerQuestion], k: int, n: int, max_answers: int, rng: np.random.Generator
) -> list[MultiAnswerQuestion]:
    """Up to `n` distinct compounds of `k` components with distinct words and at most
    `max_answers` answers in all: each slot draws uniformly among the components that leave room
    for the slots after it, the components come in that random order, and each compound gets a
    random template. Fewer than `n` when 50 draws in a row bring nothing new."""
    sizes = np.array([len(q.answers) for q in pool])
    smallest = int(sizes.min())
    if smallest * k > max_answers:
        raise ValueError(f"k = {k} components have at least {smallest * k} answers; max_answers is {max_answers}")
    fits = {room: np.flatnonzero(sizes <= room) for room in range(smallest, max_answers + 1)}
    words = [component_word(q) for q in pool]
    seen: set[tuple[str, ...]] = set()
    compounds: list[MultiAnswerQuestion] = []
    misses = 0
    while len(compounds) < n and misses < 50:
        chosen, budget = [], max_answers
        for slot in range(k):
            candidates = fits[budget - smallest * (k - slot - 1)]
            chosen.append(int(candidates[rng.integers(len(candidates))]))
            budget -= int(sizes[chosen[-1]])
        key = tuple(sorted(pool[i].qid for i in chosen))
        if key in seen or len({words[i] for i in chosen}) < k:
            misses += 1
            continue
        seen.add(key)
        misses = 0
        compounds.append(join([pool[i] for i in chosen], int(rng.integers(len(TEMPLATES)))))
    return compounds


def training_components(questions: list[MultiAnswerQuestion]) -> list[MultiAnswerQuestion]:
    """The component questions compounds `questions` are made of, each once, in order of appearance."""
    by_qid = component_questions()
    return [by_qid[qid] for qid in dict.fromkeys(c for q in questions for c in components_of(q))]


# which training components a run's compounds are made of (`RealConfig.train_components`)
TRAIN_COMPONENTS = ("findable", "corpus", "disjoint")


def gold_documents(questions: list[MultiAnswerQuestion]) -> set[str]:
    """Every gold document id of `questions`."""
    return {d for q in questions for docs in q.targets for d in docs}


def disjoint(
    questions: list[MultiAnswerQuestion], held: set[str]
) -> tuple[list[MultiAnswerQuestion], list[MultiAnswerQuestion]]:
    """The components the training compounds `questions` are made of, split into those with no gold
    document in `held` (the test and validation compounds' documents) and those left out: a
    WordNet gloss belongs to every word of its synset, so a training component can share an answer
    with a test component whose word differs ("car" and "automobile")."""
    pool = training_components(questions)
    shared = [bool(gold_documents([q]) & held) for q in pool]
    return [q for q, s in zip(pool, shared) if not s], [q for q, s in zip(pool, shared) if s]


def corpus_components(
    kinds: list[str], corpus_ids: set[str], validation: list[MultiAnswerQuestion], max_answers: int
) -> list[MultiAnswerQuestion]:
    """Every training component of `kinds` whose gold documents are all in the corpus, findable by
    the off-the-shelf encoder or not, with at most `max_answers` answers and no word of a
    `validation` compound's components (nor of a test component, `component_pools`): in the
    shipped recipe about five times the findable ones it trains on (beyond the paper: its third
    direction, training on a larger scale, without touching the corpus or the test compounds)."""
    by_qid = component_questions()
    held = {component_word(by_qid[qid]) for q in validation for qid in components_of(q)}
    return [
        q
        for q in component_pools(kinds)["train"]
        if len(q.answers) <= max_answers
        and component_word(q) not in held
        and all(d in corpus_ids for docs in q.targets for d in docs)
    ]


def drawn_from(
    pool: list[MultiAnswerQuestion], k: int, n: int, max_answers: int, rng: np.random.Generator
) -> list[MultiAnswerQuestion]:
    """`n` compounds of `k` components drawn from `pool` by `sample_compounds`, each component a
    question of its own at k = 1 (all of `pool`, in its order, whatever `n`)."""
    if k == 1:
        return [join([q], 0) for q in pool]
    return sample_compounds(pool, k, n, max_answers, rng)


def check_component_count(count: int, compounds: int, components: str) -> None:
    """Fail when `train_component_count` is set where no compound is drawn afresh (the prepared split)."""
    if count and not compounds and components == "findable":
        raise ValueError(
            f"train_component_count = {count} draws compounds afresh from fewer components: set train_compounds > 0 "
            'or train_components = "corpus" or "disjoint", or leave train_component_count at 0'
        )


def subset(pool: list[MultiAnswerQuestion], count: int, rng: np.random.Generator) -> list[MultiAnswerQuestion]:
    """`count` of the components `pool`, drawn by `rng`, in `pool`'s order: training on fewer
    components than the benchmark holds (`RealConfig.train_component_count`), to see what their
    number does to the compounds' vectors."""
    if count > len(pool):
        raise ValueError(
            f"train_component_count = {count}: the draw holds {len(pool)} components; choose at most {len(pool)}, "
            "or 0 for all of them"
        )
    return [pool[i] for i in np.sort(rng.choice(len(pool), size=count, replace=False))]


def components_of(question: MultiAnswerQuestion) -> list[str]:
    """The component qids of a compound question, in its answers' order."""
    return component_qids(question.qid)


def component_qids(qid: str) -> list[str]:
    """The component qids a compound's qid names (`compound_k2:kinds:n00036762+senses:bass`)."""
    return qid.partition(":")[2].split(SEPARATOR)


def component_questions() -> dict[str, MultiAnswerQuestion]:
    """Every WordNet question a compound can be made of, by qid (the shipped files, read once a
    process: a draw of training compounds asks for them, and nothing changes a question)."""
    return {q.qid: q for q in _shipped_components()}


@functools.cache
def _shipped_components() -> tuple[MultiAnswerQuestion, ...]:
    splits = [wordnet.load_questions(kind, split) for kind in COMPONENT_KINDS for split in wordnet.SPLITS]
    return tuple(q for questions in splits for q in questions)
