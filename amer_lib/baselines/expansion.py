"""Query expansion for the single-query baseline (paper appendix): question + keywords.

The paper asks GPT-4.1-mini for diverse keywords with `KEYWORD_PROMPT`. Keyword generators are
pluggable: an OpenAI-compatible chat endpoint (`ChatEndpointGenerator.from_env`, for the OpenAI
API or a local vLLM server) or a local Hugging Face causal LM (`HFGenerator`). Their answers are
cached on disk by (model, prompt), one line per answer written as soon as it arrives, so a rerun
or a run resumed after a failure asks nothing twice.

Offline, with no LLM, `PseudoRelevanceFeedback` supplies RM3-style keywords (the most weighted
terms of the top BM25 documents). It is a different method and is labelled as such (`label`);
tables and figures must never present it as LLM query expansion.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Protocol

import numpy as np

from amer_lib.progress import tqdm

KEYWORD_PROMPT = (
    "Write a list of keywords for the given question. The goal is to help retrieving relevant documents to "
    "the question, which contains multiple answers, so generate keywords as diverse as possible. Do not "
    "generate similar keywords; they should be distinct. Just answer with the list, and do not generate "
    "anything else. Keywords are separated by commas.\n\nQuestion:\n{question}"
)
DEFAULT_ENDPOINT = "https://api.openai.com/v1"
DEFAULT_CHAT_MODEL = "gpt-4.1-mini"


class ExpansionError(RuntimeError):
    """A keyword generator failed or answered something that is not a keyword list."""


class KeywordGenerator(Protocol):
    name: str  # part of the cache key
    label: str  # how tables name the expansion

    def generate(self, prompt: str) -> str: ...


def parse_keywords(text: str, source: str) -> list[str]:
    """Comma- or line-separated keywords, bullets and numbering stripped."""
    items = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", part).strip().strip('"') for part in re.split(r"[,\n]", text)]
    keywords = [item for item in items if item]
    if not keywords:
        raise ExpansionError(f"{source} returned no keywords: {text!r}")
    return keywords


def expanded_query(question: str, keywords: list[str]) -> str:
    """The rewritten query: the question followed by its keywords."""
    return f"{question} {', '.join(keywords)}"


class GenerationCache:
    """Generated texts keyed by sha256(model, prompt) in an append-only jsonl file.

    Each answer is appended and fsynced on arrival; a line cut short by a crash is ignored on
    reading (and its question is asked again)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.entries: dict[str, str] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                self.entries[entry["key"]] = entry["text"]

    @staticmethod
    def key(model: str, prompt: str) -> str:
        return hashlib.sha256(f"{model}\0{prompt}".encode()).hexdigest()

    def get(self, model: str, prompt: str) -> str | None:
        return self.entries.get(self.key(model, prompt))

    def put(self, model: str, prompt: str, text: str) -> None:
        key = self.key(model, prompt)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as out:
            out.write(json.dumps(dict(key=key, model=model, prompt=prompt, text=text)) + "\n")
            out.flush()
            os.fsync(out.fileno())
        self.entries[key] = text


def generate_keywords(
    questions: list[str], generator: KeywordGenerator, cache: GenerationCache, progress: bool = True
) -> list[list[str]]:
    """Keywords for every question; cached answers are reused, new ones cached as they come."""
    keywords = []
    for question in tqdm(questions, desc=f"keywords ({generator.name})", disable=not progress):
        prompt = KEYWORD_PROMPT.format(question=question)
        text = cache.get(generator.name, prompt)
        if text is None:
            text = generator.generate(prompt)
            parse_keywords(text, generator.name)  # a malformed answer is not cached
            cache.put(generator.name, prompt, text)
        keywords.append(parse_keywords(text, generator.name))
    return keywords


