"""Whether a model reads Chinese, decided from its vocabulary: a vocabulary built for Chinese has a token for each
of the commonest characters, where one built for English spells most of them in their UTF-8 bytes (SmolLM2 writes 猫
as three byte tokens; Gemma 3 has 猫 itself). The Chinese page runs on a model that reads Chinese where one is
installed, and a Chinese prompt on one that does not is said so (static/lib/reader.js)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:  # annotations only: nothing loaded here
    from ..loaded import LoadedModel

# the commonest Chinese characters in running text (the first hundred or so of a frequency list), and 猫, the
# article's cat
COMMON = ("的一是不了人我在有他这中大来上个们到说国和地也子时道出而要于就下得可你年生自会那"
          "后能对着事其里所去行过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学"
          "进种将还分此心前面又定见只主没公从猫")
WHOLE = 0.9  # the share of them that must be tokens of their own


def reads_chinese(fp: LoadedModel) -> bool:
    """Whether `fp`'s vocabulary holds the common characters whole: at least WHOLE of them encode as one token each
    (SmolLM2: about a third; Gemma 3: all)."""
    encode = fp.tokenizer.encode_text
    return sum(len(encode(c)) == 1 for c in COMMON) >= WHOLE * len(COMMON)

# the Chinese page's own prompt, on a model that reads Chinese (static/lib/state.js): the English page's cat, in Chinese
CHINESE_PROMPT = "猫坐在垫子上，然后猫睡着了。"


def in_chinese(asks: list[tuple[str, BaseModel]], english_prompt: str, model: str) -> list[tuple[str, BaseModel]]:
    """The Chinese page's requests for the English page's `asks`, on `model`: the page's prompt and the toy example in
    Chinese (a request on a prompt of its own, such as the ring's, stays as it is)."""
    out = []
    for path, body in asks:
        change: dict = {"model": model}
        if getattr(body, "prompt", None) == english_prompt:
            change["prompt"] = CHINESE_PROMPT
        if hasattr(body, "toy"):
            change["toy"] = "zh"
        out.append((path, body.model_copy(update=change)))
    return out
