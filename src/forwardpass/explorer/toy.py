"""The article's toy example in each of the page's languages: a sentence with a blank after it, five candidates for
the blank and their made-up scores (the seed's §03: "the cat sat on the ___", mat 4.0). The Chinese page tells the
same story in Chinese, with the same five scores, so every number the article derives from them holds there too."""

from __future__ import annotations

from dataclasses import dataclass

from ..sampling import SEED_CANDIDATES


@dataclass(frozen=True)
class Toy:
    sentence: str  # the words before the blank
    words: dict[str, float]  # each candidate → its made-up score (logit)
    space: str  # what separates the sentence from a word: a space in English, nothing in Chinese


TOYS = {
    "en": Toy("the cat sat on the", SEED_CANDIDATES, " "),
    "zh": Toy("猫坐在", dict(zip(["垫子", "地毯", "地板", "沙发", "屋顶"], SEED_CANDIDATES.values(), strict=True)), ""),
}


def toy_of(sentence: str) -> Toy:
    """The toy whose sentence this is; any other sentence is followed by the English five words."""
    return next((t for t in TOYS.values() if t.sentence == sentence), TOYS["en"])
