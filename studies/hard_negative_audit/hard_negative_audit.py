"""Issue 43: what the mined hard negatives of the compound benchmark are, to explain why they hurt.

The hard-negative lever (`hard_negative_share`, `amer_lib.data.hard_negatives`) lowered AMER and
single-query at k = 1 and 2 on the GPU screen (`studies/compound_levers/compound_levers.md`). This audit mines the
negatives the training runs mine (the off-the-shelf MiniLM's highest non-gold documents for each
training component of `compound_k1`, 16 per question) and sorts each into what WordNet says it is,
beside as many random corpus documents per question (the paper's negatives) sorted the same way:

- `same gloss`: its text is a gold document's text (another synset with the same gloss);
- `multiword lemma` (senses): a noun synset with a lemma that holds the asked word among others
  ("striped bass" for "bass"), a near meaning that WordNet counts apart;
- `not a noun` (senses): an adjective, verb or adverb synset: the benchmark's gold are noun senses
  only, so the word's own adjective or verb sense is a negative here;
- `kind of a kind` (kinds): a hyponym of one of the category's hyponyms, itself an example of it;
- `word in gloss`: the asked word (or category) in its text, inflected or not, none of the above;
- `other`.

Beside the classes, how close each negative lies to the question's nearest target in the frozen
document embeddings (cosine), against how close the targets lie to each other: the training loss
can push a negative below a target only along their difference, which is short when they are close.
And how many negatives are a test question's target, which training would push the queries from.

Lemmas and hyponyms come from the shipped WordNet questions (the answers of each target), so a
noun synset no question names has no known lemmas and lands in the last two classes: the shares of
`multiword lemma` and `kind of a kind` are floors.

    .venv/bin/python studies/hard_negative_audit/hard_negative_audit.py   # hard_negative_audit.json and _table.md, here

`--runs <folder>` adds the lever study's test scores with and without the mined negatives, split
by the kind of the test questions' components (`harm_by_kind`): if false negatives among a kinds
question's hyponyms were the harm, it would sit with those questions.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PREPARED = ROOT / "results" / "prepared" / "compound"
OUT = Path(__file__).resolve().with_suffix("")
CLASSES = ("same gloss", "multiword lemma", "not a noun", "kind of a kind", "word in gloss", "other")
DATASET = "compound_k1"


def lemmas_by_synset(questions) -> dict[str, set[str]]:
    """Every synset a WordNet question names as a target, with the lemmas its answer lists."""
    lemmas: dict[str, set[str]] = {}
    for q in questions:
        for answer, docs in zip(q.answers, q.targets):
            for doc in docs:
                lemmas.setdefault(doc, set()).update(a.lower() for a in answer)
    return lemmas


def hyponym_graph(questions) -> dict[str, set[str]]:
    """Category synset -> its direct hyponyms, from the kinds questions (`kinds:<synset>`)."""
    return {
        q.qid.partition(":")[2]: {d for docs in q.targets for d in docs}
        for q in questions
        if q.qid.startswith("kinds:")
    }


def below(category: str, graph: dict[str, set[str]]) -> set[str]:
    """The synsets under `category`'s direct hyponyms (their hyponyms, and theirs), as far as the graph knows."""
    seen: set[str] = set()
    frontier = [h for child in graph.get(category, ()) for h in graph.get(child, ())]
    while frontier:
        node = frontier.pop()
        if node not in seen:
            seen.add(node)
            frontier.extend(graph.get(node, ()))
    return seen


def classify(doc: str, text: str, word: str, kind: str, facts: dict) -> str:
    """One negative's class (see the module's docstring); `facts` holds the gold texts, the lemma
    map, the synsets below a kinds question's category."""
    in_lemma = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
    in_text = re.compile(rf"\b{re.escape(word)}", re.IGNORECASE)  # inflections too: "muskmelons"
    if text in facts["gold_texts"]:
        return "same gloss"
    if kind == "senses" and any(lemma != word and in_lemma.search(lemma) for lemma in facts["lemmas"].get(doc, ())):
        return "multiword lemma"
    if kind == "senses" and not doc.startswith("n"):
        return "not a noun"
    if kind == "kinds" and doc in facts["below"]:
        return "kind of a kind"
    if in_text.search(text):
        return "word in gloss"
    return "other"


