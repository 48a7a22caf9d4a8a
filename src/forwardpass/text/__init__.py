"""Tokenizers, chat templates and detokenizing: text to ids and back."""
