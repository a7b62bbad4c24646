#!/usr/bin/env bash
# Start a throwaway Redis on loopback for the Celery worker tests and print the PAYCOLLECT_TEST_REDIS value.
# Usage: eval "$(bash .ci/redis.sh)"   (installs Debian's redis-server when missing; needs root for that)
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >&2
fi
# Below the kernel's ephemeral ports (32768 and up on Linux), as for .ci/postgres.sh.
port=${PAYCOLLECT_REDIS_PORT:-26379}
data=${PAYCOLLECT_REDIS_DATA:-/tmp/paycollect-redis-$port}
if ! redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1; then
  mkdir -p "$data"
  # No persistence: a broker for tests need not survive a restart.
  redis-server --bind 127.0.0.1 --port "$port" --daemonize yes --save '' --appendonly no \
    --dir "$data" --pidfile "$data/redis.pid" --logfile "$data/redis.log" >&2
  for _ in $(seq 1 100); do
    redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null || { cat "$data/redis.log" >&2; exit 1; }
fi
echo "export PAYCOLLECT_TEST_REDIS=redis://127.0.0.1:$port/0"
