"""One module per notebook (and the studies that extend one). Each depends on core, data, runs
and report, and reads another experiment's outputs through the run store, never its code."""
