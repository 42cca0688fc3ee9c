import dataclasses
import json
from pathlib import Path

import pytest
from conftest import ROOT

from amer_lib.params import (
    CONFIGS,
    cell_defaults,
    collect,
    describe,
    from_files,
    main,
    notebook_defaults,
    parameter_names,
    parameters_cell,
    snapshot,
    validate,
)
from amer_lib.runs.configs import SyntheticConfig


def defaults():
    return {
        "settings": ["single"],
        "transforms": ["linear"],
        "systems": ["amer"],
        "dim": 8,
        "n_train": 10,
        "n_test": 2,
        "corpus_size": 100,
        "mlp_layers": 2,
        "mlp_sweep_dims": [8],
        "mlp_sweep_depths": [2],
        "mlp_sweep_authors_bug": True,
        "backbone": "tiny",
        "backbone_overrides": {},
        "finetune": "full",
        "n_queries": 5,
        "steps": 1,
        "batch_size": 2,
        "lr": 1e-3,
        "temperature": 0.05,
        "matched_loss": "mean",
        "tuning_grid": {},
        "sampling": "scheduled",
        "sampling_rate": 1,
        "eval_every": 1,
        "search_depth": 10,
        "merge": "round_robin",
        "seed": 0,
        "device": "cpu",
        "mixed_precision": False,
        "micro_batch_size": 0,
        "gradient_checkpointing": False,
        "workers": 1,
        "threads": 1,
        "nproc_per_node": 1,
        "results_dir": "r",
        "runs_dir": "u",
        "figures_dir": "f",
    }


def test_defaults_cover_the_schema():
    assert set(defaults()) == set(SyntheticConfig.parameter_names())
    config = validate("02_synthetic", defaults())
    assert isinstance(config, SyntheticConfig) and config.as_dict() == defaults() and config.steps == 1


def test_missing_keys_are_named():
    values = {k: v for k, v in defaults().items() if k != "seed"}
    with pytest.raises(KeyError, match=r"missing parameter\(s\) \['seed'\] for notebook 02_synthetic"):
        validate("02_synthetic", values)


def test_a_field_the_library_sets_is_checked_and_left_out_of_the_files_at_its_default():
    config = validate("02_synthetic", defaults())
    assert "train_transform" not in config.as_dict() and "train_transform" not in SyntheticConfig.parameter_names()
    assert config.replace(train_transform="linear").as_dict()["train_transform"] == "linear"
    with pytest.raises(
        ValueError, match="invalid value 'cubic' for parameter 'train_transform'; valid choices: linear"
    ):
        config.replace(train_transform="cubic")


def test_a_float_parameter_takes_an_int_but_an_int_parameter_takes_no_bool():
    assert validate("02_synthetic", {**defaults(), "lr": 1}).lr == 1
    with pytest.raises(TypeError, match="'steps' must be of type int, got True"):
        validate("02_synthetic", {**defaults(), "steps": True})


def test_unknown_key_lists_the_valid_ones():
    with pytest.raises(KeyError, match=r"unknown parameter\(s\) \['stpes'\].*valid keys: settings"):
        validate("02_synthetic", {**defaults(), "stpes": 3})


@pytest.mark.parametrize(
    "key,value,message",
    [
        ("backbone", "gpt2", "valid choices: llama1b"),
        (
            "settings",
            ["single", "mixed"],
            "invalid value 'mixed' for parameter 'settings'; valid choices: single, multi, ood",
        ),
        ("steps", "many", "must be of type"),
        ("settings", [], "non-empty list"),
        ("workers", 0, "'workers' must be >= 1"),
    ],
)
def test_invalid_values_are_named(key, value, message):
    with pytest.raises((ValueError, TypeError), match=message):
        validate("02_synthetic", {**defaults(), key: value})


def test_collect_takes_only_names_defined_after_the_snapshot():
    namespace = {"np": object(), "_private": 1}
    before = set(namespace)
    namespace.update(defaults())
    assert collect("02_synthetic", namespace, before).as_dict() == defaults()


