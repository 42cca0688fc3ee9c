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


def notebook_config(notebook: str, **changes):
    """A notebook's config at its committed defaults, with `changes`."""
    from pathlib import Path

    from amer_lib.params import from_files

    root = Path(__file__).resolve().parents[1]
    return from_files(root / "notebooks" / f"{notebook}.ipynb").replace(**changes)


def documentation() -> str:
    """The README and the pages under docs/ it links to, as one text: what the tests that check
    quoted numbers and shown commands read."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return "\n\n".join(page.read_text() for page in pages)
