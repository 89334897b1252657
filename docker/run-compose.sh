#!/usr/bin/env bash
# Usage: docker/run-compose.sh [--cluster] [--prebuilt BIN_DIR] [EXTRA `up` FLAGS...]
#
# The whole thing in containers, in one command: builds the local base images when they
# are missing (docker/build-base.sh), builds the project's images, runs a compose file
# until the swarm exits, and always removes the containers, network and volumes again.
# Its exit code is the swarm's: 0 when the run met its SLO file, 2 when it missed it, 1
# when the swarm could not run; a failed build or a service that never became healthy
# exits non-zero too.
#
#   (no flag)          docker-compose.yml: one server and a wandering swarm.
#   --cluster          docker-compose.cluster.yml: nats, postgres, two zones, a gateway
#                      and a swarm that crosses the zones' border.
#   --prebuilt BIN_DIR the project's image from the `server` and `loadtest` binaries in
#                      BIN_DIR (docker/build-prebuilt.sh) instead of compiling them inside
#                      Docker; only the runtime base image is needed then. CI uses it.
#
# The compose files' variables (BOTS, DURATION, RAMP, WARMUP, NPCS, METRICS_PORT, ...)
# pass through the environment, e.g. a short run:
#   BOTS=50 DURATION=15 RAMP=5 WARMUP=5 docker/run-compose.sh
set -euo pipefail
cd "$(dirname "$0")/.."

file=docker-compose.yml
project=mmo
# The services whose images a prebuilt run still builds (every other one runs mmo:local).
support_services=()
prebuilt=
while (($#)); do
  case $1 in
    --cluster)
      file=docker-compose.cluster.yml
      project=mmo-cluster
      support_services=(nats postgres)
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
"${compose[@]}" up --no-build --exit-code-from swarm "$@" || status=$?
if ((status != 0)); then
  # When a service never became healthy, `up` showed none of its output: show its end.
  echo "--- the last log lines of every service" >&2
  "${compose[@]}" logs --no-color --tail=20 >&2 || true
fi
echo "swarm exit code: $status" >&2
exit "$status"
