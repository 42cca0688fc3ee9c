"""studies/compound_levers/compound_levers.py's bookkeeping: which variant's single-query and oracle a lever reports,
which AMER it is tested against, the seeds a report reads; and the device script's pruned weights."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


study = _module("studies/compound_levers/compound_levers.py", "compound_levers_study")


def test_the_studys_amer_only_levers_are_those_single_query_trains_without():
    from amer_lib.runs.configs import AMER_LOSS_LEVERS

    assert study.AMER_ONLY == set(AMER_LOSS_LEVERS) - {"component_single"}


def test_an_amer_only_lever_reads_the_variant_without_it():
    assert study.reference("spread_1") == "today" and study.amer_only("spread_1")
    for lever in ("single_step", "first_single", "first_single+spread_1", "components_10"):
        assert study.reference(lever) == "today" and study.amer_only(lever)
    # the component term given to single-query as well (component_single) trains both systems
    assert study.reference("components_10+single") == "components_10+single"
    assert not study.amer_only("components_10+single")
    params = study.params_of("components_10+single", [0], ["compound_k1"])
    assert params.component_weight == 10.0 and params.systems == ["single", "amer"]
    assert params.for_system("single").component_weight == 10.0
    assert study.reference("lr_1e-4+spread_1") == "lr_1e-4" and study.amer_only("lr_1e-4+spread_1")
    # a lever of both systems trains its own single-query, alone or beside a loss lever
    for variant in ("today", "lr_1e-4", "hard_0.5", "lr_1e-4+fresh", "lr_1e-4+all"):
        assert study.reference(variant) == variant and not study.amer_only(variant)


def test_each_variant_is_the_notebook_run_with_its_losing_levers_in_study_levers():
    """A variant's config keys its runs as notebook 04 does when run with the compound recipe and
    the variant's changes as parameters, the levers measured to lose given in `study_levers`."""
    import yaml

    from amer_lib.params import notebook_defaults, validate
    from amer_lib.runs.configs import RealConfig
    from amer_lib.runs.store import REAL_RUNS

    recipe = yaml.safe_load((ROOT / "params" / "04_real_data" / "compound.yaml").read_text())
    levers = set(RealConfig.study_lever_names())
    assert levers == {"single_target_step", "hard_negative_share", "spread_weight", "first_vector", "train_components"}
    assert {name for changes in study.VARIANTS.values() for name in changes} & levers == levers  # each one studied
    for variant, changes in study.VARIANTS.items():
        by_name = {k: v for k, v in changes.items() if k not in levers}
        chosen = {k: v for k, v in changes.items() if k in levers}
        values = {**notebook_defaults(study.NOTEBOOK), **recipe, **by_name, "study_levers": chosen}
        notebook = validate("04_real_data", values)
        assert REAL_RUNS.recipe(notebook) == REAL_RUNS.recipe(study.params_of(variant, [0], ["compound_k2"])), variant


def test_the_kept_lever_is_the_one_compound_distilled_yaml_keeps():
    import yaml

    kept = yaml.safe_load((ROOT / "params" / "04_real_data" / "compound_distilled.yaml").read_text())
    assert study.KEPT == {name: kept[name] for name in study.KEPT} == study.VARIANTS["components_rank_10+fresh"]
    assert study.TERM == study.VARIANTS["components_rank_10"] and study.KEPT.items() > study.TERM.items()
    assert all(changes.items() >= study.TERM.items() for name, changes in study.VARIANTS.items() if "rank_10" in name)
    # fresh compounds train single-query too: its runs and the oracle's are the `fresh` variant's
    assert study.reference("components_rank_10+fresh") == "fresh" and study.baseline("components_rank_10+fresh") == (
        "components_rank_10"
    )
    assert study.VARIANTS["kept"] == study.KEPT and (study.reference("kept"), study.baseline("kept")) == (
        "fresh",
        "today",
    )


