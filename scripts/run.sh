#!/usr/bin/env bash
# Starts the sandbox and the console, prints where to go, and stops both on Ctrl-C.
set -uo pipefail
PORT="${1:-8000}"
SANDBOX_PORT="${2:-8100}"
BIN=.venv/bin

"$BIN/python" manage.py sandbox --port "$SANDBOX_PORT" &
SANDBOX_PID=$!
"$BIN/uvicorn" console.asgi:application --host 127.0.0.1 --port "$PORT" --log-level warning &
CONSOLE_PID=$!

stop() {
  trap - INT TERM EXIT
  echo
  echo "Stopping the console and the sandbox..."
  kill "$CONSOLE_PID" "$SANDBOX_PID" 2>/dev/null
  wait "$CONSOLE_PID" "$SANDBOX_PID" 2>/dev/null
  exit 0
}
trap stop INT TERM EXIT

for _ in $(seq 1 100); do
  if "$BIN/python" - "$PORT" <<'PY' 2>/dev/null; then break; fi
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=1)
PY
  sleep 0.2
done

cat <<MSG

  Console:  http://127.0.0.1:${PORT}/
  Sandbox:  http://127.0.0.1:${SANDBOX_PORT}/  (a local Browser Automation Service)
  Log in:   demo / ${DEMO_PASSWORD:-demo}   (also: operator / viewer, same password)

  Ctrl-C stops both.
MSG
wait "$CONSOLE_PID" "$SANDBOX_PID"
