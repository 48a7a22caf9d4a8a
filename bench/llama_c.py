"""llama.cpp at its fastest, the anchor every benchmark compares against: its C API through llama-cpp-python's
low-level bindings (one `llama_batch` per step, carrying every sequence's id, as llama.cpp's own server batches),
never the high-level `Llama.generate`, whose Python per token costs llama.cpp about a fifth of its batch-1 rate here.
Greedy: each step's token is the argmax of the row's logits. Imports no PyTorch (a worker's memory is llama.cpp's).

    .venv/bin/python bench/llama_c.py MODEL THREADS   # start to first token of "hi" (bench/startup.py runs this)
"""

from __future__ import annotations

import sys
import time

import numpy as np

_QUIET = None  # the log callback that drops llama.cpp's messages, kept alive as long as llama.cpp may call it


class LlamaCpp:
    """One model file in one llama.cpp context for up to n_seq sequences of up to `positions` positions each
    (llama.cpp's default: a stream of cache cells per sequence, so no sequence's attention reads another's)."""

    def __init__(self, path: str, threads: int, positions: int, n_seq: int = 1, gpu: int | None = None,
                 n_batch: int = 512):
        import llama_cpp as L

        global _QUIET
        self.L = L
        if _QUIET is None:
            _QUIET = L.llama_log_callback(lambda level, text, data: None)
            L.llama_log_set(_QUIET, None)
        L.llama_backend_init()
        model_params = L.llama_model_default_params()
        model_params.n_gpu_layers = -1 if gpu is not None else 0
        model_params.main_gpu = gpu or 0
        self.model = L.llama_model_load_from_file(str(path).encode(), model_params)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        params = L.llama_context_default_params()
        n_ctx = -(-positions // 256) * 256 * n_seq
        params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = n_ctx, n_batch, n_batch, n_seq
        params.n_threads = params.n_threads_batch = threads
        self.ctx = L.llama_init_from_model(self.model, params)
        if not self.ctx:
            raise RuntimeError(f"llama.cpp could not make a context of {positions} positions for {n_seq} sequences")
        self.n_batch = n_batch
        self.batch = L.llama_batch_init(n_batch, 0, n_seq)

    def tokenize(self, text: str) -> list[int]:
        """The text's ids, no BOS added, special tokens read as text (as forwardpass's encode)."""
        data = text.encode()
        room = (self.L.llama_token * (len(data) + 8))()
        n = self.L.llama_tokenize(self.vocab, data, len(data), room, len(room), False, False)
        if n < 0:
            raise RuntimeError(f"llama.cpp could not tokenize {len(data)} bytes")
        return list(room[:n])

    def clear(self) -> None:
        """Forget every sequence's cached positions."""
        self.L.llama_memory_clear(self.L.llama_get_memory(self.ctx), True)

    def decode(self, rows: list[tuple[int, int, int, bool]]) -> list[int]:
        """One llama_decode of rows (token, position, sequence id, wanted): the argmax of each wanted row's logits."""
        b = self.batch
        b.n_tokens = 0
        wanted = []
        for token, position, seq, want in rows:
            i = b.n_tokens
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, position, 1, want
            b.seq_id[i][0] = seq
            b.n_tokens += 1
            if want:
                wanted.append(i)
        if self.L.llama_decode(self.ctx, b):
            raise RuntimeError("llama_decode failed")
        return [int(np.argmax(np.ctypeslib.as_array(self.L.llama_get_logits_ith(self.ctx, i), shape=(self.n_vocab,))))
                for i in wanted]

    def prefill(self, prompts: list[list[int]]) -> list[int]:
        """Each prompt as its own sequence (id = its index) from position 0, as few llama_decode calls as the batch
        holds; each prompt's first generated token."""
        rows = [(t, j, s, j == len(p) - 1) for s, p in enumerate(prompts) for j, t in enumerate(p)]
        first: list[int] = []
        for at in range(0, len(rows), self.n_batch):
            first += self.decode(rows[at:at + self.n_batch])
        return first

    def greedy(self, prompts: list[list[int]], new: int) -> tuple[list[list[int]], float, float]:
        """`new` greedy tokens for every prompt at once (the cache cleared first): prefill, then one step per token
        for every sequence together. Also the seconds to the first tokens (the prefill's) and to the last."""
        self.clear()
        start = time.perf_counter()
        tokens = self.prefill(prompts)
        first = time.perf_counter() - start
        out = [[t] for t in tokens]
        positions = [len(p) for p in prompts]
        for _ in range(new - 1):
            tokens = self.decode([(t, positions[s], s, True) for s, t in enumerate(tokens)])
            positions = [p + 1 for p in positions]
            for s, t in enumerate(tokens):
                out[s].append(t)
        return out, first, time.perf_counter() - start

    def close(self) -> None:
        self.L.llama_batch_free(self.batch)
        self.L.llama_free(self.ctx)
        self.L.llama_model_free(self.model)


if __name__ == "__main__":
    llm = LlamaCpp(sys.argv[1], int(sys.argv[2]), positions=512)
    print(llm.prefill([llm.tokenize("hi")])[0])
