"""How often a source's drafts are kept (speculation.py): the draft length is chosen from it."""

from __future__ import annotations

from dataclasses import dataclass

DECAY = 0.9  # the weight of the past in a source's odds and in the step cost's fit, per observation
DEEP_PRIOR = (4.0, 1.0)  # the odds of drafts after a deep match before any was checked: four positions in five kept


@dataclass
class Odds:
    """How often a source's drafted positions are kept: decayed counts of positions kept and of drafts refused."""

    kept: float = 1.0
    refused: float = 1.0

    @property
    def p(self) -> float:
        return self.kept / (self.kept + self.refused)

    def update(self, drafted: int, accepted: int) -> None:
        self.kept = DECAY * self.kept + accepted
        self.refused = DECAY * self.refused + (accepted < drafted)
