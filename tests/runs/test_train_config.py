"""A notebook's parameters reach the training loop: each `TrainConfig` field a notebook config holds
arrives under its name, the sampling schedule included."""

import pytest
import yaml

from amer_lib.beyond.component import ComponentTerm
from amer_lib.beyond.spread import SpreadTerm
from amer_lib.params import NOTEBOOKS, from_files
from amer_lib.runs.query_encoders import train_config


def test_notebook_02s_sampling_rate_sets_the_schedule(tmp_path):
    """p = min(0.8, rate * step / steps) with the rate a parameter file gives, not the training
    loop's default of 1."""
    file = tmp_path / "rate.yaml"
    file.write_text(yaml.safe_dump({"sampling_rate": 3, "steps": 300, "sampling": "scheduled"}))
    config = train_config(from_files(NOTEBOOKS / "02_synthetic.ipynb", file), n_outputs=5, seed=0)
    assert [config.sampling_prob(step) for step in (0, 30, 50, 80, 299)] == pytest.approx([0.0, 0.3, 0.5, 0.8, 0.8])


def test_notebook_04_schedules_at_the_papers_rate_and_its_sampling_mode():
    """Notebook 04 has no rate parameter: the paper's p = min(0.8, step / steps); `sampling` arrives."""
    params = from_files(NOTEBOOKS / "04_real_data.ipynb").replace(steps=300)
    config = train_config(params, n_outputs=5, seed=0)
    assert [config.sampling_prob(step) for step in (0, 150, 240, 299)] == pytest.approx([0.0, 0.5, 0.8, 0.8])
    for mode, p in (("teacher", 0.0), ("predicted", 1.0)):
        assert train_config(params.replace(sampling=mode), n_outputs=5, seed=0).sampling_prob(150) == p


def test_every_training_field_a_config_holds_reaches_the_training_config():
    params = from_files(NOTEBOOKS / "04_real_data.ipynb").replace(lr=0.123, temperature=0.07, batch_size=8)
    config = train_config(params, n_outputs=5, seed=3)
    assert (config.optimizer.lr, config.loss.temperature, config.batch_size, config.seed) == (0.123, 0.07, 8, 3)
    assert config.checkpoint_every == params.eval_every and config.loss.reduction == params.matched_loss


def test_notebook_04s_levers_beyond_the_paper_reach_the_training_config_and_are_checked_first(tmp_path):
    file = tmp_path / "levers.yaml"
    file.write_text(yaml.safe_dump({"hard_negative_share": 0.25, "spread_weight": 0.5, "component_weight": 3}))
    config = train_config(from_files(NOTEBOOKS / "04_real_data.ipynb", file), n_outputs=5, seed=0)
    assert config.hard_negative_share == 0.25
    assert config.terms == (SpreadTerm(0.5), ComponentTerm(3.0, "cosine"))  # in their ORDER
    defaults = train_config(from_files(NOTEBOOKS / "04_real_data.ipynb"), n_outputs=5, seed=0)
    assert (defaults.hard_negative_share, defaults.terms) == (0, ())  # the paper
    for name, value, message in (
        ("hard_negative_share", 1.5, "'hard_negative_share' must be between 0 and 1, got 1.5"),
        ("spread_weight", -0.5, "'spread_weight' must be >= 0, got -0.5"),
        ("component_weight", -1, "'component_weight' must be >= 0, got -1"),
        ("component_distance", "l2", "'component_distance'"),
    ):
        file.write_text(yaml.safe_dump({name: value}))
        with pytest.raises(ValueError, match=message):
            from_files(NOTEBOOKS / "04_real_data.ipynb", file)


def test_single_query_and_what_is_built_on_it_train_without_the_levers_of_amers_loss():
    """`for_system`: AMER's config is the notebook's; single-query's (and the oracle's and the
    baselines', built on its model) has every lever of AMER's loss at its default, so its training
    config and its run folder are the recipe's without them; `component_single` keeps the term."""
    from amer_lib.runs.store import REAL_RUNS

    recipe = from_files(NOTEBOOKS / "04_real_data.ipynb")
    levers = dict(component_weight=3.0, component_distance="ranking", spread_weight=0.5, first_vector="single")
    params = recipe.replace(**levers, single_target_step=True)
    assert params.for_system("amer") is params and recipe.for_system("single") is recipe
    for system in ("single", "decomposition_oracle", "rerank", "query_expansion"):
        assert params.for_system(system) == recipe
    single = train_config(params.for_system("single"), n_outputs=1, seed=0)
    assert (single.terms, single.loss.first_vector) == ((), "matched")
    assert train_config(params.for_system("amer"), n_outputs=5, seed=0).term("component") == ComponentTerm(
        3.0, "ranking"
    )
    run_dir = lambda p: REAL_RUNS.run_dir(p, "wordnet_kinds_single_seed0").name
    assert run_dir(params.for_system("single")) == run_dir(recipe) != run_dir(params)
    both = params.replace(component_single=True).for_system("single")
    assert (both.component_weight, both.component_distance, both.component_single) == (3.0, "ranking", True)
    assert (both.spread_weight, both.first_vector, both.single_target_step) == (0.0, "matched", False)
