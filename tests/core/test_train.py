import os
import signal
import time
from pathlib import Path

import pytest
import torch
from stand_ins import DIM, TRAIN_CONFIG, make_model, make_problem, state, with_terms

from amer_lib.core.backbones import load_backbone
from amer_lib.core.loss import StopTerm
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import (
    CheckpointError,
    Optimizer,
    ScheduledSampling,
    TrainConfig,
    TrainingStopped,
    batch_indices,
    train,
)
from amer_lib.data.datasets import VectorData
from amer_lib.io import save_torch


def test_training_lowers_the_validation_loss():
    data, pool = make_problem()
    result = train(
        make_model(),
        data,
        make_problem(seed=1)[0],
        pool,
        TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 40, "lr": 3e-3, "eval_every": 10})),
        progress=False,
    )
    assert result.history[-1]["val_loss"] < result.history[0]["val_loss"]
    assert result.best_val_loss == min(h["val_loss"] for h in result.history)


def test_same_seed_same_weights(tmp_path):
    data, pool = make_problem()
    a, b = make_model(), make_model()
    train(a, data, data, pool, TrainConfig(**with_terms(TRAIN_CONFIG)), progress=False)
    train(b, data, data, pool, TrainConfig(**with_terms(TRAIN_CONFIG)), progress=False)
    assert all(torch.equal(x, y) for x, y in zip(state(a).values(), state(b).values()))


class Crash(Exception):
    pass


class CrashingData(VectorData):
    """Raises on the `crash_at`-th call for targets: a run killed mid-way."""

    def __init__(self, data, crash_at):
        super().__init__(data.inputs, data.target_vectors, data.mask)
        self.calls, self.crash_at = 0, crash_at

    def targets(self, indices):
        self.calls += 1
        if self.calls == self.crash_at:
            raise Crash
        return super().targets(indices)


def test_a_resumed_run_ends_where_an_uninterrupted_run_ends(tmp_path):
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    uninterrupted = make_model()
    expected = train(uninterrupted, data, data, pool, config, run_dir=tmp_path / "a", progress=False)

    crashing = CrashingData(data, crash_at=8)  # after the step-4 checkpoint (4 train steps + 1 validation batch)
    with pytest.raises(Crash):
        train(make_model(), crashing, data, pool, config, run_dir=tmp_path / "b", progress=False)
    assert (tmp_path / "b" / "checkpoint.pt").exists()
    resumed = make_model(seed=5)  # different initial weights: everything must come from the checkpoint
    result = train(resumed, data, data, pool, config, run_dir=tmp_path / "b", progress=False)
    assert all(torch.equal(x, y) for x, y in zip(state(uninterrupted).values(), state(resumed).values()))
    assert result.history == expected.history


def test_a_slow_run_checkpoints_by_the_clock_and_says_where_it_resumes(tmp_path, capsys):
    """With `checkpoint_seconds = 0` every step is saved although `checkpoint_every` is the whole
    run: a crash in step 7 resumes from step 6, not from zero, and ends where an uninterrupted run ends."""
    data, pool = make_problem()
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "checkpoint_every": 12}))
    uninterrupted = make_model()
    expected = train(uninterrupted, data, data, pool, config, progress=False)
    crashing = CrashingData(data, crash_at=7)  # one call per training step: the 7th is step 7
    with pytest.raises(Crash):
        train(make_model(), crashing, data, pool, config, run_dir=tmp_path, progress=False, checkpoint_seconds=0)
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 6
    capsys.readouterr()
    resumed = make_model(seed=5)
    result = train(resumed, data, data, pool, config, run_dir=tmp_path, progress=False, checkpoint_seconds=0)
    assert f"resuming {tmp_path} at step 6 of 12" in capsys.readouterr().out
    assert all(torch.equal(x, y) for x, y in zip(state(uninterrupted).values(), state(resumed).values()))
    assert result.history == expected.history


def test_an_interrupt_says_where_the_run_stopped_and_where_the_same_command_resumes(tmp_path, capsys):
    """Issue 78: an interrupt mid-step (a KeyboardInterrupt from step 6's callback here) prints one
    line: the step reached, of how many, and the checkpoint a rerun resumes from (step 4's); the
    rerun resumes there and ends where an uninterrupted run ends."""
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    expected = train(make_model(), data, data, pool, config, progress=False)
    calls = []

    def interrupted():
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(make_model(), data, data, pool, config, run_dir=tmp_path, progress=False, on_step=interrupted)
    said = capsys.readouterr().out.strip().splitlines()
    checkpoint = tmp_path / "checkpoint.pt"
    assert said == [f"stopped at step 6 of 12; the same command resumes at step 4, its last checkpoint ({checkpoint})"]
    resumed = train(make_model(seed=5), data, data, pool, config, run_dir=tmp_path, progress=False)
    assert f"resuming {tmp_path} at step 4 of 12" in capsys.readouterr().out
    assert resumed.history == expected.history


def test_long_work_is_announced_with_its_measured_cost(capsys):
    from amer_lib.progress import announce_cost, duration

    assert [duration(s) for s in (45, 600, 12_600)] == ["45 s", "10 min", "3 h 30 min"]
    assert announce_cost("training", 1, 0.5, 300) is None  # 150 s: not long work
    message = announce_cost("training steps, 2 workers", 20, 48.0, 3600)  # 2.4 s a step: 2.4 hours
    assert message == (
        "training steps, 2 workers: 20 step(s) took 48 s; the 3,600 steps left need about 2 h 24 min at this rate"
    )
    assert capsys.readouterr().out == message + "\n"


def test_single_query_training_runs_with_one_output_and_keeps_its_best_weights():
    """The returned model holds the weights of the lowest validation loss: scoring it again gives
    that loss, and it emits one vector per input."""
    from amer_lib.core.train import validation_loss

    data, pool = make_problem()
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "n_outputs": 1, "lr": 3e-3}))
    model = make_model()
    result = train(model, data, data, pool, config, progress=False)
    assert result.best_val_loss == min(h["val_loss"] for h in result.history)
    assert validation_loss(model, data, pool, config) == pytest.approx(result.best_val_loss, abs=1e-6)
    assert model.generate(model.prompt_from_vectors(data.inputs[:3]), 1).shape == (3, 1, DIM)


def test_corrupted_checkpoint_is_named(tmp_path):
    data, pool = make_problem()
    (tmp_path / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(
        CheckpointError,
        match=r"^checkpoint .*checkpoint.pt is damaged \(it has no record of its sha256 \(checkpoint.pt.sha256\): "
        r"it was not written by this library\); delete it to start the run again$",
    ) as raised:
        train(make_model(), data, data, pool, TrainConfig(**with_terms(TRAIN_CONFIG)), run_dir=tmp_path, progress=False)
    assert "weights_only" not in str(raised.value) and raised.value.__cause__ is None  # torch's advice not passed on


def test_a_checkpoint_cut_short_is_named_with_the_fix_asked_for(tmp_path):
    """Issue 78: a kept `best.pt` cut short names its path and the caller's fix, not torch's advice."""
    from amer_lib.core.train import load_checkpoint

    path = tmp_path / "best.pt"
    save_torch(path, {"w": torch.ones(1000)})
    path.write_bytes(path.read_bytes()[:300])
    fix = "delete it and results/x.json to train the run again"
    named = rf"^checkpoint {path} is damaged \(its sha256 is \w+, \w+ when written \(300 bytes now, .+\); {fix}$"
    with pytest.raises(CheckpointError, match=named) as raised:
        load_checkpoint(path, fix=fix)
    assert "weights_only" not in str(raised.value)


def test_a_checkpoint_with_one_byte_changed_is_refused(tmp_path):
    """torch.load reads a flipped byte inside a tensor without a word (other weights, no error);
    the record's sha256 does not."""
    from amer_lib.core.train import load_checkpoint

    path = tmp_path / "best.pt"
    save_torch(path, {"w": torch.randn(1000)})
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"is damaged \(its sha256 is \w+, \w+ when written"):
        load_checkpoint(path)


