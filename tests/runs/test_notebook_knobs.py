"""Every notebook parameter bites, or is listed: a field of a notebook's config (`amer_lib.runs.configs`,
`amer_lib.data.preparation.PrepConfig`) that a training setting reads reaches the core configuration
the way the experiments build it (`query_encoders.train_config`, `query_encoders.build_query_encoder`),
and changing it changes the core value; the core field's own effect is tests/core/test_knobs.py's.
Fields that only name places are listed with a reason, and the fields not yet covered are an explicit,
named list (`NOT_YET_COVERED`): the meta-test fails for a field in none of these, and for a listed one
that has since got a test.
"""

import dataclasses

import pytest
import torch
from conftest import notebook_config

from amer_lib.core.train import TrainConfig
from amer_lib.params import CONFIGS
from amer_lib.runs.query_encoders import build_query_encoder, train_config

KNOB_TESTS: dict[str, list[str]] = {}  # "Class.field" -> the tests that show it reaching what it sets


def bites(*fields: str):
    def register(test):
        for name in fields:
            KNOB_TESTS.setdefault(name, []).append(test.__name__)
        return test

    return register


# another valid value for each training setting a notebook config holds under TrainConfig's name
OTHER_VALUES = {
    "steps": 7,
    "batch_size": 8,
    "lr": 0.0123,
    "temperature": 0.07,
    "matched_loss": "sum",
    "sampling": "teacher",
    "sampling_rate": 3.0,
    "eval_every": 3,
    "mixed_precision": True,
    "micro_batch_size": 4,
    "gradient_checkpointing": True,
    "stop_weight": 0.5,
    "exclude_fed_targets": False,
    "single_target_step": True,
    "hard_negative_share": 0.25,
    "spread_weight": 0.5,
    "first_vector": "single",
    "component_weight": 2.0,
    "component_distance": "ranking",
}
TRAINING_NOTEBOOKS = {"SyntheticConfig": "02_synthetic", "RealConfig": "04_real_data"}
# the notebooks that train, and their fields named as a TrainConfig field (but `seed`: the experiments
# pass the run's seed themselves, `test_the_synthetic_encoder_is_built_to_the_dimension_the_overrides_and_the_seed`)
SHARED = {
    (cls, field.name)
    for cls, notebook in TRAINING_NOTEBOOKS.items()
    for field in dataclasses.fields(CONFIGS[notebook])
    if field.name in {f.name for f in dataclasses.fields(TrainConfig)} - {"seed"}
}
for _cls, _field in sorted(SHARED):  # the generic test below covers these
    KNOB_TESTS.setdefault(f"{_cls}.{_field}", []).append("test_a_training_setting_reaches_the_training_config")

PLACE = "names a folder or file; where the notebook reads or writes, not what it computes"
PLACES_AND_PRINTING = {
    **{f"{cls}.results_dir": PLACE for cls in ("FailureConfig", "SyntheticConfig", "RealConfig", "AblationConfig")},
    **{f"{cls}.results_dir": PLACE for cls in ("BeyondConfig",)},
    **{f"{cls}.runs_dir": PLACE for cls in ("SyntheticConfig", "RealConfig", "AblationConfig", "BeyondConfig")},
    **{
        f"{cls}.figures_dir": PLACE + " (the figures' copy)"
        for cls in (
            "FailureConfig",
            "SyntheticConfig",
            "RealConfig",
            "AblationConfig",
            "BeyondConfig",
            "DiversityConfig",
        )
    },
    **{f"{cls}.prepared_dir": PLACE + " (the prepared benchmark)" for cls in ("FailureConfig", "RealConfig")},
    **{
        f"{cls}.{name}": PLACE + " (the params.yaml of the runs it reuses)"
        for cls in ("AblationConfig", "BeyondConfig", "DiversityConfig")
        for name in ("synthetic_params", "real_params")
    },
}

