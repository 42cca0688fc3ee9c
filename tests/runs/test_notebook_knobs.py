"""Every notebook parameter bites, or is listed: a field of a notebook's config (`amer_lib.runs.configs`,
`amer_lib.data.preparation.PrepConfig`) that a training setting reads reaches the core configuration
the way the experiments build it (`query_encoders.train_config`, `query_encoders.build_query_encoder`),
and changing it changes the core value; the core field's own effect is tests/core/test_knobs.py's.
Every other field reaches what the notebook's code cells hand it to (the `amer_lib.experiments`
function called with the config or with the value), shown by the effect it promises (a count, a file,
a refusal, a changed number) or by the argument an expensive callee, stubbed, receives; notebook 03's
are in tests/runs/test_notebook_knobs_prep.py. Fields that only name places are listed with a reason,
and fields not yet covered would be an explicit, named list (`NOT_YET_COVERED`, empty now): the
meta-test fails for a field in none of these, and for a listed one that has since got a test.
"""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import notebook_config
from stand_ins import knob_registry

from amer_lib.beyond.component import ComponentTerm
from amer_lib.core.loss import LOSS_TERMS, StopTerm
from amer_lib.core.train import SETTING_GROUPS, TrainConfig
from amer_lib.params import CONFIGS
from amer_lib.runs.query_encoders import build_query_encoder, train_config

KNOB_TESTS, bites = knob_registry()  # "Class.field" -> the tests that show it reaching what it sets


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
# pass the run's seed themselves, `test_the_synthetic_encoder_is_built_to_the_dimension_the_overrides_and_the_seed`;
# and a group of settings, whose notebook fields are its `FIELDS`, tested below)
SHARED = {
    (cls, field.name)
    for cls, notebook in TRAINING_NOTEBOOKS.items()
    for field in dataclasses.fields(CONFIGS[notebook])
    if field.name in {f.name for f in dataclasses.fields(TrainConfig)} - {"seed"} - set(SETTING_GROUPS)
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
            "PrepConfig",
        )
    },
    **{f"{cls}.prepared_dir": PLACE + " (the prepared benchmark)" for cls in ("FailureConfig", "RealConfig")},
    **{
        f"{cls}.{name}": PLACE + " (the params.yaml of the runs it reuses)"
        for cls in ("AblationConfig", "BeyondConfig", "DiversityConfig")
        for name in ("synthetic_params", "real_params")
    },
}

# fields without a knob test yet, named one by one (issue 71 emptied it: a new field that cannot be
# tested yet goes here, "Class": ["field", ...], and the meta-test keeps the list exact)
NOT_YET_COVERED: dict[str, list[str]] = {}
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


def notebook_fields(notebook: str) -> set[str]:
    """The fields a notebook's parameters cell shows (its config's, less the internal ones)."""
    return {f.name for f in dataclasses.fields(CONFIGS[notebook]) if not f.metadata.get("internal")}


# the notebooks that train, and their fields that set a group of settings' (`SETTING_GROUPS`: the
# optimizer's, scheduled sampling's, the memory layout's, the matched loss's; each group's `FIELDS`)
GROUP_FIELDS = {
    (cls, name, group, field)
    for cls, notebook in TRAINING_NOTEBOOKS.items()
    for group, settings in SETTING_GROUPS.items()
    for field, name in settings.FIELDS.items()
    if name in notebook_fields(notebook)
}
for _cls, _name, _group, _field in sorted(GROUP_FIELDS):  # the test below covers these
    KNOB_TESTS.setdefault(f"{_cls}.{_name}", []).append("test_a_grouped_setting_reaches_its_group")


@pytest.mark.parametrize("cls, name, group, field", sorted(GROUP_FIELDS))
def test_a_grouped_setting_reaches_its_group(cls, name, group, field):
    """Built as the experiments build it, the training config's group (`optimizer`, `sampling`,
    `memory`, `loss`) holds the notebook's value of the field, and another valid value there changes
    that setting only, in that group only."""
    params = notebook_config(TRAINING_NOTEBOOKS[cls], device="cpu")
    value = OTHER_VALUES[name]
    assert getattr(params, name) != value, f"pick another value for {name}: {value!r} is the notebook's own"
    before = train_config(params, n_outputs=5, seed=0)
    after = train_config(params.replace(**{name: value}), n_outputs=5, seed=0)
    assert getattr(getattr(before, group), field) == getattr(params, name)
    assert getattr(getattr(after, group), field) == value
    changed = {f.name for f in dataclasses.fields(TrainConfig) if getattr(before, f.name) != getattr(after, f.name)}
    assert changed == {group}
    old, new = getattr(before, group), getattr(after, group)
    assert {f.name for f in dataclasses.fields(new) if getattr(old, f.name) != getattr(new, f.name)} == {field}


# the notebooks that train, and their fields that set a loss term's (`LossTerm.FIELDS`)
TERM_FIELDS = {
    (cls, name, term.NAME, field)
    for cls, notebook in TRAINING_NOTEBOOKS.items()
    for term in LOSS_TERMS.values()
    for field, name in term.FIELDS.items()
    if name in notebook_fields(notebook)
}
for _cls, _name, _term, _field in sorted(TERM_FIELDS):  # the test below covers these
    KNOB_TESTS.setdefault(f"{_cls}.{_name}", []).append("test_a_loss_terms_field_reaches_its_term")