def test_a_checkpoint_without_its_record_is_refused(tmp_path):
    from amer_lib.core.train import load_checkpoint

    torch.save({"w": torch.ones(3)}, tmp_path / "best.pt")
    with pytest.raises(CheckpointError, match=r"has no record of its sha256 \(best\.pt\.sha256\)"):
        load_checkpoint(tmp_path / "best.pt")


def test_a_crash_between_the_record_and_the_rename_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    from amer_lib import io
    from amer_lib.core.train import load_checkpoint

    path = tmp_path / "checkpoint.pt"
    save_torch(path, {"step": torch.tensor(4)})
    real_replace = io.os.replace

    def crash(source, target):
        if Path(target) == path:
            raise KeyboardInterrupt  # killed after the record was written, before the file moved
        real_replace(source, target)

    monkeypatch.setattr(io.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        save_torch(path, {"step": torch.tensor(8)})
    monkeypatch.undo()
    assert load_checkpoint(path)["step"] == 4
    save_torch(path, {"step": torch.tensor(12)})
    assert load_checkpoint(path)["step"] == 12


class Pickled:
    """Any object a weights-only load must refuse (a checkpoint may run code when unpickled)."""


def test_a_checkpoint_holding_code_is_refused(tmp_path):
    data, pool = make_problem()
    save_torch(tmp_path / "checkpoint.pt", {"step": 1, "payload": Pickled()})
    with pytest.raises(CheckpointError, match="corrupted or unreadable"):
        train(make_model(), data, data, pool, TrainConfig(**with_terms(TRAIN_CONFIG)), run_dir=tmp_path, progress=False)


def test_checkpoint_of_another_configuration_is_refused(tmp_path):
    data, pool = make_problem()
    train(make_model(), data, data, pool, TrainConfig(**with_terms(TRAIN_CONFIG)), run_dir=tmp_path, progress=False)
    # the message shows the configuration the checkpoint holds (lr 1e-3), not the one asked for
    with pytest.raises(CheckpointError, match=r"another configuration \(\{.*'lr': 0\.001"):
        train(
            make_model(),
            data,
            data,
            pool,
            TrainConfig(**with_terms({**TRAIN_CONFIG, "lr": 0.1})),
            run_dir=tmp_path,
            progress=False,
        )


def test_schedules():
    config = TrainConfig(n_outputs=5, steps=100, batch_size=4)
    assert [config.sampling_prob(s) for s in (0, 50, 80, 99)] == [0.0, 0.5, 0.8, 0.8]
    assert config.lr_factor(0) == pytest.approx(0.2) and config.lr_factor(4) == 1.0
    assert config.lr_factor(52) == pytest.approx(48 / 95) and config.lr_factor(100) == 0.0  # linear decay after warmup
    assert (
        TrainConfig(n_outputs=5, steps=10, batch_size=4, sampling=ScheduledSampling("predicted")).sampling_prob(0)
        == 1.0
    )
    assert (
        TrainConfig(n_outputs=5, steps=10, batch_size=4, sampling=ScheduledSampling("teacher")).sampling_prob(9) == 0.0
    )
    with pytest.raises(ValueError, match="unknown sampling mode 'sometimes'"):
        ScheduledSampling("sometimes")
    with pytest.raises(TypeError, match="sampling must be a ScheduledSampling"):
        TrainConfig(n_outputs=5, steps=10, batch_size=4, sampling="teacher")


def test_batches_cover_each_epoch_once():
    seen = torch.cat([batch_indices(20, 5, seed=1, step=s) for s in range(4)])
    assert sorted(seen.tolist()) == list(range(20))


def test_examples_without_targets_are_refused():
    with pytest.raises(ValueError, match=r"examples \[1\] have no targets"):
        VectorData(torch.randn(2, DIM), torch.randn(2, 2, DIM), torch.tensor([[True, False], [False, False]]))


def test_grouped_batches_hold_one_target_count_and_cover_the_epoch():
    from amer_lib.core.train import batch_indices

    sizes = torch.tensor([2] * 40 + [3] * 24 + [7] * 16)
    epoch = [batch_indices(80, 8, seed=1, step=s, group_sizes=sizes) for s in range(10)]
    assert all(len(set(sizes[b].tolist())) == 1 for b in epoch)  # 40, 24, 16 are multiples of 8
    assert sorted(torch.cat(epoch).tolist()) == list(range(80))
    assert [sizes[b][0].item() for b in epoch] != sorted(sizes[b][0].item() for b in epoch)  # batch order shuffled
    assert torch.equal(batch_indices(80, 8, 1, 3, sizes), epoch[3])
    assert not torch.equal(batch_indices(80, 8, 1, 13, sizes), epoch[3])  # next epoch, new batches


def test_amer_decodes_only_as_many_vectors_as_the_batch_needs():
    from amer_lib.core.train import example_loss

    inputs, targets, pool = torch.randn(8, DIM), torch.randn(8, 6, DIM), torch.randn(50, DIM)
    mask = torch.zeros(8, 6, dtype=torch.bool)
    mask[:, :2] = True
    mask[3, :3] = True  # the largest target set in the data is 3 of a padded width of 6
    model, calls = make_model(), []
    model.register_forward_hook(lambda module, args, output: calls.append(output.shape[1]))
    config = TrainConfig(n_outputs=5, steps=1, batch_size=4)
    example_loss(
        model,
        VectorData(inputs, targets, mask),
        torch.tensor([0, 1, 2, 4]),
        pool,
        config,
        0.5,
        torch.Generator().manual_seed(0),
    )
    example_loss(
        model,
        VectorData(inputs, targets, mask),
        torch.tensor([0, 3]),
        pool,
        config,
        0.5,
        torch.Generator().manual_seed(0),
    )
    assert calls == [2, 3]


def test_lora_checkpoints_hold_only_what_training_changes(tmp_path):
    from amer_lib.core.backbones import add_lora, get_backbone, load_backbone
    from amer_lib.core.train import load_trainable_state

    def lora_model():
        torch.manual_seed(0)
        backbone = load_backbone("tiny", config_overrides=dict(hidden_size=16, intermediate_size=32))
        return AMERQueryEncoder(add_lora(backbone, get_backbone("tiny").lora), DIM)

    data, pool = make_problem()
    model = lora_model()
    train(model, data, data, pool, TrainConfig(**with_terms(TRAIN_CONFIG)), run_dir=tmp_path, progress=False)
    best = torch.load(tmp_path / "best.pt", weights_only=True)
    assert set(best) == {n for n, p in model.named_parameters() if p.requires_grad}
    assert all("lora_" in n or "projection" in n for n in best)
    assert set(torch.load(tmp_path / "checkpoint.pt", weights_only=True)["model"]) == set(best)
    reloaded = lora_model()  # the frozen backbone is rebuilt, the trained weights are loaded
    load_trainable_state(reloaded, best, tmp_path / "best.pt")
    prompt = model.prompt_from_vectors(data.inputs[:4])
    torch.testing.assert_close(reloaded.eval().generate(prompt, 3), model.eval().generate(prompt, 3))
    with pytest.raises(CheckpointError, match="does not hold this model's trained weights"):
        load_trainable_state(lora_model(), {k: v for k, v in best.items() if "projection" not in k}, "partial.pt")


def test_single_target_step_adds_a_single_query_step_per_iteration(monkeypatch):
    import amer_lib.core.train as training

    calls = []
    original = training.batch_loss
    monkeypatch.setattr(
        training,
        "batch_loss",
        lambda model, data, batch, rows, config: (
            calls.append((config.n_outputs, batch.indices[rows].tolist())) or original(model, data, batch, rows, config)
        ),
    )
    data, pool = make_problem()
    model = make_model()
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 3, "eval_every": 10, "single_target_step": True}))
    train(model, data, data, pool, config, progress=False)
    optimizer_steps = [(n, batch) for n, batch in calls if len(batch) == config.batch_size]
    assert [n for n, _ in optimizer_steps] == [3, 1] * 3  # each AMER step followed by a single-query one
    assert all(a[1] == b[1] for a, b in zip(optimizer_steps[::2], optimizer_steps[1::2]))  # on the same examples
    single = make_model()
    train(
        single,
        data,
        data,
        pool,
        TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 3, "eval_every": 10})),
        progress=False,
    )
    assert not torch.equal(state(single)["output_projection.weight"], state(model)["output_projection.weight"])