# fields without a knob test yet (issue 71: the rest of the ~150 notebook parameters), named one by one
NOT_YET_COVERED = {
    "FailureConfig": ["datasets", "retrievers", "bm25_distance_encoder", "distance", "min_questions", "device"],
    "SyntheticConfig": [
        "mlp_sweep_dims",
        "mlp_sweep_depths",
        "mlp_sweep_authors_bug",
        "backbone",
        "tuning_grid",
        "search_depth",
    ],
    "PrepConfig": [f.name for f in dataclasses.fields(CONFIGS["03_real_data_prep"])],
    "RealConfig": [
        "baselines",
        "expansion",
        "expansion_model",
        "mmr_query",
        "backbone",
        "encoder",
        "tuning_grid",
        "search_depth",
        "bootstrap_resamples",
    ],
    "AblationConfig": [
        "synthetic_transforms",
        "synthetic_setting",
        "sampling_modes",
        "real_seeds",
        "vector_counts",
        "merges",
        "bootstrap_resamples",
    ],
    "BeyondConfig": [
        "real_seeds",
        "max_n",
        "stop_threshold",
        "max_cosine",
        "merges",
        "bootstrap_resamples",
    ],
    "DiversityConfig": ["synthetic_setting", "seeds", "target_split", "random_pairs", "seen_questions"],
}
NOT_YET = {f"{cls}.{name}" for cls, names in NOT_YET_COVERED.items() for name in names}


def tiny_synthetic(**changes):
    """Notebook 02's config with a backbone small enough to build in a moment."""
    overrides = dict(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=2)
    return notebook_config("02_synthetic", **{"backbone_overrides": overrides, "dim": 8, "device": "cpu", **changes})


@pytest.mark.parametrize("cls, field", sorted(SHARED))
def test_a_training_setting_reaches_the_training_config(cls, field):
    """Built as the experiments build it (`train_config(params, n, seed)`), the core config holds the
    notebook's value, and another valid value there changes it (`eval_every` also sets the
    checkpoints' cadence)."""
    params = notebook_config(TRAINING_NOTEBOOKS[cls], device="cpu")
    value = OTHER_VALUES[field]
    assert getattr(params, field) != value, f"pick another value for {field}: {value!r} is the notebook's own"
    before = train_config(params, n_outputs=5, seed=0)
    after = train_config(params.replace(**{field: value}), n_outputs=5, seed=0)
    assert getattr(after, field) == value and getattr(before, field) == getattr(params, field)
    changed = {f.name for f in dataclasses.fields(TrainConfig) if getattr(before, f.name) != getattr(after, f.name)}
    assert changed == ({field, "checkpoint_every"} if field == "eval_every" else {field})


@bites("SyntheticConfig.n_queries")
def test_n_queries_is_the_number_of_vectors_amer_trains(monkeypatch, tmp_path):
    """Notebook 02's runs train AMER with n_outputs = n_queries and single-query with 1
    (`synthetic._train_and_evaluate`, stopped once it has asked for its training)."""
    from amer_lib.experiments import synthetic

    class Asked(Exception):
        pass

    def asked(params, task, n_outputs, *args):
        raise Asked(n_outputs)

    monkeypatch.setattr(synthetic, "train_on_task", asked)
    for system, n_queries, expected in (("amer", 2, 2), ("amer", 4, 4), ("single", 4, 1)):
        with pytest.raises(Asked) as raised:
            synthetic._train_and_evaluate(
                tiny_synthetic(n_queries=n_queries), None, None, system, torch.device("cpu"), tmp_path, False, None
            )
        assert raised.value.args == (expected,)


@bites("SyntheticConfig.dim", "SyntheticConfig.backbone_overrides", "SyntheticConfig.seed")
def test_the_synthetic_encoder_is_built_to_the_dimension_the_overrides_and_the_seed():
    model = build_query_encoder(tiny_synthetic(dim=8), 0, 8, torch.device("cpu"))
    assert model.input_projection.in_features == 8 and model.backbone.config.hidden_size == 16
    wider = tiny_synthetic(backbone_overrides=dict(hidden_size=32, intermediate_size=32))
    assert build_query_encoder(wider, 0, 8, torch.device("cpu")).backbone.config.hidden_size == 32
    params = tiny_synthetic(seed=3)
    # as `synthetic.train_on_task` builds them: the encoder and the training config from params.seed
    first = build_query_encoder(params, params.seed, params.dim, torch.device("cpu"))
    again = build_query_encoder(params, params.seed, params.dim, torch.device("cpu"))
    other = build_query_encoder(tiny_synthetic(seed=4), 4, params.dim, torch.device("cpu"))
    assert torch.equal(first.output_projection.weight, again.output_projection.weight)
    assert not torch.equal(first.output_projection.weight, other.output_projection.weight)
    assert train_config(params, 5, params.seed).seed == 3


