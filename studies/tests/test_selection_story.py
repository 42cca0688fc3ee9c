"""Issue 70: the kept compound recipe told as it happened, each number computed from a committed file.
The recipe was chosen comparing variants on the test compounds (the lever study's JSONs) and checked on the
validation compounds afterwards (studies/compound_levers/selection.json); p-values stop at what the
bootstrap's resamples resolve (amer_lib.report.significance.p_floor); the verdict is given k by k with the
seven-seed intervals; the single-query pilot is read beside the committed figure folder."""

import csv
import importlib.util
import json
import subprocess
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from amer_lib.report.significance import compare, p_floor, p_text

ROOT = Path(__file__).resolve().parents[2]
LEVERS = ROOT / "studies" / "compound_levers"
DISTILLED = ROOT / "figures" / "04_real_data_compound_distilled"
RESULT = json.loads((LEVERS / "selection.json").read_text())
HEAD = {r["dataset"][-1]: r for r in RESULT["headline"]["rows"]}


def _text(path: Path) -> str:
    """A page with its whitespace collapsed, as the prose wraps it."""
    return " ".join(path.read_text().split())


def _selection():
    spec = importlib.util.spec_from_file_location("selection_story", LEVERS / "selection.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


selection = _selection()
README, RESULTS, STUDIES, RECORD = (
    _text(ROOT / "README.md"),
    _text(ROOT / "docs" / "results.md"),
    _text(ROOT / "studies" / "README.md"),
    _text(LEVERS / "selection.md"),
)
# the README's verdicts told as prose: docs/results.md's "What reproduces, in words"
IN_WORDS = RESULTS[RESULTS.index("## What reproduces, in words") : RESULTS.index("## Results at the offline default")]


def test_the_floor_is_the_smallest_p_the_resamples_resolve_times_the_comparisons():
    """By hand: 9 resamples resolve a two-sided p of 2 / 10 at best, a one-sided 1 / 10; Holm over m
    multiplies the smallest p by m, capped at 1. A p below the floor prints as "≤ floor", the floor
    rounded up (never down) to two significant digits."""
    assert p_floor(9) == pytest.approx(0.2) and p_floor(9, sides=1) == pytest.approx(0.1)
    assert p_floor(9, 3) == pytest.approx(0.6) and p_floor(9, 6) == 1.0
    assert p_text(0.0, 10_000, 10) == "≤ 0.002"  # 10 x 2 / 10,001 = 0.00199980
    assert p_text(0.0, 10_000, 3) == "≤ 0.0006"  # 0.00059994
    assert p_text(0.0, 10_000, 6) == "≤ 0.0012"  # 0.00119988
    assert p_text(0.0, 10_000, 76) == "≤ 0.016"  # 0.0151985: rounded up, so the bound stays true
    assert p_text(0.0, 10_000, sides=1) == "≤ 0.0001"  # 0.00009999
    assert p_text(0.0008, 10_000, 10) == "≤ 0.002" and p_text(0.0008, 10_000, 3) == "0.0008"
    assert p_text(0.3528, 10_000, 10, digits=2) == "0.35"
    # a system ahead on every question: no resample crosses zero, so compare's p is 0, below the floor
    c = compare(np.zeros((1, 5)), np.ones((1, 5)), n_resamples=99)
    assert c.p == 0 and p_text(c.p, 99) == "≤ 0.02"
    for bad in ((0, 1, 2), (10, 0, 2), (10, 1, 3)):
        with pytest.raises(ValueError, match="p_floor needs"):
            p_floor(*bad)


def test_the_committed_p_values_reproduce_with_the_scripts_resamples():
    """selection.json does not record its resamples; the archives' runs through compare with
    selection.RESAMPLES give its p-values again, so the floor the records quote is that of 10,000."""
    runs = selection.read_runs()
    seeds = HEAD["2"]["seeds"]
    for k, reference, system in (("1", "single", "single"), ("2", "decomposition_oracle", "decomposition_oracle")):
        dataset = f"compound_k{k}"
        amer = selection.scores(runs, RESULT["headline"]["chosen"], dataset, "amer", seeds)[0]
        other = selection.scores(runs, "today", dataset, system, seeds)[0]
        c = compare(other, amer, n_resamples=selection.RESAMPLES)
        quoted = HEAD[k][f"against_{reference}"]
        assert (c.p_ahead, c.p_behind, c.p) == (quoted["p_ahead"], quoted["p_behind"], quoted["p"]), k
    assert selection.RESAMPLES == 10_000


def test_the_selection_tables_print_p_at_the_bootstraps_floor():
    """selection_table.md is the script's table of the committed JSON; selection.md's headline table
    quotes each comparison's difference and its Holm p at the floor; no page quotes a p below it."""
    result = json.loads((LEVERS / "selection.json").read_text())
    for row in result["validation"]:
        row |= {d: {int(seed): v for seed, v in row[d].items()} for d in selection.DATASETS}
    assert (LEVERS / "selection_table.md").read_text() == selection.table(result, selection.RESAMPLES)
    m = RESULT["headline"]["comparisons"]
    labels = {
        "single": "single-query",
        "today_amer": "AMER, today's recipe",
        "decomposition_oracle": "decomposition, trained",
        "teacher_decomposition": "decomposition, teacher",
    }
    floored = 0
    for k, row in HEAD.items():
        for name, label in labels.items():
            if name not in row:
                continue
            c, values = row[f"against_{name}"], row[name]
            score = f"{values['mean']:.2f}" + (f"±{values['std']:.2f}" if len(values["by_seed"]) > 1 else "")
            p = p_text(c["p_holm"], selection.RESAMPLES, m, digits=2)
            floored += p.startswith("≤")
            assert (
                f"| {k} | {label} | {score} | {c['delta']:+.2f} ({c['low']:+.2f} to {c['high']:+.2f}) | {p} |" in RECORD
            ), (k, name)
    assert floored == 9 and p_text(0.0, selection.RESAMPLES, m) == "≤ 0.002"
    assert "where no resample crossed zero the table says p ≤ 0.002 (`significance.p_floor`)" in RECORD
    for page in (README, RESULTS, STUDIES, RECORD, _text(LEVERS / "selection_table.md")):
        assert "< 0.0001" not in page and "0.0000" not in page


def test_the_records_say_the_recipe_was_chosen_on_test_and_checked_on_validation_afterwards():
    """The kept recipe's seven-seed test scores were already in the lever study's file (committed at
    7a7df97) that the headline repeats; the weight was chosen from one-seed test pilots; the
    validation ranking agrees, with weights 10 and 3 swapping places between its stages."""
    fresh = {
        r["dataset"][-1]: r
        for r in json.loads((LEVERS / "compound_levers_h200_fresh.json").read_text())
        if r["variant"] == "components_rank_10+fresh"
    }
    scores = " / ".join(f"{HEAD[k]['amer']['mean']:.2f}" for k in "123")
    assert scores == " / ".join(f"{fresh[k]['amer_mean']:.2f}" for k in "123")
    assert all(fresh[k]["seeds"] == HEAD[k]["seeds"] for k in "123")
    assert f"test scores, {scores} at k = 1 / 2 / 3 (`compound_levers_h200_fresh.json`)" in RECORD
    pilots = {
        r["variant"]: r["amer_mean"]
        for r in json.loads((LEVERS / "compound_levers_pilot2.json").read_text())
        if r["dataset"] == "compound_k2"
    }
    weights = ", ".join(f"weight {w} {pilots[f'components_rank_{w}']:.2f}" for w in (10, 3, 1))
    assert f"(`compound_levers_pilot2.json`): {weights}." in RECORD
    stage1, stage2 = ({x["variant"]: x["validation"] for x in RESULT["selection"][s]} for s in ("stage1", "stage2"))
    ten, three = "components_rank_10", "components_rank_3"
    assert stage1[three] > stage1[ten] and stage2[ten] > stage2[three]  # the two weights swap places
    assert (
        f"(weight 3 ahead at seed 0, {stage1[three]:.2f} against {stage1[ten]:.2f}; weight 10 ahead over seeds 0-2, "
        f"{stage2[ten]:.2f} against {stage2[three]:.2f})" in RECORD
    )
    assert (
        f"({stage1[ten]:.2f} against {stage1[three]:.2f} at seed 0, {stage2[ten]:.2f} against {stage2[three]:.2f} "
        "over seeds 0-2)" in RESULTS
    )
    assert RESULT["selection"]["chosen"] == "components_rank_10+fresh"
    assert "Chosen on test, checked on validation afterwards" in IN_WORDS
    assert "**Chosen on test, checked on validation afterwards, seven seeds**" in RESULTS
    assert "Chosen comparing variants on the test compounds; checked on the validation compounds afterwards" in STUDIES
    assert RECORD.startswith("# The kept compound recipe: chosen on test, checked on validation afterwards")
    for page in (README, RESULTS, STUDIES, RECORD):
        assert "read once on test" not in page and "Chosen on validation" not in page


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def test_the_history_the_records_quote_is_the_repositorys():
    """The commits selection.md and docs/results.md name, in git: the seven-seed scores at 7a7df97, the
    selection script at d8039d5, 14 h 26 min later. Skipped where the checkout has no such history."""
    dates = {c: _git("show", "-s", "--format=%cI", c) for c in ("7a7df97", "d8039d5", "d18e41c")}
    if any(d is None for d in dates.values()):
        pytest.skip("this checkout has no git history down to 7a7df97")
    at = {c: datetime.fromisoformat(d.strip()) for c, d in dates.items()}
    minutes = round((at["d8039d5"] - at["7a7df97"]).total_seconds() / 60)
    gap = f"{minutes // 60} h {minutes % 60} min"
    assert gap == "14 h 26 min" and at["d18e41c"] > at["d8039d5"]
    assert f"d8039d5 (2026-11-28 10:43), {gap} after 7a7df97" in RECORD
    assert f"committed at 7a7df97, {gap} before the selection script (d8039d5)" in RESULTS
    then = json.loads(_git("show", "7a7df97:studies/compound_levers_h200_fresh.json"))
    then = {r["dataset"][-1]: r["amer_mean"] for r in then if r["variant"] == "components_rank_10+fresh"}
    assert [f"{then[k]:.2f}" for k in "23"] == ["51.76", "23.81"] == [f"{HEAD[k]['amer']['mean']:.2f}" for k in "23"]
    created = _git("log", "--diff-filter=A", "--format=%h", "--", "studies/compound_levers/selection.py")
    assert created is not None and created.split()[-1] == "d8039d5"
    for commit, when in (("001e045", "10:35"), ("6a6e81e", "11:13"), ("ef10c37", "11:45"), ("7a7df97", "20:17")):
        date = _git("show", "-s", "--format=%cI", commit)
        assert date is not None and date.startswith(f"2026-11-27T{when}"), commit
        assert f"{commit} ({'2026-11-27 ' * (commit == '001e045')}{when})" in RECORD  # the day named once


def test_the_verdict_per_k_quotes_the_seven_seed_intervals():
    """k = 2 is short of 75% and k = 3 meets 50% by the point estimate; each interval holds its aim."""
    k2, k3 = (HEAD[k][f"share_{HEAD[k]['better_ceiling']}"] for k in "23")
    assert k2["share"] < 0.75 <= k2["high"] and k3["low"] < 0.5 <= k3["share"]
    upper, lower = f"{100 * k2['high']:.1f}%", f"{100 * k3['low']:.1f}%"
    assert f"the interval's upper end, {upper}, reaches the aim" in RECORD
    assert f"the interval's lower end, {lower}, is below 50%" in RECORD
    assert f"the interval reaches it (upper end {upper}): undecided" in RESULTS
    assert f"the interval reaches below it (lower end {lower}): undecided too" in RESULTS


def test_the_single_query_pilot_reads_the_committed_figure_folder():
    """selection.md's pilot table and the sentences drawn from it: single-query with the term
    (selection.json) beside seed 0 of figures/04_real_data_compound_distilled's per-seed table."""
    with open(DISTILLED / "per_seed_minilm_compound_k1+compound_k2+compound_k3.csv", newline="") as f:
        seed0 = {(r["dataset"][-1], r["system"]): float(r["whole"]) for r in csv.DictReader(f) if r["seed"] == "0"}
    given = {r["dataset"][-1]: r["mrecall"] for r in RESULT["single_with_term"]}
    row = lambda values: " | ".join(f"{v:.2f}" for v in values)  # noqa: E731
    assert f"| single-query with the term | {row(given[k] for k in '123')} |" in RECORD
    assert f"| single-query without it (the figure's) | {row(seed0[k, 'single'] for k in '123')} |" in RECORD
    assert f"| AMER with the term (the figure's) | {row(seed0[k, 'amer'] for k in '123')} |" in RECORD
    assert "| AMER with the term (the figure's) | 87.67 |" not in RECORD  # the 64fbe73 folder's, gone
    assert f"lifts single-query too** ({given['1'] - seed0['1', 'single']:+.2f})" in RECORD
    assert given["1"] > seed0["1", "amer"]
    assert f"ahead of AMER with it ({given['1']:.2f} against {seed0['1', 'amer']:.2f})" in RECORD
    leads = [seed0[k, "amer"] - given[k] for k in "23"]
    assert f"({leads[0]:.2f} and {leads[1]:.2f} points on this seed)" in RECORD
    assert "ran afterwards (issue 70, `studies/fair_control/fair_control.md`)" in RECORD
    assert "is still to run" not in RECORD and "is still to run" not in RESULTS
    assert "The fair control (`studies/fair_control/fair_control.md`" in IN_WORDS
    assert "a one-seed CPU pilot of the cosine form, not the kept ranking form" in RESULTS
    kept_form = f"its kept ranking form, single-query reached {given['1']:.2f} against AMER's {seed0['1', 'amer']:.2f}"
    assert kept_form in IN_WORDS  # the pilot of the kept form, not the cosine form's 91.33 / 91.50
    assert "(one seed). The fair control" in IN_WORDS


def test_the_question_only_interval_selection_md_quotes_is_one_rows():
    """Issue 79: the sentence spliced one row's share (79%) with another's interval (73-89%); it now
    quotes components_rank_10 over seeds 0-6 at k = 2 whole, as its JSON holds it."""
    rows = json.loads((LEVERS / "compound_levers_h200_distilled.json").read_text())
    [row] = [r for r in rows if r["variant"] == "components_rank_10" and r["dataset"] == "compound_k2"]
    assert row["seeds"] == list(range(7))
    low, high = 100 * row["oracle_share_low"], 100 * row["oracle_share_high"]
    quoted = f"{100 * row['oracle_share']:.0f}% ({low:.0f}-{high:.0f}%)"
    text = _text(LEVERS / "selection.md")
    assert f"components_rank_10 over seeds 0-6 at k = 2, against the trained oracle: {quoted})" in text


def test_the_component_reanalysis_is_quoted_from_the_record():
    """The component-resampled shares and AMER against the teacher, as selection.md quotes them; every
    number of the compound bootstrap is unchanged beside them (the committed table is the script's)."""
    rows = {r["dataset"][-1]: r for r in RESULT["headline"]["rows"]}

    def cell(d: dict) -> str:
        return f"{d['delta']:+.2f} ({d['low']:+.2f} to {d['high']:+.2f})"

    shares = [rows[k][f"share_{rows[k]['better_ceiling']}_by_components"] for k in "23"]
    quoted = [f"{100 * s['share']:.0f}% ({100 * s['low']:.0f}-{100 * s['high']:.0f}%)" for s in shares]
    assert f"share reads {quoted[0]} at k = 2 and {quoted[1]} at k = 3: undecided at both" in RECORD
    assert all(s["low"] < aim <= s["high"] for s, aim in zip(shares, (0.75, 0.5)))
    two, three = (rows[k]["against_teacher_decomposition_by_components"] for k in "23")
    assert f"decomposition is {cell(two)} at k = 2 (Holm p {two['p_holm']:.4f})" in RECORD
    assert f"and {cell(three)} at k = 3 (Holm p {three['p_holm']:.4f})" in RECORD
    assert two["high"] < 0 < three["high"] and two["p_holm"] < 0.05 < three["p_holm"]
