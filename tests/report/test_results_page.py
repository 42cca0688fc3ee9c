"""figures/RESULTS.md and the README's verdict table are what `python -m amer_lib.report.results_page`
writes from the committed figures; the README stays a front door that points only at what exists."""

import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from amer_lib.report.results_page import readme_with_verdicts, results_page


def test_the_command_as_typed_writes_the_committed_results_page_and_verdicts(tmp_path):
    shutil.copytree(ROOT / "figures", tmp_path / "figures")
    shutil.copytree(ROOT / "studies" / "evidence", tmp_path / "studies" / "evidence")  # the studies' records
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text())
    run = subprocess.run([sys.executable, "-m", "amer_lib.report.results_page"], cwd=tmp_path, capture_output=True)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert (tmp_path / "figures" / "RESULTS.md").read_text() == (ROOT / "figures" / "RESULTS.md").read_text()
    assert (tmp_path / "README.md").read_text() == (ROOT / "README.md").read_text()


def test_the_pages_are_read_from_the_figures_they_name():
    readme = (ROOT / "README.md").read_text()
    assert results_page(ROOT / "figures") == (ROOT / "figures" / "RESULTS.md").read_text()
    assert readme_with_verdicts(readme, ROOT / "figures") == readme
    import csv

    with open(ROOT / "figures" / "04_real_data" / "table2.csv", newline="") as f:
        (amer,) = [row for row in csv.DictReader(f) if row["System"] == "AMER"]
    gains = [value for name, value in amer.items() if name != "System"]
    assert len(gains) == 4 and " / ".join(gains) in readme  # Table 2's AMER row, as the verdict quotes it


def verdict_rows(readme: str) -> list[list[str]]:
    """The cells of the README's verdict table, row by row (the header and its rule left out)."""
    block = readme[readme.index("<!-- begin verdicts") : readme.index("<!-- end verdicts -->")]
    lines = [line for line in block.splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def words(cell: str) -> int:
    """The words a reader sees in a cell: a link counts by its text, not its address; a token of
    punctuation alone (/, →, =, <) is not a word."""
    shown = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell)
    return sum(any(ch.isalnum() for ch in token) for token in shown.split())


def test_words_count_what_a_reader_sees():
    assert words("k = 1 / 2 / 3: AMER 82.94") == 6
    assert words("[Off-the-shelf retrievers (Figure 1)](figures/RESULTS.md#off-the-shelf-retrievers-figure-1)") == 4
    assert words("56.7% → 2.0%; p < 0.05") == 4


def test_every_cell_of_the_verdict_table_is_short():
    """One claim, the paper's number and ours per cell: at most 20 words each (stds, marks, legends and
    shares are on the results page)."""
    rows = verdict_rows((ROOT / "README.md").read_text())
    from amer_lib.report.results_page import CLAIMS

    assert len(rows) == len(CLAIMS) and all(len(row) == 5 for row in rows)
    long = [(cell, words(cell)) for row in rows for cell in row if words(cell) > 20]
    assert not long, long
    assert not any("±" in cell for row in rows for cell in row)  # the stds are on the results page


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading, written out: lower case; punctuation dropped (letters, digits,
    spaces, hyphens and underscores kept); every space a hyphen."""
    kept = "".join(ch for ch in heading.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def test_each_verdict_row_links_its_section_of_the_results_page():
    """Each row's claim links figures/RESULTS.md at the anchor of a heading there that is the claim,
    once on the page; the section holds the claim's numbers in full (stds, marks, legend)."""
    from amer_lib.report.results_page import anchor

    assert anchor("A question's targets are closer than random documents (Figure 6)") == (
        "a-questions-targets-are-closer-than-random-documents-figure-6"
    )
    assert anchor("Beyond the paper: AMER, fresh compounds") == "beyond-the-paper-amer-fresh-compounds"
    page = (ROOT / "figures" / "RESULTS.md").read_text()
    headings = [line.lstrip("#").strip() for line in page.splitlines() if line.startswith("#")]
    anchors = [github_anchor(h) for h in headings]
    from amer_lib.report.results_page import CLAIMS

    sections = {}
    for [claim, *_] in verdict_rows((ROOT / "README.md").read_text()):
        text, target = re.fullmatch(r"\[(.+)\]\((.+)\)", claim).groups()
        path, fragment = target.split("#")
        assert path == "figures/RESULTS.md" and anchors.count(fragment) == 1, claim
        assert headings[anchors.index(fragment)] == text
        start = page.index(f"### {text}\n")
        sections[text] = page[start : page.index("\n#", start + 1)]
    assert len(sections) == len(CLAIMS)
    compound = next(body for text, body in sections.items() if "spread as a dial" in text)
    assert "26.78±1.99" in compound and "43.39±1.59*" in compound and "Holm-corrected" in compound
    kept = next(body for text, body in sections.items() if "kept levers" in text)
    assert "69% (off-the-shelf encoder) / 56% (trained oracle) at k = 2 / 3 (3 seeds' means, no interval)" in kept
    assert "strongest first by the rule (held out and frozen before in-sample;" in kept
    assert kept.index("FOLDOC, the recipe frozen") < kept.index("WordNet's fair control") < kept.index("seven seeds")
    assert "the seven seeds ran on one borrowed H200 with the offline models" in kept
    single = next(body for text, body in sections.items() if "linear map" in text)
    assert "the authors' code's 3-weight MLP: 0.0 / 0.0 / 0.0% at d = 128 / 512 / 1024" in single


