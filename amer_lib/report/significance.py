"""Comparing systems over seeds and questions: a hierarchical paired bootstrap, a share of a
ceiling's lead with its interval, and p-values corrected across a table's comparisons.

Scores are arrays `[seeds, questions]`: one row per training seed, one column per test question,
the same questions in every row and in every system. Two systems with the same number of rows
are paired seed by seed (row i of each comes from seed i); a system with one row (a seed-free
system such as an off-the-shelf encoder, or a seed average) is broadcast against every row of the
other. Each bootstrap resample draws the seed rows with replacement, then the question columns
with replacement (one draw of columns shared by the drawn rows), the same draws for every system,
and takes the statistic of the resampled means. Resampling seeds as well as questions puts the
spread between training runs into the p-values and intervals; with one row it is the plain
bootstrap over questions.

Where test questions share their parts (compounds built from a pool of component questions, each
component in many compounds), the questions are not independent draws, and `clusters` (for each
question, the components it is made of) makes the bootstrap draw the components instead: each
resample gives every component a multiplicity (a bootstrap of the components) and every question
the product of its components' multiplicities as its weight, the product weights of Owen and
Eckles (2012, "Bootstrapping data arrays of arbitrary order") for items indexed by several draws
from one population. A question whose components are each its own is the plain bootstrap again.
Like theirs, the interval is conservative: where the questions' scores share nothing through their
components (noise of each question's own), it is about sqrt(2^k - 1) times too wide for questions
of k components (1.7 at k = 2, 2.6 at k = 3); where the components carry the variation, it covers as
it says (both measured in tests/report/test_significance.py). The plain bootstrap errs the other
way, too narrow wherever components are shared.

    comparison = compare(single, amer)  # [3, 600] each
    comparison.p, comparison.low, comparison.high
    compare(single, amer, clusters=[("dog", "cat"), ("dog", "oak"), ...])  # one tuple per question
    marks([compare(single, s) for s in systems])  # "*" ahead, "†" behind, "" neither (Holm)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

AHEAD, BEHIND = "*", "†"  # the marks of a difference significant after correction
CHUNK = 1_000  # resamples gathered at a time: memory stays at CHUNK x seeds x questions floats


@dataclass(frozen=True)
class Comparison:
    """`system` against `baseline`: the difference of the means (system - baseline), the share of
    resampled differences at or below 0 (`p_ahead`: the evidence that the system is ahead) and at
    or above 0 (`p_behind`), the two-sided p = min(1, 2 min(p_ahead, p_behind)) and the 95%
    percentile interval [low, high] of the difference."""

    delta: float
    p_ahead: float
    p_behind: float
    p: float
    low: float
    high: float
    seeds: int
    n_resamples: int


@dataclass(frozen=True)
class Share:
    """(mean system - mean single) / (mean ceiling - mean single) and its 95% percentile
    interval [low, high]."""

    share: float
    low: float
    high: float
    seeds: int
    n_resamples: int


def _paired(arrays: list, names: list[str]) -> np.ndarray:
    """The arrays as floats `[systems, seeds, questions]`, 1-row arrays broadcast to the others' seeds."""
    arrays = [np.asarray(a, dtype=float) for a in arrays]
    shapes = ", ".join(f"{name} {a.shape}" for name, a in zip(names, arrays))
    if any(a.ndim != 2 for a in arrays):
        raise ValueError(f"scores must be 2-D arrays [seeds, questions]; got {shapes} (one seed: reshape(1, -1))")
    if any(a.shape[0] == 0 or a.shape[1] == 0 for a in arrays):
        raise ValueError(f"scores need at least one seed and one question; got {shapes}")
    if len({a.shape[1] for a in arrays}) > 1:
        raise ValueError(f"the systems must be scored on the same questions; got {shapes}")
    seeds = {a.shape[0] for a in arrays} - {1}
    if len(seeds) > 1:
        raise ValueError(
            f"seed rows are paired by position: give every system the same number of seeds, or one row "
            f"(a seed-free system) to broadcast; got {shapes}"
        )
    n_seeds = seeds.pop() if seeds else 1
    return np.stack([np.broadcast_to(a, (n_seeds, a.shape[1])) for a in arrays])


