"""Compound questions: k WordNet questions joined into one, the training and test sides built from
disjoint components, the answers capped by choosing components, never by dropping answers."""

import hashlib

import numpy as np
import pytest
import torch

from amer_lib.beyond import compound, compound_draws
from amer_lib.beyond.compound import component_word, components_of, join, sample_compounds
from amer_lib.beyond.compound_preparation import prepare_compound
from amer_lib.data import wordnet
from amer_lib.data.questions import MultiAnswerQuestion, component_texts
from amer_lib.progress import AmerWarning


def question(qid, text, n):
    return MultiAnswerQuestion(qid, text, [[f"{qid}-a{i}"] for i in range(n)], [[f"{qid}-d{i}"] for i in range(n)])


BASS = question("senses:bass", 'What does the word "bass" mean?', 3)
TREE = question("kinds:n13104059", "What are examples of tree?", 5)
FEAT = question("senses:feat", 'What does the word "feat" mean?', 2)


def test_a_compound_holds_its_components_answers_in_order_under_one_of_the_templates():
    assert component_word(BASS) == "bass" and component_word(TREE) == "tree"
    with pytest.raises(ValueError, match="not a WordNet senses or kinds question"):
        component_word(question("mine:1", "?", 2))
    joined = join([TREE, BASS], template=1)
    assert joined.qid == "compound_k2:kinds:n13104059+senses:bass" and components_of(joined) == [TREE.qid, BASS.qid]
    assert joined.question == 'What are examples of tree? And what does the word "bass" mean?'
    assert joined.answers == TREE.answers + BASS.answers and joined.targets == TREE.targets + BASS.targets
    three = join([TREE, BASS, FEAT], template=2)
    assert (
        three.question
        == 'What are examples of tree, What does the word "bass" mean, and what does the word "feat" mean?'
    )
    assert join([BASS], template=3).question == BASS.question  # k = 1: the component as it is


def test_compounds_fit_the_answer_cap_with_distinct_components_and_words():
    pool = wordnet.load_questions("senses", "test") + wordnet.load_questions("kinds", "test")
    drawn = sample_compounds(pool, 3, 200, 8, np.random.default_rng(1))
    assert len(drawn) == 200 and len({q.qid for q in drawn}) == 200
    by_qid = {q.qid: q for q in pool}
    for q in drawn:
        parts = [by_qid[qid] for qid in components_of(q)]
        assert len(q.answers) <= 8 and sum(len(p.answers) for p in parts) == len(q.answers)  # no answer dropped
        assert len({component_word(p) for p in parts}) == 3
    again = sample_compounds(pool, 3, 200, 8, np.random.default_rng(1))
    assert [q.question for q in again] == [q.question for q in drawn]  # the same seed, the same compounds
    with pytest.raises(ValueError, match="k = 5 components have at least 10 answers; max_answers is 8"):
        sample_compounds(pool, 5, 10, 8, np.random.default_rng(0))


def test_the_compound_benchmark_keeps_training_and_test_components_apart(tmp_path):
    benchmark = prepare_compound(tmp_path, [1, 2, 3], 120, 40, 4000, 8, ["senses", "kinds"], seed=0)
    assert benchmark.datasets == ["compound_k1", "compound_k2", "compound_k3"]
    test_components = {q.qid for kind in ("senses", "kinds") for q in wordnet.load_questions(kind, "test")}
    corpus = {d.id for d in benchmark.documents()}
    by_qid = compound.component_questions()
    in_corpus = corpus_components_by_hand(benchmark, by_qid, corpus)
    for k in (1, 2, 3):
        dataset = compound.dataset_name(k)
        train, test = benchmark.questions(dataset, "train"), benchmark.questions(dataset, "test")
        assert (len(train), len(test)) == (120, 40)
        assert all(len(components_of(q)) == k and len(q.answers) <= 8 for q in train + test)
        assert all(set(components_of(q)) <= test_components for q in test)
        assert not any(set(components_of(q)) & test_components for q in train)
        sizes = sorted(len(q.answers) for q in train)
        assert benchmark.n_queries(dataset) == int(np.ceil(np.median(sizes)))
        assert {d for q in train + test for docs in q.targets for d in docs} <= corpus
        validation = benchmark.questions(dataset, "validation")  # compounds of held-out training components
        assert len(validation) == 12 and not any(set(components_of(q)) & test_components for q in validation)
        held = {qid for q in validation for qid in components_of(q)}
        assert not any(set(components_of(q)) & held for q in train)
        words = {component_word(by_qid[qid]) for qid in held}
        assert not any({component_word(by_qid[qid]) for qid in components_of(q)} & words for q in train)
        assert benchmark.training_split(dataset, seed=3) == (train, validation)  # the same for every seed
        check_redrawn(benchmark, dataset, k, train, validation)
        check_corpus_components(benchmark, dataset, k, train, validation, in_corpus)
        check_disjoint(benchmark, dataset, k, train, validation, by_qid)
        check_component_count(benchmark, dataset, k, train, validation)
        for questions in (
            train,
            validation,
            test,
            *(benchmark.training_split(dataset, 3, compounds=50, components=c)[0] for c in TRAIN),
        ):
            check_answer_questions(questions, by_qid)
    assert len(corpus) == 4000  # the gold glosses and random others


