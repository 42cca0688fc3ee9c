"""The synthetic multi-target task of the paper (Section 5.1 and Appendix A.2).

Each input vector x in R^d has m = 5 targets y_i = T_i(x). Linear: T = [I, A, B, -A, -B] with
random rotations A, B. MLP: five GELU MLPs whose weights are all one rotation each,
M_a, M_b, M_c pairwise orthogonal in the Frobenius inner product, M_d = -M_b, M_e = -M_c.
The corpus holds every train and test target plus N(0, I) negatives.

A task draws its random structure once from its seed: the transforms (shared by the three
settings of one transform) and the correlated Gaussian's covariance (shared by every setting, so
train and test inputs of that distribution come from one law).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INPUT_DISTRIBUTIONS = ("gaussian", "gaussian_4x", "correlated_gaussian", "uniform", "laplace_noise")
SETTINGS = {
    # setting: (train distributions, test distributions)
    "single": (("gaussian",), ("gaussian",)),
    "multi": (INPUT_DISTRIBUTIONS, INPUT_DISTRIBUTIONS),
    "ood": (INPUT_DISTRIBUTIONS[:4], ("laplace_noise",)),
}
TRANSFORMS = ("linear", "mlp")
N_TARGETS = 5
# bumped whenever the task a seed builds changes, so that runs cached for an older task are not reused
# (2: one covariance per task, test targets out of the training negatives)
TASK_VERSION = 2
COVARIANCE_STREAM = 99  # the seed sequence [seed, 99] draws the correlated Gaussian's covariance


def random_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    """Haar-random rotation: QR of a Gaussian matrix with the signs of R's diagonal fixed, det +1."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def nearest_rotation(matrix: np.ndarray) -> np.ndarray:
    """Projection onto SO(d) in Frobenius norm (polar factor with the determinant fixed)."""
    u, _, vt = np.linalg.svd(matrix)
    if np.linalg.det(u @ vt) < 0:
        u[:, -1] = -u[:, -1]
    return u @ vt


def frobenius_orthogonal_rotations(
    d: int, count: int, rng: np.random.Generator, tol: float = 1e-10, max_iter: int = 10_000
) -> list[np.ndarray]:
    """`count` rotations, pairwise orthogonal in the Frobenius inner product <P, Q> = tr(P^T Q).

    Each new rotation alternates Gram-Schmidt against the earlier ones (in Frobenius space) with
    the projection back onto the rotation group, until the inner products fall below `tol * d`.
    """
    rotations: list[np.ndarray] = []
    for _ in range(count):
        m = random_rotation(d, rng)
        for _ in range(max_iter):
            for p in rotations:
                m = m - np.sum(p * m) / d * p
            m = nearest_rotation(m)
            if all(abs(np.sum(p * m)) < tol * d for p in rotations):
                break
        else:
            raise RuntimeError(f"Frobenius-orthogonal rotations did not converge at d={d}")
        rotations.append(m)
    return rotations


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, as torch.nn.GELU()."""
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


@dataclass
class TargetTransforms:
    """The five fixed maps x -> y_i; `matrices[i]` is T_i (linear) or the MLP's shared weight."""

    kind: str
    matrices: list[np.ndarray]
    mlp_layers: int = 2

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """`[N, d]` -> targets `[N, 5, d]`."""
        return np.stack([self._apply(m, x) for m in self.matrices], axis=1)

    def _apply(self, weight: np.ndarray, x: np.ndarray) -> np.ndarray:
        if self.kind == "linear":
            return x @ weight.T
        h = x
        for layer in range(self.mlp_layers):
            h = h @ weight.T
            if layer < self.mlp_layers - 1:
                h = gelu(h)
        return h


def make_transforms(kind: str, d: int, rng: np.random.Generator, mlp_layers: int = 2) -> TargetTransforms:
    if kind == "linear":
        a, b = random_rotation(d, rng), random_rotation(d, rng)
        return TargetTransforms("linear", [np.eye(d), a, b, -a, -b])
    if kind == "mlp":
        if mlp_layers < 1:
            raise ValueError(f"mlp_layers must be >= 1, got {mlp_layers}")
        a, b, c = frobenius_orthogonal_rotations(d, 3, rng)
        return TargetTransforms("mlp", [a, b, c, -b, -c], mlp_layers)
    raise ValueError(f"unknown transform {kind!r}; valid transforms: {', '.join(TRANSFORMS)}")


