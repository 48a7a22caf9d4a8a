"""Errors that carry a one-line message for the user; the CLI prints them without a traceback."""


class ForwardpassError(Exception):
    """Base class: the message names the problem in one line; `param`, where a request's field is at fault, names
    it (the server's error body says which)."""

    def __init__(self, message: str = "", param: str | None = None):
        super().__init__(message)
        self.param = param


class ModelFileError(ForwardpassError):
    """A model file is missing, truncated, of the wrong kind, or holds the wrong tensors."""


class UnsupportedModelError(ForwardpassError):
    """The file is readable but describes an architecture forwardpass does not implement."""


class ContextLengthError(ForwardpassError):
    """A sequence would grow past the model's context length or the cache's capacity."""


class TokenIdError(ForwardpassError):
    """Token ids outside the vocabulary."""


class TokenizerError(ForwardpassError):
    """Text the model's vocabulary cannot represent."""


class InvariantError(ForwardpassError):
    """Checked mode found one of the seed's invariants broken."""


class EngineUnavailableError(ForwardpassError):
    """The engine takes no new requests: it is shutting down, or its loop failed."""


class ConstraintError(ForwardpassError):
    """A structured-output constraint (schema, regular expression, grammar) that cannot be enforced."""
