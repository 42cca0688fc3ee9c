"""The paper's baselines beside single-query (its appendix): query expansion and MMR re-ranking.
Depends on `core` and `data`."""