def _resampled_means(scores: np.ndarray, n_resamples: int, seed: int, clusters=None) -> np.ndarray:
    """`[..., n_resamples]`: the mean of `scores [..., seeds, questions]` on each resample of seed rows
    and question columns (of components, with `clusters`: `_clustered_means`). The question columns
    are drawn first, in one call, as the question-only bootstrap draws them, so that with one seed
    row the resamples are those of that bootstrap."""
    if clusters is not None:
        return _clustered_means(scores, n_resamples, seed, components_of(clusters, scores.shape[-1]))
    n_seeds, n_questions = scores.shape[-2:]
    rng = np.random.default_rng(seed)
    columns = rng.integers(0, n_questions, size=(n_resamples, n_questions))
    rows = rng.integers(0, n_seeds, size=(n_resamples, n_seeds)) if n_seeds > 1 else None
    means = np.empty((*scores.shape[:-2], n_resamples))
    for start in range(0, n_resamples, CHUNK):
        block = slice(start, start + CHUNK)
        row_means = scores[..., columns[block]].mean(-1)  # [..., seeds, chunk]: each seed row on the drawn columns
        if rows is None:
            means[..., block] = row_means[..., 0, :]
        else:
            drawn = rows[block].T  # [seeds, chunk]: the rows each resample draws
            means[..., block] = np.take_along_axis(row_means, np.broadcast_to(drawn, row_means.shape), -2).mean(-2)
    return means


def components_of(clusters, n_questions: int) -> tuple[np.ndarray, int]:
    """Each question's components as numbers 0..C-1, `[questions, most components]` padded with C
    (a component of multiplicity 1 in every resample), and C, from `clusters`: one collection of
    hashable component names per question."""
    clusters = [tuple(dict.fromkeys(c)) for c in clusters]
    if len(clusters) != n_questions:
        raise ValueError(f"clusters names the components of {len(clusters)} questions; the scores have {n_questions}")
    if any(not c for c in clusters):
        raise ValueError("every question needs at least one component in clusters")
    number = {name: i for i, name in enumerate(dict.fromkeys(name for c in clusters for name in c))}
    members = np.full((n_questions, max(len(c) for c in clusters)), len(number))
    for row, components in enumerate(clusters):
        members[row, : len(components)] = [number[name] for name in components]
    return members, len(number)


def component_weights(rng: np.random.Generator, members: np.ndarray, n_components: int, n_resamples: int) -> np.ndarray:
    """`[n_resamples, questions]`: each question's weight in each resample, the product of its
    components' multiplicities, the `n_components` components drawn with replacement (`members`
    and the padding number `n_components` from `components_of`)."""
    drawn = rng.integers(0, n_components, size=(n_resamples, n_components))
    counts = np.zeros((n_resamples, n_components + 1))
    np.add.at(counts, (np.arange(n_resamples)[:, None], drawn), 1)
    counts[:, n_components] = 1  # the padding's
    return counts[:, members].prod(-1)


def _clustered_means(scores: np.ndarray, n_resamples: int, seed: int, components: tuple[np.ndarray, int]) -> np.ndarray:
    """`_resampled_means` with the questions weighted by `component_weights` instead of drawn: the
    weighted mean of each seed row on each resample, then the seed rows drawn as there."""
    n_seeds = scores.shape[-2]
    rng = np.random.default_rng(seed)
    weights = component_weights(rng, *components, n_resamples)  # [resamples, questions]
    rows = rng.integers(0, n_seeds, size=(n_resamples, n_seeds)) if n_seeds > 1 else None
    means = np.empty((*scores.shape[:-2], n_resamples))
    for start in range(0, n_resamples, CHUNK):
        block = slice(start, start + CHUNK)
        total = weights[block].sum(-1)
        with np.errstate(divide="ignore", invalid="ignore"):  # a resample keeping no question: nan
            row_means = (scores @ weights[block].T) / total  # [..., seeds, chunk]
        if rows is None:
            means[..., block] = row_means[..., 0, :]
        else:
            drawn = rows[block].T
            means[..., block] = np.take_along_axis(row_means, np.broadcast_to(drawn, row_means.shape), -2).mean(-2)
    return means


