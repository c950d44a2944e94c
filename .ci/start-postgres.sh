#!/usr/bin/env bash
# Install (if needed) and start a local PostgreSQL server, create the test role and database,
# and print the SQLAlchemy URL for them. Used by .ci/run; safe to run repeatedly.
set -euo pipefail
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi
ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -q "^$ver main$"; then
  pg_createcluster "$ver" main >&2
fi
pg_ctlcluster "$ver" main start >&2 2>/dev/null || true
port=$(pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main" {print $3}')
for _ in $(seq 1 30); do
  su postgres -c "psql -p $port -qtAc 'select 1'" >/dev/null 2>&1 && break
  sleep 1
done
su postgres -c "psql -p $port -qtAc \"DO \\\$\\\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='accountant') THEN CREATE ROLE accountant LOGIN PASSWORD 'accountant' CREATEDB; END IF; END \\\$\\\$;\"" >&2
su postgres -c "psql -p $port -qtAc \"SELECT 1 FROM pg_database WHERE datname='accountant_test'\"" | grep -q 1 \
  || su postgres -c "psql -p $port -qc 'CREATE DATABASE accountant_test OWNER accountant'" >&2
echo "postgresql+psycopg://accountant:accountant@127.0.0.1:$port/accountant_test"