def test_the_prose_under_the_verdicts_says_what_the_files_say():
    """Where AMER stands against single-query on the compound questions is the oracle table's marks (k = 1
    behind, k = 2 and 3 ahead), in the README and in docs/results.md's verdicts in words; the seven GPU
    seeds are the selection's (its shares and intervals: studies/tests/test_lever_study.py)."""
    import csv
    import json

    from amer_lib.beyond.compound_results import COMPOUND
    from amer_lib.report.significance import AHEAD, BEHIND

    with open(ROOT / "figures" / COMPOUND, newline="") as f:
        marks = [row["MRecall@100"][-1] for row in csv.DictReader(f) if row["System"] == "AMER"]
    assert marks == [BEHIND, AHEAD, AHEAD]
    standing = "AMER is behind single-query with one group of targets and ahead with two and three"
    results = (ROOT / "docs" / "results.md").read_text()
    assert standing in " ".join(results[results.index("## What reproduces, in words") :].split())
    selection = json.loads((ROOT / "studies" / "compound_levers" / "selection.json").read_text())
    assert all(row["seeds"] == list(range(7)) for row in selection["headline"]["rows"])
    readme = (ROOT / "README.md").read_text()
    under = readme[readme.index("<!-- end verdicts -->") : readme.index("## Start here")]
    assert "GPU" not in under and not re.search(r"\d%", under)  # no figure of the table said again
    assert len(re.findall(r"\. ", " ".join(under.split()))) + 1 <= 3  # three sentences at most


def test_the_readme_is_short_and_every_file_it_names_exists():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    under = readme[readme.index("<!-- end verdicts -->") : readme.index("\n## ", readme.index("<!-- end verdicts"))]
    assert 0 < len([line for line in under.splitlines()[1:] if line.strip()]) <= 6  # the prose under the table
    named = set(re.findall(r"\(((?:figures|docs)/[^)\s]+\.(?:png|md))\)", readme))
    named |= set(re.findall(r"`((?:docs|figures|benchmarks|tests/fixtures)/[^`\s*<>]+)`", readme))
    assert len(named) >= 8
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing, missing


