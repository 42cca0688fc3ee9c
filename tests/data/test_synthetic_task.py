import numpy as np
import pytest
import torch

from amer_lib.data import synthetic_task
from amer_lib.data.synthetic_task import (
    SETTINGS,
    frobenius_orthogonal_rotations,
    make_task,
    make_transforms,
    random_rotation,
    sample_inputs,
)


def is_rotation(m):
    return np.allclose(m.T @ m, np.eye(len(m)), atol=1e-8) and np.isclose(np.linalg.det(m), 1.0)


def test_random_rotation_is_a_rotation():
    assert is_rotation(random_rotation(20, np.random.default_rng(0)))


def test_linear_transforms_are_identity_and_signed_rotations():
    t = make_transforms("linear", 16, np.random.default_rng(0))
    eye, a, b, minus_a, minus_b = t.matrices
    assert np.array_equal(eye, np.eye(16)) and is_rotation(a) and is_rotation(b)
    assert np.array_equal(minus_a, -a) and np.array_equal(minus_b, -b)
    x = np.random.default_rng(1).standard_normal((4, 16))
    assert np.allclose(t(x).sum(1), x)  # the pairs cancel: only I x remains


def test_mlp_rotations_are_frobenius_orthogonal():
    rotations = frobenius_orthogonal_rotations(24, 3, np.random.default_rng(0))
    assert all(is_rotation(r) for r in rotations)
    for i in range(3):
        for j in range(i + 1, 3):
            assert abs(np.sum(rotations[i] * rotations[j])) < 1e-6


@pytest.mark.parametrize("layers", [2, 3])
def test_mlp_targets_match_a_torch_gelu_mlp(layers):
    t = make_transforms("mlp", 8, np.random.default_rng(0), mlp_layers=layers)
    x = np.random.default_rng(1).standard_normal((5, 8))
    assert np.allclose(t.matrices[3], -t.matrices[1]) and np.allclose(t.matrices[4], -t.matrices[2])
    for i, weight in enumerate(t.matrices):
        modules = []
        for layer in range(layers):
            linear = torch.nn.Linear(8, 8, bias=False, dtype=torch.float64)
            linear.weight.data = torch.from_numpy(weight)
            modules += [linear] + ([torch.nn.GELU()] if layer < layers - 1 else [])
        expected = torch.nn.Sequential(*modules)(torch.from_numpy(x)).detach().numpy()
        assert np.allclose(t(x)[:, i], expected)


def test_input_distributions_have_their_moments():
    rng = np.random.default_rng(0)
    assert np.std(sample_inputs("gaussian_4x", 4000, 10, rng)) == pytest.approx(2.0, rel=0.03)
    assert np.abs(sample_inputs("uniform", 4000, 10, rng)).max() <= 2.0
    laplace = sample_inputs("laplace_noise", 4000, 10, rng)
    assert np.var(laplace) == pytest.approx(2.1, rel=0.05)  # Laplace(0,1) variance 2 + noise 0.1


def test_task_corpus_holds_the_normalised_targets():
    task = make_task("multi", "linear", dim=8, n_train=30, n_test=10, corpus_size=400, seed=0)
    assert task.corpus.shape == (400, 8)
    assert np.allclose(np.linalg.norm(task.corpus, axis=1), 1, atol=1e-6)
    x = task.test_inputs[0]
    assert np.allclose(task.corpus[task.test_target_ids[0, 0]], x / np.linalg.norm(x), atol=1e-6)  # T_1 = I
    assert len(np.unique(np.concatenate([task.train_target_ids, task.test_target_ids]))) == 200


def test_settings_share_transforms_and_differ_in_inputs():
    single = make_task("single", "linear", dim=8, n_train=10, n_test=5, corpus_size=100, seed=0)
    ood = make_task("ood", "linear", dim=8, n_train=10, n_test=5, corpus_size=100, seed=0)
    # same transforms: the 4th target of each test input is -(2nd)
    for task in (single, ood):
        assert np.allclose(task.corpus[task.test_target_ids[:, 3]], -task.corpus[task.test_target_ids[:, 1]], atol=1e-6)
    assert not np.allclose(single.test_inputs, ood.test_inputs)
    assert SETTINGS["ood"][1] == ("laplace_noise",) and "laplace_noise" not in SETTINGS["ood"][0]


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="unknown setting 'tiny'; valid settings: single, multi, ood"):
        make_task("tiny", "linear", dim=4, n_train=2, n_test=1, corpus_size=20, seed=0)
    with pytest.raises(ValueError, match="unknown transform 'cubic'"):
        make_task("single", "cubic", dim=4, n_train=2, n_test=1, corpus_size=20, seed=0)
    with pytest.raises(ValueError, match="corpus_size 10 is smaller than the 15 targets"):
        make_task("single", "linear", dim=4, n_train=2, n_test=1, corpus_size=10, seed=0)


