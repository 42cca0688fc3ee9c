"""A run's exact index: on a GPU the shards that fit beside the training's projected peak are kept
on it, the rest streamed; on the CPU, or where FAISS is its CPU build, all of them streamed."""

from types import SimpleNamespace

import torch

from amer_lib.experiments import real_data

GIB = 2**30


def test_a_gpu_run_keeps_the_shards_that_fit_beside_its_projected_peak(monkeypatch):
    kept_on = lambda shards, device, resident_bytes: (torch.device(device).type, resident_bytes)  # noqa: E731
    monkeypatch.setattr(real_data, "ResidentFlatIndex", kept_on)
    monkeypatch.setattr(real_data, "faiss_sees_gpus", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: SimpleNamespace(total_memory=80 * GIB))
    context, cuda = SimpleNamespace(shards=None), torch.device("cuda", 0)
    for peak, kept in [(48 * GIB, 32 * GIB), (80 * GIB, 0), (90 * GIB, 0)]:
        assert real_data.run_index(context, cuda, gpu_peak=peak) == ("cuda", kept)
    assert real_data.run_index(context, torch.device("cpu"), gpu_peak=48 * GIB) == ("cpu", 0)
    assert real_data.run_index(context, cuda) == ("cpu", 0)  # no peak projected: nothing kept on the GPU
    monkeypatch.setattr(real_data, "faiss_sees_gpus", lambda: False)  # faiss-cpu on a GPU machine
    assert real_data.run_index(context, cuda, gpu_peak=48 * GIB) == ("cpu", 0)
