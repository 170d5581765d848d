#!/usr/bin/env bash
# A throwaway 3-node MariaDB Galera cluster on 127.0.0.1, for the project's cluster tests.
#
#   galera.sh start | stop | kill N | restart N | status | urls
#
# Uses this machine's MariaDB 10.11 (/usr/sbin/mariadbd), galera-4 and rsync. Node N (1..3):
#   client (SQL) port 331N   gcomm (group comm.) 457N   IST 458N   SST (rsync daemon) 459N
#   files under ${LGSA_CLUSTER_ROOT:-/tmp/lgsa-clusters}/galera/nodeN:
#     my.cnf (the only config it reads), data/, mariadbd.sock, mariadbd.pid, error.log
# Node 1 is bootstrapped from a datadir made by mariadb-install-db; nodes 2 and 3 start with an
# empty datadir and receive node 1's by rsync SST (~5 s each, mostly the SST script's setup).
# root@localhost and root@'%' have an empty password; database `test` exists.
# The machine's own MariaDB (3306, /etc/mysql, /var/lib/mysql) is never read or touched:
# every mariadbd/mariadb call here gets --defaults-file or --no-defaults.
# The servers run in their own session (setsid), so they outlive this script.
# After `kill N` the first write on a surviving node stalls ~5 s (Galera's default
# evs.suspect_timeout) until the dead node is dropped from the view; later writes are fast.
# Killing two nodes at once leaves the third without quorum (non-Primary, writes fail): that is
# Galera's rule. `restart` of the first one returns once it is in the view; the second restores
# the Primary component.
set -euo pipefail

BASE="${LGSA_CLUSTER_ROOT:-/tmp/lgsa-clusters}/galera"
MARIADBD=/usr/sbin/mariadbd
PROVIDER=/usr/lib/galera/libgalera_smm.so
NODES=(1 2 3)
WAIT_S=90          # how long start/restart wait for Synced before failing
STOP_GRACE_S=15    # SIGTERM, then SIGKILL after this long

die() { echo "galera.sh: $*" >&2; exit 1; }
dir() { echo "$BASE/node$1"; }
sql() { # sql N STATEMENT: run over the node's socket, tab-separated, no headers
  mariadb --no-defaults -S "$(dir "$1")/mariadbd.sock" -uroot -N -B -e "$2"
}
pid_of() { # the node's live mariadbd pid, or nothing
  local f p
  f="$(dir "$1")/mariadbd.pid"
  [[ -s $f ]] || return 0
  p=$(<"$f")
  if kill -0 "$p" 2>/dev/null && [[ $(ps -o comm= -p "$p") == mariadbd ]]; then echo "$p"; fi
}
check_node() { [[ $1 =~ ^[123]$ ]] || die "node must be 1, 2 or 3, got '$1'"; }

write_cnf() {
  local n=$1 d
  d=$(dir "$n")
  mkdir -p "$d/data"
  cat >"$d/my.cnf" <<EOF
[mysqld]
# --- where: everything of this node in its own dir, nothing shared with the machine's MariaDB
user=mysql                      # rsync SST runs as the server's user and needs to own the datadir
datadir=$d/data
socket=$d/mariadbd.sock
pid-file=$d/mariadbd.pid
log-error=$d/error.log
bind-address=127.0.0.1
port=331$n
max_connections=100
max_allowed_packet=64M          # big rows in the tests; the client side is raised per connection
character-set-server=utf8mb4    # same defaults as Debian's /etc/mysql gives the 3306 server
collation-server=utf8mb4_general_ci
# --- small memory: three servers on a 2-core test machine
innodb_buffer_pool_size=32M
innodb_log_file_size=8M
innodb_log_buffer_size=2M
key_buffer_size=1M
aria_pagecache_buffer_size=8M
performance_schema=OFF
# durability comes from the other two nodes; flushing every commit only slows the tests
innodb_flush_log_at_trx_commit=2
# --- what Galera requires
binlog_format=ROW               # Galera replicates row events only
default_storage_engine=InnoDB   # only InnoDB tables are replicated
innodb_autoinc_lock_mode=2      # interleaved: no table-level AUTO-INC lock, needed for parallel apply
# --- the cluster
wsrep_on=ON
wsrep_provider=$PROVIDER
wsrep_cluster_name=lgsa_galera
wsrep_cluster_address=gcomm://127.0.0.1:4571,127.0.0.1:4572,127.0.0.1:4573
wsrep_node_name=node$n
wsrep_node_address=127.0.0.1
wsrep_node_incoming_address=127.0.0.1:331$n
# all three on one host: every listener gets its own port on loopback; gcache small (32M is
# plenty for IST after a short outage in the tests)
wsrep_provider_options="base_host=127.0.0.1;base_port=457$n;gmcast.listen_addr=tcp://127.0.0.1:457$n;ist.recv_addr=127.0.0.1:458$n;gcache.size=32M"
wsrep_sst_method=rsync          # fastest for a tiny datadir, no credentials needed
wsrep_sst_receive_address=127.0.0.1:459$n
EOF
  chown -R mysql:mysql "$d"
}

