#!/usr/bin/env bash
# The weft client as the conformance suite's client under test: the suite
# runs `client.sh <weft binary> <server URL>` with MCP_CONFORMANCE_SCENARIO
# set, and this runs an agent whose MCP toolset is that server, with a
# scripted planner doing what the scenario asks. OAuth scenarios need curl.
set -euo pipefail
weft="$1"
url="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize)
    # `weft run` starts the toolset (initialize, tools/list) before the first turn.
    turns='[[planner.turns]]
text = "connected"'
    ;;
  tools_call)
    turns='[[planner.turns]]
tool_calls = [{ name = "server.add_numbers", args = { a = 5, b = 3 } }]
[[planner.turns]]
text = "added"'
    ;;
  sse-retry)
    turns='[[planner.turns]]
tool_calls = [{ name = "server.test_reconnection", args = {} }]
[[planner.turns]]
text = "reconnected"'
    ;;
  elicitation-sep1034-client-defaults)
    # The form's answer comes from standard input: a JSON object of the
    # fields, here none, so that every field takes its default.
    answers='{}\n'
    turns='[[planner.turns]]
tool_calls = [{ name = "server.test_client_elicitation_defaults", args = {} }]
[[planner.turns]]
text = "answered"'
    ;;
  auth/*)
    # The server needs OAuth: weft prints the authorization URL, which the
    # suite's authorization server approves without a person; fetching it
    # follows the redirect back to weft's loopback listener. The tool
    # behind it is `test-tool`.
    oauth='[toolsets.oauth]
token_dir = "'"$dir"'/oauth"'
    # A client registered beforehand: the suite passes its id and secret or
    # private key in MCP_CONFORMANCE_CONTEXT (JSON); the secret and the key
    # go to owner-only files, never into the agent file.
    if [ -n "${MCP_CONFORMANCE_CONTEXT:-}" ]; then
      # Node.js runs the suite, so it is here: on PATH or the suite's own.
      node="$(command -v node || echo "$(dirname "$0")/../../../../scripts/mcp-conformance/node_modules/.bin/node")"
      context() {
        "$node" -e 'const v = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT)[process.argv[1]];
          if (typeof v === "string") process.stdout.write(v);' "$1"
      }
      umask 077
      client_id="$(context client_id)"
      if [ -n "$client_id" ]; then
        oauth="$oauth"'
client_id = "'"$client_id"'"'
      fi
      context client_secret >"$dir/client-secret"
      if [ -s "$dir/client-secret" ]; then
        oauth="$oauth"'
client_secret_file = "'"$dir"'/client-secret"'
      fi
      context private_key_pem >"$dir/client-key.pem"
      if [ -s "$dir/client-key.pem" ]; then
        oauth="$oauth"'
private_key_file = "'"$dir"'/client-key.pem"'
        algorithm="$(context signing_algorithm)"
        [ -z "$algorithm" ] || oauth="$oauth"'
signing_algorithm = "'"$algorithm"'"'
      fi
      case "$MCP_CONFORMANCE_SCENARIO" in
        auth/client-credentials-*) oauth="$oauth"'
grant = "client_credentials"' ;;
      esac
    fi
    turns='[[planner.turns]]
tool_calls = [{ name = "server.test-tool", args = {} }]
[[planner.turns]]
text = "authorized"'
    ;;
  *)
    echo "client.sh: scenario ${MCP_CONFORMANCE_SCENARIO:-(none)} is not supported" >&2
    exit 1
    ;;
esac
cat > "$dir/agent.toml" <<AGENT
id = "conformance-client"
[[toolsets]]
type = "mcp"
name = "server"
url = "$url"
${oauth:-}
[planner]
kind = "scripted"
$turns
AGENT
if [ -n "${answers:-}" ]; then
  printf '%b' "$answers" | "$weft" run --output jsonl "$dir/agent.toml" go
  exit
fi
if [ -z "${oauth:-}" ]; then
  "$weft" run --output jsonl "$dir/agent.toml" go
  exit
fi
# An authorization during a call (a step-up) is the call's question, with
# the URL: standard input answers `done` to each, and the URL is approved
# below like the first one.
yes done | "$weft" run --output jsonl "$dir/agent.toml" go 2>"$dir/stderr" &
pid=$!
# Approve each authorization URL weft prints (a step-up asks again), until
# weft ends.
approved=0
while kill -0 "$pid" 2>/dev/null; do
  urls="$(grep -o 'https\?://[^ ]*authorize[^ ]*' "$dir/stderr" || true)"
  count="$(printf '%s' "$urls" | grep -c . || true)"
  if [ "$count" -gt "$approved" ]; then
    curl -sS -L -o /dev/null "$(printf '%s\n' "$urls" | sed -n "$((approved + 1))p")" || true
    approved=$((approved + 1))
  else
    sleep 0.1
  fi
done
status=0
wait "$pid" || status=$?
cat "$dir/stderr" >&2
exit "$status"
