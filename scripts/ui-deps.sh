#!/usr/bin/env bash
# Installs what the run viewer's browser test needs: Chromium from the
# system's packages (Debian/Ubuntu `chromium`, through apt-get) and
# playwright-core from npm (pinned in tests/ui/package.json and its lock
# file) into tests/ui/node_modules. Playwright's own browser downloads are
# never used: the test points playwright-core at /usr/bin/chromium (or
# WEFT_CHROMIUM). Node.js and npm are installed first when missing
# (scripts/node-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/node-deps.sh

chromium="${WEFT_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "ui-deps: installing chromium" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null \
      || { $sudo apt-get update -q >/dev/null && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }
  else
    echo "ui-deps: install Chromium with your system's package manager, or set WEFT_CHROMIUM to its binary" >&2
    exit 1
  fi
fi

cd tests/ui
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
