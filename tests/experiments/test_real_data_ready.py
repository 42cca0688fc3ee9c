"""Notebook 04's checks before any long work: the backbone's weights (a registered name, or a local
folder), the prepared benchmark (the offline one made on the spot), the datasets in it."""

import pytest
import torch
from conftest import notebook_config
from transformers import LlamaConfig, LlamaModel

from amer_lib.core.backbones import (
    BackboneUnavailableError,
    get_backbone,
    load_backbone,
    load_tokenizer,
    require_weights,
)
from amer_lib.experiments.real_data import ready_benchmark


def test_missing_weights_say_what_to_fetch_before_anything_is_written(tmp_path):
    params = notebook_config("04_real_data", backbone="llama8b", prepared_dir=str(tmp_path / "prepared"))
    with pytest.raises(BackboneUnavailableError, match=r"`hf download meta-llama/Llama-3.1-8B-Instruct`"):
        ready_benchmark(params, notebook_config("03_real_data_prep"))
    assert not (tmp_path / "prepared").exists()


def test_a_local_folder_is_a_backbone(tmp_path):
    folder = tmp_path / "my-llama"
    config = LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        vocab_size=49152,
    )
    LlamaModel(config).save_pretrained(folder)
    load_tokenizer("smollm2").save_pretrained(folder)
    require_weights(str(folder))  # on disk: nothing to fetch
    assert get_backbone(str(folder)).name == "my-llama" and get_backbone(str(folder)).chat_template
    assert isinstance(load_backbone(str(folder)), LlamaModel)
    assert load_tokenizer(str(folder))("hello", return_tensors="pt")["input_ids"].dtype == torch.long
    params = notebook_config("04_real_data", backbone=str(folder))
    assert params.tag.startswith("my-llama_")  # file names take the folder's name
    with pytest.raises(FileNotFoundError, match=r"holds no Hugging Face model \(no config.json\)"):
        get_backbone(str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match=r"valid choices: .* or a local folder"):
        notebook_config("04_real_data", backbone="llama9b")


def test_the_offline_benchmark_is_prepared_when_missing_and_other_data_must_come_from_notebook03(tmp_path):
    recipe = notebook_config("03_real_data_prep", max_train=6, max_test=4, corpus_size=120, device="cpu")
    params = notebook_config("04_real_data", prepared_dir=str(tmp_path / "prepared"), device="cpu")
    benchmark = ready_benchmark(params, recipe, progress=False)
    assert benchmark.datasets == ["wordnet_senses", "wordnet_kinds"]
    assert len(benchmark.questions("wordnet_senses", "test")) == 4 and len(benchmark.embeddings("minilm")) >= 8
    mine = notebook_config("04_real_data", datasets=["mine"], prepared_dir=str(tmp_path / "other"))
    with pytest.raises(FileNotFoundError, match=r"prepare \['mine'\] with notebooks/03_real_data_prep.ipynb first"):
        ready_benchmark(mine, recipe)
    with pytest.raises(
        ValueError, match=r"dataset\(s\) \['mine'\] are not in the benchmark .* it holds: wordnet_senses"
    ):
        ready_benchmark(mine.replace(prepared_dir=str(tmp_path / "prepared")), recipe)


def test_notebook04_without_single_query_is_refused_before_anything_runs(tmp_path):
    """Its tables compare every system with single-query: `-p systems '[amer]'` stops at once
    (before this check, it trained and then failed while summarising)."""
    params = notebook_config("04_real_data", systems=["amer"], prepared_dir=str(tmp_path / "prepared"))
    with pytest.raises(ValueError, match=r"systems \['amer'\]: .* add 'single' \(valid systems: single, amer\)"):
        ready_benchmark(params, notebook_config("03_real_data_prep"))
    assert not (tmp_path / "prepared").exists()


def test_the_offline_benchmark_is_prepared_where_it_is_missing_and_nothing_else_is(tmp_path):
    """Notebooks 01 and 04 stand alone: a missing WordNet benchmark is prepared with notebook 03's
    recipe (here cut small), encoded, and read back; a benchmark of other data must come from
    notebook 03, and the error says so."""
    from conftest import notebook_config

    from amer_lib.data.preparation import prepared_benchmark

    recipe = notebook_config("03_real_data_prep", max_train=12, max_test=6, corpus_size=200)
    benchmark = prepared_benchmark(tmp_path / "prepared", ["wordnet_senses"], recipe, "cpu", progress=False)
    assert benchmark.manifest["corpus_size"] == 200 and len(benchmark.embeddings("minilm")) == 200
    again = prepared_benchmark(tmp_path / "prepared", ["wordnet_senses", "wordnet_kinds"], recipe, progress=False)
    assert again.directory == benchmark.directory
    with pytest.raises(FileNotFoundError, match=r"prepare \['ambigqa'\] with notebooks/03_real_data_prep.ipynb first"):
        prepared_benchmark(tmp_path / "elsewhere", ["ambigqa"], recipe, progress=False)
    assert not (tmp_path / "elsewhere").exists()
