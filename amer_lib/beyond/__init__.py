"""Work beyond the paper, plugged into the method's extension points: merges (`merges`, registered
in `amer_lib.core.merge.MERGES`) and loss terms (`spread`, `component`, registered in
`amer_lib.core.loss.LOSS_TERMS`) when this package is imported. Depends on `core` and `data`."""

from amer_lib.beyond import component, merges, spread  # noqa: F401  (each registers its plug-ins)
