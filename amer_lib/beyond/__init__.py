"""Work beyond the paper, plugged into the method's extension points when this package is imported:
merges (`merges`, registered in `amer_lib.core.merge.MERGES`), loss terms (`spread`, `component`,
registered in `amer_lib.core.loss.LOSS_TERMS`) and the compound benchmark's training draws
(`compound_draws`, registered in `amer_lib.data.benchmark.TRAINING_DRAWS`). Depends on `core` and
`data`."""

from amer_lib.beyond import component, compound_draws, merges, spread  # noqa: F401  (each registers its plug-ins)