def compare(baseline, system, n_resamples: int = 10_000, seed: int = 0, clusters=None) -> Comparison:
    """The hierarchical paired bootstrap of `system` against `baseline` (`[seeds, questions]` each,
    see the module docstring), `n_resamples` resamples drawn from `seed`; `clusters`: each question's
    components, drawn instead of the questions (the module docstring)."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    baseline, system = _paired([baseline, system], ["baseline", "system"])
    difference = system - baseline
    resampled = _resampled_means(difference, n_resamples, seed, clusters)
    p_ahead, p_behind = float(np.mean(resampled <= 0)), float(np.mean(resampled >= 0))
    low, high = np.percentile(resampled, [2.5, 97.5])
    return Comparison(
        delta=float(difference.mean()),
        p_ahead=p_ahead,
        p_behind=p_behind,
        p=min(1.0, 2 * min(p_ahead, p_behind)),
        low=float(low),
        high=float(high),
        seeds=difference.shape[0],
        n_resamples=n_resamples,
    )


def share(single, system, ceiling, n_resamples: int = 10_000, seed: int = 0, clusters=None) -> Share:
    """`system`'s share of `ceiling`'s lead over `single`, (mean system - mean single) / (mean
    ceiling - mean single), with its 95% interval from the hierarchical bootstrap (`[seeds,
    questions]` each, see the module docstring; `clusters` as in `compare`). A ceiling not above
    single-query has no lead to share and is refused."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    scores = _paired([single, system, ceiling], ["single", "system", "ceiling"])
    single_mean, system_mean, ceiling_mean = scores.mean((1, 2))
    if ceiling_mean <= single_mean:
        raise ValueError(
            f"the ceiling ({ceiling_mean:.4f}) is not above single-query ({single_mean:.4f}): there is no lead to share"
        )
    single_means, system_means, ceiling_means = _resampled_means(scores, n_resamples, seed, clusters)
    with np.errstate(divide="ignore", invalid="ignore"):  # a resample where the lead vanishes: +-inf or nan
        shares = (system_means - single_means) / (ceiling_means - single_means)
    low, high = np.percentile(shares, [2.5, 97.5])
    return Share(
        share=float((system_mean - single_mean) / (ceiling_mean - single_mean)),
        low=float(low),
        high=float(high),
        seeds=scores.shape[1],
        n_resamples=n_resamples,
    )


def detectable_difference(low: float, high: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest true difference a two-sided test at `alpha` detects with probability `power`,
    from a 95% interval of the difference (`low`, `high`): (z_(1 - alpha/2) + z_power) standard errors,
    the standard error being the interval's width over 2 z_0.975 (the normal approximation)."""
    from scipy.stats import norm

    if not high > low:
        raise ValueError(f"the interval's high end must be above its low end, got {low} to {high}")
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise ValueError(f"power and alpha must lie in (0, 1), got {power} and {alpha}")
    standard_error = (high - low) / (2 * norm.ppf(0.975))
    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * standard_error)


def p_floor(n_resamples: int, comparisons: int = 1, sides: int = 2) -> float:
    """The smallest p a bootstrap of `n_resamples` resamples can resolve, `sides` / (n_resamples + 1)
    (the observed sample counted as one more resample; a two-sided p doubles the one-sided), times
    the `comparisons` a Holm correction multiplies the smallest p by, capped at 1. A p computed below
    it (0 where no resample crossed zero) says only that p is at most the floor."""
    if n_resamples < 1 or comparisons < 1 or sides not in (1, 2):
        raise ValueError(
            f"p_floor needs n_resamples >= 1, comparisons >= 1 and sides 1 or 2; got {n_resamples}, {comparisons}, "
            f"{sides}"
        )
    return min(1.0, comparisons * sides / (n_resamples + 1))


def p_text(p: float, n_resamples: int, comparisons: int = 1, sides: int = 2, digits: int = 4) -> str:
    """`p` as a table prints it: with `digits` decimals, or "≤ floor" where it lies below `p_floor`
    (the floor rounded up to two significant digits, so that the bound stays true)."""
    floor = p_floor(n_resamples, comparisons, sides)
    if p >= floor:
        return f"{p:.{digits}f}"
    decimals = max(0, 1 - int(np.floor(np.log10(floor))))  # two significant digits
    rounded = np.ceil(floor * 10**decimals - 1e-9) / 10**decimals
    return f"≤ {rounded:.{decimals}f}".rstrip("0").rstrip(".")