def counted_problem(n, seed):
    """1 target when the input's first coordinate is negative, 3 otherwise."""
    data, pool = make_problem(n=n, m=3, seed=seed)
    data.mask[:] = True
    data.mask[data.inputs[:, 0] < 0, 1:] = False
    return data, pool


@pytest.mark.slow  # 135 s in one process on 2 threads beside other work, 5 s on the one thread of a pytest-xdist worker
def test_the_stop_head_learns_how_many_targets_an_input_has():
    # the stop head, trained beside the matched loss (and part of the validation loss that picks
    # the kept weights), stops after as many vectors as the input has targets
    data, pool = counted_problem(256, seed=0)
    torch.manual_seed(0)
    model = AMERQueryEncoder(
        load_backbone("tiny", seed=0, config_overrides=dict(hidden_size=16, intermediate_size=32)), DIM, stop_head=True
    )
    config = TrainConfig(
        **with_terms({**TRAIN_CONFIG, "steps": STOP_STEPS, "lr": 1e-2, "eval_every": 50, "terms": (StopTerm(1.0),)})
    )
    train(model, data, counted_problem(64, seed=1)[0], pool, config, progress=False)
    test, _ = counted_problem(400, seed=2)
    _, counts, _ = model.generate_until_stop(model.prompt_from_vectors(test.inputs), 3)
    right = (counts == test.mask.sum(-1)).float()
    # measured with model seeds 0, 1, 2: 0.855-0.865 of all inputs (a constant count: about
    # half), 0.946-0.971 of those away from the boundary x_0 = 0
    assert right.mean() > 0.75
    assert right[test.inputs[:, 0].abs() > 0.5].mean() > 0.9


STOP_STEPS = 300


@pytest.mark.parametrize("p", [0.0, 0.5, 0.8])
def test_scheduled_sampling_feeds_the_models_output_at_the_drawn_rate(p):
    """Each (example, position) is fed the model's own output with probability p: the mean of 8,000
    draws lies within 0.03 of p (over five standard deviations at p = 0.5)."""
    from amer_lib.core.train import draw_batch

    inputs = torch.zeros(2000, DIM)
    data = VectorData(inputs, torch.randn(2000, 5, DIM), torch.ones(2000, 5, dtype=torch.bool))
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    batch = draw_batch(data, torch.arange(2000), torch.randn(10, DIM), config, p, torch.Generator().manual_seed(0))
    assert batch.sample_mask.shape == (2000, 4)
    assert abs(batch.sample_mask.float().mean().item() - p) < 0.03


def scripted_validation(monkeypatch, losses):
    """`validation_loss` replaced by `losses`, one per call in order: the validation curve chosen."""
    import amer_lib.core.train as train_module

    calls = iter(losses)
    monkeypatch.setattr(train_module, "validation_loss", lambda *args, **kwargs: next(calls))


def test_a_resume_keeps_the_best_weights_saved_before_the_crash(tmp_path, monkeypatch):
    """Validation losses rise after step 4, so the best step (4) lies before the crash (in step 9,
    after the step-8 checkpoint): the resumed run ends on best.pt's weights, as the uninterrupted one."""
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))  # 12 steps, validation and checkpoint every 4
    scripted_validation(monkeypatch, [1.0, 2.0, 3.0])
    uninterrupted = make_model()
    expected = train(uninterrupted, data, data, pool, config, run_dir=tmp_path / "a", progress=False)
    assert expected.best_step == 4

    scripted_validation(monkeypatch, [1.0, 2.0, 3.0])  # the crashed run's two, then the resumed run's one
    crashing = CrashingData(data, crash_at=9)  # the 9th step's targets: after the step-8 checkpoint
    with pytest.raises(Crash):
        train(make_model(), crashing, data, pool, config, run_dir=tmp_path / "b", progress=False)
    best = torch.load(tmp_path / "b" / "best.pt", weights_only=True)
    resumed = make_model(seed=5)
    result = train(resumed, data, data, pool, config, run_dir=tmp_path / "b", progress=False)
    assert result.best_step == 4 and result.history == expected.history
    weights = state(resumed)
    assert best and set(best) <= set(weights) and all(torch.equal(best[name], weights[name]) for name in best)
    assert all(torch.equal(x, y) for x, y in zip(state(uninterrupted).values(), state(resumed).values()))


def killed_once_marked(script: str, run_dir: Path, marker: Path) -> None:
    """Run `script` (argv: `run_dir`, `marker`) in a child process with the tests' modules on its
    path, and SIGKILL it once it has written `marker` (where it waits to be killed)."""
    import subprocess
    import sys

    tests = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", script, str(run_dir), str(marker)], env=env)
    try:
        deadline = time.time() + 120
        while not marker.exists() and child.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        assert marker.exists(), f"the child never wrote {marker.name}"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL


KILLED_CHILD = """
import sys, time
from pathlib import Path
import torch
torch.set_num_threads(1)
from stand_ins import TRAIN_CONFIG, make_model, make_problem, with_terms
from amer_lib.core.train import TrainConfig, train

run_dir, marker = Path(sys.argv[1]), Path(sys.argv[2])
steps = iter(range(1, 100))

def on_step():
    done = next(steps)
    if done == 6:  # after the step-4 checkpoint: wait here to be killed
        marker.write_text("6")
        time.sleep(60)

data, pool = make_problem()
config = TrainConfig(**with_terms(TRAIN_CONFIG))
train(make_model(), data, data, pool, config, run_dir=run_dir, progress=False, on_step=on_step)
"""


def test_a_training_process_killed_with_sigkill_resumes_to_the_uninterrupted_end(tmp_path):
    from amer_lib.core.device import cpu_threads

    killed_once_marked(KILLED_CHILD, tmp_path / "b", tmp_path / "at_step_6")
    assert torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=False)["step"] == 4
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    with cpu_threads(1):
        uninterrupted = make_model()
        expected = train(uninterrupted, data, data, pool, config, run_dir=tmp_path / "a", progress=False)
        resumed = make_model(seed=5)
        result = train(resumed, data, data, pool, config, run_dir=tmp_path / "b", progress=False)
    assert result.history == expected.history
    assert all(torch.equal(x, y) for x, y in zip(state(uninterrupted).values(), state(resumed).values()))


