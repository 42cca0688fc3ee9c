"""Which committed figure a verdict quotes, chosen by a written rule, and the verdict its interval gives.

A claim may be measured by several committed studies: the figures' own runs, a study with more
seeds, one where every system had the same supervision, a replication whose recipe was frozen
before its data existed. Each writes an `Evidence` record (`Evidence.write`), and the results page
quotes the strongest by `RULE`, in order:

1. held out and frozen (the recipe committed before its test data existed) before in-sample;
2. the same supervision for every compared system before unequal supervision;
3. more seeds before fewer;
4. an interval that resamples what the test set was built from (its components) before one over
   the test items alone, and either before none.

The verdict is decided by the chosen figure's interval against the aim (`reach`): met when the
lower end reaches it, missed when the upper end is below it, undecided otherwise; a figure without
an interval decides nothing.

    records = read_evidence(Path("studies/evidence"), claim="kept_levers")
    chosen = strongest(records)
    reach(chosen.shares[2], aim=0.75)  # "met", "missed" or "undecided"
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from amer_lib.io import write_json

EVIDENCE = Path("studies") / "evidence"  # the command runs from the repository root, as every command shown does

RULE = (
    "held out and frozen before in-sample; the same supervision before unequal; more seeds before fewer; "
    "an interval over the test set's components before one over its items, and either before none"
)
INTERVALS = ("", "items", "components")  # weakest first: none, the test items resampled, their components


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% interval (`low`, `high`; None where the record has none)."""

    value: float
    low: float | None = None
    high: float | None = None

    @classmethod
    def of(cls, record: dict, value: str) -> Estimate:
        """The estimate a study's record holds as `{value: ..., "low": ..., "high": ...}`."""
        return cls(value=record[value], low=record["low"], high=record["high"])

    def percent(self) -> str:
        """`65% (49-84%)`, or `65%` without an interval."""
        interval = "" if self.low is None else f" ({100 * self.low:.0f}-{100 * self.high:.0f}%)"
        return f"{100 * self.value:.0f}%{interval}"

    def points(self, compact: bool = False) -> str:
        """`-13.30 (-21.25 to -5.33)` (`compact`: `-13.30 (-21.25,-5.33)`), or `-13.30` without an interval."""
        joint = "," if compact else " to "
        interval = "" if self.low is None else f" ({self.low:+.2f}{joint}{self.high:+.2f})"
        return f"{self.value:+.2f}{interval}"


@dataclass(frozen=True)
class Evidence:
    """One committed measurement of a claim, per k: AMER's share of a reference's lead over
    single-query (`shares`) and AMER minus the untrained decomposition (`against_decomposition`, in
    points, with its corrected two-sided p in `p_decomposition`)."""

    claim: str  # the claim it measures, a key of the results page's rows
    name: str  # what was run, in a few words ("FOLDOC, the recipe frozen before its data")
    short: str  # its name in a table's cell ("FOLDOC")
    record: str  # the committed file that says everything about it, from the repository root
    held_out: bool  # the recipe was committed before its test data existed, and the test read once
    same_supervision: bool  # every compared system was trained with the same supervision
    seeds: int
    interval: str  # INTERVALS: what the interval resamples
    machine: str  # where it ran ("2-core AMD EPYC", "one H200, the offline models")
    shares: dict[int, Estimate] = field(default_factory=dict)
    against_decomposition: dict[int, Estimate] = field(default_factory=dict)
    p_decomposition: dict[int, str] = field(default_factory=dict)

    def __post_init__(self):
        if self.interval not in INTERVALS:
            raise ValueError(f"interval must be one of {INTERVALS}, got {self.interval!r}")
        if self.seeds < 1:
            raise ValueError(f"seeds must be at least 1, got {self.seeds}")

    def write(self, path: str | Path) -> None:
        """The record as JSON at `path`, written atomically."""
        write_json(path, asdict(self))

    @classmethod
    def read(cls, path: str | Path) -> Evidence:
        payload = json.loads(Path(path).read_text())
        estimates = {key: {int(k): Estimate(**v) for k, v in payload.pop(key).items()} for key in ESTIMATES}
        p = {int(k): v for k, v in payload.pop("p_decomposition").items()}
        return cls(**payload, **estimates, p_decomposition=p)

    def significant(self, k: int, alpha: float = 0.05) -> bool:
        """Whether AMER minus the decomposition at `k` is significant: its corrected p below `alpha`, a
        p printed at the bootstrap's floor ("≤ 0.0004") read as that bound."""
        return float(self.p_decomposition[k].removeprefix("≤ ")) < alpha


ESTIMATES = ("shares", "against_decomposition")  # the fields of Estimates by k, read back from JSON


def rank(evidence: Evidence) -> tuple:
    """The evidence's place under `RULE`: a larger tuple is stronger."""
    return (evidence.held_out, evidence.same_supervision, evidence.seeds, INTERVALS.index(evidence.interval))


def strongest(records: list[Evidence], held_out: bool | None = None) -> Evidence:
    """The strongest record under `RULE` (of those `held_out` or not, when given); a tie is refused by
    name, since the rule would not have chosen."""
    candidates = [e for e in records if held_out is None or e.held_out == held_out]
    if not candidates:
        raise ValueError(f"no evidence to choose from (held_out={held_out}) among {[e.name for e in records]}")
    best = max(candidates, key=rank)
    tied = [e.name for e in candidates if rank(e) == rank(best)]
    if len(tied) > 1:
        raise ValueError(f"the rule ({RULE}) cannot choose between {tied}")
    return best


def reach(estimate: Estimate, aim: float) -> str:
    """Met when the interval's lower end reaches `aim`, missed when its upper end is below it,
    undecided otherwise; without an interval, undecided."""
    if estimate.low is None:
        return "undecided"
    return "met" if estimate.low >= aim else "missed" if estimate.high < aim else "undecided"


def read_evidence(folder: Path = EVIDENCE, claim: str | None = None) -> list[Evidence]:
    """Every record in `folder` (`*.json`), of `claim` where given, in name order."""
    records = [Evidence.read(path) for path in sorted(Path(folder).glob("*.json"))]
    return [e for e in records if claim is None or e.claim == claim]
