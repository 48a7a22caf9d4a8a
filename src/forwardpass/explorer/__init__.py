"""The interactive explorer: the article's widgets in a browser, every number computed by the engine."""
