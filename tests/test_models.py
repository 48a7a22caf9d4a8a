"""The family registry (models/): a checkpoint's family is the architecture it declares, and a family file holds
everything family-specific, so a new GGUF layout (here a test-only family storing Q, K, V fused and gate, up stacked in
one double-width ffn_up, as Phi-3's files do) loads with no reader changed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from gguf import GGUFWriter
from gguf_files import add_shape

import forwardpass
from forwardpass import models
from forwardpass.errors import UnsupportedModelError
from forwardpass.models import Family, llama
from forwardpass.models.family import TensorMap, stored
from forwardpass.models.gemma3 import GEMMA3
from forwardpass.models.llama import LLAMA

PACKAGE = Path(forwardpass.__file__).parent / "models"


def test_a_family_is_found_by_the_architecture_a_file_declares():
    assert models.by_model_type("gemma3_text", "config.json") is GEMMA3
    assert models.by_gguf_arch("gemma3", "m.gguf") is GEMMA3 and models.by_gguf_arch("llama", "m.gguf") is LLAMA
    assert len(set(models.MODEL_TYPES)) == len(models.MODEL_TYPES)
    assert len(set(models.GGUF_ARCHITECTURES)) == len(models.GGUF_ARCHITECTURES)
    listed = re.escape(f"(supported: {', '.join(models.GGUF_ARCHITECTURES)})")
    with pytest.raises(UnsupportedModelError, match=f"m.gguf: GGUF architecture 'mamba' is not supported {listed}"):
        models.by_gguf_arch("mamba", "m.gguf")
    assert {"llama", "gemma3"} <= set(models.GGUF_ARCHITECTURES)
    with pytest.raises(UnsupportedModelError, match=r"model_type 'bert' is not supported \(supported: gpt2, "):
        models.by_model_type("bert", "config.json")  # the embedding encoder is no decoder family


def test_family_files_import_only_config_errors_and_each_other():
    """models/ sits below the readers: it never imports weights/, the loader, or PyTorch."""
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 or node.module in ("config", "errors"), (path.name, node.module)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                assert not any(n.split(".")[0] in ("torch", "numpy", "forwardpass") for n in names), path.name


def fused_tensors(config, names: set[str]) -> TensorMap:
    out = {"tok_embeddings.weight": stored("token_embd.weight"), "norm_f.weight": stored("output_norm.weight"),
           "lm_head.weight": stored("output.weight")}
    for i in range(config.n_layers):
        p, b = f"blk.{i}.", f"blocks.{i}."
        theirs = {"attn.qkv": "attn_qkv", "attn.out": "attn_output", "attn_norm": "attn_norm", "ffn_norm": "ffn_norm",
                  "ffn.gate_up": "ffn_up", "ffn.down": "ffn_down"}  # ffn_up: gate and up stacked, gate first
        out |= {f"{b}{ours}.weight": stored(f"{p}{name}.weight") for ours, name in theirs.items()}
    return out


def write_fused_gguf(hf, path: Path) -> None:
    c, sd = hf.config, {k: v.detach() for k, v in hf.state_dict().items()}
    w = GGUFWriter(str(path), "fused")
    add_shape(w, c)
    w.add_vocab_size(c.vocab_size)
    tensors = {"token_embd.weight": sd["model.embed_tokens.weight"], "output_norm.weight": sd["model.norm.weight"],
               "output.weight": sd["lm_head.weight"]}
    for i in range(c.num_hidden_layers):
        m, p = f"model.layers.{i}.", f"blk.{i}."
        tensors |= {p + "attn_qkv.weight": torch.cat([sd[m + f"self_attn.{x}_proj.weight"] for x in "qkv"]),
                    p + "attn_output.weight": sd[m + "self_attn.o_proj.weight"],
                    p + "attn_norm.weight": sd[m + "input_layernorm.weight"],
                    p + "ffn_norm.weight": sd[m + "post_attention_layernorm.weight"],
                    p + "ffn_up.weight": torch.cat([sd[m + "mlp.gate_proj.weight"], sd[m + "mlp.up_proj.weight"]]),
                    p + "ffn_down.weight": sd[m + "mlp.down_proj.weight"]}
    for name, t in tensors.items():
        w.add_tensor(name, t.numpy().astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_a_new_gguf_layout_is_one_family_file(tmp_path, monkeypatch):
    torch.manual_seed(3)
    cfg = transformers.LlamaConfig(vocab_size=61, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                   rms_norm_eps=1e-5, tie_word_embeddings=False)
    hf = transformers.LlamaForCausalLM(cfg).eval()
    write_fused_gguf(hf, tmp_path / "fused.gguf")
    with pytest.raises(UnsupportedModelError, match="architecture 'fused' is not supported"):
        forwardpass.load(tmp_path / "fused.gguf")
    fused = Family("Fused", gguf_arch="fused", gguf_config=llama.gguf_config, gguf_tensors=fused_tensors)
    monkeypatch.setattr(models, "FAMILIES", (*models.FAMILIES, fused))
    fp = forwardpass.load(tmp_path / "fused.gguf").model
    ids = torch.randint(0, 61, (1, 10))
    with torch.inference_mode():
        assert (fp(ids)[0] - hf(ids).logits).abs().max().item() <= 1e-4
