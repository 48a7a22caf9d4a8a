"""bench/speculative.py's measure of how much of an answer copies the text before it (what drafting could keep at
most)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).parent.parent / "bench"


def load_speculative():
    # its sibling modules (common, agent_loop) by their names, as the script runs; bench/ leaves sys.path after
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("bench_speculative", BENCH / "speculative.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_copied_counts_the_answer_tokens_that_end_a_stretch_seen_before():
    s = load_speculative()
    prompt = list(range(100, 120))
    assert s.copied([(prompt, prompt[:12])], n=4) == 9 / 12  # a quote: every token from its 4th on
    assert s.copied([(prompt, list(range(200, 212)))], n=4) == 0.0  # new text
    assert s.copied([(prompt, [7, 8, 9] * 4)], n=4) == 6 / 12  # a loop: from its 7th token on, each ends a 4-token
    # stretch the answer already gave
    assert s.copied([(prompt, prompt[:3])], n=4) == 0.0  # shorter than a stretch
    both = [(prompt, prompt[:12]), (prompt, list(range(200, 212)))]
    assert s.copied(both, n=4) == 9 / 24
    other = list(range(300, 310))  # an earlier request's answer counts, as a drafter's history holds it
    assert s.copied([(prompt, list(range(50, 62))), (other, list(range(50, 62)))], n=4) == 9 / 24
