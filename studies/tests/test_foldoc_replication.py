"""Issue 70's FOLDOC replication: the decision rule as the frozen recipes state it
(`studies/foldoc/replication.py`), on hand-made scores, and the committed record recomputed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("replication", ROOT / "studies" / "foldoc" / "replication.py")
replication = importlib.util.module_from_spec(spec)
spec.loader.exec_module(replication)


def interval_text(d: dict) -> str:
    return f"by {abs(d['delta']):.2f} points (95% interval {d['low']:.2f} to {d['high']:.2f}"


def share_text(s: dict) -> str:
    return f"{100 * s['share']:.0f}% ({100 * s['low']:.0f}-{100 * s['high']:.0f}%) of the teacher's lead"


def found_text(found: dict, system: str) -> str:
    """A system's compounds with every, ..., no component found, as the record lists them."""
    return " / ".join(f"{v:.2f}" for v in reversed(found[system]))


def entry(single, amer, teacher):
    """Scores per system as the collected file keeps them: per seed, per question 0/1."""
    systems = {
        "single": {
            str(i): {"mrecall": row, "best_step": 400, "n_queries": 1, "validation": [[100, 0.5]]}
            for i, row in enumerate(single)
        },
        "amer": {
            str(i): {"mrecall": row, "best_step": 300 + i, "n_queries": 4, "validation": [[100, 0.25 * (i + 1)]]}
            for i, row in enumerate(amer)
        },
        "teacher_decomposition": {"none": {"mrecall": teacher, "best_step": None, "n_queries": 2}},
    }
    # components found per compound (k = 2): both where every answer is found, else none
    found = {name: {seed: [2 * int(all(v)) for v in [[x] for x in run["mrecall"]]] for seed, run in by.items()}
             for name, by in systems.items()}  # fmt: skip
    report = {"drawn": 5, "left_out": 1, "train": 20, "wanted": 6}
    return {"qids": [f"q{i}" for i in range(len(teacher))], "systems": systems, "components_found": found,
            "validation_report": report}  # fmt: skip


def test_the_rule_on_hand_made_scores():
    """Two seeds, twenty questions: single finds 5 of 20 on each seed, AMER 15, the teacher all 20,
    so AMER's share of the teacher's lead is (75 - 25) / (100 - 25) = 2/3 exactly."""
    single = [[int(i < 5) for i in range(20)], [int(5 <= i < 10) for i in range(20)]]
    amer = [[int(i < 15) for i in range(20)], [int(i >= 5) for i in range(20)]]
    (row,) = replication.analyse({"2": entry(single, amer, [1] * 20)}, resamples=2_000)["rows"]
    assert row["single"]["mean"] == 25 and row["amer"]["mean"] == 75 and row["teacher_decomposition"]["mean"] == 100
    assert row["share"]["share"] == pytest.approx(2 / 3)
    assert row["amer_vs_single"]["delta"] == pytest.approx(50)
    assert row["amer_best_steps"] == [300, 301] and row["amer_vectors"] == 4
    assert row["validation_by_step"] == {"single": {"100": 50.0}, "amer": {"100": 37.5}}  # (25 + 50) / 2
    assert row["share"]["low"] < 2 / 3 < row["share"]["high"]
    assert row["reach"] == replication.verdict(row["share"]["low"], row["share"]["high"], 0.75)
    # % of compounds with 0, 1, 2 components found, averaged over seeds: AMER finds both in 15 of 20
    assert row["components_found"]["amer"] == [25.0, 0.0, 75.0]
    assert row["components_found"]["teacher_decomposition"] == [0.0, 0.0, 100.0]


def test_reach_verdicts():
    assert replication.verdict(0.76, 0.9, 0.75) == "met"
    assert replication.verdict(0.40, 0.74, 0.75) == "missed"
    assert replication.verdict(0.70, 0.80, 0.75) == "undecided"


def test_holm_over_the_ks_read():
    """A large, clear lead at k = 2 and none at k = 3 (AMER = single): Holm multiplies the smaller p by 2."""
    rng = np.random.default_rng(0)
    single = rng.integers(0, 2, size=(3, 60)).tolist()
    ahead = [[1] * 60] * 3
    scores = {"2": entry(single, ahead, [1] * 60), "3": entry(single, single, [1] * 60)}
    rows = replication.analyse(scores, resamples=1_000)["rows"]
    assert [r["k"] for r in rows] == [2, 3]
    assert rows[0]["replicates"] and not rows[1]["replicates"]
    assert rows[1]["amer_vs_single"]["p_holm"] == pytest.approx(1.0)
    assert rows[0]["amer_vs_single"]["p_text"].startswith("≤")  # no resample crossed zero: at the floor