TRAIN = compound.TRAIN_COMPONENTS


def check_answer_questions(questions, by_qid):
    """The prepared (and the redrawn) compounds carry, per answer, the text of the WordNet question
    it comes from, read back from the written file; the component term's texts are what the lookup
    of the components by qid gave before the field (the training numbers cannot have moved)."""
    for q in questions:
        parts = [by_qid[qid] for qid in components_of(q)]
        assert q.answer_questions == [p.question for p in parts for _ in p.answers]
    assert component_texts(questions) == [[by_qid[qid].question for qid in components_of(q)] for q in questions]


def corpus_components_by_hand(benchmark, by_qid, corpus):
    """Every WordNet question with no test component's word, no word of any dataset's validation
    compounds, every gold document in the corpus and at most 8 answers (brute force)."""
    test_words = {component_word(q) for kind in ("senses", "kinds") for q in wordnet.load_questions(kind, "test")}
    held = {
        component_word(by_qid[qid])
        for d in benchmark.datasets
        for q in benchmark.questions(d, "validation")
        for qid in components_of(q)
    }
    return {
        qid
        for qid, q in by_qid.items()
        if component_word(q) not in test_words | held
        and len(q.answers) <= 8
        and {d for docs in q.targets for d in docs} <= corpus
    }


def check_corpus_components(benchmark, dataset, k, train, validation, expected):
    """`train_components = "corpus"`: compounds of every training component the corpus holds
    (`expected`, found by hand), as many as the prepared split unless asked, drawn by the seed."""
    drawn, kept = benchmark.training_split(dataset, seed=3, components="corpus")
    assert kept == validation
    used = {qid for q in drawn for qid in components_of(q)}
    assert used <= expected and {qid for q in train for qid in components_of(q)} <= expected
    assert all(len(components_of(q)) == k and len(q.answers) <= 8 for q in drawn)
    if k == 1:  # every such component, each a question of its own
        assert sorted(q.qid for q in drawn) == sorted(f"compound_k1:{qid}" for qid in expected)
        assert len(expected) > len(train)
    else:  # as many compounds as the prepared split, drawn by the seed
        assert len(drawn) == len(train) and len({q.qid for q in drawn}) == len(drawn)
        assert benchmark.training_split(dataset, seed=4, components="corpus")[0] != drawn
    assert benchmark.training_split(dataset, seed=3, components="corpus")[0] == drawn
    more = benchmark.training_split(dataset, seed=3, compounds=300, components="corpus")[0]
    assert len(more) == (len(expected) if k == 1 else 300)
    with pytest.raises(ValueError, match="train_components 'all': choose one of findable, corpus, disjoint"):
        benchmark.training_split(dataset, seed=3, components="all")


