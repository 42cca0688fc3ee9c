"""Several processes: two gloo ranks on the CPU train the model one process trains and encode the
shards one process encodes."""

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
from stand_ins import (
    DIM,
    TRAIN_CONFIG,
    HashEncoder,
    documents,
    make_model,
    make_problem,
    state,
    tiny_synthetic_params,
    with_terms,
)

from amer_lib.core import distributed
from amer_lib.core.backbones import load_backbone
from amer_lib.core.loss import info_nce, matched_info_nce
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import TrainConfig, train
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.datasets import VectorData
from amer_lib.data.encoders import encode_corpus
from amer_lib.data.questions import MultiAnswerQuestion, write_questions
from amer_lib.experiments.real_data import run_all
from amer_lib.experiments.synthetic import run_all as synthetic_run_all
from amer_lib.experiments.synthetic import run_setting
from amer_lib.io import write_json
from amer_lib.params import validate
from amer_lib.runs import torchrun

WORLD = 2


def test_shares_of_a_batch_score_the_whole_batch_loss():
    g = torch.Generator().manual_seed(0)
    batch, m, d = 6, 3, 5
    queries, positives, negatives = (torch.randn(batch, m, d, generator=g) for _ in range(3))
    mask = torch.ones(batch, m, dtype=torch.bool)
    mask[1, 2] = mask[4, 1:] = False
    whole = matched_info_nce(queries, positives, negatives, mask)
    halves = [matched_info_nce(queries[i : i + 3], positives, negatives, mask, first=i) for i in (0, 3)]
    assert torch.stack(halves).mean() == pytest.approx(whole.item(), rel=1e-6)
    whole = info_nce(queries[:, 0], positives[:, 0], negatives[:, 0])
    halves = [info_nce(queries[i : i + 3, 0], positives[:, 0], negatives[:, 0], first=i) for i in (0, 3)]
    assert torch.stack(halves).mean() == pytest.approx(whole.item(), rel=1e-6)


def test_local_share_outside_a_group_is_the_whole_batch():
    share = distributed.local_share(10)
    assert share.start == 0 and list(range(10, 20))[share] == list(range(10, 20))
    assert distributed.rank_and_size() == (0, 1)


# What the two ranks of `two_ranks` train, each from `TRAIN_CONFIG` with these changes.
TRAINED_ON_TWO_RANKS = {
    "amer": {"n_outputs": 3, "exclude_fed_targets": True},  # scheduled sampling, matched loss
    "single": {"n_outputs": 1},  # single-query InfoNCE
    "amer_micro_batches": {"n_outputs": 3, "micro_batch_size": 3},  # each rank's 8 examples as 3 + 3 + 2, synced once
}


