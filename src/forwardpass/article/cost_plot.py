"""The seed's cost curves as one PNG (matplotlib): where a curve says more than a table."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .. import cost  # noqa: E402
from ..config import ModelConfig  # noqa: E402


def plot(c: ModelConfig, context: int, dtype: str, path: str) -> None:
    kv_dtype = dtype if dtype in ("fp32", "fp16", "bf16") else "fp16"
    fig, ax = plt.subplots(2, 3, figsize=(15, 8.5))
    fig.suptitle(f"{c.name}: what the forward pass costs (weights {dtype}, KV cache {kv_dtype})")

    depths = list(range(1, 2 * c.n_layers + 1))
    unit, unit_name = (1e9, "billions") if cost.parameters(c).total > 5e9 else (1e6, "millions")
    ax[0, 0].plot(depths, [cost.parameters(c.with_(n_layers=n)).total / unit for n in depths])
    ax[0, 0].axvline(c.n_layers, ls=":", c="grey")
    ax[0, 0].set(title="parameters vs depth N (a straight line)", xlabel="N blocks", ylabel=f"parameters ({unit_name})")

    tokens = list(range(0, context + 1, max(1, context // 64)))
    ax[0, 1].plot(tokens, [cost.kv_bytes(c, t, kv_dtype) / cost.GiB for t in tokens])
    ax[0, 1].set(title="KV cache of one sequence vs context", xlabel="tokens", ylabel="GiB")

    cross = cost.crossover_sequences(c, context, kv_dtype)
    seqs = list(range(1, max(2 * cross, 10) + 1))
    ax[0, 2].plot(seqs, [cost.kv_bytes(c, context, kv_dtype, s) / cost.GiB for s in seqs], label="KV caches")
    ax[0, 2].axhline(cost.weight_bytes(c, dtype) / cost.GiB, c="C1", label="weights (paid once)")
    ax[0, 2].axvline(cross, ls=":", c="grey", label=f"{cross} sequences")
    ax[0, 2].set(title=f"weights vs caches at {context:,} tokens each", xlabel="concurrent sequences", ylabel="GiB")
    ax[0, 2].legend()

    prompt, new = 20, 100
    steps = list(range(1, new + 1))
    ax[1, 0].plot(steps, [cost.naive_work(prompt, n) for n in steps], label="naive (quadratic)")
    ax[1, 0].plot(steps, [cost.cached_work(prompt, n) for n in steps], label="cached (linear)")
    ax[1, 0].set(title=f"cumulative token-work, P = {prompt}", xlabel="generated tokens", ylabel="tokens processed")
    ax[1, 0].legend()

    prompts = list(range(1, 257))
    ax[1, 1].plot(prompts, [cost.intensity(c, p, dtype) for p in prompts])
    ax[1, 1].axhline(cost.intensity(c, 1, dtype), ls=":", c="grey", label="decode")
    ax[1, 1].set(title="arithmetic intensity vs prompt length", xlabel="P tokens in one step",
                 ylabel="FLOPs per byte of weights")
    ax[1, 1].legend()

    p = cost.parameters(c)
    parts = {"embeddings": p.embeddings + p.positions + p.unembedding, "attention": p.attention, "FFN": p.ffn,
             "norms": p.norms}
    bars = ax[1, 2].barh(list(parts), [v / p.total * 100 for v in parts.values()])
    ax[1, 2].bar_label(bars, fmt="%.1f%%")
    ax[1, 2].set(title="where the parameters live", xlabel="% of all parameters", xlim=(0, 110))

    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
