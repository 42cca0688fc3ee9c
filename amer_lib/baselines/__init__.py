"""The paper's baselines beside single-query (its appendix): query expansion (`expansion`) and MMR
re-ranking (`mmr`), and their runs on notebook 04's trained single-query models (`runs`).
Depends on `core`, `data` and `runs`."""