def test_the_committed_record_recomputes():
    scores_path = ROOT / "studies" / "foldoc" / "foldoc_scores.json"
    if not scores_path.exists():
        pytest.skip("the replication's scores are not committed yet")
    committed = json.loads((ROOT / "studies" / "foldoc" / "replication.json").read_text())
    assert replication.analyse(json.loads(scores_path.read_text())) == committed
    for row in committed["rows"]:  # with at most 8 answers, MRecall@100 is every component found
        for system in replication.SYSTEMS:
            assert row["components_found"][system][-1] == pytest.approx(row[system]["mean"], abs=0.01)
    table = (ROOT / "studies" / "foldoc" / "replication_table.md").read_text()
    assert table == replication.table(committed)


def test_the_record_quotes_the_committed_numbers():
    """Every number studies/foldoc/foldoc.md quotes, computed from the committed files."""
    folder = ROOT / "studies" / "foldoc"
    if not (folder / "replication.json").exists():
        pytest.skip("the replication's scores are not committed yet")
    record = " ".join((folder / "foldoc.md").read_text().split())
    rows = {r["k"]: r for r in json.loads((folder / "replication.json").read_text())["rows"]}
    data = json.loads((folder / "foldoc_data.json").read_text())
    counts = data["counts"]
    assert " ".join((folder / "replication_table.md").read_text().split()) in record
    assert f"{data['records']:,} records" in record and f"{data['documents']:,} documents" in record
    assert f"{counts['components_train']} training and {counts['components_test']} test components" in record
    assert f"for {counts['findable_train']} and {counts['findable_test']}" in record
    assert f"{counts['train_k2']:,} training and {counts['test_k2']} test compounds" in record
    two = rows[2]
    d, s = two["amer_vs_single"], two["share"]
    assert interval_text(d) in record and share_text(s) in record
    found = two["components_found"]
    assert f"both components of {found['amer'][2]:.2f}% of the compounds, one of {found['amer'][1]:.2f}%" in record
    assert f"none of {found['amer'][0]:.2f}%" in record
    for system in ("single", "teacher_decomposition"):
        assert found_text(found, system) in record
    roles = two["vector_roles"]
    assert f"AMER's {two['amer_vectors']} vectors" in record
    assert f"in {roles['all_components_served']}% of the compounds" in record
    assert f"({roles['vectors_repeating_a_component']}% of the vectors" in record
    for k, row in rows.items():
        v = row["validation_report"]
        assert (
            f"k = {k}: {v['drawn']} of {v['wanted']} drawn, {v['left_out']} left out, {v['train']:,} to train on"
            in record
        )
    assert f"the {two['validation_report']['drawn']} validation compounds" in record
    curve = two["validation_by_step"]
    assert " / ".join(f"{v:.2f}" for v in curve["amer"].values()) + " at steps 100-400" in record
    assert f"single-query reached {curve['single']['400']:.2f}" in record
    assert set(two["amer_best_steps"]) == {400}  # "every seed's kept checkpoint the last"
    assert f"against {two['amer']['mean']:.2f} and {two['single']['mean']:.2f} on test" in record


def test_the_docs_quote_the_record():
    """docs/results.md's section and studies/README.md's row, against the committed record."""
    folder = ROOT / "studies" / "foldoc"
    if not (folder / "replication.json").exists():
        pytest.skip("the replication's scores are not committed yet")
    two = next(r for r in json.loads((folder / "replication.json").read_text())["rows"] if r["k"] == 2)
    d, s = two["amer_vs_single"], two["share"]
    docs = " ".join((ROOT / "docs" / "results.md").read_text().split())
    studies = " ".join((ROOT / "studies" / "README.md").read_text().split())
    share = share_text(s)
    assert interval_text(d) in docs
    assert share in docs and share in studies and f"by {d['delta']:.2f} points" in studies
    assert f"against the aim of {100 * two['aim']:.0f}%: {two['reach']}" in docs
    assert f"in {two['vector_roles']['all_components_served']}% of the compounds" in docs