def correlated_covariance(d: int, rng: np.random.Generator) -> np.ndarray:
    """The correlated Gaussian's covariance 0.5 A A^T + 0.1 I with A ~ N(0, 1)^{d x d}."""
    a = rng.standard_normal((d, d))
    return 0.5 * a @ a.T + 0.1 * np.eye(d)


def sample_inputs(
    distribution: str, n: int, d: int, rng: np.random.Generator, covariance: np.ndarray | None = None
) -> np.ndarray:
    """`n` inputs of one distribution; `correlated_gaussian` needs the task's `covariance`."""
    if distribution == "gaussian":
        return rng.standard_normal((n, d))
    if distribution == "gaussian_4x":
        return 2.0 * rng.standard_normal((n, d))
    if distribution == "correlated_gaussian":
        if covariance is None or covariance.shape != (d, d):
            raise ValueError(
                "correlated_gaussian inputs need the task's covariance, a (d, d) matrix drawn once per "
                "task (correlated_covariance); got "
                f"{None if covariance is None else covariance.shape}"
            )
        return rng.multivariate_normal(np.zeros(d), covariance, size=n, method="cholesky")
    if distribution == "uniform":
        return rng.uniform(-2.0, 2.0, (n, d))
    if distribution == "laplace_noise":
        return rng.laplace(0.0, 1.0, (n, d)) + rng.normal(0.0, np.sqrt(0.1), (n, d))
    raise ValueError(f"unknown input distribution {distribution!r}; valid: {', '.join(INPUT_DISTRIBUTIONS)}")


def sample_mixture(
    distributions: tuple[str, ...], n: int, d: int, rng: np.random.Generator, covariance: np.ndarray | None = None
) -> np.ndarray:
    """`n` inputs split evenly over `distributions`, shuffled."""
    sizes = np.diff(np.linspace(0, n, len(distributions) + 1).round().astype(int))
    x = np.concatenate([sample_inputs(name, size, d, rng, covariance) for name, size in zip(distributions, sizes)])
    return x[rng.permutation(n)]


@dataclass
class SyntheticTask:
    """One setting: inputs, targets as corpus ids, and the corpus (unit-norm, float32)."""

    setting: str
    transform: str
    train_inputs: np.ndarray  # [N_train, d]
    test_inputs: np.ndarray  # [N_test, d]
    train_target_ids: np.ndarray  # [N_train, 5] rows of `corpus` (the varying task: [N, 8], -1-padded)
    test_target_ids: np.ndarray  # [N_test, 5]
    corpus: np.ndarray  # [N_corpus, d], unit-norm

    @property
    def dim(self) -> int:
        return self.corpus.shape[1]

    @property
    def training_negative_ids(self) -> np.ndarray:
        """Corpus rows that training may draw as negatives: everything but the test targets, so
        that no test target is ever seen in training (as the paper's held-out test set implies)."""
        return np.setdiff1d(np.arange(len(self.corpus)), self.test_target_ids[self.test_target_ids >= 0])