def test_hard_negatives_replace_the_drawn_share_with_the_examples_own_mined_ones():
    from amer_lib.core.train import with_hard_negatives

    batch, slots, mined, dim = 400, 8, 5, 4
    negatives = torch.zeros(batch, slots, dim)
    hard = torch.arange(1, batch * mined + 1, dtype=torch.float).reshape(batch, mined, 1).expand(-1, -1, dim)
    generator = torch.Generator().manual_seed(0)
    assert torch.equal(with_hard_negatives(negatives, hard, 0.0, generator), negatives)
    for share in (0.3, 1.0):
        drawn = with_hard_negatives(negatives, hard, share, generator)[..., 0]
        swapped = drawn > 0
        assert abs(swapped.float().mean().item() - share) < 0.02  # 3200 draws: 4 standard errors at 0.3
        example = ((drawn - 1) // mined).long()  # which example's list each mined value came from
        rows = torch.arange(batch)[:, None].expand(-1, slots)
        assert torch.equal(example[swapped], rows[swapped])
        assert set(((drawn[swapped] - 1) % mined).long().tolist()) == set(range(mined))  # every mined one drawn
    draws = []
    for global_seed in (0, 1):  # the draws are the step's generator's alone, whatever torch's global state
        torch.manual_seed(global_seed)
        draws.append(with_hard_negatives(negatives, hard, 0.5, torch.Generator().manual_seed(3)))
    assert torch.equal(*draws)


def test_hard_negatives_need_data_that_holds_them_and_a_share_between_0_and_1():
    from amer_lib.core.train import draw_batch

    data, pool = make_problem()
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "hard_negative_share": 0.5}))
    with pytest.raises(ValueError, match="VectorData holds no mined hard negatives"):
        draw_batch(data, torch.arange(4), pool, config, 0.0, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="hard_negative_share must be between 0 and 1, got 1.5"):
        TrainConfig(**with_terms({**TRAIN_CONFIG, "hard_negative_share": 1.5}))


def test_the_optimizer_is_adamw_with_the_papers_betas_and_eps_under_the_warmup_and_decay():
    """Three steps of the training's optimizer and schedule against torch's reference AdamW (neither
    fused nor foreach) given the hand-written hyperparameters: lr 3e-3 times the factors 1/2, 1, 1
    (a warmup of ceil(0.05 x 40) = 2 steps, then the decay from 38 / 38), betas (0.9, 0.98), eps
    1e-6, weight decay 0.1 (not torch's defaults 1e-3, (0.9, 0.999), 1e-8, 0.01)."""
    from amer_lib.core.train import adamw

    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 40, "lr": 3e-3, "weight_decay": 0.1}))
    model, reference = make_model(), make_model()
    params, optimizer, scheduler = adamw(model, config)
    before = [p.detach().clone() for p in params]
    expected = [p for p in reference.parameters() if p.requires_grad]
    hand = torch.optim.AdamW(expected, lr=3e-3, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.1, foreach=False)
    for step, factor in enumerate([0.5, 1.0, 1.0]):
        for group in hand.param_groups:
            group["lr"] = 3e-3 * factor
        for i, (p, q) in enumerate(zip(params, expected)):
            grad = 1e-3 * torch.sin(torch.arange(p.numel(), dtype=torch.float).reshape(p.shape) * (step + 1) + i)
            p.grad, q.grad = grad.clone(), grad.clone()
        optimizer.step()
        scheduler.step()
        hand.step()
    assert len(params) == len(expected) and all(not torch.equal(p, b) for p, b in zip(params, before))
    for p, q in zip(params, expected):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-7)


def test_each_validation_records_its_step_sampling_probability_learning_rate_and_metrics():
    """The history by hand for 12 steps validated every 4: the step done; p of the step's index
    (min(0.8, step / 12): 3/12, 7/12, then the cap); the learning rate after the step (a one-step
    warmup, then 3e-3 x (12 - done) / 11); and what `evaluate` returned, called on the trained model."""
    data, pool = make_problem()
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 12, "eval_every": 4, "lr": 3e-3}))
    model, seen = make_model(), []

    def evaluate(evaluated):
        seen.append(evaluated)
        return {"probe": float(len(seen))}

    history = train(model, data, data, pool, config, evaluate=evaluate, progress=False).history
    assert [set(h) for h in history] == [{"step", "train_loss", "val_loss", "p", "lr", "probe"}] * 3
    assert [h["step"] for h in history] == [4, 8, 12]
    assert [h["p"] for h in history] == pytest.approx([3 / 12, 7 / 12, 0.8])
    assert [h["lr"] for h in history] == pytest.approx([3e-3 * 8 / 11, 3e-3 * 4 / 11, 0.0])
    assert [h["probe"] for h in history] == [1.0, 2.0, 3.0] and all(m is model for m in seen)


def _drawn_batch(config, p=0.5, seed=3):
    from amer_lib.core.train import draw_batch

    data, pool = make_problem()
    indices = torch.arange(8)
    return data, draw_batch(data, indices, pool, config, p, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"exclude_fed_targets": True},
        {"matched_loss": "sum"},
        {"spread_weight": 2.0},
        {"stop_weight": 0.5},
        {"first_vector": "single"},
        {"exclude_fed_targets": True, "stop_weight": 0.5, "matched_loss": "sum", "spread_weight": 1.0},
        {"exclude_fed_targets": True, "first_vector": "single", "matched_loss": "sum"},
    ],
)
def test_a_batch_share_is_scored_by_the_matched_loss_of_its_settings(changes):
    """`batch_loss` on examples 2-5 of an 8-example batch equals the matched InfoNCE composed by
    hand from the config: the share's outputs (teacher-forced where the sample mask says), scored
    against every candidate of the batch from row 2 on, fed targets forbidden when asked, the
    reduction and spread weight passed, and the stop head's loss added with its weight."""
    from amer_lib.beyond.spread import spread_penalty
    from amer_lib.core.loss import fed_target_pairs, matched_info_nce, stop_loss
    from amer_lib.core.train import batch_loss

    config = TrainConfig(**with_terms({**TRAIN_CONFIG, **changes}))
    data, batch = _drawn_batch(config)
    assert bool(batch.sample_mask.any()) and not bool(batch.sample_mask.all())  # both feeds occur
    torch.manual_seed(0)
    model = AMERQueryEncoder(make_model().backbone, DIM, stop_head=True).eval()
    rows = slice(2, 6)
    n = batch.targets.shape[1]
    prompt = data.prompt(model, batch.indices[rows])
    outputs, stop_logits = model(prompt, n, batch.targets[rows], batch.sample_mask[rows], with_stop=True)
    forbidden = fed_target_pairs(batch.sample_mask[rows], n, n) if config.loss.exclude_fed_targets else None
    expected, assignment = matched_info_nce(
        outputs,
        batch.targets,
        batch.negatives,
        batch.mask,
        temperature=config.loss.temperature,
        forbidden=forbidden,
        first=2,
        reduction=config.loss.reduction,
        first_vector=config.loss.first_vector,
        with_assignment=True,
    )
    if config.term("stop"):
        expected = expected + config.term("stop").weight * stop_loss(stop_logits, batch.mask[rows].sum(-1))
    if config.term("spread"):
        own = batch.targets[rows]
        matched_targets = own.gather(1, assignment[..., None].expand_as(own))
        expected = expected + config.term("spread").weight * spread_penalty(outputs, matched_targets, batch.mask[rows])
    assert torch.allclose(batch_loss(model, data, batch, rows, config), expected, atol=1e-6)