def audit(count: int = 16, seed: int = 0) -> dict:
    """Mined and random negatives of every `compound_k1` training component, by class and kind."""
    from amer_lib.beyond import compound
    from amer_lib.data import hard_negatives
    from amer_lib.data.benchmark import Benchmark
    from amer_lib.data.corpus import iter_documents
    from amer_lib.data.encoders import DocumentEncoder

    benchmark = Benchmark(PREPARED)
    questions = benchmark.questions(DATASET, "train")
    shards = benchmark.embeddings("minilm")
    mined = hard_negatives.cached_mine(PREPARED / "hard_negatives", questions, DocumentEncoder("minilm"), shards, count)
    ids = shards.ids
    texts = {d.id: d.text for d in iter_documents(PREPARED / "corpus.tsv")}
    by_qid = compound.component_questions()  # every WordNet question, both kinds and splits
    lemmas, graph = lemmas_by_synset(by_qid.values()), hyponym_graph(by_qid.values())
    test_targets = {
        d for name in benchmark.datasets for q in benchmark.questions(name, "test") for docs in q.targets for d in docs
    }
    rng = np.random.default_rng(seed)
    counts = {source: {kind: Counter() for kind in compound.COMPONENT_KINDS} for source in ("mined", "random")}
    nearest = {"mined": [], "random": [], "targets": []}  # cosine to the closest (other) target
    of_test = Counter()  # negatives that are a test question's target
    nouns = Counter()  # mined noun negatives, and those with lemmas the questions name
    questions_of = Counter()
    for question, rows in zip(questions, mined):
        component = by_qid[compound.components_of(question)[0]]
        kind, word = component.qid.partition(":")[0], compound.component_word(component)
        gold = {d for docs in question.targets for d in docs}
        facts = {
            "gold_texts": {texts[d] for d in gold},
            "lemmas": lemmas,
            "below": below(component.qid.partition(":")[2], graph),
        }
        others = [i for i in rng.choice(len(ids), count + len(gold), replace=False) if ids[i] not in gold][:count]
        targets = shards.rows(np.array([shards.row_of[d] for d in sorted(gold)]))
        for source, picked in (("mined", rows), ("random", others)):
            counts[source][kind].update(classify(ids[i], texts[ids[i]], word, kind, facts) for i in picked)
            nearest[source].extend((shards.rows(np.asarray(picked)) @ targets.T).max(1).tolist())
            of_test[source] += sum(ids[i] in test_targets for i in picked)
            if source == "mined":
                noun_ids = [ids[i] for i in picked if ids[i].startswith("n")]
                nouns.update(nouns=len(noun_ids), known=sum(d in lemmas for d in noun_ids))
        among = targets @ targets.T - 2 * np.eye(len(targets))
        nearest["targets"].extend(among.max(1).tolist())
        questions_of[kind] += 1
    return {
        "dataset": DATASET,
        "per_question": count,
        "questions": dict(questions_of),
        "counts": {s: {k: {c: by[c] for c in CLASSES} for k, by in kinds.items()} for s, kinds in counts.items()},
        "nearest_target_cosine": {source: quantiles(values) for source, values in nearest.items()},
        "test_targets": {source: of_test[source] / len(nearest[source]) for source in ("mined", "random")},
        "mined_nouns_with_known_lemmas": nouns["known"] / nouns["nouns"],
    }


def quantiles(values: list[float]) -> dict:
    """Median, quartiles and the shares above 0.6 / 0.7 / 0.8 of cosines."""
    values = np.asarray(values)
    q25, q50, q75 = np.percentile(values, [25, 50, 75])
    shares = {f"above_{t}": float((values > t).mean()) for t in (0.6, 0.7, 0.8)}
    return {"n": len(values), "q25": float(q25), "median": float(q50), "q75": float(q75), **shares}