def check_disjoint(benchmark, dataset, k, train, validation, by_qid):
    """`train_components = "disjoint"`: compounds of the training compounds' own components less every
    one with a gold document of any dataset's test or validation compound (found by brute force),
    as many as the prepared split unless asked, drawn by the seed."""
    held = {
        doc
        for name in benchmark.datasets
        for split in ("test", "validation")
        for q in benchmark.questions(name, split)
        for docs in q.targets
        for doc in docs
    }
    own = {qid for q in train for qid in components_of(q)}
    expected = {qid for qid in own if not {d for docs in by_qid[qid].targets for d in docs} & held}
    assert 0 < len(own) - len(expected) < 0.1 * len(own)  # a few share a gloss (7, 8 and 14 of 120, 237 and 353)
    drawn, kept = benchmark.training_split(dataset, seed=3, components="disjoint")
    assert kept == validation
    used = {qid for q in drawn for qid in components_of(q)}
    assert used <= expected and all(len(components_of(q)) == k and len(q.answers) <= 8 for q in drawn)
    assert not {d for q in drawn for docs in q.targets for d in docs} & held
    if k == 1:
        assert sorted(q.qid for q in drawn) == sorted(f"compound_k1:{qid}" for qid in expected)
    else:
        assert len(drawn) == len(train) and len({q.qid for q in drawn}) == len(drawn)
        assert benchmark.training_split(dataset, seed=4, components="disjoint")[0] != drawn
    assert benchmark.training_split(dataset, seed=3, components="disjoint")[0] == drawn
    more = benchmark.training_split(dataset, seed=3, compounds=300, components="disjoint")[0]
    assert len(more) == (len(expected) if k == 1 else 300)


def check_component_count(benchmark, dataset, k, train, validation):
    """`train_component_count`: each fresh draw (redrawn, corpus, disjoint) made of that many of its
    components, drawn by the seed; the validation split untouched; refused where nothing is drawn
    afresh, or beyond the draw's components."""
    pools = {
        "findable": compound.training_components(train),
        "corpus": compound_draws.corpus_components(benchmark),
        "disjoint": compound.disjoint(train, compound_draws.held_documents(benchmark))[0],
    }
    for compounds, components in ((300, "findable"), (300, "corpus"), (0, "disjoint")):
        pool = {q.qid for q in pools[components]}
        fewer, kept = benchmark.training_split(
            dataset, 3, compounds=compounds, components=components, component_count=40
        )
        used = {qid for q in fewer for qid in components_of(q)}
        assert kept == validation and used <= pool and len(used) <= 40 < len(pool)
        n = compounds or len(train)  # as many compounds as asked, nearly every component in them
        assert len(used) == 40 if k == 1 else (len(fewer) == n == len({q.qid for q in fewer}) and len(used) >= 36)
        assert all(len(components_of(q)) == k and len(q.answers) <= 8 for q in fewer)
    assert (
        benchmark.training_split(dataset, 3, components="disjoint", component_count=40)[0] == fewer
    )  # the seed fixes both draws
    other = benchmark.training_split(dataset, 4, components="disjoint", component_count=40)[0]
    assert {qid for q in other for qid in components_of(q)} != used
    if k > 1:  # too few components for the compounds asked: said, not silent
        with pytest.warns(AmerWarning, match=f"{dataset}: only [0-9]+ of the 300 training compounds .* from 5 comp"):
            assert len(benchmark.training_split(dataset, 3, compounds=300, component_count=5)[0]) < 300
    with pytest.raises(ValueError, match="train_component_count = 20 draws compounds afresh from fewer components"):
        benchmark.training_split(dataset, 3, component_count=20)
    with pytest.raises(ValueError, match="train_component_count = 100000: the draw holds [0-9]+ components"):
        benchmark.training_split(dataset, 3, compounds=300, component_count=100_000)


def test_disjoint_components_leave_out_every_one_sharing_a_gold_document_with_the_held_side(monkeypatch):
    """A gloss shared by two words' senses ("car", "automobile") makes a training component share an
    answer with a test component whose word differs: "disjoint" leaves it out, and only it."""
    car = MultiAnswerQuestion("senses:car", 'What does the word "car" mean?', [["a"], ["b"]], [["g1"], ["g2"]])
    auto = MultiAnswerQuestion("senses:automobile", 'What does "automobile" mean?', [["a"]], [["g1"]])
    bus = MultiAnswerQuestion("senses:bus", 'What does the word "bus" mean?', [["c"]], [["g3"]])
    monkeypatch.setattr(compound, "component_questions", lambda: {q.qid: q for q in (car, auto, bus)})
    training = [join([car, bus], 0), join([bus], 0)]
    kept, left = compound.disjoint(training, held={"g1"})
    assert kept == [bus] and left == [car]
    assert compound.disjoint(training, held=set()) == ([car, bus], [])
    assert compound.gold_documents([car, bus]) == {"g1", "g2", "g3"}