def _pvalues(pvalues) -> np.ndarray:
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p-values must be a 1-D list, got shape {p.shape}")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError(f"p-values must lie in [0, 1]; got {p[np.isnan(p) | (p < 0) | (p > 1)][:5].tolist()}")
    return p


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest of m becomes
    max over j <= i of min(1, (m - j + 1) p_(j)). Rejecting where the adjusted p < alpha keeps the
    chance of any false rejection among the m at most alpha."""
    p = _pvalues(pvalues)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return adjusted


def benjamini_hochberg(pvalues) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values, in the order given: the i-th smallest of m becomes
    min over j >= i of min(1, m p_(j) / j). Rejecting where the adjusted p < alpha keeps the
    expected share of false rejections among the rejections at most alpha (independent or
    positively dependent tests)."""
    p = _pvalues(pvalues)
    order = np.argsort(p, kind="stable")
    m = len(p)
    scaled = m * p[order] / np.arange(1, m + 1)
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return adjusted


CORRECTIONS = {"holm": holm, "bh": benjamini_hochberg, "none": lambda p: _pvalues(p).copy()}
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no correction"}


def adjust(pvalues, method: str = "holm") -> np.ndarray:
    """`pvalues` corrected for their number by `method` (a key of `CORRECTIONS`)."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; valid: {', '.join(CORRECTIONS)}")
    return CORRECTIONS[method](pvalues)


def marks(comparisons: list[Comparison], alpha: float = 0.05, method: str = "holm") -> list[str]:
    """One mark per comparison after correcting their two-sided p across the list by `method`:
    `AHEAD` ("*") where the system is significantly ahead (corrected p < alpha), `BEHIND` ("†")
    where it is significantly behind, "" otherwise. The direction is the side the resamples
    fall on (p_ahead < p_behind: ahead)."""
    adjusted = adjust([c.p for c in comparisons], method) if comparisons else np.empty(0)
    return [mark(p, c.p_ahead, c.p_behind, alpha) for c, p in zip(comparisons, adjusted)]


def mark(p_adjusted: float, p_ahead: float, p_behind: float, alpha: float = 0.05) -> str:
    """The mark of one comparison whose two-sided p is already corrected (`p_adjusted`): `AHEAD`
    or `BEHIND` by the side the resamples fall on where it is below alpha, else ""."""
    return (AHEAD if p_ahead < p_behind else BEHIND) if p_adjusted < alpha else ""


def note(n_comparisons: int, alpha: float = 0.05, method: str = "holm", baseline: str = "single-query") -> str:
    """The sentence a table prints under itself to say what its ± and marks mean."""
    correction = (
        "uncorrected"
        if method == "none"
        else f"{CORRECTION_NAMES[method]}-corrected across the table's {n_comparisons} comparisons"
    )
    return (
        "± is the population standard deviation over seeds (numpy's ddof = 0). "
        f"{AHEAD} / {BEHIND}: significantly ahead of / behind {baseline}, two-sided p < {alpha} {correction}, "
        "from a paired bootstrap that resamples seeds and questions."
    )


def paired_bootstrap(baseline: np.ndarray, system: np.ndarray, n_resamples: int = 10_000, seed: int = 0) -> dict:
    """Paired bootstrap over questions, one score per question (`compare` on one
    seed row): how often the resampled mean of `system` fails to beat `baseline` (`p_value`,
    one-sided: the evidence that it is ahead) and how often it is not below it (`p_value_behind`).
    Scores over several seeds go to `compare` whole, not averaged over seeds."""
    baseline, system = np.asarray(baseline, float), np.asarray(system, float)
    if baseline.shape != system.shape or baseline.ndim != 1:
        raise ValueError(f"paired scores must be two 1-D arrays of one length, got {baseline.shape} and {system.shape}")
    test = compare(baseline[None], system[None], n_resamples, seed)
    return {
        "delta": test.delta,
        "p_value": test.p_ahead,
        "p_value_behind": test.p_behind,
        "n_resamples": n_resamples,
        "seed": seed,
    }


def share_interval(
    single: np.ndarray, system: np.ndarray, oracle: np.ndarray, n_resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """The 95% bootstrap interval of a system's share of the oracle's lead over single-query,
    (mean system - mean single) / (mean oracle - mean single), resampling the questions (the
    three arrays paired, one score per question): `share` on one seed row."""
    arrays = [np.asarray(a, float) for a in (single, system, oracle)]
    if any(a.ndim != 1 or a.shape != arrays[0].shape for a in arrays):
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ValueError(f"share_interval takes three 1-D arrays of one length, got {shapes}")
    result = share(*(a[None] for a in arrays), n_resamples, seed)
    return result.low, result.high
