"""A checkpoint's tensors → the PyTorch Transformer, built only where the PyTorch model is asked for (or the native
step cannot run the file): each tensor's presence and shape checked first, each linear layer stored as its storage
mode says, tensor by tensor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import STORAGE_MODES
from ..errors import ForwardpassError, ModelFileError
from . import Checkpoint, is_blocks, resolve, return_freed_memory
from .progress import track

if TYPE_CHECKING:
    import torch

    from ..model import Transformer


def build_model(checkpoint: Checkpoint, device: torch.device, dtype: torch.dtype | None = None,
                storage: torch.dtype | int | None | str = "dtype", progress: bool = False) -> Transformer:
    """A Transformer holding the checkpoint's tensors; every tensor's presence and shape checked first.

    storage "dtype": every tensor, and all arithmetic, in `dtype`. Otherwise float32 arithmetic, with each linear
    layer's weight stored as `storage` (quant.make_linear; None: as the file stores it), built tensor by tensor:
    the model never exists as a float32 copy on the way."""
    import torch

    from ..model import RotaryEmbedding, Transformer
    from ..quant import QuantizedEmbedding, as_float, make_linear

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
        from ..quant import as_float

        checkpoint.tensors["pos_embeddings.weight"] = as_float(resolve(table))[:ctx_size].clone()