@bites("SyntheticConfig.finetune", "RealConfig.finetune")
def test_finetune_lora_trains_only_the_adapters_and_the_projections():
    full = build_query_encoder(tiny_synthetic(finetune="full"), 0, 8, torch.device("cpu"))
    lora = build_query_encoder(tiny_synthetic(finetune="lora"), 0, 8, torch.device("cpu"))
    assert all(p.requires_grad for p in full.parameters())
    trained = {name for name, p in lora.named_parameters() if p.requires_grad}
    assert trained and all("lora_" in name or "projection" in name for name in trained)
    real = notebook_config("04_real_data", device="cpu")
    assert real.replace(finetune="lora").finetune == "lora" and real.replace(finetune="full").finetune == "full"


@bites("SyntheticConfig.mixed_precision", "RealConfig.mixed_precision")
def test_mixed_precision_makes_the_encoder_generate_in_bfloat16_and_lora_freeze_in_bfloat16():
    for mixed in (False, True):
        model = build_query_encoder(tiny_synthetic(mixed_precision=mixed, finetune="lora"), 0, 8, torch.device("cpu"))
        assert model.mixed_precision == mixed
        frozen = {p.dtype for name, p in model.backbone.named_parameters() if not p.requires_grad}
        assert frozen == {torch.bfloat16 if mixed else torch.float32}
    real = notebook_config("04_real_data", device="cpu")
    assert real.replace(mixed_precision=True).mixed_precision is True
    assert real.replace(mixed_precision=False).mixed_precision is False


@bites("SyntheticConfig.stop_weight", "RealConfig.stop_weight")
def test_a_positive_stop_weight_gives_the_encoder_a_stop_head():
    assert build_query_encoder(tiny_synthetic(), 0, 8, torch.device("cpu")).stop_head is None
    assert build_query_encoder(tiny_synthetic(stop_weight=0.5), 0, 8, torch.device("cpu")).stop_head is not None


@bites("RealConfig.component_single")
def test_component_single_keeps_the_component_term_in_single_querys_training_config():
    params = notebook_config("04_real_data", device="cpu").replace(component_weight=2.0, component_distance="ranking")
    assert train_config(params.for_system("single"), 1, 0).component_weight == 0.0
    kept = train_config(params.replace(component_single=True).for_system("single"), 1, 0)
    assert (kept.component_weight, kept.component_distance) == (2.0, "ranking")


@bites(
    "RealConfig.datasets",
    "RealConfig.systems",
    "RealConfig.seeds",
    "RealConfig.workers",
    "RealConfig.train_compounds",
    "RealConfig.train_components",
)
def test_notebook_04_makes_one_run_per_dataset_system_and_seed_on_its_workers(monkeypatch):
    """`real_data.run_all` hands the dispatcher every (dataset, system, seed) in that order, and the
    workers (the benchmark, the cache and the preflight stubbed: nothing is trained)."""
    from amer_lib.experiments import real_data

    class Prepared:
        """A prepared WordNet benchmark (not a compound one) of datasets a and b."""

        check_compound = real_data.Benchmark.check_compound

        def __init__(self, directory):
            self.directory, self.datasets, self.manifest = directory, ["a", "b"], {"recipe": {"source": "wordnet"}}

        def check(self, datasets, *args):
            pass

    handed = []
    monkeypatch.setattr(real_data, "Benchmark", Prepared)
    monkeypatch.setattr(real_data, "cached_result", lambda *job: None)
    monkeypatch.setattr(real_data, "memory_preflight", lambda *args: None)
    monkeypatch.setattr(
        real_data, "run_jobs", lambda runner, jobs, cached, workers, *a, **k: handed.append((jobs, workers))
    )
    params = notebook_config(
        "04_real_data", datasets=["a", "b"], systems=["amer"], seeds=[3, 5], workers=3, device="cpu"
    )
    real_data.run_all(params, progress=False)
    jobs, workers = handed[0]
    assert [job[1:] for job in jobs] == [("a", "amer", 3), ("a", "amer", 5), ("b", "amer", 3), ("b", "amer", 5)]
    assert workers == 3 and all(job[0] is params for job in jobs)
    # redrawing the training compounds needs a compound benchmark: refused on this one, naming the setting
    for changes, setting in (
        ({"train_compounds": 50}, "train_compounds > 0"),
        ({"train_components": "corpus"}, 'train_components = "corpus"'),
    ):
        with pytest.raises(ValueError, match=f"^{setting} redraws a compound benchmark's training compounds"):
            real_data.run_all(params.replace(**changes), progress=False)


