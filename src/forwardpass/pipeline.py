"""Loading a model (seed §00's pipeline: text in, logits out): `load()` reads a file and builds a LoadedModel."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import kernels
from .config import KV_CACHE_DTYPES, STORAGE_MODES, ModelConfig
from .errors import ContextLengthError, ForwardpassError, ModelFileError
from .kv_q8_0 import row_bytes, torch_dtype
from .packaged import default_model_path, resolve_model
from .tokenizer import Tokenizer
from .weights import Checkpoint, is_blocks, read_checkpoint, resolve, return_freed_memory
from .weights.progress import track

if TYPE_CHECKING:  # the PyTorch model is built only where it is asked for (backend="torch", or where native cannot)
    import torch

    from .engine.native_model import NativeModel
    from .model import Transformer

BACKENDS = ("torch", "native", "auto")  # load's backend: the PyTorch model, the native one, native where it applies
INSTALL_TORCH = "pip install 'forwardpass[torch]' (the CPU build: pip install torch==2.13.0)"


def torch_module(why: str):
    """PyTorch, imported for `why`; where it is not installed, a ForwardpassError saying so in one line."""
    try:
        import torch
    except ImportError as e:
        raise ForwardpassError(f"{why} needs PyTorch, which cannot be imported ({e}): {INSTALL_TORCH}") from None
    from .kernels.team import most_threads

    torch.set_num_threads(most_threads())  # --threads, where it was given before PyTorch was imported
    return torch


def has_gpu() -> bool:
    """Whether this machine shows an NVIDIA GPU to its processes, without importing PyTorch to ask."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidia0")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """'cpu', 'cuda', 'cuda:1', … or None for the best available; a clear error if it does not exist."""
    torch = torch_module(f"device {device!r}")
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ForwardpassError(f"unknown device {device!r} (try 'cpu' or 'cuda')") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ForwardpassError(f"device {device!r} requested but CUDA is not available on this machine")
    return dev


DTYPES = ("float32", "fp32", "bfloat16", "bf16", "float16", "fp16")  # --dtype's names


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    torch = torch_module(f"dtype {dtype!r}")
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ForwardpassError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype) or getattr(torch, dtype)


def build_model(checkpoint: Checkpoint, device: torch.device, dtype: torch.dtype | None = None,
                storage: torch.dtype | int | None | str = "dtype", progress: bool = False) -> Transformer:
    """A Transformer holding the checkpoint's tensors; every tensor's presence and shape checked first.

    storage "dtype": every tensor, and all arithmetic, in `dtype`. Otherwise float32 arithmetic, with each linear
    layer's weight stored as `storage` (quant.make_linear; None: as the file stores it), built tensor by tensor:
    the model never exists as a float32 copy on the way."""
    import torch

    from .model import RotaryEmbedding, Transformer
    from .quant import QuantizedEmbedding, as_float, make_linear

    dtype = dtype or torch.float32
    config = checkpoint.config
    with torch.device("meta"):
        model = Transformer(config)
    expected = model.state_dict()
    if config.tied_embeddings:
        expected.pop("lm_head.weight")
    for name, want in expected.items():
        got = checkpoint.tensors.get(name)
        if got is None:
            raise ModelFileError(f"{checkpoint.source}: checkpoint is missing tensor {name}")
        if tuple(got.shape) != tuple(want.shape):
            raise ModelFileError(f"{checkpoint.source}: tensor {name} has shape {tuple(got.shape)}, "
                                 f"expected {tuple(want.shape)}")
    linears = {} if storage == "dtype" else {
        name: module for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)}
    if storage != "dtype":
        dtype = torch.float32
    table = checkpoint.tensors["tok_embeddings.weight"]
    blocks_table = storage is None and is_blocks(table)  # stored mode: no float32 copy of a block-format table
    state = {k: as_float(resolve(checkpoint.tensors[k])).to(device=device, dtype=dtype) for k in expected
             if k.rpartition(".")[0] not in linears and not (k == "tok_embeddings.weight" and blocks_table)}
    model.load_state_dict(state, strict=False, assign=True)  # norms (and a float table): the linears come next
    if config.tied_embeddings and storage == "dtype":
        model.lm_head.weight = model.tok_embeddings.weight
    for name in track(linears, "loading", progress):
        if name == "lm_head" and config.tied_embeddings:
            # fp32 shares the table loaded above, as the dtype path does; the other modes store their own copy
            weight = model.tok_embeddings.weight if storage == torch.float32 else resolve(table)
        else:
            weight = resolve(checkpoint.tensors[f"{name}.weight"])
        bias = checkpoint.tensors.get(f"{name}.bias")
        bias = None if bias is None else resolve(bias).float()
        parent, _, attr = name.rpartition(".")
        layer = make_linear(weight, bias, storage, head=name == "lm_head").to(device)
        setattr(model.get_submodule(parent), attr, layer)
        del weight
        return_freed_memory()  # this tensor's conversion buffers, before the next one's: the heap stays the model's
    if blocks_table:  # the lookup reads the file's blocks, shared with a tied unembedding
        shared = model.lm_head if config.tied_embeddings else make_linear(resolve(table), None, None).to(device)
        model.tok_embeddings = QuantizedEmbedding(shared)
    if model.rope is not None:
        factors = checkpoint.tensors.get("rope.freq_factors")
        model.rope = RotaryEmbedding(config, None if factors is None else as_float(resolve(factors))).to(device)
    return model.eval()


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

    def complete(self, prompt: str | list[int], stream: bool = False, **sampling):
        """Continue `prompt` (text or ids): the GenerationResult (`.text`, `.token_ids`, `.stop_reason`, …), or with
        `stream` a Generation to iterate for text as it comes (then `.result`). `sampling`: SamplingParams' fields
        (`temperature=0` greedy, `max_tokens`, `stop`, `seed`, …)."""
        from .loop import Generation, generate
        from .sampling import SamplingParams

        params = SamplingParams(**sampling)
        return Generation(self, prompt, params) if stream else generate(self, prompt, params)

    def chat(self, messages: list[dict], stream: bool = False, **sampling):
        """The assistant's reply to `messages` ({"role", "content"} dicts, as the chat API takes them), rendered through
        the model's chat template: as `complete`, whole or streamed."""
        if self.tokenizer is None or not self.tokenizer.chat_template:
            raise ForwardpassError(f"{self.source}: this model has no chat template: use complete(prompt)")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise ForwardpassError("messages must be a list of {'role': …, 'content': …} dicts")
        return self.complete(self.tokenizer.encode_chat(messages, True, None), stream, **sampling)

    def next_token_logits(self, ids: list[int]) -> torch.Tensor:
        """Logits (vocab_size,) for the token after `ids`, in float32 (the PyTorch model's forward pass)."""
        if self.native:
            raise ForwardpassError("next_token_logits runs the PyTorch model: load with backend='torch'")
        import torch

        with torch.inference_mode():
            x = torch.tensor([ids], device=self.device)
            logits, _ = self.model(x, self.model.new_cache(1, len(ids)))
        return logits[0, -1].float()


