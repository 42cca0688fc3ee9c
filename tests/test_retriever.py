"""AMERRetriever over a saved model folder (LoRA on MiniLM, 16-dimensional vectors, a stop head)
and a corpus encoded by a stand-in encoder: its lists are the round-robin merge of exact
searches of the vectors it generates, each document's score is its cosine to the vector that
found it, and an index by another encoder or of another size is refused before any weight loads."""

import numpy as np
import pytest
import torch
from stand_ins import HashEncoder, documents

from amer_lib.core.backbones import add_lora, get_backbone, load_backbone, load_tokenizer
from amer_lib.core.index import unit_norm
from amer_lib.core.merge import round_robin_merge
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.data.encoders import EmbeddingShards, encode_corpus
from amer_lib.data.prompts import PromptTemplate
from amer_lib.retriever import AMERRetriever
from amer_lib.runs.saved import save_pretrained

QUESTIONS = ["what is a bank?", "kinds of dog", "who wrote the iliad and the odyssey?"]


def saved_model(folder, stop_head: bool):
    torch.manual_seed(0)
    model = AMERQueryEncoder(add_lora(load_backbone("minilm"), get_backbone("minilm").lora), 16, stop_head=stop_head)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn_like(p))
    prompt = PromptTemplate.of(get_backbone("minilm"), load_tokenizer("minilm"))
    return save_pretrained(
        model.eval(),
        folder,
        backbone="minilm",
        n_queries=2,
        document_encoder="minilm",
        prompt=prompt.to_json(),
        search_depth=20,
        stop={"threshold": 0.5, "max_n": 4} if stop_head else None,
    )


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    return saved_model(tmp_path_factory.mktemp("models") / "amer", stop_head=True)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return encode_corpus(
        HashEncoder("minilm", 16), documents(300), tmp_path_factory.mktemp("e") / "minilm", progress=False
    )


def test_the_lists_are_the_round_robin_merge_of_each_vectors_exact_search(model_folder, shards):
    retriever = AMERRetriever.from_pretrained(model_folder, index=shards)
    results = retriever.search(QUESTIONS, k=10)
    vectors, counts = retriever.query_vectors(QUESTIONS)
    assert vectors.shape == (3, 2, 16) and counts.tolist() == [2, 2, 2]
    corpus = shards.rows(np.arange(len(shards)))
    cosines = np.einsum("qnd,cd->qnc", unit_norm(vectors), corpus)
    exact = np.argsort(-cosines, axis=-1, kind="stable")[:, :, :20]  # brute force, the folder's depth
    expected = round_robin_merge(exact, 10)
    assert results.doc_ids == [[shards.ids[r] for r in row] for row in expected]
    rows = np.array([[shards.row_of[d] for d in ids] for ids in results.doc_ids])
    by_finder = cosines[np.arange(3)[:, None], results.vectors - 1, rows]  # each document's cosine to its finder
    assert np.allclose(results.scores, by_finder, atol=1e-5)
    assert set(results.vectors.ravel()) == {1, 2}  # counted from 1, as the ranking table shows them
    assert results.ranking(0)["vector"].tolist() == results.vectors[0].tolist()


def test_n_is_the_folders_an_int_or_the_stop_heads_count(model_folder, shards):
    retriever = AMERRetriever.from_pretrained(model_folder, index=shards)
    assert retriever.query_vectors(QUESTIONS, n=3)[0].shape == (3, 3, 16)
    auto = retriever.search(QUESTIONS, k=10, n="auto")
    assert ((auto.counts >= 1) & (auto.counts <= 4)).all()
    assert (auto.vectors <= auto.counts[:, None]).all()  # only the vectors kept were searched
    for bad in (0, "3", 2.0):
        with pytest.raises(ValueError, match="n must be a positive int, 'auto' or None"):
            retriever.search(QUESTIONS, n=bad)


def test_auto_without_a_stop_head_says_so(tmp_path, shards):
    retriever = AMERRetriever.from_pretrained(saved_model(tmp_path / "plain", stop_head=False), index=shards)
    with pytest.raises(ValueError, match="n = 'auto' needs a stop head, and this model has none"):
        retriever.search(QUESTIONS, n="auto")


def test_embeddings_in_memory_are_searched_the_same(model_folder, shards):
    from_shards = AMERRetriever.from_pretrained(model_folder, index=shards).search(QUESTIONS, k=10)
    corpus = shards.rows(np.arange(len(shards)))
    in_memory = AMERRetriever.from_pretrained(model_folder, index=corpus, doc_ids=shards.ids).search(QUESTIONS, k=10)
    assert in_memory.doc_ids == from_shards.doc_ids
    with pytest.raises(ValueError, match="need their doc_ids, one per row"):
        AMERRetriever.from_pretrained(model_folder, index=corpus)


def test_an_index_of_another_encoder_or_size_is_refused_with_what_to_do(model_folder, tmp_path):
    other = encode_corpus(HashEncoder("hash", 16), documents(20), tmp_path / "hash", progress=False)
    with pytest.raises(ValueError, match="encoded by 'hash', but the model was trained against 'minilm'"):
        AMERRetriever.from_pretrained(model_folder, index=other.directory)
    smaller = encode_corpus(HashEncoder("minilm", 8), documents(20), tmp_path / "small", progress=False)
    with pytest.raises(ValueError, match="dimension 8, but the model generates dimension 16"):
        AMERRetriever.from_pretrained(model_folder, index=EmbeddingShards(smaller.directory))
    benchmark = tmp_path / "benchmark"
    (benchmark / "embeddings").mkdir(parents=True)
    (benchmark / "manifest.json").write_text('{"datasets": ["mine"]}')
    other.directory.rename(benchmark / "embeddings" / "hash")
    with pytest.raises(FileNotFoundError, match=r"holds embeddings by \['hash'\], not by 'minilm'"):
        AMERRetriever.from_pretrained(model_folder, index=benchmark)


