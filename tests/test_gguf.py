"""GGUF loading: any Llama-family file (written here from random weights) and its error paths."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from gguf_files import write_llama_gguf

import forwardpass
from forwardpass.errors import ModelFileError, UnsupportedModelError


@pytest.fixture(scope="module")
def tiny_llama():
    torch.manual_seed(7)
    cfg = transformers.LlamaConfig(vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                   rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
    hf = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.05)
            p.copy_(p.half().float())  # representable in fp16, so an F16 file holds exactly these weights
    return hf


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_llama_gguf_matches_transformers(tiny_llama, tmp_path, dtype):
    path = tmp_path / "tiny.gguf"
    write_llama_gguf(tiny_llama, path, dtype=dtype)
    fp = forwardpass.load(path).model
    ids = torch.randint(0, 97, (1, 12))
    with torch.inference_mode():
        got, _ = fp(ids)
        want = tiny_llama(ids).logits
    assert (got - want).abs().max().item() <= 1e-4


def test_unsupported_architecture(tiny_llama, tmp_path):
    path = tmp_path / "other.gguf"
    write_llama_gguf(tiny_llama, path, arch="mamba")
    with pytest.raises(UnsupportedModelError, match="architecture 'mamba' is not supported"):
        forwardpass.load(path)


def test_missing_tensor(tiny_llama, tmp_path):
    path = tmp_path / "partial.gguf"
    write_llama_gguf(tiny_llama, path, drop="blk.1.ffn_up.weight")
    with pytest.raises(ModelFileError, match="lacks tensor blk.1.ffn_up.weight"):
        forwardpass.load(path)


@pytest.mark.parametrize("size,where", [(5_000_000, "tensor token_embd.weight runs past the end"),
                                       (100_000, "inside its header")])
def test_truncated_file(tmp_path, size, where):
    src = forwardpass.default_model_path()
    path = tmp_path / "cut.gguf"
    path.write_bytes(src.read_bytes()[:size])
    with pytest.raises(ModelFileError, match=f"truncated GGUF file .*{where}"):
        forwardpass.load(path)


def test_header_only_file(tmp_path):
    path = tmp_path / "stub.gguf"
    path.write_bytes(b"GGUF\x03\x00")
    with pytest.raises(ModelFileError, match="truncated GGUF file"):
        forwardpass.load(path)


def test_not_a_gguf_file(tmp_path):
    path = tmp_path / "notes.gguf"
    path.write_text("hello, I am a text file")
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        forwardpass.load(path)


def test_missing_file(tmp_path):
    with pytest.raises(ModelFileError, match="model file not found"):
        forwardpass.load(tmp_path / "nothing.gguf")


def test_the_type_table_is_ggufs_own_and_reading_a_file_does_not_import_gguf():
    """weights/ggml.py holds every type `gguf` names, with its id and block size; reading a file's metadata and
    tensors needs neither `gguf` nor PyTorch (the product path starts without either)."""
    import subprocess
    import sys

    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    from forwardpass.weights.ggml import BLOCK_SIZES, GGMLType

    assert {t.name: t.value for t in GGMLQuantizationType} == {t.name: t.value for t in GGMLType}
    assert {t.value: size for t, size in GGML_QUANT_SIZES.items()} == {t.value: s for t, s in BLOCK_SIZES.items()}
    code = ("import sys; from forwardpass.weights.native_read import read_native; from forwardpass.packaged import "
            "default_model_path; from forwardpass.weights.opened import open_model; "
            "read_native(open_model(default_model_path())); "
            "print(sorted({'gguf', 'torch'} & set(sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr
