"""The fair control's k = 3 vector roles per seed (notebook 04 records only their mean), the
baseline the component-count test compares with, computed before its runs.

The fair control's runs are keyed by run-key version 10; `train_component_count` made it 11, so
they are read with the library as it was when they were made (5ed350c). From the repository root,
with the fair control's results and runs in `results/` and `runs/`:

    git worktree add /tmp/pre 5ed350c
    cd notebooks && PYTHONPATH=/tmp/pre OMP_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 \
        MKL_CBWR=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 OPENBLAS_CORETYPE=Haswell FAISS_SIMD_LEVEL=AVX2 \
        ../.venv/bin/python ../studies/component_count/fair_control_roles.py

It writes `studies/component_count/fair_control_roles.json` (about a minute on 2 cores).
"""

import json
import subprocess
from pathlib import Path

import yaml

from amer_lib.experiments import real_data
from amer_lib.io import write_json
from amer_lib.params import validate

HERE = Path(__file__).resolve().parent
PARAMS = Path("../results/04_compound_fair_control/params_minilm_compound_k1+compound_k2+compound_k3.yaml")


def main() -> None:
    library = Path(real_data.__file__).resolve().parents[2]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=library, capture_output=True, text=True).stdout.strip()
    params = validate("04_real_data", yaml.safe_load(PARAMS.read_text()))  # as the notebook wrote them
    roles = {str(seed): real_data.vector_roles(params, "compound_k3", seed) for seed in params.seeds}
    write_json(HERE / "fair_control_roles.json", {"library_commit": commit, "params": str(PARAMS), "roles": roles})
    print(json.dumps(roles, indent=1))


if __name__ == "__main__":
    main()
