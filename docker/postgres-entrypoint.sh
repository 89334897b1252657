#!/usr/bin/env bash
# The PostgreSQL container's process 1 (docker/postgres.Dockerfile).
#
# On an empty data directory ($PGDATA) it runs initdb, then creates the login role `mmo`
# and the database `mmo` it owns, on a server that listens on no TCP port meanwhile, so
# that a TCP healthcheck passes only once both exist. Then it replaces itself with the
# server, listening on every address.
#
# Who may connect over TCP: with MMO_DB_PASSWORD set, `mmo` has that password and every
# TCP connection must give its password (scram-sha-256); without it, TCP connections are
# trusted. The compose files run the latter on a private network and never publish the
# port; anywhere else, set a password. The variable is read at the first start only.
set -euo pipefail
: "${PGDATA:?PGDATA must name the data directory}"
readonly ROLE=mmo DATABASE=mmo

init() {
  local method=trust
  if [[ -n ${MMO_DB_PASSWORD:-} ]]; then
    method=scram-sha-256
  fi
  echo "postgres-entrypoint: first start, creating the cluster in $PGDATA (TCP: $method)"
  initdb --pgdata="$PGDATA" --username=postgres --encoding=UTF8 --locale=C.UTF-8 \
    --auth-local=peer --auth-host="$method" >/dev/null
  # initdb's own host lines cover the loopback only; the cluster connects from its network.
  printf 'host all all all %s\n' "$method" >>"$PGDATA/pg_hba.conf"
  printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.conf"

  pg_ctl --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait --silent start
  # psql's variables quote the names and the password, so no value is ever spliced into SQL.
  psql --quiet --no-psqlrc --set=ON_ERROR_STOP=1 --username=postgres --dbname=postgres \
    --set=role="$ROLE" --set=db="$DATABASE" --set=password="${MMO_DB_PASSWORD:-}" <<'SQL'
CREATE ROLE :"role" LOGIN;
SELECT :'password' <> '' AS has_password \gset
\if :has_password
ALTER ROLE :"role" PASSWORD :'password';
\endif
CREATE DATABASE :"db" OWNER :"role";
SQL
  pg_ctl --pgdata="$PGDATA" --mode=fast --wait --silent stop
}

if [[ ! -s $PGDATA/PG_VERSION ]]; then
  init
fi
exec postgres -D "$PGDATA"
