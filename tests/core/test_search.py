import faiss
import numpy as np
import pytest
import torch

from amer_lib.core import distributed
from amer_lib.core.index import VectorIndex, kept_lists, kept_search, multi_vector_search, unit_norm


def test_index_search_equals_brute_force():
    rng = np.random.default_rng(1)
    corpus = unit_norm(rng.standard_normal((500, 16)))
    queries = rng.standard_normal((7, 3, 16))
    scores, ids = VectorIndex(corpus, use_gpu=False).search(queries, 5)
    brute = unit_norm(queries) @ corpus.T
    assert ids.shape == (7, 3, 5)
    assert np.array_equal(ids, np.argsort(-brute, axis=-1)[..., :5])
    assert np.allclose(scores, np.sort(brute, axis=-1)[..., ::-1][..., :5], atol=1e-5)


def test_multi_vector_search_merges_each_vectors_list():
    corpus = np.eye(6, dtype=np.float32)
    queries = np.stack([corpus[[0, 3]] + 0.1 * corpus[[1, 4]]])  # two vectors near docs 0 and 3
    assert multi_vector_search(VectorIndex(corpus), queries, 4, depth=2).tolist() == [[0, 3, 1, 4]]


def test_an_adaptive_n_searches_only_the_kept_vectors():
    rng = np.random.default_rng(2)
    corpus = unit_norm(rng.standard_normal((300, 8)))
    queries = rng.standard_normal((5, 4, 8))
    counts = np.array([1, 4, 2, 3, 1])
    scores, ids = kept_search(VectorIndex(corpus), queries, counts, 6)
    full_scores, full_ids = VectorIndex(corpus).search(queries, 6)
    for row, count in enumerate(counts):  # searching fewer vectors is the full search with the rest emptied
        assert np.array_equal(ids[row, :count], full_ids[row, :count])
        assert np.allclose(scores[row, :count], full_scores[row, :count])
        assert (ids[row, count:] == -1).all()
    merged = multi_vector_search(VectorIndex(corpus), queries, 10, depth=6, counts=counts)
    for row, count in enumerate(counts):
        assert (
            merged[row].tolist()
            == multi_vector_search(VectorIndex(corpus), queries[row : row + 1, :count], 10, 6)[0].tolist()
        )
    with pytest.raises(ValueError, match="integers in 1..4"):
        kept_search(VectorIndex(corpus), queries, np.array([0, 1, 1, 1, 1]), 6)


def test_wrong_query_dimension_is_named():
    index = VectorIndex(unit_norm(np.ones((3, 8))))
    with pytest.raises(ValueError, match="dimension 5, but the index holds dimension 8"):
        index.search(np.ones((2, 5)), 1)


def test_index_rejects_vectors_that_are_not_unit_norm():
    with pytest.raises(ValueError, match="unit-norm"):
        VectorIndex(np.full((3, 4), 2.0))


def test_kept_lists_empties_the_vectors_past_each_count():
    ids = np.arange(12).reshape(2, 3, 2)
    kept = kept_lists(ids, np.array([1, 3]))
    assert kept.tolist() == [[[0, 1], [-1, -1], [-1, -1]], [[6, 7], [8, 9], [10, 11]]]


class FakeGpuResources:
    """Stands in for `faiss.StandardGpuResources` (this FAISS is the CPU build)."""


def fake_gpus(monkeypatch, gpus: int, rank: int, size: int) -> list[tuple]:
    """A machine of `gpus` GPUs (torch's and FAISS's view, faked) seen by rank `rank` of `size`
    processes, whose GPU is torch's current device as `distributed.setup` makes it (its LOCAL_RANK,
    here its rank). The returned list records every copy of an index to the GPUs; the copies stay
    CPU indexes, so they still search."""
    copies = []
    current = {"device": 0}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: current.update(device=device))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current["device"])
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: gpus)
    monkeypatch.setattr(faiss, "StandardGpuResources", FakeGpuResources, raising=False)
    to_gpu = lambda resources, device, index: copies.append(("one", device, resources)) or index  # noqa: E731
    monkeypatch.setattr(faiss, "index_cpu_to_gpu", to_gpu, raising=False)
    to_all = lambda index, **options: copies.append(("all",)) or index  # noqa: E731
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", to_all, raising=False)
    monkeypatch.setattr(distributed, "rank_and_size", lambda: (rank, size))
    if size > 1:
        torch.cuda.set_device(rank)  # what `distributed.setup` does with LOCAL_RANK
    return copies


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_a_rank_builds_its_index_once_on_its_own_gpu(monkeypatch, rank):
    """Four ranks on four GPUs: rank r copies its index to GPU r alone (not to every GPU it sees,
    which made 16 copies), with FAISS resources of its own kept beside the index."""
    corpus = np.eye(6, dtype=np.float32)
    copies = fake_gpus(monkeypatch, 4, rank, 4)
    index = VectorIndex(corpus)
    assert copies == [("one", rank, index.gpu_resources)] and isinstance(index.gpu_resources, FakeGpuResources)
    assert index.search(corpus[[4]], 1)[1].tolist() == [[4]]


def test_one_process_copies_its_index_to_every_gpu(monkeypatch):
    copies = fake_gpus(monkeypatch, 4, 0, 1)
    index = VectorIndex(np.eye(3, dtype=np.float32))
    assert copies == [("all",)] and index.gpu_resources is None
    assert fake_gpus(monkeypatch, 4, 1, 2) == [] and VectorIndex(np.eye(3), use_gpu=False).gpu_resources is None


def test_a_rank_whose_gpu_faiss_does_not_see_is_told(monkeypatch):
    fake_gpus(monkeypatch, 2, 3, 4)
    with pytest.raises(RuntimeError, match="rank 3's GPU is 3, but FAISS sees 2 GPU"):
        VectorIndex(np.eye(3, dtype=np.float32))
