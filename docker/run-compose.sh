#!/usr/bin/env bash
# Usage: docker/run-compose.sh [EXTRA `up` FLAGS...]
#
# The whole thing in containers, in one command: builds the local base images when they
# are missing (docker/build-base.sh), builds the project's image, runs docker-compose.yml
# until the swarm exits, and always removes the containers, network and volume again. Its
# exit code is the swarm's: 0 when the run met loadtest/bench-slo.toml, 2 when it missed
# it, 1 when the swarm could not run; the build's own failure exits non-zero too.
#
# docker-compose.yml's variables (BOTS, DURATION, RAMP, WARMUP, NPCS, METRICS_PORT, ...)
# pass through the environment, e.g. a short run:
#   BOTS=50 DURATION=15 RAMP=5 WARMUP=5 docker/run-compose.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# The Compose plugin where it exists, else the standalone docker-compose.
if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
else
  echo "neither 'docker compose' nor 'docker-compose' is installed" >&2
  exit 1
fi
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-mmo}

docker/build-base.sh
"${compose[@]}" build

# From here on, whatever happens, the project's containers and its volume go away.
trap '"${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true' EXIT
status=0
"${compose[@]}" up --no-build --exit-code-from swarm "$@" || status=$?
if ((status != 0)); then
  # When the server never became healthy, `up` showed none of its output: show its end.
  echo "--- the server's last log lines" >&2
  "${compose[@]}" logs --no-color --tail=20 server >&2 || true
fi
echo "swarm exit code: $status" >&2
exit "$status"
