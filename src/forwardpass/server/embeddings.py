"""OpenAI's /v1/embeddings over the server's embedding model: unit vectors, as float lists or base64 float32."""

from __future__ import annotations

import asyncio
import base64

from fastapi import APIRouter, Request

from .errors import APIError
from .protocol import EmbeddingRequest
from .request_checks import Front


def router(s: Front) -> APIRouter:
    r = APIRouter()

    @r.post("/v1/embeddings")
    async def embeddings(request: Request) -> dict:
        """OpenAI's embeddings: unit vectors from the embedding model, float lists or base64 float32."""
        embedder = s.embedder
        if embedder is None:
            s.authorize(request)
            raise APIError(404, "this server has no embedding model (start it with --embedding-model)",
                           "model_not_found", "model")
        req = await s.body(request, EmbeddingRequest)
        s.embedding_model(request, req)
        inputs = req.input if isinstance(req.input, list) else [req.input]
        if not inputs:
            raise APIError(400, "input holds nothing to embed", param="input")
        if len(inputs) > 2048:
            raise APIError(400, f"input holds {len(inputs)} items; at most 2048 per request", param="input")
        if isinstance(inputs[0], int):  # one input as token ids
            inputs = [inputs]
        if req.dimensions is not None and req.dimensions != embedder.dimensions:
            raise APIError(400, f"{embedder.name} makes {embedder.dimensions}-dimensional vectors and cannot shorten "
                                f"them", param="dimensions")
        ids = [embedder.encode(x) if isinstance(x, str) else list(x) for x in inputs]

        def run():
            with s.embedding_lock:
                return embedder.embed(ids)
        vectors = await asyncio.to_thread(run)
        if req.encoding_format == "base64":
            data = [base64.b64encode(v.numpy().astype("<f4").tobytes()).decode() for v in vectors]
        else:
            data = vectors.tolist()
        tokens = sum(len(x) for x in ids)
        return {"object": "list", "model": embedder.name, "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                "data": [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(data)]}

    return r
