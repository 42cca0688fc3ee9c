"""Stand-ins for the paper-scale inputs, so that every parameter file under `params/` runs end to
end on a CPU (tests/test_rehearsal.py):

- `backbone_folder`: a local model folder in the layout `huggingface-cli download` leaves: a tiny
  randomly initialised Llama or Qwen3 causal LM (`config.json`, safetensors) with SmolLM2's real
  tokenizer and the published Llama-3.2 chat template (Qwen: SmolLM2's ChatML template, the same
  turn markers as Qwen3's). It loads through the paper backbones' path: `AutoModel`, the chat
  template, LoRA on the seven projections.
- `paper_raw_data`: AmbigQA, NQ-open and QAMPARI files in their published layouts, and a corpus in
  QAMPARI's chunk layout, made from the shipped WordNet benchmark (a sense question becomes an
  AmbigQA question whose answers are the first words of its glosses; a kinds question a QAMPARI
  question whose answers are the hyponyms, each with its gloss as proof), so that the gold mapping
  finds what it looks for.
- `ChatServer`: an OpenAI-compatible `/v1/chat/completions` on 127.0.0.1 standing in for
  GPT-4.1-mini: it answers the keyword prompt with words of the question.
"""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

from amer_lib.core.backbones import load_tokenizer
from amer_lib.data import wordnet

TEMPLATE = Path(__file__).parent / "fixtures" / "published" / "llama32_chat_template.jinja"
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)


def backbone_folder(directory: Path, architecture: str) -> Path:
    """A tiny `architecture` ("llama" or "qwen3") decoder saved with SmolLM2's tokenizer."""
    tokenizer = load_tokenizer("smollm2")
    if architecture == "llama":
        config = LlamaConfig(vocab_size=len(tokenizer), max_position_embeddings=1024, **TINY)
        model_class, template = LlamaForCausalLM, TEMPLATE.read_text()
    else:
        config = Qwen3Config(vocab_size=len(tokenizer), max_position_embeddings=1024, head_dim=16, **TINY)
        model_class, template = Qwen3ForCausalLM, tokenizer.chat_template
    torch.manual_seed(0)
    model_class(config).save_pretrained(directory)
    saved = copy.copy(tokenizer)  # the loaded tokenizer is shared (cached): set the template on a copy
    saved.chat_template = template
    saved.save_pretrained(directory)
    return directory


def _first_words(text: str, n: int = 5) -> str:
    return " ".join(text.split()[:n])


def paper_raw_data(raw: Path, corpus_path: Path, n_ambigqa: int, n_qampari: int, extra_docs: int, seed: int = 0):
    """The paper's six question files in `raw` and a chunk corpus at `corpus_path`."""
    rng = np.random.default_rng(seed)
    corpus = wordnet.load_corpus()
    gloss = {d.id: d.text for d in corpus.documents}
    senses = [q for q in wordnet.load_questions("senses", "train") if len(q.targets) <= 4]
    kinds = wordnet.load_questions("kinds", "train")
    senses = [senses[i] for i in rng.choice(len(senses), 3 * n_ambigqa, replace=False)]
    kinds = [kinds[i] for i in rng.choice(len(kinds), 2 * n_qampari, replace=False)]
    titles = {}  # document id -> page title (a kinds answer's lemma; "" for sense glosses)

    def ambigqa(question):  # each pair's disambiguated question its own, as AmbigQA's are
        pairs = [
            {
                "question": f"{question.question} As in: {_first_words(gloss[docs[0]])}?",
                "answer": [_first_words(gloss[docs[0]])],
            }
            for docs in question.targets
        ]
        return {
            "id": question.qid,
            "question": question.question,
            "annotations": [{"type": "multipleQAs", "qaPairs": pairs}],
        }

    def qampari(question, split):
        answers = []
        for i, (aliases, docs) in enumerate(zip(question.answers, question.targets)):
            titles[docs[0]] = aliases[0]
            url = "https://en.wikipedia.org/wiki/" + aliases[0].replace(" ", "_")
            proof = {"proof_text": gloss[docs[0]], "found_in_url": url, "pid": f"{question.qid}__{i}__0"}
            answers.append({"answer_text": aliases[0], "aliases": aliases[:2], "proof": [proof]})
        return {"question_text": question.question, "answer_list": answers, "qid": f"{question.qid}__{split}"}

    groups = np.array_split(np.arange(len(senses)), 3)
    write = lambda name, records: (raw / name).write_text(json.dumps(records, ensure_ascii=False))
    raw.mkdir(parents=True, exist_ok=True)
    write("train_light.json", [ambigqa(senses[i]) for i in groups[0]])
    write("dev_light.json", [ambigqa(senses[i]) for i in groups[1]])
    nq_record = lambda question, qid: {
        "id": qid,
        "question": question.question.lower().rstrip("?"),
        "answer": [_first_words(gloss[docs[0]]) for docs in question.targets],
    }
    nq = [nq_record(senses[i], senses[i].qid) for i in groups[2]]
    # NQ-open holds AmbigQA's questions too: every dev question again, as NQ writes it
    leaked = [nq_record(senses[i], f"nq-{senses[i].qid}") for i in groups[1]]
    write("nqopen-dev.json", nq[: len(nq) // 2] + leaked)
    write("nqopen-test.json", nq[len(nq) // 2 :])
    for name, part in (("train_data.jsonl", kinds[:n_qampari]), ("dev_data.jsonl", kinds[n_qampari:])):
        split = name.split("_")[0]
        (raw / name).write_text("".join(json.dumps(qampari(q, split)) + "\n" for q in part))
    gold = {d for q in senses + kinds for docs in q.targets for d in docs}
    others = [d.id for d in corpus.documents if d.id not in gold]
    chosen = sorted(gold | {others[i] for i in rng.choice(len(others), extra_docs, replace=False)})
    with open(corpus_path, "w", encoding="utf-8") as out:
        for doc_id in chosen:
            title = titles.get(doc_id, "")
            contents = f"{title} {gloss[doc_id]}".strip()
            meta = {"title": title, "url": f"https://en.wikipedia.org/wiki?curid={doc_id}", "page_id": doc_id}
            out.write(json.dumps({"id": f"{doc_id}__0", "contents": contents, "meta": meta}) + "\n")
    return corpus_path


class _Keywords(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = body["messages"][0]["content"].rsplit("Question:\n", 1)[-1]
        words = [w.strip("?\"'") for w in question.split() if len(w) > 3][:4]
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": ", ".join(words)}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        ChatServer.requests += 1

    def log_message(self, *args):
        pass


class ChatServer:
    """`with ChatServer() as base_url:` an OpenAI-compatible endpoint for the test's duration."""

    requests = 0

    def __enter__(self) -> str:
        self.server = HTTPServer(("127.0.0.1", 0), _Keywords)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