@pytest.mark.parametrize("cls, name, term, field", sorted(TERM_FIELDS))
def test_a_loss_terms_field_reaches_its_term(cls, name, term, field):
    """Built as the experiments build it, the training config holds the term a notebook field sets
    (a weight above 0 adds it, with the notebook's other field values), holding the notebook's value;
    at the notebook's defaults (the paper's loss) it holds no term."""
    params = notebook_config(TRAINING_NOTEBOOKS[cls], device="cpu")
    assert train_config(params, n_outputs=5, seed=0).terms == ()
    weight = LOSS_TERMS[term].FIELDS["weight"]
    value = OTHER_VALUES[name]
    changed = params.replace(**{weight: OTHER_VALUES[weight], name: value})
    built = train_config(changed, n_outputs=5, seed=0).term(term)
    assert built is not None and getattr(built, field) == value


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
    assert train_config(params.for_system("single"), 1, 0).terms == ()
    kept = train_config(params.replace(component_single=True).for_system("single"), 1, 0)
    assert kept.terms == (ComponentTerm(2.0, "ranking"),)


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

        check_draw = real_data.Benchmark.check_draw

        def __init__(self, directory):
            self.directory, self.datasets, self.manifest = directory, ["a", "b"], {"recipe": {"source": "wordnet"}}

        def check(self, datasets, *args):
            pass

        def validation_questions(self, dataset, seed, **options):
            return [None] * 300  # validation enough to choose on: no warning

    handed = []
    monkeypatch.setattr(real_data, "Benchmark", Prepared)
    monkeypatch.setattr(real_data, "real_entry", lambda *job, benchmark: SimpleNamespace(cached=lambda: None))
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
        ({"train_components": "disjoint"}, 'train_components = "disjoint"'),
    ):
        with pytest.raises(ValueError, match=f"^{setting} redraws a compound benchmark's training compounds"):
            real_data.run_all(params.replace(**changes), progress=False)


@bites("RealConfig.train_component_count")
def test_train_component_count_reaches_each_runs_draw_and_needs_compounds_drawn_afresh():
    """A run's questions come from `RunContext.training_split`, which hands the benchmark the count
    (what the count draws: tests/data/test_compound.py); the prepared split has none to narrow."""
    from amer_lib.runs.run_context import RunContext

    asked = []
    context = object.__new__(RunContext)
    context.benchmark = SimpleNamespace(training_split=lambda *args, **kw: asked.append((args, kw)) or ([1], [2]))
    params = notebook_config("04_real_data", device="cpu").replace(train_compounds=300, train_component_count=40)
    assert context.training_split(params, "compound_k3", 2) == ([1], [2])
    assert asked == [(("compound_k3", 2), dict(compounds=300, components="findable", component_count=40))]
    with pytest.raises(ValueError, match="^train_component_count = 40 draws compounds afresh from fewer components"):
        params.replace(train_compounds=0)
    assert params.replace(train_compounds=0, train_components="disjoint").train_component_count == 40


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
    from amer_lib.data.synthetic_task import task_from_params

    for n_train, n_test, corpus_size, dim in ((30, 7, 400, 6), (40, 9, 300, 4)):
        params = tiny_synthetic(n_train=n_train, n_test=n_test, corpus_size=corpus_size, dim=dim)
        task = task_from_params(params, "linear", "single")
        assert task.train_inputs.shape == (n_train, dim) and task.test_inputs.shape == (n_test, dim)
        assert task.train_target_ids.shape == (n_train, 5) and task.corpus.shape == (corpus_size, dim)


@bites("SyntheticConfig.mlp_layers", "SyntheticConfig.train_transform", "SyntheticConfig.seed")
def test_mlp_layers_shapes_the_mlp_targets_and_train_transform_only_the_training_ones():
    from amer_lib.data.synthetic_task import task_from_params

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
    assert [(c.steps, c.terms, c.seed) for c in configs] == [(17, (StopTerm(0.25),), 4), (17, (StopTerm(0.25),), 6)]
    with pytest.raises(ValueError, match="the varying task trains a stop head: stop_weight must be > 0, got 0"):
        varying_run(beyond.varying_config(params.replace(stop_weight=0.0), tiny_synthetic(), 4))


@bites("SyntheticConfig.device", "RealConfig.device")
def test_a_run_trains_on_the_device_its_config_names(monkeypatch, tmp_path):
    """Notebook 02's `run_setting` and notebook 04's `run_one` resolve `params.device` (stopped there),
    and the resolution gives the CPU for "cpu" and refuses "cuda" by name where torch sees no GPU."""
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


class Asked(Exception):
    """Raised by a stand-in for an expensive callee: its args are what the code under test handed it."""


def asking(*args, **options):
    raise Asked(*args, *([options] if options else []))


# ----- notebook 01 ------------------------------------------------------------------------------------
@bites(
    "FailureConfig.datasets",
    "FailureConfig.retrievers",
    "FailureConfig.bm25_distance_encoder",
    "FailureConfig.device",
)
def test_notebook_01_runs_each_retriever_on_each_dataset_with_its_distance_encoder_and_device(monkeypatch, tmp_path):
    """`failure_runs(benchmark, params)` makes one `failure_run` per dataset and retriever, with the
    BM25 distance encoder and the device ("auto": None, the encoder's own choice); `prepared_benchmark`
    (the notebook's first cell) prepares the offline benchmark on that device, checks those datasets,
    and refuses datasets that are not the offline benchmark's where nothing is prepared."""
    from amer_lib.data import preparation
    from amer_lib.experiments import failure_analysis

    handed = []
    monkeypatch.setattr(
        failure_analysis,
        "failure_run",
        lambda benchmark, dataset, retriever, results_dir, encoder, device: handed.append(
            (dataset, retriever, encoder, device)
        ),
    )
    params = notebook_config(
        "01_failure_analysis",
        datasets=["wordnet_kinds", "b"],
        retrievers=["bm25", "contriever-msmarco"],
        bm25_distance_encoder="stella-400m",
        device="cpu",
    )
    failure_analysis.failure_runs(None, params)
    failure_analysis.failure_runs(
        None, params.replace(datasets=["wordnet_kinds"], retrievers=["minilm"], device="auto")
    )
    assert handed == [
        ("wordnet_kinds", "bm25", "stella-400m", "cpu"),
        ("wordnet_kinds", "contriever-msmarco", "stella-400m", "cpu"),
        ("b", "bm25", "stella-400m", "cpu"),
        ("b", "contriever-msmarco", "stella-400m", "cpu"),
        ("wordnet_kinds", "minilm", "stella-400m", None),  # `failure_run` uses it for BM25 alone (the next test)
    ]
    prepared, checked = [], []

    class Benchmark:
        def __init__(self, directory):
            pass

        def check(self, datasets):
            checked.append(datasets)

    monkeypatch.setattr(preparation, "prepare", lambda recipe, progress: prepared.append(recipe))
    monkeypatch.setattr(preparation, "Benchmark", Benchmark)
    offline = notebook_config("03_real_data_prep")
    chosen = params.replace(datasets=["wordnet_kinds"])
    preparation.prepared_benchmark(tmp_path / "p", chosen.datasets, offline, chosen.device)
    assert [(r.prepared_dir, r.device) for r in prepared] == [(str(tmp_path / "p"), "cpu")]
    assert checked == [["wordnet_kinds"]]
    with pytest.raises(FileNotFoundError, match=r"holds no prepared benchmark; prepare \['wordnet_kinds', 'b'\]"):
        preparation.prepared_benchmark(tmp_path / "q", params.datasets, offline, params.device)


