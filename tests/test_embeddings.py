"""Sentence embeddings (all-MiniLM-L6-v2, BERT): the vectors of transformers' BertModel + mean pooling, through the
library, `forwardpass embed` and POST /v1/embeddings (the official `openai` client)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import httpx
import openai
import pytest
import torch
from server_helpers import MODEL, running_server

from forwardpass.errors import ContextLengthError, ModelFileError

TEXTS = ["The cat sits on the mat.", "A feline rests on a rug.", "Quarterly revenue grew 8% in March.", "hi",
         "Le café est très chaud, n'est-ce pas ?", "猫はマットの上に座っている。"]


@pytest.fixture(scope="session")
def minilm():
    from forwardpass.embeddings import load_embedder
    try:
        return load_embedder()
    except ModelFileError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def reference(minilm, tmp_path_factory):
    """transformers' BertModel and tokenizer on the same files, mean-pooled and normalized."""
    import transformers

    from forwardpass.embeddings import default_embedding_path
    directory = tmp_path_factory.mktemp("minilm")
    zipfile.ZipFile(default_embedding_path()).extractall(directory)
    model = transformers.BertModel.from_pretrained(directory).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)

    def embed(texts: list[str]) -> tuple[torch.Tensor, list[list[int]]]:
        batch = tokenizer(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            h = model(**batch).last_hidden_state
        real = batch["attention_mask"][..., None].float()
        ids = [row[:int(n)].tolist() for row, n in zip(batch["input_ids"], real.sum(1)[:, 0], strict=True)]
        return torch.nn.functional.normalize((h * real).sum(1) / real.sum(1), dim=-1), ids
    return embed


def test_vectors_match_transformers(minilm, reference):
    want, want_ids = reference(TEXTS)
    ids = [minilm.encode(t) for t in TEXTS]
    got = minilm.embed(ids)
    assert ids == want_ids  # the same WordPiece ids, [CLS] … [SEP]
    assert (got * want).sum(-1).min() >= 1 - 1e-5 and (got - want).abs().max() <= 1e-5
    assert torch.allclose(got.norm(dim=-1), torch.ones(len(TEXTS)), atol=1e-6)


def test_a_vector_does_not_depend_on_its_batch(minilm):
    ids = [minilm.encode(t) for t in TEXTS]
    together = minilm.embed(ids, batch_size=4)  # padded beside longer and shorter inputs
    alone = torch.cat([minilm.embed([x]) for x in ids])
    assert (together - alone).abs().max() <= 1e-5


def test_too_long_is_refused_not_cut(minilm):
    with pytest.raises(ContextLengthError, match="reads at most 256"):
        minilm.encode("word " * 300)


def test_embed_command():
    r = subprocess.run([sys.executable, "-m", "forwardpass", "embed", *TEXTS[:3], "--json"], capture_output=True,
                       text=True, timeout=300)
    if "not installed" in r.stderr:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    sim = torch.tensor(out["similarity"])
    assert out["dimensions"] == 384 and len(out["data"]) == 3 and torch.allclose(sim, sim.T)
    assert torch.allclose(sim.diagonal(), torch.ones(3), atol=1e-5) and sim[0, 1] > sim[0, 2]  # cat ~ feline


def test_the_embeddings_endpoint(smollm, minilm):
    with running_server(smollm, api_key="k", embedder=minilm) as (url, _):
        client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        assert {m.id: m.max_model_len for m in client.models.list()}["all-MiniLM-L6-v2"] == 256  # beside MODEL
        r = client.embeddings.create(model="all-MiniLM-L6-v2", input=TEXTS)  # the client asks for base64
        want = minilm.embed([minilm.encode(t) for t in TEXTS])
        assert [d.index for d in r.data] == list(range(len(TEXTS)))
        assert torch.equal(torch.tensor([d.embedding for d in r.data]), want)
        assert r.usage.prompt_tokens == sum(len(minilm.encode(t)) for t in TEXTS)
        raw = httpx.post(url + "/v1/embeddings", headers={"Authorization": "Bearer k"},
                         json={"input": minilm.encode("hi"), "encoding_format": "float"}).json()
        assert torch.allclose(torch.tensor(raw["data"][0]["embedding"]), want[3], atol=1e-6)  # alone, not batched
        for body, status, message in [({"input": []}, 400, "nothing to embed"),
                                      ({"input": "hi", "dimensions": 128}, 400, "cannot shorten"),
                                      ({"input": "word " * 300}, 400, "reads at most 256"),
                                      ({"input": "hi", "model": MODEL}, 404, "does not exist")]:
            e = httpx.post(url + "/v1/embeddings", headers={"Authorization": "Bearer k"}, json=body)
            assert e.status_code == status and message in e.json()["error"]["message"], e.text
    with running_server(smollm) as (url, _):
        e = httpx.post(url + "/v1/embeddings", json={"input": "hi"})
        assert e.status_code == 404 and "--embedding-model" in e.json()["error"]["message"]
