"""forwardpass: a transformer inference engine you can read.

    import forwardpass
    fp = forwardpass.load()                       # the embedded SmolLM2-135M-Instruct
    logits, cache = fp.model(x, cache)            # the seed's loop, one call
    forwardpass.generate(fp, "Once upon a time", forwardpass.SamplingParams(temperature=0.7, seed=1))
"""

from . import cost
from .config import PRESETS, ModelConfig, preset
from .errors import ContextLengthError, ForwardpassError, InvariantError, ModelFileError, TokenIdError
from .generate import Generation, GenerationResult, generate
from .kv_cache import KVCache
from .model import Transformer
from .pipeline import Pipeline, default_model_path, load
from .sampling import SamplingParams
from .tokenizer import Tokenizer

__all__ = [
    "PRESETS", "ContextLengthError", "ForwardpassError", "Generation", "GenerationResult", "InvariantError", "KVCache",
    "ModelConfig", "ModelFileError", "Pipeline", "SamplingParams", "TokenIdError", "Tokenizer", "Transformer", "cost",
    "default_model_path", "generate", "load", "preset",
]
