#!/usr/bin/env bash
# Makes sure llama-cpp-python (with its OpenAI-compatible server) is built in
# a virtual environment under the models directory, and prints that
# environment's python. pip builds it from source (several minutes the first
# time; later calls find it), with the instruction set weft's own llama.cpp
# gets (.cargo/config.toml: AVX2, FMA, F16C), so the two differ only in what
# drives llama.cpp. Used by the local-model benchmark and by the test of
# weft against llama.cpp's server.
#
#   scripts/llama-cpp-python.sh MODELS_DIR
set -euo pipefail
models_dir="$1"
version="0.3.36"
venv="$models_dir/llama-cpp-python-$version-avx2"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import llama_cpp.server.app' 2>/dev/null; then
  echo "building llama-cpp-python $version from source into $venv ..." >&2
  t=$SECONDS
  python3 -m venv "$venv"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_SSE42=ON" \
    "$venv/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check \
    --no-binary llama-cpp-python "llama-cpp-python[server]==$version" >&2
  echo "llama-cpp-python: built in $((SECONDS - t)) s" >&2
fi
echo "$venv/bin/python"
