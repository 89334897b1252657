#!/usr/bin/env bash
# The cluster benchmark (docs/benchmarks.md, "Zones on NATS"): nats-server, two zones and one gateway on loopback; 2,000 NPCs and
# 200 border bots for 60 s, with `server census` checking every frame. KILL_AT=20 RESTART_AT=25 kills the east zone mid-run;
# SWARM_THREADS (default 2) sets the swarm's threads; SPAWN and SPAWN_SPREAD where players appear.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release}   # cargo build --release -p server -p loadtest first
dir=$(mktemp -d) && chmod 755 "$dir"
port=14222
if [ -n "${KILL_AT:-}" ] && [ -z "${STORE:-}" ]; then
  # A throwaway PostgreSQL (Debian's binaries) for the characters of a killed zone.
  pgbin=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
  mkdir -p $dir/pg && chown postgres $dir/pg
  su postgres -c "$pgbin/initdb -D $dir/pg/data -U postgres -A trust -E UTF8 --no-sync" >/dev/null
  su postgres -c "$pgbin/pg_ctl -D $dir/pg/data -o '-p 15432 -k $dir/pg -c listen_addresses=127.0.0.1' -l $dir/pg/log -w start" >/dev/null
  STORE="postgres://postgres@127.0.0.1:15432/postgres"
  stop_pg() { su postgres -c "$pgbin/pg_ctl -D $dir/pg/data -m immediate stop" >/dev/null 2>&1 || true; }
else
  stop_pg() { :; }
fi
nats-server -a 127.0.0.1 -p $port >/dev/null 2>&1 & nats=$!
sleep 0.5
storeline=""
[ -n "${STORE:-}" ] && storeline="store = \"$STORE\""
cat > $dir/cluster.toml <<TOML
npcs = ${NPCS:-2000}
nats = "nats://127.0.0.1:$port"
$storeline
[[zones]]
name = "west"
region = [0.0, 0.0, 128.0, 257.0]
metrics_listen = "127.0.0.1:9201"
[[zones]]
name = "east"
region = [128.0, 0.0, 256.0, 257.0]
metrics_listen = "127.0.0.1:9202"
[[gateways]]
name = "gw1"
listen = "127.0.0.1:4433"
metrics_listen = "127.0.0.1:9200"
TOML
# Players appear within SPAWN_SPREAD (default 45) m of SPAWN (default 128,130), on both
# sides of the border: the disc holds its two open stretches (y 84-111 and 148-176), so
# the 200 bots cross in two places instead of packing one.
printf 'spawn_point = [%s]\nspawn_spread_m = %s\n' "${SPAWN:-128.0, 130.0}" "${SPAWN_SPREAD:-45.0}" > $dir/gw.toml
$BIN/server zone --cluster $dir/cluster.toml --zone west >$dir/west.log 2>&1 & west=$!
$BIN/server zone --cluster $dir/cluster.toml --zone east >$dir/east.log 2>&1 & east=$!
$BIN/server gateway --cluster $dir/cluster.toml --config $dir/gw.toml --max-clients-per-ip 1000 --fingerprint-file $dir/fp >$dir/gw.log 2>&1 & gw=$!
cleanup() {
  kill $west $east $gw $census $nats 2>/dev/null || true
  [ -f $dir/east2.pid ] && kill "$(cat $dir/east2.pid)" 2>/dev/null || true
  wait 2>/dev/null || true
  stop_pg
}
trap cleanup EXIT
for i in $(seq 100); do [ -s $dir/fp ] && break; sleep 0.2; done
# The census watches every zone's frames until the swarm is done (SIGINT ends it).
$BIN/server census --cluster $dir/cluster.toml --seconds 86400 --report $dir/census.json >$dir/census.log 2>&1 & census=$!
if [ -n "${KILL_AT:-}" ]; then
  ( sleep $(( KILL_AT + 5 )); kill -9 $east; echo "east killed" >&2; sleep $(( RESTART_AT - KILL_AT )); $BIN/server zone --cluster $dir/cluster.toml --zone east >>$dir/east.log 2>&1 & echo $! > $dir/east2.pid; echo "east restarted" >&2 ) &
fi
start_cpu=$(awk '{print $14+$15}' /proc/$gw/stat)
# The gateway's router thread ("world"), apart: it merges the zones' frames every tick.
router_cpu() { for t in /proc/$gw/task/*; do if [ "$(cat $t/comm)" = world ]; then awk '{print $14+$15}' $t/stat; fi; done | head -1; }
start_router=$(router_cpu)
# Overlaps are counted once every bot is in (after the ramp and warm-up): players joining
# at nearby spawn points may land on each other until the repulsion parts them.
# One line per zone: its ticks that ended with an overlap, and its ticks, since it started.
overlapping() { for m in 9201 9202; do curl -s 127.0.0.1:$m/metrics | awk '$1 == "mmo_zone_ticks_overlapping_total" {o=$2} $1 == "mmo_ticks_total" {t=$2} END {print o+0, t+0}'; done; }
( sleep 12; overlapping > $dir/settled ) &
$BIN/loadtest --threads "${SWARM_THREADS:-2}" --server 127.0.0.1:4433 --bots ${BOTS:-200} --ramp 5 --warmup 5 --duration ${DURATION:-60} \
  --behaviour border --cluster $dir/cluster.toml --cert-fingerprint-file $dir/fp --report $dir/report.json || echo "loadtest exit $?"
end_cpu=$(awk '{print $14+$15}' /proc/$gw/stat)
end_router=$(router_cpu)
kill -INT $census; wait $census || echo "census exit $?"
grep -v "INFO\|WARN" $dir/census.log || true
# What the gateway sent, and the snapshots it did not send (and why).
curl -s 127.0.0.1:9200/metrics | grep -E '^mmo_(datagrams_out_total|snapshots_dropped_total|snapshot_stride)' || true
# Per zone, the counts since the first reading; a zone restarted meanwhile (its counters
# began again) counts everything since its restart.
overlapping > $dir/ended
read -r o t < <(paste -d' ' $dir/settled $dir/ended | awk '{ if ($3 < $1 || $4 < $2) { o += $3; t += $4 } else { o += $3 - $1; t += $4 - $2 } } END {print o, t}')
echo "ticks ending with an overlap once all bots were in: $o of $t (both zones; a restarted zone since its restart)"
echo "gateway cpu ticks: $((end_cpu - start_cpu)) (1/100 s), of which its router thread $((end_router - start_router))"
for m in 9201 9202; do
  # Handoff latency quantiles from the histogram's buckets (upper bounds).
  curl -s 127.0.0.1:$m/metrics | python3 -c '
import sys
b = [(float(l.split("le=\"")[1].split("\"")[0]), float(l.split()[-1])) for l in sys.stdin if l.startswith("mmo_handoff_seconds_bucket")]
n = b[-1][1] if b else 0
q = lambda p: next((le for le, c in b if c >= p * n), None)
print(f"zone on :'$m' handoffs {n:.0f}, latency p50 <= {q(0.5)} s, p99 <= {q(0.99)} s")'
done
for m in 9201 9202; do curl -s 127.0.0.1:$m/metrics | grep -E "^mmo_(zone_reals|handoffs_total|handoffs_failed_total|handoffs_in_flight|bus_bytes_out_total|handoff_seconds_(sum|count)|tick_seconds_(sum|count)|zone_overlapping_pairs_max|zone_bodies_in_walls_max|zone_ticks_overlapping_total|zone_overlap_p99_max_ppm|ticks_total) " ; done
cp $dir/report.json ${REPORT:-target/cluster-report.json}