class ChatEndpointGenerator:
    """An OpenAI-compatible `/chat/completions` endpoint, greedy (temperature 0)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 60.0):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.name, self.api_key, self.timeout = model, api_key, timeout
        self.label = f"Query Expansion ({model})"

    @classmethod
    def from_env(cls, model: str = "") -> ChatEndpointGenerator:
        """`AMER_QE_BASE_URL` (default the OpenAI API), `model` or else `AMER_QE_MODEL` (default
        gpt-4.1-mini), `AMER_QE_API_KEY` or `OPENAI_API_KEY`."""
        return cls(
            os.environ.get("AMER_QE_BASE_URL", DEFAULT_ENDPOINT),
            model or os.environ.get("AMER_QE_MODEL", DEFAULT_CHAT_MODEL),
            os.environ.get("AMER_QE_API_KEY") or os.environ.get("OPENAI_API_KEY"),
        )

    def generate(self, prompt: str) -> str:
        body = json.dumps(dict(model=self.name, temperature=0, messages=[dict(role="user", content=prompt)])).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise ExpansionError(
                f"query-expansion endpoint {self.url} answered HTTP {exc.code}: {exc.read()[:300]!r}"
            ) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise ExpansionError(
                f"query-expansion endpoint {self.url} is unreachable ({exc}); set "
                "AMER_QE_BASE_URL to a running OpenAI-compatible server"
            ) from exc
        try:
            return json.loads(payload)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ExpansionError(
                f"query-expansion endpoint {self.url} returned a malformed answer "
                f"(no choices[0].message.content): {payload[:300]!r}"
            ) from exc


class HFGenerator:
    """A local Hugging Face causal LM with a chat template, greedy decoding."""

    def __init__(self, model_name: str, max_new_tokens: int = 64, device: str = "cpu"):
        self.name, self.max_new_tokens, self.device = model_name, max_new_tokens, device
        self.label = f"Query Expansion ({model_name})"
        self._model = self._tokenizer = None

    def _load(self) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            self._tokenizer = AutoTokenizer.from_pretrained(self.name)
            self._model = AutoModelForCausalLM.from_pretrained(self.name).to(self.device).eval()
        except OSError as exc:
            raise ExpansionError(
                f"keyword model {self.name!r} is neither a local directory nor in the Hugging Face "
                f"cache and cannot be downloaded here ({exc})"
            ) from exc

    def generate(self, prompt: str) -> str:
        import torch

        if self._model is None:
            self._load()
        ids = self._tokenizer.apply_chat_template(
            [dict(role="user", content=prompt)], add_generation_prompt=True, return_tensors="pt", return_dict=True
        ).to(self.device)
        with torch.no_grad():
            out = self._model.generate(**ids, max_new_tokens=self.max_new_tokens, do_sample=False)
        return self._tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)


class PseudoRelevanceFeedback:
    """RM3-style keywords without an LLM: the `n_terms` terms with the largest relevance-model
    weight `sum_d P(t | d) * score(d) / sum_d score(d)` over the top `n_docs` BM25 documents,
    leaving out stopwords and the question's own terms. The question itself is kept verbatim, so
    appending the terms plays the part of RM3's interpolation with the original query."""

    label = "PRF keywords (RM3-style, no LLM)"

    def __init__(self, texts: list[str], n_docs: int = 10, n_terms: int = 10):
        import bm25s
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        self.name = f"prf-rm3-docs{n_docs}-terms{n_terms}"
        self.texts, self.n_docs, self.n_terms = texts, n_docs, n_terms
        self.stopwords = set(STOPWORDS_EN_PLUS)
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)

    def _terms(self, text: str) -> list[str]:
        return [t for t in re.findall(r"[a-z][a-z\-']+", text.lower()) if len(t) > 2 and t not in self.stopwords]

    def keywords(self, questions: list[str], progress: bool = True) -> list[list[str]]:
        import bm25s

        rows, scores = self.retriever.retrieve(
            bm25s.tokenize(questions, stopwords="en", show_progress=False),
            k=min(self.n_docs, len(self.texts)),
            show_progress=progress,
        )
        return [self._top_terms(question, row, score) for question, row, score in zip(questions, rows, scores)]

    def _top_terms(self, question: str, rows: np.ndarray, scores: np.ndarray) -> list[str]:
        own = set(self._terms(question))
        weights: dict[str, float] = {}
        total = float(np.sum(scores)) or 1.0
        for row, score in zip(rows, scores):
            terms = self._terms(self.texts[int(row)])
            for term in terms:
                if term not in own:
                    weights[term] = weights.get(term, 0.0) + float(score) / total / len(terms)
        return sorted(weights, key=lambda t: (-weights[t], t))[: self.n_terms]
