"""A model as loaded (seed §00's pipeline: text in, logits out): what the engine runs, so it sits below the engine; the
loop's conveniences on it, `complete` and `chat`, are loop.LLM's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .config import ModelConfig
from .errors import ContextLengthError, ForwardpassError, ModelFileError
from .kv_q8_0 import torch_dtype

if TYPE_CHECKING:
    import torch

    from .model import Transformer
    from .text.tokenizer import Tokenizer
    from .weights.native_model import NativeModel


@dataclass
class LoadedModel:
    """A model as `load()` gives it: the model (the PyTorch Transformer, or a NativeModel read without PyTorch), its
    tokenizer, where it came from and how the engine keeps its KV pairs; text in, logits out (seed §00's pipeline:
    tokenize → embedding + position → N blocks → final norm → unembedding → logits)."""

    model: Transformer | NativeModel
    tokenizer: Tokenizer | None
    source: str
    metadata: dict
    kv_cache_dtype: str = "auto"  # the engine's KV pool (KV_CACHE_DTYPES): auto, float32, float16 or q8_0 (kv_format)
    trained_context_length: int | None = None  # the file's own; config.context_length is what load's ctx_size kept

    def __post_init__(self) -> None:
        if self.trained_context_length is None:
            self.trained_context_length = self.config.context_length

    @property
    def config(self) -> ModelConfig:
        return self.model.config

    @property
    def native(self) -> bool:
        """Read without PyTorch: the native step is its only back end."""
        return not hasattr(self.model, "forward")

    @property
    def device(self):
        """Where the model computes: a torch.device, or "cpu" for a native model."""
        return self.model.device

    def kv_format(self) -> str:
        """The format the engine's paged KV pool stores its pairs in, by name: float32, float16, bfloat16 or q8_0
        (attention computes in the model's dtype). "auto": float16 where the linear layers hold quantized blocks
        (stored of a quantized file, int8, q4: their rounding is far coarser than binary16's, llama.cpp's default too),
        else the model's dtype (float32 in the fp32 reference mode)."""
        if self.kv_cache_dtype != "auto":
            return self.kv_cache_dtype
        if self.native:
            return "float16" if self.model.quantized else "float32"
        from .quant import QuantizedLinear

        quantized = any(isinstance(m, QuantizedLinear) for m in self.model.modules())
        dtype = str(self.model.dtype).removeprefix("torch.")
        return "float16" if quantized and dtype == "float32" else dtype

    def kv_dtype(self) -> torch.dtype:
        """kv_format as a PyTorch dtype (q8_0: kv_q8_0.Q8_0)."""
        return torch_dtype(self.kv_format())

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            raise ModelFileError(f"{self.source}: this checkpoint has no tokenizer (no tokenizer.json beside it)")
        ids = self.tokenizer.encode(text)
        if len(ids) > self.config.context_length:
            raise ContextLengthError(f"the prompt is {len(ids)} tokens; the model's context length is "
                                     f"{self.config.context_length}")
        return ids

    def check_prompt(self, ids: list[int]) -> None:
        """A prompt to generate from: at least one token, every id in the vocabulary, room left to generate."""
        context = self.config.context_length
        if not ids:
            raise ForwardpassError("the prompt is empty: generation needs at least one token to start from")
        if self.tokenizer is not None:
            self.tokenizer.check_ids(ids)
        if len(ids) >= context:
            raise ContextLengthError(f"the prompt is {len(ids)} tokens, leaving no room to generate: "
                                     f"the context length is {context}")

    def next_token_logits(self, ids: list[int]) -> torch.Tensor:
        """Logits (vocab_size,) for the token after `ids`, in float32 (the PyTorch model's forward pass)."""
        if self.native:
            raise ForwardpassError("next_token_logits runs the PyTorch model: load with backend='torch'")
        import torch

        with torch.inference_mode():
            x = torch.tensor([ids], device=self.device)
            logits, _ = self.model(x, self.model.new_cache(1, len(ids)))
        return logits[0, -1].float()
