#!/usr/bin/env bash
# Usage: http-probe HOST PORT PATH
#
# Exits 0 when `GET PATH` on HOST:PORT answers with status 200, 1 otherwise. It is the
# server container's healthcheck (docker-compose.yml); it needs only bash and coreutils,
# which the runtime image already has, instead of curl and its libraries.
set -uo pipefail
host=${1:?usage: http-probe HOST PORT PATH}
port=${2:?usage: http-probe HOST PORT PATH}
path=${3:?usage: http-probe HOST PORT PATH}

# The whole exchange is bounded, so a hung server fails the probe instead of stalling it.
# shellcheck disable=SC2016 # the inner script expands its own arguments
exec timeout 5 bash -c '
  exec 3<>"/dev/tcp/$0/$1" || exit 1
  printf "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" "$2" "$0" >&3
  IFS=" " read -r version status _ <&3 || exit 1
  [[ $version == HTTP/1.* && $status == 200 ]]
' "$host" "$port" "$path"
