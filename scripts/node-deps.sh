#!/usr/bin/env bash
# Installs Node.js and npm when they are missing, for the scripts that
# fetch npm packages (scripts/ui-deps.sh, scripts/mcp-servers.sh): the
# Debian/Ubuntu packages `nodejs` and `npm` through apt-get, like
# scripts/setup. What is already installed is left alone; elsewhere it says
# what is missing.
set -euo pipefail

missing=()
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
  echo "node-deps: Node.js and npm are needed for the npm packages the tests use; installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null \
    || { $sudo apt-get update -q >/dev/null && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null; }
else
  echo "node-deps: install Node.js and npm (${missing[*]} missing) with your system's package manager; the npm packages the tests use need them" >&2
  exit 1
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "node-deps: node or npm is still not on PATH after installing ${missing[*]}" >&2
  exit 1
fi
echo "node-deps: installed ${missing[*]} (node $(node --version))" >&2
