#!/bin/sh
# pg-server.sh — a throwaway PostgreSQL server for the sync tests, from
# Debian's packages (postgresql; scripts/install-deps.sh test).
#
#   sh tests/pg/pg-server.sh start DIR   # prints: host=127.0.0.1 port=N dbname=postgres user=moraine
#   sh tests/pg/pg-server.sh stop DIR    # stops the server and removes DIR and its data
#
# start: makes DIR (it must not exist), a cluster (initdb) owned by an
# unprivileged user (PostgreSQL refuses to run as root: when run as root the
# cluster belongs to `nobody`, through runuser), trust authentication for the
# superuser `moraine`, listening on 127.0.0.1 on a free port (the first of up
# to 20 random ports in 20000-59999 that binds) and on a unix socket in the
# cluster's directory. The cluster lives in a directory made with mktemp -d
# under $PG_TMP (default /tmp, which every user can traverse: the suites'
# TMPDIR is private to root), whose path is kept in DIR/top; stop removes it.
# Prints the connection string on stdout and exits 0, or prints why the
# server could not start (with the end of its log) on stderr and exits 1:
# nothing is skipped silently.
set -u

die() { echo "pg-server.sh: $*" >&2; exit 1; }

[ $# -eq 2 ] || die "usage: pg-server.sh start|stop DIR"
cmd=$1 dir=$2

bindir=""
for v in $(ls /usr/lib/postgresql 2>/dev/null | sort -rn); do
  [ -x "/usr/lib/postgresql/$v/bin/initdb" ] && { bindir=/usr/lib/postgresql/$v/bin; break; }
done

# The server runs without the sanitizer runtime `make asan` preloads into
# the suites (LD_PRELOAD=libasan): PostgreSQL is not built for it, and
# `postgres -V` (initdb's first step) hangs under it.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    env -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS runuser -u nobody -- "$@"
  else
    env -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS "$@"
  fi
}

case "$cmd" in
start)
  [ -n "$bindir" ] || die "no PostgreSQL server found in /usr/lib/postgresql/*/bin (install Debian's postgresql: sh scripts/install-deps.sh test)"
  [ -e "$dir" ] && die "$dir exists already"
  mkdir -p "$dir" || die "cannot create $dir"
  top=$(mktemp -d "${PG_TMP:-/tmp}/moraine-pg.XXXXXX") || die "cannot create a directory in ${PG_TMP:-/tmp}"
  echo "$top" > "$dir/top"
  chmod 755 "$top"
  [ "$(id -u)" -eq 0 ] && chown nobody "$top"
  if ! as_owner timeout 120 "$bindir/initdb" -D "$top/data" -U moraine --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1; then
    tail -n 20 "$dir/initdb.log" >&2
    die "initdb failed or took over 120 s (log above)"
  fi
  tries=0
  while [ $tries -lt 20 ]; do
    tries=$((tries + 1))
    port=$(( ($(od -An -N2 -tu2 /dev/urandom) % 40000) + 20000 ))
    if as_owner "$bindir/pg_ctl" -D "$top/data" -l "$top/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$top -c fsync=off -c full_page_writes=off" \
      start >/dev/null 2>&1; then
      echo "$port" > "$dir/port"
      echo "host=127.0.0.1 port=$port dbname=postgres user=moraine"
      exit 0
    fi
    grep -q "could not bind\|could not create any TCP/IP sockets\|already in use" "$top/server.log" 2>/dev/null || break
  done
  tail -n 20 "$top/server.log" >&2 2>/dev/null
  cp "$top/server.log" "$dir/server.log" 2>/dev/null
  rm -rf "$top"
  die "the PostgreSQL server did not start (log above)"
  ;;
stop)
  [ -f "$dir/top" ] || { rm -rf "$dir"; exit 0; }
  top=$(cat "$dir/top")
  if [ -d "$top/data" ]; then
    as_owner "$bindir/pg_ctl" -D "$top/data" -m immediate -w stop >/dev/null 2>&1
  fi
  rm -rf "$top" "$dir"
  ;;
*)
  die "usage: pg-server.sh start|stop DIR"
  ;;
esac