@bites("FailureConfig.bm25_distance_encoder")
def test_bm25s_target_distances_are_measured_in_the_bm25_distance_encoders_embeddings(monkeypatch, tmp_path):
    """`failure_run`: a dense retriever's targets are embedded by itself, BM25's (no embeddings of its
    own) by `bm25_distance_encoder`, which the run's settings record (retrieval and scoring stubbed)."""
    from amer_lib.experiments import failure_analysis

    read = []
    questions = [SimpleNamespace(qid=f"q{i}", targets=[["d0"], ["d1"]]) for i in range(3)]
    benchmark = SimpleNamespace(directory=tmp_path, questions=lambda dataset, split: questions)
    monkeypatch.setattr(failure_analysis, "retrieve", lambda *args: [["d0", "d1"]] * 3)
    monkeypatch.setattr(failure_analysis, "document_embeddings", lambda benchmark, name, *args: read.append(name))
    monkeypatch.setattr(failure_analysis, "target_distances", lambda shards, qs: {"cosine": np.zeros(3)})
    params = notebook_config("01_failure_analysis", bm25_distance_encoder="stella-400m", results_dir=str(tmp_path))
    for retriever in ("bm25", "minilm"):
        run = failure_analysis.failure_run(benchmark, "a", retriever, params.results_dir, params.bm25_distance_encoder)
        assert run["settings"]["distance_encoder"] == read[-1]
    assert read == ["stella-400m", "minilm"]


@bites("FailureConfig.distance", "FailureConfig.min_questions")
def test_figure_1_bins_by_the_distance_asked_for_and_merges_answer_sizes_under_min_questions():
    """Eight questions whose cosine and Euclidean distances rank them in opposite orders: the nearest
    quartile is questions 0-1 by cosine (both found: 100%), 6-7 by Euclidean (neither: 0%), and
    Spearman's rho has the opposite sign. Four questions of 2 answers and four of 3: min_questions 4
    gives each size its column, 5 merges them into one (">=2")."""
    from amer_lib.experiments.failure_analysis import figure1_rows, trends

    run = {
        "settings": {"dataset": "a", "retriever": "minilm"},
        "mrecall": [1, 1, 1, 0, 1, 0, 0, 0],
        "cosine": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
        "euclidean": [0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1],
        "answers": [2, 2, 2, 2, 3, 3, 3, 3],
    }
    for distance, nearest, sign in (("cosine", 100.0, -1), ("euclidean", 0.0, 1)):
        params = notebook_config("01_failure_analysis", distance=distance, min_questions=4)
        rows = figure1_rows([run], params.distance, params.min_questions)
        first = next(r for r in rows if r["answers"] == "all" and r["bin"] == "<25%")
        assert (first["questions"], first["mrecall"]) == (2, nearest)
        assert np.sign(trends([run], rows, params.distance)[0]["spearman"]) == sign
    columns = lambda n: list(dict.fromkeys(r["answers"] for r in figure1_rows([run], "cosine", n)))  # noqa: E731
    assert columns(notebook_config("01_failure_analysis", min_questions=4).min_questions) == ["all", "2", "3"]
    assert columns(notebook_config("01_failure_analysis", min_questions=5).min_questions) == ["all", ">=2"]


# ----- notebook 02 ------------------------------------------------------------------------------------
@bites("SyntheticConfig.mlp_sweep_dims", "SyntheticConfig.mlp_sweep_depths", "SyntheticConfig.mlp_sweep_authors_bug")
def test_the_mlp_sweep_trains_a_cell_per_dimension_and_depth_and_with_the_bug_one_on_linear_targets(monkeypatch):
    """`mlp_sweep(params, mlp_sweep_dims, mlp_sweep_depths, mlp_sweep_authors_bug)` (training stubbed):
    2 x 2 cells of MLP targets, three rows each (single-query, AMER, the oracle); the authors' bug adds
    a cell per (d, depth) trained on linear targets, single-query only."""
    from amer_lib.experiments import synthetic

    handed = []

    def trained(jobs, workers, progress):
        handed.extend(jobs)
        metrics = {"mrecall@10": 0.5, "mrecall@100": 0.5}
        return [[{"system": s, "metrics": metrics} for s in [*p.systems, "oracle"]] for p, *_ in jobs]

    monkeypatch.setattr(synthetic, "run_settings", trained)
    params = tiny_synthetic(mlp_sweep_dims=[4, 6], mlp_sweep_depths=[2, 3], mlp_sweep_authors_bug=False)
    rows = synthetic.mlp_sweep(params, params.mlp_sweep_dims, params.mlp_sweep_depths, params.mlp_sweep_authors_bug)
    cells = [(p.dim, p.mlp_layers, p.train_transform, p.systems) for p, *_ in handed]
    assert cells == [(d, depth, "mlp", ["single", "amer"]) for d in (4, 6) for depth in (2, 3)] and len(rows) == 12
    handed.clear()
    params = params.replace(mlp_sweep_dims=[4], mlp_sweep_depths=[3], mlp_sweep_authors_bug=True)
    rows = synthetic.mlp_sweep(params, params.mlp_sweep_dims, params.mlp_sweep_depths, params.mlp_sweep_authors_bug)
    cells = [(p.dim, p.mlp_layers, p.train_transform, p.systems) for p, *_ in handed]
    assert cells == [(4, 3, "mlp", ["single", "amer"]), (4, 3, "linear", ["single"])] and len(rows) == 4


