"""Running experiments: where runs live on disk and how they are dispatched (serial, worker
processes, torchrun), the memory preflight, and a finished run as a model folder that stands alone.
Depends on `core`, `data` and `baselines`."""
