"""The design card's command (`-p backbone llama8b`) without the weights: it stops at once with
the `hf download` to run, and with the memory preflight of what they will need, from the backbone's
published config and the data sizes of the benchmark (the offline one's drawn again, not prepared)."""

import huggingface_hub
import pytest
from conftest import notebook_config

from amer_lib.core import memory
from amer_lib.core.backbones import BackboneUnavailableError, describe
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.preparation import offline_sizes, prepare_wordnet
from amer_lib.experiments.real_data import ready_benchmark

DATASETS = ["wordnet_senses", "wordnet_kinds"]


@pytest.mark.parametrize("corpus_size", [120, 5])  # 5: fewer than the gold documents, which all stay
def test_offline_sizes_are_what_the_preparation_makes_without_writing_anything(tmp_path, corpus_size):
    recipe = notebook_config("03_real_data_prep", max_train=6, max_test=4, corpus_size=corpus_size)
    prepared = prepare_wordnet(tmp_path / "prepared", 6, 4, corpus_size, seed=0)
    train, corpus = offline_sizes(tmp_path / "not_yet", DATASETS, recipe)
    assert corpus == prepared.manifest["corpus_size"]
    for dataset in DATASETS:
        assert [q.qid for q in train[dataset]] == [q.qid for q in prepared.questions(dataset, "train")]
    assert not (tmp_path / "not_yet").exists()
    with pytest.raises(FileNotFoundError, match=r"prepare \['ambigqa'\] with notebooks/03_real_data_prep.ipynb"):
        offline_sizes(tmp_path / "not_yet", ["ambigqa"], recipe)


def expected_lines(benchmark: Benchmark, dataset: str) -> list[str]:
    """The plan of notebook 04's defaults (LoRA, float32 on the CPU, batch 32) for llama8b, from
    the prepared benchmark's sizes and the paper's 65 prompt tokens."""
    questions = benchmark.questions(dataset, "train")
    corpus = benchmark.manifest["corpus_size"]
    work = memory.Workload(
        finetune="lora",
        mixed_precision=False,
        batch_size=32,
        micro_batch_size=0,
        gradient_checkpointing=False,
        prompt_tokens=65,
        max_targets=max(len(q.targets) for q in questions),
        embedding_dim=384,  # MiniLM's targets
        negatives=corpus,
        training_questions=len(questions),
        corpus_size=corpus,
    )
    return [f"memory preflight, {dataset}:", *["  " + line for line in memory.plan(describe("llama8b"), work).lines()]]


def test_missing_weights_stop_with_what_to_fetch_and_the_memory_they_will_need(tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)  # not cached
    recipe = notebook_config("03_real_data_prep", max_train=6, max_test=4, corpus_size=120)
    prepared = prepare_wordnet(tmp_path / "prepared", 6, 4, 120, seed=0)
    expected = [line for dataset in DATASETS for line in expected_lines(prepared, dataset)]
    for where in ("not_yet", "prepared"):  # the offline benchmark to prepare, then one prepared
        params = notebook_config(
            "04_real_data", backbone="llama8b", finetune="lora", device="cpu", prepared_dir=str(tmp_path / where)
        )
        with pytest.raises(BackboneUnavailableError) as stopped:
            ready_benchmark(params, recipe)
        fetch, preflight = str(stopped.value).split("\n\n")
        assert "`hf download meta-llama/Llama-3.1-8B-Instruct`" in fetch
        first, *lines = preflight.splitlines()
        assert first.startswith("The memory preflight of llama8b from its published config (prompts taken at the ")
        assert lines == expected
    assert not (tmp_path / "not_yet").exists()  # nothing prepared before the weights are here


def test_a_benchmark_that_is_not_prepared_nor_offline_is_named_instead_of_projected(tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)
    params = notebook_config("04_real_data", backbone="llama8b", datasets=["mine"], prepared_dir=str(tmp_path / "x"))
    with pytest.raises(BackboneUnavailableError, match=r"(?s)hf download.*needs the prepared datasets: .*prepare"):
        ready_benchmark(params, notebook_config("03_real_data_prep"))