def _two_rank_jobs(rank: int, store: str, out: str) -> None:
    """One rank of `two_ranks`: each training of `TRAINED_ON_TWO_RANKS` in turn, then the encoding."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD)
    try:
        for name, overrides in TRAINED_ON_TWO_RANKS.items():
            data, pool = make_problem()
            model = make_model()
            result = train(
                model,
                data,
                make_problem(seed=1)[0],
                pool,
                TrainConfig(**with_terms({**TRAIN_CONFIG, **overrides})),
                run_dir=os.path.join(out, name, "run"),
                progress=False,
            )
            torch.save(
                {"state": state(model), "history": result.history, "best_step": result.best_step},
                os.path.join(out, name, f"rank{rank}.pt"),
            )
        encoder = CountingEncoder(os.path.join(out, "encoding", f"rank{rank}.log"))
        encode_corpus(
            encoder, documents(50), os.path.join(out, "encoding", "two"), shard_size=8, batch_size=2, progress=False
        )
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """Two gloo ranks, started once for the file (a rank's start, spawning a process that imports
    torch, costs more than what it trains): the trainings of `TRAINED_ON_TWO_RANKS`, each in a
    folder of its name, and the encoding of 50 documents in `encoding`."""
    folder = tmp_path_factory.mktemp("two_ranks")
    for name in (*TRAINED_ON_TWO_RANKS, "encoding"):
        (folder / name).mkdir()
    context = multiprocessing.get_context("spawn")
    ranks = [context.Process(target=_two_rank_jobs, args=(r, str(folder / "store"), str(folder))) for r in range(WORLD)]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(300)
    assert [p.exitcode for p in ranks] == [0] * WORLD
    return folder


@pytest.mark.parametrize("name", list(TRAINED_ON_TWO_RANKS))
def test_two_ranks_train_what_one_process_trains(two_ranks, name):
    """The one process trains without micro-batches: the ranks' micro-batches change rounding only."""
    config = {**TRAIN_CONFIG, **TRAINED_ON_TWO_RANKS[name]}
    ranks = [torch.load(two_ranks / name / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]
    data, pool = make_problem()
    model = make_model()
    plain = {**config, "micro_batch_size": 0}
    alone = train(model, data, make_problem(seed=1)[0], pool, TrainConfig(**with_terms(plain)), progress=False)
    for rank in ranks:  # the ranks stay in step with each other and with the one process
        for key, value in state(model).items():
            torch.testing.assert_close(rank["state"][key], value, rtol=1e-4, atol=1e-5, msg=key)
    assert ranks[0]["best_step"] == alone.best_step
    for key in ("val_loss", "train_loss"):
        np.testing.assert_allclose([h[key] for h in ranks[0]["history"]], [h[key] for h in alone.history], rtol=1e-5)
    assert (two_ranks / name / "run" / "best.pt").exists() and (two_ranks / name / "run" / "checkpoint.pt").exists()


def test_bad_process_counts_name_the_parameter(monkeypatch):
    with pytest.raises(ValueError, match="batch_size 30 .* nproc_per_node = 4"):
        distributed.check_processes(4, 30, 1, "cpu")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ValueError, match="nproc_per_node = 4 but torch sees 2 GPU"):
        distributed.check_processes(4, 32, 1, "cuda")
    assert distributed.check_processes(4, 32, 1, "cpu") == 1  # gloo ranks on the CPU need no GPU each


def test_workers_beside_several_processes_a_run_become_one_and_say_so(capsys):
    """Notebook 04's offline default `workers = 2` with `-p nproc_per_node 4` runs, one run at a time."""
    assert distributed.check_processes(4, 32, 2, "cpu") == 1
    assert capsys.readouterr().out == (
        "workers = 2 and nproc_per_node = 4: each run is trained by 4 processes together, one run at a time, "
        "so 1 worker (set -p workers 1 to say so)\n"
    )
    assert distributed.check_processes(4, 32, 1, "cpu") == 1  # said already: nothing printed
    assert distributed.check_processes(1, 30, 2, "cpu") == 2  # one process per run: the workers asked for
    assert capsys.readouterr().out == ""


