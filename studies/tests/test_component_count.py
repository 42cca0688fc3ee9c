"""Issue 70's test of k = 3's cause (`studies/component_count/component_count.py`): its rule and
numbers on hand-made scores, and the recipe as committed before its runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "component_count", ROOT / "studies" / "component_count" / "component_count.py"
)
component_count = importlib.util.module_from_spec(spec)
spec.loader.exec_module(component_count)


def test_the_exact_permutation_p_counts_the_splits_as_far_apart():
    """Five seeds all below five others: 1 of the C(10, 5) = 252 splits; [1, 2] against [3, 4]: 1 of
    6; equal values: every split ties the observed difference."""
    assert component_count.permutation_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(1 / 252)
    assert component_count.permutation_p([1, 2], [3, 4]) == pytest.approx(1 / 6)
    assert component_count.permutation_p([1, 3], [2, 4]) == pytest.approx(2 / 6)  # {1, 3} and {1, 2}
    assert component_count.permutation_p([5, 5], [5, 5]) == 1.0


def test_the_decision_is_the_recipes_rule():
    more = [96.33, 86.67, 77.33, 89.83, 73.5]  # the fair control's seeds (mean 84.73)
    supported = component_count.decision([50, 60, 55, 70, 52], more)
    assert supported["verdict"] == "supported" and supported["every_seed_below"]
    assert supported["p_permutation"] == pytest.approx(1 / 252) and supported["drop"] == pytest.approx(27.33)
    # a large drop with one seed overlapping: undecided; a drop under 5 points: rejected
    assert component_count.decision([50, 60, 55, 74, 52], more)["verdict"] == "undecided"
    assert component_count.decision([75, 76, 77, 78, 79], more)["verdict"] == "undecided"  # a drop of 7.73
    # against these seeds (lowest 73.5, mean 84.73) every seed below means a drop above 10: supported
    assert component_count.decision([73, 73, 73, 73, 73], more)["verdict"] == "supported"
    assert component_count.decision([80, 81, 82, 79, 78], more)["verdict"] == "rejected"
    assert component_count.decision([95, 96, 97, 98, 99], more)["verdict"] == "rejected"  # no drop at all


def entry(single, amer, teacher):
    """Scores of one count as the collected file keeps them: per seed, per question 0/1."""
    curve = lambda v: [[100, v / 2], [200, v]]  # noqa: E731
    systems = {
        "single": {str(i): {"mrecall": r, "best_step": 200, "n_queries": 1, "validation": curve(0.2)}
                   for i, r in enumerate(single)},
        "amer": {str(i): {"mrecall": r, "best_step": 200 - 100 * i, "n_queries": 7, "validation": curve(0.4)}
                 for i, r in enumerate(amer)},
        "teacher_decomposition": {"none": {"mrecall": teacher, "best_step": None, "n_queries": 3, "validation": []}},
    }  # fmt: skip
    found = {
        name: {seed: [3 * int(v) for v in run["mrecall"]] for seed, run in by.items()} for name, by in systems.items()
    }
    return {"qids": [f"q{i}" for i in range(len(teacher))], "systems": systems, "components_found": found}


SINGLE = [[int(i < 5) for i in range(20)], [int(5 <= i < 10) for i in range(20)]]  # 25%
AMER = [[int(i < 15) for i in range(20)], [int(i >= 5) for i in range(20)]]  # 75%


def roles(*served):
    return {
        str(i): {"all_components_served": v, "components_served_mean": 2.5, "vectors_repeating_a_component": 50.0}
        for i, v in enumerate(served)
    }


def test_analyse_on_hand_made_scores():
    """Single-query 25, AMER 75, the teacher 100: AMER's share (75 - 25) / (100 - 25) = 2/3 at each
    count; the validation at each run's kept step (the second AMER seed kept step 100: half its 40)."""
    scores = {"266": entry(SINGLE, AMER, [1] * 20), "1036": entry(SINGLE, SINGLE, [1] * 20)}
    scores["266"]["vector_roles"] = roles(50.0, 60.0)
    result = component_count.analyse(scores, roles(90.0, 80.0), resamples=2_000, fair=None)
    assert result["decision"] == {"drop": 30.0, "every_seed_below": True, "p_permutation": pytest.approx(1 / 6),
                                  "p_paired": 0.25, "verdict": "supported"}  # fmt: skip
    few, many = result["counts"]["266"], result["counts"]["1036"]
    assert (few["single"]["mean"], few["amer"]["mean"], few["teacher_decomposition"]["mean"]) == (25, 75, 100)
    assert few["teacher_share"]["share"] == pytest.approx(2 / 3) and many["teacher_share"]["share"] == 0
    assert few["validation_at_kept_step"] == {"single": [20.0, 20.0], "amer": [40.0, 20.0]}
    assert few["amer_best_steps"] == [200, 100] and few["components_found"]["amer"] == [25.0, 0, 0, 75.0]
    assert many["vector_roles_mean"]["all_components_served"] == 85.0
    table = component_count.table(result)
    assert "| 1036 | 90.00, 80.00 | 85.00 | 50.00 | 2.50 |" in table and "| 266 | 50.00, 60.00 | 55.00 |" in table
    assert "Decision: drop 30.00 points, every seed below: yes, exact permutation p = 0.1667" in table
    assert "| 266 | 2 x 20 | 25.00 ± 0.00 | 75.00 ± 0.00 | 100.00 | +50.00 (" in table and "| 67% (" in table


