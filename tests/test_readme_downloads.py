"""The README's downloads for the paper at scale, run as typed in an empty repository root with `curl`
and `hf` stood in by scripts: `curl` copies a stand-in archive in its published layout (named by the
address's last part) and `hf` notes what it was asked for. The files land where the paper files and
the encode commands read them, and every model the paper files name is fetched.

`curl` is called as the README calls it (bash expands its braces into the four addresses).
The archives' inner layouts are what is known of them: AmbigQA's files at the top of its zips or in
a folder (both are tried), QAMPARI's in a folder beside a `__MACOSX` copy, the chunked Wikipedia in
`wikipedia_chunks/chunks_v5/wikipedia_chunks_<n>.jsonl` (as third parties report its listing; this
repository has not downloaded it)."""

import os
import re
import shlex
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from rehearsal import paper_raw_data

from amer_lib.core.backbones import get_backbone
from amer_lib.data.corpus import iter_documents
from amer_lib.data.encoders import get_encoder_spec

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
RECIPE = README[README.index("## The paper at scale, step by step") :]
[DOWNLOADS] = [b for b in re.findall(r"```bash\n(.*?)```", RECIPE, re.S) if "curl " in b]
COMMANDS = re.search(r"```shell\n(.*?)```", RECIPE, re.S).group(1).splitlines()
ENCODE = [line for line in COMMANDS if "--corpus" in line]

FAKE_CURL = """#!/usr/bin/env python3
import os, shutil, sys
args = sys.argv[1:]
assert {"-fL", "--create-dirs", "--remote-name-all"} <= set(args), args  # fail on errors, names from the addresses
folder = args[args.index("--output-dir") + 1]
os.makedirs(folder, exist_ok=True)
for url in [a for a in args if a.startswith("https://")]:
    with open(sys.argv[0] + ".log", "a") as log:
        log.write(url + "\\n")
    name = url.rsplit("/", 1)[1]
    shutil.copy(f"{STANDINS}/{name}", os.path.join(folder, name))
"""
FAKE_HF = """#!/usr/bin/env python3
import sys
with open(sys.argv[0] + ".log", "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
"""


def stand_ins(folder: Path, raw: Path, chunks: Path, nested: bool) -> None:
    """The four archives, holding the rehearsal's stand-in files in the published layouts."""
    folder.mkdir()
    inner = "ambignq_light/" if nested else ""
    with zipfile.ZipFile(folder / "ambignq_light.zip", "w") as z:
        for name in ("train_light.json", "dev_light.json"):
            z.write(raw / name, inner + name)
    with zipfile.ZipFile(folder / "nqopen.zip", "w") as z:
        for name in ("nqopen-dev.json", "nqopen-test.json"):
            z.write(raw / name, ("nqopen/" if nested else "") + name)
        z.writestr(("nqopen/" if nested else "") + "nqopen-train.json", "[]")
    with zipfile.ZipFile(folder / "qampari.zip", "w") as z:
        for name in ("train_data.jsonl", "dev_data.jsonl"):
            z.write(raw / name, f"qampari/{name}")
            z.writestr(f"__MACOSX/qampari/._{name}", b"\x00\x05\x16\x07 resource fork")
        z.writestr("qampari/test_data.jsonl", "")
    lines = chunks.read_text().splitlines(keepends=True)
    half = len(lines) // 2
    with tarfile.open(folder / "chunked_wikipedia.tar.gz", "w:gz") as tar:
        for n, part in enumerate((lines[:half], lines[half:])):
            path = folder / f"wikipedia_chunks_{n}.jsonl"
            path.write_text("".join(part))
            tar.add(path, f"wikipedia_chunks/chunks_v5/wikipedia_chunks_{n}.jsonl")
        macos = folder / "._wikipedia_chunks_0.jsonl"
        macos.write_bytes(b"\x00\x05\x16\x07")
        tar.add(macos, "wikipedia_chunks/chunks_v5/._wikipedia_chunks_0.jsonl")