def test_a_lever_at_the_lower_rate_is_tested_against_that_rate():
    assert study.baseline("lr_1e-4+hard_0.5") == "lr_1e-4"
    assert study.baseline("lr_1e-4") == "today" and study.baseline("spread_1") == "today"
    assert study.baseline("components_rank_10+fresh") == "components_rank_10"
    assert study.baseline("components_10+single") == "today" and study.baseline("first_single+spread_1") == "today"


def test_overrides_parse_as_yaml_and_refuse_a_bare_key():
    given = ["workers=4", "device=cuda", "lr=1e-4", "datasets=[compound_k3]"]
    assert study.overrides_of(given) == {"workers": 4, "device": "cuda", "lr": 1e-4, "datasets": ["compound_k3"]}
    with pytest.raises(SystemExit, match="KEY=YAML"):
        study.overrides_of(["workers"])


def _run(folder: Path, variant: str, dataset: str, system: str, seed: int, scores: list[float]) -> None:
    results = folder / variant / "results"
    results.mkdir(parents=True, exist_ok=True)
    record = dict(dataset=dataset, system=system, seed=seed, mrecall=scores, train_seconds=10.0)
    (results / f"{dataset}_{system}_seed{seed}.json").write_text(json.dumps(record))


def test_compare_reads_the_reference_and_the_seeds_asked(tmp_path):
    """Hand-made runs: spread_1 (AMER only) reports today's single-query and oracle; its share is
    (AMER - single) / (oracle - single) of the seed means; `only` drops a seed from every system."""
    for seed, (single, amer, oracle, spread) in enumerate([(0.2, 0.4, 0.6, 0.5), (0.0, 0.2, 0.4, 0.4)]):
        _run(tmp_path, "today", "compound_k2", "single", seed, [single] * 4)
        _run(tmp_path, "today", "compound_k2", "amer", seed, [amer] * 4)
        _run(tmp_path, "today", "compound_k2", "decomposition_oracle", seed, [oracle] * 4)
        _run(tmp_path, "spread_1", "compound_k2", "amer", seed, [spread] * 4)
    (row,) = study.compare("spread_1", study.made_runs(tmp_path), n_resamples=200)
    assert row["seeds"] == [0, 1] and row["against"] == "today"
    assert row["single_mean"] == pytest.approx(10.0) and row["amer_mean"] == pytest.approx(45.0)
    assert row["decomposition_oracle_mean"] == pytest.approx(50.0)
    assert row["oracle_share"] == pytest.approx((45 - 10) / (50 - 10))
    # every question scores alike within a system: each resample of the questions gives the same share
    assert (row["oracle_share_low"], row["oracle_share_high"]) == pytest.approx((35 / 40, 35 / 40))
    assert row["against_amer_mean"] == pytest.approx(30.0) and row["p_ahead"] < 0.01
    assert row["amer_by_seed"] == pytest.approx([50.0, 40.0]) and row["against_by_seed"] == pytest.approx([40.0, 20.0])
    assert row["p_behind_single"] > 0.99  # AMER (45) well ahead of single-query (10): no evidence it is behind
    (first,) = study.compare("spread_1", study.made_runs(tmp_path), only=[0], n_resamples=200)
    assert first["seeds"] == [0] and first["amer_mean"] == pytest.approx(50.0)
    assert first["oracle_share"] == pytest.approx((50 - 20) / (60 - 20))


def test_no_share_where_the_oracle_has_no_lead(tmp_path):
    """At k = 1 the oracle is single-query itself: the row has no share (the table prints "-")."""
    for system, score in (("single", 0.8), ("amer", 0.7), ("decomposition_oracle", 0.8)):
        _run(tmp_path, "today", "compound_k1", system, 0, [score] * 4)
    (row,) = study.compare("today", study.made_runs(tmp_path), n_resamples=200)
    assert row["decomposition_oracle_mean"] == pytest.approx(row["single_mean"]) and "oracle_share" not in row
    assert "oracle_share_low" not in row
    assert row["p_behind_single"] < 0.01  # 70 against 80 on every question