def test_main_outside_torchrun_says_how_to_start_it(tmp_path, monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with pytest.raises(RuntimeError, match="must be started by torchrun"):
        distributed.setup()


def test_torchrun_trains_a_notebook04_run(tmp_path):
    words = [f"w{i}" for i in range(40)]
    (tmp_path / "corpus.tsv").write_text("".join(f"d{i}\t{w} story\t\n" for i, w in enumerate(words)))
    question = lambda q: MultiAnswerQuestion(
        f"q{q}", f"what is {words[q]}", [["a"], ["b"]], [[f"d{q}"], [f"d{q + 20}"]]
    )
    write_questions(tmp_path / "wordnet_senses_train.jsonl", [question(q) for q in range(12)])
    write_questions(tmp_path / "wordnet_senses_test.jsonl", [question(q) for q in range(12, 16)])
    write_json(
        tmp_path / "manifest.json",
        {"corpus": str(tmp_path / "corpus.tsv"), "datasets": ["wordnet_senses"], "n_queries": {"wordnet_senses": 2}},
    )
    minilm_sized = HashEncoder("minilm", dim=384)  # the minilm query backbone reads these embeddings directly
    encode_corpus(minilm_sized, Benchmark(tmp_path).documents(), tmp_path / "embeddings" / "minilm", progress=False)
    params = validate(
        "04_real_data",
        {
            "datasets": ["wordnet_senses"],
            "systems": ["amer"],
            "baselines": ["rerank"],
            "expansion": "prf",
            "expansion_model": "",
            "mmr_query": "trained",
            "backbone": "minilm",
            "encoder": "minilm",
            "finetune": "full",
            "seeds": [0],
            "steps": 2,
            "batch_size": 4,
            "lr": 3e-4,
            "temperature": 0.05,
            "matched_loss": "mean",
            "tuning_grid": {},
            "sampling": "scheduled",
            "exclude_fed_targets": True,
            "single_target_step": False,
            "hard_negative_share": 0.0,
            "spread_weight": 0.5,  # the penalty of each rank's own examples, read at their batch offset
            "train_compounds": 0,
            "eval_every": 1,
            "search_depth": 100,
            "bootstrap_resamples": 10,
            "workers": 1,
            "threads": 1,
            "nproc_per_node": 2,
            "device": "cpu",
            "mixed_precision": False,
            "micro_batch_size": 1,  # each rank's two questions one at a time
            "gradient_checkpointing": True,  # MiniLM's layers recomputed, the prefix LM's KV cache kept
            "prepared_dir": str(tmp_path),
            "results_dir": str(tmp_path / "results"),
            "runs_dir": str(tmp_path / "runs"),
            "figures_dir": str(tmp_path / "figures"),
        },
    )
    [result] = run_all(params, progress=False)
    assert result["system"] == "amer" and len(result["mrecall"]) == 4 and result["n_queries"] == 2
    assert [h["step"] for h in result["history"]] == [1, 2]
    trec = (tmp_path / "results" / "wordnet_senses_amer_seed0.trec").read_text().splitlines()
    assert len(trec) == 4 * 40 and trec[0].split()[:2] == ["q12", "Q0"]  # 40 documents: all of them ranked
    assert run_all(params, progress=False) == [result]  # read back, not trained again


def test_torchrun_trains_a_notebook02_setting(tmp_path):
    params = tiny_synthetic_params(tmp_path, 1).replace(settings=["single"], nproc_per_node=2)
    shared = synthetic_run_all(params, progress=False)
    alone = synthetic_run_all(
        params.replace(nproc_per_node=1, results_dir=str(tmp_path / "alone"), runs_dir=str(tmp_path / "alone_runs")),
        progress=False,
    )
    assert [r["system"] for r in shared] == ["single", "amer", "oracle"]
    for two, one in zip(shared[:2], alone[:2]):
        np.testing.assert_allclose(
            [h["val_loss"] for h in two["history"]], [h["val_loss"] for h in one["history"]], rtol=1e-4
        )
    assert synthetic_run_all(params, progress=False) == shared  # read back, not trained again


def test_only_rank_zero_of_a_synthetic_setting_builds_the_index_it_alone_searches(monkeypatch, tmp_path):
    """The other ranks train and return None: an index of theirs would hold the corpus and FAISS's
    scratch memory on their GPUs for nothing."""
    from amer_lib.experiments import synthetic

    class Trained(Exception):  # rank 0 would go on to evaluate
        pass

    def train_on_task(*args, **kwargs):
        if distributed.is_main():
            raise Trained
        return None, None

    built = []
    monkeypatch.setattr(synthetic, "VectorIndex", lambda corpus: built.append(len(corpus)))
    monkeypatch.setattr(synthetic, "train_on_task", train_on_task)
    monkeypatch.setattr(distributed, "rank_and_size", lambda: (1, 2))
    params = tiny_synthetic_params(tmp_path, 1)
    assert run_setting(params, "linear", "single", progress=False, device=torch.device("cpu")) is None
    assert built == []
    monkeypatch.setattr(distributed, "rank_and_size", lambda: (0, 2))
    with pytest.raises(Trained):
        run_setting(params, "linear", "single", progress=False, device=torch.device("cpu"))
    assert built == [params.corpus_size]


def test_a_failing_distributed_run_names_its_command(tmp_path, capsys):
    # the config is valid, but the ranks refuse to resize a pretrained backbone
    params = tiny_synthetic_params(tmp_path, 1).replace(nproc_per_node=2, backbone="smollm2")
    with pytest.raises(
        RuntimeError,
        match=r"distributed run linear_single of amer_lib.experiments.synthetic:run_setting "
        r"failed \(exit 1\).*torch.distributed.run",
    ):
        torchrun.launch(run_setting, params, ("linear", "single"), progress=False)
    assert "config_overrides only apply to randomly initialised" in capsys.readouterr().err  # the ranks' own error


class CountingEncoder(HashEncoder):
    """Writes one line per encoded batch to `log`, so a test can see which process encoded what."""

    def __init__(self, log: str):
        super().__init__()
        self.log = log

    def encode_documents(self, texts, batch_size):
        with open(self.log, "a") as out:
            out.write(texts[0].split()[1] + "\n")  # the batch's first document number
        return super().encode_documents(texts, batch_size)


def test_two_ranks_encode_alternate_shards_into_the_files_one_process_writes(two_ranks, tmp_path):
    encoded = two_ranks / "encoding"  # the ranks' encoding of 50 documents, 8 a shard, 2 a batch
    # one encode call per shard (batch_size * 16 documents): rank 0 took shards 0, 2, 4, 6, rank 1 shards 1, 3, 5
    assert (encoded / "rank0.log").read_text().split() == ["0", "16", "32", "48"]
    assert (encoded / "rank1.log").read_text().split() == ["8", "24", "40"]
    alone = encode_corpus(HashEncoder(), documents(50), tmp_path / "one", shard_size=8, batch_size=2, progress=False)
    assert sorted(p.name for p in (encoded / "two").iterdir()) == sorted(p.name for p in (tmp_path / "one").iterdir())
    for path in (tmp_path / "one").iterdir():
        assert (encoded / "two" / path.name).read_bytes() == path.read_bytes(), path.name
    assert alone.manifest == {
        "encoder": "hash",
        "dim": 16,
        "shard_size": 8,
        "complete": True,
        "n_documents": 50,
        "n_shards": 7,
    }


def test_an_encoding_of_two_ranks_resumes_in_one_process(tmp_path):
    encode_corpus(HashEncoder(), documents(50), tmp_path, shard_size=8, batch_size=2, progress=False)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    (tmp_path / "shard_00003.npy").unlink()  # rank 1 died while writing shard 3
    write_json(tmp_path / "manifest.json", {"encoder": "hash", "dim": 16, "shard_size": 8, "complete": False})
    encoder = CountingEncoder(str(tmp_path.parent / "resume.log"))
    encode_corpus(encoder, documents(50), tmp_path, shard_size=8, batch_size=2, progress=False)
    assert (tmp_path.parent / "resume.log").read_text().split() == ["24"]  # shard 3 only
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.slow
def test_torchrun_encodes_a_corpus_with_minilm_into_the_shards_of_one_process(tmp_path):
    """The command the README shows, on two gloo ranks: torchrun gives each rank one thread, and
    one process with one thread writes the same bytes (with more threads MiniLM's float32 sums
    round differently and the odd float16 value moves by one unit in the last place)."""
    words = "river bank bass spring crane bat match pitch seal plant".split()
    (tmp_path / "corpus.tsv").write_text(
        "".join(f"d{i}\t{' '.join(words[(i * j) % 10] for j in range(3 + i % 40))}\tTitle {i}\n" for i in range(90))
    )
    command = ["-m", "amer_lib.runs.encode", "--corpus", str(tmp_path / "corpus.tsv"), "--encoder", "minilm"]
    command += ["--shard-size", "20", "--batch-size", "8", "--quiet"]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, *command, "--out", str(tmp_path / "one")], check=True, env=environment)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    subprocess.run([*torchrun, *command, "--out", str(tmp_path / "two")], check=True, env=environment)
    one = sorted((tmp_path / "one").iterdir())
    assert [p.name for p in one] == sorted(p.name for p in (tmp_path / "two").iterdir())
    assert len([p for p in one if p.suffix == ".npy"]) == 5
    for path in one:
        assert (tmp_path / "two" / path.name).read_bytes() == path.read_bytes(), path.name