def make_task(
    setting: str,
    transform: str,
    *,
    dim: int,
    n_train: int,
    n_test: int,
    corpus_size: int,
    seed: int,
    mlp_layers: int = 2,
    train_transform: str | None = None,
) -> SyntheticTask:
    """Build one of the six settings. The transforms depend on (transform, dim, seed) only, so
    Single / Multi / OOD share them, as in the paper.

    `train_transform` (default: `transform`) builds the training targets with another transform:
    `train_transform="linear"` with `transform="mlp"` reproduces the data-path bug of the
    authors' code, where every training set was built from the linear data."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; valid settings: {', '.join(SETTINGS)}")
    if transform not in TRANSFORMS:
        raise ValueError(f"unknown transform {transform!r}; valid transforms: {', '.join(TRANSFORMS)}")
    n_targets = (n_train + n_test) * N_TARGETS
    if corpus_size < n_targets:
        raise ValueError(f"corpus_size {corpus_size} is smaller than the {n_targets} targets it must hold")
    train_transform = train_transform or transform
    if train_transform not in TRANSFORMS:
        raise ValueError(f"unknown train_transform {train_transform!r}; valid transforms: {', '.join(TRANSFORMS)}")
    transforms = {
        name: make_transforms(name, dim, np.random.default_rng([seed, TRANSFORMS.index(name)]), mlp_layers)
        for name in {transform, train_transform}
    }
    covariance = correlated_covariance(dim, np.random.default_rng([seed, COVARIANCE_STREAM]))
    rng = np.random.default_rng([seed, TRANSFORMS.index(transform), list(SETTINGS).index(setting) + 1])
    train_dists, test_dists = SETTINGS[setting]
    train_x = sample_mixture(train_dists, n_train, dim, rng, covariance)
    test_x = sample_mixture(test_dists, n_test, dim, rng, covariance)
    targets = np.concatenate([transforms[train_transform](train_x), transforms[transform](test_x)]).reshape(-1, dim)
    negatives = rng.standard_normal((corpus_size - n_targets, dim))
    corpus = np.concatenate([targets, negatives])
    corpus = (corpus / np.linalg.norm(corpus, axis=1, keepdims=True)).astype(np.float32)
    ids = np.arange(n_targets).reshape(-1, N_TARGETS)
    return SyntheticTask(
        setting, transform, train_x.astype(np.float32), test_x.astype(np.float32), ids[:n_train], ids[n_train:], corpus
    )


TASK_KEYS = ("dim", "n_train", "n_test", "corpus_size", "mlp_layers", "seed")


def task_from_params(params, transform: str, setting: str) -> SyntheticTask:
    """The task of one setting as notebook 02's config (`SyntheticConfig`) describes it; its
    `train_transform` (set by the MLP sweep, not a notebook parameter) builds the training
    targets with another transform."""
    return make_task(
        setting, transform, train_transform=params.train_transform, **{k: getattr(params, k) for k in TASK_KEYS}
    )


# ----- beyond the paper (notebook 07): a number of targets that varies with the input ----------
MAX_TARGETS = 8
VARYING_STREAM = 7  # the seed sequence [seed, 7] draws the varying task's transforms and counter


def varying_transforms(d: int, rng: np.random.Generator) -> TargetTransforms:
    """Eight linear maps [I, A, -A, B, -B, C, -C, D] (A..D random rotations): the first m of
    them are an input's targets, so for m >= 3 the targets' mean is far from most of them."""
    a, b, c, e = (random_rotation(d, rng) for _ in range(4))
    return TargetTransforms("linear", [np.eye(d), a, -a, b, -b, c, -c, e])


def target_counts(x: np.ndarray, counter: np.ndarray) -> np.ndarray:
    """Each input's number of targets, 1 + argmax(counter @ x): a linear function of the input
    the model can learn, about uniform over 1..8 for Gaussian inputs."""
    return 1 + np.argmax(x @ counter.T, axis=1)


def make_varying_task(*, dim: int, n_train: int, n_test: int, corpus_size: int, seed: int) -> SyntheticTask:
    """Gaussian inputs with 1 to 8 targets each (`target_counts`), the first m of
    `varying_transforms`; target ids `[N, 8]` padded with -1. The corpus holds every target and
    N(0, I) negatives, as in the paper's task."""
    rng = np.random.default_rng([seed, VARYING_STREAM])
    transforms = varying_transforms(dim, rng)
    counter = rng.standard_normal((MAX_TARGETS, dim))
    x = rng.standard_normal((n_train + n_test, dim))
    counts = target_counts(x, counter)
    if corpus_size < counts.sum():
        raise ValueError(f"corpus_size {corpus_size} is smaller than the {counts.sum()} targets it must hold")
    every = transforms(x)  # [N, 8, d]
    keep = np.arange(MAX_TARGETS)[None] < counts[:, None]
    ids = np.full(keep.shape, -1, dtype=np.int64)
    ids[keep] = np.arange(keep.sum())
    negatives = rng.standard_normal((corpus_size - keep.sum(), dim))
    corpus = np.concatenate([every[keep], negatives])
    corpus = (corpus / np.linalg.norm(corpus, axis=1, keepdims=True)).astype(np.float32)
    x = x.astype(np.float32)
    return SyntheticTask("varying", "linear", x[:n_train], x[n_train:], ids[:n_train], ids[n_train:], corpus)
