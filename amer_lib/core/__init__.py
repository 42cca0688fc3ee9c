"""The method: the query encoder and its backbones, the losses, the training loop, search, merging
and the metrics. Depends on nothing else in amer_lib but `io`."""