def storage_of(mode: str):
    """A storage mode → how the linear layers' weights are stored (quant.make_linear); the arithmetic between them is
    float32. "stored": as the file stores them (a quantized file runs in its own precision, through the native
    kernels)."""
    import torch

    return dict(zip(STORAGE_MODES, (None, torch.float32, torch.bfloat16, torch.float16, 8, 4), strict=True))[mode]


def shorten_context(checkpoint: Checkpoint, ctx_size: int) -> None:
    """The checkpoint as a model of `ctx_size` positions: what reads config.context_length (admission, the stop at
    the context, the RoPE tables, the cost) sees the shorter one, and a learned position table keeps its first rows.
    RoPE's frequencies come from the trained context (rope_scaling), so every position computes as before."""
    trained = checkpoint.config.context_length
    if ctx_size > trained:
        raise ForwardpassError(f"ctx_size {ctx_size} exceeds the model's trained context length {trained}")
    checkpoint.config = checkpoint.config.with_(context_length=ctx_size)
    table = checkpoint.tensors.get("pos_embeddings.weight")
    if table is not None:
        from .quant import as_float

        checkpoint.tensors["pos_embeddings.weight"] = as_float(resolve(table))[:ctx_size].clone()


def load(path: str | Path | None = None, device: str | torch.device | None = "cpu",
         dtype: str | torch.dtype | None = None, checked: bool = False, progress: bool = False,
         storage: str | None = None, kv_cache_dtype: str = "auto", ctx_size: int | None = None,
         backend: str = "torch") -> LoadedModel:
    """Load a model file (default: the embedded SmolLM2-135M-Instruct GGUF) onto `device`.

    `backend` "torch" builds the PyTorch Transformer (the reference, and the seed's loop: `fp.model(x, cache)`);
    "native" reads a GGUF file straight into the native step's model without importing PyTorch (on a CPU whose kernels
    build, a family the native step runs, the stored weights; refused with the reason otherwise); "auto" is native
    where it applies, else torch (what the commands use).
    `storage` (default "stored") keeps float32 arithmetic and stores the linear layers' weights as the file
    does (where the native kernels run them: on the CPU; elsewhere "stored" means fp32), or as fp32, bf16, fp16,
    int8 (blocks of 32) or q4 (4-bit blocks). `dtype` instead makes every tensor,
    and all arithmetic, that dtype (give one or the other). On the CPU the engine runs a float32 model through
    the native step (engine/native.py) where it applies. `kv_cache_dtype` stores the engine's KV pairs as float32,
    float16 (half the memory and the bytes attention reads; each pair rounded once) or q8_0 (blocks of 32 int8 values
    and a float16 scale: 34 bytes per 32 numbers, a head_dim multiple of 32); "auto" is float16 where the weights are
    quantized blocks, else the model's dtype (LoadedModel.kv_format).
    `ctx_size` (None or 0: the model's trained context) limits the tokens a sequence holds, prompt and reply together:
    it becomes config.context_length, at most the trained one (never stretched past the positions it was trained on)."""
    if ctx_size is not None and (not isinstance(ctx_size, int) or ctx_size < 0):
        raise ForwardpassError(f"ctx_size must be a number of tokens ≥ 0 (0: the model's own), got {ctx_size!r}")
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise ForwardpassError(f"unknown KV cache dtype {kv_cache_dtype!r}; choose from {', '.join(KV_CACHE_DTYPES)}")
    if storage is not None and storage not in STORAGE_MODES:
        raise ForwardpassError(f"unknown storage {storage!r}; choose from {', '.join(STORAGE_MODES)}")
    if storage is not None and dtype is not None:
        raise ForwardpassError("give a storage mode or a dtype, not both")
    if backend not in BACKENDS:
        raise ForwardpassError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    path = default_model_path() if path is None else resolve_model(path)
    why = "the PyTorch model was asked for" if backend == "torch" else native_refusal(
        path, device, dtype, checked, storage)
    if why is None:
        from .weights.native import NotNative, read_native

        try:
            model, tokenizer, metadata, trained = read_native(path, ctx_size, progress)
            if kv_cache_dtype == "q8_0":
                row_bytes(model.config.head_dim, "q8_0")  # refuses a head_dim that is no whole number of blocks
            return LoadedModel(model, tokenizer, str(path), metadata, kv_cache_dtype, trained)
        except NotNative as e:
            why = str(e)
    if backend == "native":
        raise ForwardpassError(f"{path}: the native loader does not apply: {why}")
    torch_module(f"loading {path.name} ({why})")
    return load_torch(path, device, dtype, checked, progress, storage, kv_cache_dtype, ctx_size)