def test_each_setting_of_the_batch_loss_changes_it():
    """The settings above are not no-ops on this batch: each moves the loss away from the plain one
    (so the equalities above could not hold for a loss that ignores them)."""
    from amer_lib.core.train import batch_loss

    torch.manual_seed(0)
    model = AMERQueryEncoder(make_model().backbone, DIM, stop_head=True).eval()
    base = TrainConfig(**with_terms(TRAIN_CONFIG))
    data, batch = _drawn_batch(base)
    plain = batch_loss(model, data, batch, slice(2, 6), base)
    for changes in (
        {"exclude_fed_targets": True},
        {"matched_loss": "sum"},
        {"spread_weight": 2.0},
        {"stop_weight": 0.5},
        {"first_vector": "single"},
    ):
        changed = batch_loss(model, data, batch, slice(2, 6), TrainConfig(**with_terms({**TRAIN_CONFIG, **changes})))
        assert not torch.isclose(changed, plain, atol=1e-4), changes
    assert not torch.isclose(batch_loss(model, data, batch, slice(0, 4), base), plain, atol=1e-4)


def test_the_single_query_loss_scores_the_first_target_against_the_whole_batch():
    """n = 1: InfoNCE of the share's one output against its first (randomly ordered) target, with
    the positives and negatives of the whole batch as candidates (hand-computed with a softmax)."""
    import torch.nn.functional as F

    from amer_lib.core.train import batch_loss

    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "n_outputs": 1}))
    data, batch = _drawn_batch(config)
    model = make_model().eval()
    rows = slice(2, 6)
    query = F.normalize(model(data.prompt(model, batch.indices[rows]), 1)[:, 0], dim=-1)
    candidates = F.normalize(torch.cat([batch.targets[:, 0], batch.negatives[:, 0]]), dim=-1)
    log_probs = (query @ candidates.T / config.loss.temperature).log_softmax(-1)
    expected = -log_probs[torch.arange(4), torch.arange(2, 6)].mean()
    assert torch.allclose(batch_loss(model, data, batch, rows, config), expected, atol=1e-5)


class HardVectorData(VectorData):
    """VectorData whose examples each have two mined hard negatives, far from everything drawn."""

    def hard_negatives(self, indices):
        return 100.0 + torch.stack([indices, indices + 0.5], dim=1)[..., None].float().expand(-1, -1, DIM)


def test_a_drawn_batch_puts_each_examples_valid_targets_first_in_its_own_random_order():
    from amer_lib.core.train import draw_batch

    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    indices = torch.arange(16)
    batch = draw_batch(data, indices, pool, config, 0.5, torch.Generator().manual_seed(0))
    orders = set()
    for row, example in enumerate(indices.tolist()):
        count = int(data.mask[example].sum())
        assert batch.mask[row].tolist() == [True] * count + [False] * (3 - count)
        # each drawn target is one of the example's valid targets, each once
        source = [
            next(j for j in range(count) if torch.equal(batch.targets[row, i], data.target_vectors[example, j]))
            for i in range(count)
        ]
        assert sorted(source) == list(range(count))
        orders.add(tuple(source))
    assert len(orders) > 2  # the examples are not all put in one order
    assert batch.sample_mask.shape == (16, 2)
    assert all(any(torch.equal(v, row) for row in pool) for v in batch.negatives.reshape(-1, DIM))


def test_a_drawn_batch_mixes_the_examples_mined_negatives_in_at_their_share():
    from amer_lib.core.train import draw_batch

    data, pool = make_problem()
    data = HardVectorData(data.inputs, data.target_vectors, data.mask)
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "hard_negative_share": 0.5}))
    indices = torch.arange(8, 24)
    batch = draw_batch(data, indices, pool, config, 0.5, torch.Generator().manual_seed(0))
    mined = batch.negatives[..., 0] >= 100
    assert 0 < int(mined.sum()) < mined.numel()
    for row, example in enumerate(indices.tolist()):
        for value in batch.negatives[row, :, 0][mined[row]].tolist():
            assert value in (100.0 + example, 100.5 + example)  # its own example's


def test_one_example_micro_batches_and_two_halves_add_up_to_the_batch():
    """Micro-batches of one example each; and two halves of a batch return the whole batch's mean
    loss, the halves weighted by their share (a loss summed unweighted would be twice it)."""
    from amer_lib.core.train import accumulate_gradients, batch_loss, draw_batch, micro_batches

    assert micro_batches(slice(0, 3), 1) == [slice(0, 1), slice(1, 2), slice(2, 3)]
    data, pool = make_problem()
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "micro_batch_size": 4}))
    batch = draw_batch(data, torch.arange(8), pool, config, 0.5, torch.Generator().manual_seed(1))
    model = make_model().eval()
    whole = batch_loss(model, data, batch, slice(0, 8), config)
    assert torch.allclose(accumulate_gradients(model, data, batch, config), whole.detach(), atol=1e-6)


def test_the_autocast_of_a_full_precision_run_is_off():
    from amer_lib.core.train import training_autocast

    model, a = make_model(), torch.randn(4, 4)
    with training_autocast(model, TrainConfig(**with_terms(TRAIN_CONFIG))):
        assert (a @ a).dtype == torch.float32
    with training_autocast(model, TrainConfig(**with_terms({**TRAIN_CONFIG, "mixed_precision": True}))):
        assert (a @ a).dtype == torch.bfloat16


def test_validation_runs_under_the_training_steps_autocast():
    """By hand: one batch of 64 (under 512) with validation's fixed draws, under the autocast a
    training step uses or none; bfloat16 rounding shows in the mixed-precision value."""
    from amer_lib.core.train import example_loss, step_generator, validation_loss

    data, pool = make_problem()
    model = make_model().eval()
    losses = {}
    for mixed in (False, True):
        config = TrainConfig(**with_terms({**TRAIN_CONFIG, "mixed_precision": mixed}))
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=mixed):
            generator = step_generator(config.seed, -1)
            by_hand = example_loss(model, data, torch.arange(len(data)), pool, config, 1.0, generator).item()
        losses[mixed] = validation_loss(model, data, pool, config)
        assert losses[mixed] == by_hand
    assert losses[True] != losses[False] and losses[True] == pytest.approx(losses[False], rel=0.05)


def test_the_schedule_and_epoch_edges():
    """Two steps with one of warm-up: full rate at both (the decay's denominator is one step);
    an epoch smaller than a batch is one batch."""
    from amer_lib.core.train import batches_per_epoch

    config = TrainConfig(n_outputs=2, steps=2, batch_size=4, optimizer=Optimizer(warmup=0.5))
    assert [config.lr_factor(0), config.lr_factor(1)] == [1.0, 1.0]
    assert [batches_per_epoch(10, 16), batches_per_epoch(40, 16)] == [1, 2]


class RecordingData(VectorData):
    """Records the examples of every `targets` call (a training step's batch)."""

    def __init__(self, data):
        super().__init__(data.inputs, data.target_vectors, data.mask)
        self.calls = []

    def targets(self, indices):
        self.calls.append(indices.clone())
        return super().targets(indices)


