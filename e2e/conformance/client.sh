#!/usr/bin/env bash
# client.sh: mcpgen as the client of the official MCP conformance suite
# (@modelcontextprotocol/conformance). For each client scenario the suite
# starts a test server and runs this script with the server's URL as its
# last argument and the scenario's name in MCP_CONFORMANCE_SCENARIO; the
# script maps the scenario to the mcpgen command that exercises it. MCPGEN
# names the mcpgen binary (default: mcpgen on PATH). run.sh drives it.
set -euo pipefail
url="${!#}"
mcpgen="${MCPGEN:-mcpgen}"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize)
    # The handshake, then tools/list.
    exec "$mcpgen" tools ls --url "$url" ;;
  tools_call)
    # The server's add_numbers tool, with arguments typed by its schema.
    exec "$mcpgen" tools call --url "$url" add_numbers a=5 b=3 ;;
  sse-retry)
    # The call's event stream closes before the answer: mcpgen must
    # reconnect after the server's retry delay, with Last-Event-ID.
    exec "$mcpgen" tools call --url "$url" test_reconnection ;;
  elicitation-sep1034-client-defaults)
    # The tool asks for a form (elicitation); mcpgen accepts its defaults.
    exec "$mcpgen" tools call --url "$url" test_client_elicitation_defaults ;;
  *)
    echo "client.sh: no mcpgen command for scenario '${MCP_CONFORMANCE_SCENARIO:-}'" >&2
    exit 2 ;;
esac
