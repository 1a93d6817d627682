#!/usr/bin/env bash
# Makes sure the official A2A Python SDK (`a2a-sdk`, pinned) is installed in
# a virtual environment under target/, and prints that environment's python.
# The A2A interop tests drive `weft a2a serve` with the SDK's own client
# (crates/weft/tests/a2a_interop.rs) and call an agent served by the SDK's
# own server classes (crates/weft/tests/a2a_client.rs) through it; the
# server needs the `http-server` extra (starlette, sse-starlette) and uvicorn,
# pinned here.
#
#   scripts/a2a-sdk.sh
set -euo pipefail
cd "$(dirname "$0")/.."
version="1.3.0"
server=("starlette==1.10.0" "sse-starlette==3.7.0" "uvicorn==0.54.0")
venv="$PWD/target/a2a-sdk-$version"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import a2a.client, httpx, starlette, sse_starlette, uvicorn' 2>/dev/null; then
  echo "installing a2a-sdk $version into $venv ..." >&2
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "a2a-sdk[http-server]==$version" "${server[@]}" >&2
fi
echo "$venv/bin/python"
