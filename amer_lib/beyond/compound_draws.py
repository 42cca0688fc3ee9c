"""Beyond the paper: the compound benchmark's training compounds drawn afresh, plugged into the
prepared benchmark's training draws (`amer_lib.data.benchmark.TRAINING_DRAWS`).

A run on a compound benchmark (`amer_lib.beyond.compound`) trains on its prepared split by default.
With `compounds` > 0 it trains on that many compounds drawn by the seed from the components its
training compounds are made of (a run that draws as many as it trains on, steps x batch size, sees
no compound twice, where the prepared split repeats each); with `components` "corpus", on
compounds drawn from every training component in the corpus (`compound.corpus_components`), as many
as the prepared split has unless `compounds` says; with "disjoint", likewise from the training
compounds' components less those sharing a gold document with a test or validation compound
(`compound.disjoint`). `component_count` > 0 (with one of those draws): the compounds are made of
that many of the components, drawn by the seed (`compound.subset`). The notebook fields that set
them: `train_compounds`, `train_components`, `train_component_count`.
"""

from __future__ import annotations

import functools
import warnings
import weakref

import numpy as np

from amer_lib.beyond import compound
from amer_lib.data.benchmark import Benchmark, TrainingDraw, register_training_draw
from amer_lib.data.corpus import iter_documents
from amer_lib.data.questions import MultiAnswerQuestion
from amer_lib.progress import AmerWarning

DEFAULTS = {"compounds": 0, "components": "findable", "component_count": 0}  # the prepared split
FIELDS = {"train_compounds": "compounds", "train_components": "components", "train_component_count": "component_count"}


def check_options(compounds: int, components: str, component_count: int) -> None:
    """Fail on options no draw takes, whatever the benchmark."""
    if components not in compound.TRAIN_COMPONENTS:
        raise ValueError(f"train_components {components!r}: choose one of {', '.join(compound.TRAIN_COMPONENTS)}")
    compound.check_component_count(component_count, compounds, components)


def check(benchmark: Benchmark, datasets: list[str], compounds: int, components: str, component_count: int) -> None:
    """Fail before any work on options no draw takes, or that need a compound benchmark this is not."""
    check_options(compounds, components, component_count)
    if compounds:
        _require_compound(benchmark, datasets, "train_compounds", "> 0")
    if components != "findable":
        _require_compound(benchmark, datasets, "train_components", f'= "{components}"')


def _require_compound(benchmark: Benchmark, datasets: list[str], parameter: str, setting: str) -> None:
    benchmark.check(datasets)
    if benchmark.manifest.get("recipe", {}).get("source") != "compound":
        raise ValueError(
            f"{parameter} {setting} redraws a compound benchmark's training compounds; {benchmark.directory} holds "
            f"{', '.join(benchmark.datasets)}, not one (prepare it with params/03_real_data_prep/compound.yaml), "
            f"or leave {parameter} at its default"
        )


def training_questions(
    benchmark: Benchmark, dataset: str, seed: int, compounds: int, components: str, component_count: int
) -> list[MultiAnswerQuestion]:
    """`dataset`'s training compounds for a run of `seed`, drawn as the options say (the module's
    docstring); k = 1 gives the components back (a component alone has no other combination)."""
    check(benchmark, [dataset], compounds, components, component_count)
    prepared = benchmark.questions(dataset, "train")
    if components == "corpus":
        pool = corpus_components(benchmark)
    elif components == "disjoint":
        pool, _ = compound.disjoint(prepared, held_documents(benchmark))
    else:
        pool = compound.training_components(prepared)
    n = compounds or len(prepared)
    rng = np.random.default_rng(seed)
    if component_count:
        pool = compound.subset(pool, component_count, rng)
    k = compound.components_in(dataset)
    drawn = compound.drawn_from(pool, k, n, benchmark.manifest["recipe"]["max_answers"], rng)
    if k > 1 and len(drawn) < n:
        warnings.warn(
            f"{dataset}: only {len(drawn)} of the {n} training compounds asked for could be drawn from "
            f"{len(pool)} components; training repeats them",
            AmerWarning,
            stacklevel=2,
        )
    return drawn


def per_benchmark(function):
    """`function(benchmark)` computed once a benchmark (kept while the benchmark lives)."""
    computed = weakref.WeakKeyDictionary()

    @functools.wraps(function)
    def once(benchmark: Benchmark):
        if benchmark not in computed:
            computed[benchmark] = function(benchmark)
        return computed[benchmark]

    return once


@per_benchmark
def held_documents(benchmark: Benchmark) -> set[str]:
    """The gold documents of every dataset's test and validation compounds."""
    splits = [benchmark.questions(d, split) for d in benchmark.datasets for split in ("test", "validation")]
    return compound.gold_documents([q for questions in splits for q in questions])


@per_benchmark
def corpus_components(benchmark: Benchmark) -> list[MultiAnswerQuestion]:
    """`compound.corpus_components` of `benchmark`: no word of any dataset's validation compounds."""
    recipe = benchmark.manifest["recipe"]
    validation = [q for d in benchmark.datasets for q in benchmark.questions(d, "validation")]
    corpus_ids = {d.id for d in iter_documents(benchmark.corpus_path)}
    return compound.corpus_components(recipe["components"], corpus_ids, validation, recipe["max_answers"])


register_training_draw(
    TrainingDraw(
        defaults=DEFAULTS, check=check, questions=training_questions, fields=FIELDS, check_options=check_options
    )
)
