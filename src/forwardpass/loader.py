"""Loading a model (seed §00's pipeline: text in, logits out): `load()` checks its options, opens the file once,
and reads it into the native step's model where that applies, else builds the PyTorch one from the same opened file."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from . import kernels
from .config import ACTIVATIONS, KV_CACHE_DTYPES, STORAGE_MODES
from .devices import has_gpu, resolve_device, resolve_dtype, torch_module
from .errors import ForwardpassError
from .kv_q8_0 import row_bytes
from .loop import LLM
from .packaged import default_model_path, resolve_model
from .weights import checkpoint_of, return_freed_memory
from .weights.opened import OpenedModel, open_model
from .weights.torch_model import build_model, shorten_context, storage_of

if TYPE_CHECKING:  # the PyTorch model is built only where it is asked for (backend="torch", or where native cannot)
    import torch

BACKENDS = ("torch", "native", "auto")  # load's backend: the PyTorch model, the native one, native where it applies


def load(path: str | Path | None = None, device: str | torch.device | None = "cpu",
         dtype: str | torch.dtype | None = None, checked: bool = False, progress: bool = False,
         storage: str | None = None, kv_cache_dtype: str = "auto", ctx_size: int | None = None,
         backend: str = "torch", activations: str = "exact") -> LLM:
    """Load a model file (default: the embedded SmolLM2-135M-Instruct GGUF) onto `device`.

    `backend` "torch" builds the PyTorch Transformer (the reference, and the seed's loop: `fp.model(x, cache)`);
    "native" reads a GGUF file straight into the native step's model without importing PyTorch (on a CPU whose kernels
    build, a family the native step runs, the stored weights; refused with the reason otherwise); "auto" is native
    where it applies, else torch (what the commands use).
    `storage` (default "stored") keeps float32 arithmetic and stores the linear layers' weights as the file
    does (where the native kernels run them: on the CPU; elsewhere "stored" means fp32), or as fp32, bf16, fp16,
    int8 (blocks of 32) or q4 (4-bit blocks). `dtype` instead makes every tensor,
    and all arithmetic, that dtype (give one or the other). On the CPU the engine runs a float32 model through
    the native step (engine/native_step.py) where it applies. `kv_cache_dtype` stores the engine's KV pairs as float32,
    float16 (half the memory and the bytes attention reads; each pair rounded once) or q8_0 (blocks of 32 int8 values
    and a float16 scale: 34 bytes per 32 numbers, a head_dim multiple of 32); "auto" is float16 where the weights are
    quantized blocks, else the model's dtype (LoadedModel.kv_format).
    `ctx_size` (None or 0: the model's trained context) limits the tokens a sequence holds, prompt and reply together:
    it becomes config.context_length, at most the trained one (never stretched past the positions it was trained on).
    `activations` "exact" (the default) multiplies integer weights by activation rows quantized to 15 bits, two
    products per weight byte, which keeps the float32 reference's tokens; "q8" quantizes them to 8-bit blocks of 32 as
    llama.cpp does for the same weights (one product per weight byte: faster where a step has several rows, a small
    change in the logits: BENCHMARKS.md's accuracy table). It needs integer weights run by the native kernels."""
    if ctx_size is not None and (not isinstance(ctx_size, int) or ctx_size < 0):
        raise ForwardpassError(f"ctx_size must be a number of tokens ≥ 0 (0: the model's own), got {ctx_size!r}")
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise ForwardpassError(f"unknown KV cache dtype {kv_cache_dtype!r}; choose from {', '.join(KV_CACHE_DTYPES)}")
    if storage is not None and storage not in STORAGE_MODES:
        raise ForwardpassError(f"unknown storage {storage!r}; choose from {', '.join(STORAGE_MODES)}")
    if storage is not None and dtype is not None:
        raise ForwardpassError("give a storage mode or a dtype, not both")
    if activations not in ACTIVATIONS:
        raise ForwardpassError(f"unknown activations {activations!r}; choose from {', '.join(ACTIVATIONS)}")
    if activations != "exact" and (dtype is not None or storage in ("fp32", "bf16", "fp16")):
        raise ForwardpassError(f"activations {activations} quantizes the rows that multiply integer weights; "
                               f"{'dtype ' + str(dtype) if dtype is not None else 'storage ' + storage} has none "
                               "(use storage stored, int8 or q4)")
    if backend not in BACKENDS:
        raise ForwardpassError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    path = default_model_path() if path is None else resolve_model(path)
    opened = open_model(path)  # the one read of the file: both back ends build from it
    trained = opened.config.context_length
    if ctx_size and ctx_size > trained:
        raise ForwardpassError(f"ctx_size {ctx_size} exceeds the model's trained context length {trained}")
    if kv_cache_dtype == "q8_0":
        row_bytes(opened.config.head_dim, "q8_0")  # refuses a head_dim that is no whole number of blocks
    why = "the PyTorch model was asked for" if backend == "torch" else native_refusal(
        path, device, dtype, checked, storage)
    if why is None:
        from .weights.native_read import NotNative, read_native

        try:
            model, tokenizer, metadata = read_native(opened, ctx_size, progress)
            return with_activations(LLM(model, tokenizer, str(path), metadata, kv_cache_dtype, trained), activations)
        except NotNative as e:
            why = str(e)
    if backend == "native":
        raise ForwardpassError(f"{path}: the native loader does not apply: {why}")
    torch_module(f"loading {path.name} ({why})")
    loaded = load_torch(opened, device, dtype, checked, progress, storage, kv_cache_dtype, ctx_size)
    return with_activations(loaded, activations)


def activations_code(activations: str) -> int:
    """abi.h's code for an ACTIVATIONS mode (Model.activations, gemv's last argument)."""
    return {"exact": kernels.abi.ACT_EXACT, "q8": kernels.abi.ACT_Q8}[activations]


def with_activations(loaded: LLM, activations: str) -> LLM:
    """The loaded model with its integer products' activation rows quantized as `activations` says (ACTIVATIONS):
    the native model's Model.activations, or each QuantizedLinear's. Refused where no product would change: float
    weights, or weights the native kernels do not run (another device, a CPU they do not build for)."""
    loaded.metadata["activations"] = activations  # beside "storage": how the weights are used, as loaded
    if activations == "exact":
        return loaded
    if loaded.native:
        if not loaded.model.quantized:
            raise ForwardpassError(f"activations {activations} quantizes the rows that multiply integer weights; "
                                   f"{Path(loaded.source).name} stores none")
        loaded.model.spec.activations = activations_code(activations)
        return loaded
    from .quant import QuantizedLinear

    layers = [m for m in loaded.model.modules() if isinstance(m, QuantizedLinear)]
    if not layers or not all(m.fast for m in layers):
        where = "these weights hold no integer blocks" if not layers else "the native kernels do not run here"
        raise ForwardpassError(f"activations {activations} needs integer weights run by the native kernels; {where}")
    for m in layers:
        m.activations = activations_code(activations)
    return loaded


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


def load_torch(opened: OpenedModel, device, dtype, checked: bool, progress: bool, storage: str | None,
               kv_cache_dtype: str, ctx_size: int | None) -> LLM:
    """`load` with the PyTorch model, built from the opened file."""
    dev = resolve_device(device)
    checkpoint = checkpoint_of(opened, progress)
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
    loaded = LLM(model, checkpoint.tokenizer, checkpoint.source, checkpoint.metadata | {"storage": mode},
                 kv_cache_dtype, trained)
    del checkpoint  # its tensors (and the file's map) go; what they left on the heap goes back to the system
    return_freed_memory()
    model.checked = checked
    return loaded
