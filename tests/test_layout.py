"""The library's architecture, read from its imports (module-level and inside functions alike):
the import graph has no cycle and every layer imports only the layers below it."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "amer_lib"
# each layer may import itself and the layers listed for it
ALLOWED = {
    "io": set(),
    "progress": set(),
    "core": {"io", "progress"},
    "data": {"io", "progress", "core"},
    "runs": {"io", "progress", "core", "data"},
    "report": {"io", "progress", "core"},
    "experiments": {"io", "progress", "core", "data", "runs", "report"},
    "params": {"io", "progress", "core", "data", "runs"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The amer_lib modules `path` imports (`from amer_lib.x import y` counts y if y is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "amer_lib":
            assert node.level == 0, f"{path.name}: relative import; amer_lib imports itself by absolute names"
            for alias in node.names:
                found.add(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "amer_lib"}
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imports_of(path, set(paths)) - {name} for name, path in paths.items()}


def layer(module: str) -> str | None:
    """`core`, `data`, ... for a module of a layer; None for the package and its `__init__`s."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else None


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 30  # the walk found the library
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        pytest.fail(f"import cycle: {' -> '.join(error.args[1])}")


def test_every_layer_imports_only_the_layers_below_it():
    wrong = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if layer(module)
        and layer(target)
        and layer(target) != layer(module)
        and layer(target) not in ALLOWED[layer(module)]
    ]
    assert not wrong, "\n".join(wrong)


def test_the_graph_walk_sees_function_level_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from amer_lib.core import loss\n    from amer_lib.io import write_json\n")
    assert imports_of(source, {"amer_lib.core.loss", "amer_lib.io"}) == {"amer_lib.core.loss", "amer_lib.io"}


def test_no_experiment_imports_another():
    """Experiments read each other's outputs through the run store; a notebook that combines two
    (notebook 05 retrains notebook 02's and 04's runs) hands one's runner to the other."""
    wrong = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if layer(module) == layer(target) == "experiments" and target != "amer_lib.experiments"
    ]
    assert not wrong, "\n".join(wrong)
