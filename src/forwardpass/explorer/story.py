"""The article's story on the real model: the toy's five candidates (mat, rug, floor, sofa, roof) scored by the loaded
model after "the cat sat on the" (on the Chinese page 垫子, 地毯, … after "猫坐在": explorer/toy.py), beside the toy's
made-up scores, and the model's own top tokens there."""

from __future__ import annotations

import torch

from ..loaded import LoadedModel
from .compute import _ids, _top
from .toy import TOYS, toy_of
from .trace import trace

STORY = TOYS["en"].sentence


def candidates(fp: LoadedModel, prompt: str = STORY) -> dict:
    """Each of the toy's five words (the toy whose sentence `prompt` is: explorer/toy.py) as the model spells it after
    `prompt` (with its leading space in English: one token or several), the score of its first piece among the
    next-token logits, that piece's probability and rank in the whole vocabulary, and the whole word's probability
    (each piece's probability given the ones before it, multiplied)."""
    ids = _ids(fp, prompt)
    logits = trace(fp, ids).logits  # (vocab_size,): the model's scores for the token after the prompt
    probs = torch.softmax(logits, -1)
    story = toy_of(prompt)
    toy = torch.tensor(list(story.words.values()))
    toy_probs = torch.softmax(toy, -1)
    words = []
    for i, (word, toy_logit) in enumerate(story.words.items()):
        full = fp.encode(prompt + story.space + word)
        pieces = full[len(ids):] if full[:len(ids)] == ids else fp.tokenizer.encode_text(story.space + word)
        word_p = float(probs[pieces[0]])
        for k in range(1, len(pieces)):  # the later pieces, each given the prompt and the pieces before it
            word_p *= float(torch.softmax(trace(fp, ids + pieces[:k]).logits, -1)[pieces[k]])
        first = pieces[0]
        words.append({"word": word, "toy_logit": toy_logit, "toy_probability": float(toy_probs[i]),
                      "pieces": [fp.tokenizer.piece(p) for p in pieces], "ids": pieces,
                      "logit": float(logits[first]), "probability": float(probs[first]),
                      "rank": int((logits > logits[first]).sum()) + 1, "word_probability": word_p})
    real_order = sorted(range(len(words)), key=lambda i: -words[i]["logit"])
    top = _top(fp, logits, probs, 5)
    for t in top:  # a piece that only starts a word: how the model itself goes on after it
        t["goes_on"] = goes_on(fp, ids, t["id"])
    return {"prompt": prompt, "words": words, "toy_order": [w["word"] for w in words],
            "real_order": [words[i]["word"] for i in real_order],
            "five_mass": sum(w["word_probability"] for w in words),
            "top": top, "vocab_size": logits.numel()}


def _letters(s: str) -> bool:
    return s.isascii() and s.isalpha()


def goes_on(fp: LoadedModel, ids: list[int], first: int, n: int = 2) -> list[dict] | None:
    """A top token that is only the start of a word (" cou"): the model's own n likeliest next pieces after it, with
    their probabilities, when the likeliest carries on the same word (letters, no leading space). None for a token
    the model treats as a word of its own (its likeliest next piece starts a new one) or one that starts no word."""
    head = fp.tokenizer.piece(first)
    if not (head.startswith(" ") and _letters(head[1:])):
        return None
    probs = torch.softmax(trace(fp, ids + [first]).logits, -1)
    top = torch.topk(probs, n)
    after = [{"id": int(i), "piece": fp.tokenizer.piece(int(i)), "probability": float(p)}
             for p, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)]
    return after if _letters(after[0]["piece"]) else None
