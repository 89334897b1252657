#!/usr/bin/env bash
# The benchmark the project is judged by: a release server with 5,000 wandering NPCs on the
# default map and 1,000 wandering bots over QUIC for 60 s, on this machine. Prints the
# swarm's report (with the server's own tick figures) and writes it to target/bench/.
#
# Usage: loadtest/bench.sh [NPCS] [BOTS] [SECONDS]; SWARM_THREADS (default 2) sets the
# swarm's threads; INPUT_PACE when bots send inputs (default `timer`: every 100 ms;
# `snapshot`: one on each snapshot, as a game client sending its input every tick); QUIC and METRICS (default 127.0.0.1:4433 and :9100) the server's
# addresses; SERVER_BIN runs another server binary and LOADTEST_BIN another swarm (say, the
# previous commit's, for runs interleaved with this one's). The swarm's CPU time, the server's per thread kind, the datagrams it sent and
# its snapshot stride are printed at the end: a swarm thread busy for the whole run cannot
# keep up, and then the figures measure it, not the server.
# Targets: all bots connected, server tick p99 <= 25 ms, snapshot interval p99 <= 60 ms,
# <= 16 kB/s per bot (loadtest/bench-slo.toml); the exit code says whether they were met.
set -euo pipefail
cd "$(dirname "$0")/.."

NPCS=${1:-5000}
BOTS=${2:-1000}
SECONDS_RUN=${3:-60}
OUT=target/bench
mkdir -p "$OUT"

cargo build --release -p server -p loadtest
SERVER_BIN=${SERVER_BIN:-target/release/server}
LOADTEST_BIN=${LOADTEST_BIN:-target/release/loadtest}

QUIC=${QUIC:-127.0.0.1:4433}
METRICS=${METRICS:-127.0.0.1:9100}
"$SERVER_BIN" run --listen "$QUIC" --metrics-listen "$METRICS" --npcs "$NPCS" \
  --max-clients "$((BOTS + 100))" --max-clients-per-ip "$((BOTS + 100))" --log-format json \
  >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT

# The fingerprint of the server's fresh certificate, from its start line.
FINGERPRINT=""
for _ in $(seq 1 100); do
  FINGERPRINT=$(grep -o '"fingerprint":"[0-9a-f]*"' "$OUT/server.log" | head -1 | cut -d'"' -f4 || true)
  [ -n "$FINGERPRINT" ] && break
  sleep 0.1
done
[ -n "$FINGERPRINT" ] || { echo "the server did not start:"; cat "$OUT/server.log"; exit 1; }

set +e
TIMEFORMAT='swarm CPU: %U s user + %S s system over %R s'
time "$LOADTEST_BIN" --threads "${SWARM_THREADS:-2}" --server "$QUIC" --bots "$BOTS" --ramp 10 --duration "$SECONDS_RUN" \
  --warmup 15 --behaviour wander --input-pace "${INPUT_PACE:-timer}" --cert-fingerprint "$FINGERPRINT" \
  --metrics "http://$METRICS/metrics" --report "$OUT/report.json" --slo loadtest/bench-slo.toml
STATUS=$?
set -e
# What the server sent, the snapshots it did not send and why, and its snapshot stride at
# the end (1: every client every tick).
# Every metric is kept in $OUT/metrics.txt.
curl -s "http://$METRICS/metrics" >"$OUT/metrics.txt" || true
grep -E '^mmo_(datagrams_out_total|snapshot_stride|snapshots_dropped_total)[ {]' "$OUT/metrics.txt" || true
# The server's own CPU time so far, per thread kind (world, snapshot workers, the QUIC
# runtime), from /proc: where a core's worth of work per client goes.
TICKS=$(getconf CLK_TCK)
for task in /proc/$SERVER/task/*; do
  read -r -a f <"$task/stat" || continue
  name=$(cat "$task/comm")
  echo "$name ${f[13]} ${f[14]}"
done | awk -v hz="$TICKS" '{ sub(/-[0-9]+$/, "", $1); cpu[$1] += ($2 + $3) / hz; all += ($2 + $3) / hz }
  END { printf "server CPU: %.1f s in all;", all; for (k in cpu) printf " %s %.1f s;", k, cpu[k]; printf "\n" }'
echo "report: $OUT/report.json, server log: $OUT/server.log, metrics: $OUT/metrics.txt"
exit $STATUS
