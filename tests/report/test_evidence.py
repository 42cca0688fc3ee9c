"""The rule that chooses which committed figure a verdict quotes (amer_lib.report.evidence), on
hand-made records whose right answer is known, and the verdict its interval gives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from amer_lib.report.evidence import Estimate, Evidence, reach, read_evidence, strongest
from amer_lib.report.significance import detectable_difference

ROOT = Path(__file__).resolve().parents[2]


def record(name, *, held_out=False, same=False, seeds=3, interval="items", share=0.6, low=0.5, high=0.7):
    return Evidence(
        claim="kept_levers",
        name=name,
        short=name,
        record=f"studies/{name}.md",
        held_out=held_out,
        same_supervision=same,
        seeds=seeds,
        interval=interval,
        machine="a CPU",
        shares={2: Estimate(share, low, high)},
        against_decomposition={2: Estimate(-10.0, -15.0, -5.0)},
        p_decomposition={2: "0.0020"},
    )


def test_the_rule_picks_the_held_out_same_supervision_record():
    """Held out beats in-sample however many seeds the in-sample one has; among the held out, the same
    supervision beats unequal; seeds and then the interval's kind break the remaining ties."""
    in_sample_many = record("many seeds", seeds=10, same=True, interval="components")
    held_unequal = record("held out, unequal", held_out=True, seeds=7)
    held_same = record("held out, same", held_out=True, same=True, seeds=3)
    no_interval = record("figures", seeds=20, interval="", low=None, high=None)
    records = [in_sample_many, held_unequal, held_same, no_interval]
    assert strongest(records) is held_same
    assert strongest(records, held_out=False) is in_sample_many
    assert strongest([held_unequal, record("held out, 9 seeds", held_out=True, seeds=9)]).seeds == 9
    items, components = record("items", seeds=5), record("components", seeds=5, interval="components")
    assert strongest([items, components]) is components
    assert strongest([no_interval, record("five seeds", seeds=5, interval="", low=None, high=None)]) is no_interval


def test_a_tie_and_an_empty_choice_are_refused_by_name():
    with pytest.raises(ValueError, match=r"cannot choose between \['a', 'b'\]"):
        strongest([record("a"), record("b")])
    with pytest.raises(ValueError, match="no evidence to choose from"):
        strongest([record("a")], held_out=True)
    with pytest.raises(ValueError, match="interval must be one of"):
        record("a", interval="bootstrap")


def test_the_verdict_is_the_intervals_not_the_point_estimates():
    """A point estimate below the aim with an interval holding it is undecided, not short; met and
    missed need the whole interval on one side; no interval decides nothing."""
    assert reach(Estimate(0.65, 0.49, 0.84), aim=0.75) == "undecided"
    assert reach(Estimate(0.80, 0.76, 0.84), aim=0.75) == "met"
    assert reach(Estimate(0.58, 0.47, 0.70), aim=0.75) == "missed"
    assert reach(Estimate(0.80), aim=0.75) == "undecided"


def test_a_record_written_reads_back_equal(tmp_path):
    original = record("held out", held_out=True)
    original.write(tmp_path / "one.json")
    payload = json.loads((tmp_path / "one.json").read_text()) | {"claim": "another", "name": "x"}
    (tmp_path / "two.json").write_text(json.dumps(payload))
    assert read_evidence(tmp_path, claim="kept_levers") == [original]
    assert [e.name for e in read_evidence(tmp_path)] == ["held out", "x"]


def test_the_committed_records_are_the_studies_records():
    """Each committed record quotes its study's JSON: FOLDOC's and the fair control's component
    intervals, the selection's question intervals."""
    records = {e.short: e for e in read_evidence(ROOT / "studies" / "evidence", claim="kept_levers")}
    foldoc = {r["k"]: r for r in json.loads((ROOT / "studies/foldoc/replication.json").read_text())["rows"]}
    fair = {r["k"]: r for r in json.loads((ROOT / "studies/fair_control/fair_control.json").read_text())["rows"]}
    for short, rows in (("FOLDOC", foldoc), ("WordNet", fair)):
        for k in (2, 3):
            s = rows[k]["share_by_components"]
            assert records[short].shares[k] == Estimate(s["share"], s["low"], s["high"])
            d = rows[k]["amer_vs_decomposition_by_components"]
            assert records[short].against_decomposition[k] == Estimate(d["delta"], d["low"], d["high"])
    assert records["FOLDOC"].held_out and not records["WordNet"].held_out and records["WordNet"].same_supervision
    assert strongest(list(records.values())) is records["FOLDOC"]
    assert strongest(list(records.values()), held_out=False) is records["WordNet"]


def test_the_detectable_difference_has_the_power_it_says():
    """Independent answer: simulated normal estimates with a true difference of the detectable size
    are significant (their 95% interval excludes zero) in about 80% of draws."""
    low, high = -2.0, 2.0
    size = detectable_difference(low, high)
    assert size == pytest.approx((1.959964 + 0.841621) * (high - low) / (2 * 1.959964), rel=1e-5)
    standard_error = (high - low) / (2 * 1.959964)
    draws = np.random.default_rng(0).normal(size, standard_error, 200_000)
    assert np.mean(np.abs(draws) > 1.959964 * standard_error) == pytest.approx(0.80, abs=0.005)
    with pytest.raises(ValueError, match="high end must be above"):
        detectable_difference(1.0, 1.0)
