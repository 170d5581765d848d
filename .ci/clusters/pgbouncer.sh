#!/usr/bin/env bash
# A project-owned PgBouncer (Debian's 1.18) on 127.0.0.1:6432 in *transaction* pool mode,
# in front of the machine's PostgreSQL on 127.0.0.1:5432. Trust auth, a small
# pool (4 server connections per database/user) so that clients really share backends.
#
#   pgbouncer.sh install   apt-get install pgbouncer, leaving Debian's own service stopped
#   pgbouncer.sh start     (installs if needed) fresh config, start, wait until it answers
#   pgbouncer.sh stop      stop ours (SIGTERM via pid file), remove the root dir
#   pgbouncer.sh status    is ours running, pools (SHOW POOLS)
#   pgbouncer.sh url       the SQLAlchemy URL
#
# Config, pid file, log and socket live in ${LGSA_CLUSTER_ROOT:-/tmp/lgsa-clusters}/pgbouncer,
# owned by user postgres, which runs the daemon.
set -euo pipefail

ROOT="${LGSA_CLUSTER_ROOT:-/tmp/lgsa-clusters}/pgbouncer"
PORT=6432
PIDFILE="$ROOT/pgbouncer.pid"

# Debian's service, if the package's postinst started it (it does where no policy-rc.d
# forbids it): it would also take 127.0.0.1:6432.
stop_debian_service() {
  if [[ -x /etc/init.d/pgbouncer ]] && /etc/init.d/pgbouncer status >/dev/null 2>&1; then
    /etc/init.d/pgbouncer stop >/dev/null || true
  fi
}

install() {
  if ! command -v pgbouncer >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q pgbouncer >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && apt-get install -y -q pgbouncer >/dev/null; }
  fi
  stop_debian_service
  # and keep it from starting at the next boot (the package enables it)
  update-rc.d pgbouncer disable >/dev/null 2>&1 || true
  pgbouncer --version | head -n1
}

# alive = exists and is not a zombie (this machine's pid 1 reaps daemons' exits slowly)
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $s != Z* ]]; }
ours_running() { [[ -f "$PIDFILE" ]] && alive "$(cat "$PIDFILE")"; }

stop() {
  if ours_running; then
    local pid
    pid=$(cat "$PIDFILE")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -rf "$ROOT"
}

start() {
  local t0=$SECONDS
  command -v pgbouncer >/dev/null || install
  stop_debian_service
  stop
  mkdir -p "$ROOT"
  # trust still needs the user names in auth_file (passwords are not checked)
  printf '"root" ""\n"postgres" ""\n' >"$ROOT/userlist.txt"
  cat >"$ROOT/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir = $ROOT
auth_type = trust
auth_file = $ROOT/userlist.txt
admin_users = root, postgres
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
; startup parameters that drivers (psycopg 3, asyncpg) send and PgBouncer would refuse
ignore_startup_parameters = extra_float_digits,options
logfile = $ROOT/pgbouncer.log
pidfile = $PIDFILE
EOF
  chown -R postgres:postgres "$ROOT"
  runuser -u postgres -- pgbouncer -q -d "$ROOT/pgbouncer.ini"
  for _ in $(seq 1 50); do
    psql -X -qAt -h 127.0.0.1 -p $PORT -U root -d test -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.1
  done
  psql -X -qAt -h 127.0.0.1 -p $PORT -U root -d test -c "SELECT 1" >/dev/null ||
    { tail -n 20 "$ROOT/pgbouncer.log" >&2; exit 1; }
  echo "pgbouncer: 127.0.0.1:$PORT -> 127.0.0.1:5432, transaction pooling ($((SECONDS - t0)) s)"
}

status() {
  if ours_running; then
    echo "pgbouncer up on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
    psql -X -h 127.0.0.1 -p $PORT -U root -d pgbouncer -c "SHOW POOLS"
  else
    echo "pgbouncer down"
  fi
}

# psycopg 3 reads prepare_threshold as a connect() keyword, and SQLAlchemy hands URL query
# parameters to connect() as strings: an empty value arrives as "" and is NOT None. So the
# URL does not turn prepared statements off by itself; pass connect_args=
# {"prepare_threshold": None} as docs/configuration.md ("PgBouncer and other poolers") says.
url() { echo "postgresql+psycopg://root@127.0.0.1:$PORT/test"; }

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  url) url ;;
  *) echo "usage: $0 install|start|stop|status|url" >&2; exit 2 ;;
esac
