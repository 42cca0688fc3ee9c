"""Data: the synthetic generator (here) and, later, the real multi-answer readers."""
