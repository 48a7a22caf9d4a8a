"""Structured output: a grammar's mask on the logits, token by token (llguidance), and what it is given."""