def test_pruned_rows_are_those_no_text_uses():
    """The device script keeps every token id a text of the benchmark produces (and the special
    ones), so a pruned row is one no run reads."""
    device = _module("benchmarks/device_compound_levers.py", "device_compound_levers")

    class Tokenizer:  # ids by word, as a stand-in for MiniLM's WordPiece
        all_special_ids = [0, 1]
        vocabulary = {"what": 5, "does": 6, "mean": 7, "venue": 9}

        def __call__(self, texts, add_special_tokens=True):
            return {"input_ids": [[0, *(self.vocabulary[w] for w in t.split()), 1] for t in texts]}

    kept = device.used_token_ids(Tokenizer(), ["what does venue mean", "venue"])
    assert kept == {0, 1, 5, 6, 7, 9}
    assert not np.isin([2, 3, 4, 8], sorted(kept)).any()


def test_quartiles_of_target_similarity_by_hand(tmp_path):
    """Eight questions of similarity 0..7: the quartiles hold two each; the variant finds every
    answer of the four most similar, the baseline of the four least."""
    for variant, scores in (("today", [1.0] * 4 + [0.0] * 4), ("spread_1", [0.0] * 4 + [1.0] * 4)):
        _run(tmp_path, variant, "compound_k2", "amer", 0, scores)
        path = tmp_path / variant / "results" / "compound_k2_amer_seed0.json"
        record = json.loads(path.read_text())
        path.write_text(json.dumps({**record, "target_similarity": [i / 10 for i in range(8)]}))
    rows = study.by_target_similarity("spread_1", study.made_runs(tmp_path))
    assert [(r["quartile"], r["questions"], r["amer_mean"], r["base_mean"]) for r in rows] == [
        (1, 2, 0.0, 100.0),
        (2, 2, 0.0, 100.0),
        (3, 2, 100.0, 0.0),
        (4, 2, 100.0, 0.0),
    ]


def test_learning_curves_average_each_evaluation_over_the_seeds(tmp_path):
    for seed, (loss, found) in enumerate([(1.0, 0.2), (3.0, 0.4)]):
        _run(tmp_path, "corpus", "compound_k2", "amer", seed, [0.0])
        path = tmp_path / "corpus" / "results" / f"compound_k2_amer_seed{seed}.json"
        history = [{"step": 100 * i, "train_loss": loss * i, "val_mrecall": found + i / 10} for i in (1, 2)]
        path.write_text(json.dumps({**json.loads(path.read_text()), "history": history}))
    (row,) = study.learning_curves("corpus", study.made_runs(tmp_path))
    assert (row["dataset"], row["system"], row["seeds"], row["steps"]) == ("compound_k2", "amer", [0, 1], [100, 200])
    assert row["train_loss"] == pytest.approx([2.0, 4.0]) and row["val_mrecall"] == pytest.approx([0.4, 0.5])
    assert study.learning_curves("today", study.made_runs(tmp_path)) == []
    (first,) = study.learning_curves("corpus", study.made_runs(tmp_path), only=[1])
    assert first["seeds"] == [1] and first["train_loss"] == pytest.approx([3.0, 6.0])


