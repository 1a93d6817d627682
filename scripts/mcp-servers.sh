#!/usr/bin/env bash
# Installs the third-party MCP servers the tests use (pinned in
# scripts/mcp-servers/package.json and its lock file) into
# scripts/mcp-servers/node_modules. Node.js and npm are installed first
# when missing (scripts/node-deps.sh).
set -euo pipefail
cd "$(dirname "$0")"
bash node-deps.sh
cd mcp-servers
if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
else
  npm install --no-audit --no-fund --loglevel=error
fi