def test_training_ranks_wait_for_rank_zeros_validation_past_torchs_ten_minutes(monkeypatch, tmp_path):
    """Rank 0 alone retrieves at each validation; the others wait at the next all-reduce, so the
    process group's timeout must outlast a pass over the 25M-passage shards (torch's default: 10 min)."""
    from datetime import timedelta

    from amer_lib.runs import torchrun

    asked = []

    class Stop(Exception):
        pass

    def setup(timeout=None):
        asked.append(timeout)
        raise Stop

    monkeypatch.setattr(torchrun, "setup", setup)
    spec = tmp_path / "spec.json"
    spec.write_text('{"runner": "x:y", "config": "x:Y", "params": {}, "job": []}')
    with pytest.raises(Stop):
        torchrun.main([str(spec)])
    assert asked == [torchrun.RANK_TIMEOUT] and torchrun.RANK_TIMEOUT >= timedelta(hours=1)


# ----- a run killed after a checkpoint and resumed on its ranks -----------------------------------
class Crash(Exception):
    pass


class CrashingData(VectorData):
    """Stops the process on the `crash_at`-th call for targets (one call per training step): raises
    `Crash`, or with `kill` sends itself SIGKILL (no `finally`, no process group torn down)."""

    def __init__(self, data, crash_at, kill):
        super().__init__(data.inputs, data.target_vectors, data.mask)
        self.calls, self.crash_at, self.kill = 0, crash_at, kill

    def targets(self, indices):
        self.calls += 1
        if self.calls == self.crash_at:
            if self.kill:
                os.kill(os.getpid(), signal.SIGKILL)
            raise Crash
        return super().targets(indices)