def check_redrawn(benchmark, dataset, k, train, validation):
    """`train_compounds`: fresh compounds of the training compounds' own components, none twice."""
    redrawn, held = benchmark.training_split(dataset, seed=3, compounds=500)
    assert held == validation  # validation is never redrawn
    if k == 1:
        assert redrawn == train  # a component alone has no other combination
        return
    components = {qid for q in train for qid in components_of(q)}
    assert len(redrawn) == 500 and len({q.qid for q in redrawn}) == 500 > len(train)
    assert all(len(components_of(q)) == k and set(components_of(q)) <= components for q in redrawn)
    assert all(len(q.answers) <= 8 for q in redrawn)
    assert len({qid for q in redrawn for qid in components_of(q)}) > 0.9 * len(components)  # every part used
    assert benchmark.training_split(dataset, seed=3, compounds=500)[0] == redrawn  # the seed fixes the draw
    assert benchmark.training_split(dataset, seed=4, compounds=500)[0] != redrawn


def test_redrawn_compounds_need_a_compound_benchmark(tmp_path):
    from amer_lib.data.benchmark import Benchmark

    (tmp_path / "manifest.json").write_text('{"datasets": ["wordnet_kinds"], "n_queries": {"wordnet_kinds": 5}}')
    with pytest.raises(ValueError, match="train_compounds > 0 redraws a compound benchmark's training compounds"):
        Benchmark(tmp_path).training_split("wordnet_kinds", seed=0, compounds=100)
    with pytest.raises(ValueError, match='train_components = "corpus" redraws a compound benchmark'):
        Benchmark(tmp_path).training_split("wordnet_kinds", seed=0, components="corpus")
    with pytest.raises(ValueError, match='train_components = "disjoint" redraws a compound benchmark'):
        Benchmark(tmp_path).training_split("wordnet_kinds", seed=0, components="disjoint")


@pytest.mark.slow  # a small compound benchmark encoded, a model trained: about 40 s
def test_the_decomposition_oracle_on_one_component_is_the_single_query_run(tmp_path):
    """With k = 1 the oracle asks the compound_k1 model each test question itself: its scores and
    TREC ranking are single-query's. With k = 2 it searches each component's own vector and merges
    the lists round-robin (checked against exact search and a merge by hand)."""
    from conftest import notebook_config

    from amer_lib.beyond.decomposition import ORACLE, decomposition_oracle
    from amer_lib.data.preparation import prepare
    from amer_lib.experiments.real_data import run_all
    from amer_lib.runs.run_context import RunContext

    recipe = notebook_config(
        "03_real_data_prep", source="compound", compound_ks=[1, 2], max_train=24, max_test=8,
        corpus_size=600, device="cpu", prepared_dir=str(tmp_path / "p"),
    )  # fmt: skip
    prepare(recipe, progress=False)
    params = notebook_config(
        "04_real_data", datasets=["compound_k1"], systems=["single"], seeds=[0], steps=2, batch_size=4,
        eval_every=1, workers=1, device="cpu", prepared_dir=str(tmp_path / "p"),
        results_dir=str(tmp_path / "r"), runs_dir=str(tmp_path / "u"),
    )  # fmt: skip
    [single] = run_all(params, progress=False)
    oracle = decomposition_oracle(params, "compound_k1", 0)
    assert oracle["mrecall"] == single["mrecall"] and oracle["recall"] == single["recall"]
    trec = [line.split()[:3] for line in (tmp_path / "r" / f"compound_k1_{ORACLE}_seed0.trec").read_text().splitlines()]
    assert trec == [
        line.split()[:3] for line in (tmp_path / "r" / "compound_k1_single_seed0.trec").read_text().splitlines()
    ]

    pair = decomposition_oracle(params, "compound_k2", 0)
    context = RunContext.of(params)
    model = context.trained_encoder(params, "compound_k1", "single", 0, torch.device("cpu"))
    test = context.benchmark.questions("compound_k2", "test")
    by_qid = compound.component_questions()
    corpus = context.shards.rows(np.arange(len(context.shards)))
    assert sum(pair["recall"]) > 0  # the comparison below is not of zeros
    for question, mrecall, recall in zip(test, pair["mrecall"], pair["recall"]):
        parts = [by_qid[qid] for qid in components_of(question)]
        vectors = context.query_vectors(model, parts, 1, torch.device("cpu"))[:, 0]
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        lists = np.argsort(-(vectors @ corpus.T), axis=1, kind="stable")[:, :100]
        merged = list(dict.fromkeys(lists.T.ravel().tolist()))[:100]
        gold = [set(context.rows(docs).tolist()) for docs in question.targets]
        found = [bool(g & set(merged)) for g in gold]
        assert mrecall == float(all(found)) and recall == pytest.approx(np.mean(found))