@pytest.mark.parametrize("grouped", [True, False])
def test_batches_grouped_by_target_count_hold_one_count(grouped):
    data, pool = make_problem()
    recording = RecordingData(data)
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 6, "batch_size": 8, "group_by_targets": grouped}))
    train(make_model(), recording, data, pool, config, progress=False)
    counts = [set(data.mask[call].sum(-1).tolist()) for call in recording.calls if len(call) == 8]
    assert len(counts) == 6
    assert all(len(c) == 1 for c in counts) == grouped  # ungrouped, some batch mixes 2 and 3 targets


class FakeBar:
    """Stands in for tqdm: keeps its settings and postfixes, iterates as the range it wraps."""

    made = []

    def __init__(self, iterable, **settings):
        self.iterable, self.settings, self.postfixes = iterable, settings, []
        FakeBar.made.append(self)

    def __iter__(self):
        return iter(self.iterable)

    def set_postfix(self, **values):
        self.postfixes.append(values)


@pytest.mark.parametrize("progress", [True, False])
def test_the_progress_bar_and_the_cost_announcement(monkeypatch, progress):
    """The bar counts the run's steps under "train n=3" (hidden without progress), shows each
    evaluation's losses and p, and after the second step the remaining steps' cost is announced
    from that one timed step (only with progress)."""
    import amer_lib.core.train as training

    announced, stepped = [], []
    monkeypatch.setattr(training, "tqdm", FakeBar)
    monkeypatch.setattr(training, "announce_cost", lambda *args: announced.append((*args, time.perf_counter())))
    FakeBar.made.clear()
    data, pool = make_problem()
    shown = {} if progress else {"progress": False}  # a bar unless told otherwise
    on_step = lambda: stepped.append(time.perf_counter())  # noqa: E731
    result = train(make_model(), data, data, pool, TrainConfig(**with_terms(TRAIN_CONFIG)), on_step=on_step, **shown)
    (bar,) = FakeBar.made
    assert bar.settings == dict(initial=0, total=12, disable=not progress, desc="train n=3", leave=False)
    assert bar.postfixes == [
        dict(loss=f"{h['train_loss']:.3f}", val=f"{h['val_loss']:.3f}", p=f"{h['p']:.2f}") for h in result.history
    ]
    if progress:
        ((what, steps, seconds, remaining, said_at),) = announced
        assert (what, steps, remaining) == ("training n=3", 1, 10)
        assert 0 < seconds <= said_at - stepped[0]  # the second step alone, timed after the first
    else:
        assert announced == []


def test_the_run_time_is_kept_across_a_resume_and_only_a_resume_says_so(tmp_path, capsys):
    """`seconds` is the run's training time (within the call's wall time); a run resumed after a
    crash before its first evaluation (no best weights saved yet) carries the time before the crash
    on, ends where an uninterrupted run ends, and only it prints where it resumed."""
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    began = time.perf_counter()
    expected = train(make_model(), data, data, pool, config, run_dir=tmp_path / "a", progress=False)
    assert 0 < expected.seconds <= time.perf_counter() - began
    assert "resuming" not in capsys.readouterr().out
    crashed_at = time.perf_counter()
    with pytest.raises(Crash):
        train(
            make_model(),
            CrashingData(data, crash_at=3),
            data,
            pool,
            config,
            run_dir=tmp_path / "b",
            progress=False,
            checkpoint_seconds=0,
        )
    saved = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)
    assert saved["step"] == 2 and not (tmp_path / "b" / "best.pt").exists()
    assert 0 < saved["seconds"] <= time.perf_counter() - crashed_at
    save_torch(tmp_path / "b" / "checkpoint.pt", {**saved, "seconds": 1000.0})  # a long first sitting
    resumed = make_model(seed=5)
    began = time.perf_counter()
    result = train(resumed, data, data, pool, config, run_dir=tmp_path / "b", progress=False, checkpoint_seconds=0)
    assert 1000.0 < result.seconds <= 1000.0 + time.perf_counter() - began
    assert f"resuming {tmp_path / 'b'} at step 2 of 12" in capsys.readouterr().out
    assert result.history == expected.history


@pytest.mark.parametrize("changes", [{"gradient_checkpointing": True}, {"single_target_step": True}])
def test_a_run_is_the_same_whatever_the_global_random_state(changes):
    """Gradient checkpointing recomputes activations without changing the step (the same weights as
    without it, to rounding), and the extra single-query step draws from the run's own generators."""
    data, pool = make_problem()
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 4, **changes}))
    weights = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        model = make_model()
        torch.manual_seed(global_seed)
        train(model, data, data, pool, config, progress=False)
        weights.append(state(model))
    assert all(torch.equal(a, b) for a, b in zip(*(w.values() for w in weights)))
    if "gradient_checkpointing" in changes:
        plain = make_model()
        train(plain, data, data, pool, TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 4})), progress=False)
        assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(state(plain).values(), weights[0].values()))


def test_the_validation_split_by_hand():
    """10% of the questions, at least one, rounded half to even as Python rounds; the rest train;
    the split is a seeded permutation, the same for a seed and another for another seed."""
    from amer_lib.core.train import split_train_validation, steps_for_epochs, validation_size

    assert [validation_size(n) for n in (100, 4, 15, 25)] == [10, 1, 2, 2]
    assert validation_size(100, 0.25) == 25
    train_part, validation = split_train_validation(20, seed=0)
    assert len(validation) == 2 and sorted(torch.cat([train_part, validation]).tolist()) == list(range(20))
    again, other = split_train_validation(20, seed=0), split_train_validation(20, seed=1)
    assert torch.equal(again[1], validation) and not torch.equal(other[0], train_part)
    assert len(split_train_validation(20, seed=0, fraction=0.5)[1]) == 10
    # 100 questions: 90 train, 5 full batches of 16 an epoch; 20 questions: 18, under one batch of 32
    assert [steps_for_epochs(2, 100, 16), steps_for_epochs(3, 20, 32)] == [10, 3]


def test_a_float16_pool_gives_float32_negatives():
    """Real corpora are float16 shards: the drawn negatives are made the targets' float32."""
    from amer_lib.core.train import draw_batch

    data, pool = make_problem()
    batch = draw_batch(
        data, torch.arange(8), pool.half(), TrainConfig(**with_terms(TRAIN_CONFIG)), 0.5, torch.Generator()
    )
    assert batch.negatives.dtype == torch.float32


@pytest.mark.parametrize("n_outputs", [1, 2])
def test_the_single_target_step_is_for_multi_vector_runs_only(n_outputs):
    """`single_target_step` adds a single-query step to a run of two or more vectors (its weights
    move) and leaves a single-query run as it is."""
    data, pool = make_problem()
    weights = {}
    for extra in (False, True):
        model = make_model()
        config = TrainConfig(
            **with_terms({**TRAIN_CONFIG, "n_outputs": n_outputs, "steps": 3, "single_target_step": extra})
        )
        train(model, data, data, pool, config, progress=False)
        weights[extra] = state(model)
    same = all(torch.equal(a, b) for a, b in zip(weights[False].values(), weights[True].values()))
    assert same == (n_outputs == 1)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"sampling": "greedy"}, "unknown sampling mode 'greedy'; valid: scheduled, teacher, predicted"),
        ({"matched_loss": "max"}, "unknown reduction 'max'; valid: mean, sum"),
        ({"first_vector": "alone"}, "unknown first_vector 'alone'; valid: matched, single"),
        ({"steps": 0}, "steps must be >= 1, got 0"),
        ({"hard_negative_share": 1.5}, "hard_negative_share must be between 0 and 1, got 1.5"),
    ],
)
def test_a_bad_setting_is_named_with_its_value_and_the_valid_choices(changes, message):
    with pytest.raises(ValueError) as raised:
        TrainConfig(**with_terms({**TRAIN_CONFIG, **changes}))
    assert str(raised.value) == message
    TrainConfig(**with_terms({**TRAIN_CONFIG, "hard_negative_share": 1.0}))  # every negative mined is allowed