launch() { # launch N [extra mariadbd args]: start in its own session, return its pid
  local n=$1 d
  shift
  d=$(dir "$n")
  touch "$d/error.log" && chown mysql:mysql "$d/error.log" # the server (user mysql) appends too
  # not a process-group leader here, so setsid execs mariadbd itself and $! is its pid
  setsid "$MARIADBD" --defaults-file="$d/my.cnf" "$@" </dev/null >>"$d/error.log" 2>&1 &
  # mariadbd writes its pid file only once it has joined (after SST/IST): write it now, so
  # that status, kill and stop see a joining node too
  echo $! >"$d/mariadbd.pid" && chown mysql:mysql "$d/mariadbd.pid"
  echo $!
}

fail_with_log() { # fail_with_log N MESSAGE
  echo "galera.sh: node$1: $2; last lines of $(dir "$1")/error.log:" >&2
  tail -n 40 "$(dir "$1")/error.log" >&2 || true
  exit 1
}

state_of() { # state_of N: "cluster_size,cluster_status,local_state_comment,ready", or nothing
  sql "$1" "SELECT GROUP_CONCAT(VARIABLE_VALUE ORDER BY VARIABLE_NAME) FROM
    information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('wsrep_cluster_size',
    'wsrep_cluster_status','wsrep_local_state_comment','wsrep_ready')" 2>/dev/null || true
}

wait_synced() { # wait_synced "N:PID ...": until each is Synced, ready, in a Primary view of $WANT
  local want=${WANT:-3} deadline=$((SECONDS + WAIT_S)) np n p st
  for np in "$@"; do
    n=${np%%:*} p=${np#*:}
    while :; do
      kill -0 "$p" 2>/dev/null || fail_with_log "$n" "mariadbd (pid $p) exited"
      st=$(state_of "$n")
      [[ $st == "$want,Primary,Synced,ON" ]] && break
      ((SECONDS < deadline)) || fail_with_log "$n" "not Synced with $want nodes after ${WAIT_S}s (${st:-no answer})"
      sleep 0.5
    done
  done
}

our_pids() { # every mariadbd of ours, and the SST helpers (rsync daemons, wsrep_sst_rsync)
  local n p c
  for n in "${NODES[@]}"; do pid_of "$n"; done
  for p in $(pgrep -f -- "$BASE/node" || true); do
    c=$(ps -o comm= -p "$p" 2>/dev/null || true)
    case $c in mariadbd | rsync | wsrep_sst_rsyn*) echo "$p" ;; esac
  done
}

stop_pid() { # SIGTERM, SIGKILL after STOP_GRACE_S, return when gone
  local deadline=$((SECONDS + STOP_GRACE_S))
  kill -TERM "$1" 2>/dev/null || return 0
  while kill -0 "$1" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  kill -KILL "$1" 2>/dev/null || true
  while kill -0 "$1" 2>/dev/null; do sleep 0.1; done
}

cmd_stop() {
  local n p
  # one node after the other: a node that leaves alone is let go at once, while nodes that
  # leave together each wait ~5 s (evs.suspect_timeout) for the others to answer
  for n in 3 2 1; do
    p=$(pid_of "$n")
    if [[ -n $p ]]; then stop_pid "$p"; fi
  done
  for p in $(our_pids); do stop_pid "$p"; done # leftovers: SST helpers, a node without pid file
  rm -rf "$BASE"
}

cmd_start() {
  local p1 p2 p3
  cmd_stop # idempotent: a cluster of ours that runs is stopped and wiped first
  for n in "${NODES[@]}"; do write_cnf "$n"; done
  # node 1: system tables (root@localhost with empty password, no anonymous users), then bootstrap
  mariadb-install-db --defaults-file="$(dir 1)/my.cnf" --wsrep-on=OFF --skip-test-db \
    --auth-root-authentication-method=normal --user=mysql >"$(dir 1)/install-db.log" 2>&1 ||
    { cat "$(dir 1)/install-db.log" >&2; die "mariadb-install-db failed"; }
  chown mysql:mysql "$(dir 1)/install-db.log"
  p1=$(launch 1 --wsrep-new-cluster)
  local deadline=$((SECONDS + WAIT_S))
  until sql 1 "SELECT 1" >/dev/null 2>&1; do
    kill -0 "$p1" 2>/dev/null || fail_with_log 1 "mariadbd (pid $p1) exited"
    ((SECONDS < deadline)) || fail_with_log 1 "no answer after ${WAIT_S}s"
    sleep 0.3
  done
  # root from any host (TCP clients), and the test database; joiners get both by SST
  sql 1 "CREATE USER IF NOT EXISTS root@'%'; GRANT ALL ON *.* TO root@'%' WITH GRANT OPTION;
         CREATE DATABASE IF NOT EXISTS test"
  # joiners one after the other: node 1 is the only donor, and a donor serves one SST at a time
  p2=$(launch 2)
  wait_synced_joiner 2 "$p2"
  p3=$(launch 3)
  wait_synced "1:$p1" "2:$p2" "3:$p3"
}