def test_the_recipe_is_the_fair_control_at_k3_on_266_components_and_its_baseline_is_the_committed_mean():
    """Committed before the runs: the fair control's recipe at k = 3 alone with train_component_count
    266 (FOLDOC's findable training components), and the fair control's roles per seed, read before
    the runs, whose mean is the committed table's."""
    recipe = yaml.safe_load(component_count.RECIPE.read_text())
    fair = yaml.safe_load((ROOT / "params" / "04_real_data" / "compound_fair_control.yaml").read_text())
    places = ("results_dir", "runs_dir", "figures_dir")
    same = {k: v for k, v in fair.items() if k not in places} | {
        "datasets": ["compound_k3"],
        "train_component_count": 266,
    }
    assert {k: v for k, v in recipe.items() if k not in places} == same
    assert "266 and 46" in (ROOT / "studies" / "foldoc" / "foldoc.md").read_text()  # FOLDOC's count
    baseline = json.loads(component_count.BASELINE_ROLES.read_text())
    assert baseline["library_commit"].startswith("5ed350c")
    served = [baseline["roles"][s]["all_components_served"] for s in sorted(baseline["roles"])]
    fair_result = json.loads((ROOT / "studies" / "fair_control" / "fair_control.json").read_text())
    committed = next(r for r in fair_result["rows"] if r["k"] == 3)["vector_roles"]["all_components_served"]
    assert len(served) == 5 and round(sum(served) / 5, 2) == float(committed) == 84.73
    text = " ".join(component_count.RECIPE.read_text().replace("#", " ").split())
    assert (
        f"at least {component_count.SUPPORTED:.0f} points" in text and f"under {component_count.REJECTED:.0f}" in text
    )


RECORD = ROOT / "studies" / "component_count"


def one_line(path: Path) -> str:
    return " ".join(path.read_text().split())