def test_the_device_run_chains_a_variants_seeds_or_starts_one_process_each():
    """One process per variant running its seeds one after the other (a budget that ends leaves
    whole seeds), or with --seed-processes one per variant and seed; every command carries the
    run's folder, datasets and settings."""
    import types

    device = _module("benchmarks/device_compound_levers.py", "device_compound_levers")
    args = types.SimpleNamespace(
        variants=["today", "spread_1"], seeds=[1, 2], datasets=["compound_k3"], set=["workers=2"], seed_processes=False
    )
    chained = device._commands(args)
    assert list(chained) == ["today", "spread_1"]
    assert [c.split("--seeds ")[1][0] for c in chained["today"]] == ["1", "2"]
    assert all(
        c.endswith(f"--folder {device.FOLDER} --datasets compound_k3 --set workers=2")
        for cs in chained.values()
        for c in cs
    )
    args.seed_processes = True
    assert list(device._commands(args)) == ["today_seed1", "today_seed2", "spread_1_seed1", "spread_1_seed2"]
    args.variants = ["today", "spread_1@0,2"]  # a variant's own seeds
    assert list(device._commands(args)) == ["today_seed1", "today_seed2", "spread_1_seed0", "spread_1_seed2"]
    assert device._commands(args)["spread_1_seed2"][0].split("--variants ")[1].startswith("spread_1 --seeds 2 ")


audit = _module("studies/hard_negative_audit/hard_negative_audit.py", "hard_negative_audit_study")


def _q(qid, answers, targets):
    from amer_lib.data.questions import MultiAnswerQuestion

    return MultiAnswerQuestion(qid, "?", answers, targets)


def test_the_audit_reads_lemmas_and_hyponyms_from_the_questions_and_walks_below_a_category():
    senses = _q("senses:bass", [["bass"], ["sea bass", "Bass"]], [["n1"], ["n2"]])
    tree = _q("kinds:n10", [["oak"], ["pine"]], [["n11"], ["n12"]])
    oak = _q("kinds:n11", [["white oak"]], [["n13"]])
    white_oak = _q("kinds:n13", [["swamp white oak"]], [["n14"]])
    assert audit.lemmas_by_synset([senses, tree]) == {
        "n1": {"bass"},
        "n2": {"sea bass", "bass"},
        "n11": {"oak"},
        "n12": {"pine"},
    }
    graph = audit.hyponym_graph([senses, tree, oak, white_oak])
    assert graph == {"n10": {"n11", "n12"}, "n11": {"n13"}, "n13": {"n14"}}
    assert audit.below("n10", graph) == {"n13", "n14"}  # the direct hyponyms are the gold, not below
    assert audit.below("n12", graph) == set() and audit.below("n99", graph) == set()


def test_the_audit_sorts_a_negative_by_the_first_class_that_fits():
    facts = {"gold_texts": {"a deep fish"}, "lemmas": {"n5": {"striped bass"}, "n6": {"bassoon"}}, "below": {"n7"}}
    classify = lambda doc, text, word="bass", kind="senses": audit.classify(doc, text, word, kind, facts)  # noqa: E731
    assert classify("n4", "a deep fish") == "same gloss"
    assert classify("n5", "a food fish") == "multiword lemma"  # "bass" is a word of "striped bass"
    assert classify("n6", "a reed instrument") == "other"  # "bassoon" is not "bass" with other words
    assert classify("a3", "low in pitch") == "not a noun"
    assert classify("n8", "several basses sang") == "word in gloss"  # inflected
    assert classify("n8", "an embassy") == "other"  # inside another word
    assert classify("n7", "a tree", "tree", "kinds") == "kind of a kind"
    assert classify("a3", "low in pitch", "tree", "kinds") == "other"  # POS matters for senses only


