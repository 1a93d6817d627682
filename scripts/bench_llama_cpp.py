"""Times llama.cpp (through llama-cpp-python) on the prompt `weft bench
local-model` used, the way that benchmark times weft: greedy decoding of a
fixed number of tokens on the same GGUF file and thread count, time to first
token from the start of the generation, decode speed over the tokens after
the first. Prints one JSON line per run, then a summary line.

Usage: bench_llama_cpp.py MODEL.gguf PROMPT_FILE TOKENS RUNS THREADS
"""

import json
import statistics
import sys
import time

import llama_cpp


def main() -> None:
    model_path, prompt_file, tokens, runs, threads = sys.argv[1:6]
    tokens, runs, threads = int(tokens), int(runs), int(threads)
    with open(prompt_file, encoding="utf-8") as f:
        prompt = f.read()
    llm = llama_cpp.Llama(
        model_path=model_path,
        n_ctx=1024,
        n_batch=1024,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    ids = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    ttfts, speeds = [], []
    for run in range(runs + 1):
        llm.reset()
        start = time.perf_counter()
        first = None
        n = 0
        for _ in llm.generate(ids, temp=0.0, top_k=1, reset=True):
            n += 1
            if first is None:
                first = time.perf_counter()
            if n >= tokens:
                break
        end = time.perf_counter()
        if run == 0:
            continue  # warm-up, as in weft's benchmark
        ttft_ms = (first - start) * 1e3
        tok_s = (n - 1) / (end - first)
        ttfts.append(ttft_ms)
        speeds.append(tok_s)
        print(json.dumps({
            "bench": "local-model", "engine": "llama.cpp", "run": run,
            "prompt_tokens": len(ids), "decoded_tokens": n,
            "ttft_ms": round(ttft_ms, 2), "decode_tok_s": round(tok_s, 2),
        }))
    print(json.dumps({
        "bench": "local-model", "engine": "llama.cpp", "summary": True,
        "llama_cpp_python": llama_cpp.__version__, "threads": threads,
        "runs": runs, "prompt_tokens": len(ids), "decoded_tokens": tokens,
        "ttft_ms_median": round(statistics.median(ttfts), 2),
        "decode_tok_s_median": round(statistics.median(speeds), 2),
    }))


if __name__ == "__main__":
    main()