@bites("SyntheticConfig.tuning_grid")
def test_notebook_02s_tuning_trains_amer_at_every_grid_point_of_every_setting(monkeypatch):
    """`tune(params, tuning_grid)` (training stubbed): AMER alone at each point, one epoch of 40
    inputs less the 10% held out, 36 at batch 8, as 36 // 8 = 4 full batches, in each setting."""
    from amer_lib.experiments import synthetic

    handed = []
    done = {"system": "amer", "best_step": 1, "history": [{"step": 1, "val_loss": 0.5}]}
    done["validation_metrics"] = {"mrecall@100": 0.25}

    def trained(jobs, workers, progress):
        handed.extend(jobs)
        return [[done] for _ in jobs]

    monkeypatch.setattr(synthetic, "run_settings", trained)
    params = tiny_synthetic(
        transforms=["linear"],
        settings=["single", "ood"],
        n_train=40,
        batch_size=8,
        tuning_grid={"lr": [0.1, 0.2], "epochs": [1]},
    )
    rows = synthetic.tune(params, params.tuning_grid, progress=False)
    assert [(s, p.lr, p.steps, p.systems) for p, _, s in handed] == [
        (setting, lr, 4, ["amer"]) for setting in ("single", "ood") for lr in (0.1, 0.2)
    ]
    assert [(r["setting"], r["lr"], r["val_mrecall"]) for r in rows][:2] == [
        ("single", 0.1, 25.0),
        ("single", 0.2, 25.0),
    ]


@bites("SyntheticConfig.merge")
def test_notebook_02_merges_amers_test_and_validation_lists_with_its_merge(monkeypatch, tmp_path):
    """Notebook 02's trained systems (training and generation stubbed) search and score their test
    and validation inputs for real, merging the lists with `merge`."""
    from amer_lib.experiments import synthetic

    seen = []
    real_search = synthetic.multi_vector_search
    monkeypatch.setattr(
        synthetic,
        "train_on_task",
        lambda *a: (None, SimpleNamespace(seconds=0.0, best_step=1, best_val_loss=0.0, history=[])),
    )
    monkeypatch.setattr(synthetic, "vector_prompts", lambda model, inputs, device: inputs)
    monkeypatch.setattr(synthetic, "generated_vectors", lambda model, inputs, n: np.ones((len(inputs), n, 8)))
    monkeypatch.setattr(
        synthetic,
        "multi_vector_search",
        lambda index, queries, k, **options: seen.append(options["merge"]) or real_search(index, queries, k, **options),
    )
    for merge in ("round_robin", "max_score"):
        params = tiny_synthetic(merge=merge, n_train=30, n_test=20, corpus_size=300)
        a_task = synthetic.task_from_params(params, "linear", "single")
        index = synthetic.VectorIndex(a_task.corpus)
        synthetic._train_and_evaluate(params, a_task, index, "amer", torch.device("cpu"), tmp_path, False, None)
    assert seen == ["round_robin", "round_robin", "max_score", "max_score"]  # test, then validation, per merge


@bites("SyntheticConfig.search_depth")
def test_search_depth_is_how_many_documents_each_vector_retrieves_before_the_merge(monkeypatch, tmp_path):
    """Notebook 02's oracle (one vector; the trained systems stubbed): searched 10 deep, its top 100
    is its top 10 (Recall@100 = Recall@10); 100 deep, Recall@100 is higher."""
    from amer_lib.experiments import synthetic

    monkeypatch.setattr(synthetic, "_train_and_evaluate", lambda *args: {"metrics": {}})
    oracle = {}
    for depth in (10, 100):
        params = tiny_synthetic(
            systems=["single"],
            n_train=30,
            n_test=20,
            corpus_size=300,
            search_depth=depth,
            results_dir=str(tmp_path / f"results{depth}"),
            runs_dir=str(tmp_path / f"runs{depth}"),
        )
        oracle[depth] = synthetic.run_setting(params, "linear", "single", progress=False)[-1]["metrics"]
    assert oracle[10]["recall@100"] == oracle[10]["recall@10"] < oracle[100]["recall@100"]


@bites("SyntheticConfig.backbone", "RealConfig.backbone", "RealConfig.encoder")
def test_the_backbone_is_the_one_loaded_and_tokenized_and_the_encoder_the_embeddings_read(monkeypatch):
    """`build_query_encoder` loads the config's backbone (stopped there); notebook 04's run context
    (`RunContext.of`) reads the corpus embeddings of `encoder` and loads the backbone's tokenizer."""
    from amer_lib.runs import query_encoders, run_context

    monkeypatch.setattr(query_encoders, "load_backbone", asking)
    real = notebook_config("04_real_data", backbone="smollm2", encoder="contriever-msmarco", device="cpu")
    for params in (tiny_synthetic(backbone="smollm2"), real):
        with pytest.raises(Asked) as raised:
            build_query_encoder(params, 0, 8, torch.device("cpu"))
        assert raised.value.args[0] == "smollm2"
    read = []
    monkeypatch.setattr(run_context, "load_tokenizer", asking)
    benchmark = SimpleNamespace(embeddings=lambda name: read.append(name))
    with pytest.raises(Asked) as raised:
        run_context.RunContext.of(real, benchmark)
    assert raised.value.args == ("smollm2",) and read == ["contriever-msmarco"]


# ----- notebook 04 ------------------------------------------------------------------------------------
@bites("RealConfig.baselines")
def test_notebook_04s_baselines_run_on_every_dataset_and_seed_and_none_when_empty(monkeypatch):
    from amer_lib.baselines import runs as baselines

    handed = []
    monkeypatch.setattr(baselines, "run_baseline", lambda params, *job: handed.append(job[:3]) or job)
    params = notebook_config("04_real_data", datasets=["a"], seeds=[1, 2], baselines=["rerank"], device="cpu")
    baselines.run_baselines(params, progress=False)
    assert handed == [("a", "rerank", 1), ("a", "rerank", 2)]
    assert baselines.run_baselines(params.replace(baselines=[]), progress=False) == []