def test_the_audit_table_gives_each_class_share_per_kind_and_source():
    counts = {"senses": dict.fromkeys(audit.CLASSES, 0), "kinds": dict.fromkeys(audit.CLASSES, 0)}
    mined = {k: dict(v) for k, v in counts.items()}
    mined["senses"] |= {"other": 3, "word in gloss": 1}
    mined["kinds"] |= {"other": 2}
    random = {k: dict(v) for k, v in counts.items()}
    random["senses"] |= {"other": 4}
    random["kinds"] |= {"other": 2}
    cosine = {"n": 4, "q25": 0.1, "median": 0.2, "q75": 0.3, "above_0.6": 0.25, "above_0.7": 0.0, "above_0.8": 0.0}
    result = {
        "questions": {"senses": 1, "kinds": 1},
        "counts": {"mined": mined, "random": random},
        "nearest_target_cosine": {"mined": cosine, "random": cosine, "targets": cosine},
        "test_targets": {"mined": 0.5, "random": 0.25},
    }
    lines = audit.table(result).splitlines()
    assert lines[2] == "| senses | 1 | mined (4) | 0.0% | 0.0% | 0.0% | 0.0% | 25.0% | 75.0% |"
    assert lines[5] == "| kinds | 1 | random (2) | 0.0% | 0.0% | 0.0% | 0.0% | 0.0% | 100.0% |"
    assert "| a mined negative | 4 | 0.100 | 0.200 | 0.300 | 25.0% | 0.0% | 0.0% |" in lines
    assert lines[-1] == "A test question's target (any k): 50.0% of the mined, 25.0% of the random."
    q = audit.quantiles([0.5, 0.65, 0.75, 0.85])
    assert q["median"] == pytest.approx(0.7) and (q["above_0.6"], q["above_0.7"], q["above_0.8"]) == (0.75, 0.5, 0.25)


def test_the_component_match_finds_each_components_own_vector_and_scores_the_kept_ones():
    """Hand-made: two compounds of two components over a 300-document corpus, each component's
    answer its nearest document. Question 0's AMER vectors hold the second component's vector at
    position 0 and the first's at position 2 (a random vector between); question 1's hold both
    components at positions 1 and 0. Each component is matched to its own vector (cosine 1), the
    positions are counted, and the matched vectors alone retrieve exactly what the components do
    (every answer found: 100); vectors that miss one component's answer score 0 for that question."""
    from amer_lib.core.index import VectorIndex, unit_norm
    from amer_lib.core.metrics import pad_clusters

    rng = np.random.default_rng(0)
    corpus = unit_norm(rng.normal(size=(300, 16)).astype(np.float32))
    components = unit_norm(rng.normal(size=(2, 2, 16)).astype(np.float32))
    nearest = (components @ corpus.T).argmax(-1)  # [question, component]
    gold = pad_clusters([[[int(doc)] for doc in row] for row in nearest])
    other = unit_norm(rng.normal(size=(16,)).astype(np.float32))
    vectors = np.stack(
        [
            np.stack([components[0, 1], other, components[0, 0]]),
            np.stack([components[1, 1], components[1, 0], other]),
        ]
    )
    index = VectorIndex(corpus, use_gpu=False)
    match = study.component_match(vectors, components, index, gold, 100)
    assert match["component_cosine"] == pytest.approx(1.0, abs=1e-3)
    assert match["component_positions"] == [2, 1, 1]  # q0: positions 2 and 0; q1: 1 and 0
    assert match["matched_vectors_mrecall"] == match["components_own_mrecall"] == 100.0
    # the first component's vector replaced, in both questions, by one far from its answer
    far = unit_norm(-components[:, :1])
    missing = study.component_match(np.concatenate([far, components[:, 1:]], axis=1), components, index, gold, 100)
    assert missing["components_own_mrecall"] == 100.0 and missing["matched_vectors_mrecall"] == 0.0


kinds = _module("studies/kinds_distilled/kinds_distilled.py", "kinds_distilled_study")


def test_the_kinds_study_carries_the_compound_recipes_lever_to_amer_alone(tmp_path):
    import yaml

    from amer_lib.runs.store import REAL_RUNS

    kept = yaml.safe_load((ROOT / "params" / "04_real_data" / "compound_distilled.yaml").read_text())
    assert kinds.lever() == {k: kept[k] for k in ("component_weight", "component_distance")}
    today, distilled = kinds.configs([0, 1], tmp_path)
    assert today.datasets == distilled.datasets == ["wordnet_kinds"] and today.seeds == [0, 1]
    assert today.systems == ["single", "amer"] and distilled.systems == ["amer"]
    assert distilled.component_weight == kept["component_weight"] > 0 and today.component_weight == 0
    key = lambda p: {k: v for k, v in REAL_RUNS.run_params(p.as_dict()).items() if not k.endswith("_dir")}  # noqa: E731
    assert key(distilled.for_system("single")) == key(today.for_system("single"))  # the same single-query
    assert key(distilled) != key(today)
    written = tmp_path / "params.yaml"
    written.write_text(today.replace(steps=123, results_dir="elsewhere").to_yaml())
    read, _ = kinds.configs([2], tmp_path, str(written))
    assert (read.steps, read.results_dir, read.seeds) == (123, "elsewhere", [2])  # today's runs where they were made


