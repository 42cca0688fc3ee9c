"""The query-expansion baseline gives the same numbers in another process: Python's string hashing
and torch's thread count differ between the two runs below, and the keywords, the scores and the
TREC run must not."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from stand_ins import tiny_wordnet_runs

from amer_lib.experiments.real_data import run_all

pytestmark = pytest.mark.slow  # a tiny benchmark prepared, a model trained, two processes started: about 60 s

RUN_BASELINE = """
import sys, torch
from amer_lib.baselines.runs import run_baseline
from amer_lib.runs.configs import RealConfig
torch.set_num_threads(int(sys.argv[2]))
run_baseline(RealConfig.from_yaml(sys.argv[1]), "wordnet_kinds", "query_expansion", 0, progress=False)
"""


def test_query_expansion_is_the_same_in_two_processes(tmp_path):
    params = tiny_wordnet_runs(tmp_path, systems=["single"], baselines=["query_expansion", "rerank"])
    run_all(params, progress=False)  # the single-query model both processes expand the queries of
    (tmp_path / "params.yaml").write_text(params.to_yaml())
    results = Path(params.results_dir)
    outputs = {}
    for name, hash_seed, threads in (("a", "1", 1), ("b", "2", 2)):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        command = [sys.executable, "-c", RUN_BASELINE, str(tmp_path / "params.yaml"), str(threads)]
        run = subprocess.run(command, env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-3000:]
        made = [results / f"wordnet_kinds_query_expansion_seed0.{suffix}" for suffix in ("json", "trec")]
        outputs[name] = (json.loads(made[0].read_text()), made[1].read_bytes())
        for path in made:  # the second process makes them again instead of reading them back
            path.unlink()
    (result_a, trec_a), (result_b, trec_b) = outputs["a"], outputs["b"]
    assert result_a["keywords"] == result_b["keywords"] and result_a["mrecall"] == result_b["mrecall"]
    assert trec_a == trec_b and len(trec_a.splitlines()) == 100 * len(result_a["mrecall"])