@bites("RealConfig.expansion", "RealConfig.expansion_model")
def test_query_expansion_takes_its_keywords_from_the_source_and_model_named(monkeypatch):
    """`keyword_source`: "prf" reads the corpus (no model), "chat" the endpoint with the model named,
    "hf" the local model named (loaded when first asked, not here) and refuses to run without one;
    a cached expansion made from another source or model is not reused."""
    from amer_lib.baselines import runs as baselines
    from amer_lib.baselines.expansion import ChatEndpointGenerator, HFGenerator, PseudoRelevanceFeedback

    documents = [SimpleNamespace(full_text="alpha beta"), SimpleNamespace(full_text="gamma delta")]
    context = SimpleNamespace(benchmark=SimpleNamespace(documents=lambda: iter(documents)))
    params = notebook_config("04_real_data", device="cpu")
    assert isinstance(baselines.keyword_source(params.replace(expansion="prf"), context), PseudoRelevanceFeedback)
    chat = baselines.keyword_source(params.replace(expansion="chat", expansion_model="my-chat-model"), context)
    assert isinstance(chat, ChatEndpointGenerator) and chat.name == "my-chat-model"
    local = baselines.keyword_source(params.replace(expansion="hf", expansion_model="org/model"), context)
    assert isinstance(local, HFGenerator) and local.name == "org/model"
    with pytest.raises(ValueError, match="expansion='hf' needs expansion_model"):
        baselines.keyword_source(params.replace(expansion="hf", expansion_model=""), context)
    cached = {"expansion": "prf:"}
    assert baselines._same_baseline(cached, params.replace(expansion="prf"), "query_expansion")
    assert not baselines._same_baseline(cached, params.replace(expansion="hf", expansion_model="m"), "query_expansion")


@bites("RealConfig.mmr_query", "RealConfig.encoder")
def test_mmr_query_chooses_the_trained_vector_or_the_document_encoders_as_the_query_relevance(monkeypatch):
    from amer_lib.baselines import runs as baselines

    made = []

    def encoder(name, device=None):
        made.append(name)
        return SimpleNamespace(encode_queries=lambda texts: np.full((len(texts), 2), 7.0))

    monkeypatch.setattr(baselines, "DocumentEncoder", encoder)
    questions, trained = [SimpleNamespace(question="q?")], np.ones((1, 2))
    params = notebook_config("04_real_data", encoder="contriever-msmarco", device="cpu")
    assert baselines.relevance_queries(params.replace(mmr_query="trained"), questions, trained) is trained and not made
    assert baselines.relevance_queries(params.replace(mmr_query="encoder"), questions, trained).tolist() == [[7.0, 7.0]]
    assert made == ["contriever-msmarco"]
    assert not baselines._same_baseline({"mmr_query": "trained"}, params.replace(mmr_query="encoder"), "rerank")


@bites("RealConfig.tuning_grid")
def test_notebook_04s_tuning_trains_amer_at_every_grid_point_of_every_dataset(monkeypatch):
    """`tune(params, tuning_grid, seed=seeds[0])` (training stubbed): one AMER run per dataset and
    point, at the notebook's first seed; an epoch of 40 questions less 4 held out is 36 // 8 = 4 steps."""
    from amer_lib.experiments import real_data

    handed = []
    done = {"best_step": 1, "history": [{"step": 1, "val_loss": 0.5, "val_mrecall": 0.25}]}
    monkeypatch.setattr(real_data, "Benchmark", lambda d: SimpleNamespace(questions=lambda *a: [None] * 40))
    monkeypatch.setattr(real_data, "run_jobs", lambda runner, jobs, *a: handed.extend(jobs) or [done] * len(jobs))
    params = notebook_config(
        "04_real_data",
        datasets=["a", "b"],
        seeds=[3, 4],
        batch_size=8,
        tuning_grid={"temperature": [0.02, 0.05], "epochs": [1]},
        device="cpu",
    )
    rows = real_data.tune(params, params.tuning_grid, seed=params.seeds[0], progress=False)
    assert [(d, s, seed, p.temperature, p.steps) for p, d, s, seed in handed] == [
        (d, "amer", 3, t, 4) for d in ("a", "b") for t in (0.02, 0.05)
    ]
    assert [r["val_mrecall"] for r in rows] == [25.0] * 4


def searched_by_run_one(monkeypatch, tmp_path, **changes) -> dict:
    """The arguments notebook 04's `run_one` (its benchmark, training and indexes stubbed) searches
    the test questions' vectors with (stopped there), under the notebook's config with `changes`."""
    from amer_lib.experiments import real_data

    class Data:
        def __init__(self, n):
            self.n = n

        def to(self, device):
            return self

        def subset(self, rows):
            return self

        def __len__(self):
            return self.n

    context = SimpleNamespace(
        training_data=lambda questions, **levers: Data(len(questions)),
        shards=SimpleNamespace(dim=8),
        negatives=Data(0),
        query_vectors=lambda model, questions, n, device: np.zeros((len(questions), n, 8)),
    )
    benchmark = SimpleNamespace(
        identity="a prepared benchmark's",
        n_queries=lambda dataset: 2,
        training_split=lambda *a, **draw: ([1, 2, 3], [4]),
        questions=lambda *a: [5],
    )
    monkeypatch.setattr(real_data, "Benchmark", lambda directory: benchmark)
    monkeypatch.setattr(real_data, "RunContext", lambda *args: context)
    for name in ("new_query_encoder", "run_index", "train"):
        monkeypatch.setattr(real_data, name, lambda *args, **options: None)
    validation = {}
    monkeypatch.setattr(real_data, "validation_retrieval", lambda *args, **options: validation.update(options))
    monkeypatch.setattr(real_data, "multi_vector_search", lambda index, vectors, k, **options: asking(options))
    params = notebook_config("04_real_data", runs_dir=str(tmp_path), device="cpu", **changes)
    with pytest.raises(Asked) as raised:
        real_data.run_one(params, "a", "amer", 0, progress=False)
    return {**raised.value.args[0], "validation": validation}


@bites("RealConfig.search_depth")
def test_notebook_04_retrieves_search_depth_documents_per_vector_before_the_merge(monkeypatch, tmp_path):
    """`run_one` searches each vector max(search_depth, 100) deep."""
    for depth in (100, 250):
        assert searched_by_run_one(monkeypatch, tmp_path, search_depth=depth)["depth"] == depth


