"""A notebook's parameters reach the training loop: each `TrainConfig` field a notebook config holds
arrives under its name, the sampling schedule included."""

import pytest
import yaml

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
    assert (config.lr, config.temperature, config.batch_size, config.seed) == (0.123, 0.07, 8, 3)
    assert config.checkpoint_every == params.eval_every and config.matched_loss == params.matched_loss


def test_notebook_04s_levers_beyond_the_paper_reach_the_training_config_and_are_checked_first(tmp_path):
    file = tmp_path / "levers.yaml"
    file.write_text(yaml.safe_dump({"hard_negative_share": 0.25, "spread_weight": 0.5, "component_weight": 3}))
    config = train_config(from_files(NOTEBOOKS / "04_real_data.ipynb", file), n_outputs=5, seed=0)
    assert (config.hard_negative_share, config.spread_weight, config.component_weight) == (0.25, 0.5, 3.0)
    defaults = train_config(from_files(NOTEBOOKS / "04_real_data.ipynb"), n_outputs=5, seed=0)
    assert (defaults.hard_negative_share, defaults.spread_weight, defaults.component_weight) == (0, 0, 0)  # the paper
    for name, value, message in (
        ("hard_negative_share", 1.5, "'hard_negative_share' must be between 0 and 1, got 1.5"),
        ("spread_weight", -0.5, "'spread_weight' must be >= 0, got -0.5"),
        ("component_weight", -1, "'component_weight' must be >= 0, got -1"),
        ("component_distance", "l2", "'component_distance'"),
    ):
        file.write_text(yaml.safe_dump({name: value}))
        with pytest.raises(ValueError, match=message):
            from_files(NOTEBOOKS / "04_real_data.ipynb", file)