def run_all(namespace: dict, notebook: str, cell: dict):
    """One Run All's parameter handling as a notebook does it, in a kernel's `namespace`: the imports
    cell's snapshot, the parameters cell's assignments (`cell`), the collect, the cells after it."""
    before = snapshot(namespace)
    namespace.update(cell)
    config = collect(notebook, namespace, before)
    namespace.update(params=config, figures="a later cell's variable")
    return config


def test_a_second_run_all_in_the_same_namespace_takes_the_cells_values_now(monkeypatch):
    """Run All, edit the parameters cell, Run All again (JupyterLab's one kernel): the second pass
    takes the edited value, and a line deleted since is missing as on a first pass (a KeyError
    naming it), not kept from the pass before; the names above the parameters cell survive."""
    monkeypatch.chdir(ROOT)  # snapshot moves to notebooks/: restored after the test
    namespace = {"np": object(), "_before": set()}
    assert run_all(namespace, "02_synthetic", defaults()).steps == 1
    assert run_all(namespace, "02_synthetic", {**defaults(), "steps": 7}).steps == 7
    assert run_all(namespace, "02_synthetic", defaults()).steps == 1
    without_steps = {k: v for k, v in defaults().items() if k != "steps"}
    with pytest.raises(KeyError, match=r"missing parameter\(s\) \['steps'\] for notebook 02_synthetic"):
        run_all(namespace, "02_synthetic", without_steps)
    assert "steps" not in namespace and "np" in namespace and "params" in namespace
    assert Path.cwd() == ROOT / "notebooks"  # twice: still there


