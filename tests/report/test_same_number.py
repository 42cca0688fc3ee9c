"""One quantity, one figure: the numbers the verdicts quote read the same in README.md, figures/RESULTS.md
and docs/results.md, each rendered here from the committed file it comes from."""

from __future__ import annotations

import json
from pathlib import Path

from amer_lib.report.evidence import read_evidence, strongest

ROOT = Path(__file__).resolve().parents[2]
PAGES = {
    name: " ".join((ROOT / path).read_text().split())
    for name, path in (("README", "README.md"), ("RESULTS", "figures/RESULTS.md"), ("docs", "docs/results.md"))
}


def quoted_everywhere(text: str) -> list[str]:
    """The pages that lack `text` (none, where it is quoted in all three)."""
    return [name for name, page in PAGES.items() if text not in page]


def test_the_chosen_studies_shares_and_decomposition_gaps_read_the_same_everywhere():
    records = read_evidence(ROOT / "studies" / "evidence", claim="kept_levers")
    chosen, in_sample = strongest(records), strongest(records, held_out=False)
    assert chosen is not in_sample
    for evidence in (chosen, in_sample):
        shares = " / ".join(evidence.shares[k].percent() for k in (2, 3))
        assert not quoted_everywhere(shares), (evidence.name, shares)
        for k in (2, 3):
            gap = evidence.against_decomposition[k]
            assert gap.points(compact=True) in PAGES["README"]
            missing = [name for name in ("RESULTS", "docs") if gap.points() not in PAGES[name]]
            assert not missing, (evidence.name, k, gap.points(), missing)


def test_table_2s_detectable_difference_reads_the_same_everywhere():
    from amer_lib.report.results_page import PAPER_GAINS, _power, _span

    summary = json.loads((ROOT / "figures/04_real_data/summary_minilm_wordnet_senses+wordnet_kinds.json").read_text())
    cells = _power(summary, None, PAPER_GAINS)
    assert len(cells) == 4
    detectable = _span(c["detectable"] for c in cells)
    assert not quoted_everywhere(f"{detectable} points at 80% power"), detectable
    for name in ("AmbigQA", "QAMPARI"):
        sized = _span(c["paper"][name] for c in cells)
        assert not quoted_everywhere(sized), (name, sized)
    assert all(c["excluded"]["QAMPARI"] for c in cells) and not any(c["excluded"]["AmbigQA"] for c in cells)
