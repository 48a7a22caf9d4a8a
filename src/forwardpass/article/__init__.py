"""What the article teaches with: the cost of every line, the two silent cache bugs, measuring a machine,
repetition's collapse."""