@bites("SyntheticConfig.transforms", "SyntheticConfig.settings", "SyntheticConfig.workers", "SyntheticConfig.systems")
def test_notebook_02_makes_one_job_per_transform_and_setting_and_a_run_per_system(monkeypatch):
    from amer_lib.experiments import synthetic

    handed = []
    monkeypatch.setattr(synthetic, "run_settings", lambda jobs, workers, progress: handed.append((jobs, workers)) or [])
    params = tiny_synthetic(transforms=["mlp"], settings=["ood", "single"], workers=3)
    synthetic.run_all(params, progress=False)
    assert handed == [([(params, "mlp", "ood"), (params, "mlp", "single")], 3)]
    names, _ = synthetic._cached_setting(tiny_synthetic(systems=["amer"], seed=2), "mlp", "ood")
    assert names == ["mlp_ood_amer_seed2", "mlp_ood_oracle_seed2"]


@bites("SyntheticConfig.threads", "RealConfig.threads")
def test_threads_is_the_number_of_cpu_threads_a_training_process_runs_on():
    from amer_lib.core.device import with_threads

    for notebook in ("02_synthetic", "04_real_data"):
        for threads in (1, 2):
            params = notebook_config(notebook, threads=threads, device="cpu")
            assert with_threads(lambda config: torch.get_num_threads(), params) == threads


@bites("SyntheticConfig.nproc_per_node", "RealConfig.nproc_per_node")
def test_nproc_per_node_above_one_trains_each_run_with_torchrun_one_run_at_a_time(monkeypatch, capsys):
    from amer_lib.runs import dispatch

    for notebook in ("02_synthetic", "04_real_data"):
        launched, ran = [], []
        monkeypatch.setattr(dispatch.torchrun, "launch", lambda runner, params, job, progress: launched.append(job))
        runner = lambda params, *job, **options: ran.append(job)  # noqa: E731
        for nproc in (2, 1):
            params = notebook_config(notebook, nproc_per_node=nproc, batch_size=8, workers=1, device="cpu")
            dispatch.run_jobs(runner, [(params, "x"), (params, "y")], lambda *job: None, 1, progress=False)
        assert launched == [("x",), ("y",)] and ran == [("x",), ("y",)]
        with pytest.raises(ValueError, match="batch_size 9 is the global batch and must divide evenly among"):
            params = notebook_config(notebook, nproc_per_node=2, batch_size=9, device="cpu")
            dispatch.run_jobs(runner, [(params, "x")], lambda *job: None, 1, progress=False)


@bites("SyntheticConfig.n_train", "SyntheticConfig.n_test", "SyntheticConfig.corpus_size", "SyntheticConfig.dim")
def test_the_synthetic_task_has_the_configs_sizes():
    """Notebook 02's task (`task_from_params`, what `run_setting` builds): n_train and n_test inputs
    of dim coordinates, five targets each, a corpus of corpus_size vectors."""
    from amer_lib.data.synthetic import task_from_params

    for n_train, n_test, corpus_size, dim in ((30, 7, 400, 6), (40, 9, 300, 4)):
        params = tiny_synthetic(n_train=n_train, n_test=n_test, corpus_size=corpus_size, dim=dim)
        task = task_from_params(params, "linear", "single")
        assert task.train_inputs.shape == (n_train, dim) and task.test_inputs.shape == (n_test, dim)
        assert task.train_target_ids.shape == (n_train, 5) and task.corpus.shape == (corpus_size, dim)


