"""Data: readers of the published datasets and corpora, the gold-document mapping, the synthetic
task, the offline WordNet benchmark, the prepared benchmark on disk, and what the training loop
reads (prompts and dataset classes). Depends on `core` and `io` only."""
