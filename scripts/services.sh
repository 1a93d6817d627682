#!/usr/bin/env bash
# Makes sure the services the test suite talks to are up: PostgreSQL on
# 127.0.0.1:5432 (database `test`) and Redis on 127.0.0.1:6379. Starts them
# with the local installation when they are down; fails loudly otherwise.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
if ! pg_up; then
  echo "services: PostgreSQL is down; starting it" >&2
  if [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  fi
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || { echo "services: PostgreSQL is not reachable on 127.0.0.1:5432; start it with: pg_ctlcluster --skip-systemctl-redirect \$(ls /etc/postgresql) main start" >&2; exit 1; }
fi
# The database the tests use.
if ! psql -h 127.0.0.1 -U postgres -d test -c 'select 1' >/dev/null 2>&1; then
  psql -h 127.0.0.1 -U postgres -d postgres -c 'create database test' >/dev/null 2>&1 || true
fi

redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
if command -v redis-server >/dev/null 2>&1 && ! redis_up; then
  echo "services: Redis is down; starting it" >&2
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  for _ in $(seq 1 10); do redis_up && break; sleep 1; done
fi
echo "services: ready" >&2
