"""No page quotes a p-value finer than a bootstrap can resolve (issue 79): with 10,000 resamples
the least one-sided p is 1 / 10,001, which the pages write "≤ 0.0001" (`significance.p_text`);
"< 0.0001" or "p = 0.0000" claims a resolution no resample gave."""

import re
import subprocess

from conftest import ROOT

BELOW_THE_FLOOR = re.compile(r"(?<![≤\d])< ?0\.000\d|\bp ?= ?0\.0000\b")


def test_no_committed_page_quotes_a_p_below_the_bootstraps_floor():
    pages = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True)
    found = [
        f"{name}:{number}: {line.strip()}"
        for name in pages.stdout.split()
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1)
        if BELOW_THE_FLOOR.search(line)
    ]
    assert found == []


def test_the_pattern_finds_what_it_is_for():
    assert BELOW_THE_FLOOR.search("p = 0.0003 and < 0.0001)") and BELOW_THE_FLOOR.search("p = 0.0000")
    assert not BELOW_THE_FLOOR.search("p ≤ 0.0001") and not BELOW_THE_FLOOR.search("p = 0.0012")
