import numpy as np
import pytest
import torch

from amer_lib.core.backbones import load_backbone
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.stopping import similarity_counts, stop_counts
from amer_lib.core.train import fit_stop_head


def test_stop_counts_by_hand():
    probability = torch.tensor([[0.1, 0.7, 0.9], [0.2, 0.3, 0.4], [0.8, 0.1, 0.9], [0.5, 0.5, 0.6]])
    # first position over 0.5 (inclusive count); none over it: all three; 0.5 itself is not over
    assert stop_counts(probability, 0.5).tolist() == [2, 3, 1, 3]
    assert stop_counts(probability, 0.05).tolist() == [1, 1, 1, 1]


def test_similarity_counts_by_hand():
    a, b, c = np.eye(3)
    near_a = a + 0.1 * b  # cosine 0.995 to a
    vectors = np.array([[a, b, near_a], [a, 2 * a, b], [a, b, c], [a, near_a, near_a]])
    # stop before the first vector too close to an earlier one: 2, 1, all 3, 1
    assert similarity_counts(vectors, 0.99).tolist() == [2, 1, 3, 1]
    # at 0.999 only exact repeats count: the third vector of row 4 repeats the second
    assert similarity_counts(vectors, 0.999).tolist() == [3, 1, 3, 2]


def test_similarity_counts_against_a_loop():
    vectors = np.random.default_rng(0).normal(size=(200, 6, 4))
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    expected = []
    for row in unit:
        count = len(row)
        for i in range(1, len(row)):
            if max(float(row[i] @ row[j]) for j in range(i)) > 0.8:
                count = i
                break
        expected.append(count)
    got = similarity_counts(vectors, 0.8)
    assert got.tolist() == expected
    assert 1 < len(set(expected))  # the threshold cuts rows at different places


def test_a_fitted_stop_head_reads_the_counts_and_leaves_the_encoder_as_it_was():
    # hidden states whose first feature is high at an input's last target: a linear head can read it
    generator = torch.Generator().manual_seed(0)
    counts = torch.randint(1, 6, (300,), generator=generator)
    hidden = torch.randn(300, 5, 8, generator=generator) * 0.1
    hidden[torch.arange(300), counts - 1, 0] += 1.0
    encoder = AMERQueryEncoder(load_backbone("tiny", config_overrides=dict(hidden_size=8, intermediate_size=16)), 4)
    before = {name: weight.clone() for name, weight in encoder.state_dict().items()}
    losses = fit_stop_head(encoder, hidden, counts, steps=300, lr=0.05)
    assert losses[-1] < 0.2 * losses[0]
    assert stop_counts(encoder.stop_probability(hidden), 0.5).tolist() == counts.tolist()
    for name, weight in before.items():
        assert torch.equal(weight, encoder.state_dict()[name]), name
    again = AMERQueryEncoder(load_backbone("tiny", config_overrides=dict(hidden_size=8, intermediate_size=16)), 4)
    assert fit_stop_head(again, hidden, counts, steps=300, lr=0.05) == losses  # the seed fixes the fit


def test_the_default_stop_head_fit_is_full_batch_adamw_at_its_documented_rate():
    """With its defaults (what notebook 07 uses): 500 full-batch AdamW steps on the stop loss at
    lr 1e-2 and weight decay 1e-2 from a head seeded by 0, the same losses as that loop by hand."""
    from amer_lib.core.loss import stop_loss

    generator = torch.Generator().manual_seed(1)
    counts = torch.randint(1, 4, (40,), generator=generator)
    hidden = torch.randn(40, 3, 8, generator=generator)
    encoder = AMERQueryEncoder(load_backbone("tiny", config_overrides=dict(hidden_size=8, intermediate_size=16)), 4)
    losses = fit_stop_head(encoder, hidden, counts)
    torch.manual_seed(0)
    head = torch.nn.Linear(8, 1)
    optimizer = torch.optim.AdamW(head.parameters(), lr=1e-2, weight_decay=1e-2)
    expected = []
    for _ in range(500):
        loss = stop_loss(head(hidden).squeeze(-1), counts)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        expected.append(loss.item())
    assert losses == pytest.approx(expected, rel=1e-5)