def test_the_readmes_gpu_costs_are_the_cost_tables():
    """The costs the README's recipe and docs/usage.md's notebooks quote are rows of docs/paper_scale.md's
    table (whose arithmetic is there)."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    usage = " ".join((ROOT / "docs" / "usage.md").read_text().split())
    table = (ROOT / "docs" / "paper_scale.md").read_text()
    assert "corpus encoded in 2.1 h on four GPUs" in readme and "8.3 h on one GPU, 2.1 h on four" in table
    assert "4.7 h for AmbigQA and 7.6 h for QAMPARI" in readme and "Llama-8B AmbigQA 4.7 h, QAMPARI 7.6 h" in table
    assert "12 runs *projected* at 20-30 minutes on an H100" in usage and "12 runs x 300 steps x 0.17 s" in table
    assert "about 15 min" in table and "about 20-30 min in all" in table  # at the compute; with the launch term
    launches = "(7.3-12.3 h and 10.2-16.6 h if kernel launches bound"
    assert launches in readme and "AmbigQA 3 x 1.7-3.3 h + 3 x 47 min = 7.3-12.3 h" in table
    assert "QAMPARI 3 x 2.1-4.3 h + 3 x 1.3 h = 10.2-16.6 h" in table


def test_every_committed_table_and_image_is_shown_with_a_caption():
    from amer_lib.report.results_page import SECTIONS, shown_files

    figures = ROOT / "figures"
    committed = {str(p.relative_to(figures)) for p in figures.glob("*/*") if p.suffix in (".md", ".png")}
    assert shown_files() == committed
    page = (ROOT / "figures" / "RESULTS.md").read_text()
    for _, _, images in SECTIONS:
        for image, caption in images:
            assert f"![{caption}]({image})" in page
    captions = [caption for _, _, images in SECTIONS for _, caption in images]
    assert len(set(captions)) == len(captions)  # no image under another's caption


def test_each_verdict_follows_the_numbers_not_a_fixed_string():
    """Hand-made rows against the rules: significant gains everywhere, none, some; Table 3 in two
    of four columns; targets farther than random pairs."""
    from amer_lib.report.results_page import _verdict_gains, _verdict_similarity, _verdict_table3

    row = lambda system, *cells: {"System": system, **{f"c{i}": c for i, c in enumerate(cells)}}
    summary = [
        {"system": "single", "dataset": "d", "label": None, "whole_mean": 50.0, "low_sim_mean": 10.0},
        {"system": "amer", "dataset": "d", "label": None, "whole_difference": -1.0, "whole_low": -2.96,
         "whole_high": 0.96, "low_sim_difference": 0.0, "low_sim_low": -1.0, "low_sim_high": 1.0},
    ]  # fmt: skip
    assert _verdict_gains([row("AMER", "+4.18%*", "+4.97%*")], summary).startswith("reproduces offline")
    # intervals 3.92 and 2 points wide: 2.80 and 1.43 points detectable; the paper's gains on 50 and 10
    # points: AmbigQA 2.09 (above the whole set's upper end, 0.96) and 0.50 (below low_sim's, 1.00), QAMPARI
    # 10.68 and 14.47
    assert _verdict_gains([row("AMER", "-1.97%", "-5.26%*")], summary) == (
        "no gain detected; detects ≥ 1.43-2.80 points at 80% power; AmbigQA-sized (0.50-2.09 here) excluded in 1, "
        "QAMPARI-sized (10.68-14.47 here) excluded"
    )
    assert _verdict_gains([row("AMER", "+1.00%*", "+2.00%")], summary).startswith(
        "partly: ahead (significant) in 1 of 2"
    )
    per_backbone = [
        {"system": "amer", "dataset": "d", "label": label, "whole_mean": 50.0, "whole_delta": 0.0,
         "whole_low": -w, "whole_high": w, "whole_difference": 0.0, "low_sim_mean": 10.0, "low_sim_delta": 0.0,
         "low_sim_low": -1.0, "low_sim_high": 1.0, "low_sim_difference": 0.0}
        for label, w in (("AMER (scheduled sampling)", 1.96), ("AMER (always predicted)", 3.92))
    ]  # fmt: skip
    # the wider interval (7.84 points) stands for the difference's: 5.60 points; low_sim 1.43
    assert _verdict_table3([], per_backbone).startswith("undecided (one seed); detects ≥ 1.43-5.60 points")
    farther = [{"data": "x", "source": "real", "same_question_cos": "0.1", "random_pair_cos": "0.2"}]
    assert _verdict_similarity(farther) == "does not reproduce"


def test_the_single_query_verdict_reads_every_d_and_depth_of_the_mlp_sweep():
    """Hand-made rows: notebook 02's single-query at 0% on Linear; the sweep's 2-layer MLP above the
    paper's 21% at some d or every d, its 3-weight MLP below it everywhere; Figure 1's verdict names
    the retrievers that ran."""
    from amer_lib.report.results_page import (
        _single_query,
        _single_query_short,
        _verdict_failure,
        _verdict_single_query,
        _verdict_single_query_short,
    )

    results = [{"transform": t, "system": "single", "mrecall@10": v} for t, v in (("linear", 0.0), ("mlp", 0.87))]

    def sweep(two: dict[str, float]) -> list[dict]:
        cells = [("2", d, v) for d, v in two.items()] + [("3", d, 0.0) for d in two]
        rows = [
            {"d": d, "depth": depth, "training data": "MLP targets", "system": "single", "mrecall@10": v}
            for depth, d, v in cells
        ]
        return rows + [{"d": "128", "depth": "2", "training data": "MLP targets", "system": "amer", "mrecall@10": 1}]

    every = sweep({"128": 87.0, "512": 99.9, "1024": 99.8})
    assert _verdict_single_query(results, every) == (
        "reproduces for linear targets; not for the paper's 2-layer MLP targets at d = 128 / 512 / 1024 "
        "(every d the sweep ran); the authors' code's 3-weight MLP: at most 21% at every d the sweep ran"
    )
    assert "the paper's 2-layer MLP: 87.0 / 99.9 / 99.8% at d = 128 / 512 / 1024" in _single_query(results, every)
    some = _verdict_single_query(results, sweep({"128": 15.0, "512": 40.0}))
    assert "not for the paper's 2-layer MLP targets at d = 512;" in some and "every d" not in some.split(";")[1]
    # the README's cells: the paper's depth over notebook 02's MLP settings and the sweep's d, and the
    # authors' code's 3-weight MLP beside it (0.0% at every d here)
    assert _single_query_short(results, every) == (
        "Linear at most 0.0%; the paper's 2-layer MLP 87.0-99.9%, the authors' 3-weight MLP 0.0% (d = 128, 512, 1024)"
    )
    assert _verdict_single_query_short(results, every) == (
        "reproduces for linear targets; not for the paper's 2-layer MLP at d = 128 / 512 / 1024, every d swept"
    )
    low = [{"transform": "mlp", "system": "single", "mrecall@10": 0.05}] + results[:1]
    assert _single_query_short(low, sweep({"128": 15.0, "512": 40.0})) == (
        "Linear at most 0.0%; the paper's 2-layer MLP 5.0-40.0%, the authors' 3-weight MLP 0.0% (d = 128, 512)"
    )
    assert _verdict_single_query_short(results, sweep({"128": 15.0, "512": 40.0})) == (
        "reproduces for linear targets; not for the paper's 2-layer MLP at d = 512"
    )
    assert _verdict_single_query_short(results, sweep({"128": 15.0})) == (
        "reproduces for linear and the paper's 2-layer MLP targets"
    )
    failing = [{"transform": "linear", "system": "single", "mrecall@10": 0.5}, *results[1:]]
    assert _verdict_single_query_short(failing, every) == "does not reproduce"
    trends = [
        {"dataset": d, "retriever": r, "nearest": "50", "farthest": "5"}
        for d in ("senses", "kinds")
        for r in ("minilm", "bm25")
    ]
    assert (
        _verdict_failure(trends)
        == "reproduces for the 2 retrievers run offline (MiniLM, BM25; not the paper's four), 2 datasets"
    )


def test_the_provenance_table_names_the_one_commit_or_warns_of_several(tmp_path):
    import json

    from amer_lib.report.results_page import provenance_table

    def made(folder, commit, seconds):
        (tmp_path / folder).mkdir()
        provenance = {
            "commit": commit,
            "command": "make figures",
            "torch_threads": 1,
            "cpu": "Xeon",
            "wall_seconds": seconds,
        }
        provenance["kernels"] = {"torch": "AVX2", "faiss": "AVX2"}
        (tmp_path / folder / "provenance.json").write_text(json.dumps(provenance))

    made("02_synthetic", "abc", 1530.0)
    made("01_failure_analysis", "abc", None)
    table = provenance_table(tmp_path)
    assert table.startswith("Every folder was made by the code at commit `abc`, on Xeon:")
    assert table.splitlines()[4:6] == [
        "| `01_failure_analysis` | `abc` | Xeon | `make figures` | torch AVX2, FAISS AVX2 | 1 |  |",
        "| `02_synthetic` | `abc` | Xeon | `make figures` | torch AVX2, FAISS AVX2 | 1 | 25.5 |",
    ]
    assert table.splitlines()[6:] == [
        "",
        "The commit is the code that wrote each folder and *minutes* the folder's own execution time. Notebook 04 "
        "reads back the runs it finds made with the same parameters instead of training them again.",
    ]
    made("04_real_data_compound", "abc", 90.0)  # made again at another commit: its own runs
    assert provenance_table(tmp_path).splitlines()[-1].endswith("instead of training them again.")
    made_at_64fbe73 = "64fbe733491186de665d8a266aada46cb260825d"
    made("04_real_data_compound_distilled", made_at_64fbe73, 90.0)  # its runs read back, trained at 7a7df97
    assert "| `04_real_data_compound_distilled` | `64fbe73` | Xeon |" in provenance_table(tmp_path)
    assert (
        provenance_table(tmp_path)
        .splitlines()[-1]
        .endswith(
            "instead of training them again: `04_real_data_compound_distilled` read back runs trained at 7a7df97 "
            "(the Makefile's `figures-compound` comment; `studies/compound_levers/compound_levers.md`)."
        )
    )
    made("07_beyond", "def", 60.0)
    assert provenance_table(tmp_path).startswith(
        f"**The folders were made at 3 different commits** ({made_at_64fbe73}, abc, def):"
    )
    (tmp_path / "02_synthetic_mlp_sweep").mkdir()  # a folder committed before provenance was kept
    table = provenance_table(tmp_path)
    assert table.startswith(
        "**1 folder(s) hold no `provenance.json`** (02_synthetic_mlp_sweep); the others were made at commit(s) "
        f"`{made_at_64fbe73}`, `abc`, `def`:"
    )
    assert "| `02_synthetic_mlp_sweep` | not recorded (made before provenance was kept) | | | | | |" in table


def test_a_missing_folder_stops_the_page_with_the_target_that_makes_it(tmp_path, monkeypatch, capsys):
    """Regenerating from an empty figures/: `make figures` ends before the compound and sweep
    folders exist, so the page is not rewritten, and says which target makes what is missing."""
    import shutil

    import amer_lib.report.results_page as page

    figures = tmp_path / "figures"
    shutil.copytree(page.FIGURES, figures)
    shutil.rmtree(figures / "04_real_data_compound")
    monkeypatch.setattr(page, "FIGURES", figures)
    before = (figures / "RESULTS.md").read_text()
    page.main(["--if-complete"])
    assert "04_real_data_compound missing; make figures-compound make them" in capsys.readouterr().err
    assert (figures / "RESULTS.md").read_text() == before
    with pytest.raises(SystemExit, match="04_real_data_compound missing"):
        page.main([])


def test_the_synthetic_amer_cell_gives_one_number_when_every_setting_has_it():
    from amer_lib.report.results_page import _amer_synthetic

    def rows(values):
        settings = [(t, s) for t in ("linear", "mlp") for s in ("id", "ood", "multi")]
        return [
            {"transform": t, "setting": s, "system": "amer", "mrecall@10": v} for (t, s), v in zip(settings, values)
        ]

    assert _amer_synthetic(rows([1.0] * 6)) == "100.0% MRecall@10 in all six settings"
    assert _amer_synthetic(rows([1.0] * 5 + [0.999])) == "99.9-100.0% MRecall@10 in the six settings"


def test_the_oracle_share_table_sets_todays_recipe_beside_the_kept_levers(tmp_path):
    """Hand-made compound oracle tables: the rows per k, the shares, the verdict against the aim;
    single-query at k >= 2 may differ (fresh compounds train it too), but tables that disagree on
    the oracle or on single-query at k = 1 (the same runs in both) are refused by name."""
    import csv

    from amer_lib.beyond.compound_results import (
        CEILING_SHARE,
        COMPOUND,
        COMPOUND_DISTILLED,
        SHARE,
        _figures_shares,
        oracle_share_table,
    )

    def write(name, amer, shares, single="26.78±1.99", single_k1="88.33", oracle="58.94"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = []
        for k, value, share in zip(("1", "2"), amer, shares):
            rows += [
                {"k": k, "System": "Single-Query", "MRecall@100": single_k1 if k == "1" else single, SHARE: ""},
                {"k": k, "System": "AMER", "MRecall@100": value, SHARE: share},
                {"k": k, "System": "Decomposition oracle", "MRecall@100": "88.33" if k == "1" else oracle, SHARE: ""},
            ]
        save(path, rows)
        return rows

    def save(path, rows):
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)

    write(COMPOUND, ["83.06", "41.94*"], ["", "47%"])
    kept = write(COMPOUND_DISTILLED, ["87.00", "53.00*"], ["", "81%"], single="28.00±1.00")
    table = oracle_share_table(tmp_path).splitlines()
    assert table[2:] == [
        "| 1 | 88.33 | 83.06 | 88.33 | 87.00 | 88.33 | - | - |",
        "| 2 | 26.78±1.99 | 41.94* | 28.00±1.00 | 53.00* | 58.94 | 47% | 81% |",
    ]
    # the figures' own runs: the better decomposition's share at the k's with an aim, of how many seeds'
    # means (the folder's per-seed table: two seeds of AMER here); a table without the share is refused
    seeds = [{"system": system, "seed": seed} for system in ("single", "amer") for seed in ("0", "1")]
    with pytest.raises(ValueError, match="without the column .*make figures-compound"):
        _figures_shares(kept, seeds)
    ceiling = [{**row, CEILING_SHARE: "", "better ceiling": ""} for row in kept]
    ceiling[4] |= {CEILING_SHARE: "67%", "better ceiling": "off-the-shelf encoder"}
    three = ceiling + [{**ceiling[4], "k": "3", CEILING_SHARE: "49%", "better ceiling": "trained oracle"}]
    assert _figures_shares(three, seeds) == (
        "67% (off-the-shelf encoder) / 49% (trained oracle) at k = 2 / 3 (2 seeds' means, no interval)"
    )
    # rows matched by k and system, values without their marks: one table holds the teacher's
    # decomposition, and each marks the oracle against its own single-query
    newer = write(COMPOUND, ["83.06", "41.94*"], ["", "47%"])
    newer.insert(2, {"k": "1", "System": "Decomposition, off-the-shelf encoder", "MRecall@100": "100.00*", SHARE: ""})
    newer[6] |= {"MRecall@100": "58.94*"}  # the oracle at k = 2, marked in this table only
    save(tmp_path / COMPOUND, newer)
    assert oracle_share_table(tmp_path).splitlines()[2:] == [table[2], table[3].replace("58.94 |", "58.94* |")]
    write(COMPOUND_DISTILLED, ["87.00", "53.00*"], ["", "81%"], oracle="60.00")
    with pytest.raises(ValueError, match="disagree on Decomposition oracle at k = 2"):
        oracle_share_table(tmp_path)
    write(COMPOUND_DISTILLED, ["87.00", "53.00*"], ["", "81%"], single_k1="88.00")
    with pytest.raises(ValueError, match="disagree on Single-Query at k = 1"):
        oracle_share_table(tmp_path)


def test_the_compound_claim_says_what_its_table_marks_mean():
    """A table made since the teacher's decomposition (it has the better ceiling's share) marks
    ahead and behind after Holm's correction, and the claim says so; an earlier one is refused."""
    from amer_lib.beyond.compound_results import CEILING_SHARE, _compound, _compound_short, _verdict_compound_short

    rows = [
        {"System": "Single-Query", "k": "1", "MRecall@100": "88.33±0.41"},
        {"System": "AMER", "k": "1", "MRecall@100": "83.17±0.36†"},
    ]
    with pytest.raises(ValueError, match="made before the teacher's decomposition and Holm's marks"):
        _compound(rows)
    rows = [{**row, CEILING_SHARE: ""} for row in rows]
    assert _compound(rows) == (
        "compound questions (not the paper's data), MRecall@100 at k = 1: Single-Query 88.33±0.41; AMER 83.17±0.36† "
        "(* / † ahead of / behind Single-Query, two-sided p < 0.05 Holm-corrected across the table's comparisons, "
        "over seeds and questions; ± the population std over seeds)"
    )
    # the README's cells: no std, no mark; where AMER stands, k by k, as the marks say
    rows += [
        {"System": "Single-Query", "k": "2", "MRecall@100": "26.78±1.99", CEILING_SHARE: ""},
        {"System": "AMER", "k": "2", "MRecall@100": "43.39±1.59*", CEILING_SHARE: "52%"},
        {"System": "Single-Query", "k": "3", "MRecall@100": "4.61±0.31", CEILING_SHARE: ""},
        {"System": "AMER", "k": "3", "MRecall@100": "5.00±2.39", CEILING_SHARE: "5%"},
        {"System": "Decomposition oracle", "k": "3", "MRecall@100": "40.17±1.52*", CEILING_SHARE: ""},
    ]
    assert _compound_short(rows) == (
        "k = 1 / 2 / 3: AMER 83.17 / 43.39 / 5.00, single-query 88.33 / 26.78 / 4.61 (MRecall@100, compound questions)"
    )
    assert _verdict_compound_short(rows) == (
        "AMER behind at k = 1, ahead at k = 2, level at k = 3 (Holm p < 0.05); not the paper's data"
    )
    with pytest.raises(ValueError, match="made before the teacher's decomposition"):
        _verdict_compound_short([{key: value for key, value in row.items() if key != CEILING_SHARE} for row in rows])