@bites("RealConfig.merge")
def test_notebook_04_merges_the_test_lists_with_its_merge_and_tracks_validation_with_it(monkeypatch, tmp_path):
    """`run_one` merges the test questions' lists with `merge`, and hands it to the learning curves'
    validation search (`validation_retrieval`)."""
    for merge in ("round_robin", "max_score"):
        searched = searched_by_run_one(monkeypatch, tmp_path, merge=merge)
        assert searched["merge"] == searched["validation"]["merge"] == merge


def summary_results(seeds=(0, 1)):
    """Per-question MRecall of single-query and AMER on one dataset, two seeds of six questions."""
    rng = np.random.default_rng(0)
    return [
        {
            "params": {"backbone": "minilm"},
            "dataset": "a",
            "system": system,
            "label": system,
            "seed": seed,
            "mrecall": rng.random(6).tolist(),
            "target_similarity": np.linspace(0, 1, 6).tolist(),
        }
        for system in ("single", "amer")
        for seed in seeds
    ]


@bites("RealConfig.bootstrap_resamples", "AblationConfig.bootstrap_resamples", "BeyondConfig.bootstrap_resamples")
def test_bootstrap_resamples_is_every_significance_tests_number_of_resamples(monkeypatch):
    """The p-values of notebook 04's `summary(results, bootstrap_resamples)`, notebook 05's
    `real_sampling(..., bootstrap_resamples)` and notebook 07's `comparison_rows` and
    `stop_head_against_fixed` come from bootstraps of that many resamples: each one-sided p is a
    count of resamples over it."""
    from amer_lib.experiments import ablations, beyond
    from amer_lib.report import significance, summaries

    asked = []

    def counted(baseline, system, n_resamples=10_000, seed=0):
        asked.append(n_resamples)
        return significance.compare(baseline, system, n_resamples, seed)

    for module in (summaries, beyond):
        monkeypatch.setattr(module, "compare", counted)
    real = notebook_config("04_real_data", bootstrap_resamples=7, device="cpu")
    rows = summaries.summary(summary_results(), real.bootstrap_resamples)
    assert asked == [7, 7] and all(round(7 * rows[1][f"{s}_p"], 9) % 1 == 0 for s in ("whole", "low_sim"))
    asked.clear()
    monkeypatch.setattr(ablations.real_data, "run_all", lambda params, progress: summary_results())
    ablation = notebook_config("05_ablations", bootstrap_resamples=5)
    base = notebook_config("04_real_data", device="cpu")
    ablations.real_sampling(base, ["teacher"], [0], "r", "u", ablation.bootstrap_resamples, progress=False)
    assert asked == [5, 5]
    asked.clear()
    results = [{**r, "system": "paper/round_robin" if r["system"] == "single" else "n2/rrf"} for r in summary_results()]
    params = notebook_config("07_beyond", bootstrap_resamples=3)
    beyond.comparison_rows({"results": [{**r, "vectors": 2.0} for r in results]}, params.bootstrap_resamples)
    per_input = lambda: {"mrecall@10": np.random.default_rng(1).random(4).tolist()}  # noqa: E731
    varying = {
        "rows": [{"n": n, "vectors": v, "per_input": per_input()} for n, v in (("n = 2", 2.0), ("stop head", 1.5))]
    }
    beyond.stop_head_against_fixed([varying], params.bootstrap_resamples)
    assert asked == [3, 3, 3]


# ----- notebook 05 ------------------------------------------------------------------------------------
@bites("AblationConfig.synthetic_transforms", "AblationConfig.synthetic_setting", "AblationConfig.sampling_modes")
def test_notebook_05s_synthetic_sampling_trains_amer_in_each_mode_on_the_transforms_and_setting(monkeypatch):
    """`synthetic_sampling(synthetic_config, synthetic_transforms, synthetic_setting, sampling_modes,
    ...)` (training stubbed): notebook 02's single-query run, then AMER per mode, notebook 02's own
    mode in its own folders (its runs reused), another mode in the ablation's."""
    from amer_lib.experiments import ablations

    made = []
    monkeypatch.setattr(ablations.synthetic, "run_all", lambda params, progress: made.append(params) or [])
    params = notebook_config(
        "05_ablations", synthetic_transforms=["mlp"], synthetic_setting="ood", sampling_modes=["teacher", "scheduled"]
    )
    base = tiny_synthetic(results_dir="R2")
    ablations.synthetic_sampling(
        base, params.synthetic_transforms, params.synthetic_setting, params.sampling_modes, "R5", "U5", progress=False
    )
    assert [(p.transforms, p.settings, p.systems, p.sampling, p.results_dir) for p in made] == [
        (["mlp"], ["ood"], ["single"], "scheduled", "R2"),
        (["mlp"], ["ood"], ["amer"], "teacher", "R5/synthetic_teacher"),
        (["mlp"], ["ood"], ["amer"], "scheduled", "R2"),
    ]


@bites("AblationConfig.real_seeds", "AblationConfig.sampling_modes")
def test_notebook_05s_real_sampling_and_sweep_run_at_its_seeds(monkeypatch):
    """`real_sampling(p, sampling_modes, real_seeds, ...)` runs single-query and each mode's AMER at
    the seeds (training stubbed); `real_sweeps(real_configs, real_seeds[0], ...)` sweeps the first."""
    from amer_lib.experiments import ablations

    made, swept = [], []
    monkeypatch.setattr(ablations.real_data, "run_all", lambda params, progress: made.append(params) or [])
    monkeypatch.setattr(ablations, "summary", lambda results, resamples: [])
    monkeypatch.setattr(ablations, "real_sweep", lambda p, dataset, seed, *a: swept.append((dataset, seed)) or [])
    params = notebook_config("05_ablations", real_seeds=[4, 5], sampling_modes=["predicted"])
    real = notebook_config("04_real_data", datasets=["a"], device="cpu")
    ablations.real_sampling(real, params.sampling_modes, params.real_seeds, "R", "U", 10, progress=False)
    assert [(p.systems, p.seeds, p.sampling) for p in made] == [
        (["single"], [4, 5], "scheduled"),
        (["amer"], [4, 5], "predicted"),
    ]
    ablations.real_sweeps([real], params.real_seeds[0], (1, 2), ("rrf",))
    assert swept == [("a", 4)]


