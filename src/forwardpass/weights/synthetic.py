"""A Llama-shaped GGUF file of any size with random weights, for measuring and testing what real files of that
size cost (load time, memory, decode rate) where none can be downloaded. Weight matrices are random blocks of a
chosen format (Q4_0, Q4_K, …) with small fp16 scales; norms are ones; the tokenizer is the default model's. The
numbers it produces mean nothing; its shapes and bytes are those of a real model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType, GGUFWriter

from .gguf_file import GGUFFile

# TinyLlama-1.1B's shape, with the default model's 49,152-token vocabulary: 1.17 B parameters
SHAPE_1B = {"d_model": 2048, "n_layers": 22, "n_heads": 32, "n_kv_heads": 4, "ffn_hidden": 5632, "context": 2048}
SCALE_AT = {GGMLQuantizationType.Q4_0: [(0, 0.002)], GGMLQuantizationType.Q5_0: [(0, 0.001)],
            GGMLQuantizationType.Q8_0: [(0, 0.0002)],
            GGMLQuantizationType.Q4_K: [(0, 0.0002), (2, 0.0015)],
            GGMLQuantizationType.Q5_K: [(0, 0.0001), (2, 0.0015)],
            GGMLQuantizationType.Q6_K: [(208, 0.00005)]}  # (byte of an fp16 scale, its size)
# llama.cpp's Q4_K_M mix, simplified: Q4_K but for V, the FFN's down projection and the output table in Q6_K
Q4_K_M = {"attn_v.weight": GGMLQuantizationType.Q6_K, "ffn_down.weight": GGMLQuantizationType.Q6_K,
          "output.weight": GGMLQuantizationType.Q6_K}
MIXES = {"Q4_K_M": (GGMLQuantizationType.Q4_K, Q4_K_M)}  # a mix's name → (its main format, the rest)


def file_format(name: str) -> tuple[GGMLQuantizationType, dict[str, GGMLQuantizationType] | None]:
    """A file format by name: a block format ("Q4_0") or a mix ("Q4_K_M"), as write_synthetic_gguf's kind and
    mixed."""
    name = name.upper()
    if name in MIXES:
        return MIXES[name]
    if name not in GGMLQuantizationType.__members__:
        raise ValueError(f"unknown format {name} (a GGUF block format such as Q4_0, or one of {', '.join(MIXES)})")
    return GGMLQuantizationType[name], None


def random_blocks(rows: int, cols: int, kind: GGMLQuantizationType, rng: np.random.Generator) -> np.ndarray:
    """(rows, row bytes) of random `kind` blocks whose fp16 scales are small and positive."""
    block, size = GGML_QUANT_SIZES[kind]
    raw = rng.integers(0, 256, (rows * cols // block, size), dtype=np.uint8)
    for at, scale in SCALE_AT.get(kind, []):  # other formats: random bytes throughout
        raw[:, at:at + 2] = (scale * (0.5 + rng.random((len(raw), 1)))).astype(np.float16).view(np.uint8)
    return raw.reshape(rows, -1)


def write_synthetic_gguf(path: str | Path, tokenizer_from: str | Path, kind=GGMLQuantizationType.Q4_0,
                         d_model: int = 2048, n_layers: int = 22, n_heads: int = 32, n_kv_heads: int = 4,
                         ffn_hidden: int = 5632, context: int = 2048, seed: int = 0,
                         rope_freqs: np.ndarray | None = None,
                         mixed: dict[str, GGMLQuantizationType] | None = None) -> Path:
    """Write the file tensor by tensor (memory holds one at a time); returns its path. `rope_freqs`: a
    `rope_freqs.weight` tensor (head_dim / 2 divisors of the RoPE frequencies, as Llama 3 files carry). `mixed`: the
    format of each weight whose name ends as a key does (Q4_K_M), instead of `kind`."""
    source = GGUFFile(Path(tokenizer_from))
    vocab = len(source.fields["tokenizer.ggml.tokens"])
    w = GGUFWriter(str(path), "llama")
    w.add_name(f"synthetic-llama-{kind.name}")
    w.add_context_length(context)
    w.add_embedding_length(d_model)
    w.add_block_count(n_layers)
    w.add_feed_forward_length(ffn_hidden)
    w.add_head_count(n_heads)
    w.add_head_count_kv(n_kv_heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(vocab)
    for key, value in source.fields.items():
        if key.startswith("tokenizer."):
            vtype, item = source.types[key]
            w.add_key_value(key, value, GGUFValueType(vtype), None if item is None else GGUFValueType(item))
    head_dim = d_model // n_heads
    shapes = {"token_embd.weight": (vocab, d_model), "output_norm.weight": (d_model,),
              "output.weight": (vocab, d_model)}
    for i in range(n_layers):
        p = f"blk.{i}."
        shapes |= {p + "attn_norm.weight": (d_model,), p + "ffn_norm.weight": (d_model,),
                   p + "attn_q.weight": (d_model, d_model), p + "attn_k.weight": (n_kv_heads * head_dim, d_model),
                   p + "attn_v.weight": (n_kv_heads * head_dim, d_model), p + "attn_output.weight": (d_model, d_model),
                   p + "ffn_gate.weight": (ffn_hidden, d_model), p + "ffn_up.weight": (ffn_hidden, d_model),
                   p + "ffn_down.weight": (d_model, ffn_hidden)}
    given = {} if rope_freqs is None else {"rope_freqs.weight": np.asarray(rope_freqs, np.float32)}
    shapes |= {name: t.shape for name, t in given.items()}
    kinds = {name: next((k for end, k in (mixed or {}).items() if name.endswith(end)), kind) for name in shapes}
    for name, shape in shapes.items():
        if len(shape) == 1:
            w.add_tensor_info(name, shape, np.dtype(np.float32), 4 * shape[0])
        else:
            block, size = GGML_QUANT_SIZES[kinds[name]]
            w.add_tensor_info(name, (shape[0], shape[1] // block * size), np.dtype(np.uint8),
                              shape[0] * shape[1] // block * size, raw_dtype=kinds[name])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for name, shape in shapes.items():
        data = given.get(name, np.ones(shape, np.float32)) if len(shape) == 1 else random_blocks(*shape, kinds[name],
                                                                                                  rng)
        w.write_tensor_data(data)
    w.close()
    return Path(path)