def test_a_batch_that_does_not_share_among_the_ranks_is_refused(monkeypatch):
    import amer_lib.core.train as training

    monkeypatch.setattr(training.distributed, "rank_and_size", lambda: (0, 3))
    data, pool = make_problem()
    with pytest.raises(ValueError, match="^batch_size 16 must divide evenly among the 3 ranks$"):
        train(make_model(), data, data, pool, TrainConfig(**with_terms(TRAIN_CONFIG)), progress=False)


def test_of_tied_validation_losses_the_first_is_kept(monkeypatch):
    """Every evaluation scores the same: the best step is the first evaluated (a later tie does not
    replace it)."""
    import amer_lib.core.train as training

    monkeypatch.setattr(training, "validation_loss", lambda *args, **kwargs: 1.0)
    data, pool = make_problem()
    result = train(make_model(), data, data, pool, TrainConfig(**with_terms(TRAIN_CONFIG)), progress=False)
    assert [h["step"] for h in result.history] == [4, 8, 12] and result.best_step == 4


def test_weights_of_another_model_are_named_with_five_of_the_missing(tmp_path):
    """A checkpoint whose weights belong to another model: the error names the checkpoint and
    the first five missing weights (of more than five)."""
    from amer_lib.core.train import load_trainable_state

    model = make_model()
    trained = sorted(name for name, p in model.named_parameters() if p.requires_grad)
    assert len(trained) > 5
    with pytest.raises(CheckpointError) as raised:
        load_trainable_state(model, {"elsewhere.weight": torch.zeros(1)}, tmp_path / "checkpoint.pt")
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'checkpoint.pt'} does not hold this model's trained weights")
    assert f"missing {trained[:5]}, unexpected ['elsewhere.weight']" in message
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    saved = {"step": 4, "config": config.record(), "model": {"elsewhere.weight": torch.zeros(1)}}
    save_torch(tmp_path / "checkpoint.pt", saved)
    with pytest.raises(CheckpointError, match=f"^{tmp_path / 'checkpoint.pt'} does not hold"):
        train(make_model(), data, data, pool, config, run_dir=tmp_path, progress=False)


def test_a_single_query_batch_has_no_sample_mask_and_mined_draws_use_the_run_generator():
    from amer_lib.core.train import draw_batch

    data, pool = make_problem()
    single = draw_batch(
        data, torch.arange(8), pool, TrainConfig(**with_terms({**TRAIN_CONFIG, "n_outputs": 1})), 0.5, torch.Generator()
    )
    assert single.sample_mask is None
    data = HardVectorData(data.inputs, data.target_vectors, data.mask)
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "hard_negative_share": 0.5}))
    draws = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        draws.append(draw_batch(data, torch.arange(16), pool, config, 0.5, torch.Generator().manual_seed(0)).negatives)
    assert torch.equal(*draws)


class ComponentVectorData(VectorData):
    """The stand-in problem with two component vectors per example (one for those with two targets)."""

    def components(self, indices):
        vectors = torch.stack([self.inputs, self.inputs.flip(1)], dim=1)[indices]
        mask = torch.ones(len(indices), 2, dtype=torch.bool)
        mask[:, 1] = self.mask[indices].sum(-1) > 2
        return vectors, mask


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"stop_weight": 0.5, "exclude_fed_targets": True},
        {"n_outputs": 1},
        {"component_distance": "ranking"},
        {"n_outputs": 1, "component_distance": "ranking"},
    ],
)
def test_the_component_term_adds_its_weight_times_the_component_loss_of_the_shares_outputs(changes):
    """`batch_loss` with `component_weight` = the loss without it + the weight x `component_loss`
    of the share's outputs (the same forward pass; single-query's one vector goes to its nearest
    component) against its examples' components; a dataset without components is named."""
    from amer_lib.beyond.component import component_loss
    from amer_lib.core.train import batch_loss, draw_batch

    plain_data, pool = make_problem()
    data = ComponentVectorData(*plain_data._tensors())
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, **changes}))
    weighted = TrainConfig(**with_terms({**TRAIN_CONFIG, **changes, "component_weight": 0.7}))
    distance = changes.get("component_distance", "cosine")
    batch = draw_batch(data, torch.arange(8), pool, config, 0.5, torch.Generator().manual_seed(3))
    torch.manual_seed(0)
    model = AMERQueryEncoder(make_model().backbone, DIM, stop_head=True).eval()
    rows = slice(2, 6)
    prompt = data.prompt(model, batch.indices[rows])
    if config.n_outputs == 1:
        outputs, query_counts = model(prompt, 1), torch.ones(4, dtype=torch.long)
    else:
        n = batch.targets.shape[1]
        outputs = model(prompt, n, batch.targets[rows], batch.sample_mask[rows])
        query_counts = batch.mask[rows].sum(-1)
    candidates = (batch.targets, batch.negatives, batch.mask)
    term = component_loss(
        outputs,
        query_counts,
        *data.components(batch.indices[rows]),
        distance=distance,
        candidates=candidates,
    )
    assert term > 0.1
    expected = batch_loss(model, data, batch, rows, config) + 0.7 * term
    assert torch.allclose(batch_loss(model, data, batch, rows, weighted), expected, atol=1e-6)
    with pytest.raises(ValueError, match="VectorData holds no component vectors: component_weight > 0 needs"):
        batch_loss(model, plain_data, batch, rows, weighted)


def test_terms_must_be_loss_terms_each_at_most_once():
    with pytest.raises(TypeError, match="terms must be loss terms"):
        TrainConfig(**with_terms({**TRAIN_CONFIG, "terms": (0.5,)}))
    with pytest.raises(ValueError, match=r"each loss term at most once, got \['stop', 'stop'\]"):
        TrainConfig(**with_terms({**TRAIN_CONFIG, "terms": (StopTerm(1.0), StopTerm(0.5))}))
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "terms": (StopTerm(0.5),)}))
    assert config.term("stop") == StopTerm(0.5) and config.term("spread") is None
    assert config.record()["terms"] == [{"term": "stop", "weight": 0.5}]  # what a checkpoint keeps
    assert config.record()["loss"] == {
        "temperature": 0.05,
        "reduction": "mean",
        "first_vector": "matched",
        "exclude_fed_targets": False,
    }
    with pytest.raises(TypeError, match="loss must be a MatchedLoss"):
        TrainConfig(**with_terms({**TRAIN_CONFIG, "loss": "sum"}))