@bites("AblationConfig.vector_counts", "AblationConfig.merges")
def test_the_vector_count_sweep_scores_the_first_n_vectors_under_each_merge():
    """`vector_count_and_merge` (what `synthetic_sweep` and `real_sweep` compute with
    tuple(vector_counts), tuple(merges)): one row per (n, merge); a question whose two vectors point
    at its two targets finds one of them with n = 1 (Recall@10 = 0.5) and both with n = 2."""
    from amer_lib.core.index import VectorIndex
    from amer_lib.experiments.ablations import vector_count_and_merge

    corpus = np.random.default_rng(0).normal(size=(150, 8))
    corpus[:2] = np.eye(8)[:2] * 10  # the targets, each the nearest document to its vector
    vectors = np.eye(8)[None, :2]  # [1 question, 2 vectors, d]
    params = notebook_config("05_ablations", vector_counts=[1, 2], merges=["round_robin", "rrf"])
    index, gold = VectorIndex(corpus / np.linalg.norm(corpus, axis=1, keepdims=True)), np.array([[[0], [1]]])
    rows = vector_count_and_merge(vectors, index, gold, tuple(params.vector_counts), tuple(params.merges))
    assert [(r["n"], r["merge"], r["recall@10"]) for r in rows] == [
        (1, "round_robin", 0.5),
        (1, "rrf", 0.5),
        (2, "round_robin", 1.0),
        (2, "rrf", 1.0),
    ]


# ----- notebook 07 ------------------------------------------------------------------------------------
@bites("BeyondConfig.real_seeds", "BeyondConfig.max_n", "BeyondConfig.merges")
def test_notebook_07_compares_every_fixed_n_up_to_max_n_and_every_merge_at_its_seeds(monkeypatch, tmp_path):
    """`real_comparisons(params)` makes notebook 04's AMER runs of `real_seeds` first; `real_comparison`
    (the generation stubbed: every question's lists the same) scores n = 1 .. max_n under round-robin and
    each n mode under each merge, per seed, and refuses merges without round-robin."""
    from amer_lib.experiments import beyond

    max_n, rows = 3, 4
    ids = np.tile(np.arange(max_n * 10).reshape(1, max_n, 10), (rows, 1, 1))
    lists = beyond.SplitLists(ids, -ids.astype(float), np.zeros((rows, 2, 1), dtype=int), {})
    lists.counts = {**{f"n{n}": np.full(rows, n) for n in range(1, max_n + 1)}}
    lists.counts |= {mode: np.full(rows, 2) for mode in ("paper", "stop_head", "similarity", "true_m")}
    record = dict(lists={"validation": lists, "test": lists}, target_similarity=np.zeros(rows), paper_n=2)
    handed = []
    monkeypatch.setattr(beyond.RunContext, "of", lambda real_config: None)
    monkeypatch.setattr(
        beyond, "lists_with_stop_head", lambda params, real, context, d, seed: handed.append((d, seed)) or record
    )
    monkeypatch.setattr(beyond, "context_result", lambda *args: {"mrecall": [1.0] * rows})
    real = notebook_config("04_real_data", datasets=["a"], device="cpu")
    params = notebook_config("07_beyond", real_seeds=[2, 5], max_n=max_n, merges=["round_robin", "rrf"])
    comparison = beyond.real_comparison(params, real, progress=False)
    assert handed == [("a", 2), ("a", 5)]
    systems = list(dict.fromkeys(r["system"] for r in comparison["results"]))
    assert systems[:3] == ["n1/round_robin", "n2/round_robin", "n3/round_robin"]
    assert {s.split("/")[1] for s in systems} == {"round_robin", "rrf"}
    assert {r["seed"] for r in comparison["results"]} == {2, 5}
    with pytest.raises(ValueError, match="merges must include round_robin"):
        beyond.real_comparison(params.replace(merges=["rrf"]), real, progress=False)
    made = []
    (tmp_path / "real.yaml").write_text(real.to_yaml())
    monkeypatch.setattr(beyond.real_data, "run_all", lambda p, progress: made.append(p.seeds))
    monkeypatch.setattr(
        beyond, "real_comparison", lambda *args: dict(results=[], picked=[], stop=[], reproduces_notebook04=True)
    )
    beyond.real_comparisons(params.replace(real_params=[str(tmp_path / "real.yaml")]), progress=False)
    assert made == [[2, 5]]


@bites("BeyondConfig.stop_threshold", "BeyondConfig.max_cosine", "BeyondConfig.max_n")
def test_the_stop_head_stops_past_stop_threshold_and_the_similarity_rule_before_max_cosine(monkeypatch):
    """`lists_with_stop_head` (the trained model, its fit and the search stubbed), two questions of
    three vectors: stop probabilities (0.3, 0.6, 0.9) and (0.7, 0.8, 0.9) keep 2 and 1 vectors past
    0.5, 3 and 2 past 0.75; the first question's third vector has cosine 0.95 to its first, so a
    max_cosine of 0.97 keeps all 3 and of 0.9 keeps 2 (the second question's vectors are orthogonal: 3)."""
    from amer_lib.experiments import beyond

    third = np.array([0.95, 0.0, np.sqrt(1 - 0.95**2), 0.0])
    vectors = np.stack([np.stack([np.eye(4)[0], np.eye(4)[1], third]), np.eye(4)[:3]])
    probabilities = torch.tensor([[0.3, 0.6, 0.9], [0.7, 0.8, 0.9]])
    model = SimpleNamespace(stop_probability=lambda hidden: probabilities)
    questions = [SimpleNamespace(targets=[1, 2]), SimpleNamespace(targets=[1])]
    benchmark = SimpleNamespace(questions=lambda *a: questions)
    context = SimpleNamespace(
        training_split=lambda *args: (questions, questions),
        n_queries=lambda dataset, system: 2,
        trained_encoder=lambda *args: model,
        benchmark=benchmark,
        shards=None,
        gold=lambda qs: np.zeros((len(qs), 2, 1), dtype=int),
        target_similarity=lambda qs: np.zeros(len(qs)),
    )
    monkeypatch.setattr(beyond, "_states", lambda model, context, qs, max_n: (vectors[:, :max_n], torch.zeros(2)))
    monkeypatch.setattr(beyond, "fit_stop_head", lambda *args, **options: [0.1])
    monkeypatch.setattr(beyond, "ShardedFlatIndex", lambda shards: SimpleNamespace(search=lambda v, k: (v, v)))
    real = notebook_config("04_real_data", device="cpu")
    counts = lambda **changes: beyond.lists_with_stop_head(  # noqa: E731
        notebook_config("07_beyond", **{"max_n": 3, **changes}), real, context, "a", 0
    )["lists"]["test"].counts
    assert counts(stop_threshold=0.5)["stop_head"].tolist() == [2, 1]
    assert counts(stop_threshold=0.75)["stop_head"].tolist() == [3, 2]
    assert counts(max_cosine=0.97)["similarity"].tolist() == [3, 3]
    assert counts(max_cosine=0.9)["similarity"].tolist() == [2, 3]
    assert sorted(k for k in counts() if k.startswith("n")) == ["n1", "n2", "n3"]
    with pytest.raises(ValueError, match="max_n = 1 is below a's n = 2"):
        counts(max_n=1)


