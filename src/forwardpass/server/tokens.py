"""/tokenize and /detokenize: a prompt's token ids (or chat messages' as the chat routes render them), and back."""

from __future__ import annotations

from fastapi import APIRouter, Request

from . import tools
from .errors import APIError
from .protocol import DetokenizeRequest, TokenizeRequest
from .request_checks import Front
from .to_engine import constraint_errors, off_loop


def router(front: Front) -> APIRouter:
    r = APIRouter()

    @r.post("/tokenize")
    async def tokenize(request: Request) -> dict:
        """Token ids of a prompt (or of chat messages as the chat routes render them), and the context length."""
        req, s = await front.model(request, TokenizeRequest)
        s.need_tokenizer()
        if (req.prompt is None) == (req.messages is None):
            raise APIError(400, "send either prompt or messages", param="prompt")
        if req.messages is not None:
            with constraint_errors(None, "tools"):
                functions = tools.functions(req.tools or [])
            ids = await off_loop(s.chat_ids, req.messages, req.add_generation_prompt, functions)
        else:
            ids = await off_loop(s.tokenizer.encode, req.prompt)
        out = {"count": len(ids), "max_model_len": s.context, "tokens": ids}
        if req.return_token_strs:
            out["token_strs"] = await off_loop(lambda: [s.tokenizer.piece(i) for i in ids])
        return out

    @r.post("/detokenize")
    async def detokenize(request: Request) -> dict:
        req, s = await front.model(request, DetokenizeRequest)
        s.need_tokenizer()
        s.tokenizer.check_ids(req.tokens)
        return {"prompt": await off_loop(s.tokenizer.decode, req.tokens)}

    return r
