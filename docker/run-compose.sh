#!/usr/bin/env bash
# Usage: docker/run-compose.sh [--cluster] [--prebuilt BIN_DIR | --support-only] [EXTRA `up` FLAGS...]
#
# The whole thing in containers, in one command: builds the local base images when they
# are missing (docker/build-base.sh), builds the project's images, runs a compose file
# until the swarm exits, and always removes the containers, network and volumes again.
# Its exit code is the swarm's: 0 when the run met its SLO file, 2 when it missed it, 1
# when the swarm could not run; a failed build or a service that never became healthy
# exits non-zero too. With --cluster, the census service (`server census`) checks the
# custody rules on every zone frame: when the swarm met its SLO but the census found an
# id real in two zones, an NPC in no zone's custody, or fewer handoffs than
# CENSUS_MIN_HANDOFFS, the exit code is 3.
#
#   (no flag)          docker-compose.yml: one server and a wandering swarm.
#   --cluster          docker-compose.cluster.yml: nats, postgres, two zones, a gateway
#                      and a swarm that crosses the zones' border.
#   --prebuilt BIN_DIR the project's image from the `server` and `loadtest` binaries in
#                      BIN_DIR (docker/build-prebuilt.sh) instead of compiling them inside
#                      Docker; only the runtime base image is needed then. CI uses it.
#   --support-only     build the runtime base image and the support services' images
#                      (with --cluster: nats and PostgreSQL), run nothing, and exit: CI
#                      builds them while the Rust code compiles.
#
# The compose files' variables (BOTS, DURATION, RAMP, WARMUP, NPCS, METRICS_PORT, ...)
# pass through the environment, e.g. a short run:
#   BOTS=50 DURATION=15 RAMP=5 WARMUP=5 docker/run-compose.sh
#
# A zone killed mid-run (with --cluster): KILL_ZONE=zone-east KILL_AT=20 RESTART_AT=25
# starts everything detached, sends the zone's container SIGKILL KILL_AT seconds after
# the swarm started, starts it again at RESTART_AT (the operator's part: nothing in the
# compose file restarts a zone), and exits with the swarm's code. Pair it with
# SLO_FILE=./docker/cluster-kill-slo.toml (characters of the killed zone are missing from
# their snapshots while it is down, which the ordinary SLO counts as violations).
set -euo pipefail
cd "$(dirname "$0")/.."

file=docker-compose.yml
project=mmo
# The services whose images a prebuilt run still builds (every other one runs mmo:local).
support_services=()
prebuilt=
support_only=
while (($#)); do
  case $1 in
    --cluster)
      file=docker-compose.cluster.yml
      project=mmo-cluster
      support_services=(nats postgres)
      shift
      ;;
    --support-only)
      support_only=1
      shift
      ;;
    --prebuilt)
      prebuilt=${2:?--prebuilt needs the directory that holds the server and loadtest binaries}
      shift 2
      ;;
    *) break ;;
  esac
done

# The Compose plugin where it exists, else the standalone docker-compose.
if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
else
  echo "neither 'docker compose' nor 'docker-compose' is installed" >&2
  exit 1
fi
compose+=(-f "$file")
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-$project}

if [[ -n $support_only ]]; then
  docker/build-base.sh --runtime-only
  if ((${#support_services[@]})); then
    "${compose[@]}" build "${support_services[@]}"
  fi
  exit 0
fi

if [[ -n $prebuilt ]]; then
  docker/build-base.sh --runtime-only
  docker/build-prebuilt.sh "$prebuilt" mmo:local
  if ((${#support_services[@]})); then
    "${compose[@]}" build "${support_services[@]}"
  fi
else
  docker/build-base.sh
  "${compose[@]}" build
fi

# From here on, whatever happens, the project's containers and its volumes go away.
trap '"${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true' EXIT
status=0
if [[ -n ${KILL_ZONE:-} ]]; then
  kill_at=${KILL_AT:?KILL_ZONE needs KILL_AT (seconds into the swarm run)}
  restart_at=${RESTART_AT:?KILL_ZONE needs RESTART_AT (seconds into the swarm run)}
  ((restart_at > kill_at)) || { echo "RESTART_AT must be after KILL_AT" >&2; exit 1; }
  "${compose[@]}" up --no-build -d "$@"
  swarm=$("${compose[@]}" ps -q swarm)
  zone=$("${compose[@]}" ps -q "$KILL_ZONE")
  [[ -n $swarm && -n $zone ]] || { echo "no running swarm or $KILL_ZONE container" >&2; exit 1; }
  sleep "$kill_at"
  docker kill --signal KILL "$zone" >/dev/null
  echo "$KILL_ZONE killed (SIGKILL) ${kill_at} s into the swarm's run" >&2
  sleep $((restart_at - kill_at))
  "${compose[@]}" start "$KILL_ZONE"
  echo "$KILL_ZONE started again ${restart_at} s into the swarm's run" >&2
  status=$(docker wait "$swarm")
  docker logs "$swarm" 2>&1 | grep -v '^t=' || true
else
  "${compose[@]}" up --no-build --exit-code-from swarm "$@" || status=$?
fi
if [[ $file == docker-compose.cluster.yml ]]; then
  # The census runs until stopped, and its last line is its verdict; each zone logs what
  # it saw (handoffs, overlaps, bodies in walls) when it stops.
  "${compose[@]}" stop census zone-west zone-east >/dev/null 2>&1 || true
  census=$("${compose[@]}" ps -aq census)
  if [[ -n $census ]]; then
    census_status=$(docker wait "$census")
    docker logs "$census" 2>&1 | grep -v 'INFO' || true
    echo "census exit code: $census_status" >&2
    if ((status == 0 && census_status != 0)); then status=3; fi
  else
    echo "no census container" >&2
    if ((status == 0)); then status=3; fi
  fi
  "${compose[@]}" logs --no-color zone-west zone-east 2>/dev/null | grep '"zone stopped"' || true
fi
if ((status != 0)); then
  # When a service never became healthy, `up` showed none of its output: show its end.
  echo "--- the last log lines of every service" >&2
  "${compose[@]}" logs --no-color --tail=20 >&2 || true
fi
echo "swarm exit code: $status" >&2
exit "$status"
