"""forwardpass: a transformer inference engine you can read.

    import forwardpass
    fp = forwardpass.load()                       # the embedded SmolLM2-135M-Instruct
    logits, cache = fp.model(x, cache)            # the seed's loop, one call
"""

from .config import PRESETS, ModelConfig, preset
from .errors import ContextLengthError, ForwardpassError, InvariantError, ModelFileError, TokenIdError
from .kv_cache import KVCache
from .model import Transformer
from .pipeline import Pipeline, default_model_path, load
from .tokenizer import Tokenizer

__all__ = [
    "PRESETS", "ContextLengthError", "ForwardpassError", "InvariantError", "KVCache", "ModelConfig",
    "ModelFileError", "Pipeline", "TokenIdError", "Tokenizer", "Transformer", "default_model_path", "load", "preset",
]
