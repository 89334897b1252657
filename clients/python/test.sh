#!/usr/bin/env bash
# Usage: clients/python/test.sh PATH/TO/server
# Starts the server on free loopback ports with 2,000 NPCs, runs mmo_client.py against it
# (certificate pinned by the fingerprint the server writes) for 5 s, and exits non-zero
# unless the client saw its character move toward its target and applied at least 50
# snapshots, with at least 5 entities seen, without a decode or apply error.
# PYTHON names the interpreter that has aioquic (default: python3).
set -euo pipefail

SERVER=${1:?usage: $0 PATH/TO/server}
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
NPCS=${NPCS:-2000}
WORK=$(mktemp -d /tmp/mmo-pyclient.XXXXXX)

# Free ports: a UDP one for QUIC, a TCP one for the HTTP listener (the kernel picks them).
read -r QUIC_PORT HTTP_PORT < <("$PYTHON" - <<'PY'
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
t = socket.socket(socket.AF_INET, socket.SOCK_STREAM); t.bind(("127.0.0.1", 0))
print(u.getsockname()[1], t.getsockname()[1])
PY
)

"$SERVER" run --listen "127.0.0.1:$QUIC_PORT" --metrics-listen "127.0.0.1:$HTTP_PORT" \
    --data-dir "$WORK/data" --npcs "$NPCS" --fingerprint-file "$WORK/fingerprint" \
    >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
cleanup() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

for _ in $(seq 1 300); do  # up to 30 s for the server to start
    [ -s "$WORK/fingerprint" ] && break
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "server exited:"; cat "$WORK/server.log"; exit 2
    fi
    sleep 0.1
done
[ -s "$WORK/fingerprint" ] || { echo "no fingerprint after 30 s"; cat "$WORK/server.log"; exit 2; }
FINGERPRINT=$(tr -d '[:space:]' <"$WORK/fingerprint")
echo "server on 127.0.0.1:$QUIC_PORT, fingerprint $FINGERPRINT"

status=0
timeout 60 "$PYTHON" "$HERE/mmo_client.py" --server "127.0.0.1:$QUIC_PORT" \
    --fingerprint "$FINGERPRINT" --name "python-$$" --seconds 5 --min-snapshots 50 \
    --min-entities 5 || status=$?
if [ "$status" -eq 0 ]; then echo "PASS"; else echo "FAIL (client exit $status)"; cat "$WORK/server.log"; fi
exit "$status"
