"""Running experiments: where runs live on disk and how they are dispatched (serial, worker
processes, torchrun). Depends on `core` and `data`."""
