import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from amer_lib.baselines.expansion import (
    KEYWORD_PROMPT,
    ChatEndpointGenerator,
    ExpansionError,
    GenerationCache,
    PseudoRelevanceFeedback,
    expanded_query,
    generate_keywords,
    parse_keywords,
)


class CountingGenerator:
    name, label = "counting", "test"

    def __init__(self):
        self.calls = 0

    def generate(self, prompt):
        self.calls += 1
        return "alpha, beta,\n- gamma"


def test_parse_keywords_strips_lists_and_rejects_empty_answers():
    assert parse_keywords("1. river bank\n2) money, - slope", "m") == ["river bank", "money", "slope"]
    with pytest.raises(ExpansionError, match="m returned no keywords"):
        parse_keywords(" , \n", "m")


def test_expanded_query_appends_the_keywords():
    assert expanded_query("What is a bank?", ["river", "money"]) == "What is a bank? river, money"


def test_cache_hit_makes_no_second_generator_call(tmp_path):
    generator = CountingGenerator()
    first = generate_keywords(["q1", "q2"], generator, GenerationCache(tmp_path / "cache.jsonl"), progress=False)
    again = generate_keywords(["q1", "q2"], generator, GenerationCache(tmp_path / "cache.jsonl"), progress=False)
    assert generator.calls == 2 and first == again == [["alpha", "beta", "gamma"]] * 2


def test_a_line_cut_short_is_ignored(tmp_path):
    path = tmp_path / "cache.jsonl"
    cache = GenerationCache(path)
    cache.put("m", "p1", "a, b")
    with open(path, "a") as out:
        out.write('{"key": "abc", "text": "trunc')
    reread = GenerationCache(path)
    assert reread.get("m", "p1") == "a, b" and len(reread.entries) == 1


class _Endpoint(BaseHTTPRequestHandler):
    """Answers the first request properly, then malformed JSON."""

    served = 0
    requests: list[dict] = []  # what the client sent, checked by the test in its own thread

    def do_POST(self):
        type(self).requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        type(self).served += 1
        body = (
            json.dumps({"choices": [{"message": {"content": "k1, k2"}}]})
            if type(self).served == 1
            else '{"error": "overloaded"}'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_malformed_endpoint_answer_names_the_endpoint_and_keeps_the_cache(tmp_path):
    _Endpoint.served, _Endpoint.requests = 0, []
    server = HTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}/v1"
    try:
        with pytest.raises(ExpansionError, match=f"{base}/chat/completions returned a malformed answer"):
            generate_keywords(
                ["q1", "q2"],
                ChatEndpointGenerator(base, "local-model"),
                GenerationCache(tmp_path / "c.jsonl"),
                progress=False,
            )
    finally:
        server.shutdown()
    # the chat request: the model asked for and the keyword prompt of each question, in order
    assert [r["model"] for r in _Endpoint.requests] == ["local-model", "local-model"]
    assert [r["messages"][-1]["content"] for r in _Endpoint.requests] == [
        KEYWORD_PROMPT.format(question=q) for q in ("q1", "q2")
    ]
    cache = GenerationCache(tmp_path / "c.jsonl")
    assert cache.get("local-model", KEYWORD_PROMPT.format(question="q1")) == "k1, k2"
    assert cache.get("local-model", KEYWORD_PROMPT.format(question="q2")) is None


def test_unreachable_endpoint_is_a_clear_error():
    generator = ChatEndpointGenerator("http://127.0.0.1:9/v1", "m", timeout=2)
    with pytest.raises(ExpansionError, match=r"http://127.0.0.1:9/v1/chat/completions is unreachable"):
        generator.generate("hello")


def test_prf_keywords_come_from_the_top_documents_without_question_terms():
    texts = [
        "the waltz is a ballroom dance in triple time",
        "the tango is a ballroom dance from argentina",
        "a ballroom dance with quick steps",
        "bonds pay interest to holders",
        "stocks trade on exchanges",
    ]
    keywords = PseudoRelevanceFeedback(texts, n_docs=3, n_terms=3).keywords(
        ["What are examples of dance?"], progress=False
    )[0]
    assert keywords[0] == "ballroom" and "dance" not in keywords and len(keywords) == 3
