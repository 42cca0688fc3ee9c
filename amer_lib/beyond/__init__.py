"""Work beyond the paper, plugged into the method's extension points: merges (`merges`, registered
in `amer_lib.core.merge.MERGES` when this package is imported). Depends on `core` and `data`."""

from amer_lib.beyond import merges  # noqa: F401  (registers the merges)