def test_a_new_loss_term_is_one_registered_class_that_a_config_sets_and_the_loss_adds():
    """The plug point worked once: a term of its own (the mean squared norm of the share's valid
    vectors) registered with its notebook field, built by `train_config`'s `loss_terms` from a config
    holding that field, and added by `batch_loss` as weight x its value (computed here by hand)."""
    from dataclasses import dataclass
    from types import SimpleNamespace
    from typing import ClassVar

    from amer_lib.core.loss import LOSS_TERMS, LossTerm, register_loss_term
    from amer_lib.core.train import batch_loss
    from amer_lib.runs.query_encoders import loss_terms

    @dataclass(frozen=True)
    class NormTerm(LossTerm):
        NAME: ClassVar[str] = "norm"
        FIELDS: ClassVar[dict[str, str]] = {"weight": "norm_weight"}
        ORDER: ClassVar[int] = 40

        def __call__(self, inputs):
            valid = torch.arange(inputs.outputs.shape[1])[None] < inputs.query_counts[:, None]
            return inputs.outputs.pow(2).sum(-1)[valid].mean()

    register_loss_term(NormTerm)
    try:
        assert loss_terms(SimpleNamespace(norm_weight=0.3)) == (NormTerm(0.3),)
        assert loss_terms(SimpleNamespace(norm_weight=0.0)) == ()
        plain = TrainConfig(**with_terms(TRAIN_CONFIG))
        data, batch = _drawn_batch(plain)
        model = make_model().eval()
        rows = slice(2, 6)
        n = batch.targets.shape[1]
        outputs = model(data.prompt(model, batch.indices[rows]), n, batch.targets[rows], batch.sample_mask[rows])
        counts = batch.mask[rows].sum(-1)
        norms = torch.cat([outputs[b, : counts[b]].pow(2).sum(-1) for b in range(4)]).mean()
        with_norm = TrainConfig(**with_terms({**TRAIN_CONFIG, "terms": (NormTerm(0.3),)}))
        expected = batch_loss(model, data, batch, rows, plain) + 0.3 * norms
        assert torch.allclose(batch_loss(model, data, batch, rows, with_norm), expected, atol=1e-6)
    finally:
        del LOSS_TERMS["norm"]


def test_a_checkpoint_keeps_each_groups_settings_under_their_notebook_names():
    """`record` (what a checkpoint keeps) holds the optimizer's, scheduled sampling's and the memory
    layout's settings flat, under the notebook fields that set them, and the resumed run's match
    leaves out the memory layout alone."""
    from amer_lib.core.train import MemoryLayout

    config = TrainConfig(
        n_outputs=3,
        steps=10,
        batch_size=4,
        optimizer=Optimizer(lr=0.5, weight_decay=0.2, warmup=0.3, grad_clip=4.0),
        sampling=ScheduledSampling("teacher", max_prob=0.6, rate=2.0),
        memory=MemoryLayout(micro_batch_size=2, gradient_checkpointing=True),
    )
    record = config.record()
    assert {k: record[k] for k in ("lr", "weight_decay", "warmup", "grad_clip")} == dict(
        lr=0.5, weight_decay=0.2, warmup=0.3, grad_clip=4.0
    )
    assert (record["sampling"], record["max_sampling_prob"], record["sampling_rate"]) == ("teacher", 0.6, 2.0)
    assert (record["micro_batch_size"], record["gradient_checkpointing"]) == (2, True)
    recipe = TrainConfig.trained_recipe(record)
    assert set(record) - set(recipe) == {"micro_batch_size", "gradient_checkpointing"}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_step_writes_a_checkpoint_and_the_rerun_resumes_there(tmp_path, capsys, signum):
    """Ctrl-C (SIGINT) or SIGTERM during step 6 of 12 (checkpoints every 4): the step ends, a
    checkpoint of step 6 is written, one line says so, and the rerun resumes at step 6 and ends
    where an uninterrupted run ends."""
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    expected = train(make_model(), data, data, pool, config, progress=False)
    calls = []

    def signalled():
        calls.append(1)
        if len(calls) == 6:
            os.kill(os.getpid(), signum)

    with pytest.raises(TrainingStopped):
        train(make_model(), data, data, pool, config, run_dir=tmp_path, progress=False, on_step=signalled)
    checkpoint = tmp_path / "checkpoint.pt"
    name = signal.Signals(signum).name
    assert capsys.readouterr().out.splitlines() == [
        f"stopped at step 6 of 12 ({name}); the same command resumes there ({checkpoint})"
    ]
    assert torch.load(checkpoint, weights_only=True)["step"] == 6
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handlers are given back
    resumed = train(make_model(seed=5), data, data, pool, config, run_dir=tmp_path, progress=False)
    assert capsys.readouterr().out.splitlines()[0] == f"resuming {tmp_path} at step 6 of 12"
    assert resumed.history == expected.history


def test_a_second_ctrl_c_stops_at_once_from_the_last_checkpoint(tmp_path, capsys):
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    calls = []

    def twice():
        calls.append(1)
        if len(calls) == 6:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)  # the second, before the step's end is reached

    with pytest.raises(KeyboardInterrupt) as stopped:
        train(make_model(), data, data, pool, config, run_dir=tmp_path, progress=False, on_step=twice)
    assert not isinstance(stopped.value, TrainingStopped)
    checkpoint = tmp_path / "checkpoint.pt"
    assert capsys.readouterr().out.splitlines() == [
        f"stopped at step 6 of 12; the same command resumes at step 4, its last checkpoint ({checkpoint})"
    ]


def test_a_signal_without_a_run_folder_says_nothing_is_kept(capsys):
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    stop = lambda: os.kill(os.getpid(), signal.SIGTERM)
    with pytest.raises(TrainingStopped):
        train(make_model(), data, data, pool, config, progress=False, on_step=stop)
    said = capsys.readouterr().out.splitlines()
    assert said == ["stopped at step 1 of 12 (SIGTERM); nothing is kept (no run folder)"]


KILLED_MID_WRITE = """
import sys, time
from pathlib import Path
import torch
torch.set_num_threads(1)
from stand_ins import TRAIN_CONFIG, make_model, make_problem, with_terms
from amer_lib.core.train import TrainConfig, train

run_dir, marker = Path(sys.argv[1]), Path(sys.argv[2])
real_save, checkpoints = torch.save, []

def save_then_hang(payload, path):
    if "checkpoint.pt" in str(path):
        checkpoints.append(path)
        if len(checkpoints) == 2:  # step 8's checkpoint: half written, then killed
            real_save(payload, path)
            Path(path).write_bytes(Path(path).read_bytes()[: Path(path).stat().st_size // 2])
            marker.write_text(str(path))
            time.sleep(60)
    real_save(payload, path)

torch.save = save_then_hang
data, pool = make_problem()
config = TrainConfig(**with_terms(TRAIN_CONFIG))
train(make_model(), data, data, pool, config, run_dir=run_dir, progress=False)
"""


def test_a_process_killed_while_writing_its_checkpoint_resumes_from_the_one_before(tmp_path, capsys):
    """SIGKILL with step 8's checkpoint half written: step 4's stays in place (its record intact),
    the rerun resumes there, removes the killed writer's temporary file at its next checkpoint and
    ends where an uninterrupted run ends."""

    from amer_lib.core.device import cpu_threads

    marker = tmp_path / "writing"
    killed_once_marked(KILLED_MID_WRITE, tmp_path / "b", marker)
    assert Path(marker.read_text()).exists()  # the half-written temporary file, left behind
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    with cpu_threads(1):
        uninterrupted = make_model()
        expected = train(uninterrupted, data, data, pool, config, progress=False)
        resumed = make_model(seed=5)
        result = train(resumed, data, data, pool, config, run_dir=tmp_path / "b", progress=False)
    assert f"resuming {tmp_path / 'b'} at step 4 of 12" in capsys.readouterr().out
    assert result.history == expected.history
    assert all(torch.equal(x, y) for x, y in zip(state(uninterrupted).values(), state(resumed).values()))
    assert not Path(marker.read_text()).exists()
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [
        "best.pt",
        "best.pt.sha256",
        "checkpoint.pt",
        "checkpoint.pt.sha256",
    ]