def test_a_parameter_with_a_default_if_absent_deleted_before_a_second_pass_takes_its_default(monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace = {}
    assert run_all(namespace, "04_real_data", real_defaults(component_weight=0.5)).component_weight == 0.5
    cell = {k: v for k, v in real_defaults().items() if k != "component_weight"}
    assert run_all(namespace, "04_real_data", cell).component_weight == 0.0  # the config's default, not 0.5
    with pytest.raises(KeyError, match=r"unknown parameter\(s\) \['figure_dir'\]"):  # a typo still fails
        run_all(namespace, "04_real_data", {**real_defaults(), "figure_dir": "x"})


def test_snapshot_removes_only_parameter_names_of_the_notebook_it_is_given(monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace = {"seeds": [4], "steps": 3, "datasets": ["a"], "study_levers": {}, "pd": object()}
    before = snapshot(namespace, "05_ablations")  # 05 has no `seeds`, `steps` or `datasets`; every notebook a lever map
    assert before == {"seeds", "steps", "datasets", "pd"} and set(namespace) == before
    assert set(snapshot(dict(namespace))) == {"pd"}  # without a notebook: any notebook's parameter goes
    with pytest.raises(KeyError, match=r"unknown notebook '08_x'; valid: 01_failure_analysis, 02_synthetic"):
        snapshot({}, "08_x")
    assert parameter_names("01_failure_analysis") == {
        f.name for f in dataclasses.fields(CONFIGS["01_failure_analysis"])
    } | {"study_levers"}


@pytest.mark.parametrize("notebook", sorted(CONFIGS))
def test_notebook_defaults_and_every_shipped_parameter_file_validate(notebook):
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parent.parent
    defaults = notebook_defaults(root / "notebooks" / f"{notebook}.ipynb")
    # notebook 04's "auto" is resolved for the offline backbone (MiniLM: full fine-tuning, float32); the
    # config holds its study levers (the cell's `study_levers` mapping) at their defaults
    resolved = {
        key: AUTO_OFFLINE.get(key, value) if value == "auto" else value
        for key, value in CONFIGS[notebook].defaults().items()
    }
    assert validate(notebook, defaults).as_dict() == resolved
    for path in sorted((root / "params" / notebook).glob("*.yaml")):
        given = yaml.safe_load(path.read_text())
        validate(notebook, {**defaults, **given})
        levers = given.pop("study_levers", {})  # notebook 04's mapping: each lever a field of the config
        assert from_files(root / "notebooks" / f"{notebook}.ipynb", path).as_dict() == {**resolved, **given, **levers}


AUTO_OFFLINE = {"finetune": "full", "mixed_precision": False}  # every offline parameter file keeps a small backbone


def test_lists_and_mappings_given_as_text_are_read_as_yaml_as_papermill_p_passes_them():
    text = {"settings": '["ood"]', "mlp_sweep_dims": "[]", "backbone_overrides": "{hidden_size: 16}"}
    namespace = {**defaults(), **text}
    config = collect("02_synthetic", namespace, set())
    assert (
        config.settings == ["ood"] and config.mlp_sweep_dims == [] and config.backbone_overrides == {"hidden_size": 16}
    )
    # the notebook's own names hold what was read: its cells use them (a sweep over the characters
    # of '["IVF256,PQ16"]' once reached faiss)
    assert namespace["settings"] == ["ood"] and namespace["backbone_overrides"] == {"hidden_size": 16}
    with pytest.raises(ValueError, match=r"parameter 'settings' must be a non-empty list \(e.g. \[a, b\]\), got 'ood'"):
        collect("02_synthetic", {**defaults(), "settings": "ood"}, set())  # YAML reads a bare word as a string
    with pytest.raises(ValueError, match=r"parameter 'settings' takes a list; '\[ood' is not one in YAML"):
        collect("02_synthetic", {**defaults(), "settings": "[ood"}, set())


@pytest.mark.parametrize("notebook", sorted(CONFIGS))
def test_each_parameters_cell_is_written_from_its_config(notebook):
    """One source per parameter: the cell papermill overrides is what `python -m amer_lib.params
    --write` writes from the config's fields, and it executes to the config's defaults."""
    path = ROOT / "notebooks" / f"{notebook}.ipynb"
    cell = next(c for c in json.loads(path.read_text())["cells"] if "parameters" in c["metadata"].get("tags", []))
    assert "".join(cell["source"]) == parameters_cell(notebook), "run: python -m amer_lib.params --write"
    assert notebook_defaults(path) == cell_defaults(notebook)


def test_the_parameter_listing_names_type_default_choices_and_help(capsys):
    main(["04_real_data"])
    listing = capsys.readouterr().out
    assert "  temperature (float) = 0.05\n      InfoNCE temperature" in listing
    assert '  expansion (str) = "prf"; one of prf, chat, hf\n' in listing
    with pytest.raises(SystemExit):
        main(["05_ablation"])  # not a notebook: argparse lists the valid ones


def test_the_documented_commands_run_as_typed_from_the_repository_root():
    import subprocess
    import sys

    listing = subprocess.run(
        [sys.executable, "-m", "amer_lib.params", "04_real_data"], cwd=ROOT, capture_output=True, text=True
    )
    assert listing.returncode == 0 and "mmr_query (str) = " in listing.stdout
    # --write runs on this checkout only when it would rewrite nothing: a drifted notebook stops the
    # test here, before the command could change the checkout (run the command yourself then)
    drifted = [
        notebook
        for notebook in CONFIGS
        if _parameters_source(ROOT / "notebooks" / f"{notebook}.ipynb") != parameters_cell(notebook)
    ]
    assert not drifted, f"{drifted} drifted: run python -m amer_lib.params --write"
    written = subprocess.run([sys.executable, "-m", "amer_lib.params", "--write"], cwd=ROOT, capture_output=True)
    assert written.returncode == 0 and written.stdout == b""


def _parameters_source(path) -> str:
    cell = next(c for c in json.loads(path.read_text())["cells"] if "parameters" in c["metadata"].get("tags", []))
    return "".join(cell["source"])


def test_write_rewrites_only_the_drifted_parameters_cell(tmp_path):
    import shutil

    from amer_lib.params import write_parameters_cells

    for notebook in CONFIGS:
        shutil.copy(ROOT / "notebooks" / f"{notebook}.ipynb", tmp_path)
    drifted = tmp_path / "04_real_data.ipynb"
    document = json.loads(drifted.read_text())
    cell = next(c for c in document["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] = ["steps = 7\n"]
    drifted.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    untouched = (tmp_path / "02_synthetic.ipynb").read_bytes()
    assert write_parameters_cells(tmp_path) == [drifted]
    assert _parameters_source(drifted) == parameters_cell("04_real_data")
    assert (tmp_path / "02_synthetic.ipynb").read_bytes() == untouched
    # the drift undone, the committed bytes again: the layout Jupyter (nbformat) writes
    assert drifted.read_bytes() == (ROOT / "notebooks" / "04_real_data.ipynb").read_bytes()


def test_a_mistyped_faiss_factory_stops_before_any_work():
    """YAML reads `-p ivfpq_factories '[IVF4,PQ8x4]'` as two strings: the config refuses both with
    faiss's reason and the quoting that was meant, before notebook 03 prepares or encodes anything."""
    namespace = {**notebook_defaults(ROOT / "notebooks" / "03_real_data_prep.ipynb"), "ivfpq_factories": "[IVF4,PQ8x4]"}
    with pytest.raises(ValueError, match=r"factory 'IVF4' does not build at 384 dimensions: could not parse") as error:
        collect("03_real_data_prep", namespace, set())
    assert """quote each item: -p ivfpq_factories '["IVF4,PQ8x4"]'""" in str(error.value)
    quoted = {
        **notebook_defaults(ROOT / "notebooks" / "03_real_data_prep.ipynb"),
        "ivfpq_factories": '["IVF256,PQ12", "IVF64,PQ8x4"]',
    }
    assert collect("03_real_data_prep", quoted, set()).ivfpq_factories == ["IVF256,PQ12", "IVF64,PQ8x4"]
    with pytest.raises(ValueError, match=r"'IVF256,PQ7' does not build at 384 dimensions: .*multiple of"):
        collect("03_real_data_prep", {**quoted, "ivfpq_factories": '["IVF256,PQ7"]'}, set())
    with pytest.raises(ValueError, match=r"'Flat' does not build at 384 dimensions: not an inverted-file"):
        collect("03_real_data_prep", {**quoted, "ivfpq_factories": '["Flat"]'}, set())


def real_defaults(**changes):
    """Notebook 04's parameters cell as it executes, with `changes` (papermill's -p)."""
    return {**notebook_defaults(ROOT / "notebooks" / "04_real_data.ipynb"), **changes}


def test_the_levers_measured_to_lose_are_set_through_study_levers_and_keyed_as_by_name():
    """`study_levers` sets the config's own fields: the same config, run key and run folder as the
    field set by name (as a written parameter file and the studies set it), the others at their
    defaults; papermill's -p passes the mapping as YAML text."""
    from amer_lib.runs.store import REAL_RUNS

    levers = {"spread_weight": 1.0, "train_components": "corpus", "single_target_step": True}
    config = collect("04_real_data", namespace := real_defaults(study_levers=levers), set())
    by_name = validate("04_real_data", CONFIGS["04_real_data"].defaults()).replace(**levers)
    assert config == by_name and (config.hard_negative_share, config.first_vector) == (0.0, "matched")
    assert REAL_RUNS.run_params(config.as_dict()) == REAL_RUNS.run_params(by_name.as_dict())
    assert REAL_RUNS.run_dir(config, "compound_k2_amer_seed0") == REAL_RUNS.run_dir(by_name, "compound_k2_amer_seed0")
    assert "study_levers" not in config.as_dict() and namespace["study_levers"] == levers
    text = collect("04_real_data", real_defaults(study_levers="{first_vector: single}"), set())
    assert text.first_vector == "single" and text.spread_weight == 0.0
    # none set: the recipe, keyed as before the levers left the cell
    assert collect("04_real_data", real_defaults(), set()) == validate(
        "04_real_data", CONFIGS["04_real_data"].defaults()
    )


@pytest.mark.parametrize(
    "levers,error,message",
    [
        (
            {"spread_wieght": 1.0},
            KeyError,
            r"\['spread_wieght'\] in study_levers \('spread_wieght': did you mean 'spread_weight'\?\); valid: ",
        ),
        ({"component_weight": 10.0}, KeyError, r"valid: single_target_step, .*\(any other parameter is set by its own"),
        ({"first_vector": "centroid"}, ValueError, "invalid value 'centroid' for parameter 'first_vector'; valid"),
        ({"spread_weight": -1.0}, ValueError, "parameter 'spread_weight' must be >= 0, got -1.0"),
        ("[spread_weight]", TypeError, r"'study_levers' must be a mapping of lever names to values .* got \['spread"),
        ("{spread_weight: [", ValueError, "'study_levers' takes a mapping; '{spread_weight: \\[' is not one in YAML"),
    ],
)
def test_a_wrong_study_lever_is_named_with_the_valid_ones(levers, error, message):
    with pytest.raises(error, match=message):
        collect("04_real_data", real_defaults(study_levers=levers), set())


def test_a_study_lever_set_twice_to_different_values_is_refused():
    same = collect("04_real_data", real_defaults(spread_weight=1.0, study_levers={"spread_weight": 1.0}), set())
    assert same.spread_weight == 1.0
    with pytest.raises(ValueError, match=r"study lever\(s\) \['spread_weight'\] set both by name and in study_levers"):
        collect("04_real_data", real_defaults(spread_weight=2.0, study_levers={"spread_weight": 1.0}), set())
    with pytest.raises(KeyError, match=r"unknown parameter\(s\) \['study_levers'\] for notebook 02_synthetic"):
        validate("02_synthetic", {**defaults(), "study_levers": {}})  # a notebook without study levers


def test_the_parameters_cell_holds_the_recipe_and_the_kept_levers_and_papermill_reads_every_one():
    """The cell (what `papermill --help-notebook` lists) holds no study lever, only `study_levers`,
    and papermill's parser reads every parameter of every notebook's cell."""
    import papermill

    for notebook in CONFIGS:
        path = ROOT / "notebooks" / f"{notebook}.ipynb"
        assert set(papermill.inspect_notebook(str(path))) == set(notebook_defaults(path)), notebook
    cell = notebook_defaults(ROOT / "notebooks" / "04_real_data.ipynb")
    study = {"single_target_step", "hard_negative_share", "spread_weight", "first_vector", "train_components"}
    assert set(CONFIGS["04_real_data"].study_lever_names()) == study and not study & set(cell)
    kept = {"component_weight", "component_distance", "component_single", "train_compounds"}
    assert kept <= set(cell) and cell["study_levers"] == {}
    listing = describe("04_real_data")
    assert "  study_levers (dict) = {}\n" in listing and "      spread_weight (float) = 0.0\n" in listing


@pytest.mark.parametrize("recipe", ["compound", "compound_distilled", None])
def test_the_shipped_recipes_key_their_runs_as_the_committed_figures_runs_are(recipe):
    """The committed notebook-04 runs resume: the shipped parameter files give the run key their
    figures folder's written parameters hold."""
    from amer_lib.runs.store import REAL_RUNS

    folder = ROOT / "figures" / ("04_real_data" + (f"_{recipe}" if recipe else ""))
    [written] = folder.glob("params_*.yaml")
    files = [ROOT / "params" / "04_real_data" / f"{recipe}.yaml"] if recipe else []
    shipped = from_files(ROOT / "notebooks" / "04_real_data.ipynb", *files)
    committed = CONFIGS["04_real_data"].from_yaml(written)
    assert REAL_RUNS.run_params(shipped.as_dict()) == REAL_RUNS.run_params(committed.as_dict())
