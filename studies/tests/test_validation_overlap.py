"""Issue 70: the compound benchmark's validation-test overlap (`studies/validation_overlap/validation_overlap.py`),
counted on a hand-made synonym case, and the kept steps read from hand-made run files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

from amer_lib.beyond import compound
from amer_lib.beyond.compound import join
from amer_lib.data.questions import MultiAnswerQuestion

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "validation_overlap", ROOT / "studies" / "validation_overlap" / "validation_overlap.py"
)
validation_overlap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(validation_overlap)


def component(word, docs):
    return MultiAnswerQuestion(
        f"senses:{word}", f'What does the word "{word}" mean?', [[d] for d in docs], [[d] for d in docs]
    )


def test_a_validation_component_sharing_a_gloss_with_a_test_one_is_counted_with_its_compounds(monkeypatch):
    """ "automobile" (validation) shares the gloss g1 with "car" (test): one sharing component, in two
    of the three validation compounds of k = 2; "bus" and "tram" share nothing."""
    car, auto, bus, tram, ship = (component(w, d) for w, d in
                                  (("car", ["g1", "g2"]), ("automobile", ["g1"]), ("bus", ["g3"]), ("tram", ["g4"]),
                                   ("ship", ["g5"])))  # fmt: skip
    monkeypatch.setattr(compound, "component_questions", lambda: {q.qid: q for q in (car, auto, bus, tram, ship)})
    splits = {
        ("k2", "test"): [join([car, ship], 0)],
        ("k2", "validation"): [join([auto, bus], 0), join([tram, auto], 1), join([bus, tram], 2)],
    }
    benchmark = SimpleNamespace(datasets=["k2"], questions=lambda d, split: splits[(d, split)])
    found = validation_overlap.overlap(benchmark)
    assert found["k2"] == {"validation_compounds": 3, "validation_components": 3, "sharing_components": 1,
                           "compounds_with_one": 2}  # fmt: skip
    assert found["all"] == {"validation_components": 3, "sharing_components": 1}


def test_kept_steps_reads_each_trained_runs_kept_and_last_step(tmp_path):
    history = [{"step": 100}, {"step": 200}]
    (tmp_path / "k2_amer_seed0.json").write_text(json.dumps({"best_step": 200, "history": history}))
    (tmp_path / "k2_single_seed1.json").write_text(json.dumps({"best_step": 100, "history": history}))
    (tmp_path / "k2_teacher_decomposition.json").write_text(json.dumps({"best_step": None}))  # nothing trained
    assert validation_overlap.kept_steps(tmp_path) == {
        "k2_amer_seed0": {"kept": 200, "last": 200},
        "k2_single_seed1": {"kept": 100, "last": 200},
    }


def test_the_committed_counts_are_the_records_and_the_docs():
    """validation_overlap.json (the script's output on the prepared benchmark and the runs) is what its
    record's table, docs/results.md, studies/README.md and the fair control's record quote."""
    folder = ROOT / "studies" / "validation_overlap"
    result = json.loads((folder / "validation_overlap.json").read_text())
    overlap, runs = result["overlap"], result["runs"]
    one_line = lambda path: " ".join(path.read_text().split())  # noqa: E731
    record = one_line(folder / "validation_overlap.md")
    for k in (1, 2, 3):
        r = overlap[f"compound_k{k}"]
        cells = [
            r[f] for f in ("validation_compounds", "validation_components", "sharing_components", "compounds_with_one")
        ]
        assert f"| compound_k{k} | {' | '.join(map(str, cells))} |" in record
    every = overlap["all"]
    assert f"| all | | {every['validation_components']} | {every['sharing_components']} | |" in record
    for name, recipe in (("fair_control", "compound_fair_control"), ("component_count", "compound_component_count")):
        assert runs[name]["kept_the_last_step"] == runs[name]["trained"]
        assert f"{recipe}.yaml`): {runs[name]['trained']} of its {runs[name]['trained']} trained runs" in record
    assert (runs["fair_control"]["trained"], runs["component_count"]["trained"]) == (30, 10)
    assert all(v["kept"] == v["last"] == 400 for by in result["kept_steps"].values() for v in by.values())
    k2, k3 = overlap["compound_k2"], overlap["compound_k3"]
    assert (
        f"read {k2['compounds_with_one']} of {k2['validation_compounds']} (k = 2) and {k3['compounds_with_one']} of"
        in record
    )
    shares = f"{every['sharing_components']} of its {every['validation_components']} components"
    assert shares in one_line(ROOT / "docs" / "results.md")
    row = f"{shares} share a gloss with a test component (in {k2['compounds_with_one']} / {k3['compounds_with_one']} of"
    assert row in one_line(ROOT / "studies" / "README.md")
    fair = one_line(ROOT / "studies" / "fair_control" / "fair_control.md")
    assert f"{every['sharing_components']} of the {every['validation_components']} validation components share" in fair
