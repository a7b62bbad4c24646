#!/usr/bin/env bash
# Start a throwaway PostgreSQL on loopback for the locking tests and print the PAYCOLLECT_TEST_POSTGRES value.
# Usage: eval "$(bash .ci/postgres.sh)"   (installs Debian's postgresql when missing; needs root for that)
#        bash .ci/postgres.sh stop        (stops the server on that port, if it runs)
# PAYCOLLECT_PG_DURABLE=1 starts it with PostgreSQL's own defaults instead (fsync and synchronous commit on,
# each commit waits for its log on the disk, as on a site): the benchmarks' headlines run on such a server.
# A server already running on the port is left as it is, whatever its settings.
set -euo pipefail
# Below the kernel's ephemeral ports (32768 and up on Linux): no outgoing connection, and no test server
# bound to port 0, can be holding it when the server starts.
port=${PAYCOLLECT_PG_PORT:-25432}
data=${PAYCOLLECT_PG_DATA:-/tmp/paycollect-pg-$port}
run() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [ "${1:-}" = stop ]; then
  for bin in /usr/lib/postgresql/*/bin; do
    if [ -x "$bin/pg_ctl" ] && run "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
      run "$bin/pg_ctl" -D "$data" -w -m fast stop >&2
    fi
  done
  exit 0
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
fi
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
if ! run "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  rm -rf "$data"; mkdir -p "$data"
  [ "$(id -u)" = 0 ] && chown postgres "$data"
  run "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
  # fsync off: a test database need not survive a crash, and the tests run twice as fast.
  durability="-c fsync=off -c synchronous_commit=off"
  if [ "${PAYCOLLECT_PG_DURABLE:-}" = 1 ]; then durability=""; fi
  run "$bin/pg_ctl" -D "$data" -w -l "$data/server.log" \
    -o "-h 127.0.0.1 -p $port -k $data $durability -c max_connections=200" start >&2
fi
echo "export PAYCOLLECT_TEST_POSTGRES=127.0.0.1:$port:paycollect:postgres"