def dropout_model() -> AMERQueryEncoder:
    """`make_model()` with attention dropout: every training step draws from each rank's random state."""
    torch.manual_seed(0)
    overrides = dict(hidden_size=16, intermediate_size=32, attention_dropout=0.2)
    return AMERQueryEncoder(load_backbone("tiny", seed=0, config_overrides=overrides), DIM)


def _resumable_rank(
    rank: int, world: int, store: str, out: str, crash_at: int, kill: bool, checkpoint_seconds: float
) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        data, pool = make_problem()
        model = dropout_model()
        # the ranks' random states part, as they do where each rank's prompts are padded to another
        # length (a different number of dropout draws): here a different number of draws per rank
        torch.rand(3 + rank)
        data = CrashingData(data, crash_at, kill) if crash_at else data
        config = TrainConfig(**with_terms({**TRAIN_CONFIG, "checkpoint_every": 4}))
        try:
            result = train(  # resumes from run/checkpoint.pt where there is one
                model,
                data,
                make_problem(seed=1)[0],
                pool,
                config,
                run_dir=os.path.join(out, "run"),
                progress=False,
                checkpoint_seconds=checkpoint_seconds,
            )
        except Crash:
            return
        next_draws = torch.rand(8)  # what the rank's random state gives after training
        torch.save(
            {"state": state(model), "history": result.history, "next_draws": next_draws},
            os.path.join(out, f"rank{rank}.pt"),
        )
    finally:
        dist.destroy_process_group()


