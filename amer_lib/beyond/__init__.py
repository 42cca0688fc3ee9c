"""Work beyond the paper, plugged into the method's extension points when this package is imported:
merges (`merges`, registered in `amer_lib.core.merge.MERGES`), loss terms (`spread`, `component`,
registered in `amer_lib.core.loss.LOSS_TERMS`), the compound benchmark (`compound`), its
preparation (`compound_preparation`, notebook 03's source "compound", registered in
`amer_lib.data.preparation.PREPARATIONS`) and its training draws (`compound_draws`, registered in
`amer_lib.data.benchmark.TRAINING_DRAWS`). Depends on `core` and `data`. Above them, imported by
what they plug into: the compound benchmark's table and results-page parts (`compound_results`,
imported by `amer_lib.report.results_page`) and its decomposition oracle (`decomposition`, notebook 04's)."""

from amer_lib.beyond import (  # noqa: F401  (each registers its plug-ins)
    component,
    compound_draws,
    compound_preparation,
    merges,
    spread,
)
