"""forwardpass: a transformer inference engine you can read.

    import forwardpass
    fp = forwardpass.load()                       # the embedded SmolLM2-135M-Instruct
    logits, cache = fp.model(x, cache)            # the seed's loop, one call
    forwardpass.generate(fp, "Once upon a time", forwardpass.SamplingParams(temperature=0.7, seed=1))

The names whose modules need PyTorch are imported on first use: `import forwardpass`, and every command that
refuses its options or only reads a file's metadata, start without it.
"""

from .article import cost
from .config import PRESETS, ModelConfig, preset
from .errors import ContextLengthError, ForwardpassError, InvariantError, ModelFileError, TokenIdError
from .lazy_imports import lazy_names
from .packaged import default_model_path

LAZY = {"Generation": "loop", "GenerationResult": "loop", "generate": "loop", "LLM": "loop", "KVCache": "kv_cache",
        "Transformer": "model", "LoadedModel": "loaded", "load": "loader", "SamplingParams": "sampling_params",
        "Tokenizer": "text.tokenizer"}

__getattr__ = lazy_names(__name__, LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(LAZY))


__all__ = [
    "LLM", "PRESETS", "ContextLengthError", "ForwardpassError", "Generation", "GenerationResult", "InvariantError",
    "KVCache", "LoadedModel", "ModelConfig", "ModelFileError", "SamplingParams", "TokenIdError", "Tokenizer",
    "Transformer", "cost", "default_model_path", "generate", "load", "preset",
]