def test_a_synthetic_model_has_nothing_to_search_text_with(tmp_path, shards):
    model = AMERQueryEncoder(load_backbone("tiny", config_overrides={"hidden_size": 32}), 16)
    folder = save_pretrained(
        model, tmp_path / "s", backbone="tiny", n_queries=2, backbone_overrides={"hidden_size": 32}
    )
    with pytest.raises(ValueError, match="trained on the synthetic task's vectors, not on text"):
        AMERRetriever.from_pretrained(folder, index=shards)


def test_the_search_command_stops_on_bad_input_with_its_message(model_folder, shards, tmp_path):
    from amer_lib.search import main

    questions = tmp_path / "questions.txt"
    questions.write_text("kinds of dog\n")
    args = ["--model", str(model_folder), "--questions", str(questions), "--out", str(tmp_path / "run.trec")]
    other = encode_corpus(HashEncoder("hash", 16), documents(20), tmp_path / "hash", progress=False)
    with pytest.raises(SystemExit, match="^error: .* encoded by 'hash', but the model was trained against 'minilm'"):
        main([*args, "--index", str(other.directory)])
    table = tmp_path / "questions.csv"
    table.write_text("qid,question\n")
    files = r"questions are read from these files: \.txt: .*\.jsonl: .*\.tsv: qid<TAB>question"
    with pytest.raises(SystemExit, match=files):
        main([*args[:2], "--questions", str(table), *args[4:], "--index", str(shards.directory)])
    repeated = tmp_path / "repeated.jsonl"
    repeated.write_text('{"qid": "a", "question": "x"}\n{"qid": "a", "question": "y"}\n')
    with pytest.raises(SystemExit, match=r"repeats the qid\(s\) \['a'\]"):
        main([*args[:2], "--questions", str(repeated), *args[4:], "--index", str(shards.directory)])
    assert not (tmp_path / "run.trec").exists()  # nothing written
    main([*args, "--index", str(shards.directory), "--n", "3", "--k", "5"])
    lines = [line.split() for line in (tmp_path / "run.trec").read_text().splitlines()]
    assert [line[:2] for line in lines] == [["1", "Q0"]] * 5 and {line[5] for line in lines} == {"amer"}


def test_the_run_file_holds_ranks_or_the_cosines_and_trec_eval_reorders_by_cosine(model_folder, shards, tmp_path):
    import ir_measures

    retriever = AMERRetriever.from_pretrained(model_folder, index=shards)
    results = retriever.search(QUESTIONS, k=10)
    results.write_trec(tmp_path / "rank.trec", ["a", "b", "c"], "t")
    results.write_trec(tmp_path / "cosine.trec", ["a", "b", "c"], "t", scores="cosine")
    rank = [line.split() for line in (tmp_path / "rank.trec").read_text().splitlines()]
    cosine = [line.split() for line in (tmp_path / "cosine.trec").read_text().splitlines()]
    assert [r[:4] for r in rank] == [c[:4] for c in cosine]  # the same documents in the merged order
    assert [float(r[4]) for r in rank[:10]] == list(range(10, 0, -1))
    assert np.allclose([float(c[4]) for c in cosine], results.scores.ravel(), atol=5e-7)
    # evaluated, the cosine file's documents are reordered by cosine: the merged list's first
    # document counts at its rank by cosine (here not the first: the merge is not the cosines' order)
    first = results.doc_ids[0][0]
    by_cosine = np.argsort(-np.round(results.scores[0], 6), kind="stable").tolist().index(0) + 1
    assert by_cosine > 1
    qrels = [ir_measures.Qrel("a", first, 1)]
    runs = {name: list(ir_measures.read_trec_run(str(tmp_path / f"{name}.trec"))) for name in ("rank", "cosine")}
    measured = {
        name: ir_measures.calc_aggregate([ir_measures.RR], qrels, run)[ir_measures.RR] for name, run in runs.items()
    }
    assert measured["rank"] == 1.0 and measured["cosine"] == pytest.approx(1 / by_cosine)
    with pytest.raises(ValueError, match="unknown TREC scores 'cos'; valid: rank, cosine"):
        results.write_trec(tmp_path / "x.trec", ["a", "b", "c"], "t", scores="cos")


def test_the_search_command_checks_k_n_device_and_out_before_any_work(model_folder, shards, tmp_path, capsys):
    from amer_lib.search import main

    questions = tmp_path / "questions.txt"
    questions.write_text("kinds of dog\n")
    args = ["--model", str(model_folder), "--index", str(shards.directory), "--questions", str(questions)]
    out = ["--out", str(tmp_path / "run.trec")]
    with pytest.raises(SystemExit) as exit_code:
        main([*args, *out, "--k", "0"])
    assert exit_code.value.code == 2 and "--k must be at least 1" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit, match=r"^error: --out '.*file' cannot be written"):
        main([*args, "--out", str(tmp_path / "file" / "run.trec")])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.cuda, "is_available", lambda: False)
        with pytest.raises(SystemExit, match="^error: device 'cuda' was asked for, .*devices available here: cpu"):
            main([*args, *out, "--device", "cuda"])
    assert not (tmp_path / "run.trec").exists()
    capsys.readouterr()
    main([*args, *out, "--n", "2", "--k", "5"])  # the n it was trained with: no note
    assert "note" not in capsys.readouterr().err
    main([*args, *out, "--n", "3", "--k", "5"])
    err = capsys.readouterr().err
    assert "note: --n 3 asks for more vectors than the 2 this model was trained to generate; vectors 3 to 3" in err
    assert err.index("note: --n 3") < err.index("run.trec: 1 questions")  # said before the search, not after