def test_each_vector_serves_the_component_whose_answers_its_list_finds_most_of():
    from amer_lib.beyond.decomposition import served_components

    lists = np.array([[1, 2, 3], [7, 8, 9], [4, 10, 11], [20, 21, 22]])
    components = [[{1}, {2, 30}, {40}], [{7}, {8}, {4}]]  # component 0: rows 1, 2; component 1: 7, 8 and 4
    assert served_components(lists, components) == [(0, 2), (1, 2), (1, 1), (-1, 0)]


class KeyedEncoder:
    """A document encoder by lookup: each document text a fixed random unit vector; a question
    the sum of its gold documents' vectors when `findable(question)` holds, else a random one."""

    class spec:
        name = "keyed"

    dim = 32

    def __init__(self, gold_texts: dict[str, list[str]], findable_question):
        self.gold_texts, self.findable_question = gold_texts, findable_question

    def _vector(self, text: str) -> np.ndarray:
        v = np.random.default_rng(int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)).standard_normal(self.dim)
        return v / np.linalg.norm(v)

    def encode_documents(self, texts, batch_size=64):
        return np.stack([self._vector(t) for t in texts]).astype(np.float32)

    def encode_queries(self, texts, batch_size=64):
        rows = []
        for text in texts:
            gold = self.gold_texts[text] if self.findable_question(text) else [text]
            rows.append(sum(self._vector(t) for t in gold))
        return np.stack(rows).astype(np.float32)


def test_findable_components_have_every_answer_in_the_encoders_top_depth_alone(tmp_path):
    """With findable_depth, every component of every compound has all its gold glosses in the
    encoder's exact top 10 (checked by numpy over the prepared embeddings), and the questions the
    encoder cannot answer never appear."""
    glosses = {d.id: d.text for d in wordnet.load_corpus().documents}
    pools = {
        q.question: q for kind in ("senses", "kinds") for s in wordnet.SPLITS for q in wordnet.load_questions(kind, s)
    }
    gold_texts = {text: [glosses[d] for docs in q.targets for d in docs] for text, q in pools.items()}
    encoder = KeyedEncoder(gold_texts, lambda text: len(text) % 3 != 0)
    benchmark = prepare_compound(
        tmp_path, [1, 2], 60, 20, 3000, 8, ["senses", "kinds"], seed=0, encoder=encoder, findable_depth=10,
        progress=False,
    )  # fmt: skip
    shards = benchmark.embeddings("keyed")
    corpus = shards.rows(np.arange(len(shards))).astype(np.float32)
    row_of = shards.row_of
    by_qid = compound.component_questions()
    seen = set()
    for dataset in ("compound_k1", "compound_k2"):
        for split in ("train", "test"):
            for q in benchmark.questions(dataset, split):
                for part in (by_qid[qid] for qid in components_of(q)):
                    assert len(part.question) % 3 != 0
                    seen.add(part.qid)
    for qid in seen:
        part = by_qid[qid]
        top = set(np.argsort(-(corpus @ encoder.encode_queries([part.question])[0]), kind="stable")[:10].tolist())
        assert all(row_of[d] in top for docs in part.targets for d in docs)
    assert len(benchmark.questions("compound_k2", "train")) == 60 and len(seen) > 60
    assert benchmark.manifest["recipe"]["findable_depth"] == 10
    with pytest.raises(ValueError, match="need the document encoder"):
        prepare_compound(tmp_path / "x", [1], 5, 5, 3000, 8, ["senses"], findable_depth=10)


def test_compound_datasets_are_known_by_name():
    assert [compound.components_in(d) for d in ("compound_k1", "compound_k12", "compound_kx", "wordnet_kinds")] == [
        1,
        12,
        None,
        None,
    ]


def scored(dataset, system, seed, mrecall, recall, mrecall_10):
    return {
        "params": {"backbone": "minilm"},
        "dataset": dataset,
        "system": system,
        "seed": seed,
        "mrecall": mrecall,
        "recall": recall,
        "mrecall_10": mrecall_10,
        "target_similarity": [0.1, 0.2, 0.3, 0.4],
    }