PAIRS = (("today", "hard_0.5"), ("lr_1e-4", "lr_1e-4+hard_0.5"))  # (without, with) the mined negatives


def harm_by_kind(folder: Path, seed: int = 0) -> list[dict]:
    """From a lever study's run files (`studies/compound_levers/compound_levers.py --folder`): MRecall@100 of each
    system without and with the mined negatives at k = 1 and 2, split by whether a test question has
    a kinds component (a WordNet hyponymy question, where a "kind of a kind" could be a false
    negative) or senses components only."""
    rows = []
    for without, with_hard in PAIRS:
        for k in (1, 2):
            for system in ("single", "amer"):
                runs = [
                    json.loads((folder / v / "results" / f"compound_k{k}_{system}_seed{seed}.json").read_text())
                    for v in (without, with_hard)
                ]
                assert runs[0]["qids"] == runs[1]["qids"]
                has_kinds = np.array(["kinds:" in qid for qid in runs[0]["qids"]])
                curves = [[round(100 * h["val_mrecall"], 2) for h in r["history"]] for r in runs]
                for part, mask in (("senses only", ~has_kinds), ("with kinds", has_kinds)):
                    scores = [100 * float(np.asarray(r["mrecall"], float)[mask].mean()) for r in runs]
                    rows.append(
                        {
                            "without": without,
                            "k": k,
                            "system": system,
                            "questions": part,
                            "n": int(mask.sum()),
                            "before": scores[0],
                            "after": scores[1],
                            "validation_curves": curves,
                        }
                    )
    return rows


def table(result: dict) -> str:
    """Markdown: the share of each class among the mined and the random negatives, per kind."""
    lines = [
        "| kind | questions | negatives | " + " | ".join(CLASSES) + " |",
        "|---|---|---|" + "---|" * len(CLASSES),
    ]
    for kind in sorted(result["questions"], key=("senses", "kinds").index):
        n = result["questions"][kind]
        for source in ("mined", "random"):
            by = result["counts"][source][kind]
            total = sum(by.values())
            shares = " | ".join(f"{100 * by[c] / total:.1f}%" for c in CLASSES)
            lines.append(f"| {kind} | {n} | {source} ({total}) | {shares} |")
    lines += [
        "",
        "| cosine to the nearest target | n | 25% | median | 75% | > 0.6 | > 0.7 | > 0.8 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    names = {"mined": "a mined negative", "random": "a random negative", "targets": "a target (the other targets)"}
    for source, q in result["nearest_target_cosine"].items():
        above = " | ".join(f"{100 * q[f'above_{t}']:.1f}%" for t in (0.6, 0.7, 0.8))
        lines.append(f"| {names[source]} | {q['n']} | {q['q25']:.3f} | {q['median']:.3f} | {q['q75']:.3f} | {above} |")
    shares = ", ".join(f"{100 * share:.1f}% of the {source}" for source, share in result["test_targets"].items())
    lines += ["", f"A test question's target (any k): {shares}."]
    if result.get("harm_by_kind"):
        lines += [
            "",
            "| baseline | k | system | test questions | n | without | with mined negatives |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in result["harm_by_kind"]:
            cells = [
                r["without"],
                r["k"],
                r["system"],
                r["questions"],
                r["n"],
                f"{r['before']:.2f}",
                f"{r['after']:.2f}",
            ]
            lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"the report's path stem (default {OUT})")
    parser.add_argument(
        "--runs", type=Path, help="a lever study's folder with today, hard_0.5, lr_1e-4 and lr_1e-4+hard_0.5 runs"
    )
    args = parser.parse_args()
    result = audit()
    if args.runs:
        result["harm_by_kind"] = harm_by_kind(args.runs)
    from amer_lib.io import write_json

    write_json(args.out.with_suffix(".json"), result)
    args.out.with_name(args.out.name + "_table.md").write_text(table(result))
    print(table(result))


if __name__ == "__main__":
    main()
