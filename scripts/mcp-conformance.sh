#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance)
# and the Node.js it runs on (22 or later, from npm's `node` package), both
# pinned in scripts/mcp-conformance/package.json and its lock file, into
# scripts/mcp-conformance/node_modules. The system's npm (installed first
# when missing, scripts/node-deps.sh) does the install; a current install is
# left alone.
set -euo pipefail
cd "$(dirname "$0")"
bash node-deps.sh
cd mcp-conformance
stamp=node_modules/.weft-installed
if [ -f "$stamp" ] && [ -x node_modules/.bin/node ] && [ ! package-lock.json -nt "$stamp" ] && [ ! package.json -nt "$stamp" ]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
touch "$stamp"