def test_the_kinds_study_compares_seed_averaged_questions_on_both_test_sets():
    """Six questions, two seeds: the means by hand, the low-similarity third (the two questions of
    least target similarity), and a lever ahead of today's everywhere."""
    similarity = [0.9, 0.1, 0.5, 0.2, 0.8, 0.7]  # the low-similarity third: questions 1 and 3
    run = lambda system, seed, scores: {  # noqa: E731
        "system": system,
        "seed": seed,
        "mrecall": scores,
        "target_similarity": similarity,
        "train_seconds": 10.0 + seed,
    }
    today = [
        run("single", 0, [1, 0, 1, 0, 1, 1]),
        run("single", 1, [1, 0, 1, 0, 1, 0]),
        run("amer", 0, [0, 0, 1, 0, 1, 0]),
        run("amer", 1, [0, 0, 0, 0, 1, 0]),
    ]
    distilled = [run("amer", 0, [1, 1, 1, 1, 1, 1]), run("amer", 1, [1, 1, 1, 1, 1, 0])]
    whole, low = kinds.compare(today, distilled, n_resamples=2000)
    assert (whole["questions"], low["questions"], whole["seeds"]) == (6, 2, [0, 1])
    assert whole["single_mean"] == pytest.approx(100 * (4 / 6 + 3 / 6) / 2)
    assert whole["single_std"] == pytest.approx(100 * (4 / 6 - 3 / 6) / 2)
    assert whole["amer_mean"] == pytest.approx(100 * (2 / 6 + 1 / 6) / 2)
    assert whole["distilled_mean"] == pytest.approx(100 * (6 / 6 + 5 / 6) / 2)
    assert (low["single_mean"], low["amer_mean"], low["distilled_mean"]) == (0.0, 0.0, 100.0)
    assert whole["p_ahead_of_today"] < 0.01 and low["p_ahead_of_today"] == 0.0
    assert whole["p_behind_single"] == 1.0 and whole["train_seconds_per_run"] == 10.5
    with pytest.raises(SystemExit, match="no seed has"):
        kinds.compare(today, [run("amer", 5, [1] * 6)])


selection = _module("studies/compound_levers/selection.py", "compound_levers_selection")


def _validation_row(variant: str, k2: dict, k3: dict) -> dict:
    return {"variant": variant, "machine": ["H200"], "compound_k1": {}, "compound_k2": k2, "compound_k3": k3}


def test_selection_ranks_on_the_seeds_all_share_then_the_deep_leaders_on_theirs():
    """Stage 1 compares every variant on the seeds all have (seed 0 here); stage 2 the best of those
    with three seeds or more on the seeds they share, so a one-seed variant that leads stage 1 is
    not chosen, and a variant ahead at seed 0 can lose over three seeds."""
    rows = [
        _validation_row("lucky", {0: 90.0}, {0: 90.0}),  # one seed: never a finalist
        _validation_row("steady", {0: 50.0, 1: 60.0, 2: 60.0}, {0: 20.0, 1: 30.0, 2: 30.0}),
        _validation_row("early", {0: 70.0, 1: 40.0, 2: 40.0}, {0: 30.0, 1: 10.0, 2: 10.0}),
        _validation_row("today", {0: 40.0, 1: 40.0, 2: 40.0, 3: 40.0}, {0: 10.0, 1: 10.0, 2: 10.0, 3: 10.0}),
    ]
    chosen = selection.select(rows, finalists=2)
    assert chosen["stage1_seeds"] == [0] and [x["variant"] for x in chosen["stage1"]] == [
        "lucky",
        "early",
        "steady",
        "today",
    ]
    assert chosen["stage2_seeds"] == [0, 1, 2] and [x["variant"] for x in chosen["stage2"]] == ["steady", "early"]
    assert chosen["chosen"] == "steady" and chosen["stage2"][0]["validation"] == pytest.approx(
        (56.6667 + 26.6667) / 2, 1e-4
    )