@bites("SyntheticConfig.mlp_layers", "SyntheticConfig.train_transform", "SyntheticConfig.seed")
def test_mlp_layers_shapes_the_mlp_targets_and_train_transform_only_the_training_ones():
    from amer_lib.data.synthetic import task_from_params

    small = dict(n_train=30, n_test=7, corpus_size=400, dim=6)
    task = lambda **changes: task_from_params(tiny_synthetic(**small, **changes), "mlp", "single")  # noqa: E731
    base, deeper, reseeded = task(), task(mlp_layers=3), task(seed=1)
    targets = lambda t, split: t.corpus[getattr(t, f"{split}_target_ids")]  # noqa: E731
    for other in (deeper, reseeded):
        assert not (targets(base, "train") == targets(other, "train")).all()
    assert (base.train_inputs == deeper.train_inputs).all()  # the inputs do not depend on the depth
    linear_trained = task(train_transform="linear")
    assert (targets(linear_trained, "test") == targets(base, "test")).all()
    assert not (targets(linear_trained, "train") == targets(base, "train")).all()


@bites("BeyondConfig.synthetic_steps", "BeyondConfig.synthetic_seeds", "BeyondConfig.stop_weight")
def test_notebook_07s_varying_task_trains_notebook_02s_model_for_its_steps_seeds_and_stop_weight(monkeypatch):
    from amer_lib.experiments import beyond

    made, varying_run = [], beyond.varying_run
    monkeypatch.setattr(beyond, "varying_run", lambda params, progress: made.append(params))
    params = notebook_config("07_beyond", synthetic_steps=17, synthetic_seeds=[4, 6], stop_weight=0.25)
    beyond.varying_runs(params, tiny_synthetic(), progress=False)
    assert [p.seed for p in made] == [4, 6]
    configs = [train_config(p, p.n_queries, p.seed) for p in made]
    assert [(c.steps, c.stop_weight, c.seed) for c in configs] == [(17, 0.25, 4), (17, 0.25, 6)]
    with pytest.raises(ValueError, match="the varying task trains a stop head: stop_weight must be > 0, got 0"):
        varying_run(beyond.varying_config(params.replace(stop_weight=0.0), tiny_synthetic(), 4))


@bites("SyntheticConfig.device", "RealConfig.device")
def test_a_run_trains_on_the_device_its_config_names(monkeypatch, tmp_path):
    """Notebook 02's `run_setting` and notebook 04's `run_one` resolve `params.device` (stopped there),
    and the resolution gives the CPU for "cpu" and refuses "cuda" by name where torch sees no GPU."""
    from types import SimpleNamespace

    from amer_lib.core.device import DeviceUnavailableError, resolve_device
    from amer_lib.experiments import real_data, synthetic

    class Resolved(Exception):
        pass

    def stopped(name):
        raise Resolved(name)

    for module in (synthetic, real_data):
        monkeypatch.setattr(module, "resolve_device", stopped)
    monkeypatch.setattr(real_data, "Benchmark", lambda directory: None)
    monkeypatch.setattr(real_data, "RunContext", SimpleNamespace(of=lambda params, benchmark: None))
    for device in ("cpu", "auto"):
        with pytest.raises(Resolved) as raised:
            synthetic.run_setting(tiny_synthetic(device=device, runs_dir=str(tmp_path)), "linear", "single", False)
        assert raised.value.args == (device,)
        with pytest.raises(Resolved) as raised:
            real_data.run_one(notebook_config("04_real_data", device=device), "a", "amer", 0, progress=False)
        assert raised.value.args == (device,)
    assert resolve_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailableError, match="device 'cuda' was asked for, but torch"):
            resolve_device("cuda")


def test_every_notebook_field_has_a_knob_test_a_place_listing_or_a_named_todo():
    """Each field of each notebook's config is in exactly one of: a registered test, the places and
    printing, the named TODO list; a new field fails here until it is sorted."""
    names = {f"{cls.__name__}.{f.name}" for cls in CONFIGS.values() for f in dataclasses.fields(cls)}
    groups = {"tests": set(KNOB_TESTS), "places": set(PLACES_AND_PRINTING), "todo": NOT_YET}
    unsorted = sorted(names - set().union(*groups.values()))
    assert not unsorted, f"notebook fields without a knob test, a place/printing reason or a TODO entry: {unsorted}"
    for a, b in (("tests", "places"), ("tests", "todo"), ("places", "todo")):
        assert not groups[a] & groups[b], f"in both {a} and {b}: {sorted(groups[a] & groups[b])}"
    assert not set().union(*groups.values()) - names, "listed names that are no field"