def train_on_ranks(
    folder, world: int, crash_at: int = 0, kill: bool = False, checkpoint_seconds: float = 600.0
) -> list[dict] | None:
    """`_resumable_rank` on `world` gloo ranks (a new process group each time); each rank's results,
    None when the ranks were stopped in step `crash_at` (killed with SIGKILL where `kill`)."""
    context = multiprocessing.get_context("spawn")
    store = folder / f"store{len(list(folder.glob('store*')))}"
    args = lambda r: (r, world, str(store), str(folder), crash_at, kill, checkpoint_seconds)  # noqa: E731
    ranks = [context.Process(target=_resumable_rank, args=args(r)) for r in range(world)]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(300)
    assert [p.exitcode for p in ranks] == [-signal.SIGKILL if crash_at and kill else 0] * world
    paths = [folder / f"rank{r}.pt" for r in range(world)]
    return None if crash_at else [torch.load(path, weights_only=False) for path in paths]


@pytest.mark.parametrize(
    ("world", "checkpoint_seconds", "kill", "saved_at"),
    [
        pytest.param(2, 600.0, False, 4, id="2-ranks-steps-raise", marks=pytest.mark.slow),  # 15-28 s, 2 shared cores
        pytest.param(2, 0.0, True, 6, id="2-ranks-clock-sigkill", marks=pytest.mark.slow),  # 14-30 s
        pytest.param(4, 0.0, True, 6, id="4-ranks-clock-sigkill", marks=pytest.mark.slow),  # 60-65 s
    ],
)
def test_a_run_killed_after_a_checkpoint_resumes_every_ranks_random_states(
    tmp_path, world, checkpoint_seconds, kill, saved_at
):
    """Stopped in step 7 (an exception, or SIGKILL) after a checkpoint (at step 4 by
    `checkpoint_every`, or at step 6 by rank 0's clock, which the other ranks must follow), the
    ranks resume and end byte for byte where the uninterrupted ranks end: the weights, the history
    and each rank's next random draws. Each rank draws its own dropout masks, so a checkpoint of
    rank 0's random states alone fails this (it did, at the commit before the ranks' own states)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    uninterrupted = train_on_ranks(tmp_path / "a", world)
    stopped = train_on_ranks(tmp_path / "b", world, crash_at=7, kill=kill, checkpoint_seconds=checkpoint_seconds)
    assert stopped is None
    checkpoint = torch.load(tmp_path / "b" / "run" / "checkpoint.pt", weights_only=True)
    assert checkpoint["step"] == saved_at and len(checkpoint["rank_rng"]) == world
    assert not any(torch.equal(checkpoint["rank_rng"][0]["rng"], s["rng"]) for s in checkpoint["rank_rng"][1:])
    resumed = train_on_ranks(tmp_path / "b", world, checkpoint_seconds=checkpoint_seconds)
    for rank, (one, other) in enumerate(zip(uninterrupted, resumed)):
        assert one["state"].keys() == other["state"].keys()
        for name, value in one["state"].items():
            assert torch.equal(value, other["state"][name]), (rank, name)
        assert one["history"] == other["history"], rank
        assert torch.equal(one["next_draws"], other["next_draws"]), rank
    # the ranks drew differently: rank 0's states restored on every rank would not have resumed them
    assert not torch.equal(uninterrupted[0]["next_draws"], uninterrupted[1]["next_draws"])


def test_a_checkpoint_of_another_number_of_ranks_resumes_the_ranks_it_holds_and_seeds_the_others(
    monkeypatch, capsys, tmp_path
):
    """`nproc_per_node` is not part of the run key: a run killed on 2 ranks may resume on 3 or on 1.
    Each rank the checkpoint holds takes its states back; a rank it does not hold draws from a seed
    of its own (not rank 0's masks again); rank 0 says the run will not end as an uninterrupted one."""
    from amer_lib.core import train as training

    def states(seed):
        torch.manual_seed(seed)
        return {"rng": torch.get_rng_state(), "cuda_rng": None}

    def draws_after_seed(seed):
        torch.manual_seed(seed)
        return torch.rand(4)

    def resumed(checkpoint, rank, size):
        monkeypatch.setattr(distributed, "rank_and_size", lambda: (rank, size))
        torch.manual_seed(99)  # whatever state the rank had before: the checkpoint's must replace it
        training._restore_rng_states(checkpoint, tmp_path / "checkpoint.pt", TrainConfig(**with_terms(TRAIN_CONFIG)))
        return torch.rand(4)

    two_ranks = {"rank_rng": [states(1), states(2)], "step": 6}
    three = [resumed(two_ranks, rank, 3) for rank in range(3)]
    assert torch.equal(three[0], draws_after_seed(1)) and torch.equal(three[1], draws_after_seed(2))
    assert not any(torch.equal(three[2], draws) for draws in (*three[:2], draws_after_seed(99)))
    assert torch.equal(resumed(two_ranks, 2, 3), three[2])  # the new seed is the same at every resume
    assert capsys.readouterr().out == (
        f"{tmp_path / 'checkpoint.pt'} holds the random states of 2 rank(s) and resumes on 3: rank(s) 2 draw from "
        "new seeds, so the run will not end exactly where an uninterrupted run ends\n"
    )
    assert torch.equal(resumed(two_ranks, 0, 1), draws_after_seed(1))
    assert "those of rank(s) 1 go unused" in capsys.readouterr().out
    one_process = {"rng": states(2)["rng"], "cuda_rng": None, "step": 6}  # written before the ranks' own states
    assert torch.equal(resumed(one_process, 0, 1), draws_after_seed(2))
    assert capsys.readouterr().out == ""


# ----- a stop asked of one rank is taken by all at the same step ----------------------------------
class SignallingData(VectorData):
    """Sends its own process SIGTERM on the `at`-th call for targets (one call per training step)."""

    def __init__(self, data, at):
        super().__init__(data.inputs, data.target_vectors, data.mask)
        self.calls, self.at = 0, at

    def targets(self, indices):
        self.calls += 1
        if self.calls == self.at:
            os.kill(os.getpid(), signal.SIGTERM)
        return super().targets(indices)


def _stopped_rank(rank: int, world: int, store: str, out: str) -> None:
    from amer_lib.core.train import TrainingStopped

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        data, pool = make_problem()
        data = SignallingData(data, 6) if rank == 1 else data  # rank 1 alone is asked, in step 5
        config = TrainConfig(**with_terms({**TRAIN_CONFIG, "checkpoint_every": 4}))
        try:
            train(make_model(), data, data, pool, config, run_dir=os.path.join(out, "run"), progress=False)
        except TrainingStopped as stopped:
            (Path(out) / f"rank{rank}.stopped").write_text(str(stopped))
    finally:
        dist.destroy_process_group()


def test_a_stop_asked_of_one_rank_ends_every_rank_at_the_same_step_with_one_checkpoint(tmp_path):
    """SIGTERM to rank 1 alone (a scheduler's signal reaching one process first), in step 5 (its
    sixth call for targets: the step-4 validation made one): the step-end all-reduce makes every
    rank stop after step 5 together (no rank left waiting in a collective), and rank 0 writes the
    checkpoint of step 5 and says which signal asked."""
    context = multiprocessing.get_context("spawn")
    ranks = [
        context.Process(target=_stopped_rank, args=(r, 2, str(tmp_path / "store"), str(tmp_path))) for r in range(2)
    ]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(120)
    assert [p.exitcode for p in ranks] == [0, 0]
    said = [(tmp_path / f"rank{r}.stopped").read_text() for r in range(2)]
    assert said == ["training stopped at step 5 of 12 by SIGTERM"] * 2
    assert torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["step"] == 5