def test_the_committed_record_recomputes_and_its_quotes_are_the_files():
    """component_count.json is what the committed scores and the fair control's roles give (the
    bootstrap again, 10,000 resamples); its table is the one written and embedded in the record; the
    record, docs/results.md, studies/README.md, the fair control's and FOLDOC's records quote it."""
    scores = json.loads((RECORD / "component_count_scores.json").read_text())
    baseline = json.loads(component_count.BASELINE_ROLES.read_text())["roles"]
    result = component_count.analyse(scores, baseline)
    assert result == json.loads((RECORD / "component_count.json").read_text())
    assert (RECORD / "component_count_table.md").read_text() == component_count.table(result)
    assert scores["266"]["train_component_count"] == 266
    few, many, d = result["counts"]["266"], result["counts"]["1036"], result["decision"]
    assert (few["seeds"], few["questions"], many["seeds"], many["questions"]) == (5, 600, 5, 600)
    record = one_line(RECORD / "component_count.md")
    assert " ".join((RECORD / "component_count_table.md").read_text().split()) in record
    results, studies = one_line(ROOT / "docs" / "results.md"), one_line(ROOT / "studies" / "README.md")
    fair = one_line(ROOT / "studies" / "fair_control" / "fair_control.md")
    foldoc = one_line(ROOT / "studies" / "foldoc" / "foldoc.md")
    counts = result["counts"]
    split = {c: r["vector_roles_mean"]["all_components_served"] for c, r in counts.items()}
    repeat = {c: r["vector_roles_mean"]["vectors_repeating_a_component"] for c, r in counts.items()}
    two = {c: sum(r["components_found"]["amer"][2:]) for c, r in counts.items()}  # two or three found fully
    val = {c: {s: sum(v) / len(v) for s, v in r["validation_at_kept_step"].items()} for c, r in counts.items()}
    served = {c: r["vector_roles"]["all_components_served"] for c, r in counts.items()}

    def share(c, key="teacher_share"):
        s = counts[c][key]
        return f"{100 * s['share']:.0f}% ({100 * s['low']:.0f}-{100 * s['high']:.0f}%)"

    def means(system, joined=" against "):
        return f"{few[system]['mean']:.2f}{joined}{many[system]['mean']:.2f}"

    assert d["verdict"] == "supported" and d["every_seed_below"] and d["p_permutation"] == pytest.approx(1 / 252)
    p = f"{d['p_permutation']:.4f}"
    assert (
        f"{split['266']:.2f}% of the compounds against {split['1036']:.2f}% with 1036: a drop of {d['drop']:.2f}"
        in record
    )
    paired = f"{d['p_paired']:.4f}"
    assert d["p_paired"] == 1 / 32  # every one of the five pairs below: the sign flips' floor
    assert f"one-sided permutation p {p} treats the arms as unpaired; paired by seed" in record
    assert f"the sign-flip p is {paired}, the floor of five pairs" in record
    clustered = [share(c, "teacher_share_by_components") for c in ("266", "1036")]
    assert f"resampled, {clustered[0]} against {clustered[1]}" in record
    # exposure: each component's appearances in the 12,800 training compounds of three components
    assert [round(12_800 * 3 / n) for n in (266, 1036)] == [144, 37]
    assert "about 144 times, from 1036 about 37 times" in record and "about 144 times, each of 1036 about 37" in results
    assert f"{share('266')} with 266 components against {share('1036')} with 1036" in record
    assert f"AMER scores {means('amer')}, single-query {means('single')}" in record
    c = few["amer_vs_single"]
    assert f"(+{c['delta']:.2f}, +{c['low']:.2f} to +{c['high']:.2f})" in record
    assert f"({repeat['266']:.2f}% of the vectors repeat a component another serves, {repeat['1036']:.2f}%" in record
    assert f"fully in {two['266']:.2f}% of the compounds against {two['1036']:.2f}%" in record
    validation = f"{val['266']['amer']:.2f} on the validation compounds against {val['1036']['amer']:.2f} with 1036"
    assert (
        f"AMER reads {validation}, single-query {val['266']['single']:.2f} against {val['1036']['single']:.2f}"
        in record
    )
    assert all(r["amer_best_steps"] == [400] * 5 for r in counts.values())  # "400 in every run"
    assert (
        f"(the highest seed of 266, {max(served['266']):.2f}, against the lowest of 1036, {min(served['1036']):.2f})"
        in record
    )
    # the docs section, the studies row, the fair control's and FOLDOC's records
    assert (
        f"{split['266']:.2f}% of the test compounds with 266 components against {split['1036']:.2f}% with 1036"
        in results
    )
    assert f"every seed below every seed (the rule's unpaired exact p {p}; paired by seed, {paired})" in results
    assert f"falls from {share('1036')} to {share('266')}, toward FOLDOC's level (28%); AMER {means('amer')}" in results
    assert f"single-query {means('single')}. Validation shows" in results
    assert f"(AMER {val['266']['amer']:.2f} against {val['1036']['amer']:.2f} at the kept step)" in results
    assert (
        f"in {split['266']:.2f}% of the compounds against {split['1036']:.2f}%, every seed below every seed "
        f"(unpaired p {p}, paired {paired})" in studies
    )
    assert f"falls from {share('1036')} to {share('266')}. The exposure moves with the count" in studies
    lower = f"{split['266']:.2f}% against {split['1036']:.2f}%"
    assert f"splits less ({lower}) and reaches {share('266')[:3]} of the teacher's lead" in fair
    against = f"{split['266']:.2f}% (against {split['1036']:.2f}% with 1036)"
    assert f"splits in {against} and reaches {share('266')[:3]} of the teacher's lead, near the 28% here" in foldoc
    assert "28% (17-40%)" in foldoc and "52.7%" in foldoc  # FOLDOC's numbers the record compares with