# ----- notebook 06 ------------------------------------------------------------------------------------
@bites("DiversityConfig.synthetic_setting", "DiversityConfig.target_split", "DiversityConfig.random_pairs")
def test_notebook_06_measures_the_target_split_of_the_setting_with_random_pairs(monkeypatch):
    """`synthetic_target_similarity(synthetic_config, synthetic_setting, target_split, random_pairs)`:
    the task of that setting, its n_train (or n_test) questions' targets, random_pairs pairs;
    `real_target_similarity(real_configs, target_split, random_pairs)` hands both on."""
    from amer_lib.experiments import diversity_analysis

    measured, built = [], []
    task_from_params = diversity_analysis.task_from_params
    monkeypatch.setattr(
        diversity_analysis,
        "task_from_params",
        lambda params, transform, setting: built.append(setting) or task_from_params(params, transform, setting),
    )
    monkeypatch.setattr(
        diversity_analysis,
        "same_vs_random_cosine",
        lambda targets, n_random, seed: measured.append((len(targets), n_random)) or {},
    )
    synthetic = tiny_synthetic(transforms=["linear"], n_train=30, n_test=7, corpus_size=400, dim=6)
    for split, setting, pairs, questions in (("train", "ood", 50, 30), ("test", "multi", 80, 7)):
        params = notebook_config(
            "06_diversity_analysis", target_split=split, synthetic_setting=setting, random_pairs=pairs
        )
        diversity_analysis.synthetic_target_similarity(
            synthetic, params.synthetic_setting, params.target_split, params.random_pairs
        )
        assert (built[-1], measured[-1]) == (setting, (questions, pairs))
    handed = []
    monkeypatch.setattr(diversity_analysis, "Benchmark", lambda directory: None)
    monkeypatch.setattr(
        diversity_analysis, "target_similarity", lambda benchmark, encoder, split, n: handed.append((split, n)) or []
    )
    diversity_analysis.real_target_similarity([notebook_config("04_real_data", device="cpu")], "test", 80)
    assert handed == [("test", 80)]


@bites("DiversityConfig.seeds", "DiversityConfig.seen_questions")
def test_notebook_06_generates_with_each_seeds_run_and_compares_seen_questions_of_each(monkeypatch):
    """`output_similarity(p, seeds)` and `seen_and_unseen(p, seeds, seen_questions)` (the runs and
    the search stubbed): one row per dataset and seed (and system), the training rows holding the
    first seen_questions of the run's 10 training questions."""
    from amer_lib.experiments import diversity_analysis

    questions = [SimpleNamespace(targets=[[f"d{i}"], [f"e{i}"]]) for i in range(10)]
    context = SimpleNamespace(
        benchmark=SimpleNamespace(questions=lambda *a: questions[:3]),
        training_split=lambda *a: (questions, []),
        trained_encoder=lambda *args: None,
        n_queries=lambda dataset, system: 2,
        query_vectors=lambda model, qs, n, device: np.random.default_rng(0).normal(size=(len(qs), n, 4)),
        target_similarity=lambda qs: np.zeros(len(qs)),
        gold=lambda qs: None,
        shards=None,
    )
    monkeypatch.setattr(diversity_analysis, "RunContext", SimpleNamespace(of=lambda params: context))
    monkeypatch.setattr(diversity_analysis, "ShardedFlatIndex", lambda shards: None)
    monkeypatch.setattr(diversity_analysis, "retrieval_row", lambda *args, **options: {})
    real = notebook_config("04_real_data", datasets=["a"], device="cpu")
    params = notebook_config("06_diversity_analysis", seeds=[3, 8], seen_questions=4)
    rows = diversity_analysis.output_similarity(real, params.seeds, progress=False)
    assert [(r["dataset"], r["seed"]) for r in rows] == [("a", 3), ("a", 8)]
    rows = diversity_analysis.seen_and_unseen(real, params.seeds, params.seen_questions, progress=False)
    assert [(r["seed"], r["system"], r["questions"], r["n_questions"]) for r in rows] == [
        (seed, system, split, n)
        for seed in (3, 8)
        for system in ("single", "amer")
        for split, n in (("train", 4), ("test", 3))
    ]


def test_every_notebook_field_has_a_knob_test_a_place_listing_or_a_named_todo():
    """Each field of each notebook's config is in exactly one of: a registered test, the places and
    printing, the named TODO list; a new field fails here until it is sorted."""
    import test_notebook_knobs_prep  # noqa: F401  (notebook 03's tests register there)

    names = {f"{cls.__name__}.{f.name}" for cls in CONFIGS.values() for f in dataclasses.fields(cls)}
    groups = {"tests": set(KNOB_TESTS), "places": set(PLACES_AND_PRINTING), "todo": NOT_YET}
    unsorted = sorted(names - set().union(*groups.values()))
    assert not unsorted, f"notebook fields without a knob test, a place/printing reason or a TODO entry: {unsorted}"
    for a, b in (("tests", "places"), ("tests", "todo"), ("places", "todo")):
        assert not groups[a] & groups[b], f"in both {a} and {b}: {sorted(groups[a] & groups[b])}"
    assert not set().union(*groups.values()) - names, "listed names that are no field"
