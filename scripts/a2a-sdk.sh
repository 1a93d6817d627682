#!/usr/bin/env bash
# Makes sure the official A2A Python SDK (`a2a-sdk`, pinned) is installed in
# a virtual environment under target/, and prints that environment's python.
# The A2A interop test (crates/weft/tests/a2a_interop.rs) drives
# `weft a2a serve` with the SDK's own client through it.
#
#   scripts/a2a-sdk.sh
set -euo pipefail
cd "$(dirname "$0")/.."
version="1.3.0"
venv="$PWD/target/a2a-sdk-$version"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import a2a.client, httpx' 2>/dev/null; then
  echo "installing a2a-sdk $version into $venv ..." >&2
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "a2a-sdk==$version" >&2
fi
echo "$venv/bin/python"