def test_the_oracle_comparison_reads_each_metric_and_amers_share_of_the_oracles_lead(monkeypatch):
    """Hand-made runs on compound_k2 (two seeds): the means and AMER's share of the oracle's lead
    over single-query, per metric, computed by hand; the teacher's decomposition (seed-free) leads
    the oracle on MRecall@100, so the better ceiling's share is taken against it."""
    from types import SimpleNamespace

    from amer_lib.beyond import decomposition as experiment
    from amer_lib.beyond.compound_results import compound_table

    ones = [1, 1, 1, 1]
    oracle = {
        ("compound_k1", 0): scored("compound_k1", experiment.ORACLE, 0, ones, ones, ones),
        ("compound_k1", 1): scored("compound_k1", experiment.ORACLE, 1, ones, ones, ones),
        ("compound_k2", 0): scored("compound_k2", experiment.ORACLE, 0, [1, 1, 1, 0], [1, 1, 1, 0.5], [1, 0, 1, 0]),
        ("compound_k2", 1): scored("compound_k2", experiment.ORACLE, 1, [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0]),
    }
    monkeypatch.setattr(experiment, "decomposition_oracle", lambda params, dataset, seed: oracle[dataset, seed])
    teacher = {
        "compound_k1": scored("compound_k1", experiment.TEACHER, None, ones, ones, ones),
        "compound_k2": scored("compound_k2", experiment.TEACHER, None, ones, [1, 1, 1, 0.5], [1, 1, 0, 0]),
    }
    monkeypatch.setattr(experiment, "teacher_decomposition", lambda params, dataset: teacher[dataset])
    k1 = [scored("compound_k1", system, seed, ones, ones, ones) for system in ("single", "amer") for seed in (0, 1)]
    results = k1 + [
        scored("compound_k2", "single", 0, [0, 0, 0, 0], [0.5, 0.5, 0.5, 0.5], [0, 0, 0, 0]),
        scored("compound_k2", "single", 1, [1, 0, 0, 0], [1, 0.5, 0.5, 0], [0, 0, 0, 0]),
        scored("compound_k2", "amer", 0, [1, 1, 0, 0], [1, 1, 0.5, 0.5], [1, 0, 0, 0]),
        scored("compound_k2", "amer", 1, [1, 0, 1, 0], [1, 0.5, 1, 0], [0, 0, 0, 0]),
        scored("wordnet_kinds", "single", 0, [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]),  # not a compound
    ]
    plain = [MultiAnswerQuestion("kinds:q", "What?", [["a"], ["b"]], [["1"], ["2"]])]  # no answer_questions
    monkeypatch.setattr(experiment, "Benchmark", lambda folder: SimpleNamespace(questions=lambda dataset, split: plain))
    params = SimpleNamespace(
        datasets=["compound_k1", "compound_k2", "wordnet_kinds"], seeds=[0, 1], prepared_dir="prepared"
    )
    rows = experiment.oracle_comparison(params, results, n_resamples=200)
    assert [(r["k"], r["system"]) for r in rows] == [
        (k, s) for k in (1, 2) for s in ("single", "amer", experiment.ORACLE, experiment.TEACHER)
    ]
    single, amer, best, off_the_shelf = rows[4:]
    assert off_the_shelf["seeds"] == 1 and off_the_shelf["mrecall_mean"] == pytest.approx(100.0)
    assert amer["ceiling"] == experiment.TEACHER  # 100 against the oracle's 87.5
    assert amer["mrecall_ceiling_share"] == amer["mrecall_teacher_share"] == pytest.approx((50 - 12.5) / 87.5)
    assert amer["recall_ceiling_share"] == pytest.approx((68.75 - 50) / (87.5 - 50))
    assert np.isnan(rows[1]["mrecall_oracle_share"])  # k = 1: the oracle has no lead
    assert single["mrecall_mean"] == pytest.approx(12.5) and amer["mrecall_mean"] == pytest.approx(50.0)
    assert best["mrecall_mean"] == pytest.approx(87.5) and single["recall_mean"] == pytest.approx(50.0)
    assert amer["mrecall_oracle_share"] == pytest.approx((50 - 12.5) / (87.5 - 12.5))
    assert amer["recall_oracle_share"] == pytest.approx((68.75 - 50) / (93.75 - 50))
    assert amer["mrecall_10_mean"] == pytest.approx(12.5) and np.isnan(single["mrecall_p"])
    table = compound_table(rows[4:], experiment.METRICS)
    assert table["System"].tolist() == [
        "Single-Query",
        "AMER",
        "Decomposition oracle",
        "Decomposition, off-the-shelf encoder",
    ]
    assert table.loc[1, "share of oracle's lead, MRecall@100"] == "50%" and table.loc[0, "Recall@100"] == "50.00±0.00"
    # AMER, the oracle and the teacher against single-query on three metrics: nine comparisons corrected together
    assert "Holm-corrected across the table's 9 comparisons" in table.attrs["note"]
    assert {"mrecall_p_behind", "mrecall_p_two_sided"} <= set(amer) and "mrecall_p_two_sided" not in single
    assert table.loc[1, "better ceiling"] == "off-the-shelf encoder"
    assert table.loc[1, "share of better ceiling's lead, MRecall@100"] == "43%"  # 37.5 / 87.5
    with pytest.warns(AmerWarning, match="the trained oracle is left out, and the compounds are compared with the"):
        alone = experiment.oracle_comparison(SimpleNamespace(datasets=["compound_k2"], seeds=[0, 1]), results, 10)
    assert [r["system"] for r in alone] == ["single", "amer", experiment.TEACHER]
    assert "mrecall_oracle_share" not in alone[1] and alone[1]["ceiling"] == experiment.TEACHER