def test_correlated_gaussian_has_one_covariance_per_task(monkeypatch):
    rng = np.random.default_rng(0)
    covariance = synthetic_task.correlated_covariance(4, rng)
    for _ in range(2):  # two calls, one law (the bug drew a new covariance per call)
        x = sample_inputs("correlated_gaussian", 20000, 4, rng, covariance)
        assert np.allclose(np.cov(x.T).diagonal(), covariance.diagonal(), rtol=0.05)
    with pytest.raises(ValueError, match="correlated_gaussian inputs need the task's covariance"):
        sample_inputs("correlated_gaussian", 10, 4, rng)
    seen = []
    real = synthetic_task.sample_inputs

    def spy(distribution, n, d, rng, covariance=None):
        if distribution == "correlated_gaussian":
            seen.append(covariance)
        return real(distribution, n, d, rng, covariance)

    monkeypatch.setattr(synthetic_task, "sample_inputs", spy)
    for setting in ("multi", "ood"):
        make_task(setting, "linear", dim=6, n_train=50, n_test=10, corpus_size=400, seed=3)
    assert len(seen) == 3  # multi: train and test; ood: train only
    assert all(np.array_equal(c, seen[0]) for c in seen)


def test_training_negatives_hold_no_test_target():
    task = make_task("multi", "linear", dim=8, n_train=30, n_test=10, corpus_size=400, seed=0)
    negatives = set(task.training_negative_ids.tolist())
    assert negatives.isdisjoint(task.test_target_ids.ravel().tolist())
    assert len(negatives) == 400 - task.test_target_ids.size
    assert set(task.train_target_ids.ravel().tolist()) <= negatives


def test_authors_data_path_bug_trains_on_linear_targets():
    kwargs = dict(dim=8, n_train=20, n_test=5, corpus_size=200, seed=0)
    bug = make_task("single", "mlp", train_transform="linear", **kwargs)
    mlp = make_task("single", "mlp", **kwargs)
    linear = make_transforms("linear", 8, np.random.default_rng([0, 0]))
    expected = linear(bug.train_inputs.astype(np.float64))
    expected /= np.linalg.norm(expected, axis=-1, keepdims=True)
    assert np.allclose(bug.train_inputs, mlp.train_inputs)
    assert np.allclose(bug.corpus[bug.train_target_ids], expected, atol=1e-5)
    assert np.allclose(bug.corpus[bug.test_target_ids], mlp.corpus[mlp.test_target_ids])


# ----- the varying task (notebook 07) ----------------------------------------------------------
def test_varying_task_gives_each_input_its_first_m_targets():
    from amer_lib.data.synthetic_task import MAX_TARGETS, VARYING_STREAM, make_varying_task, target_counts

    task = make_varying_task(dim=16, n_train=300, n_test=100, corpus_size=5000, seed=3)
    ids = np.concatenate([task.train_target_ids, task.test_target_ids])
    counts = (ids >= 0).sum(1)
    assert ids.shape == (400, MAX_TARGETS)
    assert ((ids >= 0) == (np.arange(MAX_TARGETS)[None] < counts[:, None])).all()  # valid targets first
    assert set(counts.tolist()) == set(range(1, MAX_TARGETS + 1))
    # an independent draw of the same stream: counts are 1 + argmax of the counter, targets the maps
    rng = np.random.default_rng([3, VARYING_STREAM])
    maps = synthetic_task.varying_transforms(16, rng)
    counter = rng.standard_normal((MAX_TARGETS, 16))
    x = np.concatenate([task.train_inputs, task.test_inputs]).astype(np.float64)
    assert (target_counts(x, counter) == counts).all()
    expected = maps(x)
    expected /= np.linalg.norm(expected, axis=-1, keepdims=True)
    for i in (0, 150, 399):
        for j in range(counts[i]):
            assert np.allclose(task.corpus[ids[i, j]], expected[i, j], atol=1e-5)
    assert not np.isin(task.test_target_ids[task.test_target_ids >= 0], task.training_negative_ids).any()


def test_varying_task_corpus_must_hold_its_targets():
    from amer_lib.data.synthetic_task import make_varying_task

    with pytest.raises(ValueError, match="smaller than the"):
        make_varying_task(dim=8, n_train=100, n_test=10, corpus_size=50, seed=0)
