#!/usr/bin/env bash
# A project-owned PostgreSQL 15 pair for failover tests: a primary on
# 127.0.0.1:5433 and a hot standby on 127.0.0.1:5434 that is its *synchronous* standby
# (application_name=standby1). Independent of the machine's own cluster on 5432.
#
#   pg-standby.sh start           fresh pair (stops and removes an earlier one first)
#   pg-standby.sh stop            stop both (-m immediate), remove the root dir
#   pg-standby.sh failover [SEC]  kill the primary, sleep SEC (3), promote the standby
#   pg-standby.sh urls            SQLAlchemy URLs, one per line: "label url"
#   pg-standby.sh status          ports, recovery state, sync state
#
# Everything lives in ${LGSA_CLUSTER_ROOT:-/tmp/lgsa-clusters}/pg, owned by user postgres;
# the unix sockets are there too (not /var/run/postgresql). Auth is trust for every user.
set -euo pipefail

BIN=/usr/lib/postgresql/15/bin
ROOT="${LGSA_CLUSTER_ROOT:-/tmp/lgsa-clusters}/pg"
PRIMARY_PORT=5433
STANDBY_PORT=5434

as_pg() { runuser -u postgres -- "$@"; }
# psql as postgres over TCP; -X ignores any ~/.psqlrc
q() { local port=$1; shift; psql -X -qAt -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"; }
running() { [[ -f "$1/postmaster.pid" ]] && as_pg "$BIN/pg_ctl" -D "$1" status >/dev/null 2>&1; }

stop() {
  local d
  for d in "$ROOT/primary" "$ROOT/standby"; do
    if running "$d"; then as_pg "$BIN/pg_ctl" -D "$d" -m immediate -w stop >/dev/null || true; fi
  done
  rm -rf "$ROOT"
}

start() {
  local t0=$SECONDS
  stop
  mkdir -p "$ROOT"
  chown postgres:postgres "$ROOT"
  chmod 700 "$ROOT"

  # --- primary -------------------------------------------------------------------
  # --no-sync: a throw-away cluster need not fsync the freshly made files (fsync stays on
  # for the running server).
  as_pg "$BIN/initdb" -D "$ROOT/primary" --auth=trust -U postgres --no-sync >"$ROOT/initdb.log"
  # initdb --auth=trust already allows local + 127.0.0.1 (and replication) for everyone.
  cat >>"$ROOT/primary/postgresql.conf" <<EOF

# --- lgsa pg-standby.sh ---
listen_addresses = '127.0.0.1'
port = $PRIMARY_PORT
unix_socket_directories = '$ROOT'
shared_buffers = 16MB
max_connections = 60
wal_level = replica
max_wal_senders = 5
hot_standby = on
synchronous_standby_names = 'standby1'
synchronous_commit = on
EOF
  as_pg "$BIN/pg_ctl" -D "$ROOT/primary" -l "$ROOT/primary.log" -w -t 30 start >/dev/null
  # Roles and database are made before the base backup, so the standby has them too.
  # With no standby yet, a synchronous commit would wait forever: commit locally here.
  q $PRIMARY_PORT -v ON_ERROR_STOP=1 <<'SQL'
SET synchronous_commit = local;
CREATE ROLE root SUPERUSER LOGIN;
CREATE DATABASE test;
SQL

  # --- standby -------------------------------------------------------------------
  # -R writes standby.signal and primary_conninfo (with the application_name given here)
  # into postgresql.auto.conf; -X stream -c fast keeps it quick.
  as_pg "$BIN/pg_basebackup" -D "$ROOT/standby" -R -X stream -c fast \
    -d "host=127.0.0.1 port=$PRIMARY_PORT user=postgres application_name=standby1"
  grep -q "application_name=standby1" "$ROOT/standby/postgresql.auto.conf" || {
    echo "pg_basebackup -R did not keep application_name=standby1" >&2; exit 1; }
  # The config files were copied from the primary: later lines win. An empty
  # synchronous_standby_names matters after a promotion: the promoted server must not wait
  # for a 'standby1' that no longer exists.
  cat >>"$ROOT/standby/postgresql.conf" <<EOF
port = $STANDBY_PORT
synchronous_standby_names = ''
EOF
  as_pg "$BIN/pg_ctl" -D "$ROOT/standby" -l "$ROOT/standby.log" -w -t 30 start >/dev/null

  # --- wait for synchronous streaming -------------------------------------------
  local state=""
  for _ in $(seq 1 100); do
    state=$(q $PRIMARY_PORT -c "SELECT state || '/' || sync_state FROM pg_stat_replication
                                 WHERE application_name = 'standby1'" 2>/dev/null || true)
    [[ "$state" == "streaming/sync" ]] && break
    sleep 0.2
  done
  if [[ "$state" != "streaming/sync" ]]; then
    echo "standby1 not streaming/sync (got '$state')" >&2
    tail -n 20 "$ROOT/primary.log" "$ROOT/standby.log" >&2
    exit 1
  fi
  echo "pg-standby: primary :$PRIMARY_PORT, sync standby :$STANDBY_PORT ($((SECONDS - t0)) s)"
}

failover() {
  local wait=${1:-3}
  running "$ROOT/standby" || { echo "no standby running" >&2; exit 1; }
  [[ -f "$ROOT/standby/standby.signal" ]] || { echo ":$STANDBY_PORT is already promoted (run start)" >&2; exit 1; }
  if running "$ROOT/primary"; then as_pg "$BIN/pg_ctl" -D "$ROOT/primary" -m immediate -w stop >/dev/null; fi
  sleep "$wait"
  as_pg "$BIN/pg_ctl" -D "$ROOT/standby" -w -t 30 promote >/dev/null
  for _ in $(seq 1 100); do
    [[ $(q $STANDBY_PORT -c "SELECT pg_is_in_recovery()") == f ]] && break
    sleep 0.1
  done
  [[ $(q $STANDBY_PORT -c "SELECT pg_is_in_recovery()") == f ]] || { echo "promotion did not finish" >&2; exit 1; }
  echo "pg-standby: primary on :$PRIMARY_PORT stopped, :$STANDBY_PORT promoted"
}

urls() {
  echo "primary postgresql+psycopg://root@127.0.0.1:$PRIMARY_PORT/test"
  echo "standby postgresql+psycopg://root@127.0.0.1:$STANDBY_PORT/test"
  # SQLAlchemy 2 + psycopg 3: repeated host=HOST:PORT query parameters; libpq tries them in
  # order and keeps the first that accepts writes.
  echo "multihost postgresql+psycopg://root@/test?host=127.0.0.1:$PRIMARY_PORT&host=127.0.0.1:$STANDBY_PORT&target_session_attrs=read-write"
}

status() {
  local port rec
  for port in $PRIMARY_PORT $STANDBY_PORT; do
    if rec=$(q "$port" -c "SELECT CASE WHEN pg_is_in_recovery() THEN 'standby (in recovery)' ELSE 'primary' END" 2>/dev/null); then
      echo ":$port up, $rec"
      [[ "$rec" == primary ]] && q "$port" -c "SELECT '  replica ' || application_name || ': ' || state || ', ' || sync_state FROM pg_stat_replication"
    else
      echo ":$port down"
    fi
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  failover) failover "${2:-3}" ;;
  urls) urls ;;
  status) status ;;
  *) echo "usage: $0 start|stop|failover [SECONDS]|urls|status" >&2; exit 2 ;;
esac
