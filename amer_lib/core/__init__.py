"""The paper's method and nothing else: the query encoder and its backbones, the matched loss, the
training loop, search, merging, the metrics and the stop head. Depends on nothing else in amer_lib
but the leaves `io`, `progress` and `packaged`."""
