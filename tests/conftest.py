import os

# Tests never reach the Hugging Face hub: a pretrained backbone must fail fast with our error.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]  # the repository
FIXTURES = ROOT / "tests" / "fixtures"

# Each pytest-xdist worker takes its share of the cores (make test runs two workers on two cores):
# with more threads than cores, a tiny model's many small parallel regions wait for each other's
# threads, and a training of a few milliseconds takes seconds (benchmarks/make_test.md, issue 71).
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
torch.set_num_threads(max(1, min(2, torch.get_num_threads()) // WORKERS))
# measurements that outlive a process (a local backbone's activations: amer_lib.runs.activation_memory)
# stay in the checkout's ignored build/ folder, shared by the suite's workers and kernels, never the user's
os.environ["AMER_CACHE_DIR"] = str(ROOT / "build" / "test-cache")


@pytest.fixture
def tiny_encoder():
    from amer_lib.core.backbones import load_backbone
    from amer_lib.core.model import AMERQueryEncoder

    torch.manual_seed(0)
    backbone = load_backbone("tiny", config_overrides=dict(hidden_size=32, intermediate_size=64))
    return AMERQueryEncoder(backbone, 12).eval()


def notebook_config(notebook: str, **changes):
    """A notebook's config at its committed defaults, with `changes`."""
    from amer_lib.params import from_files

    return from_files(ROOT / "notebooks" / f"{notebook}.ipynb").replace(**changes)


def documentation() -> str:
    """The README and the pages under docs/ it links to, as one text: what the tests that check
    quoted numbers and shown commands read."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n\n".join(page.read_text() for page in pages)


# ----- the lab's tests -----------------------------------------------------------------------------
# studies/tests and benchmarks/tests test what serves the lab (studies, benchmarks no user command
# runs), not the library: marked `lab`, which `make test` leaves out and CI runs with every other test
LAB_TESTS = (ROOT / "studies" / "tests", ROOT / "benchmarks" / "tests")


# The files that take longest in CI's run of every test (benchmarks/make_test.md), longest first:
# collected first, so that pytest-xdist (`--dist loadfile --no-loadscope-reorder`, the Makefile's)
# starts them at once on its workers and the short files fill in around them
LONGEST_FIRST = (
    "tests/test_rehearsal.py",
    "tests/test_notebooks.py",
    "tests/test_readme_commands.py",
    "tests/runs/test_distributed.py",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(folder in Path(item.path).parents for folder in LAB_TESTS):
            item.add_marker(pytest.mark.lab)
    rank = {ROOT / name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(item.path), len(rank)))  # stable: each file's order kept


# ----- no process outlives the suite -----------------------------------------------------------------
# Every process the tests start (worker pools, torchrun ranks, papermill kernels, subprocesses)
# inherits this variable; at the end of the session none may be left, orphaned or not.
SESSION_MARK = "AMER_TEST_SESSION"
LEFT_ALONE = ("multiprocessing.resource_tracker",)  # ends with the pytest process itself, by design


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # a pytest-xdist worker keeps the mark of the run it serves
        os.environ[SESSION_MARK] = str(os.getpid())


def processes_started_by_the_suite() -> list:
    """The live processes that carry this session's mark, other than pytest and its resource tracker."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if process.pid == os.getpid():
            continue
        try:
            marked = process.environ().get(SESSION_MARK) == os.environ[SESSION_MARK]
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        if marked and not any(part in " ".join(process.info["cmdline"] or []) for part in LEFT_ALONE):
            found.append(process)
    return found


def pytest_sessionfinish(session, exitstatus):
    """In the process that started the run (with pytest-xdist, after its workers are done)."""
    import psutil

    if hasattr(session.config, "workerinput"):
        return
    left = processes_started_by_the_suite()
    _, alive = psutil.wait_procs(left, timeout=10)  # a worker pool shutting down gets a moment
    if alive:
        lines = [f"  pid {p.pid} (parent {p.ppid()}): {' '.join(p.cmdline())[:200]}" for p in alive]
        for process in alive:
            process.kill()
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        reporter.write_line(f"{len(alive)} process(es) started by the tests outlived them (killed now):", red=True)
        for line in lines:
            reporter.write_line(line, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