def test_the_record_quotes_k3():
    """The k = 3 bullets of studies/foldoc/foldoc.md and docs/results.md, against the committed record."""
    folder = ROOT / "studies" / "foldoc"
    rows = {r["k"]: r for r in json.loads((folder / "replication.json").read_text())["rows"]}
    if 3 not in rows:
        pytest.skip("k = 3 is not read yet")
    r = rows[3]
    d, s, f = r["amer_vs_single"], r["share"], r["components_found"]
    record = " ".join((folder / "foldoc.md").read_text().split())
    docs = " ".join((ROOT / "docs" / "results.md").read_text().split())
    interval, share = interval_text(d), share_text(s)
    verdict = f"against the aim of {100 * r['aim']:.0f}%: {r['reach']}"
    for text in (record, docs):
        assert interval in text and share in text and verdict in text
    assert ("ahead of single-query" if d["delta"] > 0 else "behind single-query") in record
    assert f"the lever {'replicates' if r['replicates'] else 'does not replicate'}" in record
    assert f"one-sided p {d['p_text']} after Holm" in record
    assert f"all three components of {f['amer'][3]:.2f}% of the compounds, two of {f['amer'][2]:.2f}%" in record
    assert f"one of {f['amer'][1]:.2f}%, none of {f['amer'][0]:.2f}%" in record
    for system in ("single", "teacher_decomposition"):
        assert found_text(f, system) in record
    roles = r["vector_roles"]
    assert f"in {roles['all_components_served']}% of the compounds ({roles['vectors_repeating_a_component']}%" in record
    curve = " / ".join(f"{v:.2f}" for v in r["validation_by_step"]["amer"].values())
    assert f"AMER {curve} at steps 100-400, against {r['amer']['mean']:.2f} on test" in record


def test_the_reanalysis_with_the_components_resampled_is_quoted_from_the_record():
    """Issue 79's reanalysis (studies/foldoc/foldoc.md): its table is the script's, its numbers the
    committed record's, and the compounds a component is in counted from the committed qids."""
    from amer_lib.beyond.compound import component_qids

    folder = ROOT / "studies" / "foldoc"
    rows = {r["k"]: r for r in json.loads((folder / "replication.json").read_text())["rows"]}
    scores = json.loads((folder / "foldoc_scores.json").read_text())
    text = (folder / "foldoc.md").read_text()
    table = (folder / "replication_table.md").read_text()
    block = table[table.index("| k | components |") : table.index("\n\n| k | AMER's vectors")]
    assert block in text
    record = " ".join(text.split())
    docs = " ".join((ROOT / "docs" / "results.md").read_text().split())
    for k, r in rows.items():
        names = [name for qid in scores[str(k)]["qids"] for name in component_qids(qid)]
        assert r["components"] == len(set(names)) == 46
        per_component = len(names) / len(set(names))
        assert f"({round(per_component)} at k = {k}" in record or f"{round(per_component)} at k = {k}" in record
        s = r["share_by_components"]
        assert r["reach_by_components"] == "undecided"
        quoted = f"{100 * s['share']:.0f}% ({100 * s['low']:.0f}-{100 * s['high']:.0f}%) at k = {k}"
        assert quoted in record and quoted in docs
        assert f"{r['amer_vs_single_by_components']['p_text']} at k = {k}" in record
        assert r["replicates_by_components"]


def test_the_untrained_decomposition_is_quoted_from_the_record():
    """AMER against the teacher's decomposition, both resampling units, as foldoc.md quotes them; with
    the compounds resampled the interval is narrower than with the components (independent answers:
    the same difference of means, and a conservative interval where components are shared)."""
    import json

    folder = ROOT / "studies" / "foldoc"
    rows = {r["k"]: r for r in json.loads((folder / "replication.json").read_text())["rows"]}
    record = " ".join((folder / "foldoc.md").read_text().split())
    for r in rows.values():
        by_compounds, by_components = r["amer_vs_decomposition"], r["amer_vs_decomposition_by_components"]
        gap = r["amer"]["mean"] - r["teacher_decomposition"]["mean"]
        assert by_compounds["delta"] == pytest.approx(gap) == by_components["delta"]
        assert by_components["low"] < by_compounds["low"] and by_compounds["high"] < by_components["high"]
    two, three = rows[2], rows[3]
    c2, k2, k3 = (
        two["amer_vs_decomposition"],
        two["amer_vs_decomposition_by_components"],
        three["amer_vs_decomposition_by_components"],
    )
    assert f"by {-c2['delta']:.2f} points at k = 2 with the compounds resampled ({c2['delta']:.2f}, " in record
    assert f"{c2['low']:.2f} to {c2['high']:.2f})" in record
    zero = f"holds zero with the components resampled ({k2['low']:.2f} to +{k2['high']:.2f}, p {k2['p_text']})"
    assert zero in record
    assert k2["low"] < 0 < k2["high"] and k3["high"] < 0 and k3["p_holm"] < 0.05 < k2["p_holm"]
    assert f"by {-three['amer_vs_decomposition']['delta']:.2f} at k = 3 under both" in record
    assert f"(with the components, {k3['low']:.2f} to {k3['high']:.2f}, p {k3['p_text']})" in record