def test_a_compound_names_each_answers_component_and_the_term_reads_them_in_order():
    """`join` writes each answer's component text as its `answer_questions` entry; `component_texts`
    (what the component term encodes) gives a compound's components in its answers' order and a
    WordNet question without them itself, as the lookup by qid did before the field."""
    first, second = wordnet.load_questions("kinds", "test")[0], wordnet.load_questions("senses", "test")[0]
    joined = join([first, second], 0)
    assert joined.answer_questions == [first.question] * len(first.answers) + [second.question] * len(second.answers)
    assert first.answer_questions is None  # a plain WordNet question has none
    assert component_texts([joined, first, second]) == [
        [first.question, second.question],
        [first.question],
        [second.question],
    ]
    assert join([second], 2).answer_questions == [second.question] * len(second.answers)  # k = 1: itself


def test_a_compound_benchmark_prepared_before_answer_questions_is_prepared_again(tmp_path):
    """Its files lack the field the term reads: the recipe names it, so the older folder is refused
    before any work rather than trained on without its components."""
    import json

    older = {
        "source": "compound",
        "ks": [2],
        "max_train": 10,
        "max_test": 10,
        "corpus_size": 100,
        "max_answers": 8,
        "components": ["senses"],
        "seed": 0,
        "validation_components": 0.1,
    }
    (tmp_path / "manifest.json").write_text(json.dumps({"recipe": older, "n_queries": {}}))
    with pytest.raises(
        ValueError, match="holds a benchmark prepared with .*'answer_questions': 'kept'.*delete that one"
    ):
        prepare_compound(tmp_path, [2], 10, 10, 100, 8, ["senses"], seed=0)


def test_a_training_draw_is_one_registered_entry_and_an_unknown_option_is_refused_by_name(tmp_path):
    """The compound benchmark's draws are the wing's entry of the prepared benchmark's plug point
    (`TRAINING_DRAWS`); an option no draw takes is refused with the ones they take, and a second
    draw may not take an option that is already another's."""
    from amer_lib.data.benchmark import TRAINING_DRAWS, Benchmark, TrainingDraw, register_training_draw

    assert [draw.defaults for draw in TRAINING_DRAWS] == [compound_draws.DEFAULTS]
    (tmp_path / "manifest.json").write_text('{"datasets": ["wordnet_kinds"], "n_queries": {"wordnet_kinds": 5}}')
    with pytest.raises(TypeError, match=r"\['fresh'\]: the registered draws take \['component_count', 'components'"):
        Benchmark(tmp_path).training_split("wordnet_kinds", seed=0, fresh=True)
    with pytest.raises(ValueError, match=r"\['compounds'\] are another draw's"):
        register_training_draw(TrainingDraw(defaults={"compounds": 0}, check=print, questions=print))
    assert len(TRAINING_DRAWS) == 1