@pytest.mark.parametrize("nested", [False, True], ids=["files at the top", "files in a folder"])
def test_the_downloads_write_what_the_paper_files_read(tmp_path, nested):
    raw, chunks = tmp_path / "published", tmp_path / "chunks.jsonl"
    paper_raw_data(raw, chunks, n_ambigqa=6, n_qampari=4, extra_docs=50)
    stand_ins(tmp_path / "standins", raw, chunks, nested)
    bin_dir, root = tmp_path / "bin", tmp_path / "repo"
    bin_dir.mkdir()
    root.mkdir()
    for name, script in (("curl", FAKE_CURL.replace("{STANDINS}", str(tmp_path / "standins"))), ("hf", FAKE_HF)):
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", DOWNLOADS], cwd=root, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr

    # the six question files, byte for byte, where paper.yaml's raw_dir points
    prep = yaml.safe_load((ROOT / "params" / "03_real_data_prep" / "paper.yaml").read_text())
    raw_dir = (root / "notebooks" / prep["raw_dir"]).resolve()
    for name in ("train_light.json", "dev_light.json", "nqopen-dev.json", "nqopen-test.json"):
        assert (raw_dir / name).read_bytes() == (raw / name).read_bytes(), name
    for name in ("train_data.jsonl", "dev_data.jsonl"):
        assert (raw_dir / name).read_bytes() == (raw / name).read_bytes(), name

    # one corpus file: the one notebook 03's paper file and both encode commands read, every chunk in it
    corpus = (root / "notebooks" / prep["corpus_path"]).resolve()
    for line in ENCODE:
        args = shlex.split(line)
        assert (root / args[args.index("--corpus") + 1]).resolve() == corpus
    assert sorted(corpus.read_text().splitlines()) == sorted(chunks.read_text().splitlines())
    assert [d.id for d in iter_documents(corpus)] == [d.id for d in iter_documents(chunks)]

    # the addresses, and every model the paper files need, from the registries
    addresses = (bin_dir / "curl.log").read_text().split()
    assert addresses == [
        "https://nlp.cs.washington.edu/ambigqa/data/ambignq_light.zip",
        "https://nlp.cs.washington.edu/ambigqa/data/nqopen.zip",
        "https://aggreg-qa.s3.amazonaws.com/qampari.zip",
        "https://aggreg-qa.s3.amazonaws.com/chunked_wikipedia.tar.gz",
    ]
    fetched = [line.split() for line in (bin_dir / "hf.log").read_text().splitlines()]
    assert all(f[0] == "download" for f in fetched)
    assert {f[1] for f in fetched} == paper_models()
    assert all(f[2:] == ["--exclude", "original/*"] for f in fetched)  # Llama's second copy in Meta's format


def paper_models() -> set[str]:
    """The Hugging Face ids of every backbone and encoder that the README's commands name, in their
    parameter files (`-f`) or their options (`--encoder`)."""
    words = [shlex.split(line) for line in COMMANDS if line and not line.startswith("#")]
    files = [ROOT / w[i + 1] for w in words for i, a in enumerate(w) if a == "-f"]
    names = [yaml.safe_load(f.read_text()) for f in files]
    backbones = {n["backbone"] for n in names if "backbone" in n}
    encoders = {e for n in names for e in [n.get("encoder"), *n.get("mapping_encoders", []), *n.get("retrievers", [])]}
    encoders |= {w[w.index("--encoder") + 1] for w in words if "--encoder" in w}
    encoders -= {None, "bm25"}
    return {get_backbone(b).model_id for b in backbones} | {get_encoder_spec(e).model_id for e in encoders}


def test_the_readme_commands_need_eight_models():
    assert sorted(paper_models()) == [
        "NovaSearch/stella_en_400M_v5",
        "Qwen/Qwen3-4B-Instruct-2507",
        "facebook/contriever-msmarco",
        "infly/inf-retriever-v1-1.5b",
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct",
        "meta-llama/Llama-3.2-3B-Instruct",
        "nvidia/NV-Embed-v2",
    ]