def test_the_committed_selection_picks_the_kept_recipe_and_the_docs_quote_its_headline():
    """studies/compound_levers/selection.json: the validation split's choice is the recipe
    params/*/compound_distilled.yaml keeps, and README, docs/results.md and the study's record
    quote its seven-seed shares and scores as the file holds them."""
    import yaml

    result = json.loads((ROOT / "studies" / "compound_levers" / "selection.json").read_text())
    assert result["selection"]["chosen"] == "components_rank_10+fresh"
    recipe = yaml.safe_load((ROOT / "params" / "04_real_data" / "compound_distilled.yaml").read_text())
    assert all(recipe[key] == value for key, value in study.VARIANTS["components_rank_10+fresh"].items())
    rows = {r["dataset"][-1]: r for r in result["headline"]["rows"]}
    assert rows["2"]["seeds"] == list(range(7)) and rows["2"]["better_ceiling"] == "teacher_decomposition"
    assert rows["3"]["better_ceiling"] == "decomposition_oracle"

    def share(k: str) -> str:
        s = rows[k][f"share_{rows[k]['better_ceiling']}"]
        return f"{100 * s['share']:.0f}% ({100 * s['low']:.0f}-{100 * s['high']:.0f}%)"

    assert (share("2"), share("3")) == ("65% (55-75%)", "57% (47-67%)")
    readme = " ".join((ROOT / "README.md").read_text().split())
    results = " ".join((ROOT / "docs" / "results.md").read_text().split())
    record = " ".join((ROOT / "studies" / "compound_levers" / "selection.md").read_text().split())
    # the verdict per k: by the point estimate k = 2 is short of its aim and k = 3 meets it; each interval
    # holds its aim, so neither is decided
    k2, k3 = (rows[k][f"share_{rows[k]['better_ceiling']}"] for k in "23")
    assert k2["low"] < k2["share"] < 0.75 <= k2["high"] and k3["low"] < 0.5 <= k3["share"] < k3["high"]
    assert (
        f"{share('2')} of the better decomposition's lead at k = 2, short of the aim of 75%, and {share('3')} at "
        "k = 3, above 50%, by the point estimates; the intervals (over the test compounds, not their components) "
        "decide neither." in results
    )
    assert share("2") not in readme  # the front page quotes the stronger records (tests/report/test_evidence.py)
    scores = " / ".join(f"{rows[k]['amer']['mean']:.2f}" for k in "123")
    single = rows["1"]["against_single"]
    assert f"0-6 on the H200: {scores} at k = 1 / 2 / 3" in results
    assert (
        f"{single['delta']:+.2f} ({single['low']:+.2f} to {single['high']:+.2f}, Holm p = {single['p_holm']:.2f})"
        in results
    )
    assert f"**{share('2')}**" in record and f"**{share('3')}**" in record
    for k in "123":
        assert f"| {k} | AMER, chosen recipe | {rows[k]['amer']['mean']:.2f}±{rows[k]['amer']['std']:.2f} |" in record
    pilot = {r["dataset"][-1]: r["mrecall"] for r in result["single_with_term"]}
    assert f"| single-query with the term | {pilot['1']:.2f} | {pilot['2']:.2f} | {pilot['3']:.2f} |" in record
    assert f"gains at k = 1 ({pilot['1']:.2f} against" in results
