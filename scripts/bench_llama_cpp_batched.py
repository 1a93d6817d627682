"""Times llama.cpp's own batched decoding (through llama-cpp-python's
bindings of its C API) the way `weft bench local-model` times weft serving
several runs at once: K sequences of the same prompt in one context (one
sequence each, KV cache not unified, as weft asks), their prompts evaluated
in one batch, then one batch per step holding the next token of every
sequence, greedy, until each has decoded TOKENS tokens. The figure is the
tokens produced over the wall time, prompt evaluation included. This is
what llama.cpp's server does with parallel slots and continuous batching
when all slots are busy, without its HTTP. Prints one JSON line per K
(1, 4, 8), then a summary line.

Usage: bench_llama_cpp_batched.py MODEL.gguf PROMPT_FILE TOKENS THREADS
"""

import ctypes
import json
import sys
import time

import llama_cpp as L
import numpy as np

COUNTS = (1, 4, 8)


def main() -> None:
    model_path, prompt_file, tokens, threads = sys.argv[1:5]
    tokens, threads = int(tokens), int(threads)
    with open(prompt_file, encoding="utf-8") as f:
        prompt = f.read().encode("utf-8")
    L.llama_backend_init()
    model = L.llama_model_load_from_file(model_path.encode(), L.llama_model_default_params())
    if not model:
        sys.exit(f"cannot load {model_path}")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    buf = (L.llama_token * (len(prompt) + 16))()
    n = L.llama_tokenize(vocab, prompt, len(prompt), buf, len(buf), False, True)
    if n < 0:
        sys.exit("the prompt does not tokenize")
    ids = list(buf[:n])

    seqs = max(COUNTS)
    per_seq = len(ids) + tokens + 16
    params = L.llama_context_default_params()
    params.n_ctx = per_seq * seqs
    params.n_batch = per_seq * seqs
    params.n_seq_max = seqs
    params.n_threads = threads
    params.n_threads_batch = threads
    if hasattr(params, "kv_unified"):
        params.kv_unified = False
    ctx = L.llama_init_from_model(model, params)
    if not ctx:
        sys.exit("cannot create a context")
    batch = L.llama_batch_init(len(ids) * seqs + seqs, 0, 1)

    def clear() -> None:
        L.llama_memory_clear(L.llama_get_memory(ctx), True)

    def decode(entries) -> list:
        """Decodes (token, pos, seq, logits) entries; the batch index of each
        entry that asked for logits."""
        out = []
        for i, (tok, pos, seq, want) in enumerate(entries):
            batch.token[i] = tok
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = want
            if want:
                out.append(i)
        batch.n_tokens = len(entries)
        if L.llama_decode(ctx, batch) != 0:
            sys.exit("llama_decode failed")
        return out

    def pick(idx: int) -> int:
        logits = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, idx), shape=(n_vocab,))
        return int(logits.argmax())

    def round_of(k: int) -> tuple:
        clear()
        start = time.perf_counter()
        last = len(ids) - 1
        idx = decode([(t, p, s, p == last) for s in range(k) for p, t in enumerate(ids)])
        produced = 0
        pos = len(ids)
        while True:
            picked = [pick(i) for i in idx]
            produced += k
            if produced >= tokens * k:
                break
            idx = decode([(t, pos, s, True) for s, t in enumerate(picked)])
            pos += 1
        return produced, time.perf_counter() - start

    round_of(1)  # warm-up, as in weft's benchmark
    rates = []
    for k in COUNTS:
        produced, seconds = round_of(k)
        rate = produced / seconds
        rates.append(round(rate, 2))
        print(json.dumps({
            "bench": "local-model", "engine": "llama.cpp", "sequences": seqs,
            "concurrent_runs": k, "tokens": produced,
            "wall_ms": round(seconds * 1e3, 2), "aggregate_tok_s": round(rate, 2),
        }))
    print(json.dumps({
        "bench": "local-model", "engine": "llama.cpp", "summary": "concurrent",
        "llama_cpp_python": L.__version__, "threads": threads,
        "concurrent_runs": list(COUNTS), "aggregate_tok_s_batched": rates,
    }))
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)


if __name__ == "__main__":
    main()