wait_synced_joiner() { # node N has its datadir (SST done) and is Synced; size may still be < 3
  local n=$1 p=$2 deadline=$((SECONDS + WAIT_S)) st
  while :; do
    kill -0 "$p" 2>/dev/null || fail_with_log "$n" "mariadbd (pid $p) exited"
    st=$(sql "$n" "SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null || true)
    [[ $st == *Synced ]] && return 0
    ((SECONDS < deadline)) || fail_with_log "$n" "not Synced after ${WAIT_S}s"
    sleep 0.5
  done
}

cmd_kill() {
  local p
  p=$(pid_of "$1")
  [[ -n $p ]] || die "node$1 is not running"
  kill -KILL "$p"
  while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
  echo "node$1 (pid $p) killed"
}

cmd_restart() {
  local n=$1 d pos p from ist m survivor='' others=()
  d=$(dir "$n")
  [[ -f $d/my.cnf ]] || die "no cluster at $BASE (run start)"
  [[ -z $(pid_of "$n") ]] || die "node$n is running; kill it first"
  for m in "${NODES[@]}"; do
    if [[ $m != "$n" && -n $(pid_of "$m") ]]; then survivor=$m && break; fi
  done
  [[ -n $survivor ]] || die "no node is running to rejoin: use start"
  # read the last committed position from InnoDB (grastate.dat says seqno -1 after a crash),
  # so the node asks the donor for the missing write-sets only (IST), not a full SST
  "$MARIADBD" --defaults-file="$d/my.cnf" --wsrep-recover --log-error="$d/recover.log" \
    >/dev/null 2>&1 || true
  pos=$(sed -n 's/.*WSREP: Recovered position: *\([0-9a-f-]*:-\{0,1\}[0-9]*\).*/\1/p' \
    "$d/recover.log" | tail -n 1)
  [[ -n $pos ]] || { tail -n 20 "$d/recover.log" >&2; die "node$n: no recovered position"; }
  echo "node$n: recovered position $pos"
  from=$(($(wc -l <"$d/error.log") + 1)) # judge IST vs SST on this start's log lines only
  p=$(launch "$n" --wsrep_start_position="$pos")
  for m in "${NODES[@]}"; do
    if [[ $m == "$n" ]]; then others+=("$m:$p"); elif [[ -n $(pid_of "$m") ]]; then others+=("$m:$(pid_of "$m")"); fi
  done
  if ((${#others[@]} < 3)); then
    # another node is still down. If two nodes died together the survivor has no quorum
    # (non-Primary) and nothing gets Synced until the other dead node is back too: then stop
    # waiting as soon as this node is in the survivor's view.
    local deadline=$((SECONDS + WAIT_S)) st
    while :; do
      kill -0 "$p" 2>/dev/null || fail_with_log "$n" "mariadbd (pid $p) exited"
      st=$(state_of "$survivor")
      if [[ $st == "${#others[@]},non-Primary,"* ]]; then
        echo "node$n: back in the view, but the cluster has no quorum: restart the other node too"
        return 0
      fi
      [[ $st == "${#others[@]},Primary,Synced,ON" && $(state_of "$n") == "$st" ]] && break
      ((SECONDS < deadline)) || fail_with_log "$n" "not Synced after ${WAIT_S}s (node$survivor: ${st:-no answer})"
      sleep 0.5
    done
  fi
  WANT=${#others[@]} wait_synced "${others[@]}"
  # the rsync script logs "rsync IST completed on joiner" when no files were copied (IST only),
  # "rsync SST completed on joiner" after a full copy
  if tail -n "+$from" "$d/error.log" | grep -q 'rsync SST completed on joiner'; then
    echo "node$n: rejoined by full SST (its position was not in the donor's gcache)"
  else
    ist=$(tail -n "+$from" "$d/error.log" | grep -o 'Receiving IST: .*' | head -n 1 || true)
    echo "node$n: rejoined by IST (${ist:-no write-sets were missing})"
  fi
}

cmd_status() {
  local n p st
  for n in "${NODES[@]}"; do
    p=$(pid_of "$n")
    if [[ -z $p ]]; then
      printf 'node%s port 331%s pid -       down\n' "$n" "$n"
      continue
    fi
    st=$(state_of "$n")
    IFS=, read -r size prim state ready <<<"${st:-?,?,joining,?}"
    printf 'node%s port 331%s pid %-7s cluster_size=%s %s state=%s ready=%s\n' "$n" "$n" "$p" "$size" "$prim" "$state" "$ready"
  done
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  kill) check_node "${2:-}"; cmd_kill "$2" ;;
  restart) check_node "${2:-}"; cmd_restart "$2" ;;
  status) cmd_status ;;
  urls) for n in "${NODES[@]}"; do echo "mysql+pymysql://root@127.0.0.1:331$n/test"; done ;;
  *) die "usage: galera.sh start|stop|kill N|restart N|status|urls" ;;
esac