def native_refusal(path: Path, device, dtype, checked: bool, storage: str | None) -> str | None:
    """Why `load` needs the PyTorch model for these options (None: the native loader may read the file)."""
    if device is None and has_gpu() and importlib.util.find_spec("torch") is not None:
        return "a GPU is present (device None: the best available; without PyTorch the best is the CPU)"
    if device is not None and str(device) != "cpu":
        return f"device {device} (the native step runs on the CPU)"
    if dtype is not None:
        return f"dtype {dtype} (the native step runs the stored weights in float32)"
    if checked:
        return "checked mode (it proves the PyTorch blocks' writes)"
    if storage not in (None, "stored"):
        return f"storage {storage} (the native loader reads the file's own blocks)"
    if path.is_dir() or path.suffix == ".safetensors":
        return "a safetensors checkpoint (the native loader reads GGUF files)"
    return None


def load_torch(path: Path, device, dtype, checked: bool, progress: bool, storage: str | None, kv_cache_dtype: str,
               ctx_size: int | None) -> LoadedModel:
    """`load` with the PyTorch model."""
    dev = resolve_device(device)
    checkpoint = read_checkpoint(path, progress)
    if kv_cache_dtype == "q8_0":
        row_bytes(checkpoint.config.head_dim, "q8_0")  # refuses a head_dim that is no whole number of blocks
    trained = checkpoint.config.context_length
    if ctx_size:
        shorten_context(checkpoint, ctx_size)
    if dtype is not None:
        model, mode = build_model(checkpoint, dev, resolve_dtype(dtype)), str(resolve_dtype(dtype)).split(".")[-1]
    else:
        mode = storage or "stored"
        if mode == "stored" and not (dev.type == "cpu" and kernels.available()):
            mode = "fp32"  # blocks run fast only through the native kernels
        model = build_model(checkpoint, dev, storage=storage_of(mode), progress=progress)
    pipeline = LoadedModel(model, checkpoint.tokenizer, checkpoint.source, checkpoint.metadata | {"storage": mode},
                           kv_cache_dtype, trained)
    del checkpoint  # its tensors (and the file's map) go; what they left on the heap goes back to the system
    return_freed_memory()
    model.checked = checked
    return pipeline
