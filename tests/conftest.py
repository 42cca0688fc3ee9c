import os

# Tests never reach the Hugging Face hub: a pretrained backbone must fail fast with our error.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture
def tiny_encoder():
    from amer_lib.core.backbones import load_backbone
    from amer_lib.core.model import AMERQueryEncoder

    torch.manual_seed(0)
    backbone = load_backbone("tiny", config_overrides=dict(hidden_size=32, intermediate_size=64))
    return AMERQueryEncoder(backbone, 12).eval()
